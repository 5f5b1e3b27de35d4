// The cache of cold blobs read (engine.ts COLD_BLOBS), one per store: least recently used first out, bounded by the
// bytes of the blobs' JSON text. Writes and other processes' commits invalidate; a read that began before any
// invalidation does not fill the cache (it may have read what was just replaced). Concurrent reads of one blob share it.
import { BLOB_READ_BATCH, COLD_CACHE_BYTES } from './engine.js';

/** readBlobs' bound (both engines): more ids than BLOB_READ_BATCH in one call is a caller's mistake, refused. */
export function tooManyBlobs(ids: readonly number[]): void {
  if (ids.length > BLOB_READ_BATCH) throw new Error(`readBlobs reads at most ${BLOB_READ_BATCH} blobs at once (${ids.length} asked)`);
}

export class ColdCache {
  private entries = new Map<string, { value: unknown; bytes: number }>();
  private inflight = new Map<string, Promise<unknown>>();
  private total = 0;
  /** Bumped by every invalidation: a read started at another epoch is not cached. */
  private epoch = 0;

  constructor(readonly maxBytes = COLD_CACHE_BYTES) {}

  /**
   * The cached value of `key`, or `load`'s (which answers the value and the length of its JSON text), kept when it fits,
   * nothing was invalidated meanwhile and `keep` (false: a caller that keeps what it derives from the value itself).
   */
  read<T>(key: string, load: () => Promise<{ value: T | null; bytes: number }>, keep = true): Promise<T | null> {
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return Promise.resolve(hit.value as T | null);
    }
    const running = this.inflight.get(key);
    if (running) return running as Promise<T | null>;
    const epoch = this.epoch;
    const p = load()
      .then(({ value, bytes }) => {
        if (keep && epoch === this.epoch) this.put(key, value, bytes);
        return value;
      })
      .finally(() => {
        if (this.inflight.get(key) === p) this.inflight.delete(key);
      });
    this.inflight.set(key, p);
    return p;
  }

  private put(key: string, value: unknown, bytes: number): void {
    if (bytes > this.maxBytes) return;
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.total -= old.bytes;
    }
    this.total += bytes;
    this.entries.set(key, { value, bytes });
    for (const [k, e] of this.entries) {
      if (this.total <= this.maxBytes) break;
      this.entries.delete(k);
      this.total -= e.bytes;
    }
  }

  invalidate(key: string): void {
    this.epoch++;
    this.inflight.delete(key);
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.total -= e.bytes;
  }

  clear(): void {
    this.epoch++;
    this.inflight.clear();
    this.entries.clear();
    this.total = 0;
  }

  stats(): { entries: number; bytes: number; max_bytes: number } {
    return { entries: this.entries.size, bytes: this.total, max_bytes: this.maxBytes };
  }
}
