// Where notifications hear of what happens: the domain's own events, each turned into one EventInput with a stable
// key, so that a place hears of one happening once. Notifications subscribe; no ability calls them.
//   site.down / site.up          an uptime incident opens / closes (monitors)
//   site.sync_failed             a sync failed at the site (child sites)
//   update.failed / .rolled_back / .rollback_failed   an update attempt's outcome, as the update history records it
//   vulnerability.found / .fixed one per site and item (the vulnerability service's matches)
//   user.admin_created / plugin.installed_outside     what a sync shows that the previous one did not, and sitefleet
//                                did not do (an install by sitefleet is in the stored data and the history already)
//   tls.expiring                 the TLS watch (tls-watch.ts) saw a certificate within a rule's tls_days
//   job.finished                 a background job ended
import { unscoped } from '../../core/scope.js';
import { log } from '../../log.js';
import type { ChildSiteService } from '../child-sites.js';
import type { ClientService } from '../clients.js';
import type { JobService } from '../jobs.js';
import type { UpdateHistoryRecord } from '../../store/health-records.js';
import type { JobState, SiteData } from '../../store/records.js';
import type { MonitorEvent, MonitorService } from '../monitors.js';
import type { SiteService } from '../sites.js';
import type { TagService } from '../tags.js';
import type { UpdateHistoryService } from '../update-history.js';
import type { VulnEvent, VulnerabilityService } from '../vulnerabilities/service.js';
import type { EventInput, NotificationService } from './service.js';

type SiteRef = { id: number; name: string; url: string };
/** Events of one kind from one sync at most (a bulk change on a site is not 500 messages); the rest are logged. */
export const SYNC_CHANGE_EVENTS = 20;

export function monitorEvent(e: MonitorEvent): EventInput {
  const name = e.site.name || e.site.url;
  if (e.event === 'site.down')
    return {
      event: 'site.down',
      key: `site.down:incident:${e.incident.id}`,
      site: e.site,
      title: `Site down: ${name}`,
      text: `${e.site.url} is down since ${e.incident.started_at} (${e.incident.cause}: ${e.incident.message}).`,
      data: { incident: e.incident },
    };
  return {
    event: 'site.up',
    key: `site.up:incident:${e.incident.id}`,
    site: e.site,
    title: `Site up again: ${name}`,
    text: `${e.site.url} is up again since ${e.incident.ended_at ?? ''} (down since ${e.incident.started_at}).`,
    data: { incident: e.incident },
  };
}

export function syncFailedEvent(
  site: { id: number; name: string; url: string },
  error: { code: string; message: string },
  at: number,
): EventInput {
  return {
    event: 'site.sync_failed',
    // One failure run per site a minute apart at most is one happening; a later failure is a new one.
    key: `site.sync_failed:${site.id}:${Math.floor(at / 60_000)}`,
    site: { id: site.id, name: site.name, url: site.url },
    title: `Sync failed: ${site.name || site.url}`,
    text: `${site.url} could not be synced: ${error.message} (${error.code}).`,
    data: { error: { code: error.code, message: error.message } },
  };
}

/** A background job ended: completed (with its per-site failures counted), failed or cancelled. Fleet-wide (no site). */
export function jobEvent(job: JobState): EventInput {
  const failed = job.errors.length;
  const how = job.status === 'completed' ? 'finished' : job.failure === 'cancelled' ? 'cancelled' : 'failed';
  return {
    event: 'job.finished',
    key: `job.finished:${job.job_id}`,
    site: null,
    title: `Job ${how}: ${job.type} of ${job.sites.length} site${job.sites.length === 1 ? '' : 's'}`,
    text:
      `${job.job_id}: ${job.succeeded} succeeded, ${failed} failed` +
      (job.failure && job.failure !== 'cancelled' ? ` (${job.failure})` : '') +
      (failed ? `. First error: ${job.errors[0]!.message}` : '.'),
    data: {
      job: { job_id: job.job_id, type: job.type, status: job.status, sites: job.sites.length, succeeded: job.succeeded, failed },
    },
  };
}

const UPDATE_EVENT = {
  failed: ['update.failed', 'Update failed'],
  rolled_back: ['update.rolled_back', 'Update rolled back'],
  rollback_failed: ['update.rollback_failed', 'Rollback failed'],
} as const;

