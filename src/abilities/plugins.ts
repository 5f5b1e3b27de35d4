// Plugins and themes on each site (lists from the stored data, actions on the child), the fleet's abandoned
// plugins and themes, a site's security snapshot and its change log.
import { z } from 'zod';
import { defineAbility, type AbilityContext } from './context.js';
import { refuseBothFlags } from '../core/confirm.js';
import { errors as catalogue } from '../core/errors.js';
import { Page, paginate, perPage } from '../core/paging.js';
import { SecurityFinding, SiteChange, type SiteTheme } from '../child/snapshot.js';
import { SlugError } from '../domain/plugin-actions.js';
import { AbandonedItem, activeTheme, type ItemKind } from '../domain/site-data.js';
import { alias, Confirm, DryRun, ListedSite, SiteRef, paged } from './schemas.js';
import { listedSite } from './views.js';
import type { SiteRecord } from '../store/records.js';

const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };
const remote = { readonly: false, destructive: false, idempotent: true, openWorld: true };
const removal = { readonly: false, destructive: true, idempotent: false, openWorld: true };

const Slugs = z.array(z.string().min(1).max(500)).min(1).max(100);
const ItemStatus = z.enum(['all', 'active', 'inactive']);

/** A plugin or theme in a listing (abilities reference §2.4: exactly these keys, in this order). */
const ListItem = z.object({
  slug: z.string(),
  name: z.string(),
  version: z.string(),
  active: z.boolean(),
  update_version: z.string().nullable(),
});
/** A plugin or theme in the answer of a write operation: the listing keys plus has_update. */
const ActionItem = z.object({
  slug: z.string(),
  name: z.string(),
  version: z.string(),
  active: z.boolean(),
  has_update: z.boolean(),
  update_version: z.string().nullable(),
});

const listItem = (i: SiteTheme): z.infer<typeof ListItem> => ({
  slug: i.slug,
  name: i.name || i.slug,
  version: i.version,
  active: i.active,
  update_version: i.update_version,
});
const actionItem = (i: SiteTheme): z.infer<typeof ActionItem> => ({
  slug: i.slug,
  name: i.name || i.slug,
  version: i.version,
  active: i.active,
  has_update: i.update_version !== null,
  update_version: i.update_version,
});

/** The site an answer is about, site_id and site_url and its listed view (REST shows it beside every per-site answer). */
const SiteAbout = ListedSite.describe('The site.');
const Where = { site_id: z.number().int(), site_url: z.string(), site: SiteAbout };
const where = (s: SiteRecord) => ({ site_id: s.id, site_url: s.url, site: listedSite(s) });

/** Both `slugs` and upstream's alias are optional in the schema; one of them is required. */
function slugsOf(ability: string, slugs: string[] | undefined): string[] {
  if (slugs) return slugs;
  const reason = 'slugs is a required property of input.';
  throw catalogue.abilityInput(ability, reason, 'slugs');
}

// ---- listings (stored data; no child call) ----

const ListInput = {
  site_id_or_domain: SiteRef,
  status: ItemStatus.default('all'),
  has_update: z.boolean().optional().describe('true: only items with an update.'),
  search: z.string().max(200).optional().describe('Part of the slug or name.'),
  page: z.number().int().min(1).optional().describe('Page (1-based); without page and per_page the whole list is returned.'),
  per_page: z.number().int().min(1).max(100).optional().describe('Items per page (1-100, default 50 when page is given).'),
};
const ListOutput = {
  ...Where,
  total: z.number().int(),
  page: z.number().int().optional(),
  per_page: z.number().int().optional(),
  synced_at: z.string().nullable(),
};

function listOf<T extends SiteTheme>(items: T[], i: { page?: number; per_page?: number }) {
  if (i.page === undefined && i.per_page === undefined) return { items, total: items.length, paging: {} };
  const page = i.page ?? 1;
  const per_page = i.per_page ?? 50;
  return { items: paginate(items, page, per_page), total: items.length, paging: { page, per_page } };
}

