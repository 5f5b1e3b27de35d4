// Update policies (issue 28 part 4): unattended updates in a maintenance window. A policy names its sites (all, tags,
// clients, sites), what it updates (core minor/major, plugins, themes, translations; all, only or all but some slugs),
// a delay (a new version must have been pending N days: first-seen times are noted at every sync), a weekly window in
// each site's own time zone, how many sites at once and a stop rule. Policies always run in safe mode.
//
// Scheduling: every `serve` process ticks the scheduler; the sites whose local window started at the same instant
// form one run, claimed by inserting its (policy, window start) record in a store write — serialised across processes
// on both engines — together with the persisted job that works it. A second process sees the record and does nothing;
// a crash mid-run leaves the job, which any runner resumes (never a second run of the window).
import { errors, ServiceError } from '../core/errors.js';
import { offsetMinutes } from '../core/site-time.js';
import type { JobRecord, JobState, SiteData, SiteRecord } from '../store/records.js';
import { addItems, countItems } from './job-chunks.js';
import type { Store, Tx } from '../store/store.js';
import {
  WEEKDAYS,
  type PendingSeenRecord,
  type PolicyRunRecord,
  type PolicyTargets,
  type PolicyUpdates,
  type PolicyWindow,
  type UpdatePolicyRecord,
} from '../store/policy-records.js';
import type { Outcome } from './child-sites.js';
import type { JobService } from './jobs.js';
import type { SiteService } from './sites.js';
import type { TagService } from './tags.js';
import type { ClientService } from './clients.js';
import { TYPES, type PendingView, type Plan, type TypeName, type UpdateService } from './updates.js';
import type { WebhookService } from './webhooks.js';
import type { VulnerabilityService } from './vulnerabilities/service.js';
import { storedPending } from './updates.js';
import { log } from '../log.js';

/** Policies a fleet may have. */
export const MAX_POLICIES = 100;
/** The longest delay a policy may ask for. */
export const MAX_DELAY_DAYS = 365;
/** Slugs one policy may list. */
export const MAX_POLICY_SLUGS = 200;
/** Runs kept per policy (the oldest go first); their jobs and the update history keep the detail. */
export const MAX_RUNS_KEPT = 100;
/** Items a preview lists at most per list (the totals count every one). */
export const MAX_PREVIEW_ITEMS = 1000;
/** How often a `serve` process looks for windows that opened (the scheduler's own tick; tests call tick(now)). */
export const SCHEDULE_EVERY_MS = 15_000;

const DAY = 86_400_000;
const FAILED = new Set(['failed', 'rolled_back', 'rollback_failed']);

export interface PolicyInput {
  name: string;
  targets: { all: boolean; sites: Array<number | string>; tags: number[]; clients: number[] };
  updates: PolicyUpdates;
  delay_days: number;
  window: PolicyWindow;
  max_sites: number;
  stop_after: number;
}

interface RunParams {
  policy_id: number;
  run_id: number;
  window_end: string;
  max_sites: number;
}

export const policyNotFound = (id: number) => new ServiceError('svc_policy_not_found', `No update policy found with ID ${id}.`, 404);

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
const zoneOfSite = (s: SiteRecord) => s.timezone || '+00:00';

/** The UTC instant of local wall-clock milliseconds `wall` in `zone` (two rounds settle the offset across DST changes). */
function utcOfWall(wall: number, zone: string): number {
  let u = wall - offsetMinutes(zone, wall) * 60_000;
  u = wall - offsetMinutes(zone, u) * 60_000;
  return u;
}

/**
 * The windows of `w` in `zone` that start from the local day before `now` to `days` days after, in order, as UTC
 * instants. A window whose end is not after its start runs past midnight into the next day.
 */
export function windowsAround(w: PolicyWindow, zone: string, now: number, days = 8): Array<{ start: number; end: number }> {
  const wall = now + offsetMinutes(zone, now) * 60_000;
  const today = Math.floor(wall / DAY) * DAY;
  const s = minutesOf(w.start);
  let e = minutesOf(w.end);
  if (e <= s) e += 24 * 60;
  const out: Array<{ start: number; end: number }> = [];
  for (let d = -1; d <= days; d++) {
    const day = today + d * DAY;
    const weekday = WEEKDAYS[(new Date(day).getUTCDay() + 6) % 7]!;
    if (!w.days.includes(weekday)) continue;
    out.push({ start: utcOfWall(day + s * 60_000, zone), end: utcOfWall(day + e * 60_000, zone) });
  }
  return out;
}

