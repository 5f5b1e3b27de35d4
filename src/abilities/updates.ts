// Updates across the fleet: upstream's 13 update abilities (updates reference §3), each a thin map of input → one
// updates-service call → the view. Rules live in domain/updates.ts.
import { z } from 'zod';
import { defineAbility, type AbilityContext } from './context.js';
import { TYPES, UPDATE_ALL_QUEUE_OVER, summarise, type Selector, type TypeName } from '../domain/updates.js';
import { SiteRef, SiteRefs } from './schemas.js';

const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };
const apply = { readonly: false, destructive: false, idempotent: false, openWorld: true };
const rule = { readonly: false, destructive: false, idempotent: true, openWorld: false };

const TypeNames = z.enum(TYPES);
const Types = z.array(TypeNames).max(4);
const IgnoreTypes = z.array(z.enum(['core', 'plugins', 'themes'])).max(3);
const Slugs = z.array(z.string().min(1).max(500)).max(200);
const Where = { site_id: z.number().int(), site_url: z.string(), site_name: z.string() };
const ItemType = z.enum(['core', 'plugin', 'theme', 'translation']);

const Pending = z.object({
  ...Where,
  type: ItemType,
  slug: z.string(),
  name: z.string(),
  current_version: z.string().nullable(),
  new_version: z.string(),
  language: z.string().optional(),
});
const Updated = z.object({
  ...Where,
  type: ItemType,
  slug: z.string(),
  name: z.string(),
  old_version: z.string().nullable(),
  new_version: z.string(),
  language: z.string().optional(),
});
const Failed = z.object({
  ...Where,
  type: z.union([ItemType, z.literal('site')]),
  slug: z.string(),
  code: z.string(),
  message: z.string(),
});
const Skipped = z.object({
  ...Where,
  type: z.union([ItemType, z.literal('site')]),
  slug: z.string(),
  reason: z.enum(['ignored', 'not_pending', 'site_suspended', 'site_disconnected', 'cancelled', 'site_unhealthy']),
  message: z.string(),
});
const SummaryCounts = z.object({
  core: z.number().int(),
  plugins: z.number().int(),
  themes: z.number().int(),
  translations: z.number().int(),
  total: z.number().int(),
});

/** Site selectors of the fleet-wide abilities (upstream has site_ids_or_domains; tags and clients are ours). */
const Selectors = {
  site_ids_or_domains: SiteRefs.max(5000).optional(),
  tags: z
    .array(z.union([z.number().int(), z.string().min(1).max(100)]))
    .max(100)
    .optional(),
  clients: z.array(z.number().int().min(1)).max(100).optional(),
};
const selector = (i: { site_ids_or_domains?: Array<number | string>; tags?: Array<number | string>; clients?: number[] }): Selector => ({
  sites: i.site_ids_or_domains,
  tags: i.tags,
  clients: i.clients,
});
const Refresh = z.boolean().default(false);
/** refresh syncs the sites (signed child calls, stored results, sync_failed events): a write, as sync-sites-v1 is. */
const refreshWrites = {
  test: (i: { refresh: boolean }) => i.refresh,
  why: 'refresh: true syncs the sites, which needs write permission (as sync-sites-v1 does); without refresh the answer is as of the last sync.',
};
const DryRun = z.boolean().default(false);
const Confirm = z.boolean().optional();
/** Safe mode (issue 28): absent = the dashboard's setting (on unless turned off). */
const Safe = {
  safe: z
    .boolean()
    .optional()
    .describe(
      'Safe mode (default: the dashboard setting, on): probe each site first, apply items one at a time with a probe after each, roll back an item that breaks the site.',
    ),
  force: z.boolean().default(false).describe('Safe mode: update a site even if it is unhealthy before (else skipped).'),
};
const safePlan = (i: { safe?: boolean; force: boolean }, ctx: AbilityContext) => ({
  safe: i.safe ?? ctx.dashboard.safeUpdates(),
  force: i.force,
});

const RolledBack = z.object({
  ...Where,
  type: ItemType,
  slug: z.string(),
  name: z.string(),
  from_version: z.string().nullable(),
  to_version: z.string(),
  outcome: z.enum(['rolled_back', 'rollback_failed']),
  action: z.enum(['reinstalled', 'deactivated', 'none']),
  package_url: z.string().nullable(),
  reason: z.string(),
  evidence: z.object({
    before: z.string(),
    after: z.string(),
    after_rollback: z.string().nullable(),
    problems: z.array(z.object({ kind: z.string(), url: z.string(), http_status: z.number().int(), problem: z.string().nullable() })),
  }),
});

