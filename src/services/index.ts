// The services every ability receives in its context, built once per process over one store.
import type { Config } from '../config.js';
import { Store } from '../store/store.js';
import { AuthService } from './auth.js';
import { SettingsService } from './settings.js';
import { SiteService } from './sites.js';
import { TagService } from './tags.js';
import { ClientService } from './clients.js';

export interface Services {
  config: Config;
  store: Store;
  sites: SiteService;
  tags: TagService;
  clients: ClientService;
  auth: AuthService;
  settings: SettingsService;
}

export async function openServices(config: Config): Promise<Services> {
  const store = await Store.open(config.dataDir);
  return {
    config,
    store,
    sites: new SiteService(store),
    tags: new TagService(store),
    clients: new ClientService(store),
    auth: new AuthService(store),
    settings: new SettingsService(store),
  };
}

export async function closeServices(s: Services): Promise<void> {
  await s.store.close();
}
