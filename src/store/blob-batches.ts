// Reading one kind of blob for many records, a batch at a time: the fleet-wide passes over the sites' data (the
// site-data indexes, update plans, vulnerability matching) hold one batch while they work on it, never the fleet.
import { BLOB_READ_BATCH, type Blob, type Store } from './engine.js';
import type { SiteData, SiteRecord } from './records.js';

/**
 * Calls `fn` with each batch of `items` (BLOB_READ_BATCH at a time, in order) and their blobs of `kind`, by the id
 * `idOf` gives. The next batch is read while `fn` works on this one, so the engine's side of a read (on PostgreSQL,
 * the server taking the rows out and sending them) runs beside this process's parsing and deriving instead of in
 * turn: at most two batches are held at once. Should `fn` throw, the read under way is let go and the error passed on.
 */
export async function eachBlobBatch<S, T>(
  store: Pick<Store, 'readBlobs'>,
  kind: Blob,
  items: readonly S[],
  idOf: (item: S) => number,
  fn: (batch: readonly S[], data: ReadonlyMap<number, T | null>) => void,
): Promise<void> {
  const read = (from: number) => {
    const batch = items.slice(from, from + BLOB_READ_BATCH);
    return store.readBlobs<T>(kind, batch.map(idOf)).then((data) => ({ batch, data }));
  };
  let next = items.length ? read(0) : null;
  for (let from = 0; next; from += BLOB_READ_BATCH) {
    const { batch, data } = await next;
    next = from + BLOB_READ_BATCH < items.length ? read(from + BLOB_READ_BATCH) : null;
    try {
      fn(batch, data);
    } catch (e) {
      next?.catch(() => {});
      throw e;
    }
  }
}

/** Calls `fn` with each site and its stored data (null when it has none), in the sites' order: eachBlobBatch. */
export function eachSiteData(
  store: Pick<Store, 'readBlobs'>,
  sites: readonly SiteRecord[],
  fn: (site: SiteRecord, data: SiteData | null) => void,
): Promise<void> {
  return eachBlobBatch<SiteRecord, SiteData>(
    store,
    'site-data',
    sites,
    (s) => s.id,
    (batch, data) => {
      for (const s of batch) fn(s, data.get(s.id) ?? null);
    },
  );
}