/** An update attempt that did not end well (installs and good outcomes are not news). */
export function updateEvent(r: UpdateHistoryRecord, siteName: string): EventInput | null {
  if ((r.action ?? 'update') !== 'update') return null;
  if (r.outcome !== 'failed' && r.outcome !== 'rolled_back' && r.outcome !== 'rollback_failed') return null;
  const [event, what] = UPDATE_EVENT[r.outcome];
  const versions = r.to ? ` ${r.from ?? '?'} → ${r.to}` : '';
  return {
    event,
    key: `${event}:history:${r.id}`,
    site: { id: r.site_id, name: siteName, url: r.site_url },
    title: `${what}: ${r.name || r.slug} on ${siteName || r.site_url}`,
    text: `${r.type} ${r.name || r.slug}${versions} on ${r.site_url}: ${r.reason || r.code}${r.code ? ` (${r.code})` : ''}.`,
    data: {
      update: {
        history_id: r.id,
        type: r.type,
        slug: r.slug,
        name: r.name,
        from: r.from,
        to: r.to,
        outcome: r.outcome,
        code: r.code,
        safe: r.safe,
      },
    },
  };
}

/** One event per site and item of a vulnerability.found / .fixed (rules choose sites). */
export function vulnerabilityEvents(e: VulnEvent): EventInput[] {
  const v = (e.data.vulnerability ?? {}) as { id?: string; key?: string; cve?: string | null; title?: string; severity?: string | null };
  const installs = (e.data.installs ?? []) as Array<{
    site: SiteRef;
    type: string;
    slug: string;
    version?: string | null;
    old_version?: string | null;
    fixed_in?: string | null;
  }>;
  const label = v.cve || v.id || v.key || 'a vulnerability';
  return installs.map((i) => {
    const found = e.event === 'vulnerability.found';
    const name = i.site.name || i.site.url;
    return {
      event: e.event,
      key: `${e.event}:${v.key ?? v.id}:${i.site.id}:${i.type}:${i.slug}:${found ? i.version : i.old_version}`,
      site: { id: i.site.id, name: i.site.name, url: i.site.url },
      title: found ? `Vulnerability found: ${i.slug} on ${name}` : `Vulnerability fixed: ${i.slug} on ${name}`,
      text: found
        ? `${i.type} ${i.slug} ${i.version ?? ''} on ${i.site.url} is affected by ${label}${v.title ? `: ${v.title}` : ''}` +
          `${v.severity ? ` (${v.severity})` : ''}. ${i.fixed_in ? `Fixed in ${i.fixed_in}.` : 'No fix is known yet.'}`
        : `${i.type} ${i.slug} on ${i.site.url} is no longer affected by ${label} (${i.old_version ?? '?'} → ${i.version ?? 'removed'}).`,
      data: {
        vulnerability: { id: v.id ?? null, key: v.key ?? null, cve: v.cve ?? null, title: v.title ?? null, severity: v.severity ?? null },
        install: {
          type: i.type,
          slug: i.slug,
          version: i.version ?? null,
          old_version: i.old_version ?? null,
          fixed_in: i.fixed_in ?? null,
        },
      },
    };
  });
}

/**
 * What a sync shows that the one before did not: a new administrator (by user id), a plugin installed (by file) that
 * sitefleet did not install. Nothing on a site's first data, nor from a side that carries no users (a registration or
 * an action's sync block has none): that is not knowledge of a change.
 */
