// Update policies (issue 28 part 4): list, add, change, delete and preview policies that run safe updates unattended
// in each site's maintenance window. Rules and the scheduler live in domain/update-policies.ts.
import { z } from 'zod';
import { defineAbility, type AbilityContext } from './context.js';
import { Confirm, DryRun } from './schemas.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { WEEKDAYS, type UpdatePolicyRecord } from '../store/policy-records.js';
import { MAX_POLICIES, MAX_POLICY_SLUGS, MAX_PREVIEW_ITEMS, failuresOf, type PolicyInput } from '../domain/update-policies.js';
import { jobView } from '../domain/jobs.js';

const base = { category: 'svc-updates', toolset: 'updates' } as const;
const Int = z.number().int();
const PolicyId = Int.min(1);
const HHMM = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'a time as HH:MM (00:00–23:59)');

// Flat inputs (every door, forms too): sites/tags/clients, what to update, the window. Defaults are applied here, not
// in the schemas, so that the MCP tools/list stays small (its budget is per tool).
const Fields = {
  name: z.string().min(1).max(100),
  all_sites: z.boolean(),
  sites: z.array(z.union([Int, z.string().min(1).max(500)])).max(1000),
  tags: z.array(PolicyId).max(100),
  clients: z.array(PolicyId).max(100),
  core: z.enum(['none', 'minor', 'major']),
  plugins: z.boolean(),
  themes: z.boolean(),
  translations: z.boolean(),
  slugs_mode: z.enum(['all', 'only', 'except']),
  slugs: z.array(z.string().min(1).max(500)).max(MAX_POLICY_SLUGS),
  security_only: z.boolean(), // only updates that fix a known vulnerability matched on the site
  delay_days: Int.min(0), // at most MAX_DELAY_DAYS (checked by the service)
  days: z.array(z.enum(WEEKDAYS)).max(7),
  start: HHMM,
  end: HHMM,
  max_sites: Int.min(1).max(50),
  stop_after: Int.min(1).max(1000),
};
const partial = () =>
  Object.fromEntries(Object.entries(Fields).map(([k, v]) => [k, v.optional()])) as {
    [K in keyof typeof Fields]: z.ZodOptional<(typeof Fields)[K]>;
  };
type Flat = { [K in keyof typeof Fields]?: z.output<(typeof Fields)[K]> };
const DEFAULTS = {
  all_sites: false,
  core: 'minor',
  plugins: true,
  themes: true,
  translations: true,
  slugs_mode: 'all',
  security_only: false,
  delay_days: 0,
  max_sites: 5,
  stop_after: 3,
} as const;

/** The flat fields given, over a policy's current ones (or the defaults), as the service takes them. */
function merged(i: Flat, cur?: UpdatePolicyRecord): PolicyInput {
  const t = cur?.targets;
  const u = cur?.updates;
  const w = cur?.window;
  const d = DEFAULTS;
  return {
    name: i.name ?? cur?.name ?? '',
    targets: {
      all: i.all_sites ?? t?.all ?? d.all_sites,
      sites: i.sites ?? t?.sites ?? [],
      tags: i.tags ?? t?.tags ?? [],
      clients: i.clients ?? t?.clients ?? [],
    },
    updates: {
      core: i.core ?? u?.core ?? d.core,
      plugins: i.plugins ?? u?.plugins ?? d.plugins,
      themes: i.themes ?? u?.themes ?? d.themes,
      translations: i.translations ?? u?.translations ?? d.translations,
      slugs_mode: i.slugs_mode ?? u?.slugs_mode ?? d.slugs_mode,
      slugs: i.slugs ?? u?.slugs ?? [],
      security_only: i.security_only ?? u?.security_only ?? d.security_only,
    },
    delay_days: i.delay_days ?? cur?.delay_days ?? d.delay_days,
    window: { days: i.days ?? w?.days ?? [], start: i.start ?? w?.start ?? '', end: i.end ?? w?.end ?? '' },
    max_sites: i.max_sites ?? cur?.max_sites ?? d.max_sites,
    stop_after: i.stop_after ?? cur?.stop_after ?? d.stop_after,
  };
}

const Run = z.object({
  run_id: Int,
  window_start: z.string(),
  window_end: z.string(),
  job_id: z.string(),
  status: z.string(),
  sites: Int,
  processed: Int,
  failures: Int.describe('Items failed or rolled back.'),
  stopped: z.string().nullable(),
});
const Policy = z.object({
  id: Int,
  name: z.string(),
  paused: z.boolean(),
  paused_reason: z.string(),
  paused_at: z.string().nullable(),
  targets: z.object({ all: z.boolean(), sites: z.array(Int), tags: z.array(Int), clients: z.array(Int) }),
  updates: z.object({
    core: z.enum(['none', 'minor', 'major']),
    plugins: z.boolean(),
    themes: z.boolean(),
    translations: z.boolean(),
    slugs_mode: z.enum(['all', 'only', 'except']),
    slugs: z.array(z.string()),
    security_only: z.boolean(),
  }),
  delay_days: Int,
  window: z.object({ days: z.array(z.enum(WEEKDAYS)), start: z.string(), end: z.string() }),
  max_sites: Int,
  stop_after: Int,
  safe: z.literal(true),
  created_at: z.string(),
  updated_at: z.string(),
  last_run: Run.nullable(),
});

