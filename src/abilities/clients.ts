// Client abilities: the customers sites belong to (list, read, count, add, update, delete, their sites and
// costs), and get-site-client-v1 (the client of one site).
import { z } from 'zod';
import { defineAbility, type AbilityContext } from './context.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { Page, paginate, perPage } from '../core/paging.js';
import { Client, ClientFields, ClientIds, ClientName, ClientRef, ClientStatus, clientView } from './client-views.js';
import { Cost, costView } from './cost-views.js';
import { alias, Confirm, DryRun, ListedSite, SiteRef, paged, undescribed } from './schemas.js';
import { listedSite } from './views.js';

const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };
const StatusFilter = z.enum(['any', ...ClientStatus.options]).default('any');

export const listClients = defineAbility({
  name: 'list-clients-v1',
  label: 'List clients',
  category: 'svc-clients',
  toolset: 'clients',
  description: 'List clients (the customers sites belong to), by name.',
  input: z
    .object({
      page: Page,
      per_page: perPage(20),
      search: z.string().default(''),
      status: StatusFilter,
      include: ClientIds.optional(),
      exclude: ClientIds.optional(),
    })
    .strict(),
  output: paged(Client),
  annotations: ro,
  execute: ({ page, per_page, ...f }, ctx) => {
    const all = ctx.clients.list(f);
    return { items: paginate(all, page, per_page).map((c) => clientView(ctx, c)), page, per_page, total: all.length };
  },
});

export const countClients = defineAbility({
  name: 'count-clients-v1',
  label: 'Count clients',
  category: 'svc-clients',
  toolset: 'clients',
  description: 'Count clients, all of them or only those of one status.',
  input: z.object({ status: StatusFilter }).strict(),
  output: z.object({ total: z.number().int() }),
  annotations: ro,
  execute: ({ status }, ctx) => ({ total: ctx.clients.count(status) }),
});

export const getClient = defineAbility({
  name: 'get-client-v1',
  label: 'Get client',
  category: 'svc-clients',
  toolset: 'clients',
  description: 'One client by ID or e-mail, with sites_count. Errors: svc_client_not_found (404).',
  input: z.object({ client_id_or_email: ClientRef }).strict(),
  output: Client,
  annotations: ro,
  execute: ({ client_id_or_email }, ctx) => clientView(ctx, ctx.clients.resolveRef(client_id_or_email)),
});

/** Upstream's field names for a client (REST v2 §8, add-client-v1): accepted on every door. */
const CLIENT_ALIASES = {
  client_email: 'email',
  client_phone: 'phone',
  client_facebook: 'facebook',
  client_twitter: 'twitter',
  client_instagram: 'instagram',
  client_linkedin: 'linkedin',
  address: 'address_1',
} as const;
/** Upstream's numeric status, `suspended`: 0 active, 1 suspended, 2 lead, 3 lost. */
const UPSTREAM_STATUS = ['active', 'suspended', 'lead', 'lost'] as const;
const upstreamFields = {
  suspended: alias(
    z.union([z.literal(0), z.literal(1), z.literal(2), z.literal(3)]).optional(),
    'status',
    "Upstream's status: 0 active, 1 suspended, 2 lead, 3 lost (status wins when both are given).",
  ),
  selected_sites: z.array(SiteRef).max(1000).optional().describe('Sites to assign to it (IDs or domains).'),
};
type UpstreamIn = { suspended?: 0 | 1 | 2 | 3; selected_sites?: Array<number | string> };

/** Status from either name; the sites to assign, resolved before the write (404 for an unknown one). */
function fromUpstream(ctx: AbilityContext, i: UpstreamIn & { status?: z.infer<typeof ClientStatus> }) {
  const status = i.status ?? (i.suspended === undefined ? undefined : UPSTREAM_STATUS[i.suspended]);
  const siteIds = (i.selected_sites ?? []).map((ref) => ctx.sites.resolve(ref).id);
  return { status, siteIds };
}

export const addClient = defineAbility({
  name: 'add-client-v1',
  label: 'Add client',
  category: 'svc-clients',
  toolset: 'clients',
  description:
    'Create a client. Assign sites with selected_sites or update-site-v1 (client_id). Errors: ' +
    'svc_client_exists (409) when the e-mail belongs to another client.',
  input: z.object({ name: ClientName, ...ClientFields, ...upstreamFields }).strict(),
  output: Client,
  aliases: CLIENT_ALIASES,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: false },
  execute: async ({ suspended, selected_sites, ...i }, ctx) => {
    const { status, siteIds } = fromUpstream(ctx, { ...i, suspended, selected_sites });
    return clientView(ctx, await ctx.clients.add({ ...i, ...(status ? { status } : {}) }, siteIds));
  },
});

