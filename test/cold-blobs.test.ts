// Cold blobs (store/engine.ts COLD_BLOBS: the vulnerability feed's index and record buckets) on whichever engine the
// lane runs (lowdb here, PostgreSQL in the pg lane): never held in memory, read with readBlob through a cache bounded
// by COLD_CACHE_BYTES of JSON text, never cached stale.
import { afterEach, describe, expect, it } from 'vitest';
import { ColdCache } from '../src/store/cold-cache.js';
import { COLD_CACHE_BYTES, type Store } from '../src/store/engine.js';
import { testFleetStore } from './support/server.js';

const KIND = 'vulnerability-feed' as const;
/** A blob whose JSON text is exactly `bytes` long on both engines (a JSON string: its quotes and its characters). */
const sized = (bytes: number, fill = 'x') => fill.repeat(bytes - 2);

let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

describe('cold blobs', () => {
  it('are written by putBlob, read by readBlob, never held in memory, and refused by getBlob', async () => {
    store = await (await testFleetStore()).open();
    const s = store;
    await s.write((tx) => {
      tx.putBlob(KIND, 1, { records: [{ key: 'a' }] });
      tx.putBlob('vulnerabilities', 0, { generation: 1 });
    });
    expect(await s.readBlob(KIND, 1)).toEqual({ records: [{ key: 'a' }] });
    expect(await s.readBlob(KIND, 2)).toBeNull();
    expect(await s.readBlob('vulnerabilities', 0)).toEqual({ generation: 1 });
    expect(() => s.getBlob(KIND, 1)).toThrow(/readBlob/);
    expect(s.memory().blobs[KIND]).toBe(0);
    expect(s.memory().blobs.vulnerabilities).toBe(1);
    // Rewritten, then deleted: the next read says so (the cache is not stale).
    await s.write((tx) => tx.putBlob(KIND, 1, { records: [{ key: 'b' }] }));
    expect(await s.readBlob(KIND, 1)).toEqual({ records: [{ key: 'b' }] });
    await s.write((tx) => tx.putBlob(KIND, 1, null));
    expect(await s.readBlob(KIND, 1)).toBeNull();
    // A write that throws leaves its cold blob unwritten.
    await expect(
      s.write((tx) => {
        tx.putBlob(KIND, 3, { doomed: true });
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    await s.write((tx) => tx.putBlob('vulnerabilities', 0, { generation: 2 }));
    expect(await s.readBlob(KIND, 3)).toBeNull();
  });

  it("a reader that sees a write's other changes sees its cold blobs too, before the write is durable", async () => {
    store = await (await testFleetStore()).open();
    const s = store;
    let durable = false;
    const w = s
      .write((tx) => {
        tx.putBlob('vulnerabilities', 0, { generation: 1 });
        tx.putBlob(KIND, 10_000, [['plugin:x', []]]);
      })
      .then(() => (durable = true));
    while (!s.getBlob('vulnerabilities', 0)) await new Promise((r) => setImmediate(r));
    expect(durable).toBe(false);
    // The feed state names generation 1: its index is readable now, not only once the commit is on disk.
    expect(await s.readBlob(KIND, 10_000)).toEqual([['plugin:x', []]]);
    await w;
    expect(await s.readBlob(KIND, 10_000)).toEqual([['plugin:x', []]]);
  });

  it('a rewrite drops the cached blob: the next read sees it (a read under way answers the old or the new)', async () => {
    store = await (await testFleetStore()).open();
    const s = store;
    await s.write((tx) => tx.putBlob(KIND, 7, 'old'));
    const reading = s.readBlob(KIND, 7);
    await s.write((tx) => tx.putBlob(KIND, 7, 'new'));
    expect(['old', 'new']).toContain(await reading);
    expect(await s.readBlob(KIND, 7)).toBe('new');
  });

  it(`the cache holds at most COLD_CACHE_BYTES (${COLD_CACHE_BYTES}) of JSON text: a blob of exactly that is kept, one byte more is not, and the least recently read goes first`, async () => {
    store = await (await testFleetStore()).open();
    const s = store;
    const half = COLD_CACHE_BYTES / 2;
    await s.write((tx) => {
      tx.putBlob(KIND, 1, sized(COLD_CACHE_BYTES));
      tx.putBlob(KIND, 2, sized(COLD_CACHE_BYTES + 1));
      tx.putBlob(KIND, 3, sized(half, 'a'));
      tx.putBlob(KIND, 4, sized(half, 'b'));
      tx.putBlob(KIND, 5, sized(3, 'c'));
    });
    const cache = () => s.memory().cold_cache;
    expect(cache()).toEqual({ entries: 0, bytes: 0, max_bytes: COLD_CACHE_BYTES });
    // A caller that keeps what it builds (the feed's index) leaves it out.
    expect((await s.readBlob<string>(KIND, 3, { cache: false }))!.length).toBe(half - 2);
    expect(cache()).toMatchObject({ entries: 0, bytes: 0 });
    expect((await s.readBlob<string>(KIND, 1))!.length).toBe(COLD_CACHE_BYTES - 2);
    expect(cache()).toMatchObject({ entries: 1, bytes: COLD_CACHE_BYTES });
    // Just past the bound: answered, not kept (blob 1 stays).
    expect((await s.readBlob<string>(KIND, 2))!.length).toBe(COLD_CACHE_BYTES - 1);
    expect(cache()).toMatchObject({ entries: 1, bytes: COLD_CACHE_BYTES });
    await s.readBlob(KIND, 3);
    expect(cache()).toMatchObject({ entries: 1, bytes: half });
    await s.readBlob(KIND, 4);
    expect(cache()).toMatchObject({ entries: 2, bytes: COLD_CACHE_BYTES });
    // Read 3 again (now the most recent): 3 bytes past the bound push out 4, the least recently read.
    await s.readBlob(KIND, 3);
    expect(await s.readBlob(KIND, 5)).toBe('c');
    expect(cache()).toMatchObject({ entries: 2, bytes: half + 3 });
    expect(cache().bytes).toBeLessThanOrEqual(COLD_CACHE_BYTES);
  });

  it('a read that an invalidation overtook is answered but not cached; reads of one blob under way share one load', async () => {
    const cache = new ColdCache(100);
    let loads = 0;
    let finish!: (v: { value: string; bytes: number }) => void;
    const load = () => {
      loads++;
      return new Promise<{ value: string; bytes: number }>((r) => (finish = r));
    };
    const a = cache.read('k', load);
    const b = cache.read('k', load);
    cache.invalidate('k');
    finish({ value: 'old', bytes: 5 });
    expect([await a, await b]).toEqual(['old', 'old']);
    expect(loads).toBe(1);
    expect(cache.stats()).toEqual({ entries: 0, bytes: 0, max_bytes: 100 });
    const c = cache.read('k', load);
    finish({ value: 'new', bytes: 5 });
    expect(await c).toBe('new');
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 5 });
  });
});