const RunOutput = z.object({
  dry_run: z.boolean().optional(),
  would_update: z.array(Pending).optional(),
  /** Dry run: how many items and sites would be updated (would_update lists at most MAX_LISTED). */
  would_update_total: z.number().int().optional(),
  sites_to_update: z.number().int().optional(),
  /** True when would_update or skipped was cut at MAX_LISTED entries (the summary still counts them all). */
  truncated: z.boolean().optional(),
  queued: z.boolean().optional(),
  job_id: z.string().optional(),
  updates_queued: z.number().int().optional(),
  sites_queued: z.number().int().optional(),
  updated: z.array(Updated),
  errors: z.array(Failed),
  skipped: z.array(Skipped),
  /** Safe mode: the items whose update broke a site, and what was done (each is in errors too). */
  rolled_back: z.array(RolledBack).optional(),
  summary: z.object({
    total_updated: z.number().int(),
    total_errors: z.number().int(),
    total_skipped: z.number().int(),
    sites_updated: z.number().int().optional(),
    total_rolled_back: z.number().int().optional(),
  }),
  not_processed: z.array(z.number().int()).optional(),
  safe: z.boolean().optional(),
});

export { MAX_LISTED } from '../domain/updates.js';

// ---- reading ----

export const listUpdates = defineAbility({
  name: 'list-updates-v1',
  label: 'List Available Updates',
  category: 'svc-updates',
  toolset: 'updates',
  description:
    'Pending core, plugin, theme and translation updates of the fleet (not ignored ones), paged, with a summary. ' +
    'As of the last sync; refresh syncs first (a write: needs write permission).',
  input: z.object({
    ...Selectors,
    types: Types.optional(),
    page: z.number().int().min(1).default(1),
    per_page: z.number().int().min(1).max(200).default(50),
    refresh: Refresh,
  }),
  output: z.object({
    updates: z.array(Pending),
    summary: SummaryCounts,
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int(),
    errors: z.array(Failed),
  }),
  annotations: ro,
  acceptsPost: true,
  writesWhen: refreshWrites,
  execute: async (i, ctx) => {
    const sel = selector(i);
    const refreshErrors = i.refresh ? await ctx.updates.refresh(ctx, ctx.updates.select(sel).sites) : [];
    const r = await ctx.updates.list(sel, i.types ?? [], i.page, i.per_page);
    return { ...r, errors: [...r.errors, ...refreshErrors] };
  },
});

export const getSiteUpdates = defineAbility({
  name: 'get-site-updates-v1',
  label: 'Get Site Updates',
  category: 'svc-updates',
  toolset: 'updates',
  description:
    "One site's pending updates (ignored ones in ignored[]), with a summary by type. As of the last sync; refresh syncs first (a write: needs write permission).",
  input: z.object({ site_id_or_domain: SiteRef, types: Types.default([...TYPES]), refresh: Refresh }),
  output: z.object({
    ...Where,
    updates: z.array(Pending),
    ignored: z.array(Skipped),
    rollback_items: z.object({ plugins: z.array(z.unknown()), themes: z.array(z.unknown()) }),
    summary: SummaryCounts,
    synced_at: z.string().nullable(),
  }),
  annotations: ro,
  acceptsPost: true,
  writesWhen: refreshWrites,
  execute: async (i, ctx) => {
    const { site, updates, ignored } = await ctx.updates.ofSite(i.site_id_or_domain, i.types, i.refresh);
    return {
      site_id: site.id,
      site_url: site.url,
      site_name: site.name,
      updates,
      ignored,
      rollback_items: ctx.updateHistory.rollbackItems(site.id, updates),
      summary: summarise(updates),
      synced_at: site.last_sync,
    };
  },
});