export const updateClient = defineAbility({
  name: 'update-client-v1',
  label: 'Update client',
  category: 'svc-clients',
  toolset: 'clients',
  description:
    'Change a client: only the fields given (as in add-client-v1); email null clears it. Errors: ' +
    'svc_client_not_found (404), svc_client_exists (409).',
  input: z
    .object({
      client_id_or_email: ClientRef,
      name: ClientName.optional(),
      ...undescribed(ClientFields),
      ...upstreamFields,
      ...undescribed({ selected_sites: upstreamFields.selected_sites }),
    })
    .strict(),
  output: Client,
  aliases: CLIENT_ALIASES,
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ client_id_or_email, suspended, selected_sites, ...fields }, ctx) => {
    const c = ctx.clients.resolveRef(client_id_or_email);
    const { status, siteIds } = fromUpstream(ctx, { ...fields, suspended, selected_sites });
    return clientView(ctx, await ctx.clients.edit(c.id, { ...fields, ...(status ? { status } : {}) }, siteIds));
  },
});

/** A client (un)suspended with its sites (domain/clients.ts setSuspended), in upstream's answer shape. */
async function setClientSuspended(ctx: AbilityContext, ref: number | string, suspend: boolean) {
  const { client, sites_count } = await ctx.clients.setSuspended(ctx.clients.resolveRef(ref).id, suspend);
  return { client: clientView(ctx, client), sites_count };
}

export const suspendClient = defineAbility({
  name: 'suspend-client-v1',
  label: 'Suspend client',
  category: 'svc-clients',
  toolset: 'clients',
  description: 'Suspend a client and every site assigned to it (left out of syncs and updates). Errors: ' + 'svc_client_not_found (404).',
  input: z.object({ client_id_or_email: ClientRef }).strict(),
  output: z.object({ suspended: z.literal(true), client: Client, sites_count: z.number().int() }),
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ client_id_or_email }, ctx) => ({
    suspended: true as const,
    ...(await setClientSuspended(ctx, client_id_or_email, true)),
  }),
});

export const unsuspendClient = defineAbility({
  name: 'unsuspend-client-v1',
  label: 'Unsuspend client',
  category: 'svc-clients',
  toolset: 'clients',
  description: 'Make a suspended client active again and unsuspend its sites. Errors: svc_client_not_found (404).',
  input: z.object({ client_id_or_email: ClientRef }).strict(),
  output: z.object({ unsuspended: z.literal(true), client: Client, sites_count: z.number().int() }),
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ client_id_or_email }, ctx) => ({
    unsuspended: true as const,
    ...(await setClientSuspended(ctx, client_id_or_email, false)),
  }),
});

export const countClientSites = defineAbility({
  name: 'count-client-sites-v1',
  label: 'Count sites of a client',
  category: 'svc-clients',
  toolset: 'clients',
  description: 'How many sites are assigned to a client. Errors: svc_client_not_found (404).',
  input: z.object({ client_id_or_email: ClientRef }).strict(),
  output: z.object({ client_id: z.number().int(), total: z.number().int() }),
  annotations: ro,
  execute: ({ client_id_or_email }, ctx) => {
    const c = ctx.clients.resolveRef(client_id_or_email);
    return { client_id: c.id, total: ctx.sites.filter({ client_id: c.id }, (ids) => ctx.tags.sitesInTags(ids)).length };
  },
});

