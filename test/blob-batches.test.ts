// eachBlobBatch, on a real store (either engine: the PostgreSQL lane runs it too): every item once, in order, in
// batches of at most BLOB_READ_BATCH with their blobs; the next batch is asked for before the current one is worked
// on; a throw in the caller's function ends the pass with that error and nothing left unhandled.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { eachBlobBatch } from '../src/store/blob-batches.js';
import { BLOB_READ_BATCH, type Store } from '../src/store/engine.js';
import { testFleetStore } from './support/server.js';

const N = 2 * BLOB_READ_BATCH + 7;

describe('eachBlobBatch', () => {
  let store: Store;
  beforeAll(async () => {
    store = await (await testFleetStore()).open();
    await store.write((tx) => {
      for (let id = 1; id <= N; id++) if (id % 10 !== 0) tx.putBlob('site-data', id, { n: id });
    });
  });
  afterAll(async () => {
    await store?.close();
  });

  it('hands over every item once, in order, with its blob (null when none), and reads the next batch before working', async () => {
    const items = Array.from({ length: N }, (_, i) => ({ id: N - i })); // not in id order: the items' order is kept
    const reads = vi.spyOn(store, 'readBlobs');
    const seen: Array<{ id: number; n: number | null }> = [];
    const readsBeforeWork: number[] = [];
    await eachBlobBatch<{ id: number }, { n: number }>(
      store,
      'site-data',
      items,
      (s) => s.id,
      (batch, data) => {
        readsBeforeWork.push(reads.mock.calls.length);
        for (const s of batch) seen.push({ id: s.id, n: data.get(s.id)?.n ?? null });
      },
    );
    const sizes = reads.mock.calls.map((c) => c[1].length);
    reads.mockRestore();
    expect(seen.map((s) => s.id)).toEqual(items.map((s) => s.id));
    expect(seen.every((s) => s.n === (s.id % 10 === 0 ? null : s.id))).toBe(true);
    expect(sizes).toEqual([BLOB_READ_BATCH, BLOB_READ_BATCH, 7]);
    expect(readsBeforeWork).toEqual([2, 3, 3]); // batch k + 1 asked for before batch k is worked on
  });

  it('reads nothing for no items, and ends with the error of a function that throws', async () => {
    const reads = vi.spyOn(store, 'readBlobs');
    await eachBlobBatch(
      store,
      'site-data',
      [],
      (s: number) => s,
      () => {
        throw new Error('not called');
      },
    );
    expect(reads.mock.calls).toHaveLength(0);
    const ids = Array.from({ length: N }, (_, i) => i + 1);
    let calls = 0;
    const failed = eachBlobBatch(
      store,
      'site-data',
      ids,
      (id) => id,
      () => {
        calls++;
        throw new Error('derive failed');
      },
    );
    await expect(failed).rejects.toThrow('derive failed');
    expect(calls).toBe(1);
    reads.mockRestore();
  });
});