export const listIgnoredUpdates = defineAbility({
  name: 'list-ignored-updates-v1',
  label: 'List Ignored Updates',
  category: 'svc-updates',
  toolset: 'updates',
  description: 'Ignore rules per site (slug "*" = a whole type; scope fleet = every site), paged.',
  input: z.object({
    site_ids_or_domains: Selectors.site_ids_or_domains,
    types: IgnoreTypes.optional(),
    page: z.number().int().min(1).default(1),
    per_page: z.number().int().min(1).max(200).default(100),
  }),
  output: z.object({
    ignored: z.array(
      z.object({
        ...Where,
        type: z.enum(['core', 'plugin', 'theme']),
        slug: z.string(),
        name: z.string(),
        ignored_version: z.string(),
        scope: z.enum(['site', 'fleet']),
      }),
    ),
    total: z.number().int(),
    page: z.number().int(),
    per_page: z.number().int(),
    errors: z.array(Failed),
  }),
  annotations: ro,
  acceptsPost: true,
  execute: (i, ctx) => {
    const { sites, errors } = ctx.updates.select({ sites: i.site_ids_or_domains });
    const all = ctx.updates.ignored(sites, i.types?.length ? i.types : ['core', 'plugins', 'themes']);
    return {
      ignored: all.slice((i.page - 1) * i.per_page, i.page * i.per_page),
      total: all.length,
      page: i.page,
      per_page: i.per_page,
      errors,
    };
  },
});

// ---- ignore rules ----

export const setIgnoredUpdates = defineAbility({
  name: 'set-ignored-updates-v1',
  label: 'Set Ignored Updates',
  category: 'svc-updates',
  toolset: 'updates',
  description: "Ignore or unignore one item's updates on a site (every version). changed=false when it already was so.",
  input: z.object({
    action: z.enum(['ignore', 'unignore']),
    site_id_or_domain: SiteRef,
    type: z.enum(['core', 'plugin', 'theme']),
    slug: z.string().min(1).max(500).describe('Plugin file, theme stylesheet, "wordpress" for core, "*" for every one of the type.'),
  }),
  output: z.object({
    success: z.boolean(),
    action: z.string(),
    site_id: z.number().int(),
    type: z.string(),
    slug: z.string(),
    changed: z.boolean(),
  }),
  annotations: rule,
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const changed = await ctx.updates.setIgnored(site, i.type, i.slug, i.action === 'ignore');
    return { success: true, action: i.action, site_id: site.id, type: i.type, slug: i.slug, changed };
  },
});

const Action = z.enum(['add', 'remove']).default('add');

export const ignoreSiteCore = defineAbility({
  name: 'ignore-site-core-v1',
  label: 'Ignore Site Core',
  category: 'svc-updates',
  toolset: 'updates',
  description: 'Ignore (add) or unignore (remove) WordPress core updates on a site.',
  input: z.object({ site_id_or_domain: SiteRef, action: Action }),
  output: z.object({ success: z.boolean(), message: z.string(), ignored_count: z.number().int() }),
  annotations: { ...rule, siteAction: true },
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const changed = await ctx.updates.setIgnored(site, 'core', 'wordpress', i.action === 'add');
    const verb = i.action === 'add' ? 'ignored' : 'unignored';
    return {
      success: true,
      message: changed ? `Core updates ${verb} for this site.` : `Core updates were already ${verb} for this site.`,
      ignored_count: changed ? 1 : 0,
    };
  },
});

function ignoreItems(kind: 'plugin' | 'theme') {
  const plural = `${kind}s`;
  return defineAbility({
    name: `ignore-site-${plural}-v1`,
    label: `Ignore Site ${kind === 'plugin' ? 'Plugins' : 'Themes'}`,
    category: 'svc-updates',
    toolset: 'updates',
    description: `Ignore (add) or unignore (remove) ${kind} updates on a site by slug; ignored_count counts real changes.`,
    input: z.object({ site_id_or_domain: SiteRef, slugs: Slugs, action: Action }),
    output: z.object({ success: z.boolean(), message: z.string(), ignored_count: z.number().int() }),
    annotations: { ...rule, siteAction: true },
    execute: async (i, ctx) => {
      const site = ctx.sites.resolve(i.site_id_or_domain);
      const n = await ctx.updates.setIgnoredMany(site, kind, i.slugs, i.action === 'add');
      const verb = i.action === 'add' ? 'ignored' : 'unignored';
      return { success: n > 0, message: n ? `${n} ${n === 1 ? kind : plural} ${verb}.` : `No ${plural} were ${verb}.`, ignored_count: n };
    },
  });
}

export const ignoreSitePlugins = ignoreItems('plugin');
export const ignoreSiteThemes = ignoreItems('theme');

// ---- applying ----