/** The window open at `now` in `zone`, or null. */
export function openWindow(w: PolicyWindow, zone: string, now: number): { start: number; end: number } | null {
  return windowsAround(w, zone, now, 0).find((x) => x.start <= now && now < x.end) ?? null;
}

const seenKey = (i: PendingView) => `${i.type}:${i.slug}:${i.language ?? ''}:${i.new_version}`;
const itemKey = (i: PendingView) => `${i.type}:${i.slug}:${i.language ?? ''}`;
const TYPE_OF: Record<string, TypeName> = { core: 'core', plugin: 'plugins', theme: 'themes', translation: 'translations' };

/** x.y of a version: a core update that changes it is a major one (WordPress's own naming: 6.4 → 6.5). */
const branch = (v: string | null) =>
  (v ?? '')
    .split('.')
    .slice(0, 2)
    .map((n) => Number.parseInt(n, 10) || 0)
    .join('.');

/**
 * The security fixes pending on each site: `type:item:new version` of every pending update that leaves at least one
 * known vulnerability (not an informational record) the item is hit by, with those records' ids.
 */
export type SecurityFixes = Map<number, Map<string, string[]>>;
const fixKey = (type: string, item: string, version: string) => `${type}:${item}:${version}`;

/** Whether a policy's "what" covers a pending item (type, core minor/major, slugs, security fixes). The delay is judged apart. */
function covers(u: PolicyUpdates, i: PendingView, fixes: Map<string, string[]> | undefined): boolean {
  if (i.type === 'core') {
    if (u.core === 'none') return false;
    if (u.core === 'minor' && branch(i.current_version) !== branch(i.new_version)) return false;
  } else if (!u[TYPE_OF[i.type]! as 'plugins' | 'themes' | 'translations']) return false;
  if (u.security_only && !fixes?.has(fixKey(i.type, i.slug, i.new_version))) return false;
  if (u.slugs_mode === 'only') return u.slugs.includes(i.slug);
  if (u.slugs_mode === 'except') return !u.slugs.includes(i.slug);
  return true;
}

/** A previewed item; `fixes`: the vulnerability records its update fixes (security_only policies). */
export type DueItem = PendingView & { fixes?: string[] };
export type PreviewItem = DueItem & { eligible_at: string | null };
/** Per site id, the skipped item rows a cancelled run's job gets for it (stored in the job's params at the cancel). */
type SkipRows = Record<number, Array<Record<string, unknown>>>;

export class UpdatePolicyService {
  /** The scheduler's clock (tests set it; no real sleeps). */
  now: () => number = Date.now;
  private lastTick = -Infinity;

  constructor(
    private readonly store: Store,
    private readonly sites: SiteService,
    private readonly tags: TagService,
    private readonly clients: ClientService,
    private readonly updates: UpdateService,
    private readonly jobs: JobService,
    private readonly webhooks: WebhookService,
    private readonly vulnerabilities: VulnerabilityService,
  ) {}

  // ---- policies ----

  list(): UpdatePolicyRecord[] {
    return [...this.store.all<UpdatePolicyRecord>('update_policies')].sort((a, b) => a.id - b.id);
  }

  resolve(id: number): UpdatePolicyRecord {
    const p = this.store.get<UpdatePolicyRecord>('update_policies', id);
    if (!p) throw policyNotFound(id);
    return p;
  }

