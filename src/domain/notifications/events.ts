// Where notifications hear of what happens: the domain's own events (an incident opening or closing, a sync failing),
// each turned into one EventInput with a stable key, so that a place hears of one happening once. Notifications
// subscribe; no ability calls them.
import { unscoped } from '../../core/scope.js';
import { log } from '../../log.js';
import type { ChildSiteService } from '../child-sites.js';
import type { ClientService } from '../clients.js';
import type { JobService } from '../jobs.js';
import type { JobRecord } from '../../store/records.js';
import type { MonitorEvent, MonitorService } from '../monitors.js';
import type { SiteService } from '../sites.js';
import type { TagService } from '../tags.js';
import type { EventInput, NotificationService } from './service.js';

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
export function jobEvent(job: JobRecord): EventInput {
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

export function wireNotifications(
  n: NotificationService,
  from: {
    monitors: MonitorService;
    children: ChildSiteService;
    jobs: JobService;
    sites: SiteService;
    tags: TagService;
    clients: ClientService;
  },
): void {
  // Rules are the dashboard's, not the caller's: an event a scoped call caused is matched against every rule, outside
  // that call's scope (a rule on a tag or client the caller cannot see still hears of it).
  const emit = (e: EventInput) =>
    unscoped(() => void n.emit(e).catch((err) => log('error', 'notification event lost', { event: e.event, err: String(err) })));
  from.monitors.onEvent((e) => emit(monitorEvent(e)));
  from.children.syncFailureListeners.add((site, error) => emit(syncFailedEvent(site, error, n.now())));
  from.jobs.finishedListeners.add((job) => emit(jobEvent(job)));
  from.sites.onRemove.also((tx, id) => n.forget(tx, 'site_ids', id));
  from.tags.onRemove.also((tx, id) => n.forget(tx, 'tag_ids', id));
  from.clients.onRemove.also((tx, id) => n.forget(tx, 'client_ids', id));
}