function updateSiteItems(type: Exclude<TypeName, 'core'>) {
  const label = type[0]!.toUpperCase() + type.slice(1);
  return defineAbility({
    name: `update-site-${type}-v1`,
    label: `Update Site ${label}`,
    category: 'svc-updates',
    toolset: 'updates',
    description:
      `Apply pending ${type === 'translations' ? 'translation' : type.slice(0, -1)} updates on one site (all, or slugs). ` +
      'Per item: updated (versions the child reports), errors, skipped.',
    input: z.object({ site_id_or_domain: SiteRef, slugs: Slugs.default([]), dry_run: DryRun, confirm: Confirm, ...Safe }),
    output: RunOutput,
    annotations: { ...apply, siteAction: true },
    execute: (i, ctx) => ctx.updates.runOne(ctx, i.site_id_or_domain, { types: [type], only: i.slugs, ...safePlan(i, ctx) }, i.dry_run),
  });
}

export const updateSitePlugins = updateSiteItems('plugins');
export const updateSiteThemes = updateSiteItems('themes');
export const updateSiteTranslations = updateSiteItems('translations');

export const updateSiteCore = defineAbility({
  name: 'update-site-core-v1',
  label: 'Update Site Core',
  category: 'svc-updates',
  toolset: 'updates',
  description: 'Update WordPress core on one site; the new version is checked by a sync right after.',
  input: z.object({ site_id_or_domain: SiteRef, dry_run: DryRun, confirm: Confirm, ...Safe }),
  output: RunOutput.extend({ updated: z.union([Updated, z.array(Updated)]) }),
  annotations: { ...apply, siteAction: true },
  execute: async (i, ctx) => {
    const r = await ctx.updates.runCore(ctx, i.site_id_or_domain, i.dry_run, safePlan(i, ctx));
    return { ...r, updated: r.updated[0] ?? [] };
  },
});

export const runUpdates = defineAbility({
  name: 'run-updates-v1',
  label: 'Run Updates',
  category: 'svc-updates',
  toolset: 'updates',
  description:
    'Apply pending updates on many sites (types; specific_items: only these slugs); over 200 sites: a job. ' +
    'Per item: updated, errors, skipped.',
  input: z.object({
    ...Selectors,
    types: Types.optional(),
    specific_items: Slugs.optional(),
    dry_run: DryRun,
    confirm: Confirm,
    ...Safe,
  }),
  output: RunOutput,
  annotations: { ...apply, siteAction: true },
  execute: (i, ctx) =>
    ctx.updates.runMany(
      ctx,
      selector(i),
      { types: i.types?.length ? i.types : [...TYPES], only: i.specific_items, ...safePlan(i, ctx) },
      i.dry_run,
      ctx.config.queueThreshold,
    ),
});

export const updateAll = defineAbility({
  name: 'update-all-v1',
  label: 'Update All',
  category: 'svc-updates',
  toolset: 'updates',
  description: `Apply every pending update (of the types) on the sites (empty = all); over ${UPDATE_ALL_QUEUE_OVER} sites with updates: a job.`,
  input: z.object({ ...Selectors, types: Types.optional(), dry_run: DryRun, confirm: Confirm, ...Safe }),
  output: RunOutput,
  annotations: { ...apply, siteAction: true },
  execute: (i, ctx) =>
    ctx.updates.runMany(
      ctx,
      selector(i),
      { types: i.types?.length ? i.types : [...TYPES], ...safePlan(i, ctx) },
      i.dry_run,
      UPDATE_ALL_QUEUE_OVER,
    ),
});

/** Asked over MCP by elicitation before it runs (services: a run that spans more than one site). */
export function spansSites(preview: unknown): boolean {
  return ((preview as { sites_to_update?: number }).sites_to_update ?? 0) > 1;
}

// Upstream's discovery order.
export const updateAbilities = [
  listUpdates,
  runUpdates,
  listIgnoredUpdates,
  setIgnoredUpdates,
  getSiteUpdates,
  updateSiteCore,
  updateSitePlugins,
  updateSiteThemes,
  updateSiteTranslations,
  ignoreSiteCore,
  ignoreSitePlugins,
  ignoreSiteThemes,
  updateAll,
].map((a) => (a.name === 'run-updates-v1' || a.name === 'update-all-v1' ? { ...a, confirmPreview: spansSites } : a));
