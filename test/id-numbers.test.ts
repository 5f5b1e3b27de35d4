// A number per record id in pages of doubles (store/id-numbers.ts): what the PostgreSQL engine keeps of each row's version.
import { describe, expect, it } from 'vitest';
import { IdNumbers, IdSlots, PAGE_IDS } from '../src/store/id-numbers.js';

/** Every (id, number) pair that forEach gives. */
function pairs(n: IdNumbers): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  n.forEach((v, id) => out.push([id, v]));
  return out;
}

describe('IdNumbers', () => {
  it('answers what was set for an id, and nothing for an id never set', () => {
    const n = new IdNumbers();
    expect(n.get(1)).toBeUndefined();
    n.set(1, 42);
    n.set(0, 7);
    n.set(PAGE_IDS, 9);
    n.set(1, 43);
    expect([n.get(0), n.get(1), n.get(2), n.get(PAGE_IDS), n.get(PAGE_IDS + 1)]).toEqual([7, 43, undefined, 9, undefined]);
    expect(n.pageCount).toBe(2);
  });

  it('keeps 100,000 dense ids in 98 pages of 8 KB', () => {
    const n = new IdNumbers();
    for (let id = 1; id <= 100_000; id++) n.set(id, id * 2 + 2 ** 40);
    expect(n.pageCount).toBe(Math.ceil(100_001 / PAGE_IDS));
    expect(n.get(100_000)).toBe(200_000 + 2 ** 40);
    expect(n.get(100_001)).toBeUndefined();
  });

  it('keeps an id that is not a whole number from 0 to 2^32 - 1 beside the pages', () => {
    const n = new IdNumbers();
    for (const id of [-1, 1.5, 2 ** 32, Number.MAX_SAFE_INTEGER]) {
      n.set(id, 5);
      expect(n.get(id)).toBe(5);
    }
    n.set(2 ** 32 - 1, 6);
    expect(n.get(2 ** 32 - 1)).toBe(6);
    expect(n.pageCount).toBe(1);
  });

  it('forgets a deleted id, lists every id that has a number, and empties', () => {
    const n = new IdNumbers();
    for (const id of [3, PAGE_IDS * 5 + 1, 0, -2, 2 ** 33, 7]) n.set(id, id + 0.5);
    n.delete(7);
    n.delete(2 ** 33);
    n.delete(PAGE_IDS * 9); // a page never made
    expect(n.get(7)).toBeUndefined();
    expect(pairs(n).sort((a, b) => a[0] - b[0])).toEqual([
      [-2, -1.5],
      [0, 0.5],
      [3, 3.5],
      [PAGE_IDS * 5 + 1, PAGE_IDS * 5 + 1.5],
    ]);
    // Deleting while listing: each id is listed once.
    const seen: number[] = [];
    n.forEach((_, id) => {
      seen.push(id);
      n.delete(id);
    });
    expect(seen.sort((a, b) => a - b)).toEqual([-2, 0, 3, PAGE_IDS * 5 + 1]);
    expect(pairs(n)).toEqual([]);
    n.set(1, 1);
    n.clear();
    expect([n.get(1), n.pageCount, pairs(n).length]).toEqual([undefined, 0, 0]);
  });
});

describe('IdSlots', () => {
  it('answers the value set for an id, nothing for one never set or deleted, ids outside the pages included', () => {
    const slots = new IdSlots<readonly number[]>();
    const a = [1, 2];
    const b = [3];
    for (const id of [0, 5, PAGE_IDS * 3 + 7, -1, 1.5, 2 ** 32]) slots.set(id, id % 2 ? a : b);
    expect([0, 5, PAGE_IDS * 3 + 7, -1, 1.5, 2 ** 32].map((id) => slots.get(id))).toEqual([b, a, a, a, a, b]);
    expect([slots.get(1), slots.get(PAGE_IDS * 3), slots.get(PAGE_IDS * 9)]).toEqual([undefined, undefined, undefined]);
    slots.set(5, b); // replaced
    slots.delete(0);
    slots.delete(-1);
    slots.delete(PAGE_IDS * 8); // a page never made
    expect([slots.get(5), slots.get(0), slots.get(-1)]).toEqual([b, undefined, undefined]);
  });
});