function policyView(ctx: AbilityContext, p: UpdatePolicyRecord): z.infer<typeof Policy> {
  const r = ctx.policies.runs(p.id)[0];
  const job = r ? ctx.jobs.find(r.job_id) : undefined;
  const v = job ? jobView(job) : null;
  return {
    id: p.id,
    name: p.name,
    paused: p.paused,
    paused_reason: p.paused_reason,
    paused_at: p.paused_at,
    targets: p.targets,
    updates: { ...p.updates, security_only: p.updates.security_only === true },
    delay_days: p.delay_days,
    window: p.window,
    max_sites: p.max_sites,
    stop_after: p.stop_after,
    safe: true,
    created_at: p.created_at,
    updated_at: p.updated_at,
    last_run: r
      ? {
          run_id: r.id,
          window_start: r.window_start,
          window_end: r.window_end,
          job_id: r.job_id,
          status: v?.status ?? 'gone',
          sites: r.site_ids.length,
          processed: v?.processed ?? 0,
          failures: job ? failuresOf(job) : 0,
          stopped: r.stopped,
        }
      : null,
  };
}

export const listUpdatePolicies = defineAbility({
  ...base,
  name: 'list-update-policies-v1',
  label: 'List Update Policies',
  description: 'List update policies and their latest runs.',
  input: z.object({}),
  output: z.object({ items: z.array(Policy), total: Int }),
  annotations: { readonly: true, destructive: false, idempotent: true, openWorld: false },
  acceptsPost: true,
  execute: (_i, ctx) => {
    const items = ctx.policies.list().map((p) => policyView(ctx, p));
    return { items, total: items.length };
  },
});

export const addUpdatePolicy = defineAbility({
  ...base,
  name: 'add-update-policy-v1',
  label: 'Add Update Policy',
  description:
    "Create a policy: safe updates in a weekly window (HH:MM, site's zone); stop_after failures pause it. " +
    `Errors: svc_invalid_window (400), svc_policy_limit (409, over ${MAX_POLICIES}).`,
  input: z.object({ ...partial(), name: Fields.name, days: Fields.days, start: Fields.start, end: Fields.end }).strict(),
  output: Policy,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: false },
  execute: async (i, ctx) => policyView(ctx, await ctx.policies.create(merged(i))),
});

export const updateUpdatePolicy = defineAbility({
  ...base,
  name: 'update-update-policy-v1',
  label: 'Update Update Policy',
  description: 'Change policy fields; paused: false resumes it. Errors: svc_policy_not_found (404).',
  input: z.object({ policy_id: PolicyId, ...partial(), paused: z.boolean().optional() }).strict(),
  output: Policy,
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ policy_id, paused, ...i }, ctx) =>
    policyView(ctx, await ctx.policies.update(policy_id, { ...merged(i, ctx.policies.resolve(policy_id)), paused })),
});

export const deleteUpdatePolicy = defineAbility({
  ...base,
  name: 'delete-update-policy-v1',
  label: 'Delete Update Policy',
  description: 'Delete an update policy; a run in progress stops. Errors: svc_policy_not_found (404).',
  input: z.object({ policy_id: PolicyId, confirm: Confirm, dry_run: DryRun }),
  output: z.object({ deleted: z.boolean(), dry_run: z.boolean(), policy: Policy }),
  annotations: { readonly: false, destructive: true, idempotent: true, openWorld: false },
  acceptsPost: true,
  execute: async (i, ctx) => {
    refuseBothFlags(i);
    const p = ctx.policies.resolve(i.policy_id);
    if (i.dry_run) return { deleted: false, dry_run: true, policy: policyView(ctx, p) };
    requireConfirm(i);
    const view = policyView(ctx, p);
    await ctx.policies.remove(p.id);
    return { deleted: true, dry_run: false, policy: view };
  },
});

const Item = z.object({
  site_id: Int,
  site_url: z.string(),
  site_name: z.string(),
  type: z.enum(['core', 'plugin', 'theme', 'translation']),
  slug: z.string(),
  name: z.string(),
  current_version: z.string().nullable(),
  new_version: z.string(),
  language: z.string().optional(),
  fixes: z.array(z.string()).optional().describe('security_only: the vulnerability records (keys) this update fixes.'),
});

export const previewUpdatePolicy = defineAbility({
  ...base,
  name: 'preview-update-policy-v1',
  label: 'Preview Update Policy',
  description: "Dry run: a policy's next window, sites, updates, and what waits for the delay. " + 'Errors: svc_policy_not_found (404).',
  input: z.object({ policy_id: PolicyId }),
  output: z.object({
    policy_id: Int,
    name: z.string(),
    paused: z.boolean(),
    safe: z.literal(true),
    security_only: z.boolean(),
    next_window: z
      .object({
        starts_at: z.string(),
        ends_at: z.string(),
        open_now: z.boolean(),
        sites: z.array(z.object({ site_id: Int, site_url: z.string(), site_name: z.string(), time_zone: z.string() })),
        would_update: z.array(Item).describe(`The first ${MAX_PREVIEW_ITEMS}; would_update_total counts all (so waiting).`),
        would_update_total: Int,
        waiting: z.array(Item.extend({ eligible_at: z.string().nullable() })),
        waiting_total: Int,
        max_sites: Int,
        stop_after: Int,
      })
      .nullable()
      .describe('null: no target site has a window in the coming week.'),
  }),
  annotations: { readonly: true, destructive: false, idempotent: true, openWorld: false },
  acceptsPost: true,
  execute: (i, ctx) => ctx.policies.preview(i.policy_id),
});

export const updatePolicyAbilities = [
  listUpdatePolicies,
  addUpdatePolicy,
  updateUpdatePolicy,
  deleteUpdatePolicy,
  previewUpdatePolicy,
] as const;
