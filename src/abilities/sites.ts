// Site registry abilities: list, read, count, edit, delete, suspend. (Child traffic lives in child-sites.ts.)
import { z } from 'zod';
import { defineAbility } from './context.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { errors as catalogue } from '../core/errors.js';
import { Page, paginate, perPage } from '../core/paging.js';
import {
  alias,
  BasicSite,
  Confirm,
  DryRun,
  FullSite,
  ItemError,
  ListedSite,
  SiteRef,
  SiteRefs,
  SiteStatus,
  SiteStatusFilter,
  TagIds,
  paged,
} from './schemas.js';
import { fullSite, listedSite, siteTags } from './views.js';
import type { AbilityContext } from './context.js';
import type { SiteRecord } from '../store/records.js';

const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };
const write = { readonly: false, destructive: false, idempotent: true, openWorld: false };

export const listSites = defineAbility({
  name: 'list-sites-v1',
  label: 'List sites',
  category: 'svc-sites',
  toolset: 'sites',
  description: 'List sites, filtered by status, search (id, name or URL), client or tag.',
  input: z
    .object({
      page: Page,
      per_page: perPage(20),
      status: SiteStatusFilter.default('any'),
      search: z.string().default(''),
      client_id: z.number().int().min(1).optional(),
      tag_id: z.number().int().min(1).optional(),
      include: z.array(z.number().int()).optional().describe('Only these site IDs.'),
      exclude: z.array(z.number().int()).optional().describe('Leave out these site IDs.'),
      with_tags: z.boolean().default(false).describe("Add each site's tags."),
      full: z.boolean().default(false).describe('Full records, as get-site-v1 without stats.'),
    })
    .strict(),
  output: paged(z.union([FullSite, ListedSite.extend({ tags: FullSite.shape.tags }), ListedSite])),
  annotations: ro,
  execute: ({ page, per_page, status, search, client_id, tag_id, include, exclude, with_tags, full }, ctx) => {
    const { items, total } = ctx.sites.page(
      { status, search, client_id, include, exclude, tag_ids: tag_id ? [tag_id] : undefined },
      (ids) => ctx.tags.sitesInTags(ids),
      (page - 1) * per_page,
      per_page,
    );
    const view = (s: SiteRecord) => (full ? fullSite(ctx, s) : with_tags ? { ...listedSite(s), tags: siteTags(ctx, s.id) } : listedSite(s));
    return { items: items.map(view), page, per_page, total };
  },
});

export const getSite = defineAbility({
  name: 'get-site-v1',
  label: 'Get site',
  category: 'svc-sites',
  toolset: 'sites',
  description: 'One site in full; include_stats adds update counts and a health score. Errors: svc_site_not_found ' + '(404).',
  input: z.object({ site_id_or_domain: SiteRef, include_stats: z.boolean().default(false) }).strict(),
  output: FullSite,
  annotations: ro,
  acceptsPost: true,
  execute: ({ site_id_or_domain, include_stats }, ctx) => fullSite(ctx, ctx.sites.resolve(site_id_or_domain), include_stats),
});

export const countSites = defineAbility({
  name: 'count-sites-v1',
  label: 'Count sites',
  category: 'svc-sites',
  toolset: 'sites',
  description: 'Count sites, optionally by status, client or tags.',
  input: z.object({
    status: SiteStatusFilter.default('any'),
    client_id: z.number().int().min(1).optional(),
    tag_ids: TagIds.optional(),
    include: z.array(z.number().int()).optional().describe('Only these site IDs.'),
    exclude: z.array(z.number().int()).optional().describe('Leave out these site IDs.'),
  }),
  output: z.object({ total: z.number().int() }),
  annotations: ro,
  execute: (f, { sites, tags }) => ({
    total:
      f.status === 'any' && f.client_id === undefined && !f.tag_ids?.length && !f.include?.length && !f.exclude?.length
        ? sites.count()
        : sites.filter(f, (ids) => tags.sitesInTags(ids)).length,
  }),
});

