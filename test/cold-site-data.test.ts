// Site data as a cold blob (store/engine.ts COLD_BLOBS), on whichever engine the lane runs (lowdb here, PostgreSQL in
// the pg lane): no process holds the sites' data; readBlobs reads up to BLOB_READ_BATCH of them at once; the fleet-wide
// indexes (pending updates, security issues, abandoned items, vulnerabilities) read the changed sites in batches and
// answer alike in every process, and a second process sees what the first stored.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import type { SitePlugin, SiteSnapshot } from '../src/child/snapshot.js';
import { BLOB_READ_BATCH, type Store } from '../src/store/engine.js';
import { CHANGE_LOG_MAX } from '../src/store/change-log.js';
import { SiteDataIndex, SiteDataScan } from '../src/domain/site-data-index.js';
import type { SiteData, SiteRecord } from '../src/store/records.js';
import { seedSites, startServer, testFleetStore, type TestServer } from './support/server.js';

const plugin = (slug: string, version: string, over: Partial<SitePlugin> = {}): SitePlugin => ({
  slug,
  name: `Plugin ${slug}`,
  version,
  active: true,
  update_version: null,
  last_updated: null,
  must_use: false,
  ...over,
});

/** Site i's data: an update pending everywhere, an abandoned plugin everywhere, a security issue on even sites. */
const dataOf = (i: number): SiteData => ({
  plugins: [
    plugin('upd/upd.php', '1.0', { update_version: '2.0' }),
    plugin('old/old.php', '3.1', { last_updated: '2019-05-01' }),
    ...(i === 1 ? [plugin('rc-alpha/rc-alpha.php', '1.0.0')] : []),
  ],
  themes: [],
  security: i % 2 === 0 ? [{ type: 'db_prefix', severity: 'medium', message: `site ${i} uses wp_` }] : [],
  changes: [],
  users: [],
  synced_at: '2026-01-01T00:00:00.000Z',
});

/** Sites s1–s3, synced once ('a'), each with its data (dataOf). */
async function threeSites(store: Store): Promise<SiteRecord[]> {
  const sites = await store.write((tx) =>
    [1, 2, 3].map((i) =>
      tx.insert<SiteRecord>('sites', { url: `https://s${i}.example/`, last_sync: 'a', notes: '' } as Omit<SiteRecord, 'id'>),
    ),
  );
  await store.write((tx) => {
    for (const site of sites) tx.putBlob('site-data', site.id, dataOf(site.id));
  });
  return sites;
}

describe('the store: site data is read, never held', () => {
  it(`readBlobs answers exactly BLOB_READ_BATCH (${BLOB_READ_BATCH}) ids in one go and refuses one more; a reopened store holds none of it`, async () => {
    const fleet = await testFleetStore();
    const a = await fleet.open();
    let b: Store | undefined;
    try {
      const ids = Array.from({ length: BLOB_READ_BATCH }, (_, i) => i + 1);
      // Every id but the last has data: the missing one is answered null.
      await a.write((tx) => {
        for (const id of ids.slice(0, -1)) tx.putBlob('site-data', id, dataOf(id));
      });
      expect(a.memory().blobs['site-data']).toBe(0);
      const got = await a.readBlobs<SiteData>('site-data', ids);
      expect(got.size).toBe(BLOB_READ_BATCH);
      expect(got.get(2)).toEqual(dataOf(2));
      expect(got.get(BLOB_READ_BATCH)).toBeNull();
      // Not through the cache: a fleet-wide read leaves it as it was.
      expect(a.memory().cold_cache.entries).toBe(0);
      await expect(a.readBlobs('site-data', [...ids, BLOB_READ_BATCH + 1])).rejects.toThrow(`at most ${BLOB_READ_BATCH}`);
      expect(() => a.getBlob('site-data', 1)).toThrow(/readBlob/);

      // Another process on the same data: it holds none of the sites' data, reads what the first stored, and sees a
      // rewrite once it has caught up (its cached copy is dropped).
      b = await fleet.open();
      expect(b.memory().blobs['site-data']).toBe(0);
      expect(await b.readBlob('site-data', 3)).toEqual(dataOf(3));
      await a.write((tx) => tx.putBlob('site-data', 3, { ...dataOf(3), synced_at: 'later' }));
      await b.sync();
      expect((await b.readBlob<SiteData>('site-data', 3))!.synced_at).toBe('later');
      expect((await b.readBlobs<SiteData>('site-data', [3])).get(3)!.synced_at).toBe('later');
      expect(b.memory().blobs['site-data']).toBe(0);
    } finally {
      await b?.close();
      await a.close();
    }
  });
});

