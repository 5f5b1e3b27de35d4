// What a client report says, gathered for a set of sites and a period: updates applied (the update history), uptime
// and incidents (the monitors), vulnerabilities found and fixed (the vulnerability log), security findings (each
// site's last sync), changes made on the sites through the dashboard (the audit log) and costs. Every list is bounded
// (LIST_MAX, or SITES_LISTED for the per-site table) and says how many more there were; totals count everything.
import type { SiteRecord } from '../../store/records.js';
import { RECORD_READ_BATCH, type Store } from '../../store/engine.js';
import type { UpdateHistoryRecord } from '../../store/health-records.js';
import type { IncidentRecord } from '../../store/monitor-records.js';
import type { Branding, VulnerabilityLogRecord } from '../../store/report-records.js';
import { newestFirst } from '../audit.js';
import { cents, type CostService } from '../costs.js';
import type { SiteSecurity } from '../fleet-security.js';
import { DAYS_KEPT, readHistories } from '../monitors.js';
import type { Period } from './period.js';

/** Items each list of a report shows at most (the rest are counted: "and N more"). */
export const LIST_MAX = 100;
/** Sites listed in the per-site uptime table and the list of sites. */
export const SITES_LISTED = 200;

const DAY = 86_400_000;

export interface SiteRef {
  id: number;
  name: string;
  url: string;
}

export interface ReportModel {
  title: string;
  scope_label: string;
  period: { from: string; to: string; time_zone: string };
  generated_at: string;
  branding: Branding;
  sites: { total: number; items: SiteRef[]; more: number };
  updates: {
    total: number;
    by_outcome: Record<string, number>;
    items: Array<{
      at: string;
      site: string;
      type: string;
      name: string;
      from: string | null;
      to: string | null;
      outcome: string;
      reason: string;
    }>;
    more: number;
  };
  uptime: {
    checks: number;
    uptime_pct: number | null;
    /** Daily check counts are kept DAYS_KEPT days: a period starting earlier is measured from this date on. */
    measured_from: string | null;
    incidents_total: number;
    downtime_s: number;
    sites: Array<{ site: string; uptime_pct: number | null; incidents: number; downtime_s: number }>;
    sites_more: number;
    incidents: Array<{ site: string; started_at: string; ended_at: string | null; duration_s: number; cause: string; message: string }>;
    incidents_more: number;
  };
  vulnerabilities: {
    found_total: number;
    fixed_total: number;
    found: Array<{
      at: string;
      site: string;
      title: string;
      severity: string | null;
      item: string;
      version: string | null;
      fixed_in: string | null;
    }>;
    found_more: number;
    fixed: Array<{ at: string; site: string; title: string; item: string; from: string | null; to: string | null }>;
    fixed_more: number;
  };
  security: {
    sites_with_issues: number;
    high: number;
    medium: number;
    low: number;
    items: Array<{ site: string; severity: string; message: string }>;
    more: number;
  };
  changes: { total: number; items: Array<{ at: string; who: string; action: string; detail: string }>; more: number };
  /** null when the cost tracker module is off. */
  costs: {
    monthly: number;
    period_total: number;
    items: Array<{ name: string; product_type: string; frequency: string; monthly: number }>;
    more: number;
  } | null;
}

export interface Sources {
  store: Store;
  costs: CostService | null;
  /** The fleet's sites with security issues (FleetSecurityService.sitesWithIssues('low'), read before: it is asynchronous). */
  security: readonly SiteSecurity[];
}

const iso = (t: number) => new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
const label = (s: Pick<SiteRef, 'name' | 'url'>) => s.name || s.url;

function bounded<T>(all: T[], max = LIST_MAX): { items: T[]; more: number } {
  return { items: all.slice(0, max), more: Math.max(0, all.length - max) };
}