  private check(i: PolicyInput): { targets: PolicyTargets } {
    const name = i.name.trim();
    if (!name) throw errors.invalidInput('A policy needs a name.');
    if (minutesOf(i.window.start) === minutesOf(i.window.end))
      throw new ServiceError('svc_invalid_window', 'The window must not start and end at the same time.', 400);
    if (!i.window.days.length) throw new ServiceError('svc_invalid_window', 'The window needs at least one day of the week.', 400);
    if (i.delay_days > MAX_DELAY_DAYS) throw errors.invalidInput(`delay_days is at most ${MAX_DELAY_DAYS}.`);
    const u = i.updates;
    if (u.core === 'none' && !u.plugins && !u.themes && !u.translations)
      throw errors.invalidInput('The policy updates nothing: choose core, plugins, themes or translations.');
    if (u.slugs_mode === 'only' && !u.slugs.length) throw errors.invalidInput('slugs_mode "only" needs at least one slug.');
    if (u.security_only && u.core === 'none' && !u.plugins && !u.themes)
      throw errors.invalidInput('security_only updates core, plugins or themes (vulnerability feeds list no translations): choose one.');
    const t = i.targets;
    if (!t.all && !t.sites.length && !t.tags.length && !t.clients.length)
      throw errors.invalidInput("Name the policy's sites: all, or sites, tags or clients.");
    const sites = [...new Set(t.sites.map((r) => this.sites.resolve(r).id))];
    for (const id of t.tags) this.tags.resolve(id);
    for (const id of t.clients) this.clients.resolve(id);
    return { targets: { all: t.all, sites, tags: [...new Set(t.tags)], clients: [...new Set(t.clients)] } };
  }

  async create(i: PolicyInput): Promise<UpdatePolicyRecord> {
    const { targets } = this.check(i);
    const at = new Date(this.now()).toISOString();
    return this.store.write((tx) => {
      if ([...tx.all('update_policies')].length >= MAX_POLICIES)
        throw new ServiceError('svc_policy_limit', `A fleet has at most ${MAX_POLICIES} update policies.`, 409);
      return tx.insert<UpdatePolicyRecord>('update_policies', {
        name: i.name.trim(),
        paused: false,
        paused_reason: '',
        paused_at: null,
        targets,
        updates: { ...i.updates, slugs: [...new Set(i.updates.slugs)] },
        delay_days: i.delay_days,
        window: { ...i.window, days: WEEKDAYS.filter((d) => i.window.days.includes(d)) },
        max_sites: i.max_sites,
        stop_after: i.stop_after,
        created_at: at,
        updated_at: at,
      });
    });
  }

  /** Changes some fields; `paused: false` resumes a paused policy. */
  async update(id: number, patch: Partial<PolicyInput> & { paused?: boolean }): Promise<UpdatePolicyRecord> {
    const cur = this.resolve(id);
    const merged: PolicyInput = {
      name: patch.name ?? cur.name,
      targets: patch.targets ?? cur.targets,
      updates: patch.updates ?? cur.updates,
      delay_days: patch.delay_days ?? cur.delay_days,
      window: patch.window ?? cur.window,
      max_sites: patch.max_sites ?? cur.max_sites,
      stop_after: patch.stop_after ?? cur.stop_after,
    };
    const { targets } = this.check(merged);
    const at = new Date(this.now()).toISOString();
    // Pausing cancels a run in progress, as deleting does (its sites not started: skipped, policy_paused).
    const reason = `policy ${cur.id} ("${cur.name}") was paused while its run was in progress`;
    const skips = patch.paused === true && !cur.paused ? await this.skipsOf(cur, 'policy_paused', reason) : new Map<string, SkipRows>();
    const saved = await this.store.write((tx) => {
      const now = tx.get<UpdatePolicyRecord>('update_policies', id);
      if (!now) throw policyNotFound(id);
      if (!now.paused) for (const [jobId, skip] of skips) this.jobs.cancelIn(tx, jobId, reason, { skip });
      const pause =
        patch.paused === undefined || patch.paused === now.paused
          ? {}
          : patch.paused
            ? { paused: true, paused_reason: 'Paused by a caller.', paused_at: at }
            : { paused: false, paused_reason: '', paused_at: null };
      return tx.put<UpdatePolicyRecord>('update_policies', {
        ...now,
        ...merged,
        name: merged.name.trim(),
        targets,
        updates: { ...merged.updates, slugs: [...new Set(merged.updates.slugs)] },
        window: { ...merged.window, days: WEEKDAYS.filter((d) => merged.window.days.includes(d)) },
        ...pause,
        updated_at: at,
      });
    });
    for (const jobId of skips.keys()) this.jobs.afterCancelIn(jobId);
    return saved;
  }

