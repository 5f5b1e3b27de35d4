// Every ability sitefleet serves, in discovery order.
import type { Ability } from '../core/ability.js';
import { Registry } from '../core/registry.js';
import type { Services } from '../services/index.js';
import { siteAbilities } from './sites.js';
import { tagAbilities } from './tags.js';
import { childSiteAbilities, jobAbilities } from './child-sites.js';
import { pluginAbilities } from './plugins.js';
import { clientAbilities } from './clients.js';
import { costAbilities } from './costs.js';
import { userAbilities } from './users.js';
import { postAbilities } from './posts.js';
import { monitorAbilities } from './monitors.js';

export const allAbilities: readonly Ability[] = [...siteAbilities, ...childSiteAbilities, ...pluginAbilities, ...tagAbilities, ...jobAbilities, ...clientAbilities, ...costAbilities, ...userAbilities, ...postAbilities, ...monitorAbilities] as unknown as Ability[];

export const CATEGORIES = [
  { slug: 'svc-sites', label: 'Sites', description: 'Child sites: registry, status, sync, plugins and themes.' },
  { slug: 'svc-tags', label: 'Tags', description: 'Tags (site groups) and the sites and clients in them.' },
  { slug: 'svc-clients', label: 'Clients', description: 'Clients (customers) that sites belong to, with their sites and costs.' },
  { slug: 'svc-costs', label: 'Costs', description: 'Cost tracker: licences, hosting and services linked to sites, tags and clients (module cost-tracker).' },
  { slug: 'svc-users', label: 'Users', description: 'WordPress users on child sites: list, create, edit, delete, CSV import, administrator passwords.' },
  { slug: 'svc-posts', label: 'Posts', description: 'Posts on child sites: list across sites, read, create, edit, change status, delete.' },
  { slug: 'svc-monitors', label: 'Monitoring', description: 'Uptime monitors of every site: heartbeats, incidents, uptime, and the webhooks that announce them.' },
  { slug: 'svc-batch', label: 'Batch operations', description: 'Background jobs of batches over many sites.' },
] as const;

export function buildRegistry(services: Services): Registry {
  return new Registry(allAbilities, services);
}
