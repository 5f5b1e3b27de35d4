// Updates across the fleet: upstream's 13 update abilities (updates reference §3), each a thin map of input → one
// updates-service call → the view. Rules live in services/updates.ts.
import { z } from 'zod';
import { defineAbility, type AbilityContext } from './context.js';
import { ServiceError } from '../core/errors.js';
import { eachSite } from '../services/jobs.js';
import {
  TYPES, UPDATE_ALL_QUEUE_OVER, itemProgress, summarise, type ErrorView, type Plan, type PendingView, type Selector, type SiteRun,
  type SkippedView, type TypeName, type UpdatedView,
} from '../services/updates.js';
import type { SiteRecord } from '../store/records.js';
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
  ...Where, type: ItemType, slug: z.string(), name: z.string(), current_version: z.string().nullable(), new_version: z.string(),
  language: z.string().optional(),
});
const Updated = z.object({
  ...Where, type: ItemType, slug: z.string(), name: z.string(), old_version: z.string().nullable(), new_version: z.string(),
  language: z.string().optional(),
});
const Failed = z.object({ ...Where, type: z.union([ItemType, z.literal('site')]), slug: z.string(), code: z.string(), message: z.string() });
const Skipped = z.object({
  ...Where, type: z.union([ItemType, z.literal('site')]), slug: z.string(),
  reason: z.enum(['ignored', 'not_pending', 'site_suspended', 'site_disconnected', 'cancelled']), message: z.string(),
});
const SummaryCounts = z.object({ core: z.number().int(), plugins: z.number().int(), themes: z.number().int(), translations: z.number().int(), total: z.number().int() });

/** Site selectors of the fleet-wide abilities (upstream has site_ids_or_domains; tags and clients are ours). */
const Selectors = {
  site_ids_or_domains: SiteRefs.max(5000).optional(),
  tags: z.array(z.union([z.number().int(), z.string().min(1).max(100)])).max(100).optional(),
  clients: z.array(z.number().int().min(1)).max(100).optional(),
};
const selector = (i: { site_ids_or_domains?: Array<number | string>; tags?: Array<number | string>; clients?: number[] }): Selector =>
  ({ sites: i.site_ids_or_domains, tags: i.tags, clients: i.clients });
const Refresh = z.boolean().default(false);
const DryRun = z.boolean().default(false);
const Confirm = z.boolean().optional();

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
  summary: z.object({ total_updated: z.number().int(), total_errors: z.number().int(), total_skipped: z.number().int(), sites_updated: z.number().int().optional() }),
  not_processed: z.array(z.number().int()).optional(),
});
type RunOutput = z.input<typeof RunOutput>;

/** Entries of would_update and of skipped a fleet-wide answer lists at most; the counts cover every item. */
export const MAX_LISTED = 1000;
const cap = <T>(list: T[]) => list.slice(0, MAX_LISTED);

const summary = (r: SiteRun, sites = false) => ({
  total_updated: r.updated.length, total_errors: r.errors.length, total_skipped: r.skipped.length,
  ...(sites ? { sites_updated: new Set(r.updated.map((u) => u.site_id)).size } : {}),
});

// ---- reading ----

async function refreshSites(ctx: AbilityContext, sites: readonly SiteRecord[]): Promise<ErrorView[]> {
  return ctx.updates.refresh(sites, async (live) => {
    const { results } = await eachSite({ ...ctx, progress: undefined }, live, 'sync', async (s) => ctx.children.apply(await ctx.children.fetchSync(s)));
    return results.flatMap((r) => r.ok ? [] : [{ site_id: r.site.id, site_url: r.site.url, site_name: r.site.name, type: 'site' as const, slug: '', code: r.error.code, message: r.error.message }]);
  });
}

