// Update history (issue 28, upstream defect D16): every update attempt of an item on a site — what, from, to, who
// started it, when, how it ended and why, how long it took, what the probes saw — recorded in the same write as the
// update's result. Installs are recorded here too (issue 29: one history of what was done on the sites), with
// action 'install'; an entry without an action is an update. Kept for HISTORY_MAX_DAYS and at most HISTORY_MAX_ENTRIES entries, trimmed on write (oldest first;
// ids only grow, so the oldest are the lowest). Queried fleet-wide, per site or per item, by time and outcome, paged,
// newest first. Entries outlive a removed site (they carry its URL): they are what reports of the past read.
import { SiteAccess } from './access.js';
import type { Principal } from '../core/principal.js';
import { ServiceError } from '../core/errors.js';
import type { HistoryAction, UpdateActor, UpdateHistoryRecord, UpdateOutcome } from '../store/health-records.js';
import type { Store, Tx } from '../store/store.js';

export const HISTORY_MAX_ENTRIES = 50_000;
export const HISTORY_MAX_DAYS = 180;
/** The most entries one query answers per page. */
export const HISTORY_MAX_PER_PAGE = 100;

export type HistoryEntry = Omit<UpdateHistoryRecord, 'id'>;

export interface RollbackItemView {
  slug: string;
  name: string;
  old_version: string | null;
  version: string;
  outcome: 'rolled_back' | 'rollback_failed';
  reason: string;
  at: string;
}

export interface HistoryFilter {
  site_id?: number;
  /** Only updates or only installs (an entry without an action is an update). */
  action?: HistoryAction;
  type?: UpdateHistoryRecord['type'];
  slug?: string;
  outcomes?: readonly UpdateOutcome[];
  /** ISO 8601 bounds on `at`, inclusive. */
  since?: string;
  until?: string;
}

/** Who started an update, from the call's principal (a scheduled or resumed job keeps the one that queued it). */
export function actorOf(p: Principal | undefined): UpdateActor {
  if (!p) return { kind: 'local', id: null, name: 'sitefleet' };
  if (p.kind === 'user') return { kind: 'user', id: p.id, name: p.name };
  if (p.kind === 'key') return { kind: 'key', id: p.id, name: p.name };
  if (p.kind === 'oauth') return { kind: 'oauth', id: null, name: p.name };
  return { kind: 'local', id: null, name: p.name };
}

const DAY_MS = 86_400_000;

function isoBound(v: string | undefined, what: string): number | null {
  if (v === undefined || v === '') return null;
  const t = Date.parse(v);
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(t))
    throw new ServiceError(
      'svc_invalid_date',
      `Invalid ${what}: "${v.slice(0, 50)}". Give an ISO 8601 date or time (2026-11-26 or 2026-11-26T09:00:00Z).`,
      400,
    );
  return t;
}

export class UpdateHistoryService {
  /** No entry has an id below this (trimming only moves it up; another process trimming too only leaves gaps). */
  private lowest = 1;
  private cache: { version: number; newestFirst: UpdateHistoryRecord[]; bySite: Map<number, UpdateHistoryRecord[]> | null } | null = null;
  /**
   * Told of the entries a write recorded, once the write's function has run and only of those it kept (a write that
   * throws leaves none): notifications announce failed and rolled-back updates from here.
   */
  readonly recordedListeners = new Set<(entries: UpdateHistoryRecord[]) => void>();

  /** History of sites outside the running call's scope is not listed (domain/access.ts). */
  private readonly access: SiteAccess;

  constructor(
    private readonly store: Store,
    access: SiteAccess,
    private readonly now: () => number = Date.now,
  ) {
    this.access = access;
  }

  /** Records entries inside a write (the update's own), then trims by age and count. */
  record(tx: Tx, entries: readonly HistoryEntry[]): void {
    let top = 0;
    const made: UpdateHistoryRecord[] = [];
    for (const e of entries) {
      const r = tx.insert<UpdateHistoryRecord>('update_history', e);
      made.push(r);
      top = r.id;
    }
    if (top) this.trim(tx, top);
    // Heard once the write is committed (never from a run of the write that is not: Tx.afterCommit), without the
    // entries the trim of a later write already took.
    if (made.length && this.recordedListeners.size)
      tx.afterCommit(() => {
        const kept = made.filter((r) => this.store.get('update_history', r.id));
        if (kept.length) for (const l of this.recordedListeners) l(kept);
      });
  }

  async add(entries: readonly HistoryEntry[]): Promise<void> {
    if (entries.length) await this.store.write((tx) => this.record(tx, entries));
  }