/** Site refs an audit entry's input names: ids and host names, at the keys abilities use for sites. */
const SITE_KEYS = /^(site|sites|site_id|site_ids|site_id_or_domain|id_or_domain|websites|site_ref)$/;
/** Entries about reports themselves are not changes on the sites. */
const NOT_A_SITE_CHANGE = /client-report|report-settings/;
const hostOf = (s: string) =>
  s
    .trim()
    .toLowerCase()
    .replace(/^[a-z]+:\/\//, '')
    .replace(/\/.*$/, '')
    .replace(/^www\./, '');

function namesSite(input: unknown, ids: Set<number>, hosts: Map<string, number>, depth = 0): number | null {
  if (!input || typeof input !== 'object' || depth > 3) return null;
  for (const [k, v] of Object.entries(input as Record<string, unknown>)) {
    if (SITE_KEYS.test(k)) {
      for (const x of Array.isArray(v) ? v : [v]) {
        if (typeof x === 'number' && ids.has(x)) return x;
        if (typeof x === 'string') {
          if (/^\d+$/.test(x) && ids.has(Number(x))) return Number(x);
          const h = hosts.get(hostOf(x));
          if (h !== undefined) return h;
        }
      }
    } else if (v && typeof v === 'object' && !Array.isArray(v)) {
      const hit = namesSite(v, ids, hosts, depth + 1);
      if (hit !== null) return hit;
    }
  }
  return null;
}

function briefInput(input: unknown): string {
  if (!input || typeof input !== 'object') return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(input as Record<string, unknown>)) {
    if (SITE_KEYS.test(k) || v === undefined || v === null || v === '' || typeof v === 'object') continue;
    parts.push(`${k}: ${String(v)}`);
    if (parts.length >= 4) break;
  }
  const s = parts.join(', ');
  return s.length > 200 ? `${s.slice(0, 199)}…` : s;
}