describe('the store: site keys are read, never held', () => {
  it('a store opened on a fleet with child keys holds none of them, and reads each back', async () => {
    const fleet = await testFleetStore();
    const a = await fleet.open();
    try {
      await a.write((tx) => {
        for (let id = 1; id <= 3; id++) tx.putBlob('secrets', id, { private_key_pem: `key ${id}`, http_pass: null, regverify: null });
      });
      expect(a.memory().blobs.secrets).toBe(0);
      expect(() => a.getBlob('secrets', 1)).toThrow(/readBlob/);
    } finally {
      await a.close();
    }
    const b = await fleet.open();
    try {
      expect(b.memory().blobs.secrets).toBe(0);
      expect(await b.readBlob('secrets', 2)).toEqual({ private_key_pem: 'key 2', http_pass: null, regverify: null });
      expect((await b.readBlobs('secrets', [1, 3, 4])).get(3)).toMatchObject({ private_key_pem: 'key 3' });
    } finally {
      await b.close();
    }
  });
});

describe(`the fleet-wide indexes over ${BLOB_READ_BATCH + 1} sites (one batch and one more)`, () => {
  const N = BLOB_READ_BATCH + 1;
  let s1: TestServer;
  let s2: TestServer;
  let reads: MockInstance<Store['readBlobs']>;

  beforeAll(async () => {
    s1 = await startServer();
    const sites = await seedSites(s1.services, N, () => ({ last_sync: '2026-01-01T00:00:00.000Z' }));
    await s1.services.store.write((tx) => {
      for (const site of sites) tx.putBlob('site-data', site.id, dataOf(site.id));
    });
    await s1.services.vulnerabilities.importFile(
      join(import.meta.dirname, 'fixtures', 'vulnerabilities', 'wordfence-production.json'),
      'wordfence',
    );
    reads = vi.spyOn(s1.services.store, 'readBlobs');
    // A second process on the same data.
    s2 = await startServer({ dataDir: s1.dataDir, databaseUrl: s1.databaseUrl });
  }, 120_000);
  afterAll(async () => {
    await s2?.close();
    await s1?.close();
  });

  /** What every index answers, as a person would ask it (first page of each, and the totals). */
  const answers = async (s: TestServer) => {
    const get = async (name: string, input: Record<string, unknown>) => {
      const r = await s.ability(name, input, { method: 'GET' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    const updates = await get('list-updates-v1', { per_page: 100 });
    const security = await get('get-security-issues-v1', { per_page: 100 });
    const abandoned = await get('get-abandoned-plugins-v1', { per_page: 100 });
    const vulns = await get('list-vulnerabilities-v1', { per_page: 100, slug: 'rc-alpha' });
    return { updates, security: { ...security, vulnerabilities: undefined }, abandoned, vulns };
  };

  it('answer from data read in batches of at most BLOB_READ_BATCH, and hold none of the sites’ data', async () => {
    reads.mockClear();
    const a = await answers(s1);
    expect(a.updates.total).toBe(N);
    expect(a.updates.summary).toMatchObject({ plugins: N, total: N });
    expect(a.updates.updates[0]).toMatchObject({ site_id: 1, type: 'plugin', slug: 'upd/upd.php', new_version: '2.0' });
    expect(a.security.total).toBe(Math.floor(N / 2));
    expect(a.security.items[0]).toMatchObject({ site_id: 2, medium: 1, issues: [{ type: 'db_prefix' }] });
    expect(a.abandoned.total).toBe(N);
    expect(a.abandoned.items[0]).toMatchObject({ site_id: 1, slug: 'old/old.php', last_updated: '2019-05-01' });
    // The feed's rc-alpha 1.0.0 records match site 1 alone.
    expect(a.vulns.total).toBeGreaterThan(0);
    for (const v of a.vulns.items) {
      expect(v.sites_affected).toBe(1);
      expect(v.installs.map((x: { site_id: number }) => x.site_id)).toEqual([1]);
    }
    const sizes = reads.mock.calls.map((c) => c[1].length);
    expect(sizes.length).toBeGreaterThan(0);
    expect(Math.max(...sizes)).toBe(BLOB_READ_BATCH);
    expect(s1.services.store.memory().blobs['site-data']).toBe(0);
  });

  it('answer alike in a second process, which holds none of the data either', async () => {
    expect(await answers(s2)).toEqual(await answers(s1));
    expect(s2.services.store.memory().blobs['site-data']).toBe(0);
  });

  it('a site whose data changed is read again alone, and the other process sees the change', async () => {
    await answers(s2); // built
    const before = (await s2.ability('list-updates-v1', { per_page: 1 }, { method: 'GET' })).body.total;
    await s1.services.store.write((tx) => {
      tx.putBlob('site-data', 5, {
        ...dataOf(5),
        plugins: [...dataOf(5).plugins, plugin('new/new.php', '1.0', { update_version: '1.1' })],
      });
      s1.services.sites.patch(tx, 5, { last_sync: '2026-01-02T00:00:00.000Z' });
    });
    const reads2 = vi.spyOn(s2.services.store, 'readBlobs');
    const r = await s2.ability('list-updates-v1', { per_page: 100, site_ids_or_domains: [5] }, { method: 'GET' });
    expect(r.body.updates.map((u: { slug: string }) => u.slug).sort()).toEqual(['new/new.php', 'upd/upd.php']);
    expect((await s2.ability('list-updates-v1', { per_page: 1 }, { method: 'GET' })).body.total).toBe(before + 1);
    // Only site 5 was read again (by each index that looked; the job runner's matching may be one of them).
    expect(new Set(reads2.mock.calls.flatMap((c) => c[1]))).toEqual(new Set([5]));
  });
});

describe('the three indexes over site data (pending updates, security issues, abandoned items)', () => {
  it('read each site’s data once for their first views, and a changed site’s once again', async () => {
    const N = BLOB_READ_BATCH + 1;
    const s = await startServer();
    try {
      const { store } = s.services;
      const sites = await seedSites(s.services, N, () => ({ last_sync: '2026-01-01T00:00:00.000Z' }));
      await store.write((tx) => {
        for (const site of sites) tx.putBlob('site-data', site.id, dataOf(site.id));
      });
      // The real store's method, counted (no feed is imported: vulnerability matching reads nothing).
      const reads = vi.spyOn(store, 'readBlobs');
      const idsRead = () => reads.mock.calls.filter((c) => c[0] === 'site-data').flatMap((c) => c[1]);
      const totals = async () => {
        const total = async (name: string) => {
          const r = await s.ability(name, { per_page: 1 }, { method: 'GET' });
          expect(r.status, JSON.stringify(r.body)).toBe(200);
          return r.body.total as number;
        };
        // One after the other: each view's first refresh.
        return [await total('list-updates-v1'), await total('get-security-issues-v1'), await total('get-abandoned-plugins-v1')];
      };
      expect(await totals()).toEqual([N, Math.floor(N / 2), N]);
      expect(idsRead().length).toBe(N);
      expect(new Set(idsRead())).toEqual(new Set(sites.map((x) => x.id)));

      // Site 5 (odd: no security issue) now reports one, and one more update: read again once, for all three.
      reads.mockClear();
      await store.write((tx) => {
        tx.putBlob('site-data', 5, {
          ...dataOf(5),
          plugins: [...dataOf(5).plugins, plugin('new/new.php', '1.0', { update_version: '1.1' })],
          security: [{ type: 'db_prefix', severity: 'high', message: 'site 5 uses wp_' }],
        });
        s.services.sites.patch(tx, 5, { last_sync: '2026-01-02T00:00:00.000Z' });
      });
      expect(await totals()).toEqual([N + 1, Math.floor(N / 2) + 1, N]);
      expect(idsRead()).toEqual([5]);
    } finally {
      await s.close();
    }
  }, 60_000);
});

describe('SiteDataIndex', () => {
  it('concurrent refreshes share one run, and a change made during a run is taken by the next', async () => {
    const fleet = await testFleetStore();
    const store = await fleet.open();
    try {
      const sites = await threeSites(store);
      const index = new SiteDataIndex(
        new SiteDataScan(store),
        (site) => String(site.last_sync),
        (_site, data) => data?.plugins.length ?? -1,
      );
      const reads = vi.spyOn(store, 'readBlobs');
      await Promise.all([index.refresh(), index.refresh(), index.refresh()]);
      expect(reads.mock.calls.map((c) => c[1])).toEqual([sites.map((x) => x.id)]);
      expect([...index.values()]).toEqual([3, 2, 2]); // site 1 has rc-alpha too
      // A change committed while a run reads: the callers that came after it wait for a second run, which reads it.
      reads.mockClear();
      await store.write((tx) => tx.put<SiteRecord>('sites', { ...sites[0]!, last_sync: 'b' }));
      const first = index.refresh();
      await store.write((tx) => {
        tx.putBlob('site-data', sites[1]!.id, { ...dataOf(2), plugins: [] });
        tx.put<SiteRecord>('sites', { ...sites[1]!, last_sync: 'b' });
      });
      await Promise.all([first, index.refresh()]);
      expect(reads.mock.calls.map((c) => c[1])).toEqual([[sites[0]!.id], [sites[1]!.id]]);
      expect(index.get(sites[1]!.id)).toBe(0);
    } finally {
      await store.close();
    }
  });
});

describe('SiteDataScan', () => {
  it('reads a site once for every index whose stamp of it moved; each index derives only its own stale sites', async () => {
    const fleet = await testFleetStore();
    const store = await fleet.open();
    try {
      const sites = await threeSites(store);
      const scan = new SiteDataScan(store);
      const derived: string[] = [];
      const bySync = new SiteDataIndex(
        scan,
        (site) => String(site.last_sync),
        (site, data) => (derived.push(`sync ${site.id}`), data?.plugins.length ?? -1),
      );
      const byUrl = new SiteDataIndex(
        scan,
        (site) => site.url,
        (site, data) => (derived.push(`url ${site.id}`), data?.security.length ?? -1),
      );
      const reads = vi.spyOn(store, 'readBlobs');
      // Both first refreshes at once: one run, each site read once, both indexes built from it.
      await Promise.all([bySync.refresh(), byUrl.refresh()]);
      expect(reads.mock.calls.map((c) => c[1])).toEqual([sites.map((x) => x.id)]);
      expect([[...bySync.values()], [...byUrl.values()]]).toEqual([
        [3, 2, 2],
        [0, 1, 0],
      ]);
      expect(bySync.version).toBe(byUrl.version);
      // A change only byUrl's stamp sees: read once, derived by byUrl alone, whichever index refreshes.
      reads.mockClear();
      derived.length = 0;
      await store.write((tx) => {
        tx.putBlob('site-data', sites[0]!.id, { ...dataOf(1), security: [] });
        tx.put<SiteRecord>('sites', { ...sites[0]!, url: 'https://moved.example/' });
      });
      await bySync.refresh();
      await byUrl.refresh();
      expect(reads.mock.calls.map((c) => c[1])).toEqual([[sites[0]!.id]]);
      expect(derived).toEqual([`url ${sites[0]!.id}`]);
      expect([bySync.get(sites[0]!.id), byUrl.get(sites[0]!.id)]).toEqual([3, 0]);
      expect(bySync.version).toBe(store.version('sites'));
    } finally {
      await store.close();
    }
  });
});

describe('Store.changedSince', () => {
  it(`names the records changed since a version, here and by another process; null past the last CHANGE_LOG_MAX (${CHANGE_LOG_MAX}) changes`, async () => {
    const fleet = await testFleetStore();
    const store = await fleet.open();
    const other = await fleet.open();
    try {
      const sites = await threeSites(store);
      const v0 = store.version('sites');
      expect(store.changedSince('sites', v0)).toEqual([]);
      await store.write((tx) => {
        tx.put<SiteRecord>('sites', { ...sites[1]!, notes: 'edited' });
        tx.delete('sites', sites[2]!.id);
      });
      expect(store.changedSince('sites', v0)?.sort()).toEqual([sites[1]!.id, sites[2]!.id].sort());
      // A write that throws is undone: what it touched is named all the same (a reader looks again, finds it as it was).
      const v1 = store.version('sites');
      await expect(
        store.write((tx) => {
          tx.put<SiteRecord>('sites', { ...sites[0]!, notes: 'never' });
          throw new Error('refused');
        }),
      ).rejects.toThrow('refused');
      expect([store.changedSince('sites', v1), store.get('sites', sites[0]!.id)]).toEqual([[sites[0]!.id], sites[0]]);
      // Another process's commit, as this one takes it in: the ids it wrote.
      await other.sync();
      const o0 = other.version('sites');
      const added = await store.write((tx) =>
        tx.insert<SiteRecord>('sites', { url: 'https://s4.example/', last_sync: 'a', notes: '' } as Omit<SiteRecord, 'id'>),
      );
      await other.sync();
      expect(other.changedSince('sites', o0)).toEqual([added.id]);
      // Bounded: CHANGE_LOG_MAX changes back are still known; from before the log's floor, null.
      const v2 = store.version('sites');
      await store.write((tx) => {
        for (let i = 0; i < 2 * CHANGE_LOG_MAX; i++)
          tx.put<SiteRecord>('sites', { ...tx.get<SiteRecord>('sites', added.id)!, notes: String(i) });
      });
      expect(store.changedSince('sites', v2)).toBeNull();
      expect(store.changedSince('sites', store.version('sites') - CHANGE_LOG_MAX)).toEqual([added.id]);
    } finally {
      await other.close();
      await store.close();
    }
  });
});

describe('SiteDataIndex after a change', () => {
  it('passes over the changed sites alone while none is added, removed or moved in the order; over every site otherwise', async () => {
    const fleet = await testFleetStore();
    const store = await fleet.open();
    try {
      const sites = await threeSites(store);
      let passes = 0;
      let order = 0;
      const stamped: number[] = [];
      const index = new SiteDataIndex(
        new SiteDataScan(store),
        (site) => (stamped.push(site.id), `${site.last_sync}|${site.notes}`),
        (_site, data) => data?.plugins.length ?? -1,
        function* () {
          passes++;
          yield* store.all<SiteRecord>('sites');
        },
        undefined,
        () => order,
      );
      await index.refresh();
      expect(passes).toBe(1);
      // An edit: only that site is looked at (no pass over the fleet), and its new record is kept.
      stamped.length = 0;
      await store.write((tx) => tx.put<SiteRecord>('sites', { ...tx.get<SiteRecord>('sites', sites[1]!.id)!, notes: 'x' }));
      await index.refresh();
      expect([passes, stamped.filter((id) => id !== sites[1]!.id)]).toEqual([1, []]);
      expect(index.version).toBe(store.version('sites'));
      // New data for it: read again and derived, still without a pass.
      await store.write((tx) => {
        tx.putBlob('site-data', sites[1]!.id, { ...dataOf(2), plugins: [] });
        tx.put<SiteRecord>('sites', { ...tx.get<SiteRecord>('sites', sites[1]!.id)!, last_sync: 'b' });
      });
      await index.refresh();
      expect([passes, index.get(sites[1]!.id)]).toEqual([1, 0]);
      // The order key moved: a full pass.
      order++;
      await store.write((tx) => tx.put<SiteRecord>('sites', { ...tx.get<SiteRecord>('sites', sites[0]!.id)!, notes: 'y' }));
      await index.refresh();
      expect(passes).toBe(2);
      // A site added, then one removed: each a full pass, and the entries follow.
      await store.write((tx) =>
        tx.insert<SiteRecord>('sites', { url: 'https://s9.example/', last_sync: 'a', notes: '' } as Omit<SiteRecord, 'id'>),
      );
      await index.refresh();
      expect([passes, [...index.values()]]).toEqual([3, [3, 0, 2, -1]]);
      await store.write((tx) => tx.delete('sites', sites[0]!.id));
      await index.refresh();
      expect([passes, [...index.values()]]).toEqual([4, [0, 2, -1]]);
    } finally {
      await store.close();
    }
  });
});

describe('SiteDataIndex contents', () => {
  it('stand when a change leaves every derived value and the order as they were; move when a value, a site or the order changes', async () => {
    const fleet = await testFleetStore();
    const store = await fleet.open();
    try {
      const sites = await threeSites(store);
      const index = new SiteDataIndex(
        new SiteDataScan(store),
        (site) => `${site.last_sync}|${site.notes}`,
        (site, data) => ({ id: site.id, plugins: (data?.plugins ?? []).map((p) => p.slug) }),
      );
      await index.refresh();
      const first = index.contents;
      const values = [...index.values()];
      // An edit the stamp sees (the site is read again) whose derived value is the same: nothing moves, same objects.
      await store.write((tx) => tx.put<SiteRecord>('sites', { ...tx.get<SiteRecord>('sites', sites[1]!.id)!, notes: 'edited' }));
      await index.refresh();
      expect(index.version).toBe(store.version('sites'));
      expect(index.contents).toBe(first);
      expect([...index.values()]).toEqual(values);
      expect([...index.values()][1]).toBe(values[1]);
      // New data with another plugin list: the contents move.
      await store.write((tx) => {
        tx.putBlob('site-data', sites[1]!.id, { ...dataOf(sites[1]!.id), plugins: [] });
        tx.put<SiteRecord>('sites', { ...tx.get<SiteRecord>('sites', sites[1]!.id)!, last_sync: 'b' });
      });
      await index.refresh();
      expect(index.contents).toBeGreaterThan(first);
      expect(index.get(sites[1]!.id)).toEqual({ id: sites[1]!.id, plugins: [] });
      // A site removed, then one added: each moves the contents, though no value changed.
      const afterData = index.contents;
      await store.write((tx) => tx.delete('sites', sites[2]!.id));
      await index.refresh();
      expect(index.contents).toBeGreaterThan(afterData);
      const afterRemove = index.contents;
      await store.write((tx) =>
        tx.insert<SiteRecord>('sites', { url: 'https://s9.example/', last_sync: 'a', notes: '' } as Omit<SiteRecord, 'id'>),
      );
      await index.refresh();
      expect(index.contents).toBeGreaterThan(afterRemove);
    } finally {
      await store.close();
    }
  });
});

describe('SiteDataIndex order', () => {
  it('moves its contents when the same sites come in another order, though no value changed', async () => {
    const fleet = await testFleetStore();
    const store = await fleet.open();
    try {
      await threeSites(store);
      let reversed = false;
      const all = () => [...store.all<SiteRecord>('sites')];
      const index = new SiteDataIndex(
        new SiteDataScan(store),
        (site) => `${site.last_sync}`,
        (site) => site.id,
        () => (reversed ? all().reverse() : all()),
        undefined,
        () => (reversed ? 1 : 0), // the order's key moves: a pass over every site
      );
      await index.refresh();
      const first = index.contents;
      const ids = [...index.values()];
      reversed = true;
      await store.write((tx) => tx.put<SiteRecord>('sites', { ...tx.get<SiteRecord>('sites', ids[0]!)!, notes: 'the stamp stands' }));
      await index.refresh();
      expect([...index.values()]).toEqual([...ids].reverse());
      expect(index.contents).toBeGreaterThan(first);
    } finally {
      await store.close();
    }
  });
});

describe('a snapshot stored from data read before the write', () => {
  const snap = (cursor: string | null, changes: SiteSnapshot['changes']): SiteSnapshot => ({
    child_version: '6.1',
    wp_version: '6.8',
    php_version: '8.2',
    timezone: null,
    site_url: 'https://site1.example.com/',
    admin_username: 'admin',
    wp_update_version: null,
    plugins: [plugin('a/a.php', '1.0')],
    themes: [],
    security: [],
    health: { good: 1, recommended: 0, critical: 0 },
    changes,
    changes_cursor: cursor,
    users: [],
    updates: { core: null, plugins: [], themes: [], translations: [] },
  });
  const change = (n: number) => ({
    id: n,
    type: 'plugin',
    action: 'activated',
    description: `change ${n}`,
    user: 'admin',
    timestamp: `2026-01-0${n}T00:00:00Z`,
  });

  it('keeps the changes and cursor it read plus its own, and gives the hooks no previous data when another came in between', async () => {
    const s = await startServer();
    try {
      const { children, store } = s.services;
      const [site] = await seedSites(s.services, 1);
      const id = site!.id;
      // What the hooks were given, by write. A write function may run more than once (the PostgreSQL engine's dry run
      // finds its locks, and its test lane runs every batch once more): each run sets its write's slot, the last wins.
      const seen: Array<SiteData | null> = [];
      let write = 0;
      const hook = (_tx: unknown, siteId: number, _data: SiteData, prev: SiteData | null) => {
        if (siteId === id) seen[write] = prev;
      };
      children.snapshotHooks.add(hook);
      // The clock (Date only) moves between the snapshots, so that each is stamped apart.
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.parse('2026-02-01T00:00:00Z'));
      await store.write((tx) => children.recordSnapshot(tx, id, snap('c1', [change(1)]), null));
      // Two snapshots read the same stored data; the first is stored, then the second (built on the older read).
      const read = await children.siteData(id);
      vi.setSystemTime(Date.parse('2026-02-01T00:01:00Z'));
      write = 1;
      await store.write((tx) => children.recordSnapshot(tx, id, snap('c2', [change(2)]), read));
      vi.setSystemTime(Date.parse('2026-02-01T00:02:00Z'));
      write = 2;
      await store.write((tx) => children.recordSnapshot(tx, id, snap(null, []), read));
      expect(seen.map((p) => p?.changes_cursor ?? null)).toEqual([null, 'c1', null]);
      // What the stale write lost (change 2, cursor c2) the next sync asks for again: the cursor is the one read.
      const now = (await children.siteData(id))!;
      expect([now.changes_cursor, now.changes.map((c) => c.id)]).toEqual(['c1', [1]]);
      children.snapshotHooks.delete(hook);
    } finally {
      vi.useRealTimers();
      await s.close();
    }
  });
});
