// Settings abilities (issue 21): the dashboard settings sitefleet applies (the sync schedule, sync concurrency, the
// queue threshold) and the cost tracker's product types and payment methods. Rules: domain/dashboard-settings.ts.
import { z } from 'zod';
import { defineAbility, type AbilityContext } from './context.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { ServiceError, errors } from '../core/errors.js';
import { DashboardSettings, MAX_SYNCS_A_DAY, type DashboardSettingsRecord } from '../domain/dashboard-settings.js';
import { Confirm, DryRun, HexColor } from './schemas.js';
import { VulnerabilityService } from '../domain/vulnerabilities/service.js';

const s = { category: 'svc-settings', toolset: 'settings' } as const;
const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };
const write = { readonly: false, destructive: false, idempotent: true, openWorld: false };
const remove = { readonly: false, destructive: true, idempotent: true, openWorld: false };

const Slug = z.string().regex(/^[a-z0-9_-]{1,100}$/);
const Title = z.string().min(1).max(100);
const Icon = z
  .string()
  .regex(/^[a-z0-9_-]+:[a-z0-9 _-]+$/i)
  .max(100)
  .describe('type:name');
const ProductTypeView = z.object({ slug: z.string(), title: z.string(), color: z.string(), icon: z.string() });
const PaymentMethodView = z.object({ slug: z.string(), title: z.string() });

export const Settings = z.object({
  sync_frequency: z.number().int(),
  sync_time: z.string(),
  next_scheduled_sync: z.string().nullable(),
  sync_concurrency: z.number().int(),
  queue_threshold: z.number().int(),
  safe_updates: z.boolean(),
  product_types: z.array(ProductTypeView),
  payment_methods: z.array(PaymentMethodView),
  vulnerability_source: z.enum(['wordfence', 'wpvulnerability']).nullable(),
  vulnerability_api_key_set: z.boolean().describe('Whether a feed API key is stored (it is never shown again).'),
  vulnerability_refresh_hours: z.number().int(),
  vulnerability_feed_url: z.string().nullable(),
});

export async function settingsView(
  ctx: Pick<AbilityContext, 'dashboard' | 'vulnerabilities'>,
  r: DashboardSettingsRecord = ctx.dashboard.get(),
): Promise<z.infer<typeof Settings>> {
  const step = r.sync_frequency ? 86_400_000 / r.sync_frequency : 0;
  return {
    sync_frequency: r.sync_frequency,
    sync_time: r.sync_time,
    next_scheduled_sync: step ? new Date(DashboardSettings.lastSlot(Date.now(), r.sync_frequency, r.sync_time) + step).toISOString() : null,
    sync_concurrency: ctx.dashboard.syncConcurrency(),
    queue_threshold: ctx.dashboard.queueThreshold(),
    safe_updates: ctx.dashboard.safeUpdates(),
    product_types: r.product_types,
    payment_methods: r.payment_methods,
    ...(await ctx.vulnerabilities.settingsView()),
  };
}

export const getSettings = defineAbility({
  ...s,
  name: 'get-settings-v1',
  label: 'Get settings',
  description: 'Dashboard settings: sync schedule and concurrency, queue threshold, safe updates, cost product types, payment methods.',
  input: z.object({}).strict(),
  output: Settings,
  annotations: ro,
  execute: (_i, ctx) => settingsView(ctx),
});

export const SettingsInput = {
  sync_frequency: z.number().int().min(0).max(MAX_SYNCS_A_DAY).optional().describe('Automatic syncs a day, 0 = off.'),
  sync_time: z.string().max(5).optional().describe('First sync, HH:MM UTC.'),
  sync_concurrency: z.number().int().min(1).max(1024).nullable().optional().describe('Sites synced at once; null = default.'),
  queue_threshold: z
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .nullable()
    .optional()
    .describe('Sites above which batches run as jobs; null = default.'),
  vulnerability_source: z.enum(['wordfence', 'wpvulnerability']).nullable().optional().describe('Vulnerability feed; null = none.'),
  vulnerability_api_key: z.string().max(512).nullable().optional().describe('Feed API key, write-only; null removes it.'),
  vulnerability_refresh_hours: z.number().int().min(0).max(168).optional().describe('Feed refresh interval, 0 = off.'),
  vulnerability_feed_url: z.string().max(2000).nullable().optional().describe('Feed mirror URL; null = official.'),
  safe_updates: z.boolean().optional().describe('Update applies run in safe mode unless a call says safe: false (default true).'),
};