/** The report's content for `sites` over `period`; `now` is when it is generated. */
export async function gatherReport(
  src: Sources,
  head: { title: string; scope_label: string; branding: Branding },
  sites: SiteRecord[],
  period: Period,
  now: number,
): Promise<ReportModel> {
  const { store } = src;
  const from = period.from_at;
  const to = period.to_at;
  const fromIso = iso(from);
  const toIso = iso(to);
  const ids = new Set(sites.map((s) => s.id));
  const byId = new Map(sites.map((s) => [s.id, s]));
  const hosts = new Map(sites.map((s) => [hostOf(s.url), s.id]));
  const siteName = (id: number, url = '') => {
    const s = byId.get(id);
    return s ? label(s) : url;
  };
  const sorted = [...sites].sort((a, b) => label(a).localeCompare(label(b)) || a.id - b.id);

  // Updates applied: the update history's update attempts (installs are not updates), newest first.
  const updates: UpdateHistoryRecord[] = [];
  for (const r of store.all<UpdateHistoryRecord>('update_history')) {
    if (!ids.has(r.site_id) || (r.action ?? 'update') !== 'update') continue;
    const t = Date.parse(r.at);
    if (t >= from && t < to) updates.push(r);
  }
  updates.sort((a, b) => b.at.localeCompare(a.at) || b.id - a.id);
  const byOutcome: Record<string, number> = {};
  for (const u of updates) byOutcome[u.outcome] = (byOutcome[u.outcome] ?? 0) + 1;

  // Uptime: the daily (UTC) check counts of the period's days; incidents overlapping the period.
  let up = 0;
  let down = 0;
  const perSite = new Map<number, { up: number; down: number; incidents: number; downtime: number }>();
  // The histories are read from the store (not held in memory on PostgreSQL), RECORD_READ_BATCH sites at a time, and
  // only their sums are kept.
  for (let i = 0; i < sites.length; i += RECORD_READ_BATCH) {
    const chunk = sites.slice(i, i + RECORD_READ_BATCH);
    const histories = await readHistories(
      store,
      chunk.map((s) => s.id),
    );
    for (const s of chunk) {
      const row = { up: 0, down: 0, incidents: 0, downtime: 0 };
      for (const b of histories.get(s.id)?.days ?? []) {
        const t = b[0]! * 1000;
        if (t < from - DAY + 1 || t >= to) continue;
        row.up += b[1]!;
        row.down += b[2]!;
      }
      up += row.up;
      down += row.down;
      perSite.set(s.id, row);
    }
  }
  const incidents: Array<IncidentRecord & { overlap: number }> = [];
  for (const i of store.all<IncidentRecord>('incidents')) {
    if (!ids.has(i.site_id)) continue;
    const start = Date.parse(i.started_at);
    const end = i.ended_at ? Date.parse(i.ended_at) : now;
    if (start >= to || end < from) continue;
    const overlap = Math.max(0, Math.min(end, to, now) - Math.max(start, from));
    incidents.push({ ...i, overlap });
    const row = perSite.get(i.site_id)!;
    row.incidents++;
    row.downtime += overlap;
  }
  incidents.sort((a, b) => b.started_at.localeCompare(a.started_at) || b.id - a.id);
  const pct = (u: number, d: number) => (u + d ? Math.round((10_000 * u) / (u + d)) / 100 : null);
  const keptFrom = Math.floor((now - (DAYS_KEPT - 1) * DAY) / DAY) * DAY;
  const uptimeSites = sorted
    .map((s) => {
      const r = perSite.get(s.id)!;
      return { site: label(s), uptime_pct: pct(r.up, r.down), incidents: r.incidents, downtime_s: Math.round(r.downtime / 1000) };
    })
    .sort((a, b) => (a.uptime_pct ?? 101) - (b.uptime_pct ?? 101) || b.incidents - a.incidents);
  const upSites = bounded(uptimeSites, SITES_LISTED);
  const inc = bounded(incidents);

  // Vulnerabilities found on and fixed on the sites during the period.
  const found: VulnerabilityLogRecord[] = [];
  const fixed: VulnerabilityLogRecord[] = [];
  for (const v of store.all<VulnerabilityLogRecord>('vulnerability_log')) {
    if (!ids.has(v.site_id) || v.at < fromIso || v.at >= toIso) continue;
    (v.event === 'found' ? found : fixed).push(v);
  }
  const newest = (a: VulnerabilityLogRecord, b: VulnerabilityLogRecord) => b.at.localeCompare(a.at) || b.id - a.id;
  const vf = bounded(found.sort(newest));
  const vx = bounded(fixed.sort(newest));

  // Security findings as of each site's last sync (the child reports its state, not a history).
  const findings: Array<{ site: string; severity: string; message: string }> = [];
  let high = 0;
  let medium = 0;
  let low = 0;
  let withIssues = 0;
  for (const s of src.security) {
    if (!ids.has(s.site_id)) continue;
    withIssues++;
    high += s.high;
    medium += s.medium;
    low += s.low;
    for (const i of s.issues) findings.push({ site: siteName(s.site_id, s.site_url), severity: i.severity, message: i.message });
  }
  const rank: Record<string, number> = { high: 0, medium: 1, low: 2 };
  findings.sort((a, b) => (rank[a.severity] ?? 3) - (rank[b.severity] ?? 3));
  const sec = bounded(findings);

  // Changes made on the sites through the dashboard: the audit log's successful entries naming one of the sites.
  const changes: ReportModel['changes']['items'] = [];
  let changesTotal = 0;
  {
    for await (const e of newestFirst(store)) {
      if (e.at < fromIso) break; // ids are in the order entries were appended
      if (e.at >= toIso || e.outcome !== 'ok' || NOT_A_SITE_CHANGE.test(e.action)) continue;
      const site = namesSite(e.input, ids, hosts);
      if (site === null) continue;
      changesTotal++;
      if (changes.length < LIST_MAX)
        changes.push({
          at: e.at,
          who: e.who_name,
          action: e.action,
          detail: [siteName(site), briefInput(e.input)].filter(Boolean).join(' — '),
        });
    }
  }

  // Costs: each cost's share over these sites, as a monthly equivalent; the period's part pro rata by days.
  let costs: ReportModel['costs'] = null;
  if (src.costs) {
    const agg = new Map<number, { name: string; product_type: string; frequency: string; monthly: number }>();
    let monthly = 0;
    for (const s of sites)
      for (const item of src.costs.siteCosts(s.id).items) {
        const a = agg.get(item.cost.id) ?? {
          name: item.cost.name,
          product_type: item.cost.product_type,
          frequency: item.cost.payment_type === 'lifetime' ? 'lifetime' : (item.cost.renewal_type ?? ''),
          monthly: 0,
        };
        a.monthly += item.monthly;
        monthly += item.monthly;
        agg.set(item.cost.id, a);
      }
    const list = [...agg.values()]
      .map((a) => ({ ...a, monthly: cents(a.monthly) }))
      .sort((a, b) => b.monthly - a.monthly || a.name.localeCompare(b.name));
    const days = (to - from) / DAY;
    const c = bounded(list);
    costs = { monthly: cents(monthly), period_total: cents((monthly * 12 * days) / 365), items: c.items, more: c.more };
  }

  const siteList = bounded(sorted, SITES_LISTED);
  return {
    title: head.title,
    scope_label: head.scope_label,
    period: { from: period.from, to: period.to, time_zone: period.time_zone },
    generated_at: iso(now),
    branding: head.branding,
    sites: { total: sites.length, items: siteList.items.map((s) => ({ id: s.id, name: s.name, url: s.url })), more: siteList.more },
    updates: {
      total: updates.length,
      by_outcome: byOutcome,
      items: updates.slice(0, LIST_MAX).map((u) => ({
        at: u.at,
        site: siteName(u.site_id, u.site_url),
        type: u.type,
        name: u.name || u.slug,
        from: u.from,
        to: u.to,
        outcome: u.outcome,
        reason: u.reason.length > 300 ? `${u.reason.slice(0, 299)}…` : u.reason,
      })),
      more: Math.max(0, updates.length - LIST_MAX),
    },
    uptime: {
      checks: up + down,
      uptime_pct: pct(up, down),
      measured_from: from < keptFrom ? iso(keptFrom).slice(0, 10) : null,
      incidents_total: incidents.length,
      downtime_s: Math.round(incidents.reduce((n, i) => n + i.overlap, 0) / 1000),
      sites: upSites.items,
      sites_more: upSites.more,
      incidents: inc.items.map((i) => ({
        site: siteName(i.site_id),
        started_at: i.started_at,
        ended_at: i.ended_at,
        duration_s: Math.round(((i.ended_at ? Date.parse(i.ended_at) : now) - Date.parse(i.started_at)) / 1000),
        cause: i.cause,
        message: i.message.length > 300 ? `${i.message.slice(0, 299)}…` : i.message,
      })),
      incidents_more: inc.more,
    },
    vulnerabilities: {
      found_total: found.length,
      fixed_total: fixed.length,
      found: vf.items.map((v) => ({
        at: v.at,
        site: siteName(v.site_id, v.site_url),
        title: v.title,
        severity: v.severity,
        item: v.slug,
        version: v.version,
        fixed_in: v.fixed_in,
      })),
      found_more: vf.more,
      fixed: vx.items.map((v) => ({
        at: v.at,
        site: siteName(v.site_id, v.site_url),
        title: v.title,
        item: v.slug,
        from: v.version,
        to: v.fixed_in,
      })),
      fixed_more: vx.more,
    },
    security: { sites_with_issues: withIssues, high, medium, low, items: sec.items, more: sec.more },
    changes: { total: changesTotal, items: changes, more: Math.max(0, changesTotal - changes.length) },
    costs,
  };
}
