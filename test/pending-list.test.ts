// The fleet's pending updates as the index keeps them (domain/pending-list.ts): per site an array of item tuples the
// sites share, lists of typed arrays, objects made only for the page answered.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  ITEMS_MAX,
  LISTS_MAX,
  NO_ITEMS,
  PendingList,
  countOf,
  pack,
  packedWhere,
  pooledItems,
  pooledLists,
  viewsOf,
  type PackedItem,
} from '../src/domain/pending-list.js';
import type { SiteRecord } from '../src/store/records.js';

const LIST = fileURLToPath(new URL('../dist/domain/pending-list.js', import.meta.url));

const site = (id: number) => ({ id, url: `https://s${id}.example/`, name: `Site ${id}` }) as SiteRecord;
const plugin = (slug: string, from: string | null = '1.0'): PackedItem => ({
  type: 'plugin',
  slug,
  name: slug.toUpperCase(),
  current_version: from,
  new_version: '2.0',
});
const fr: PackedItem = {
  type: 'translation',
  slug: 'akismet',
  name: 'Akismet',
  current_version: '1.0',
  new_version: '1.0',
  language: 'fr_FR',
};

describe('pending list', () => {
  it('shows each packed item as it was given, with the site it belongs to; language only on a translation', () => {
    const s = site(7);
    const p = pack([
      plugin('a', null),
      fr,
      { type: 'core', slug: 'wordpress', name: 'WordPress', current_version: '6.8', new_version: '6.9' },
    ]);
    expect(countOf(p)).toBe(3);
    expect(viewsOf(s, p)).toEqual([
      { site_id: 7, site_url: s.url, site_name: 'Site 7', type: 'plugin', slug: 'a', name: 'A', current_version: null, new_version: '2.0' },
      { site_id: 7, site_url: s.url, site_name: 'Site 7', ...fr },
      {
        site_id: 7,
        site_url: s.url,
        site_name: 'Site 7',
        type: 'core',
        slug: 'wordpress',
        name: 'WordPress',
        current_version: '6.8',
        new_version: '6.9',
      },
    ]);
    expect(Object.keys(viewsOf(s, p)[0]!)).not.toContain('language');
    expect(pack([])).toBe(NO_ITEMS);
  });

  it('pages across sites in order, filters keeping the order, and counts by type', () => {
    const a = site(1);
    const b = site(2);
    const list = PendingList.of([
      { site: a, value: pack([plugin('a1'), plugin('a2'), fr]) },
      { site: b, value: pack([plugin('b1'), { ...plugin('b2'), type: 'theme' }]) },
    ]);
    expect(list.length).toBe(5);
    const slugs = (l: PendingList, page: number, per: number) => l.page(page, per).map((v) => `${v.site_id}:${v.slug}`);
    expect(slugs(list, 1, 2)).toEqual(['1:a1', '1:a2']);
    expect(slugs(list, 2, 2)).toEqual(['1:akismet', '2:b1']);
    expect(slugs(list, 3, 2)).toEqual(['2:b2']);
    expect(slugs(list, 4, 2)).toEqual([]);
    expect(list.summary()).toEqual({ core: 0, plugins: 3, themes: 1, translations: 1, total: 5 });
    const plugins = list.filter((_, type) => type === 'plugin');
    expect(slugs(plugins, 1, 10)).toEqual(['1:a1', '1:a2', '2:b1']);
    expect(plugins.summary()).toEqual({ core: 0, plugins: 3, themes: 0, translations: 0, total: 3 });
    const second = list.filter((siteId) => siteId === 2);
    expect(slugs(second, 1, 10)).toEqual(['2:b1', '2:b2']);
    expect(list.filter(() => true)).toBe(list);
  });

  it('keeps a site packed as it is when every item stays, and packs only what stays otherwise', () => {
    const p = pack([plugin('a'), plugin('b'), plugin('c')]);
    expect(packedWhere(p, () => true)).toBe(p);
    expect(packedWhere(p, () => false)).toBe(NO_ITEMS);
    const kept = packedWhere(p, (k) => k !== 1);
    expect(viewsOf(site(1), kept).map((v) => v.slug)).toEqual(['a', 'c']);
    expect(kept.length).toBe(2 * (p.length / 3));
  });

  it('shares one frozen tuple among the sites that have the same item, and tells apart items that differ in any field', () => {
    const a = pack([plugin('shared'), fr, { ...fr, language: 'de_DE' }]);
    const b = pack([plugin('shared'), { ...fr }, plugin('shared', null)]);
    expect(b[0]).toBe(a[0]);
    expect(b[1]).toBe(a[1]);
    expect(a[2]).not.toBe(a[1]);
    expect(b[2]).not.toBe(a[0]); // current_version null, not '1.0'
    expect(Object.isFrozen(a[0])).toBe(true);
    expect(viewsOf(site(1), b).map((v) => [v.current_version, v.language])).toEqual([
      ['1.0', undefined],
      ['1.0', 'fr_FR'],
      [null, undefined],
    ]);
    // Bounded: past ITEMS_MAX distinct items the pool starts again, and what was shared stays so.
    for (let i = 0; i <= ITEMS_MAX; i++) pack([plugin(`p${i}`)]);
    expect(pooledItems()).toBeLessThanOrEqual(ITEMS_MAX);
    expect(pack([plugin('shared')])[0]).toEqual(a[0]);
  });

  it('shares one frozen list among the sites offered the same items, in the same order; past LISTS_MAX every list is still right', () => {
    const a = pack([plugin('x'), plugin('y'), fr]);
    const b = pack([plugin('x'), plugin('y'), { ...fr }]);
    expect(b).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
    // Another order, another item, one item fewer: other lists.
    expect(pack([plugin('y'), plugin('x'), fr])).not.toBe(a);
    expect(pack([plugin('x'), plugin('y', '1.1'), fr])).not.toBe(a);
    expect(pack([plugin('x'), plugin('y')])).not.toBe(a);
    expect(pack([plugin('x'), plugin('y')])[0]).toBe(a[0]);
    // Bounded: past LISTS_MAX distinct lists the pool starts again; each list packs its own items.
    const made = Array.from({ length: LISTS_MAX + 10 }, (_, i) => [plugin(`q${i % 97}`), plugin(`r${i}`)]);
    const packedAll = made.map((l) => pack(l));
    expect(pooledLists()).toBeLessThanOrEqual(LISTS_MAX);
    for (const [i, p] of packedAll.entries())
      expect(
        viewsOf(site(1), p).map((v) => v.slug),
        `list ${i}`,
      ).toEqual(made[i]!.map((x) => x.slug));
  });

  it('holds 100,000 items in well under what an object per item took (8 bytes an item and a tuple per distinct item, 4 a site in a list)', async () => {
    // Measured in a process of its own (the test runner's worker allocates and frees on its own meanwhile).
    const script = `
      const { PendingList, pack, viewsOf } = await import(${JSON.stringify(LIST)});
      const plugin = (slug) => ({ type: 'plugin', slug, name: slug.toUpperCase(), current_version: '1.0', new_version: '2.0' });
      // The strings come pooled (core/intern.ts), as the index's do: 50 plugins; the sites exist already.
      const plugins = Array.from({ length: 50 }, (_, i) => plugin('plugin-' + i));
      const sites = Array.from({ length: 10_000 }, (_, i) => ({ id: i + 1, url: 'https://s' + (i + 1) + '.example/', name: 'Site ' + (i + 1) }));
      const packed = sites.map((s, i) => ({ site: s, value: pack(Array.from({ length: 10 }, (_, k) => plugins[(i + k) % 50])) }));
      const bytesOf = (make) => {
        gc();
        const before = process.memoryUsage();
        const kept = make();
        gc();
        const after = process.memoryUsage();
        return [after.heapUsed - before.heapUsed + (after.arrayBuffers - before.arrayBuffers), kept, after.arrayBuffers - before.arrayBuffers];
      };
      // What the index kept before: the answer's object per item, a list per site, and the fleet's list of them all.
      const [objects] = bytesOf(() => {
        const bySite = packed.map((g) => viewsOf(g.site, g.value));
        return { bySite, flat: bySite.flat() };
      });
      const [lists, list, typed] = bytesOf(() => PendingList.of(packed));
      const [items] = bytesOf(() => packed.map((g) => ({ site: g.site, value: pack(viewsOf(g.site, g.value)) })));
      console.log(JSON.stringify({ objects, typed, items: items + lists, length: list.length }));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--input-type=module', '-e', script]);
    const { objects, typed, items, length } = JSON.parse(stdout) as Record<string, number>;
    expect(length).toBe(100_000);
    // Six slots an item (48 bytes) were ≈ 57 % of the objects; a slot pointing at a shared tuple, ≈ 15 %.
    expect(items, `${items} bytes packed, ${objects} as objects, for 100,000 items`).toBeLessThan(objects! * 0.3);
    expect(objects).toBeGreaterThan(100 * 100_000); // an object per item: about 116 bytes each
    // The list itself: where each of the 10,000 sites' items begin (a Uint32Array of 10,001), off the heap, counted on
    // its own (the heap's count can shrink meanwhile, a collection's own work freed, and did under a loaded run of the
    // whole suite). Two arrays of a slot per item, as the list held before, were 800,000 bytes.
    expect(typed).toBeGreaterThanOrEqual(40_004);
    expect(typed).toBeLessThan(100_000);
  });
});
