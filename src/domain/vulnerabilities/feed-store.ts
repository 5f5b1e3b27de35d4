// Where the vulnerability feed lives: blobs of kind 'vulnerabilities', out of the record collections, on both engines.
//   id 0                       the feed state (FeedState: which generation is live, where it came from, its validators)
//   id gen * 10_000            generation gen's index: per type:slug, the ranges and fixes of each record (no texts)
//   id gen * 10_000 + n        bucket n (1…) of generation gen: up to BUCKET_RECORDS full records, in feed order
// An import writes a new generation bucket by bucket as the feed streams in (one bucket in memory at a time), then
// flips id 0 to it in one write and deletes the previous generation: readers see the old feed or the new, never a mix;
// a refused feed leaves the live generation untouched and its partial buckets are deleted.
import { ServiceError } from '../../core/errors.js';
import type { Store } from '../../store/engine.js';
import { FeedIndex, type IndexEntry } from './matching.js';
import type { FeedSource, StreamStats, VulnRecord } from './records.js';

export const BUCKET_RECORDS = 200;
/** Buckets of one generation (so a feed of at most MAX_BUCKETS × BUCKET_RECORDS records). */
export const MAX_BUCKETS = 9_999;
export const MAX_RECORDS = MAX_BUCKETS * BUCKET_RECORDS;
const GEN_SPAN = 10_000;
/** Blob ids are 32-bit on PostgreSQL: generations wrap before gen × GEN_SPAN overflows. */
const MAX_GEN = 200_000;

export interface FeedState {
  /** The live generation (0: no feed yet) and the last one handed out (an import claims the next). */
  generation: number;
  last_generation: number;
  source: FeedSource | null;
  /** Where the live data came from: a URL, or "file:<name>" for an import. */
  origin: string | null;
  imported_at: string | null;
  records: number;
  skipped: number;
  buckets: number;
  /** Conditional-request validators of the last download (Wordfence). */
  etag: string | null;
  last_modified: string | null;
  /** Last refresh attempt and its outcome. */
  checked_at: string | null;
  last_error: string | null;
}

const EMPTY: FeedState = {
  generation: 0,
  last_generation: 0,
  source: null,
  origin: null,
  imported_at: null,
  records: 0,
  skipped: 0,
  buckets: 0,
  etag: null,
  last_modified: null,
  checked_at: null,
  last_error: null,
};

/** The index as stored: [type:slug, entries] pairs. */
type StoredIndex = Array<[string, IndexEntry[]]>;
interface Bucket {
  records: VulnRecord[];
}

const isoNow = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The live generation (0: no feed), read from the state blob: a key for answers derived from the feed. */
export function liveFeedGeneration(store: Store): number {
  return store.getBlob<FeedState>('vulnerabilities', 0)?.generation ?? 0;
}

export class FeedStore {
  private loaded: { generation: number; index: FeedIndex } | null = null;

  constructor(private readonly store: Store) {}

  state(): FeedState {
    return { ...EMPTY, ...this.store.getBlob<FeedState>('vulnerabilities', 0) };
  }

  async patchState(patch: Partial<FeedState>): Promise<FeedState> {
    return this.store.write((tx) => {
      const next = { ...this.state(), ...patch };
      tx.putBlob('vulnerabilities', 0, next);
      return next;
    });
  }

  /** The live index (read once per generation from its blob; every process sees another's import). */
  index(): { generation: number; index: FeedIndex } {
    const gen = this.state().generation;
    if (this.loaded?.generation === gen) return this.loaded;
    const index = new FeedIndex();
    if (gen) {
      const stored = this.store.getBlob<StoredIndex>('vulnerabilities', gen * GEN_SPAN) ?? [];
      const keys = new Set<string>();
      for (const [typeSlug, entries] of stored)
        for (const e of entries) {
          index.addEntry(typeSlug, e);
          keys.add(e.key);
        }
      index.size = keys.size;
    }
    this.loaded = { generation: gen, index };
    return this.loaded;
  }

