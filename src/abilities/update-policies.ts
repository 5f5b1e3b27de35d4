// Update policies (issue 28 part 4): list, add, change, delete and preview policies that run safe updates unattended
// in each site's maintenance window. Rules and the scheduler live in domain/update-policies.ts.
import { z } from 'zod';
import { defineAbility, type AbilityContext } from './context.js';
import { Confirm, DryRun, SiteRef } from './schemas.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { WEEKDAYS, type UpdatePolicyRecord } from '../store/policy-records.js';
import { MAX_POLICIES, MAX_POLICY_SLUGS, MAX_PREVIEW_ITEMS, failuresOf } from '../domain/update-policies.js';
import { jobView } from '../domain/jobs.js';

const base = { category: 'svc-updates', toolset: 'updates' } as const;
const Int = z.number().int();
const PolicyId = Int.min(1);
const HHMM = z
  .string()
  .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'a time as HH:MM (00:00–23:59)')
  .describe("Local time HH:MM in each site's own time zone.");

const Targets = z
  .object({
    all: z.boolean().default(false).describe('Every site (the lists are then ignored).'),
    sites: z.array(SiteRef).max(1000).default([]),
    tags: z.array(PolicyId).max(100).default([]),
    clients: z.array(PolicyId).max(100).default([]),
  })
  .strict();
const Updates = z
  .object({
    core: z.enum(['none', 'minor', 'major']).default('minor').describe('minor: x.y.z → x.y.w only; major: any newer core.'),
    plugins: z.boolean().default(true),
    themes: z.boolean().default(true),
    translations: z.boolean().default(true),
    slugs_mode: z.enum(['all', 'only', 'except']).default('all'),
    slugs: z.array(z.string().min(1).max(500)).max(MAX_POLICY_SLUGS).default([]).describe('Plugin files, theme stylesheets, "wordpress".'),
  })
  .strict();
const Window = z
  .object({
    days: z.array(z.enum(WEEKDAYS)).min(1).max(7),
    start: HHMM,
    end: HHMM.describe('Local HH:MM; before the start: the window runs past midnight.'),
  })
  .strict();
const Fields = {
  name: z.string().min(1).max(100),
  enabled: z.boolean().default(true),
  targets: Targets,
  updates: Updates.default({ core: 'minor', plugins: true, themes: true, translations: true, slugs_mode: 'all', slugs: [] }),
  delay_days: Int.min(0).max(365).default(0).describe('A new version must have been pending this many days.'),
  window: Window,
  max_sites: Int.min(1).max(50).default(5).describe('Sites updated at once.'),
  stop_after: Int.min(1).max(1000).default(3).describe('Pause the policy after this many failed or rolled-back items in one run.'),
};

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
  enabled: z.boolean(),
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
    enabled: p.enabled,
    paused: p.paused,
    paused_reason: p.paused_reason,
    paused_at: p.paused_at,
    targets: p.targets,
    updates: p.updates,
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
  description:
    "Update policies (unattended safe updates in each site's maintenance window) with their latest run: status, failures, " +
    'whether the stop rule paused it. Use preview-update-policy-v1 for what one would do next.',
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
    'Create a policy that applies updates unattended, always in safe mode (probe, one item at a time, roll back what ' +
    'breaks a site): targets (all, sites, tags, clients), what (core minor/major, plugins, themes, translations; all, ' +
    "only or all but some slugs), a delay in days, a weekly window in each site's time zone, sites at once, a stop rule. " +
    `At most ${MAX_POLICIES}. Errors: svc_invalid_window (400), svc_invalid_input (400), svc_site_not_found / ` +
    'svc_tag_not_found / svc_client_not_found (404), svc_policy_limit (409).',
  input: z.object(Fields).strict(),
  output: Policy,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: false },
  execute: async (i, ctx) => policyView(ctx, await ctx.policies.create(i)),
});

export const updateUpdatePolicy = defineAbility({
  ...base,
  name: 'update-update-policy-v1',
  label: 'Update Update Policy',
  description:
    'Change some fields of an update policy (the others stay); paused: false resumes a policy its stop rule paused. ' +
    'Errors: svc_policy_not_found (404), and those of add-update-policy-v1.',
  input: z
    .object({
      policy_id: PolicyId,
      name: Fields.name.optional(),
      enabled: z.boolean().optional(),
      paused: z.boolean().optional().describe('true pauses, false resumes.'),
      targets: Targets.optional(),
      updates: Updates.optional(),
      delay_days: Int.min(0).max(365).optional(),
      window: Window.optional(),
      max_sites: Int.min(1).max(50).optional(),
      stop_after: Int.min(1).max(1000).optional(),
    })
    .strict(),
  output: Policy,
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ policy_id, ...patch }, ctx) => policyView(ctx, await ctx.policies.update(policy_id, patch)),
});

export const deleteUpdatePolicy = defineAbility({
  ...base,
  name: 'delete-update-policy-v1',
  label: 'Delete Update Policy',
  description:
    'Delete an update policy (a run in progress stops before its next site; the update history stays). confirm: true ' +
    'to delete, dry_run: true to see it first. Errors: svc_policy_not_found (404), svc_confirmation_required (400).',
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
});

export const previewUpdatePolicy = defineAbility({
  ...base,
  name: 'preview-update-policy-v1',
  label: 'Preview Update Policy',
  description:
    'Dry run of a policy: when its next window opens (per site time zone), on which sites, and what it would update ' +
    'there as of their last sync (the delay judged at the window start; items still waiting say when they become due). ' +
    `Changes nothing, no outgoing call; lists up to ${MAX_PREVIEW_ITEMS} items each. Errors: svc_policy_not_found (404).`,
  input: z.object({ policy_id: PolicyId }),
  output: z.object({
    policy_id: Int,
    name: z.string(),
    enabled: z.boolean(),
    paused: z.boolean(),
    safe: z.literal(true),
    next_window: z
      .object({
        starts_at: z.string(),
        ends_at: z.string(),
        open_now: z.boolean(),
        sites: z.array(z.object({ site_id: Int, site_url: z.string(), site_name: z.string(), time_zone: z.string() })),
        would_update: z.array(Item),
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
