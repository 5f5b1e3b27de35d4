// Where the vulnerability feed lives: blobs, out of the record collections, on both engines.
//   'vulnerabilities' id 0               the feed state (FeedState: which generation is live, where it came from, its
//                                        validators): small, held in memory by every process
//   'vulnerability-feed' id gen * 10_000  generation gen's index: per type:slug, the ranges and fixes of each record
//                                        (no texts); read once per generation and held as a FeedIndex
//   'vulnerability-feed' id gen * 10_000 + n   bucket n (1…) of generation gen: up to BUCKET_RECORDS full records, in
//                                        feed order; read on demand, a few at a time
// 'vulnerability-feed' is a cold blob kind (store/engine.ts COLD_BLOBS): no engine holds it in memory (PostgreSQL
// keeps it in its table, lowdb in its files); readBlob reads it through the store's cache of COLD_CACHE_BYTES.
// A feed stored before that kind existed (state without `blob_kind`) is read where it is, in 'vulnerabilities' blobs,
// until the next import or refresh writes the new generation to 'vulnerability-feed' and deletes the old one.
// An import writes a new generation bucket by bucket as the feed streams in (one bucket in memory at a time), then
// flips id 0 to it in one write and deletes the previous generation: readers see the old feed or the new, never a mix;
// a refused feed leaves the live generation untouched and its partial buckets are deleted.
import { ServiceError } from '../../core/errors.js';
import type { Blob, Store } from '../../store/engine.js';
import { FeedIndex, type IndexEntry } from './matching.js';
import type { FeedSource, StreamStats, VulnRecord } from './records.js';

export const BUCKET_RECORDS = 200;
/** Buckets of one generation (so a feed of at most MAX_BUCKETS × BUCKET_RECORDS records). */
export const MAX_BUCKETS = 9_999;
export const MAX_RECORDS = MAX_BUCKETS * BUCKET_RECORDS;
const GEN_SPAN = 10_000;
/** Blob ids are 32-bit on PostgreSQL: generations wrap before gen × GEN_SPAN overflows. */
const MAX_GEN = 200_000;
/** Where the index and buckets of a generation are stored (see above). */
const FEED_KIND = 'vulnerability-feed' as const;

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
  /** Where the live generation's index and buckets are: absent for a feed stored before 'vulnerability-feed' existed. */
  blob_kind?: typeof FEED_KIND;
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
  private loading: { generation: number; index: Promise<FeedIndex> } | null = null;

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

  /** Where a state's generation is stored: its own kind, or 'vulnerabilities' for a feed stored before it existed. */
  private kindOf(state: FeedState): Blob {
    return state.blob_kind ?? 'vulnerabilities';
  }

  private read<T>(state: FeedState, id: number, cache = true): Promise<T | null> {
    return this.store.readBlob<T>(this.kindOf(state), id, { cache });
  }

  /**
   * The live index: read once per generation from its blob (every process sees another's import) and then held in
   * memory, the only part of the feed that is. Concurrent callers share one read.
   */
  async index(): Promise<{ generation: number; index: FeedIndex }> {
    const state = this.state();
    const gen = state.generation;
    if (this.loaded?.generation === gen) return this.loaded;
    if (this.loading?.generation !== gen) this.loading = { generation: gen, index: this.loadIndex(state) };
    const loading = this.loading;
    try {
      const loaded = { generation: gen, index: await loading.index };
      if (this.state().generation === gen) this.loaded = loaded;
      return loaded;
    } finally {
      if (this.loading === loading) this.loading = null;
    }
  }

  private async loadIndex(state: FeedState): Promise<FeedIndex> {
    const index = new FeedIndex();
    if (!state.generation) return index;
    // Not kept in the store's cache: the FeedIndex built from it is what stays.
    const stored = await this.read<StoredIndex>(state, state.generation * GEN_SPAN, false);
    // A live generation always has its index (written in the write that makes it live): missing, it is being replaced
    // under this reader (another process's files half renamed); an empty index must not be taken for the feed's.
    if (!stored) throw new ServiceError('svc_store_unavailable', 'The vulnerability feed is being replaced; try again in a moment.', 503);
    const keys = new Set<string>();
    for (const [typeSlug, entries] of stored)
      for (const e of entries) {
        index.addEntry(typeSlug, e);
        keys.add(e.key);
      }
    index.size = keys.size;
    return index;
  }

  /** Full records of the live generation by key (bucket numbers from the index), reading only the buckets named. */
  async records(wanted: ReadonlyMap<string, number>): Promise<Map<string, VulnRecord>> {
    const state = this.state();
    const gen = state.generation;
    const out = new Map<string, VulnRecord>();
    if (!gen) return out;
    const buckets = await Promise.all([...new Set(wanted.values())].map((b) => this.read<Bucket>(state, gen * GEN_SPAN + b)));
    for (const blob of buckets) for (const r of blob?.records ?? []) if (wanted.has(r.key)) out.set(r.key, r);
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
      await this.store.write((tx) => tx.putBlob(FEED_KIND, gen * GEN_SPAN + n, { records } satisfies Bucket));
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
        tx.putBlob(FEED_KIND, gen * GEN_SPAN, stored);
        const cur = this.state();
        // The previous generation goes in the same write that retires it (from where it is stored).
        if (cur.generation && cur.generation !== gen)
          for (let i = 0; i <= cur.buckets; i++) tx.putBlob(this.kindOf(cur), cur.generation * GEN_SPAN + i, null);
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
          blob_kind: FEED_KIND,
        };
        tx.putBlob('vulnerabilities', 0, next);
        return next;
      });
    } catch (e) {
      // Refused: drop what this generation wrote; the live one is untouched.
      const written = buckets;
      await this.store
        .write((tx) => {
          for (let i = 0; i <= written; i++) tx.putBlob(FEED_KIND, gen * GEN_SPAN + i, null);
        })
        .catch(() => {});
      throw e;
    }
  }
}