  /**
   * Deletes a policy and its runs' records. A run in progress is cancelled in the same write: sites in flight finish,
   * no other starts, and the items of the sites not started end skipped (policy_deleted) in its job.
   */
  async remove(id: number): Promise<UpdatePolicyRecord> {
    const p = this.resolve(id);
    const reason = `policy ${p.id} ("${p.name}") was deleted while its run was in progress`;
    const skips = await this.skipsOf(p, 'policy_deleted', reason);
    await this.store.write((tx) => {
      tx.delete('update_policies', id);
      for (const r of tx.all<PolicyRunRecord>('policy_runs')) if (r.policy_id === id) tx.delete('policy_runs', r.id);
      for (const [jobId, skip] of skips) this.jobs.cancelIn(tx, jobId, reason, { skip });
    });
    for (const jobId of skips.keys()) this.jobs.afterCancelIn(jobId);
    return p;
  }

  /** The jobs of a policy's runs still queued or running. */
  private activeJobs(policyId: number): JobState[] {
    return this.runs(policyId)
      .map((r) => this.jobs.find(r.job_id))
      .filter((j): j is JobState => !!j && (j.status === 'queued' || j.status === 'processing'));
  }

  /**
   * Per active job of the policy (or only `jobId`), what its sites not yet done would have updated, as skipped item
   * rows saying why: stored on the job when it is cancelled, and written as its items for the sites it never started.
   */
  private async skipsOf(
    p: UpdatePolicyRecord,
    code: 'policy_deleted' | 'policy_paused',
    reason: string,
    jobId?: string,
  ): Promise<Map<string, SkipRows>> {
    const out = new Map<string, SkipRows>();
    const jobs = this.activeJobs(p.id).filter((j) => !jobId || j.job_id === jobId);
    if (!jobs.length) return out;
    const fixes = await this.securityFixes(p);
    const now = this.now();
    const message = `Not updated: ${reason}.`;
    for (const j of jobs) {
      const done = new Set(j.done);
      const rows: SkipRows = {};
      const left = j.sites.flatMap((id) => (done.has(id) ? [] : (this.sites.get(id) ?? [])));
      for (const { site, due } of await this.itemsForMany(p, left, now, fixes)) {
        rows[site.id] = due.map((i) => ({
          site_id: i.site_id,
          site_url: i.site_url,
          site_name: i.site_name,
          type: i.type,
          slug: i.slug,
          ...(i.language !== undefined ? { language: i.language } : {}),
          status: 'skipped',
          reason: code,
          message,
        }));
      }
      out.set(j.job_id, rows);
    }
    return out;
  }

  runs(policyId: number): PolicyRunRecord[] {
    return [...this.store.all<PolicyRunRecord>('policy_runs')].filter((r) => r.policy_id === policyId).sort((a, b) => b.id - a.id);
  }

  /** The sites a policy names (suspended and disconnected ones included: a run skips them). */
  targetSites(p: UpdatePolicyRecord): SiteRecord[] {
    const all = this.sites.filter({}, () => []);
    if (p.targets.all) return all;
    const ids = new Set(p.targets.sites);
    const inTags = new Set(this.tags.sitesInTags(p.targets.tags));
    const clients = new Set(p.targets.clients);
    return all.filter((s) => ids.has(s.id) || inTags.has(s.id) || (s.client_id !== null && clients.has(s.client_id)));
  }

  // ---- first seen ----

  /** In a sync's write: keep when each pending version was first seen, forget those no longer pending. */
  noteSeen(tx: Tx, siteId: number, data: SiteData): void {
    const site = tx.get<SiteRecord>('sites', siteId);
    if (!site) return;
    const prev = tx.get<PendingSeenRecord>('pending_seen', siteId)?.seen ?? {};
    const at = new Date(this.now()).toISOString();
    const seen: Record<string, string> = {};
    const pending = storedPending(data);
    const views: PendingView[] = [];
    const w = { site_id: siteId, site_url: '', site_name: '' };
    if (pending.core) views.push({ ...w, type: 'core', slug: 'wordpress', name: 'WordPress', ...pending.core });
    for (const [type, list] of [
      ['plugin', pending.plugins],
      ['theme', pending.themes],
      ['translation', pending.translations],
    ] as const)
      for (const i of list)
        views.push({
          ...w,
          type,
          slug: i.slug,
          name: i.name,
          current_version: i.current_version,
          new_version: i.new_version,
          ...(type === 'translation' ? { language: i.language ?? '' } : {}),
        });
    for (const v of views) seen[seenKey(v)] = prev[seenKey(v)] ?? at;
    tx.put<PendingSeenRecord>('pending_seen', { id: siteId, seen });
  }

