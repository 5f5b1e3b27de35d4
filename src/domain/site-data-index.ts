// What a fleet-wide index (pending updates, security issues, abandoned items) keeps of each site's stored data: only
// what it derives, per site, with the stamp of the site record it was derived from. Site data is a cold blob (no
// process holds every site's), so a refresh reads the data of the sites whose stamp moved, BLOB_READ_BATCH at a time
// (store.readBlobs: one SELECT on PostgreSQL): what it holds of the sites' data while it runs is one batch, never the
// fleet. Concurrent refreshes share one run.
import { BLOB_READ_BATCH } from '../store/engine.js';
import type { SiteData, SiteRecord } from '../store/records.js';
import type { Store } from '../store/store.js';

export class SiteDataIndex<E> {
  private entries = new Map<number, { stamp: string; value: E }>();
  /** The sites collection's version the entries reflect (-1: never built). */
  private built = -1;
  private running: { version: number; done: Promise<void> } | null = null;

  constructor(
    private readonly store: Store,
    /** What an entry derives from in the site record: the data is read again when it moves (a sync patches the record). */
    private readonly stampOf: (site: SiteRecord) => string,
    private readonly derive: (site: SiteRecord, data: SiteData | null) => E,
    /** The sites to index, in the order `values` answers them. */
    private readonly sitesOf: () => Iterable<SiteRecord> = () => store.all<SiteRecord>('sites'),
  ) {}

  /** The version of the sites collection the entries reflect: a key for what a caller derives from them. */
  get version(): number {
    return this.built;
  }

  /**
   * Brings the entries up to every change of the sites made before the call: waits for a run under way when it began
   * after that change, else starts (or waits for, then starts) one.
   */
  async refresh(): Promise<void> {
    const want = this.store.version('sites');
    while (this.built < want) {
      if (!this.running) {
        const version = this.store.version('sites');
        const done = this.run(version).finally(() => {
          this.running = null;
        });
        this.running = { version, done };
      }
      await this.running.done;
    }
  }

  /** One site's entry, or undefined when it has none (not indexed yet, or removed). */
  get(id: number): E | undefined {
    return this.entries.get(id)?.value;
  }

  /** Every site's entry, in the order of `sitesOf` at the last refresh. */
  *values(): IterableIterator<E> {
    for (const e of this.entries.values()) yield e.value;
  }

  private async run(version: number): Promise<void> {
    const next = new Map<number, { stamp: string; value: E } | null>();
    const stale: Array<{ site: SiteRecord; stamp: string }> = [];
    for (const site of this.sitesOf()) {
      const stamp = this.stampOf(site);
      const cur = this.entries.get(site.id);
      if (cur && cur.stamp === stamp) next.set(site.id, cur);
      else {
        next.set(site.id, null); // keeps the order; filled below
        stale.push({ site, stamp });
      }
    }
    // The stamps were taken before the reads: data read is at least as new as its stamp (a newer one is read again).
    for (let i = 0; i < stale.length; i += BLOB_READ_BATCH) {
      const batch = stale.slice(i, i + BLOB_READ_BATCH);
      const data = await this.store.readBlobs<SiteData>(
        'site-data',
        batch.map((b) => b.site.id),
      );
      for (const { site, stamp } of batch) next.set(site.id, { stamp, value: this.derive(site, data.get(site.id) ?? null) });
    }
    this.entries = next as Map<number, { stamp: string; value: E }>;
    this.built = version;
  }
}