export const getSitePlugins = defineAbility({
  name: 'get-site-plugins-v1',
  label: 'List site plugins',
  category: 'svc-sites',
  toolset: 'plugins',
  description:
    'The plugins installed on a site as of its last sync; slug is the plugin file the plugin actions ' +
    'take. Errors: svc_site_not_found (404).',
  input: z.object({ ...ListInput, must_use: z.boolean().optional().describe('true: must-use only; false: regular only.') }).strict(),
  output: z.object({ ...ListOutput, plugins: z.array(ListItem) }),
  annotations: ro,
  acceptsPost: true,
  execute: async (i, ctx) => {
    const { site, data, items } = await ctx.siteData.items(i.site_id_or_domain, 'plugins', i);
    const l = listOf(items, i);
    return { ...where(site), plugins: l.items.map(listItem), total: l.total, ...l.paging, synced_at: data.synced_at || null };
  },
});

export const getSiteThemes = defineAbility({
  name: 'get-site-themes-v1',
  label: 'List site themes',
  category: 'svc-sites',
  toolset: 'plugins',
  description: 'The themes installed on a site as of its last sync, and active_theme. Errors: svc_site_not_found ' + '(404).',
  input: z.object(ListInput).strict(),
  output: z.object({ ...ListOutput, active_theme: z.string(), themes: z.array(ListItem) }),
  annotations: ro,
  acceptsPost: true,
  execute: async (i, ctx) => {
    const { site, data, items } = await ctx.siteData.items(i.site_id_or_domain, 'themes', i);
    const l = listOf(items, i);
    return {
      ...where(site),
      active_theme: activeTheme(data.themes),
      themes: l.items.map(listItem),
      total: l.total,
      ...l.paging,
      synced_at: data.synced_at || null,
    };
  },
});

// ---- actions on the child ----

const SITE_ERRORS =
  'Errors: svc_site_not_found (404), svc_site_suspended / svc_site_disconnected (409, nothing sent), ' +
  'svc_child_unreachable / svc_child_not_detected / svc_child_auth_failed (502), svc_child_timeout (504).';

const PluginSlugs = {
  site_id_or_domain: SiteRef,
  slugs: Slugs.optional().describe('Plugin files, e.g. ["akismet/akismet.php"].'),
  plugins: alias(Slugs.optional(), 'slugs'),
};

export const activateSitePlugins = defineAbility({
  name: 'activate-site-plugins-v1',
  label: 'Activate plugins',
  category: 'svc-sites',
  toolset: 'plugins',
  description: 'Activate installed plugins on one site, by plugin file slug (e.g. "hello.php"). ' + SITE_ERRORS,
  input: z.object(PluginSlugs),
  output: z.object({ ...Where, activated: z.array(ActionItem), errors: z.array(SlugError) }),
  annotations: { ...remote, siteAction: true },
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const r = await ctx.pluginActions.pluginAction(site, 'activate', slugsOf('activate-site-plugins-v1', i.slugs ?? i.plugins));
    return { ...where(site), activated: r.done.map(actionItem), errors: r.errors };
  },
});

export const deactivateSitePlugins = defineAbility({
  name: 'deactivate-site-plugins-v1',
  label: 'Deactivate plugins',
  category: 'svc-sites',
  toolset: 'plugins',
  description: 'Deactivate plugins on one site, by plugin file slug (never the child plugin itself). ' + SITE_ERRORS,
  input: z.object(PluginSlugs),
  output: z.object({ ...Where, deactivated: z.array(ActionItem), errors: z.array(SlugError) }),
  annotations: { ...remote, siteAction: true },
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const r = await ctx.pluginActions.pluginAction(site, 'deactivate', slugsOf('deactivate-site-plugins-v1', i.slugs ?? i.plugins));
    return { ...where(site), deactivated: r.done.map(actionItem), errors: r.errors };
  },
});

const DeleteOutput = z.object({
  dry_run: z.boolean(),
  ...Where,
  deleted: z.array(ActionItem),
  would_affect: z.array(ActionItem),
  count: z.number().int(),
  warnings: z.array(z.string()),
  errors: z.array(SlugError),
});

