// A site's tag_ids and stats (store/shared-parts.ts): every record that enters a process's memory — written, loaded,
// taken from another process's commit — holds the one frozen copy the records with the same part share, equal to what
// was written. Both engines (this file runs in the PostgreSQL lane too).
import { describe, expect, it } from 'vitest';
import type { Store } from '../src/store/engine.js';
import { openStore } from '../src/store/open.js';
import { shareParts } from '../src/store/shared-parts.js';
import type { SiteRecord } from '../src/store/records.js';
import { testFleetStore } from './support/server.js';

const stats = (n: number) => ({ plugin_updates: n, theme_updates: 1, wp_update_available: false, health_score: null });
const site = (i: number, tag_ids: number[], s: number) =>
  ({ url: `https://s${i}.test/`, name: `s${i}`, tag_ids, stats: stats(s) }) as Partial<SiteRecord> as SiteRecord;
const rec = (store: Store, id: number) => store.get<SiteRecord>('sites', id)!;

/** Sites 1 and 2 have the same parts, 3 others; each check also holds their values to what was written. */
function expectShared(store: Store): void {
  const [a, b, c] = [1, 2, 3].map((id) => rec(store, id));
  expect(a!.tag_ids).toEqual([4, 9]);
  expect(a!.stats).toEqual(stats(2));
  expect(a!.tag_ids).toBe(b!.tag_ids);
  expect(a!.stats).toBe(b!.stats);
  expect(Object.isFrozen(a!.tag_ids) && Object.isFrozen(a!.stats)).toBe(true);
  expect(c!.tag_ids).toEqual([4]);
  expect(c!.stats).toEqual(stats(7));
  expect(c!.tag_ids).not.toBe(a!.tag_ids);
}

describe('parts many sites share', () => {
  it('are one frozen copy once written, loaded again, and taken from another process', async () => {
    const fleet = await testFleetStore();
    const store = await fleet.open();
    const other = await openStore({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl ?? null });
    try {
      await store.write((tx) => {
        tx.insert('sites', site(1, [4, 9], 2));
        tx.insert('sites', site(2, [4, 9], 2));
        tx.insert('sites', site(3, [4], 7));
      });
      expectShared(store);
      // Written by another store (another process's commit, as the engine takes it in).
      await other.sync();
      expectShared(other);
      // A new record for a site, its part changed, then back: the others keep theirs; each is the shared copy again.
      await store.write((tx) => tx.put('sites', { ...rec(store, 2), tag_ids: [4] }));
      expect(rec(store, 2).tag_ids).toBe(rec(store, 3).tag_ids);
      expect(rec(store, 1).tag_ids).toEqual([4, 9]);
      await store.write((tx) => tx.put('sites', { ...rec(store, 2), tag_ids: [4, 9] }));
      expectShared(store);
      await other.sync();
      expectShared(other);
    } finally {
      await other.close();
      await store.close();
    }
    // Loaded from what is stored.
    const again = await fleet.open();
    try {
      expectShared(again);
    } finally {
      await again.close();
    }
  });

  it('tells apart parts that differ in an item, its kind, its length or a field, and leaves what it cannot pool', () => {
    const parts: unknown[] = [[1], [1, 2], [2, 1], [true], [null], [], { a: 1 }, { a: true }, { a: null }, { b: 1 }, { a: 1, b: 1 }, {}];
    const first = parts.map((p, i) => shareParts('sites', { id: i, tag_ids: structuredClone(p) } as never) as { tag_ids: unknown });
    const again = parts.map((p, i) => shareParts('sites', { id: i, tag_ids: structuredClone(p) } as never) as { tag_ids: unknown });
    parts.forEach((p, i) => {
      expect(first[i]!.tag_ids).toEqual(p);
      expect(again[i]!.tag_ids, JSON.stringify(p)).toBe(first[i]!.tag_ids);
    });
    // A string or a nested value in a part: kept as it is, its own.
    for (const odd of [['x'], [[1]], { a: 'x' }, { a: { b: 1 } }]) {
      const r = shareParts('sites', { id: 1, tag_ids: odd } as never) as { tag_ids: unknown };
      expect(r.tag_ids).toBe(odd);
      expect(Object.isFrozen(odd)).toBe(false);
    }
    // Other collections are not touched.
    const tag = { id: 1, tag_ids: [1] };
    expect(shareParts('tags', tag).tag_ids).not.toBe(shareParts('tags', { id: 2, tag_ids: [1] }).tag_ids);
  });

  it('stays right past its bound (INTERN_VALUES_MAX parts: it starts again), each record with its own value', () => {
    const made = Array.from({ length: 25_000 }, (_, i) => ({ id: i, stats: stats(i) }));
    for (const r of made) shareParts('sites', r);
    made.forEach((r, i) => expect(r.stats).toEqual(stats(i)));
    expect(made.every((r) => Object.isFrozen(r.stats))).toBe(true);
    // The last values again: the pool's copies of them (it holds those made since it last started again).
    for (let i = 21_000; i < 25_000; i++) expect(shareParts('sites', { id: i, stats: stats(i) }).stats).toBe(made[i]!.stats);
  });
});
