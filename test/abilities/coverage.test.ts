// Every registered ability has at least one test in test/abilities/ that runs it through the registry: a
// `call('<name>', …)` (or `fails('<name>', …)`) of the harness in test/support/abilities.ts. A new ability without
// one fails here, naming it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allAbilities } from '../../src/abilities/index.js';

const dir = join(import.meta.dirname);
const sources = readdirSync(dir)
  .filter((f) => f.endsWith('.test.ts') && f !== 'coverage.test.ts')
  .map((f) => readFileSync(join(dir, f), 'utf8'));

/** Ability names a test file runs: `call('x-v1'`, `fails('x-v1'`, also across a line break after the parenthesis. */
function calledNames(src: string): Set<string> {
  const names = new Set<string>();
  for (const m of src.matchAll(/\b(?:call|fails)\(\s*'([a-z0-9-]+-v1)'/g)) names.add(m[1]!);
  return names;
}

describe('per-ability tests', () => {
  it('finds the calls it counts (the scanner itself)', () => {
    expect([...calledNames("await h.call('list-tags-v1', {}); await h.fails(\n 'get-tag-v1', { tag_id: 9 })")]).toEqual([
      'list-tags-v1',
      'get-tag-v1',
    ]);
    expect(calledNames("h.ability('list-tags-v1', {})").size).toBe(0);
  });

  it('every registered ability is run through registry.call in test/abilities/', () => {
    const called = new Set(sources.flatMap((s) => [...calledNames(s)]));
    const missing = allAbilities.map((a) => a.name).filter((n) => !called.has(n));
    expect(missing, 'abilities without a test in test/abilities/').toEqual([]);
    // …and every name called there is a registered ability (no test of a renamed or removed one).
    const unknown = [...called].filter((n) => !allAbilities.some((a) => a.name === n));
    expect(unknown).toEqual([]);
  });
});