export const getSitesBasic = defineAbility({
  name: 'get-sites-basic-v1',
  label: 'List sites (basic)',
  category: 'svc-sites',
  toolset: 'sites',
  description: 'Lightweight site list (id, url, name) for picking sites.',
  input: z.object({
    page: Page,
    per_page: perPage(20),
    status: SiteStatusFilter.default('any'),
    client_id: z.number().int().min(1).optional(),
    tag_ids: TagIds.optional(),
  }),
  output: z.object({
    sites: z.array(BasicSite),
    items: z.array(BasicSite),
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int(),
  }),
  annotations: ro,
  execute: ({ page, per_page, status, client_id, tag_ids }, { sites, tags }) => {
    const all = sites.filter({ status, client_id, tag_ids }, (ids) => tags.sitesInTags(ids));
    const list = paginate(all, page, per_page).map((s) => ({ id: s.id, url: s.url, name: s.name }));
    return { sites: list, items: list, page, per_page, total: all.length };
  },
});

export const updateSite = defineAbility({
  name: 'update-site-v1',
  label: 'Update site',
  category: 'svc-sites',
  toolset: 'sites',
  description:
    "Change a site's name, notes, client (null unassigns), tags (the list replaces them) or health probe settings. Errors: " +
    'svc_site_not_found, svc_client_not_found, svc_tag_not_found (404), svc_invalid_health_url (400).',
  input: z
    .object({
      site_id_or_domain: SiteRef,
      name: z.string().min(1).max(200).optional(),
      notes: z.string().max(10_000).optional(),
      client_id: z.number().int().min(1).nullable().optional(),
      tags: TagIds.optional().describe("Tag IDs; replaces the site's tags."),
      tag_ids: alias(TagIds.optional(), 'tags'),
      health_urls: z
        .array(z.string().max(500))
        .max(10)
        .optional()
        .describe('Paths probed besides the home page and wp-login.php, e.g. "/shop/"; replaces the list.'),
      health_keyword: z.string().max(200).optional().describe("Text the home page must contain to be healthy; '' = the site's title."),
    })
    .strict(),
  output: FullSite,
  annotations: write,
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    if (i.health_urls !== undefined || i.health_keyword !== undefined)
      await ctx.health.configure(site, { urls: i.health_urls, keyword: i.health_keyword });
    const tags = i.tags ?? i.tag_ids;
    const updated = await ctx.sites.edit(site.id, { name: i.name, notes: i.notes, client_id: i.client_id, tags });
    return fullSite(ctx, updated);
  },
});

const DELETE_WARNINGS = [
  'This action is irreversible. The site record will be permanently deleted from the dashboard.',
  'All sync data, site options, and historical information stored in the dashboard will be removed.',
  'Tag associations for this site will be deleted.',
  "The child site is told to forget this dashboard's key; its plugin stays installed and active, so the site can be added again.",
];

export const deleteSite = defineAbility({
  name: 'delete-site-v1',
  label: 'Delete site',
  category: 'svc-sites',
  toolset: 'sites',
  description:
    'Remove a site from the dashboard; its child is told to forget this dashboard first ' +
    '(child_notified). Errors: svc_confirmation_required (400), svc_invalid_input (both flags), ' +
    'svc_site_not_found (404).',
  input: z.object({ site_id_or_domain: SiteRef, confirm: Confirm, dry_run: DryRun }),
  output: z.object({
    dry_run: z.boolean(),
    deleted: z.boolean(),
    site_id: z.number().int(),
    site_url: z.string(),
    site: BasicSite,
    would_affect: z.union([BasicSite, z.array(BasicSite)]),
    warnings: z.array(z.string()),
    child_notified: z.boolean().optional().describe('The child was told to forget our key (absent on dry_run).'),
  }),
  // Upstream's schema is open and bridges send user_confirmed with it (confirm decides).
  ignores: ['user_confirmed'],
  annotations: { readonly: false, destructive: true, idempotent: false, openWorld: true },
  execute: async (i, ctx) => {
    refuseBothFlags(i);
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const basic = { id: site.id, url: site.url, name: site.name };
    const base = { site_id: site.id, site_url: site.url, site: basic };
    if (i.dry_run) return { dry_run: true, deleted: false, ...base, would_affect: basic, warnings: DELETE_WARNINGS };
    requireConfirm(i);
    const told = await ctx.children.removeSite(site);
    const warnings = told.child_error
      ? [`The child was not told to forget this dashboard: ${told.child_error} Clear its connection in wp-admin (MainWP Child settings).`]
      : [];
    return { dry_run: false, deleted: true, ...base, would_affect: [], warnings, child_notified: told.child_notified };
  },
});

