// What a fleet-wide index (pending updates, security issues, abandoned items) keeps of each site's stored data: only
// what it derives, per site, with the stamp of the site record it was derived from. Site data is a cold blob (no
// process holds every site's), so a refresh reads the data of the sites whose stamp moved, BLOB_READ_BATCH at a time
// (store.readBlobs: one SELECT on PostgreSQL): what it holds of the sites' data while it runs is one batch, never the
// fleet. The indexes of one store share a SiteDataScan: a refresh of any brings every one up to date from the same
// reads (a site is read once when any of them needs it), and concurrent refreshes share one run.
import { isDeepStrictEqual } from 'node:util';
import { eachBlobBatch } from '../store/blob-batches.js';
import { IdSlots } from '../store/id-numbers.js';
import type { SiteData, SiteRecord } from '../store/records.js';
import type { Store } from '../store/store.js';

/** One index's part of a run: its sites whose stamp moved, filled from each batch read, then taken as its entries. */
interface Pass {
  readonly stale: ReadonlyMap<number, unknown>;
  fill(ids: readonly number[], data: ReadonlyMap<number, SiteData | null>): void;
  done(version: number): void;
}

/** The reads of the sites' data for every index of one store (one per process and store: domain/index.ts). */
export class SiteDataScan {
  private readonly indexes: Array<{ pass(): Pass }> = [];
  private running: Promise<void> | null = null;

  constructor(readonly store: Store) {}

  /** Each index registers itself when made: every run brings it up to date too. */
  register(index: { pass(): Pass }): void {
    this.indexes.push(index);
  }

  /**
   * Brings an index (with every other) up to every change of the sites made before the call: waits for a run under
   * way when it began after that change, else starts (or waits for, then starts) one.
   */
  async refresh(index: { readonly version: number }): Promise<void> {
    const want = this.store.version('sites');
    while (index.version < want) {
      this.running ??= this.run(this.store.version('sites')).finally(() => {
        this.running = null;
      });
      await this.running;
    }
  }

  private async run(version: number): Promise<void> {
    // Every index's stamps are taken before the first read: data read is at least as new as its stamp (a newer one is
    // read again).
    const passes = this.indexes.map((index) => index.pass());
    const ids = [...new Set(passes.flatMap((p) => [...p.stale.keys()]))];
    await eachBlobBatch<number, SiteData>(
      this.store,
      'site-data',
      ids,
      (id) => id,
      (batch, data) => {
        for (const p of passes) p.fill(batch, data);
      },
    );
    for (const p of passes) p.done(version);
  }
}

/**
 * A site's value and the record it was derived for: the stamp is worked out from the record when it is needed. When a
 * site's record is replaced by one with the same stamp, or one whose data derives the same value, the entry is kept and
 * given the new record: a list built from the entries (the fleet's pending updates) shows the record of now through
 * them, and holds no replaced record (at 100,000 sites, an hour of edits would hold a second copy of the fleet).
 */
export interface Entry<E> {
  site: SiteRecord;
  readonly value: E;
}

export class SiteDataIndex<E> {
  /** Per site: its value and the record it was derived for (records are never changed: a change is a new record). */
  private entries = new IdSlots<Entry<E>>();
  /**
   * The sites that have an entry, in the order of `sitesOf` at the last full pass (a pass over the changed sites alone
   * moves none). Kept apart from the entries, by id in pages: a Map of them was 3.5 MB an index at 100,000 sites; a
   * typed array, 4 bytes a site (ids are PostgreSQL integers: below 2^31).
   */
  private ids = new Uint32Array(0);
  /** The sites collection's version the entries reflect (-1: never built). */
  private built = -1;
  /** Moves only when an entry's value, or the order of the entries, changed (see `contents`). */
  private generation = -1;
  /** The period the entries were derived in (see `period`). */
  private periodAt: string | null = null;

  constructor(
    private readonly scan: SiteDataScan,
    /** What an entry derives from in the site record: the data is read again when it moves (a sync patches the record). */
    private readonly stampOf: (site: SiteRecord) => string,
    private readonly derive: (site: SiteRecord, data: SiteData | null, period: string) => E,
    /** The sites to index, in the order `values` answers them. */
    private readonly sitesOf: () => Iterable<SiteRecord> = () => scan.store.all<SiteRecord>('sites'),
    /**
     * What a derivation depends on besides the site and its data, given to `derive` (the abandoned items' horizon):
     * when it moves, every entry is derived again, at the next refresh.
     */
    private readonly period: () => string = () => '',
    /**
     * A key that moves when the order of `sitesOf` may have moved other than by sites added or removed (the site list's
     * order: a site given another URL). While it stands, a pass redoes only the sites the store's change log names.
     */
    private readonly order: () => number = () => 0,
  ) {
    scan.register(this);
  }
  /** The `order` the entries were laid out in. */
  private orderAt = -1;

  /** The version of the sites collection the entries reflect (-1 when the period moved since): when to refresh. */
  get version(): number {
    return this.periodAt === this.period() ? this.built : -1;
  }