export function syncChangeEvents(
  site: SiteRef,
  prev: SiteData | null,
  next: SiteData,
  installedBySitefleet: (slug: string) => boolean,
): EventInput[] {
  if (!prev) return [];
  const out: EventInput[] = [];
  const name = site.name || site.url;
  if (prev.users.length && next.users.length) {
    const before = new Set(prev.users.map((u) => u.id));
    const admins = next.users.filter((u) => u.role === 'administrator' && !before.has(u.id));
    for (const u of admins.slice(0, SYNC_CHANGE_EVENTS))
      out.push({
        event: 'user.admin_created',
        key: `user.admin_created:${site.id}:${u.id}`,
        site,
        title: `New administrator on ${name}: ${u.login}`,
        text: `${site.url} has a new administrator account, ${u.login} (${u.email}, registered ${u.registered}), that was not there at the previous sync.`,
        data: { user: { id: u.id, login: u.login, email: u.email, registered: u.registered } },
      });
    if (admins.length > SYNC_CHANGE_EVENTS)
      log('warn', 'new administrators over the per-sync event limit were not announced', { site: site.id, count: admins.length });
  }
  const had = new Set(prev.plugins.map((p) => p.slug));
  const fresh = next.plugins.filter((p) => !had.has(p.slug) && !installedBySitefleet(p.slug));
  for (const p of fresh.slice(0, SYNC_CHANGE_EVENTS))
    out.push({
      event: 'plugin.installed_outside',
      key: `plugin.installed_outside:${site.id}:${p.slug}:${p.version}`,
      site,
      title: `Plugin installed outside sitefleet on ${name}: ${p.name || p.slug}`,
      text: `${p.name || p.slug} ${p.version} (${p.slug}, ${p.active ? 'active' : 'inactive'}) appeared on ${site.url} since the previous sync; sitefleet did not install it.`,
      data: { plugin: { slug: p.slug, name: p.name, version: p.version, active: p.active } },
    });
  if (fresh.length > SYNC_CHANGE_EVENTS)
    log('warn', 'plugins installed outside sitefleet over the per-sync event limit were not announced', {
      site: site.id,
      count: fresh.length,
    });
  return out;
}

/** A certificate within `days_left` of its end (negative: expired already). */
export function tlsEvent(site: SiteRef, cert: { expires: string; valid: boolean; error: string | null }, daysLeft: number): EventInput {
  const name = site.name || site.url;
  return {
    event: 'tls.expiring',
    key: `tls.expiring:${site.id}:${cert.expires}`,
    site,
    title:
      daysLeft < 0 ? `TLS certificate expired: ${name}` : `TLS certificate expires in ${daysLeft} day${daysLeft === 1 ? '' : 's'}: ${name}`,
    text: `The certificate of ${site.url} ${daysLeft < 0 ? 'expired' : 'expires'} on ${cert.expires}${cert.valid ? '' : ` (not valid now: ${cert.error ?? 'unknown'})`}.`,
    data: { days_left: daysLeft, certificate: { expires: cert.expires, valid: cert.valid, error: cert.error } },
  };
}

export function wireNotifications(
  n: NotificationService,
  from: {
    monitors: MonitorService;
    children: ChildSiteService;
    jobs: JobService;
    sites: SiteService;
    tags: TagService;
    clients: ClientService;
    history: UpdateHistoryService;
    vulnerabilities: VulnerabilityService;
  },
): void {
  // Rules are the dashboard's, not the caller's: an event a scoped call caused is matched against every rule, outside
  // that call's scope (a rule on a tag or client the caller cannot see still hears of it).
  const emit = (e: EventInput) =>
    unscoped(() => void n.emit(e).catch((err) => log('error', 'notification event lost', { event: e.event, err: String(err) })));
  from.monitors.onEvent((e) => emit(monitorEvent(e)));
  from.children.syncFailureListeners.add((site, error) => emit(syncFailedEvent(site, error, n.now())));
  from.jobs.finishedListeners.add((job) => emit(jobEvent(job)));
  from.history.recordedListeners.add((entries) => {
    for (const r of entries) {
      const e = updateEvent(r, from.sites.get(r.site_id)?.name ?? '');
      if (e) emit(e);
    }
  });
  from.vulnerabilities.eventListeners.add((e) => vulnerabilityEvents(e).forEach(emit));
  from.children.snapshotHooks.add((tx, siteId, data, prev) => {
    if (!prev || !n.wants('user.admin_created', 'plugin.installed_outside')) return;
    const site = from.sites.get(siteId);
    if (!site) return;
    const installed = (slug: string) =>
      from.history.list({ site_id: siteId, action: 'install', type: 'plugin', slug, outcomes: ['installed'] }, 1, 1).total > 0;
    const events = syncChangeEvents({ id: site.id, name: site.name, url: site.url }, prev, data, installed);
    // Once the write that stores the data is committed (this hook runs inside it), and only if the site is still there.
    if (events.length) tx.afterCommit(() => from.sites.get(siteId) && events.forEach(emit));
  });
  from.sites.onRemove.also((tx, id) => n.forget(tx, 'site_ids', id));
  from.tags.onRemove.also((tx, id) => n.forget(tx, 'tag_ids', id));
  from.clients.onRemove.also((tx, id) => n.forget(tx, 'client_ids', id));
}
