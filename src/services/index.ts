// The services every ability receives in its context, built once per process over one store.
import type { Config } from '../config.js';
import { Store } from '../store/store.js';
import { AuthService } from './auth.js';
import { SettingsService } from './settings.js';
import { SiteService } from './sites.js';
import { TagService } from './tags.js';
import { ClientService } from './clients.js';
import { CostService } from './costs.js';
import { ChildSiteService } from './child-sites.js';
import { JobService } from './jobs.js';
import { MonitorService } from './monitors.js';
import { WebhookService } from './webhooks.js';

export interface Services {
  config: Config;
  store: Store;
  sites: SiteService;
  tags: TagService;
  clients: ClientService;
  costs: CostService;
  auth: AuthService;
  settings: SettingsService;
  children: ChildSiteService;
  jobs: JobService;
  monitors: MonitorService;
  webhooks: WebhookService;
}

export async function openServices(config: Config): Promise<Services> {
  const store = await Store.open(config.dataDir);
  const sites = new SiteService(store);
  const tags = new TagService(store);
  const clients = new ClientService(store);
  const costs = new CostService(store, sites, tags, clients);
  const settings = new SettingsService(store);
  const children = new ChildSiteService(store, config, sites, tags, clients, settings);
  const jobs = new JobService(store, sites, config);
  jobs.define('sync', (s) => children.fetchSync(s));
  jobs.define('check', (s) => children.fetchCheck(s));
  jobs.define('reconnect', (s) => children.fetchReconnect(s));
  jobs.define('disconnect', (s) => children.fetchDisconnect(s));
  jobs.define('suspend', async (s) => ({ ok: true, commit: (tx) => sites.patch(tx, s.id, { suspended: true }) }));
  const monitors = new MonitorService(store, config, sites);
  const webhooks = new WebhookService(store, config);
  monitors.onEvent((e) => void webhooks.emit(e.event, { site: e.site, incident: e.incident }).catch(() => {}));
  children.syncFailureListeners.add((site, error) => void webhooks.emit('site.sync_failed', {
    site: { id: site.id, url: site.url, name: site.name }, error: { code: error.code, message: error.message },
  }).catch(() => {}));
  return { config, store, sites, tags, clients, costs, auth: new AuthService(store), settings, children, jobs, monitors, webhooks };
}

/** Scheduled uptime checks and webhook retries (serve does; tests that need them too). */
export function startMonitoring(s: Services): void {
  s.monitors.start();
  s.webhooks.start();
}

/** Stop job runners (jobs stay resumable), close child connections, flush writes. */
export async function closeServices(s: Services): Promise<void> {
  await s.jobs.stop();
  await s.monitors.stop();
  await s.webhooks.stop();
  await s.children.close();
  await s.store.close();
}
