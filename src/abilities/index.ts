// Every ability sitefleet serves, in discovery order.
import type { Ability } from '../core/ability.js';
import { Registry } from '../core/registry.js';
import type { Services } from '../services/index.js';
import { siteAbilities } from './sites.js';
import { tagAbilities } from './tags.js';
import { childSiteAbilities, jobAbilities } from './child-sites.js';

export const allAbilities: readonly Ability[] = [...siteAbilities, ...childSiteAbilities, ...tagAbilities, ...jobAbilities] as unknown as Ability[];

export const CATEGORIES = [
  { slug: 'svc-sites', label: 'Sites', description: 'Child sites: registry, status, sync, plugins and themes.' },
  { slug: 'svc-tags', label: 'Tags', description: 'Tags (site groups) and the sites and clients in them.' },
  { slug: 'svc-batch', label: 'Batch operations', description: 'Background jobs of batches over many sites.' },
] as const;

export function buildRegistry(services: Services): Registry {
  return new Registry(allAbilities, services);
}