  /** Full records of the live generation by key (bucket numbers from the index). */
  records(wanted: ReadonlyMap<string, number>): Map<string, VulnRecord> {
    const gen = this.state().generation;
    const out = new Map<string, VulnRecord>();
    const buckets = new Set(wanted.values());
    for (const b of buckets) {
      const blob = this.store.getBlob<Bucket>('vulnerabilities', gen * GEN_SPAN + b);
      for (const r of blob?.records ?? []) if (wanted.has(r.key)) out.set(r.key, r);
    }
    return out;
  }

  /**
   * Imports a feed: `produce` hands records one by one (awaiting each); they are written a bucket at a time into a
   * new generation, which goes live only if `produce` completes with at least one record. Memory: one bucket and the
   * index being built (no texts).
   */
  async replace(
    source: FeedSource,
    origin: string,
    produce: (add: (r: VulnRecord) => Promise<void>) => Promise<Omit<StreamStats, 'records'>>,
    validators: { etag?: string | null; last_modified?: string | null } = {},
  ): Promise<FeedState> {
    const gen = await this.store.write((tx) => {
      const cur = this.state();
      let next = cur.last_generation + 1;
      if (next > MAX_GEN || next === cur.generation) next = cur.generation === 1 ? 2 : 1;
      tx.putBlob('vulnerabilities', 0, { ...cur, last_generation: next });
      return next;
    });
    const index = new FeedIndex();
    const seen = new Set<string>();
    let bucket: VulnRecord[] = [];
    let buckets = 0;
    let duplicates = 0;
    const flush = async () => {
      if (!bucket.length) return;
      const n = ++buckets;
      const records = bucket;
      bucket = [];
      await this.store.write((tx) => tx.putBlob('vulnerabilities', gen * GEN_SPAN + n, { records } satisfies Bucket));
    };
    const add = async (r: VulnRecord) => {
      if (seen.has(r.key)) {
        duplicates++;
        return;
      }
      if (seen.size >= MAX_RECORDS)
        throw new ServiceError('svc_feed_too_large', `The feed holds more than ${MAX_RECORDS} records; the previous data is kept.`, 413);
      seen.add(r.key);
      index.add(r, buckets + 1);
      bucket.push(r);
      if (bucket.length >= BUCKET_RECORDS) await flush();
    };
    try {
      const stats = await produce(add);
      await flush();
      if (!seen.size) throw new ServiceError('svc_feed_invalid', 'The feed holds no valid record; the previous data is kept.', 400);
      const stored: StoredIndex = [...index.entries()];
      const old = this.state();
      return await this.store.write((tx) => {
        tx.putBlob('vulnerabilities', gen * GEN_SPAN, stored);
        const cur = this.state();
        // The previous generation goes in the same write that retires it.
        if (cur.generation && cur.generation !== gen)
          for (let i = 0; i <= cur.buckets; i++) tx.putBlob('vulnerabilities', cur.generation * GEN_SPAN + i, null);
        const next: FeedState = {
          ...cur,
          generation: gen,
          source,
          origin,
          imported_at: isoNow(),
          records: seen.size,
          skipped: stats.skipped + duplicates,
          buckets,
          etag: validators.etag ?? (old.source === source ? cur.etag : null),
          last_modified: validators.last_modified ?? (old.source === source ? cur.last_modified : null),
          checked_at: isoNow(),
          last_error: null,
        };
        tx.putBlob('vulnerabilities', 0, next);
        return next;
      });
    } catch (e) {
      // Refused: drop what this generation wrote; the live one is untouched.
      const written = buckets;
      await this.store
        .write((tx) => {
          for (let i = 0; i <= written; i++) tx.putBlob('vulnerabilities', gen * GEN_SPAN + i, null);
        })
        .catch(() => {});
      throw e;
    }
  }
}