  /**
   * A key for what a caller derives from all the entries (a fleet-wide list, its counts): it moves only when a value
   * or the order changed. A site edit moves the stamp of the site (its data is read again) but most often leaves what
   * is derived from it as it was: the entry keeps its value, and the lists built from the entries stand.
   */
  get contents(): number {
    return this.generation;
  }

  /** Brings the entries up to every change of the sites made before the call (SiteDataScan.refresh). */
  refresh(): Promise<void> {
    return this.scan.refresh(this);
  }

  /** One site's entry, or undefined when it has none (not indexed yet, or removed). */
  get(id: number): E | undefined {
    return this.entries.get(id)?.value;
  }

  /** Every site's entry, in the order of `sitesOf` at the last refresh. */
  *values(): IterableIterator<E> {
    for (const id of this.ids) yield this.entries.get(id)!.value;
  }

  /**
   * Every site's entry, in that order, with the record it was derived for (`stampOf` the same as the site's now, or its
   * data deriving the same value): `site` follows the record while the entry stands (see Entry).
   */
  *allEntries(): IterableIterator<Readonly<Entry<E>>> {
    for (const id of this.ids) yield this.entries.get(id)!;
  }

  /**
   * For SiteDataScan: this index's part of a run, its stamps taken now. Only the sites changed since the last run when
   * the store still knows which (Store.changedSince) and none was added, removed or moved in the order; else every site.
   */
  pass(): Pass {
    const period = this.period();
    const order = this.order();
    if (this.built >= 0 && period === this.periodAt && order === this.orderAt) {
      const ids = this.scan.store.changedSince('sites', this.built);
      const pass = ids && this.changedPass(ids, order);
      if (pass) return pass;
    }
    return this.fullPass(period, order);
  }

  /** The pass over the sites in `ids` alone; null when one was added or removed (the order moves: a full pass). */
  private changedPass(ids: readonly number[], order: number): Pass | null {
    const updates = new Map<number, Entry<E>>();
    const stale = new Map<number, SiteRecord>();
    for (const id of ids) {
      const site = this.scan.store.get<SiteRecord>('sites', id);
      const cur = this.entries.get(id);
      if (!site && !cur) continue; // added and removed since
      if (!site || !cur) return null;
      if (cur.site === site) continue;
      if (this.stampOf(cur.site) === this.stampOf(site)) cur.site = site;
      else stale.set(id, site);
    }
    let moved = false;
    return {
      stale,
      fill: (batch, data) => {
        if (this.deriveStale(stale, batch, data, this.periodAt!, (id, e) => updates.set(id, e))) moved = true;
      },
      done: (version) => {
        // A key already in the map keeps its place: the order stands.
        for (const [id, e] of updates) this.entries.set(id, e);
        this.built = version;
        this.orderAt = order;
        if (moved) this.generation = version;
      },
    };
  }

  private fullPass(period: string, order: number): Pass {
    const next = new Map<number, Entry<E> | null>();
    const stale = new Map<number, SiteRecord>();
    const before = this.ids;
    let at = 0;
    let moved = this.generation < 0;
    const samePeriod = period === this.periodAt;
    for (const site of this.sitesOf()) {
      if (!moved && before[at++] !== site.id) moved = true;
      const cur = samePeriod ? this.entries.get(site.id) : undefined;
      // The same record object: the same stamp, not worked out again (a pass over 100,000 sites after one edit).
      if (cur?.site === site) {
        next.set(site.id, cur);
        continue;
      }
      if (cur && this.stampOf(cur.site) === this.stampOf(site)) {
        cur.site = site;
        next.set(site.id, cur);
      } else {
        next.set(site.id, null); // keeps the order; filled below
        stale.set(site.id, site);
      }
    }
    if (at < before.length) moved = true;
    return {
      stale,
      fill: (ids, data) => {
        if (this.deriveStale(stale, ids, data, period, (id, e) => next.set(id, e))) moved = true;
      },
      done: (version) => {
        const entries = new IdSlots<Entry<E>>();
        for (const [id, e] of next) entries.set(id, e!);
        this.entries = entries;
        this.ids = Uint32Array.from(next.keys());
        this.built = version;
        this.periodAt = period;
        this.orderAt = order;
        if (moved) this.generation = version;
      },
    };
  }

  /**
   * Derives the stale sites of a batch read and hands each entry to `put`; one that derives the value it had keeps
   * that value (the lists built from the entries stand). True when a value moved.
   */
  private deriveStale(
    stale: ReadonlyMap<number, SiteRecord>,
    ids: readonly number[],
    data: ReadonlyMap<number, SiteData | null>,
    period: string,
    put: (id: number, entry: Entry<E>) => void,
  ): boolean {
    let moved = false;
    for (const id of ids) {
      const site = stale.get(id);
      if (!site) continue;
      const value = this.derive(site, data.get(id) ?? null, period);
      const was = this.entries.get(id);
      if (was !== undefined && isDeepStrictEqual(was.value, value)) {
        was.site = site;
        put(id, was);
      } else {
        moved = true;
        put(id, { site, value });
      }
    }
    return moved;
  }
}