  forgetSite(tx: Tx, siteId: number): void {
    tx.delete('pending_seen', siteId);
  }

  /** When a pending item was first seen (null: before first-seen times were kept, or never synced since). */
  firstSeen(siteId: number, i: PendingView): number | null {
    const at = this.store.get<PendingSeenRecord>('pending_seen', siteId)?.seen[seenKey(i)];
    return at ? Date.parse(at) : null;
  }

  /**
   * What a policy would update on a site at instant `at`: the covered pending items not ignored, and which of them
   * still wait for the delay (with when they become due; null when the first sighting is unknown, counted from the next sync).
   */
  async itemsFor(
    p: UpdatePolicyRecord,
    site: SiteRecord,
    at: number,
    fixes?: SecurityFixes,
  ): Promise<{ due: DueItem[]; waiting: PreviewItem[] }> {
    const { todo } = await this.updates.planSite(site, { types: TYPES, safe: true });
    return this.itemsOf(p, site, todo, at, fixes);
  }

  /** itemsFor for many sites, their data read in batches (UpdateService.planSites). */
  private async itemsForMany(
    p: UpdatePolicyRecord,
    sites: readonly SiteRecord[],
    at: number,
    fixes?: SecurityFixes,
  ): Promise<Array<{ site: SiteRecord; due: DueItem[]; waiting: PreviewItem[] }>> {
    const plans = await this.updates.planSites(sites, { types: TYPES, safe: true });
    return plans.map(({ site, todo }) => ({ site, ...this.itemsOf(p, site, todo, at, fixes) }));
  }

  private itemsOf(
    p: UpdatePolicyRecord,
    site: SiteRecord,
    todo: readonly PendingView[],
    at: number,
    fixes?: SecurityFixes,
  ): { due: DueItem[]; waiting: PreviewItem[] } {
    const due: DueItem[] = [];
    const waiting: PreviewItem[] = [];
    const mine = fixes?.get(site.id);
    for (const pending of todo) {
      if (!covers(p.updates, pending, mine)) continue;
      const i: DueItem = p.updates.security_only
        ? { ...pending, fixes: mine!.get(fixKey(pending.type, pending.slug, pending.new_version))! }
        : pending;
      if (p.delay_days === 0) {
        due.push(i);
        continue;
      }
      const seen = this.firstSeen(site.id, i);
      const ready = seen === null ? null : seen + p.delay_days * DAY;
      if (ready !== null && ready <= at) due.push(i);
      else waiting.push({ ...i, eligible_at: ready === null ? null : new Date(ready).toISOString() });
    }
    return { due, waiting };
  }

  /** The security fixes pending on the fleet (matched now), for security_only policies; undefined for the others. */
  async securityFixes(p: UpdatePolicyRecord): Promise<SecurityFixes | undefined> {
    if (!p.updates.security_only) return undefined;
    const out: SecurityFixes = new Map();
    for (const [siteId, hits] of await this.vulnerabilities.hitsBySite(false)) {
      const m = new Map<string, string[]>();
      for (const h of hits) {
        if (!h.offered || !h.offered_clears) continue;
        const k = fixKey(h.type, h.ref, h.offered);
        m.set(k, [...(m.get(k) ?? []), h.key]);
      }
      if (m.size) out.set(siteId, m);
    }
    return out;
  }

  // ---- scheduling ----

  /** The jobs runner's tick hook: looks for opened windows every SCHEDULE_EVERY_MS of real time. */
  async scheduledTick(): Promise<void> {
    const t = Date.now();
    if (t - this.lastTick < SCHEDULE_EVERY_MS) return;
    this.lastTick = t;
    await this.tick();
  }