export const deleteClient = defineAbility({
  name: 'delete-client-v1',
  label: 'Delete client',
  category: 'svc-clients',
  toolset: 'clients',
  description:
    'Delete a client. Its sites stay, unassigned; costs lose it as a target. Errors: ' +
    'svc_confirmation_required (400), svc_invalid_input (both flags), svc_client_not_found (404).',
  input: z.object({ client_id_or_email: ClientRef, confirm: Confirm, dry_run: DryRun }).strict(),
  output: z.object({
    deleted: z.boolean(),
    dry_run: z.boolean(),
    client_id: z.number().int(),
    client_name: z.string(),
    client: Client,
    sites_unassigned: z.number().int(),
    costs_affected: z.number().int(),
    would_affect: z
      .object({ id: z.number().int(), name: z.string(), sites_count: z.number().int(), costs_count: z.number().int() })
      .optional(),
    warnings: z.array(z.string()),
  }),
  annotations: { readonly: false, destructive: true, idempotent: false, openWorld: false },
  execute: async (i, ctx) => {
    refuseBothFlags(i);
    const rec = ctx.clients.resolveRef(i.client_id_or_email);
    const client = clientView(ctx, rec);
    const { naming, orphans } = ctx.costs.namingClient(rec.id);
    const base = { client_id: rec.id, client_name: rec.name, client, sites_unassigned: client.sites_count, costs_affected: naming.length };
    if (i.dry_run) {
      const warnings = [`${client.sites_count} site(s) would be unassigned from this client; the sites stay.`];
      if (naming.length) warnings.push(`${naming.length} cost(s) name this client and would lose it as a target.`);
      if (orphans.length)
        warnings.push(
          `${orphans.length} cost(s) would be left without any target (kept and flagged orphaned): ${orphans.map((c) => `${c.name} (ID ${c.id})`).join(', ')}.`,
        );
      return {
        deleted: false,
        dry_run: true,
        ...base,
        would_affect: { id: rec.id, name: rec.name, sites_count: client.sites_count, costs_count: naming.length },
        warnings,
      };
    }
    requireConfirm(i, 'Client deletion requires confirmation. Set confirm:true to proceed.');
    await ctx.clients.remove(rec.id);
    return { deleted: true, dry_run: false, ...base, warnings: [] };
  },
});

const clientPage = { client_id_or_email: ClientRef, page: Page, per_page: perPage(20) };

export const getClientSites = defineAbility({
  name: 'get-client-sites-v1',
  label: 'Sites of a client',
  category: 'svc-clients',
  toolset: 'clients',
  description: 'The sites assigned to a client. Errors: svc_client_not_found (404).',
  input: z.object(clientPage).strict(),
  output: z.object({
    client_id: z.number().int(),
    client_name: z.string(),
    sites: z.array(ListedSite),
    items: z.array(ListedSite),
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int(),
  }),
  annotations: ro,
  execute: ({ client_id_or_email, page, per_page }, ctx) => {
    const c = ctx.clients.resolveRef(client_id_or_email);
    const all = ctx.sites.filter({ client_id: c.id }, (ids) => ctx.tags.sitesInTags(ids));
    const list = paginate(all, page, per_page).map(listedSite);
    return { client_id: c.id, client_name: c.name, sites: list, items: list, page, per_page, total: all.length };
  },
});

export const getClientCosts = defineAbility({
  name: 'get-client-costs-v1',
  label: 'Costs of a client',
  category: 'svc-clients',
  toolset: 'clients',
  module: 'cost-tracker',
  description:
    'Costs that apply to a client: naming it, or covering one of its sites. Errors: svc_client_not_found ' +
    '(404), svc_module_not_available (501).',
  input: z.object(clientPage).strict(),
  output: z.object({
    client_id: z.number().int(),
    client_name: z.string(),
    costs: z.array(Cost),
    items: z.array(Cost),
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int(),
  }),
  annotations: ro,
  execute: ({ client_id_or_email, page, per_page }, ctx) => {
    const c = ctx.clients.resolveRef(client_id_or_email);
    const all = ctx.costs.costsOfClient(c.id);
    const list = paginate(all, page, per_page).map((x) => costView(ctx, x));
    return { client_id: c.id, client_name: c.name, costs: list, items: list, page, per_page, total: all.length };
  },
});

export const getSiteClient = defineAbility({
  name: 'get-site-client-v1',
  label: 'Client of a site',
  category: 'svc-sites',
  toolset: 'clients',
  description: 'The client a site is assigned to (client null when none). Errors: svc_site_not_found (404).',
  input: z.object({ site_id_or_domain: SiteRef }).strict(),
  output: z.object({ site_id: z.number().int(), client: Client.nullable(), message: z.string() }),
  annotations: ro,
  acceptsPost: true,
  execute: ({ site_id_or_domain }, ctx) => {
    const site = ctx.sites.resolve(site_id_or_domain);
    if (site.client_id === null) return { site_id: site.id, client: null, message: 'No client assigned to this site.' };
    const c = ctx.clients.get(site.client_id);
    if (!c) return { site_id: site.id, client: null, message: 'Assigned client not found.' };
    return { site_id: site.id, client: clientView(ctx, c), message: 'Client found.' };
  },
});

export const clientAbilities = [
  listClients,
  countClients,
  getClient,
  addClient,
  updateClient,
  deleteClient,
  getClientSites,
  countClientSites,
  getClientCosts,
  getSiteClient,
  suspendClient,
  unsuspendClient,
];
