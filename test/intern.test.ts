// The string pool (core/intern.ts): one copy of a repeated string, bounded in count and length.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import {
  INTERN_KEY_MAX_LENGTH,
  INTERN_MAX,
  INTERN_MAX_LENGTH,
  INTERN_VALUES_MAX,
  intern,
  internValue,
  internedCount,
  internedValueCount,
} from '../src/core/intern.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap growth, in bytes, of keeping what `make` returns. */
function heapOf(make: () => unknown): number {
  gc();
  const before = process.memoryUsage().heapUsed;
  const kept = make();
  gc();
  const grown = process.memoryUsage().heapUsed - before;
  expect(kept).toBeTruthy();
  return grown;
}

describe('intern', () => {
  it('keeps one copy of a string parsed again and again: 50,000 copies of a 150-character slug cost a pointer each', () => {
    const text = JSON.stringify({ slug: `${'plugin-'.repeat(21)}abc` });
    const parsed = () => (JSON.parse(text) as { slug: string }).slug;
    expect(parsed().length).toBe(150);
    const copies = heapOf(() => Array.from({ length: 50_000 }, parsed));
    const pooled = heapOf(() => Array.from({ length: 50_000 }, () => intern(parsed())));
    // 50,000 strings of 150 characters are several MB (V8 may share some storage between parses: at least 2.5 MB); an
    // array of 50,000 pointers about 400 KB.
    expect(copies).toBeGreaterThan(2_500_000);
    expect(pooled, `${pooled} bytes pooled against ${copies} for the copies`).toBeLessThan(copies / 4);
    expect(intern(parsed())).toBe(parsed());
  });

  it(`holds at most INTERN_MAX (${INTERN_MAX}) strings, starting again one past it, and no string over INTERN_MAX_LENGTH (${INTERN_MAX_LENGTH})`, () => {
    for (let i = 0; internedCount() < INTERN_MAX; i++) intern(`bound-${i}`);
    expect(internedCount()).toBe(INTERN_MAX);
    intern('one more');
    expect(internedCount()).toBe(1);
    intern('x'.repeat(INTERN_MAX_LENGTH + 1));
    expect(internedCount()).toBe(1);
    intern('x'.repeat(INTERN_MAX_LENGTH));
    expect(internedCount()).toBe(2);
  });

  it('keeps one frozen copy of a value by its key, at most INTERN_VALUES_MAX of them, none with a key over INTERN_KEY_MAX_LENGTH', () => {
    const a = internValue('finding:a', () => ({ type: 'a' }));
    expect(internValue('finding:a', () => ({ type: 'other' }))).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
    expect(() => {
      'use strict';
      (a as { type: string }).type = 'b';
    }).toThrow(TypeError);
    for (let i = 0; internedValueCount() < INTERN_VALUES_MAX; i++) internValue(`bound-${i}`, () => ({ i }));
    expect(internedValueCount()).toBe(INTERN_VALUES_MAX);
    internValue('one more', () => ({}));
    expect(internedValueCount()).toBe(1);
    const long = 'k'.repeat(INTERN_KEY_MAX_LENGTH + 1);
    const first = internValue(long, () => ({ n: 1 }));
    expect(internValue(long, () => ({ n: 2 }))).toEqual({ n: 2 });
    expect(Object.isFrozen(first)).toBe(true);
    expect(internedValueCount()).toBe(1);
  });
});