export const listUpdates = defineAbility({
  name: 'list-updates-v1',
  label: 'List Available Updates',
  category: 'svc-updates',
  toolset: 'updates',
  description: 'Pending core, plugin, theme and translation updates of the fleet (not ignored ones), paged, with a summary. '
    + 'As of the last sync; refresh syncs first.',
  input: z.object({
    ...Selectors,
    types: Types.optional(),
    page: z.number().int().min(1).default(1),
    per_page: z.number().int().min(1).max(200).default(50),
    refresh: Refresh,
  }),
  output: z.object({
    updates: z.array(Pending), summary: SummaryCounts, page: z.number().int(), per_page: z.number().int(), total: z.number().int(), errors: z.array(Failed),
  }),
  annotations: ro,
  acceptsPost: true,
  execute: async (i, ctx) => {
    const sel = selector(i);
    const refreshErrors = i.refresh ? await refreshSites(ctx, ctx.updates.select(sel).sites) : [];
    const r = ctx.updates.list(sel, i.types ?? [], i.page, i.per_page);
    return { ...r, errors: [...r.errors, ...refreshErrors] };
  },
});

export const getSiteUpdates = defineAbility({
  name: 'get-site-updates-v1',
  label: 'Get Site Updates',
  category: 'svc-updates',
  toolset: 'updates',
  description: 'One site\'s pending updates (ignored ones in ignored[]), with a summary by type.',
  input: z.object({ site_id_or_domain: SiteRef, types: Types.default([...TYPES]), refresh: Refresh }),
  output: z.object({
    ...Where, updates: z.array(Pending), ignored: z.array(Skipped), rollback_items: z.object({ plugins: z.array(z.unknown()), themes: z.array(z.unknown()) }),
    summary: SummaryCounts, synced_at: z.string().nullable(),
  }),
  annotations: ro,
  acceptsPost: true,
  execute: async (i, ctx) => {
    let site = ctx.sites.resolve(i.site_id_or_domain);
    if (i.refresh) {
      ctx.children.assertReachable(site);
      site = await ctx.children.apply(await ctx.children.fetchSync(site));
    }
    const updates = ctx.updates.pending(site, i.types);
    const plan = ctx.updates.planSite(site, { types: i.types });
    return {
      site_id: site.id, site_url: site.url, site_name: site.name, updates,
      ignored: plan.skipped.filter((s) => s.reason === 'ignored'),
      rollback_items: { plugins: [], themes: [] }, summary: summarise(updates), synced_at: site.last_sync,
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
    ignored: z.array(z.object({ ...Where, type: z.enum(['core', 'plugin', 'theme']), slug: z.string(), name: z.string(), ignored_version: z.string(), scope: z.enum(['site', 'fleet']) })),
    total: z.number().int(), page: z.number().int(), per_page: z.number().int(), errors: z.array(Failed),
  }),
  annotations: ro,
  acceptsPost: true,
  execute: (i, ctx) => {
    const { sites, errors } = ctx.updates.select({ sites: i.site_ids_or_domains });
    const all = ctx.updates.ignored(sites, i.types?.length ? i.types : ['core', 'plugins', 'themes']);
    return { ignored: all.slice((i.page - 1) * i.per_page, i.page * i.per_page), total: all.length, page: i.page, per_page: i.per_page, errors };
  },
});

// ---- ignore rules ----

export const setIgnoredUpdates = defineAbility({
  name: 'set-ignored-updates-v1',
  label: 'Set Ignored Updates',
  category: 'svc-updates',
  toolset: 'updates',
  description: 'Ignore or unignore one item\'s updates on a site (every version). changed=false when it already was so.',
  input: z.object({
    action: z.enum(['ignore', 'unignore']),
    site_id_or_domain: SiteRef,
    type: z.enum(['core', 'plugin', 'theme']),
    slug: z.string().min(1).max(500).describe('Plugin file, theme stylesheet, "wordpress" for core, "*" for every one of the type.'),
  }),
  output: z.object({ success: z.boolean(), action: z.string(), site_id: z.number().int(), type: z.string(), slug: z.string(), changed: z.boolean() }),
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
  annotations: rule,
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const changed = await ctx.updates.setIgnored(site, 'core', 'wordpress', i.action === 'add');
    const verb = i.action === 'add' ? 'ignored' : 'unignored';
    return { success: true, message: changed ? `Core updates ${verb} for this site.` : `Core updates were already ${verb} for this site.`, ignored_count: changed ? 1 : 0 };
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
    annotations: rule,
    execute: async (i, ctx) => {
      const site = ctx.sites.resolve(i.site_id_or_domain);
      let n = 0;
      for (const slug of new Set(i.slugs)) if (await ctx.updates.setIgnored(site, kind, slug, i.action === 'add')) n++;
      const verb = i.action === 'add' ? 'ignored' : 'unignored';
      return { success: n > 0, message: n ? `${n} ${n === 1 ? kind : plural} ${verb}.` : `No ${plural} were ${verb}.`, ignored_count: n };
    },
  });
}