/** A delete's input (both flags, the site, the slugs: in that order), then the service's confirm / dry_run rule. */
async function deleteItems(
  ctx: AbilityContext,
  kind: ItemKind,
  ability: string,
  i: { site_id_or_domain: number | string; slugs?: string[]; confirm: boolean; dry_run: boolean },
  alias: string[] | undefined,
): Promise<z.input<typeof DeleteOutput>> {
  refuseBothFlags(i);
  const site = ctx.sites.resolve(i.site_id_or_domain);
  const slugs = slugsOf(ability, i.slugs ?? alias);
  const r = await ctx.pluginActions.delete(site, kind, slugs, i);
  if (r.dry_run) {
    const items = r.items.map(actionItem);
    return { dry_run: true, ...where(site), deleted: [], would_affect: items, count: items.length, warnings: r.warnings, errors: r.errors };
  }
  return {
    dry_run: false,
    ...where(site),
    deleted: r.done.map(actionItem),
    would_affect: [],
    count: r.done.length,
    warnings: [],
    errors: r.errors,
  };
}

const DELETE_ERRORS = `Errors: svc_confirmation_required (400), svc_invalid_input (both flags, 400); ${SITE_ERRORS.slice('Errors: '.length)}`;

export const deleteSitePlugins = defineAbility({
  name: 'delete-site-plugins-v1',
  label: 'Delete plugins',
  category: 'svc-sites',
  toolset: 'plugins',
  description:
    'Delete plugins from one site: files removed, cannot be undone (an active plugin is deactivated ' + 'first). ' + DELETE_ERRORS,
  input: z.object({ ...PluginSlugs, confirm: Confirm, dry_run: DryRun }),
  output: DeleteOutput,
  annotations: { ...removal, siteAction: true },
  execute: (i, ctx) => deleteItems(ctx, 'plugins', 'delete-site-plugins-v1', i, i.plugins),
});

export const deleteSiteThemes = defineAbility({
  name: 'delete-site-themes-v1',
  label: 'Delete themes',
  category: 'svc-sites',
  toolset: 'plugins',
  description: 'Delete themes from one site: files removed, cannot be undone (not the active theme or its parent). ' + DELETE_ERRORS,
  input: z.object({
    site_id_or_domain: SiteRef,
    slugs: Slugs.optional().describe('Theme stylesheets, e.g. ["twentytwentythree"].'),
    themes: alias(Slugs.optional(), 'slugs'),
    confirm: Confirm,
    dry_run: DryRun,
  }),
  output: DeleteOutput,
  annotations: { ...removal, siteAction: true },
  execute: (i, ctx) => deleteItems(ctx, 'themes', 'delete-site-themes-v1', i, i.themes),
});

export const activateSiteTheme = defineAbility({
  name: 'activate-site-theme-v1',
  label: 'Activate theme',
  category: 'svc-sites',
  toolset: 'plugins',
  description: 'Switch the active theme of one site (activated is null when it did not switch). ' + SITE_ERRORS,
  input: z.object({
    site_id_or_domain: SiteRef,
    slug: z.string().min(1).max(500).optional().describe('Theme stylesheet, e.g. "twentytwentyfive".'),
    theme: alias(z.string().min(1).max(500).optional(), 'slug'),
  }),
  output: z.object({
    ...Where,
    activated: z.string().nullable(),
    previous_theme: z.string().nullable(),
    theme: ActionItem.nullable(),
    errors: z.array(SlugError),
  }),
  annotations: { ...remote, siteAction: true },
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const slug = i.slug ?? i.theme;
    if (!slug) {
      const reason = 'slug is a required property of input.';
      throw catalogue.abilityInput('activate-site-theme-v1', reason, 'slug');
    }
    const r = await ctx.pluginActions.activateTheme(site, slug);
    return {
      ...where(site),
      activated: r.activated?.slug ?? null,
      previous_theme: r.previous,
      theme: r.activated ? actionItem(r.activated) : null,
      errors: r.errors,
    };
  },
});

// ---- abandoned lists (fleet-wide) ----

