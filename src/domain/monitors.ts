// Uptime monitoring: a monitor per site (on by default; fleet defaults and per-site settings), checked on a schedule
// with bounded concurrency and jitter, one check of a site at a time, by one process at a time (partition leases in
// the store, leases.ts). Heartbeats fold into bounded, compacted history (the last RAW_KEPT beats, HOURS_KEPT hourly
// and DAYS_KEPT daily buckets with a response-time histogram) in a record of its own, `monitor_history`, a cold
// collection: the monitor record keeps the state (last check, up or down, open incident) that scheduling reads. A
// change of state opens or closes an incident in the same transaction and is announced (webhooks, MCP subscribers).
//
// Writes: beats wait in memory and are written every `monitorFlushMs`, HISTORY_BATCH sites a commit, each site's
// history read first (a cold record) and folded only if no other process wrote it since (the monitor record's
// history_n says which write it last saw; if not, the beats wait for the next flush); a beat that changes a site's
// state is written at once. A partition given to another process has its state flushed in the transaction that
// releases it, so its next check is scheduled from the true last check; its history follows with the next flush. If
// a process dies, the beats it had not written yet (at most one flush period) are lost and the taker may check those
// sites again early.
import { ServiceError, errors } from '../core/errors.js';
import type { Config } from '../config.js';
import { log } from '../log.js';
import { paginate } from '../core/paging.js';
import {
  CAUSES,
  HIST_MS,
  type Beat,
  type Bucket,
  type Cause,
  type IncidentRecord,
  type MonitorHistoryRecord,
  type MonitorRecord,
  type MonitorSettings,
} from '../store/monitor-records.js';
import type { SiteRecord } from '../store/records.js';
import type { Store, Tx } from '../store/store.js';
import { PartitionLeases } from './leases.js';
import type { SiteService } from './sites.js';
import { DueQueue } from './due-queue.js';
import { IdNumbers } from '../store/id-numbers.js';
import { UptimeChecker, type CheckOutcome } from './uptime-check.js';

export const RAW_KEPT = 60;
export const HOURS_KEPT = 25;
export const DAYS_KEPT = 31;
/** Sites whose history one commit writes at most: a flush holds this many histories (read before it) at once. */
export const HISTORY_BATCH = 500;
/** Incidents kept (newest); older resolved ones are deleted. */
export const INCIDENTS_KEPT = 10_000;
export const PARTITIONS = 16;
export const LEASE_TTL_MS = 15_000;
/** How often a process renews its leases and rebalances: a second process gets its share within two rounds. */
export const LEASE_ROUND_MS = 2_000;
/** Fleet defaults (upstream's: HTTP, 200–206 up, no keyword), but every 5 minutes rather than every hour. */
export const DEFAULT_SETTINGS: Required<MonitorSettings> = {
  active: true,
  interval_s: 300,
  timeout_s: 30,
  expected_status: [200, 201, 202, 203, 204, 205, 206],
  keyword: '',
  method: 'get',
  retries: 1,
};
export const MAX_RETRIES = 3;
/** Wait before a confirming re-check: a quarter of the interval, at most 2 s. */
const retryDelayMs = (intervalS: number) => Math.min(2_000, (intervalS * 1000) / 4);
export const INTERVAL_MIN_S = 60;
/** How often at most a change to the sites alone makes the scheduler look at every site again (see pass()). */
export const SITES_RESCAN_MS = 5_000;
export const INTERVAL_MAX_S = 86_400;
export const TIMEOUT_MAX_S = 120;
export const MAX_EXPECTED = 50;
export const MAX_KEYWORD = 200;

export type MonitorStatus = 'up' | 'down' | 'pending' | 'paused';

/**
 * Seconds from a number of seconds or a label ("5m", "1h", "30s", "2min"; upstream's labels and any like them),
 * within [min, max]; anything else is the named error.
 */
export function parseDuration(v: number | string, min: number, max: number, code: string, what: string): number {
  let s: number | null = null;
  if (typeof v === 'number') s = v;
  else {
    const m = /^\s*(\d{1,6})\s*(s|sec|m|min|h)?\s*$/i.exec(v);
    if (m) s = Number(m[1]) * ({ s: 1, sec: 1, m: 60, min: 60, h: 3600 }[(m[2] ?? 's').toLowerCase() as 's'] ?? 1);
  }
  if (s === null || !Number.isInteger(s) || s < min || s > max) {
    throw new ServiceError(
      code,
      `Invalid ${what} value: give seconds from ${min} to ${max}, or a label such as "${what === 'interval' ? '5m' : '30s'}".`,
      400,
      { value: v },
    );
  }
  return s;
}

/** HTTP statuses that may count as up: known codes only (100–599), at most MAX_EXPECTED. */
export function checkExpected(codes: number[]): number[] {
  if (!codes.length || codes.length > MAX_EXPECTED)
    throw new ServiceError('svc_invalid_status_code', `Give 1 to ${MAX_EXPECTED} HTTP status codes.`, 400);
  const bad = codes.find((c) => !Number.isInteger(c) || c < 100 || c > 599);
  if (bad !== undefined)
    throw new ServiceError('svc_invalid_status_code', `Invalid HTTP status code: ${bad}. Allowed codes: 100–599.`, 400, { value: bad });
  return [...new Set(codes)].sort((a, b) => a - b);
}

export interface MonitorEvent {
  event: 'site.down' | 'site.up';
  site: { id: number; url: string; name: string };
  incident: IncidentRecord;
}

interface PendingBeat {
  beat: Beat;
  message: string | null;
}

