// GroupedList (src/domain/grouped-list.ts): a list of the items of groups, kept as where each group's items begin and,
// once filtered, the places of the items kept. Checked against the plain list of (group, item) pairs it stands for.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GroupedList } from '../src/domain/grouped-list.js';
import type { SiteRecord } from '../src/store/records.js';

interface G {
  site: SiteRecord;
  value: string[];
}
const groupOf = (id: number, count: number): G => ({
  site: { id } as SiteRecord,
  value: Array.from({ length: count }, (_, k) => `${id}.${k}`),
});
const of = (groups: G[]) => GroupedList.of(groups, (g) => g.value.length);
const items = (l: GroupedList<G>) => {
  const out: string[] = [];
  l.forEach((g, k) => out.push(g.value[k]!));
  return out;
};

describe('GroupedList', () => {
  it('walks, filters and pages over groups of any size, empty ones among them (fast-check, 200 runs)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat({ max: 6 }), { maxLength: 30 }),
        fc.array(fc.func(fc.boolean()), { maxLength: 3 }),
        fc.integer({ min: 1, max: 7 }),
        (counts, keeps, perPage) => {
          const groups = counts.map((c, i) => groupOf(i + 1, c));
          let want = groups.flatMap((g) => g.value);
          let list = of(groups);
          for (const keep of keeps) {
            list = list.filter((g, k) => keep(g.value[k]));
            want = want.filter((v) => keep(v));
          }
          expect(list.length).toBe(want.length);
          expect(items(list)).toEqual(want);
          const pages = Math.ceil(want.length / perPage) + 1;
          for (let p = 1; p <= pages; p++)
            expect(list.page(p, perPage, (g, k) => g.value[k]!)).toEqual(want.slice((p - 1) * perPage, p * perPage));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('is the same list when a filter keeps every item, and an empty one of no groups', () => {
    const list = of([groupOf(1, 2), groupOf(2, 0), groupOf(3, 1)]);
    expect(list.filter(() => true)).toBe(list);
    expect(items(list)).toEqual(['1.0', '1.1', '3.0']);
    expect(list.page(2, 2, (g, k) => `${g.site.id}:${k}`)).toEqual(['3:0']);
    const none = of([]);
    expect(none.length).toBe(0);
    expect(none.page(1, 10, () => 1)).toEqual([]);
    expect(items(none)).toEqual([]);
  });
});