/** The spec's reply to a state change of one site, plus the full site (upstream's shape). */
export const siteStateFields = { site_id: z.number().int(), site_url: z.string(), status: SiteStatus, site: FullSite };

export function siteState(ctx: AbilityContext, s: SiteRecord) {
  const site = fullSite(ctx, s);
  return { site_id: s.id, site_url: s.url, status: site.status, site };
}

export const suspendSite = defineAbility({
  name: 'suspend-site-v1',
  label: 'Suspend site',
  category: 'svc-sites',
  toolset: 'sites',
  description: 'Suspend a site: it stays, but is left out of syncs and updates. Errors: svc_site_not_found (404).',
  input: z.object({ site_id_or_domain: SiteRef }),
  output: z.object({ suspended: z.literal(true), ...siteStateFields }),
  annotations: { ...write, siteAction: true },
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const [s] = await ctx.sites.setSuspended([site.id], true);
    return { suspended: true as const, ...siteState(ctx, s) };
  },
});

export const unsuspendSite = defineAbility({
  name: 'unsuspend-site-v1',
  label: 'Unsuspend site',
  category: 'svc-sites',
  toolset: 'sites',
  description: "Lift a site's suspension. Errors: svc_site_not_found (404).",
  input: z.object({ site_id_or_domain: SiteRef }),
  output: z.object({ unsuspended: z.literal(true), ...siteStateFields }),
  annotations: { ...write, siteAction: true },
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    // The spec's state table: unsuspend → connected. A failed sync afterwards will say otherwise.
    const [s] = await ctx.sites.setSuspended([site.id], false);
    return { unsuspended: true as const, ...siteState(ctx, s) };
  },
});

export const suspendSites = defineAbility({
  name: 'suspend-sites-v1',
  label: 'Suspend sites',
  category: 'svc-sites',
  toolset: 'sites',
  description: 'Suspend several sites. Errors: svc_site_not_found (404) when no identifier names a site.',
  input: z.object({ site_ids_or_domains: SiteRefs }).strict(),
  output: z.object({
    queued: z.boolean(),
    job_id: z.string().optional(),
    total: z.number().int().optional(),
    suspended: z.array(BasicSite.extend({ suspended: z.literal(1) })).optional(),
    errors: z.array(ItemError),
    total_suspended: z.number().int().optional(),
    total_errors: z.number().int().optional(),
  }),
  annotations: { ...write, siteAction: true },
  execute: async ({ site_ids_or_domains }, ctx) => {
    const { found, errors } = ctx.sites.resolveMany(site_ids_or_domains);
    if (!found.length) throw catalogue.sitesNotFound(errors);
    const queued = await ctx.jobs.queueIfOver('suspend', found);
    if (queued) return { ...queued, total: found.length, errors };
    await ctx.sites.setSuspended(
      found.map((s) => s.id),
      true,
    );
    await ctx.progress?.({ done: found.length, total: found.length, message: `suspended ${found.length} sites` });
    const suspended = found.map((s) => ({ id: s.id, url: s.url, name: s.name, suspended: 1 as const }));
    return { queued: false, suspended, errors, total_suspended: suspended.length, total_errors: errors.length };
  },
});

export const siteAbilities = [
  listSites,
  getSite,
  countSites,
  getSitesBasic,
  updateSite,
  deleteSite,
  suspendSite,
  unsuspendSite,
  suspendSites,
];