function abandonedAbility(kind: ItemKind) {
  const word = kind === 'plugins' ? 'plugins' : 'themes';
  return defineAbility({
    name: `get-abandoned-${word}-v1`,
    label: `Abandoned ${word}`,
    category: 'svc-sites',
    toolset: 'plugins',
    description:
      `Installed ${word} with no release in two years, fleet-wide or on one site. ` +
      'Errors: svc_site_not_found (404) for an unknown site_id_or_domain.',
    input: z.object({
      page: Page,
      per_page: perPage(50),
      site_id_or_domain: SiteRef.optional().describe('Only this site.'),
      search: z.string().max(200).optional().describe('Part of the slug or name.'),
    }),
    output: paged(AbandonedItem).extend({ site: SiteAbout.optional().describe('With site_id_or_domain: that site.') }),
    annotations: ro,
    execute: async (i, ctx) => {
      const r = await ctx.siteData.abandoned(kind, { site: i.site_id_or_domain, search: i.search, page: i.page, per_page: i.per_page });
      return { items: r.items, page: i.page, per_page: i.per_page, total: r.total, ...(r.site ? { site: listedSite(r.site) } : {}) };
    },
  });
}

export const getAbandonedPlugins = abandonedAbility('plugins');
export const getAbandonedThemes = abandonedAbility('themes');

// ---- security and changes ----

export const getSiteSecurity = defineAbility({
  name: 'get-site-security-v1',
  label: 'Site security',
  category: 'svc-sites',
  toolset: 'sites',
  description: 'The security issues a site reported at its last sync, and its TLS certificate now. Errors: ' + 'svc_site_not_found (404).',
  input: z.object({ site_id_or_domain: SiteRef }),
  output: z.object({
    ...Where,
    security_issues: z.array(SecurityFinding),
    total_issues: z.number().int(),
    ssl_status: z.object({ valid: z.boolean(), expires: z.string().nullable(), error: z.string().nullable() }),
    synced_at: z.string().nullable(),
  }),
  annotations: { ...ro, openWorld: true },
  acceptsPost: true,
  execute: async (i, ctx) => {
    const { site, data, ssl_status } = await ctx.siteData.security(i.site_id_or_domain);
    return {
      ...where(site),
      security_issues: data.security,
      total_issues: data.security.length,
      ssl_status,
      synced_at: data.synced_at || null,
    };
  },
});

export const getSiteChanges = defineAbility({
  name: 'get-site-changes-v1',
  label: 'Site changes',
  category: 'svc-sites',
  toolset: 'sites',
  description:
    'Changes made on a site outside the dashboard (in wp-admin), newest first, as of its last sync. ' +
    'Errors: svc_module_not_available (501), svc_site_not_found (404).',
  input: z.object({
    site_id_or_domain: SiteRef,
    page: Page,
    per_page: perPage(50),
    type: z.string().max(100).optional().describe('plugin, theme, user, post, settings, ...'),
    contexts: z.array(z.string().max(100)).optional().describe('Only these contexts ("allevents" = all).'),
    actions: z.array(z.string().max(100)).optional().describe('activated, updated, created, ...'),
    source: z
      .enum(['wpadmin', 'dashboard', 'all'])
      .default('wpadmin')
      .describe('wpadmin or all; dashboard: none (sitefleet does not log its own work).'),
  }),
  output: z.object({
    ...Where,
    changes: z.array(SiteChange),
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int(),
  }),
  annotations: ro,
  acceptsPost: true,
  module: 'logs',
  execute: async (i, ctx) => {
    const contexts = [...(i.contexts ?? []), ...(i.type ? [i.type] : [])];
    const { site, changes: all } = await ctx.siteData.changes(i.site_id_or_domain, { source: i.source, contexts, actions: i.actions });
    return { ...where(site), changes: paginate(all, i.page, i.per_page), page: i.page, per_page: i.per_page, total: all.length };
  },
});

export const pluginAbilities = [
  getSitePlugins,
  getSiteThemes,
  activateSitePlugins,
  deactivateSitePlugins,
  deleteSitePlugins,
  activateSiteTheme,
  deleteSiteThemes,
  getAbandonedPlugins,
  getAbandonedThemes,
  getSiteSecurity,
  getSiteChanges,
];