  /** Deletes from the oldest up while there are too many or they are too old; `top` is the newest id. */
  private trim(tx: Tx, top: number): void {
    const cutoff = this.now() - HISTORY_MAX_DAYS * DAY_MS;
    // A write changes the working set in place, so the count includes this write's own entries.
    let count = this.store.count('update_history');
    // `lowest` is a hint moved as entries go. A write function may run more than once before it commits (the
    // PostgreSQL engine's dry run, a conflict): its deletes are then undone and the hint is past entries that are
    // back. They sit just below it, so one look finds that case, and a scan finds the oldest again.
    if (this.lowest > 1 && tx.get('update_history', this.lowest - 1)) {
      let min = Infinity;
      for (const r of tx.all<UpdateHistoryRecord>('update_history')) if (r.id < min) min = r.id;
      this.lowest = Number.isFinite(min) ? min : 1;
    }
    let id = this.lowest;
    for (; id <= top; id++) {
      const r = tx.get<UpdateHistoryRecord>('update_history', id);
      if (!r) continue;
      if (count <= HISTORY_MAX_ENTRIES && Date.parse(r.at) >= cutoff) break;
      tx.delete('update_history', id);
      count--;
    }
    this.lowest = id;
  }

  /** Newest first, filtered, paged; `total` counts every match. */
  list(
    f: HistoryFilter,
    page: number,
    perPage: number,
  ): { entries: Array<UpdateHistoryRecord & { action: HistoryAction }>; total: number } {
    const since = isoBound(f.since, 'since');
    const until = isoBound(f.until, 'until');
    if (since !== null && until !== null && since > until)
      throw new ServiceError('svc_invalid_date', 'since is after until: nothing can match.', 400);
    const outcomes = f.outcomes?.length ? new Set(f.outcomes) : null;
    const match = (r: UpdateHistoryRecord) => {
      if (f.site_id !== undefined && r.site_id !== f.site_id) return false;
      if (!this.access.seesSite(r.site_id)) return false;
      if (f.action !== undefined && (r.action ?? 'update') !== f.action) return false;
      if (f.type !== undefined && r.type !== f.type) return false;
      if (f.slug !== undefined && r.slug !== f.slug) return false;
      if (outcomes && !outcomes.has(r.outcome)) return false;
      if (since !== null || until !== null) {
        const t = Date.parse(r.at);
        if (since !== null && t < since) return false;
        if (until !== null && t > until) return false;
      }
      return true;
    };
    // One site's query (the common one: a site's page, its report) reads that site's entries only.
    const all = f.site_id === undefined ? this.newestFirst() : (this.bySite().get(f.site_id) ?? []);
    const from = (page - 1) * perPage;
    const entries: Array<UpdateHistoryRecord & { action: HistoryAction }> = [];
    let total = 0;
    for (const r of all) {
      if (!match(r)) continue;
      if (total >= from && entries.length < perPage) entries.push({ ...r, action: r.action ?? 'update' });
      total++;
    }
    return { entries, total };
  }

  /**
   * Upstream's rollback_items of a site's pending updates: for each pending plugin or theme update whose very version
   * was rolled back here before (its latest such attempt), what happened — so nobody applies it again unawares.
   */
  rollbackItems(
    siteId: number,
    pending: ReadonlyArray<{ type: string; slug: string; new_version: string }>,
  ): { plugins: RollbackItemView[]; themes: RollbackItemView[] } {
    const out = { plugins: [] as RollbackItemView[], themes: [] as RollbackItemView[] };
    const wanted = pending.filter((p) => p.type === 'plugin' || p.type === 'theme');
    if (!wanted.length) return out;
    const mine = this.bySite().get(siteId) ?? [];
    for (const p of wanted) {
      const hit = mine.find(
        (r) =>
          r.site_id === siteId &&
          r.type === p.type &&
          r.slug === p.slug &&
          r.to === p.new_version &&
          (r.outcome === 'rolled_back' || r.outcome === 'rollback_failed'),
      );
      if (!hit) continue;
      (p.type === 'plugin' ? out.plugins : out.themes).push({
        slug: hit.slug,
        name: hit.name,
        old_version: hit.from,
        version: hit.to!,
        outcome: hit.outcome as RollbackItemView['outcome'],
        reason: hit.reason,
        at: hit.at,
      });
    }
    return out;
  }

  private newestFirst(): UpdateHistoryRecord[] {
    const v = this.store.version('update_history');
    if (this.cache?.version !== v) {
      const list = [...this.store.all<UpdateHistoryRecord>('update_history')].sort((a, b) => b.id - a.id);
      this.cache = { version: v, newestFirst: list, bySite: null };
    }
    return this.cache.newestFirst;
  }

  /** The entries of each site, newest first (built once per version of the history, on the first per-site query). */
  private bySite(): Map<number, UpdateHistoryRecord[]> {
    const all = this.newestFirst();
    if (!this.cache!.bySite) {
      const m = new Map<number, UpdateHistoryRecord[]>();
      for (const r of all) {
        const l = m.get(r.site_id);
        if (l) l.push(r);
        else m.set(r.site_id, [r]);
      }
      this.cache!.bySite = m;
    }
    return this.cache!.bySite;
  }
}