export const ignoreSitePlugins = ignoreItems('plugin');
export const ignoreSiteThemes = ignoreItems('theme');

// ---- applying ----

/** One site, one type: dry run, or the run (409 when the site is suspended, disconnected or already updating). */
async function runOneSite(ctx: AbilityContext, ref: number | string, plan: Plan, dryRun: boolean): Promise<RunOutput> {
  const site = ctx.sites.resolve(ref);
  ctx.children.assertReachable(site);
  if (dryRun) {
    const p = ctx.updates.planSite(site, plan);
    return { dry_run: true, would_update: p.todo, updated: [], errors: [], skipped: p.skipped, summary: { total_updated: 0, total_errors: 0, total_skipped: p.skipped.length } };
  }
  const total = ctx.updates.planSite(site, plan).todo.length;
  const tick = itemProgress(total, ctx.progress);
  const r = await ctx.updates.runSite(site, plan, { progress: (p) => tick(p, site) });
  return { updated: r.updated, errors: r.errors, skipped: r.skipped, summary: summary(r) };
}

function updateSiteItems(type: Exclude<TypeName, 'core'>) {
  const label = type[0]!.toUpperCase() + type.slice(1);
  return defineAbility({
    name: `update-site-${type}-v1`,
    label: `Update Site ${label}`,
    category: 'svc-updates',
    toolset: 'updates',
    description: `Apply pending ${type === 'translations' ? 'translation' : type.slice(0, -1)} updates on one site (all, or slugs). `
      + 'Per item: updated (versions the child reports), errors, skipped.',
    input: z.object({ site_id_or_domain: SiteRef, slugs: Slugs.default([]), dry_run: DryRun, confirm: Confirm }),
    output: RunOutput,
    annotations: apply,
    execute: (i, ctx) => runOneSite(ctx, i.site_id_or_domain, { types: [type], only: i.slugs }, i.dry_run),
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
  input: z.object({ site_id_or_domain: SiteRef, dry_run: DryRun, confirm: Confirm }),
  output: RunOutput.extend({ updated: z.union([Updated, z.array(Updated)]) }),
  annotations: apply,
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const plan: Plan = { types: ['core'] };
    const p = ctx.updates.planSite(site, plan);
    if (!p.todo.length && !p.skipped.length) throw new ServiceError('svc_no_updates', 'No core updates available for this site (as of its last sync).', 404, { site_id: site.id });
    const r = await runOneSite(ctx, site.id, plan, i.dry_run);
    const failure = r.errors[0];
    if (failure) throw new ServiceError(failure.code, failure.message, failure.code === 'svc_child_timeout' ? 504 : 502, { site_id: site.id });
    return { ...r, updated: r.updated[0] ?? [] };
  },
});

/**
 * Many sites: dry run (the exact list), a job when more sites than `queueOver` have something to update (only those
 * sites are queued), else every site in turn, one child call per type, with per-item progress and cancellation.
 */
