// Every ability sitefleet serves, in discovery order.
import type { Ability } from '../core/ability.js';
import type { z } from 'zod';
import { Registry, type RunOptions } from '../core/registry.js';
import type { Services } from '../domain/index.js';
import { siteAbilities } from './sites.js';
import { tagAbilities } from './tags.js';
import { childSiteAbilities, jobAbilities } from './child-sites.js';
import { pluginAbilities } from './plugins.js';
import { clientAbilities } from './clients.js';
import { costAbilities } from './costs.js';
import { userAbilities } from './users.js';
import { postAbilities } from './posts.js';
import { fleetSecurityAbilities } from './fleet-security.js';
import { pageAbilities } from './pages.js';
import { clientFieldAbilities } from './client-fields.js';
import { settingsAbilities } from './settings.js';
import { fleetToolAbilities } from './fleet-tools.js';
import { updateAbilities } from './updates.js';
import { monitorAbilities } from './monitors.js';
import { vulnerabilityAbilities } from './vulnerabilities.js';
import { auditAbilities, teamAbilities } from './team.js';
import { healthAbilities } from './health.js';
import { packageAbilities } from './packages.js';
import { notificationAbilities } from './notifications.js';
import { reportAbilities } from './reports.js';
import { updatePolicyAbilities } from './update-policies.js';
import { adminLoginAbilities } from './admin-login.js';

const families = [
  ...siteAbilities,
  ...childSiteAbilities,
  ...pluginAbilities,
  ...packageAbilities,
  ...adminLoginAbilities,
  ...fleetSecurityAbilities,
  ...tagAbilities,
  ...jobAbilities,
  ...clientAbilities,
  ...costAbilities,
  ...userAbilities,
  ...postAbilities,
  ...pageAbilities,
  ...clientFieldAbilities,
  ...settingsAbilities,
  ...fleetToolAbilities,
  ...updateAbilities,
  ...healthAbilities,
  ...updatePolicyAbilities,
  ...monitorAbilities,
  ...notificationAbilities,
  ...reportAbilities,
  ...vulnerabilityAbilities,
  ...teamAbilities,
  ...auditAbilities,
];
export const allAbilities: readonly Ability[] = families as unknown as Ability[];

/** Every ability by its name, with its own input and output types. */
type AnyAbility = (typeof families)[number];
export type AbilityName = AnyAbility['name'];
// By membership, not Extract: an ability made by a factory (get-abandoned-plugins-v1, update-site-themes-v1, …) has a
// union of names, and Extract would find none of them.
type Named<N extends AbilityName> = AnyAbility extends infer A ? (A extends { name: infer M } ? (N extends M ? A : never) : never) : never;
export type InputOf<N extends AbilityName> = z.input<Named<N>['input']>;
export type OutputOf<N extends AbilityName> = z.output<Named<N>['output']>;

/** The registry of this process, whose `call` knows each ability's input and output types. */
export interface FleetRegistry extends Registry<Services> {
  call<N extends AbilityName>(name: N, input: InputOf<N>, opts: RunOptions): Promise<OutputOf<N>>;
}

export const CATEGORIES = [
  { slug: 'svc-sites', label: 'Sites', description: 'Child sites: registry, status, sync, plugins and themes.' },
  { slug: 'svc-tags', label: 'Tags', description: 'Tags (site groups) and the sites and clients in them.' },
  { slug: 'svc-clients', label: 'Clients', description: 'Clients (customers) that sites belong to, with their sites and costs.' },
  {
    slug: 'svc-costs',
    label: 'Costs',
    description: 'Cost tracker: licences, hosting and services linked to sites, tags and clients (module cost-tracker).',
  },
  {
    slug: 'svc-users',
    label: 'Users',
    description: 'WordPress users on child sites: list, create, edit, delete, CSV import, administrator passwords.',
  },
  { slug: 'svc-posts', label: 'Posts', description: 'Posts on child sites: list across sites, read, create, edit, change status, delete.' },
  { slug: 'svc-pages', label: 'Pages', description: 'Pages on child sites: list across sites, read, create, edit, change status, delete.' },
  {
    slug: 'svc-settings',
    label: 'Settings',
    description: 'Dashboard settings: sync schedule and concurrency, queue threshold, cost product types and payment methods.',
  },
  {
    slug: 'svc-updates',
    label: 'Updates',
    description: 'Core, plugin, theme and translation updates across the fleet: list, apply, ignore.',
  },
  {
    slug: 'svc-monitors',
    label: 'Monitoring',
    description: 'Uptime monitors of every site: heartbeats, incidents, uptime, and the webhooks that announce them.',
  },
  {
    slug: 'svc-notifications',
    label: 'Notifications',
    description:
      'Notification channels (e-mail, Slack, Discord, Teams, webhooks), the rules that send events to them, and the delivery log.',
  },
  {
    slug: 'svc-vulnerabilities',
    label: 'Vulnerabilities',
    description: 'Known vulnerabilities of installed core, plugin and theme versions, from a feed; the one-call fix.',
  },
  { slug: 'svc-batch', label: 'Batch operations', description: 'Background jobs of batches over many sites.' },
] as const;

export function buildRegistry(services: Services): FleetRegistry {
  // The names a key's allow / deny lists may hold (domain/auth.ts checks them).
  services.auth.toolNames = new Set(allAbilities.map((a) => a.name));
  return new Registry(allAbilities, services) as FleetRegistry;
}
