// The services every ability receives in its context, built once per process over one store.
import type { Config } from '../config.js';
import type { Store } from '../store/engine.js';
import { openStore } from '../store/open.js';
import { AuthService } from './auth.js';
import { SettingsService } from './settings.js';
import { SiteService } from './sites.js';
import { TagService } from './tags.js';
import { ClientService } from './clients.js';
import { CostService } from './costs.js';
import { ChildSiteService } from './child-sites.js';
import { JobService } from './jobs.js';

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
}

export async function openServices(config: Config): Promise<Services> {
  const store = await openStore(config);
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
  // Removing a record lets go of every reference to it, in the same write.
  sites.onRemove.also((tx, id) => tags.forgetSite(tx, id));
  sites.onRemove.also((tx, id) => costs.forgetSite(tx, id));
  tags.onRemove.also((tx, id) => costs.forgetTag(tx, id));
  clients.onRemove.also((tx, id) => sites.unassignClient(tx, id));
  clients.onRemove.also((tx, id) => costs.forgetClient(tx, id));
  jobs.define('suspend', async (s) => ({ ok: true, commit: (tx) => sites.patch(tx, s.id, { suspended: true }) }));
  return { config, store, sites, tags, clients, costs, auth: new AuthService(store), settings, children, jobs };
}

/** Stop job runners (jobs stay resumable), close child connections, flush writes. */
export async function closeServices(s: Services): Promise<void> {
  await s.jobs.stop();
  await s.children.close();
  await s.store.close();
}