  /** Starts a run for every (policy, window start) open at `now` that has none yet. Answers the runs this call started. */
  async tick(now = this.now()): Promise<PolicyRunRecord[]> {
    const started: PolicyRunRecord[] = [];
    const offsets = new Map<string, Array<{ start: number; end: number }>>();
    for (const p of this.list()) {
      if (p.paused) continue;
      const groups = new Map<number, { end: number; ids: number[] }>();
      offsets.clear();
      for (const s of this.targetSites(p)) {
        if (s.suspended || s.disconnected) continue;
        const zone = zoneOfSite(s);
        let ws = offsets.get(zone);
        if (!ws) offsets.set(zone, (ws = windowsAround(p.window, zone, now, 0)));
        const w = ws.find((x) => x.start <= now && now < x.end);
        if (!w) continue;
        const g = groups.get(w.start) ?? { end: w.end, ids: [] };
        g.ids.push(s.id);
        groups.set(w.start, g);
      }
      for (const [start, g] of groups) {
        const startIso = new Date(start).toISOString();
        if (this.runs(p.id).some((r) => r.window_start === startIso)) continue;
        const run = await this.store.write((tx) => {
          const cur = tx.get<UpdatePolicyRecord>('update_policies', p.id);
          if (!cur || cur.paused) return null;
          const mine = [...tx.all<PolicyRunRecord>('policy_runs')].filter((r) => r.policy_id === p.id);
          if (mine.some((r) => r.window_start === startIso)) return null; // another process claimed it
          const r = tx.insert<PolicyRunRecord>('policy_runs', {
            policy_id: p.id,
            window_start: startIso,
            window_end: new Date(g.end).toISOString(),
            job_id: '',
            site_ids: g.ids,
            created_at: new Date(now).toISOString(),
            stopped: null,
          });
          const params: RunParams = { policy_id: p.id, run_id: r.id, window_end: r.window_end, max_sites: cur.max_sites };
          const job = this.jobs.enqueueIn(tx, 'policy', g.ids, params as unknown as Record<string, unknown>);
          for (const old of mine.sort((a, b) => a.id - b.id).slice(0, Math.max(0, mine.length + 1 - MAX_RUNS_KEPT)))
            tx.delete('policy_runs', old.id);
          return tx.put<PolicyRunRecord>('policy_runs', { ...r, job_id: job.job_id });
        });
        if (run) started.push(run);
      }
    }
    return started;
  }

  /**
   * The next window of a policy (one open now whose run has not started counts): when, on which sites, and what it
   * would update there as things stand (pending as of each site's last sync, the delay judged at the window's start).
   */
  async preview(id: number, now = this.now()) {
    const p = this.resolve(id);
    const ran = new Set(this.runs(p.id).map((r) => r.window_start));
    let best: { start: number; end: number; sites: SiteRecord[] } | null = null;
    const byZone = new Map<string, { start: number; end: number } | null>();
    for (const s of this.targetSites(p)) {
      if (s.suspended || s.disconnected) continue;
      const zone = zoneOfSite(s);
      if (!byZone.has(zone))
        byZone.set(
          zone,
          windowsAround(p.window, zone, now).find((w) => w.end > now && (w.start > now || !ran.has(new Date(w.start).toISOString()))) ??
            null,
        );
      const w = byZone.get(zone);
      if (!w) continue;
      if (!best || w.start < best.start) best = { ...w, sites: [s] };
      else if (w.start === best.start) best.sites.push(s);
    }
    const base = { policy_id: p.id, name: p.name, paused: p.paused, safe: true as const, security_only: p.updates.security_only === true };
    if (!best) return { ...base, next_window: null };
    const at = Math.max(now, best.start);
    const due: DueItem[] = [];
    const waiting: PreviewItem[] = [];
    const fixes = await this.securityFixes(p);
    for (const r of await this.itemsForMany(p, best.sites, at, fixes)) {
      due.push(...r.due);
      waiting.push(...r.waiting);
    }
    return {
      ...base,
      next_window: {
        starts_at: new Date(best.start).toISOString(),
        ends_at: new Date(best.end).toISOString(),
        open_now: best.start <= now,
        sites: best.sites.map((s) => ({ site_id: s.id, site_url: s.url, site_name: s.name, time_zone: zoneOfSite(s) })),
        would_update: due.slice(0, MAX_PREVIEW_ITEMS),
        would_update_total: due.length,
        waiting: waiting.slice(0, MAX_PREVIEW_ITEMS),
        waiting_total: waiting.length,
        max_sites: p.max_sites,
        stop_after: p.stop_after,
      },
    };
  }

  // ---- running ----

