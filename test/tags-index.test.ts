// The tags of each site (TagService.tagsOfSite), kept up to the tags: after a change, only the sites whose tags
// changed get a new list, and every list is what a fresh build of the index answers.
import { describe, expect, it } from 'vitest';
import { TAG_LISTS_MAX, TagService } from '../src/domain/tags.js';
import type { TagRecord } from '../src/store/records.js';
import { testFleetStore } from './support/server.js';

describe('the tags of each site', () => {
  it('after each change equal a fresh build; the lists of sites the change did not touch are kept, not built again', async () => {
    const fleet = await testFleetStore();
    const store = await fleet.open();
    try {
      const SITES = 200;
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
      const withC = new Set(store.get<{ id: number; site_ids: number[] }>('tags', c!.id)!.site_ids);
      expect(now.flatMap((l, k) => (l === was[k] ? [] : [k + 1]))).toEqual([...withC].sort((x, y) => x - y));
      check();
      // A tag added to some sites, a tag removed, a site forgotten: each equal to a fresh build.
      const d = await store.write((tx) => tags.create(tx, { name: 'gamma' }));
      await store.write((tx) => {
        for (let s = 1; s <= SITES; s += 5) tags.setSiteTags(tx, s, [...tags.tagsOfSite(s), d.id]);
      });
      check();
      await tags.remove(a!.id);
      check();
      await store.write((tx) => tags.forgetSite(tx, 10));
      check();
      expect(tags.tagsOfSite(10)).toEqual([]);
      // A site given a tag goes in its place in the tag's list (kept in ascending order)...
      await store.write((tx) => tags.setSiteTags(tx, 10, [d.id]));
      const ofD = () => store.get<TagRecord>('tags', d.id)!.site_ids;
      expect(ofD()).toEqual([...ofD()].sort((x, y) => x - y));
      expect(ofD()).toContain(10);
      // ...and a list written in another order (by hand, an older version) is patched as right, and sorted when a site joins.
      await store.write((tx) => tx.put<TagRecord>('tags', { ...tx.get<TagRecord>('tags', d.id)!, site_ids: [12, 3, 150, 8] }));
      check();
      await store.write((tx) => tx.put<TagRecord>('tags', { ...tx.get<TagRecord>('tags', d.id)!, site_ids: [150, 3, 12, 9] }));
      check();
      await store.write((tx) => tags.setSiteTags(tx, 4, [...tags.tagsOfSite(4), d.id]));
      expect(ofD()).toEqual([3, 4, 9, 12, 150]);
      check();
    } finally {
      await store.close();
    }
  });

  it('sites with the same tags share one frozen list, after a build and after a patch; past the pool bound every list is still right', async () => {
    const fleet = await testFleetStore();
    const store = await fleet.open();
    try {
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
      const many = TAG_LISTS_MAX + 500;
      // (the tag records written whole: one setSiteTags per site rewrites every tag's list each time)
      await store.write((tx) => {
        for (const [k, t] of made.entries()) {
          const site_ids = Array.from({ length: many }, (_, i) => i + 1).filter((s) => comboOf(s, 2 ** T).includes(ids[k]!));
          tx.put<TagRecord>('tags', { ...tx.get<TagRecord>('tags', t.id)!, site_ids });
        }
      });
      const fresh = new TagService(store);
      for (let s = 1; s <= many; s++) {
        expect(tags.tagsOfSite(s), `site ${s}`).toEqual(comboOf(s, 2 ** T));
        expect(fresh.tagsOfSite(s), `site ${s}`).toEqual(comboOf(s, 2 ** T));
      }
    } finally {
      await store.close();
    }
  });

  it('names: a rename or a delete frees the old name at once, the new one is taken, in any letter case', async () => {
    const fleet = await testFleetStore();
    const store = await fleet.open();
    try {
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
        for (let i = 0; i < 100; i++)
          tx.insert<TagRecord>('tags', { name: `bulk ${i}`, color: null, site_ids: [], created_at: '', updated_at: '' });
      });
      expect([await taken('BULK 99'), await taken('beta'), await taken('bulk 100')]).toEqual([true, true, false]);
    } finally {
      await store.close();
    }
  });

  it('the tags in name order: patched in place after each change (added, renamed across the order, deleted), equal to a fresh build', async () => {
    const fleet = await testFleetStore();
    const store = await fleet.open();
    try {
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
      const [first, last] = [tags.list({})[0]!, tags.list({}).at(-1)!];
      await store.write((tx) => {
        tags.update(tx, first.id, { name: 'zz last now' });
        tags.update(tx, last.id, { name: '0 first now' });
        tags.setSiteTags(tx, 1, [first.id, last.id]);
      });
      expect(names()).toEqual(fresh());
      expect(tags.tagsOfSite(1)).toEqual([last.id, first.id]);
    } finally {
      await store.close();
    }
  });
});
