// The tags of each site (TagService.tagsOfSite) and the sites of each tag, kept up to the sites (which hold the
// membership) and the tags: after a change, only the sites whose tags changed get a new list, and every answer is what a
// fresh build of the index gives.
import fc from 'fast-check';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { TAG_LISTS_MAX, TagService } from '../src/domain/tags.js';
import type { Store } from '../src/store/engine.js';
import type { SiteRecord, TagRecord } from '../src/store/records.js';
import { testFleetStore } from './support/server.js';

/** Runs `fn` on a store of its own (a fresh data dir, or a fresh database in the PostgreSQL lane), closed after. */
async function withStore(fn: (store: Store) => Promise<void>): Promise<void> {
  const store = await (await testFleetStore()).open();
  try {
    await fn(store);
  } finally {
    await store.close();
  }
}

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Bare site records 1..n (the tags read only their ids and tag_ids). */
async function bareSites(store: Store, n: number): Promise<void> {
  await store.write((tx) => {
    for (let i = 1; i <= n; i++) tx.insert<Partial<SiteRecord> & { id: number }>('sites', { url: `https://s${i}.test/`, name: `s${i}` });
  });
}

describe('the tags of each site', () => {
  it('after each change equal a fresh build; the lists of sites the change did not touch are kept, not built again', () =>
    withStore(async (store) => {
      const SITES = 200;
      await bareSites(store, SITES + 1);
      const tags = new TagService(store);
      const [a, b, c] = await store.write((tx) => ['beta', 'delta', 'alpha'].map((name) => tags.create(tx, { name })));
      await store.write((tx) => {
        for (let s = 1; s <= SITES; s++)
          tags.setSiteTags(
            tx,
            s,
            [a!.id, b!.id, c!.id].filter((_, k) => (s + k) % 3 !== 0),
          );
      });
      const check = () => {
        const fresh = new TagService(store);
        for (let s = 1; s <= SITES + 1; s++) expect(tags.tagsOfSite(s), `site ${s}`).toEqual(fresh.tagsOfSite(s));
        for (const t of fresh.list({})) expect(tags.get(t.id)!.site_ids, `tag ${t.name}`).toEqual(t.site_ids);
      };
      check();
      expect(tags.tagsOfSite(2)).toEqual([c!.id, a!.id]); // alpha, beta: by name
      const lists = () => Array.from({ length: SITES }, (_, k) => tags.tagsOfSite(k + 1));
      // One site's tags replaced: its list is new, every other one the same array as before.
      let was = lists();
      await store.write((tx) => tags.setSiteTags(tx, 7, [b!.id]));
      let now = lists();
      expect(now.flatMap((l, k) => (l === was[k] ? [] : [k + 1]))).toEqual([7]);
      check();
      // A tag renamed to another place in the order: its sites' lists are sorted again, the others kept.
      was = lists();
      await store.write((tx) => tags.update(tx, c!.id, { name: 'omega' }));
      now = lists();
      expect(now.flatMap((l, k) => (l === was[k] ? [] : [k + 1]))).toEqual(tags.get(c!.id)!.site_ids);
      check();
      // A tag added to some sites, a tag removed (its sites are written without it), a site deleted: each equal to a fresh build.
      const d = await store.write((tx) => tags.create(tx, { name: 'gamma' }));
      await store.write((tx) => {
        for (let s = 1; s <= SITES; s += 5) tags.setSiteTags(tx, s, [...tags.tagsOfSite(s), d.id]);
      });
      check();
      expect(tags.get(a!.id)!.site_ids.length).toBeGreaterThan(100);
      await tags.remove(a!.id);
      expect([...store.all<SiteRecord>('sites')].filter((x) => x.tag_ids?.includes(a!.id))).toEqual([]);
      check();
      await store.write((tx) => tx.delete('sites', 11));
      check();
      expect(tags.tagsOfSite(11)).toEqual([]);
      expect(tags.get(d.id)!.site_ids).not.toContain(11);
      // A site given a tag goes in its place in the tag's list (ascending)...
      await store.write((tx) => tags.setSiteTags(tx, 10, [d.id]));
      const ofD = () => tags.get(d.id)!.site_ids;
      expect(ofD()).toEqual([...ofD()].sort((x, y) => x - y));
      expect(ofD()).toContain(10);
      // ...and tags written on a site in another order, with a repeat and a deleted tag's id (by hand, an older
      // version) are read as its live tags, once each.
      const put = (id: number, tag_ids: number[]) =>
        store.write((tx) => tx.put<SiteRecord>('sites', { ...tx.get<SiteRecord>('sites', id)!, tag_ids }));
      await put(12, [d.id, b!.id, d.id, a!.id]);
      check();
      expect(tags.tagsOfSite(12)).toEqual([b!.id, d.id]); // delta, gamma: by name
      await put(150, [d.id]);
      check();
      await store.write((tx) => tags.setSiteTags(tx, 4, [...tags.tagsOfSite(4), d.id]));
      expect(ofD()).toContain(4);
      expect(ofD()).toEqual([...ofD()].sort((x, y) => x - y));
      check();
    }));

  it('sites with the same tags share one frozen list, after a build and after a patch; past the pool bound every list is still right', () =>
    withStore(async (store) => {
      const many = TAG_LISTS_MAX + 500;
      await bareSites(store, many);
      const tags = new TagService(store);
      const T = 14; // 2^14 = 16,384 combinations: more than the pool holds
      const made = await store.write((tx) =>
        Array.from({ length: T }, (_, k) => tags.create(tx, { name: `t${String(k).padStart(2, '0')}` })),
      );
      const ids = made.map((t) => t.id);
      const comboOf = (s: number, n: number) => ids.filter((_, k) => (s % n) & (1 << k));
      // 300 sites in 3 combinations: three arrays in all.
      await store.write((tx) => {
        for (let s = 1; s <= 300; s++) tags.setSiteTags(tx, s, comboOf(s, 3).length ? comboOf(s, 3) : [ids[5]!]);
      });
      const distinct = (from: number, to: number) =>
        new Set(Array.from({ length: to - from + 1 }, (_, k) => tags.tagsOfSite(from + k))).size;
      expect(distinct(1, 300)).toBe(3);
      expect(Object.isFrozen(tags.tagsOfSite(1))).toBe(true);
      expect(() => (tags.tagsOfSite(1) as number[]).push(1)).toThrow(TypeError);
      // A patch (one site given another's tags): it shares that site's list.
      await store.write((tx) => tags.setSiteTags(tx, 1, [...tags.tagsOfSite(2)]));
      expect(tags.tagsOfSite(1)).toBe(tags.tagsOfSite(2));
      // More combinations than the pool holds (it starts again when full): each site's list is still its own tags.
      await store.write((tx) => {
        for (let s = 1; s <= many; s++) tags.setSiteTags(tx, s, comboOf(s, 2 ** T));
      });
      const fresh = new TagService(store);
      for (let s = 1; s <= many; s++) {
        expect(tags.tagsOfSite(s), `site ${s}`).toEqual(comboOf(s, 2 ** T));
        expect(fresh.tagsOfSite(s), `site ${s}`).toEqual(comboOf(s, 2 ** T));
      }
    }));

  it("giving a site a tag writes that site only, whatever the tag's size; its own tags again write nothing; an unknown tag or site writes nothing", () =>
    withStore(async (store) => {
      await bareSites(store, 1001);
      const tags = new TagService(store);
      const [big, other] = await store.write((tx) => [tags.create(tx, { name: 'big' }), tags.create(tx, { name: 'other' })]);
      await store.write((tx) => {
        for (let s = 1; s <= 1000; s++) tags.setSiteTags(tx, s, [big.id]);
      });
      expect(tags.get(big.id)!.site_ids).toHaveLength(1000);
      const since = () => ({ tags: store.version('tags'), sites: store.version('sites') });
      const changed = (v: { tags: number; sites: number }) => [store.changedSince('tags', v.tags), store.changedSince('sites', v.sites)];
      let v = since();
      await store.write((tx) => tags.setSiteTags(tx, 1001, [other.id, big.id]));
      expect(changed(v)).toEqual([[], [1001]]);
      expect(store.get<SiteRecord>('sites', 1001)!.tag_ids).toEqual([big.id, other.id]);
      expect(tags.get(big.id)!.site_ids).toHaveLength(1001);
      v = since();
      await store.write((tx) => tags.setSiteTags(tx, 1001, [big.id, other.id, big.id]));
      expect(changed(v)).toEqual([[], []]);
      const refused = (site: number, tagIds: number[]) =>
        store.write((tx) => tags.setSiteTags(tx, site, tagIds)).catch((e: { code?: string }) => e.code);
      expect(await refused(1001, [big.id, 999])).toBe('svc_tag_not_found');
      expect(await refused(5000, [big.id])).toBe('svc_site_not_found');
      expect(changed(v)).toEqual([[], []]);
      // Taken away: the site only, again.
      await store.write((tx) => tags.setSiteTags(tx, 1001, []));
      expect(changed(v)).toEqual([[], [1001]]);
      expect(tags.tagsOfSite(1001)).toEqual([]);
      expect(tags.get(big.id)!.site_ids).toHaveLength(1000);
    }));

  it("each tag's sites, read at any point between changes, are what the sites' records say (fast-check)", () =>
    withStore(async (store) => {
      const SITES = 12;
      await bareSites(store, SITES);
      const made = await store.write((tx) => [0, 1, 2].map((k) => new TagService(store).create(tx, { name: `p${k}` })));
      const ids = made.map((t) => t.id);
      const truth = (t: number) => [...store.all<SiteRecord>('sites')].filter((x) => x.tag_ids?.includes(t)).map((x) => x.id);
      // A site's new tags, then which tags are read after that write (reads make the lists; changes in between pile up).
      const step = fc.record({
        writes: fc.array(fc.record({ site: fc.integer({ min: 1, max: SITES }), tags: fc.subarray(ids) }), { minLength: 1, maxLength: 4 }),
        reads: fc.subarray(ids),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
          const tags = new TagService(store);
          tags.get(ids[0]!); // built before the changes, so that they are patched in
          for (const { writes, reads } of steps) {
            await store.write((tx) => {
              for (const w of writes) tags.setSiteTags(tx, w.site, w.tags);
            });
            for (const t of reads) expect(tags.get(t)!.site_ids).toEqual(truth(t));
          }
          for (const t of ids) expect(tags.get(t)!.site_ids).toEqual(truth(t));
        }),
        { numRuns: 40 },
      );
    }));

  it('names: a rename or a delete frees the old name at once, the new one is taken, in any letter case', () =>
    withStore(async (store) => {
      const tags = new TagService(store);
      const create = (name: string) => store.write((tx) => tags.create(tx, { name }));
      const taken = async (name: string) => (await create(name).catch((e: { code?: string }) => e.code)) === 'svc_tag_exists';
      const a = await create('Alpha');
      await create('Beta');
      expect(await taken('alpha')).toBe(true);
      await store.write((tx) => tags.update(tx, a.id, { name: 'Gamma' }));
      expect([await taken('GAMMA'), await taken('Alpha')]).toEqual([true, false]); // 'Alpha' is created here
      await tags.remove(a.id);
      expect(await taken('gamma')).toBe(false);
      // 100 tags written without the service (an import, another process): more changes than the index patches (64),
      // so it is built again from every tag; the same answers.
      await store.write((tx) => {
        for (let i = 0; i < 100; i++) tx.insert<TagRecord>('tags', { name: `bulk ${i}`, color: null, created_at: '', updated_at: '' });
      });
      expect([await taken('BULK 99'), await taken('beta'), await taken('bulk 100')]).toEqual([true, true, false]);
    }));

  it('the tags in name order: patched in place after each change (added, renamed across the order, deleted), equal to a fresh build', () =>
    withStore(async (store) => {
      const tags = new TagService(store);
      // 300 names in an order the numeric collator decides ("t 9" before "t 10"; case and accents ignored).
      await store.write((tx) => {
        for (let i = 0; i < 300; i++) tags.create(tx, { name: `${['t', 'T', 'té'][i % 3]} ${(i * 7919) % 1000}` });
      });
      const names = () => tags.list({}).map((t) => [t.id, t.name]);
      const fresh = () => new TagService(store).list({}).map((t) => [t.id, t.name]);
      expect(names()).toEqual(fresh());
      let x = 12345;
      const pick = () => {
        x = (x * 1103515245 + 12345) % 2 ** 31;
        return x;
      };
      for (let round = 0; round < 60; round++) {
        const all = tags.list({});
        const t = all[pick() % all.length]!;
        const op = round % 3;
        // Drawn outside the write function: it may run more than once (PostgreSQL), and must do the same each time.
        const n = pick() % 5000;
        if (op === 0) await store.write((tx) => tags.create(tx, { name: `new ${n} ${round}` }));
        else if (op === 1) await store.write((tx) => tags.update(tx, t.id, { name: `moved ${n} ${round}` }));
        else await tags.remove(t.id);
        expect(names(), `round ${round}`).toEqual(fresh());
      }
      // Two changes in one write, one of them a tag given a site: both in place, and the site's list follows.
      await bareSites(store, 1);
      const [first, last] = [tags.list({})[0]!, tags.list({}).at(-1)!];
      await store.write((tx) => {
        tags.update(tx, first.id, { name: 'zz last now' });
        tags.update(tx, last.id, { name: '0 first now' });
        tags.setSiteTags(tx, 1, [first.id, last.id]);
      });
      expect(names()).toEqual(fresh());
      expect(tags.tagsOfSite(1)).toEqual([last.id, first.id]);
    }));

  it('a tag without sites costs the index a few slots: 10,000 of them under 100 bytes each (with an empty list of sites each, 150)', () =>
    withStore(async (store) => {
      const tags = new TagService(store);
      await bareSites(store, 3);
      await store.write((tx) => {
        for (let i = 0; i < 10_000; i++) tags.create(tx, { name: `empty ${i}` });
      });
      const used = await store.write((tx) => tags.create(tx, { name: 'used' }));
      await store.write((tx) => [1, 3].forEach((site) => tags.setSiteTags(tx, site, [used.id])));
      // Built from every tag (a new service), then measured: the index alone, the tags being in the store already.
      const fresh = new TagService(store);
      gc();
      const before = process.memoryUsage().heapUsed;
      expect(fresh.list({ include: [used.id] }).map((t) => t.site_ids)).toEqual([[1, 3]]);
      gc();
      const perTag = (process.memoryUsage().heapUsed - before) / 10_001;
      expect(perTag, `${perTag.toFixed(0)} bytes a tag`).toBeLessThan(100);
      // Patched: a tag given its first site, and one losing its last, answer as a fresh build does.
      const first = fresh.findByName('empty 7')!;
      await store.write((tx) => {
        tags.setSiteTags(tx, 2, [first.id]);
        tags.setSiteTags(tx, 3, []);
      });
      for (const t of [fresh, tags, new TagService(store)])
        expect(t.list({ include: [first.id, used.id] }).map((x) => [x.name, x.site_ids])).toEqual([
          ['empty 7', [2]],
          ['used', [1]],
        ]);
    }));
});