const iso = (t: number) => new Date(t * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
const nowS = () => Math.floor(Date.now() / 1000);

/** The settings of a monitor with none of its own (nearly every one): one frozen object, not one per record. */
const NO_SETTINGS: MonitorSettings = Object.freeze({});

export function emptyMonitor(id: number): MonitorRecord {
  return { id, settings: NO_SETTINGS, status: 'pending', last_check: null, down_since: null, open_incident: null };
}

const emptyHistoryOf = (id: number): MonitorHistoryRecord => ({ id, n: 0, recent: [], hours: [], days: [] });

/** The history an older sitefleet kept in the monitor record itself, while it is there (see moveHistory). */
function legacyHistory(m: MonitorRecord | undefined): MonitorHistoryRecord | null {
  if (!m || (!m.recent && !m.hours && !m.days)) return null;
  return { id: m.id, n: m.history_n ?? 0, recent: m.recent ?? [], hours: m.hours ?? [], days: m.days ?? [] };
}

/** Whether an object has no enumerable field (undefined: none). */
function isEmpty(o: object | undefined): boolean {
  for (const _ in o) return false;
  return true;
}

/**
 * A copy of a monitor record built as one literal, its fields always in this order: every record shares one shape.
 * Built by a spread and a rest copy (`{ ...withoutHistory(m), history_n }` of a `{ ...cur }`), the records of a
 * long-running serve each had a shape of its own (a heap snapshot at 100,000 sites: a hidden class and its descriptors
 * per record, ≈ 400 bytes more than the record). Without `keepHistory`, the history an older sitefleet kept in the
 * record is left out; a field this version does not know is kept.
 */
function monitorOf(m: MonitorRecord, history_n: number | undefined, keepHistory: boolean): MonitorRecord {
  const r: MonitorRecord = {
    id: m.id,
    settings: isEmpty(m.settings) ? NO_SETTINGS : m.settings,
    status: m.status,
    last_check: m.last_check,
    down_since: m.down_since,
    open_incident: m.open_incident,
    history_n,
  };
  if (history_n === undefined) delete r.history_n;
  for (const k in m) {
    if (k in r || (!keepHistory && (k === 'recent' || k === 'hours' || k === 'days'))) continue;
    (r as unknown as Record<string, unknown>)[k] = (m as unknown as Record<string, unknown>)[k];
  }
  return r;
}

/**
 * The histories of some sites (at most RECORD_READ_BATCH), by site; a site never checked has none. The monitor
 * records are looked at first: a history moved out of one since is then found in the collection.
 */
export async function readHistories(store: Store, ids: readonly number[]): Promise<Map<number, MonitorHistoryRecord>> {
  const out = new Map<number, MonitorHistoryRecord>();
  for (const id of ids) {
    const old = legacyHistory(store.get<MonitorRecord>('monitors', id));
    if (old) out.set(id, old);
  }
  if (!ids.length) return out;
  for (const h of await store.readRecords<MonitorHistoryRecord>('monitor_history', { order: 'oldest', ids, limit: ids.length }))
    out.set(h.id, h);
  return out;
}

/** `h` with `beats` counted (in time order, whatever order they come in), as write `n`. Lists kept are not changed. */
export function foldHistory(h: MonitorHistoryRecord, beats: readonly Beat[], n: number): MonitorHistoryRecord {
  let { recent, hours, days } = h;
  for (const beat of [...beats].sort((a, b) => a[0] - b[0])) {
    hours = addBeat(hours, 3600, HOURS_KEPT, beat);
    days = addBeat(days, 86_400, DAYS_KEPT, beat);
    const last = recent[recent.length - 1];
    // Older than the newest kept (another process wrote a later check first): put in its place.
    recent = last && beat[0] < last[0] ? [...recent, beat].sort((a, b) => a[0] - b[0]) : [...recent, beat];
    if (recent.length > RAW_KEPT) recent = recent.slice(-RAW_KEPT);
  }
  return { id: h.id, n, recent, hours, days };
}

function newBucket(start: number): Bucket {
  return [start, 0, 0, 0, -1, 0, ...HIST_MS.map(() => 0), 0];
}

function addToBucket(b: Bucket, beat: Beat): void {
  const [, up, ms] = beat;
  if (up) b[1]!++;
  else b[2]!++;
  if (ms >= 0) {
    b[3]! += ms;
    b[4] = b[4]! < 0 ? ms : Math.min(b[4]!, ms);
    b[5] = Math.max(b[5]!, ms);
    let i = HIST_MS.findIndex((limit) => ms <= limit);
    if (i < 0) i = HIST_MS.length;
    b[6 + i]!++;
  }
}

/**
 * The buckets with `beat` counted: a new list in which only the bucket the beat falls in is a new array; the others are
 * the very arrays of `list`, which is never changed (the store journals a monitor record as what changed: store/
 * journal-patch.ts).
 */
export function addBeat(list: Bucket[], width: number, keep: number, beat: Beat): Bucket[] {
  const start = Math.floor(beat[0] / width) * width;
  const out = list.slice();
  let at = out.length - 1;
  const last = out[at];
  if (!last || last[0]! < start) {
    out.push(newBucket(start));
    at = out.length - 1;
  } else if (last[0]! > start) {
    // An older beat (a process that wrote late): find its bucket, or drop it if it is out of the window.
    at = out.findIndex((b) => b[0] === start);
    if (at < 0) return out;
    out[at] = out[at]!.slice();
  } else out[at] = last.slice();
  addToBucket(out[at]!, beat);
  return out.length > keep ? out.slice(out.length - keep) : out;
}

export interface Summary {
  checks: number;
  up: number;
  uptime: number | null;
  avg_ms: number | null;
  min_ms: number | null;
  max_ms: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
}

/** Uptime and response times over the buckets that start at or after `since` (epoch s). */
export function summarise(buckets: readonly Bucket[], since: number): Summary {
  let up = 0,
    down = 0,
    sum = 0,
    timed = 0,
    min = Infinity,
    max = -Infinity;
  const hist = new Array<number>(HIST_MS.length + 1).fill(0);
  for (const b of buckets) {
    if (b[0]! < since) continue;
    up += b[1]!;
    down += b[2]!;
    const n = hist.reduce((acc, _, i) => acc + b[6 + i]!, 0);
    if (n && b[4]! >= 0) {
      sum += b[3]!;
      timed += n;
      min = Math.min(min, b[4]!);
      max = Math.max(max, b[5]!);
    }
    for (let i = 0; i < hist.length; i++) hist[i]! += b[6 + i]!;
  }
  const pct = (q: number): number | null => {
    if (!timed) return null;
    const rank = Math.ceil(q * timed);
    let seen = 0;
    for (let i = 0; i < hist.length; i++) {
      seen += hist[i]!;
      if (seen >= rank) return Math.min(i < HIST_MS.length ? HIST_MS[i]! : max, max);
    }
    return max;
  };
  const checks = up + down;
  return {
    checks,
    up,
    uptime: checks ? Math.round((10_000 * up) / checks) / 100 : null,
    avg_ms: timed ? Math.round(sum / timed) : null,
    min_ms: timed ? min : null,
    max_ms: timed ? max : null,
    p50_ms: pct(0.5),
    p95_ms: pct(0.95),
    p99_ms: pct(0.99),
  };
}

/** Stable spread of first checks over an interval (so 5,000 sites do not all go at once). */
function jitter(id: number, span: number): number {
  let h = id * 2654435761;
  h = (h ^ (h >>> 16)) >>> 0;
  return span > 0 ? h % span : 0;
}

export interface SchedulerStats {
  checks: number;
  /** Checks that started later than their due time by more than one interval. */
  late_over_interval: number;
  max_late_ms: number;
  in_flight: number;
  partitions_held: number;
  /** Scheduling passes that looked at every site. */
  scans: number;
  /** Flushes of the waiting beats that ran (each a read of the histories and a commit per HISTORY_BATCH sites). */
  flushes: number;
}

const noStats = (): SchedulerStats => ({
  checks: 0,
  late_over_interval: 0,
  max_late_ms: 0,
  in_flight: 0,
  partitions_held: 0,
  scans: 0,
  flushes: 0,
});

export class MonitorService {
  readonly checker: UptimeChecker;
  readonly leases: PartitionLeases;
  private pending = new Map<number, PendingBeat[]>();
  /**
   * Beats whose state is written but not their history: folded by a lease release (state only), or whose history was
   * written by another process after this one read it. The next flush writes them.
   */
  private historyWaiting = new Map<number, Beat[]>();
  /** What a lease release's write folded, by partition, until it has committed (flushInTx). */
  private releasing = new Map<number, { taken: Map<number, Set<PendingBeat>>; events: MonitorEvent[] }>();
  /** When each site's next check falls due (epoch ms), in pages by site id: a Map was 5 MB at 100,000 sites. */
  private due = new IdNumbers();
  /** The partitions held when `due` was last cut to them (a lease round). */
  private dueHeld: ReadonlySet<number> = new Set();
  private inflight = new Map<number, Promise<CheckOutcome>>();
  private listeners = new Set<(e: MonitorEvent) => void>();
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  /** The clock checks are scheduled and stamped by (benches and tests move it and call pass() instead of waiting). */
  now: () => number = Date.now;
  private startedAt = Date.now();
  private nextRound = 0;
  private nextFlush = 0;
  /**
   * No site is due before `until` while the sites, monitors and partitions held are as `key` says, as the last scan of
   * every site (at `at`) found them (see pass()).
   */
  private idle = { key: '', until: 0, sites: -1, at: 0 };
  /** The monitors' own settings as last seen (JSON, only those that have any), and a number that moves when they do. */
  private settingsSeen = { version: -1, epoch: 0, own: new Map<number, string>() };
  /** Each scheduled site's next check (`due`), by time: what a pass between scans takes the due checks from. */
  private readonly queue = new DueQueue();
  private flushing: Promise<void> = Promise.resolve();
  /** The flush of some sites waiting to start, which another such flush joins (see flush()). */
  private joinable: { ids: Set<number>; done: Promise<void> } | null = null;
  /** The move of an older sitefleet's history started by start() (moveHistory). */
  private moving: Promise<void> = Promise.resolve();
  private stats = noStats();

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly sites: SiteService,
  ) {
    this.checker = new UptimeChecker({ allowPrivate: config.allowPrivateSites, connections: config.monitorConcurrency });
    this.leases = new PartitionLeases(store, 'monitor', PARTITIONS, LEASE_TTL_MS, undefined, () => this.now());
  }

  /** Hear of incidents opening and closing in this process (the one that ran the check). */
  onEvent(fn: (e: MonitorEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  // ---- settings -------------------------------------------------------------------------------------------

  record(id: number): MonitorRecord | undefined {
    return this.store.get<MonitorRecord>('monitors', id);
  }

  fleetSettings(): Required<MonitorSettings> {
    return { ...DEFAULT_SETTINGS, ...(this.record(0)?.settings ?? {}) };
  }

  /** The settings a site's checks use: its own over the fleet's; an operator's --monitor-interval over both. */
  effective(siteId: number): Required<MonitorSettings> {
    const eff = { ...this.fleetSettings(), ...(this.record(siteId)?.settings ?? {}) };
    if (this.config.monitorIntervalS) eff.interval_s = this.config.monitorIntervalS;
    eff.timeout_s = Math.min(eff.timeout_s, eff.interval_s);
    return eff;
  }

  monitored(site: SiteRecord, fleetActive = this.fleetSettings().active): boolean {
    // What effective(site).active says, without building the settings: a scan asks this of every site, four times a second.
    return !site.suspended && !site.disconnected && (this.record(site.id)?.settings?.active ?? fleetActive);
  }

  statusOf(site: SiteRecord): MonitorStatus {
    if (!this.monitored(site)) return 'paused';
    return this.record(site.id)?.status ?? 'pending';
  }

  /** Writes settings: site 0 = the fleet defaults. `null` for a field removes the site's own value (use the fleet's). */
  async updateSettings(siteId: number, patch: { [K in keyof MonitorSettings]?: MonitorSettings[K] | null }): Promise<MonitorRecord> {
    const next = await this.store.write((tx) => {
      if (siteId !== 0 && !tx.get('sites', siteId)) throw errors.siteNotFound(siteId);
      const cur = tx.get<MonitorRecord>('monitors', siteId) ?? emptyMonitor(siteId);
      const settings: MonitorSettings = { ...cur.settings };
      for (const [k, v] of Object.entries(patch) as Array<[keyof MonitorSettings, unknown]>) {
        if (v === undefined) continue;
        if (v === null) delete settings[k];
        else (settings as Record<string, unknown>)[k] = v;
      }
      const next = monitorOf(cur, cur.history_n, true);
      next.settings = settings;
      return tx.put<MonitorRecord>('monitors', next);
    });
    // A new interval takes effect from the next scheduling of the site: the next pass scans every site (settingsKey).
    if (siteId === 0) this.due.clear();
    else this.due.delete(siteId);
    this.settingsSeen.epoch++;
    return next;
  }

  /**
   * What the scan of every site depends on in the monitors: their settings (active, interval), not their state. A number
   * that moves when any monitor's settings changed, in this process or another: the monitors changed since the last
   * look (Store.changedSince) are compared with the settings seen, or all of them when the store no longer knows which
   * (a flush writes thousands). A check writes its monitor's state: keyed on the collection's version, the first
   * interval of checks (each a change of state, written at once) scanned every site at nearly every pass.
   */
  private settingsKey(): number {
    const seen = this.settingsSeen;
    const v = this.store.version('monitors');
    if (v === seen.version) return seen.epoch;
    const ids = seen.version < 0 ? null : this.store.changedSince('monitors', seen.version);
    const own = (m: MonitorRecord | undefined) => (m && !isEmpty(m.settings) ? JSON.stringify(m.settings) : undefined);
    if (ids) {
      for (const id of ids) {
        const now = own(this.record(id));
        if (now === seen.own.get(id)) continue;
        if (now === undefined) seen.own.delete(id);
        else seen.own.set(id, now);
        seen.epoch++;
      }
    } else {
      const all = new Map<number, string>();
      for (const m of this.store.all<MonitorRecord>('monitors')) {
        const s = own(m);
        if (s !== undefined) all.set(m.id, s);
      }
      if (all.size !== seen.own.size || [...all].some(([id, s]) => seen.own.get(id) !== s)) seen.epoch++;
      seen.own = all;
    }
    seen.version = v;
    return seen.epoch;
  }

  // ---- scheduling -----------------------------------------------------------------------------------------

  private intervalMs(siteId: number): number {
    return this.effective(siteId).interval_s * 1000;
  }

  private firstDue(site: SiteRecord, now: number): number {
    const interval = this.intervalMs(site.id);
    const last = this.lastBeat(site.id);
    if (last) {
      // Beats keep whole seconds: the next second is the earliest the last check may have been.
      const next = (last[0] + 1) * 1000 + interval;
      return next > now ? next : now + jitter(site.id, Math.min(interval, 10_000));
    }
    // Never checked: one interval after this process began, spread over the next one.
    return Math.max(now, this.startedAt + interval) + jitter(site.id, interval);
  }

  private lastBeat(id: number): Beat | null {
    const p = this.pending.get(id);
    if (p?.length) return p[p.length - 1]!.beat;
    return this.record(id)?.last_check ?? null;
  }

  start(): void {
    if (this.timer) return;
    this.moving = this.moveHistory().then(
      (n) => void (n && log('info', 'monitor history moved out of the monitor records', { monitors: n })),
      (e: unknown) =>
        log('error', 'moving the monitor history failed (read where it is; tried again at the next start)', { err: String(e) }),
    );
    this.startedAt = this.now();
    const every = Math.max(50, Math.min(250, ((this.config.monitorIntervalS ?? INTERVAL_MIN_S) * 1000) / 4));
    this.timer = setInterval(() => void this.tick(), every);
    this.timer.unref();
    setImmediate(() => void this.tick());
  }

  /** A removed site's monitor, history and incidents go with it (monitor id = site id; site ids are never reused). */
  forgetSite(tx: Tx, siteId: number): void {
    tx.delete('monitors', siteId);
    tx.delete('monitor_history', siteId);
    for (const i of [...tx.all<{ id: number; site_id: number }>('incidents')]) if (i.site_id === siteId) tx.delete('incidents', i.id);
  }

  async stop(): Promise<void> {
    if (!this.timer) return this.checker.close();
    clearInterval(this.timer);
    this.timer = null;
    await this.moving;
    await Promise.allSettled([...this.inflight.values()]);
    while (this.ticking) await new Promise((r) => setTimeout(r, 10));
    // A history another process wrote meanwhile leaves beats waiting for one more read: a few flushes, not one.
    for (let n = 0; n < 3 && (n === 0 || this.historyWaiting.size); n++) await this.flush().catch(() => {});
    await this.leases.releaseAll().catch(() => {});
    await this.checker.close();
  }

  /** Resolves once every check in flight has been recorded (in memory; the next flush writes it). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inflight.values()]);
  }

  schedulerStats(): SchedulerStats {
    return { ...this.stats, in_flight: this.inflight.size, partitions_held: this.leases.heldPartitions().size };
  }

  resetStats(): void {
    this.stats = noStats();
  }

  private async tick(): Promise<void> {
    if (this.timer) await this.pass();
  }

  /**
   * One scheduling pass: renews leases when a round is due, starts the checks that are due (up to the concurrency),
   * and writes the waiting history when a flush is due. The timer runs it; with a moved clock it can be run directly.
   */
  async pass(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const now = this.now();
      if (now >= this.nextRound) {
        this.nextRound = now + LEASE_ROUND_MS;
        const plan = await this.leases
          .round(
            (tx, p) => this.flushInTx(tx, p, (id) => id % PARTITIONS === p),
            // A check still running would be written after the hand-over: keep the partition until it is done.
            (p) => ![...this.inflight.keys()].some((id) => id % PARTITIONS === p),
          )
          .then(
            (r) => (this.released(r.released), r),
            (e: unknown) => {
              this.released([]);
              throw e;
            },
          );
        // The due times of partitions given up or lost go (a pass over every site's: only when one went).
        if ([...this.dueHeld].some((p) => !plan.held.has(p)))
          this.due.forEach((_, id) => {
            if (!plan.held.has(id % PARTITIONS)) this.due.delete(id);
          });
        this.dueHeld = new Set(plan.held);
      }
      // The scan of every site runs only when something it depends on changed (at 20,000 sites it is milliseconds of
      // the event loop): the monitors' settings, the partitions held, or, once per SITES_RESCAN_MS at most, the sites (a
      // sync commits several a second; a change to the sites alone can only add a site, whose first check is an interval
      // away, or stop or move checks that are not due yet: the pass that starts a check reads the site as it is then).
      // Between scans, the checks that fall due are taken from the due queue, earliest first: a pass that ran four
      // times a second over every site while checks were due took about 4 % of a core at 20,000 sites.
      const key = `${this.settingsKey()}:${[...this.leases.heldPartitions()].join(',')}`;
      const sites = this.store.version('sites');
      const rescanMs = Math.min(SITES_RESCAN_MS, (this.config.monitorIntervalS ?? INTERVAL_MIN_S) * 1000);
      if (key !== this.idle.key || (sites !== this.idle.sites && now >= this.idle.at + rescanMs)) {
        let room = this.config.monitorConcurrency - this.inflight.size;
        let next = Infinity;
        const fleetActive = this.fleetSettings().active;
        for (const site of this.store.all<SiteRecord>('sites')) {
          if (!this.leases.holds(site.id % PARTITIONS)) continue;
          if (!this.monitored(site, fleetActive)) {
            this.due.delete(site.id);
            continue;
          }
          let d = this.due.get(site.id);
          if (d === undefined) {
            d = this.firstDue(site, now);
            this.due.set(site.id, d); // queued when the scan ends, with every other
          }
          if (d > now) {
            next = Math.min(next, d);
            continue;
          }
          if (this.inflight.has(site.id) || room <= 0) {
            // Due but running already, or no room: the next passes start it from the due queue as checks end. The scan
            // goes on (every site gets its due time): cutting it short made each pass scan again while the checks were
            // behind, 100,000 sites and a queue rebuilt four times a second (8 % of serve's CPU in the hour's profile).
            next = now;
            continue;
          }
          room--;
          this.startScheduled(site, d);
          next = Math.min(next, this.due.get(site.id) ?? now);
        }
        this.queue.refill(this.due);
        this.idle = { key, until: next, sites, at: now };
        this.stats.scans++;
      } else if (now >= this.idle.until) this.idle.until = this.startDue(now);
      if (now >= this.nextFlush) {
        this.nextFlush = now + this.config.monitorFlushMs;
        await this.flush();
      }
    } catch (e) {
      log('error', 'monitor tick failed', { err: String((e as Error)?.message ?? e) });
    } finally {
      this.ticking = false;
    }
  }

  /** Starts the check a schedule says is due (by a scan of every site or from the due queue), not awaited. */
  private startScheduled(site: SiteRecord, at: number): void {
    void this.runCheck(site, at).catch((e) => log('error', 'uptime check failed', { site: site.id, err: String(e) }));
  }

  private setDue(id: number, at: number): void {
    this.due.set(id, at);
    this.queue.push(at, id);
  }

  /**
   * Starts the checks the due queue says are due (up to the concurrency), each read as the site is now: a site removed,
   * paused or no longer in a partition held is dropped from the schedule. An entry whose time is not the site's due
   * time any more is an old one, skipped. Answers when the next check falls due (now: some wait for room).
   */
  private startDue(now: number): number {
    let room = this.config.monitorConcurrency - this.inflight.size;
    const fleetActive = this.fleetSettings().active;
    const waiting: Array<{ at: number; id: number }> = [];
    let next = Infinity;
    for (let e = this.queue.peek(); e; e = this.queue.peek()) {
      if (e.at > now) {
        next = Math.min(next, e.at);
        break;
      }
      this.queue.pop();
      if (this.due.get(e.id) !== e.at) continue;
      const site = this.store.get<SiteRecord>('sites', e.id);
      if (!site || !this.leases.holds(e.id % PARTITIONS) || !this.monitored(site, fleetActive)) {
        this.due.delete(e.id);
        continue;
      }
      if (this.inflight.has(e.id) || room <= 0) {
        waiting.push(e); // due but running already, or no room: the next pass looks again
        next = now;
        if (room <= 0) break;
        continue;
      }
      room--;
      this.startScheduled(site, e.at);
    }
    for (const e of waiting) this.queue.push(e.at, e.id);
    return next;
  }

  /** Runs a check of the site now (or joins the one in flight: never two at once) and records it. */
  check(site: SiteRecord): Promise<CheckOutcome> {
    return this.inflight.get(site.id) ?? this.runCheck(site, null);
  }

  private runCheck(site: SiteRecord, dueAt: number | null): Promise<CheckOutcome> {
    const p = (async () => {
      const eff = this.effective(site.id);
      const started = this.now();
      if (dueAt !== null) {
        const late = started - dueAt;
        this.stats.max_late_ms = Math.max(this.stats.max_late_ms, late);
        if (late > eff.interval_s * 1000) this.stats.late_over_interval++;
        // No drift: the next check is one interval after this one was due — but at least half an interval after this
        // one started, so a late check (a busy machine) is not followed at once by the next; after now if we fell behind.
        const interval = eff.interval_s * 1000;
        const next = Math.max(dueAt + interval, started + interval / 2);
        this.setDue(site.id, next > started ? next : started + interval);
      }
      this.stats.checks++;
      const target = {
        url: site.url,
        method: eff.method,
        timeoutMs: eff.timeout_s * 1000,
        expected: eff.expected_status,
        keyword: eff.keyword,
        sslVerify: site.ssl_verify,
        httpUser: site.http_user,
        // The password is read (a cold blob: on PostgreSQL a query when not cached) only for a site that has a user.
        httpPass: site.http_user ? ((await this.sites.secret(site.id))?.http_pass ?? null) : null,
      };
      let outcome = await this.checker.check(target);
      const prev = this.lastBeat(site.id);
      // A site that was up is declared down only if it is still down when checked again (retries, a moment apart).
      const wasUp = prev ? prev[1] === 1 : this.record(site.id)?.status === 'up';
      for (let n = 0; !outcome.up && wasUp && n < eff.retries; n++) {
        await new Promise((r) => setTimeout(r, retryDelayMs(eff.interval_s)));
        outcome = await this.checker.check(target);
      }
      const beat: Beat = [
        Math.floor(started / 1000),
        outcome.up ? 1 : 0,
        outcome.ms,
        outcome.http_code,
        outcome.cause ? CAUSES.indexOf(outcome.cause) : -1,
      ];
      const list = this.pending.get(site.id) ?? [];
      list.push({ beat, message: outcome.message });
      if (list.length > RAW_KEPT * 4) list.splice(0, list.length - RAW_KEPT * 4);
      this.pending.set(site.id, list);
      const status = this.record(site.id)?.status;
      const changed = prev ? prev[1] !== beat[1] : status !== (beat[1] ? 'up' : 'down');
      // A change of state is written (and announced) now; the rest waits for the next flush.
      if (changed || dueAt === null) await this.flush([site.id]);
      return outcome;
    })();
    this.inflight.set(site.id, p);
    void p
      .finally(() => {
        if (this.inflight.get(site.id) === p) this.inflight.delete(site.id);
      })
      .catch(() => {});
    return p;
  }

  // ---- history --------------------------------------------------------------------------------------------

  /**
   * Writes waiting beats (of `ids`, or all), HISTORY_BATCH sites a commit, each site's history read just before, then
   * announces the incidents each commit opened or closed. Flushes of some sites (a check that changed a state) made
   * while one waits to start join it: one read and one commit for every state changed meanwhile, not one each. A fleet's
   * first checks all change a state (none is known yet): one at a time, they were checked at about 60 a second at
   * 100,000 sites on PostgreSQL, where 333 are due (every 5 minutes).
   */
  flush(ids?: number[]): Promise<void> {
    if (!ids) return this.queueFlush(() => undefined);
    const waiting = this.joinable;
    if (waiting) {
      for (const id of ids) waiting.ids.add(id);
      return waiting.done;
    }
    const batch = new Set(ids);
    const done = this.queueFlush(() => {
      if (this.joinable?.ids === batch) this.joinable = null; // started: later ones make the next batch
      return [...batch];
    });
    this.joinable = { ids: batch, done };
    return done;
  }

  /** Runs a flush after those before it (so beats of a site are folded in order), of the sites `take()` names when it starts (all: undefined). */
  private queueFlush(take: () => number[] | undefined): Promise<void> {
    const run = async () => {
      const ids = take();
      this.stats.flushes++;
      const taken = new Map<number, PendingBeat[]>();
      const history = new Map<number, Beat[]>();
      for (const id of ids ?? [...this.pending.keys(), ...this.historyWaiting.keys()]) {
        const list = this.pending.get(id);
        if (list?.length) taken.set(id, list);
        this.pending.delete(id);
        const waiting = this.historyWaiting.get(id);
        if (waiting?.length) history.set(id, waiting);
        this.historyWaiting.delete(id);
      }
      const all = [...new Set([...taken.keys(), ...history.keys()])];
      /** A site's beats for its history: those waiting from before, then those taken now. */
      const beatsOf = (id: number): Beat[] => [...(history.get(id) ?? []), ...(taken.get(id) ?? []).map((b) => b.beat)];
      for (let i = 0; i < all.length; i += HISTORY_BATCH) {
        const chunk = all.slice(i, i + HISTORY_BATCH);
        const events: MonitorEvent[] = [];
        const stale: number[] = [];
        try {
          const priors = await readHistories(this.store, chunk);
          await this.store.write((tx) => {
            events.length = 0;
            stale.length = 0;
            for (const id of chunk)
              this.fold(tx, id, taken.get(id) ?? [], { beats: beatsOf(id), prior: priors.get(id) ?? null, stale }, events);
          });
        } catch (e) {
          // Not written: put this chunk's beats and the rest back in front of newer ones, for the next flush.
          for (const id of all.slice(i)) {
            const list = taken.get(id);
            if (list) this.pending.set(id, [...list, ...(this.pending.get(id) ?? [])].slice(-RAW_KEPT * 4));
            const waiting = history.get(id);
            if (waiting) this.waitForHistory(id, waiting);
          }
          throw e;
        }
        // Another process wrote these histories after they were read: their beats wait for the next read.
        for (const id of stale) this.waitForHistory(id, beatsOf(id));
        this.announce(events);
      }
    };
    const p = this.flushing.then(run, run);
    this.flushing = p.catch(() => {});
    return p;
  }

  /** Beats whose history is still to be written, before any newer ones waiting (at most RAW_KEPT * 4 a site). */
  private waitForHistory(id: number, beats: readonly Beat[]): void {
    this.historyWaiting.set(id, [...beats, ...(this.historyWaiting.get(id) ?? [])].slice(-RAW_KEPT * 4));
  }

  private announce(events: readonly MonitorEvent[]): void {
    for (const e of events)
      for (const l of this.listeners) {
        try {
          l(e);
        } catch (err) {
          log('error', 'monitor listener failed', { err: String(err) });
        }
      }
  }

  /**
   * Inside a transaction (a lease release): fold the state of the waiting beats of the sites `which` selects (their
   * history follows with the next flush: it needs a read first). The function may run more than once before it
   * commits (the PostgreSQL engine's dry run), so it only notes what it folded, by partition (a run replaces the note
   * of the one before); once the release has committed, `released` takes the beats of the partitions it gave up out
   * of `pending`, hands them to the history, and announces their events.
   */
  private flushInTx(tx: Tx, partition: number, which: (id: number) => boolean): void {
    const events: MonitorEvent[] = [];
    const taken = new Map<number, Set<PendingBeat>>();
    for (const [id, list] of this.pending) {
      if (!which(id)) continue;
      this.fold(tx, id, list, null, events);
      taken.set(id, new Set(list));
    }
    this.releasing.set(partition, { taken, events });
  }

  /** After a lease round committed (or failed: none), for the partitions it gave up. */
  private released(partitions: readonly number[]): void {
    const notes = partitions.flatMap((p) => this.releasing.get(p) ?? []);
    this.releasing.clear();
    for (const { taken, events } of notes) {
      for (const [id, beats] of taken) {
        const rest = (this.pending.get(id) ?? []).filter((b) => !beats.has(b));
        if (rest.length) this.pending.set(id, rest);
        else this.pending.delete(id);
        this.waitForHistory(
          id,
          [...beats].map((b) => b.beat),
        );
      }
      this.announce(events);
    }
  }

  /**
   * Folds a site's beats into its monitor record (state: last check, up or down, incidents) and, unless `history` is
   * null, `history.beats` into the history read before the write (`prior`). A prior that is not the history the
   * monitor record last saw (another process wrote one since) is not written: the site goes into `history.stale`.
   */
  private fold(
    tx: Tx,
    id: number,
    beats: readonly PendingBeat[],
    history: { beats: readonly Beat[]; prior: MonitorHistoryRecord | null; stale: number[] } | null,
    events: MonitorEvent[],
  ): void {
    const site = tx.get<SiteRecord>('sites', id);
    if (!site) return; // removed meanwhile
    const stored = tx.get<MonitorRecord>('monitors', id);
    const cur = stored ?? emptyMonitor(id);
    let m = monitorOf(cur, cur.history_n, true);
    for (const { beat, message } of beats) {
      // Older than what is recorded (another process wrote a later check first): history only, no change of state.
      if (m.last_check && beat[0] < m.last_check[0]) continue;
      m.last_check = beat;
      const info = { id: site.id, url: site.url, name: site.name };
      if (!beat[1]) {
        if (m.status !== 'down') {
          const cause = CAUSES[beat[4]] ?? 'connection';
          const inc = tx.insert<IncidentRecord>('incidents', {
            site_id: id,
            started_at: iso(beat[0]),
            ended_at: null,
            cause,
            message: message ?? cause,
            http_code: beat[3] || null,
            down_count: 1,
          });
          this.trimIncidents(tx);
          m.status = 'down';
          m.down_since = beat[0];
          m.open_incident = inc.id;
          events.push({ event: 'site.down', site: info, incident: inc });
        } else if (m.open_incident) {
          const inc = tx.get<IncidentRecord>('incidents', m.open_incident);
          if (inc) tx.put<IncidentRecord>('incidents', { ...inc, down_count: inc.down_count + 1 });
        }
      } else {
        if (m.status === 'down' && m.open_incident) {
          const inc = tx.get<IncidentRecord>('incidents', m.open_incident);
          if (inc)
            events.push({
              event: 'site.up',
              site: info,
              incident: tx.put<IncidentRecord>('incidents', { ...inc, ended_at: iso(beat[0]) }),
            });
        }
        m.status = 'up';
        m.down_since = null;
        m.open_incident = null;
      }
    }
    if (history?.beats.length) {
      // A history without its monitor record (a restore of part of a fleet) goes on from its own count.
      const n = stored ? (stored.history_n ?? 0) : (history.prior?.n ?? 0);
      const prior = history.prior ?? emptyHistoryOf(id);
      if (prior.n !== n || (!history.prior && legacyHistory(cur))) history.stale.push(id);
      else {
        tx.put<MonitorHistoryRecord>('monitor_history', foldHistory(prior, history.beats, n + 1));
        m = monitorOf(m, n + 1, false);
      }
    }
    if (beats.length || m.history_n !== cur.history_n) tx.put<MonitorRecord>('monitors', m);
  }

  /**
   * Moves the history that an older sitefleet kept in the monitor records into `monitor_history`, HISTORY_BATCH sites a
   * commit (run at start; any process may, at once: a monitor moved already is left alone). Answers how many moved.
   */
  async moveHistory(): Promise<number> {
    let moved = 0;
    for (;;) {
      const ids: number[] = [];
      for (const m of this.store.all<MonitorRecord>('monitors')) {
        if (legacyHistory(m)) ids.push(m.id);
        if (ids.length >= HISTORY_BATCH) break;
      }
      if (!ids.length) return moved;
      moved += await this.store.write((tx) => {
        let n = 0;
        for (const id of ids) {
          const cur = tx.get<MonitorRecord>('monitors', id);
          const old = legacyHistory(cur);
          if (!cur || !old) continue;
          const next = (cur.history_n ?? 0) + 1;
          tx.put<MonitorHistoryRecord>('monitor_history', { ...old, n: next });
          tx.put<MonitorRecord>('monitors', monitorOf(cur, next, false));
          n++;
        }
        return n;
      });
    }
  }

  private trimIncidents(tx: Tx): void {
    if (this.store.count('incidents') <= INCIDENTS_KEPT) return;
    const resolved = [...tx.all<IncidentRecord>('incidents')].filter((i) => i.ended_at).sort((a, b) => a.id - b.id);
    for (const i of resolved.slice(0, this.store.count('incidents') - INCIDENTS_KEPT)) tx.delete('incidents', i.id);
  }

  // ---- reads ----------------------------------------------------------------------------------------------

  /** Incidents newest first, of one site or all, open / resolved / any. */
  incidents(filter: { siteId?: number; state?: 'open' | 'resolved' | 'any' } = {}): IncidentRecord[] {
    const out: IncidentRecord[] = [];
    for (const i of this.store.all<IncidentRecord>('incidents')) {
      if (filter.siteId !== undefined && i.site_id !== filter.siteId) continue;
      if (!this.sites.access.seesSite(i.site_id)) continue;
      if (filter.state === 'open' && i.ended_at) continue;
      if (filter.state === 'resolved' && !i.ended_at) continue;
      out.push(i);
    }
    return out.sort((a, b) => b.id - a.id);
  }

  incident(id: number): IncidentRecord | undefined {
    const i = this.store.get<IncidentRecord>('incidents', id);
    return i && this.sites.access.seesSite(i.site_id) ? i : undefined;
  }

  /** A site's history as written (a read of the store: not held in memory on PostgreSQL); null before its first check. */
  async history(siteId: number): Promise<MonitorHistoryRecord | null> {
    return (await readHistories(this.store, [siteId])).get(siteId) ?? null;
  }

  /** A site's kept heartbeats newest first, at or after `since` (epoch s), only up or only down when asked. */
  async heartbeats(siteId: number, filter: { since?: number; status?: 'up' | 'down' } = {}): Promise<Beat[]> {
    const since = filter.since ?? -Infinity;
    return [...((await this.history(siteId))?.recent ?? [])]
      .reverse()
      .filter((b) => b[0] >= since && (!filter.status || (filter.status === 'up') === (b[1] === 1)));
  }

  /** Incidents started since `since` (epoch s), per site: one pass for a whole list. */
  incidentCounts(since: number): Map<number, number> {
    const m = new Map<number, number>();
    const from = iso(since);
    for (const i of this.store.all<IncidentRecord>('incidents')) if (i.started_at >= from) m.set(i.site_id, (m.get(i.site_id) ?? 0) + 1);
    return m;
  }

  // ---- what callers see ------------------------------------------------------------------------------------

  /**
   * The monitors of the sites a filter names (and, when given, in one state), a page of them with their summaries (the
   * page's histories in one read).
   */
  async page(q: { search?: string; include?: number[]; exclude?: number[]; status?: MonitorStatus }, page: number, perPage: number) {
    const all = this.sites
      .filter({ search: q.search, include: q.include, exclude: q.exclude }, () => [])
      .filter((s) => !q.status || this.statusOf(s) === q.status);
    const now = nowS();
    const counts = { d7: this.incidentCounts(now - 7 * DAY_S), d30: this.incidentCounts(now - 30 * DAY_S) };
    const shown = paginate(all, page, perPage);
    const histories = await readHistories(
      this.store,
      shown.map((s) => s.id),
    );
    return { items: shown.map((s) => this.summaryOf(s, histories.get(s.id) ?? null, counts)), total: all.length };
  }

  /** A site's monitor as callers see it: state, last check, uptime over 24 h / 7 d / 30 d, response times, incidents, hours. */
  async summary(site: SiteRecord): Promise<MonitorSummary> {
    return this.summaryOf(site, await this.history(site.id));
  }

  private summaryOf(
    site: SiteRecord,
    h: MonitorHistoryRecord | null,
    counts?: { d7: Map<number, number>; d30: Map<number, number> },
  ): MonitorSummary {
    const m = this.record(site.id);
    const now = nowS();
    const last = m?.last_check ?? null;
    const day = summarise(h?.hours ?? [], now - DAY_S);
    const s7 = summarise(h?.days ?? [], Math.floor(now / DAY_S) * DAY_S - 6 * DAY_S);
    const s30 = summarise(h?.days ?? [], Math.floor(now / DAY_S) * DAY_S - 29 * DAY_S);
    const c = counts ?? { d7: this.incidentCounts(now - 7 * DAY_S), d30: this.incidentCounts(now - 30 * DAY_S) };
    return {
      id: site.id,
      url: site.url,
      name: site.name,
      status: this.statusOf(site),
      interval_s: this.effective(site.id).interval_s,
      last_check_at: last ? iso(last[0]) : null,
      last_http_code: last?.[3] || null,
      last_response_ms: last && last[2] >= 0 ? last[2] : null,
      last_cause: last && last[4] >= 0 ? (CAUSES[last[4]] ?? null) : null,
      down_since: m?.down_since ? iso(m.down_since) : null,
      open_incident_id: m?.open_incident ?? null,
      uptime_24h: day.uptime,
      uptime_7d: s7.uptime,
      uptime_30d: s30.uptime,
      response_ms: { avg: day.avg_ms, min: day.min_ms, max: day.max_ms, p50: day.p50_ms, p95: day.p95_ms, p99: day.p99_ms },
      incidents_7d: c.d7.get(site.id) ?? 0,
      incidents_30d: c.d30.get(site.id) ?? 0,
      hourly: hourly(h?.hours ?? [], now),
    };
  }

  /** An incident as callers see it: with its site's URL, whether it is resolved and how long it lasted (so far). */
  incidentSummary(i: IncidentRecord): IncidentSummary {
    const end = i.ended_at ? Date.parse(i.ended_at) : Date.now();
    return {
      id: i.id,
      site_id: i.site_id,
      site_url: this.sites.get(i.site_id)?.url ?? '',
      started_at: i.started_at,
      ended_at: i.ended_at,
      resolved: i.ended_at !== null,
      duration_s: Math.max(0, Math.round((end - Date.parse(i.started_at)) / 1000)),
      cause: i.cause,
      message: i.message,
      http_code: i.http_code,
      down_count: i.down_count,
    };
  }

  static readonly iso = iso;
  static readonly now = nowS;
}

const DAY_S = 86_400;

/** The last 24 whole hours: each one's state (0 down, 1 up, null unchecked) and its up and down checks. */
function hourly(hours: readonly number[][], now: number) {
  const top = Math.floor(now / 3600) * 3600;
  return Array.from({ length: 24 }, (_, i) => {
    const start = top - (23 - i) * 3600;
    const b = hours.find((h) => h[0] === start);
    const up = b?.[1] ?? 0;
    const down = b?.[2] ?? 0;
    return { hour: iso(start), status: down ? (0 as const) : up ? (1 as const) : null, up, down };
  });
}

export interface MonitorSummary {
  id: number;
  url: string;
  name: string;
  status: MonitorStatus;
  interval_s: number;
  last_check_at: string | null;
  last_http_code: number | null;
  last_response_ms: number | null;
  last_cause: Cause | null;
  down_since: string | null;
  open_incident_id: number | null;
  uptime_24h: Summary['uptime'];
  uptime_7d: Summary['uptime'];
  uptime_30d: Summary['uptime'];
  response_ms: {
    avg: Summary['avg_ms'];
    min: Summary['min_ms'];
    max: Summary['max_ms'];
    p50: Summary['p50_ms'];
    p95: Summary['p95_ms'];
    p99: Summary['p99_ms'];
  };
  incidents_7d: number;
  incidents_30d: number;
  hourly: ReturnType<typeof hourly>;
}

export type IncidentSummary = Pick<
  IncidentRecord,
  'id' | 'site_id' | 'started_at' | 'ended_at' | 'cause' | 'message' | 'http_code' | 'down_count'
> & {
  site_url: string;
  resolved: boolean;
  duration_s: number;
};

export type { CheckOutcome, Cause };