async function runMany(ctx: AbilityContext, sel: Selector, plan: Plan, dryRun: boolean, queueOver: number): Promise<RunOutput> {
  const { sites, errors } = ctx.updates.select(sel);
  const plans = sites.map((s) => ({ site: s, ...ctx.updates.planSite(s, plan) }));
  const skipped: SkippedView[] = plans.flatMap((p) => p.skipped);
  const work = plans.filter((p) => p.todo.length);
  const todo = work.flatMap((p) => p.todo);
  const truncated = todo.length > MAX_LISTED || skipped.length > MAX_LISTED;
  const empty = {
    updated: [], skipped: cap(skipped), errors, ...(truncated ? { truncated } : {}),
    summary: { total_updated: 0, total_errors: errors.length, total_skipped: skipped.length, sites_updated: 0 },
  };
  // Counts first: a preview shown to a person may be cut after some thousands of characters.
  if (dryRun) {
    const { summary: sum, ...rest } = empty;
    return { dry_run: true, would_update_total: todo.length, sites_to_update: work.length, summary: sum, ...rest, would_update: cap(todo) };
  }
  const queued = await ctx.jobs.queueIfOver('update', work.map((p) => p.site), plan as unknown as Record<string, unknown>, queueOver);
  if (queued) return { ...queued, updates_queued: work.reduce((n, p) => n + p.todo.length, 0), sites_queued: work.length, ...empty };
  const tick = itemProgress(work.reduce((n, p) => n + p.todo.length, 0), ctx.progress);
  const { results, notDone } = await eachSite({ ...ctx, progress: undefined }, work.map((p) => p.site), 'update',
    (site) => ctx.updates.runSite(site, plan, { progress: (p) => tick(p, site) }));
  // Sites that run re-plan under their lock and report their own skipped items; the others' are reported from here.
  const run: SiteRun = { updated: [] as UpdatedView[], errors: [...errors], skipped: plans.filter((p) => !p.todo.length).flatMap((p) => p.skipped) };
  for (const r of results) {
    if (r.ok) { run.updated.push(...r.value.updated); run.errors.push(...r.value.errors); run.skipped.push(...r.value.skipped); continue; }
    // A site-level failure (locked, no keys): one error per item it was to update.
    const todo: PendingView[] = work.find((p) => p.site.id === r.site.id)?.todo ?? [];
    for (const t of todo) run.errors.push({ site_id: t.site_id, site_url: t.site_url, site_name: t.site_name, type: t.type, slug: t.slug, code: r.error.code, message: r.error.message });
  }
  for (const s of notDone) {
    for (const t of work.find((p) => p.site.id === s.id)?.todo ?? []) {
      run.skipped.push({ site_id: t.site_id, site_url: t.site_url, site_name: t.site_name, type: t.type, slug: t.slug, reason: 'cancelled', message: 'Not started: the run was cancelled.' });
    }
  }
  return {
    ...run, skipped: cap(run.skipped), ...(run.skipped.length > MAX_LISTED ? { truncated: true } : {}), summary: summary(run, true),
    ...(notDone.length ? { not_processed: notDone.map((s) => s.id) } : {}),
  };
}

export const runUpdates = defineAbility({
  name: 'run-updates-v1',
  label: 'Run Updates',
  category: 'svc-updates',
  toolset: 'updates',
  description: 'Apply pending updates on many sites (types; specific_items: only these slugs); over 200 sites: a job. '
    + 'Per item: updated, errors, skipped.',
  input: z.object({
    ...Selectors,
    types: Types.optional(),
    specific_items: Slugs.optional(),
    dry_run: DryRun,
    confirm: Confirm,
  }),
  output: RunOutput,
  annotations: apply,
  execute: (i, ctx) => runMany(ctx, selector(i), { types: i.types?.length ? i.types : [...TYPES], only: i.specific_items }, i.dry_run, ctx.config.queueThreshold),
});

export const updateAll = defineAbility({
  name: 'update-all-v1',
  label: 'Update All',
  category: 'svc-updates',
  toolset: 'updates',
  description: `Apply every pending update (of the types) on the sites (empty = all); over ${UPDATE_ALL_QUEUE_OVER} sites with updates: a job.`,
  input: z.object({ ...Selectors, types: Types.optional(), dry_run: DryRun, confirm: Confirm }),
  output: RunOutput,
  annotations: apply,
  execute: (i, ctx) => runMany(ctx, selector(i), { types: i.types?.length ? i.types : [...TYPES] }, i.dry_run, UPDATE_ALL_QUEUE_OVER),
});

/** Asked over MCP by elicitation before it runs (services: a run that spans more than one site). */
export function spansSites(preview: unknown): boolean {
  return ((preview as { sites_to_update?: number }).sites_to_update ?? 0) > 1;
}

// Upstream's discovery order.
export const updateAbilities = [
  listUpdates, runUpdates, listIgnoredUpdates, setIgnoredUpdates, getSiteUpdates, updateSiteCore, updateSitePlugins,
  updateSiteThemes, updateSiteTranslations, ignoreSiteCore, ignoreSitePlugins, ignoreSiteThemes, updateAll,
].map((a) => (a.name === 'run-updates-v1' || a.name === 'update-all-v1' ? { ...a, confirmPreview: spansSites } : a));