  /** The step of a policy run's job on one site: the policy's due items in safe mode, then the stop rule. */
  async jobStep(site: SiteRecord, job: JobRecord): Promise<Outcome<unknown>> {
    const params = job.params as unknown as RunParams;
    const p = this.store.get<UpdatePolicyRecord>('update_policies', params.policy_id);
    // A step that started as the policy was deleted or paused: its items are skipped as the job's other sites' are.
    const skipped = (tx: Tx) => {
      const cur = tx.get<JobRecord>('jobs', job.id);
      const rows = (cur?.params as { skip?: SkipRows } | undefined)?.skip?.[site.id];
      if (cur && rows?.length) addItems(tx, cur, site.id, rows);
    };
    if (!p) return { ok: false, error: policyNotFound(params.policy_id), commit: skipped };
    // What the run recorded so far (the stop rule counts the whole run's failures; only chunks written since are recounted).
    const recorded = () => countItems(this.store, this.store.get<JobRecord>('jobs', job.id) ?? job, isFailure);
    const before = recorded();
    if (p.paused || before >= p.stop_after) {
      await this.stop(p, params, job.job_id, before);
      return {
        ok: false,
        error: new ServiceError('svc_policy_paused', `Policy ${p.id} is paused: ${site.url} was not updated.`, 409),
        commit: skipped,
      };
    }
    if (this.now() >= Date.parse(params.window_end))
      return { ok: false, error: new ServiceError('svc_window_closed', `The window closed before ${site.url} was reached.`, 409) };
    const { due } = await this.itemsFor(p, site, this.now(), await this.securityFixes(p));
    const plan: Plan = {
      types: TYPES,
      items: due.map(itemKey),
      safe: true,
      force: false,
      actor: { kind: 'policy', id: p.id, name: p.name },
    };
    const o = await this.updates.jobStep(site, { ...job, params: plan as unknown as Record<string, unknown> });
    const n = recorded();
    if (n >= p.stop_after) await this.stop(p, params, job.job_id, n);
    return o;
  }

  /** The stop rule (or a pause meanwhile): pause the policy, note it on the run, say so (policy.paused), stop the job. */
  private async stop(p: UpdatePolicyRecord, params: RunParams, jobId: string, failures: number): Promise<void> {
    const reason = p.paused
      ? p.paused_reason || 'Paused.'
      : `Paused after ${failures} failed or rolled-back update(s) in the run of the window starting ${new Date(
          Date.parse(this.store.get<PolicyRunRecord>('policy_runs', params.run_id)?.window_start ?? new Date(this.now()).toISOString()),
        ).toISOString()} (stop rule: ${p.stop_after}).`;
    const paused = await this.store.write((tx) => {
      const run = tx.get<PolicyRunRecord>('policy_runs', params.run_id);
      if (run && !run.stopped) tx.put<PolicyRunRecord>('policy_runs', { ...run, stopped: reason });
      const cur = tx.get<UpdatePolicyRecord>('update_policies', p.id);
      if (!cur || cur.paused) return null;
      return tx.put<UpdatePolicyRecord>('update_policies', {
        ...cur,
        paused: true,
        paused_reason: reason,
        paused_at: new Date(this.now()).toISOString(),
      });
    });
    if (paused) {
      log('warn', 'update policy paused by its stop rule', { policy: p.id, failures });
      void this.webhooks.emit('policy.paused', { policy: { id: p.id, name: p.name }, reason, failures, job_id: jobId }).catch(() => {});
    }
    const why = `policy ${p.id} ("${p.name}") was paused: ${reason}`;
    const skip = (await this.skipsOf(p, 'policy_paused', why, jobId)).get(jobId);
    await this.store.write((tx) => this.jobs.cancelIn(tx, jobId, why, skip ? { skip } : undefined)).catch(() => {});
    this.jobs.afterCancelIn(jobId);
  }

  /** The cancelled job's item rows for the sites it never started (JobService calls it as the job ends). */
  cancelledRows(job: JobRecord, notStarted: number[]): unknown[] {
    const skip = (job.params as { skip?: SkipRows } | undefined)?.skip;
    return skip ? notStarted.flatMap((id) => skip[id] ?? []) : [];
  }
}

/** Items of a run that failed or were rolled back (the stop rule counts them), from what its job recorded. */
export function failuresOf(job: JobState): number {
  return job.items.filter(isFailure).length;
}

function isFailure(row: unknown): boolean {
  const status = row && typeof row === 'object' ? (row as { status?: unknown }).status : undefined;
  return typeof status === 'string' && FAILED.has(status);
}