export const updateSettings = defineAbility({
  ...s,
  name: 'update-settings-v1',
  label: 'Update settings',
  description: 'Change dashboard settings; those not given keep their value.',
  input: z.object(SettingsInput).strict(),
  output: Settings,
  annotations: write,
  execute: async (i, ctx) => {
    const { vulnerability_source, vulnerability_api_key, vulnerability_refresh_hours, vulnerability_feed_url, ...rest } = i;
    const vulns = { vulnerability_source, vulnerability_api_key, vulnerability_refresh_hours, vulnerability_feed_url };
    const patch = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
    if (!Object.keys(patch).length && !VulnerabilityService.touches(vulns))
      throw new ServiceError('svc_missing_fields', `Give at least one setting: ${Object.keys(SettingsInput).join(', ')}.`, 400);
    if (VulnerabilityService.touches(vulns)) await ctx.vulnerabilities.updateSettings(vulns);
    return settingsView(ctx, Object.keys(patch).length ? await ctx.dashboard.update(patch) : undefined);
  },
});

export const addCostProductType = defineAbility({
  ...s,
  name: 'add-cost-product-type-v1',
  label: 'Add cost product type',
  description: 'Add a product type for costs; its slug is made from the title.',
  input: z.object({ title: Title, color: HexColor.optional(), icon: Icon.optional() }).strict(),
  output: ProductTypeView,
  annotations: { ...write, idempotent: false },
  execute: (i, ctx) => ctx.dashboard.addProductType(i),
});

export const updateCostProductType = defineAbility({
  ...s,
  name: 'update-cost-product-type-v1',
  label: 'Update cost product type',
  description: "Change a product type's title, color or icon (the slug stays).",
  input: z.object({ slug: Slug, title: Title.optional(), color: HexColor.optional(), icon: Icon.optional() }).strict(),
  output: ProductTypeView,
  annotations: write,
  execute: ({ slug, ...i }, ctx) => {
    if (!Object.values(i).some((v) => v !== undefined))
      throw new ServiceError('svc_missing_fields', 'Give title, color or icon to change.', 400);
    return ctx.dashboard.editProductType(slug, i);
  },
});

export const deleteCostProductType = defineAbility({
  ...s,
  name: 'delete-cost-product-type-v1',
  label: 'Delete cost product type',
  description: 'Delete an added product type that no cost uses.',
  input: z.object({ slug: Slug, confirm: Confirm, dry_run: DryRun }).strict(),
  output: z.object({ deleted: z.boolean(), dry_run: z.boolean(), product_type: ProductTypeView }),
  annotations: remove,
  acceptsPost: true,
  execute: async ({ slug, confirm, dry_run }, ctx) => {
    refuseBothFlags({ confirm, dry_run });
    const found = ctx.dashboard.productTypes().find((p) => p.slug === slug);
    if (!found) throw errors.productTypeNotFound(slug);
    if (dry_run) return { deleted: false, dry_run: true, product_type: found };
    requireConfirm({ confirm }, 'Deleting a product type requires confirm=true.');
    return { deleted: true, dry_run: false, product_type: await ctx.dashboard.deleteProductType(slug) };
  },
});

export const addPaymentMethod = defineAbility({
  ...s,
  name: 'add-payment-method-v1',
  label: 'Add payment method',
  description: 'Add a payment method for costs; its slug is made from the title.',
  input: z.object({ title: Title }).strict(),
  output: PaymentMethodView,
  annotations: { ...write, idempotent: false },
  execute: ({ title }, ctx) => ctx.dashboard.addPaymentMethod(title),
});

export const updatePaymentMethod = defineAbility({
  ...s,
  name: 'update-payment-method-v1',
  label: 'Update payment method',
  description: 'Rename a payment method (the slug stays).',
  input: z.object({ slug: Slug, title: Title }).strict(),
  output: PaymentMethodView,
  annotations: write,
  execute: ({ slug, title }, ctx) => ctx.dashboard.editPaymentMethod(slug, title),
});

export const deletePaymentMethod = defineAbility({
  ...s,
  name: 'delete-payment-method-v1',
  label: 'Delete payment method',
  description: 'Delete a payment method that no cost uses.',
  input: z.object({ slug: Slug, confirm: Confirm, dry_run: DryRun }).strict(),
  output: z.object({ deleted: z.boolean(), dry_run: z.boolean(), payment_method: PaymentMethodView }),
  annotations: remove,
  acceptsPost: true,
  execute: async ({ slug, confirm, dry_run }, ctx) => {
    refuseBothFlags({ confirm, dry_run });
    const found = ctx.dashboard.paymentMethods().find((p) => p.slug === slug);
    if (!found) throw errors.paymentMethodNotFound(slug);
    if (dry_run) return { deleted: false, dry_run: true, payment_method: found };
    requireConfirm({ confirm }, 'Deleting a payment method requires confirm=true.');
    return { deleted: true, dry_run: false, payment_method: await ctx.dashboard.deletePaymentMethod(slug) };
  },
});

export const settingsAbilities = [
  getSettings,
  updateSettings,
  addCostProductType,
  updateCostProductType,
  deleteCostProductType,
  addPaymentMethod,
  updatePaymentMethod,
  deletePaymentMethod,
];
