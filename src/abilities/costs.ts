// Cost-tracker abilities (module cost-tracker): list, read, add, update, delete costs, the sites and clients
// a cost covers, and get-site-costs-v1 (a site's costs with monthly and yearly totals). Rules: domain/costs.ts.
import { z } from 'zod';
import { defineAbility } from './context.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { Page, paginate, perPage } from '../core/paging.js';
import { Client, clientView } from './client-views.js';
import {
  Cost,
  CostFields,
  CostId,
  CostStatus,
  FullSiteCostItem,
  PaymentType,
  ProductType,
  SiteCostItem,
  costView,
  siteCostView,
} from './cost-views.js';
import { Confirm, DryRun, ListedSite, SiteRef, paged, undescribed } from './schemas.js';
import { listedSite } from './views.js';

const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };
const costs = { category: 'svc-costs', toolset: 'costs', module: 'cost-tracker' } as const;

export const listCosts = defineAbility({
  ...costs,
  name: 'list-costs-v1',
  label: 'List costs',
  description:
    'List costs by name, filtered by status, category (product type) or type (payment type). Errors: ' + 'svc_module_not_available (501).',
  input: z
    .object({
      page: Page,
      per_page: perPage(20),
      search: z.string().default(''),
      include: z.array(z.number().int().min(1)).optional(),
      exclude: z.array(z.number().int().min(1)).optional(),
      status: z.array(CostStatus).optional().describe('Cost statuses.'),
      category: z.array(ProductType).optional().describe('Product types (any: all).'),
      type: z
        .enum(['any', ...PaymentType.options])
        .default('any')
        .describe('Payment type.'),
    })
    .strict(),
  output: paged(Cost),
  annotations: ro,
  execute: ({ page, per_page, ...f }, ctx) => {
    for (const c of f.category ?? []) if (c !== 'any') ctx.dashboard.assertProductType(c);
    const all = ctx.costs.list(f);
    return { items: paginate(all, page, per_page).map((c) => costView(ctx, c)), page, per_page, total: all.length };
  },
});

export const getCost = defineAbility({
  ...costs,
  name: 'get-cost-v1',
  label: 'Get cost',
  description:
    'One cost with next_renewal and sites_count (orphaned when every target it named is gone). Errors: ' +
    'svc_cost_not_found (404), svc_module_not_available (501).',
  input: z.object({ cost_id: CostId }).strict(),
  output: Cost,
  annotations: ro,
  execute: ({ cost_id }, ctx) => costView(ctx, ctx.costs.resolve(cost_id)),
});

export const addCost = defineAbility({
  ...costs,
  name: 'add-cost-v1',
  label: 'Add cost',
  description:
    'Record a cost (licence, hosting, service...) for sites, groups and/or clients (at least one); a ' +
    'subscription needs renewal_type. Errors: svc_invalid_input (400, naming the field), ' +
    'svc_module_not_available (501).',
  input: z.object(CostFields).partial().required({ name: true, price: true, payment_type: true, product_type: true }).strict(),
  output: Cost,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: false },
  execute: async (i, ctx) => costView(ctx, await ctx.costs.add(i)),
});

export const updateCost = defineAbility({
  ...costs,
  name: 'update-cost-v1',
  label: 'Update cost',
  description:
    'Change a cost: only the fields given (as in add-cost-v1); a target list replaces that list, one target ' +
    'must remain. Errors: svc_cost_not_found (404), svc_invalid_input (400), svc_module_not_available (501).',
  input: z
    .object({ cost_id: CostId, ...undescribed(CostFields) })
    .partial()
    .required({ cost_id: true })
    .strict(),
  output: Cost,
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ cost_id, ...fields }, ctx) => costView(ctx, await ctx.costs.edit(cost_id, fields)),
});

export const deleteCost = defineAbility({
  ...costs,
  name: 'delete-cost-v1',
  label: 'Delete cost',
  description:
    'Delete a cost (its sites, tags and clients are not touched). Errors: svc_confirmation_required ' +
    '(400), svc_invalid_input (both flags), svc_cost_not_found (404), svc_module_not_available (501).',
  input: z.object({ cost_id: CostId, confirm: Confirm, dry_run: DryRun }).strict(),
  output: z.object({
    deleted: z.boolean(),
    dry_run: z.boolean(),
    cost_id: z.number().int(),
    cost_name: z.string(),
    cost: Cost,
    would_affect: z.object({ id: z.number().int(), name: z.string(), sites_count: z.number().int() }).optional(),
    warnings: z.array(z.string()),
  }),
  annotations: { readonly: false, destructive: true, idempotent: true, openWorld: false },
  acceptsPost: true,
  execute: async (i, ctx) => {
    refuseBothFlags(i);
    const cost = costView(ctx, ctx.costs.resolve(i.cost_id));
    const base = { cost_id: cost.id, cost_name: cost.name, cost };
    if (i.dry_run) {
      return {
        deleted: false,
        dry_run: true,
        ...base,
        would_affect: { id: cost.id, name: cost.name, sites_count: cost.sites_count },
        warnings: [],
      };
    }
    requireConfirm(i, 'Cost deletion requires confirmation. Set confirm:true to proceed.');
    await ctx.costs.remove(cost.id);
    return { deleted: true, dry_run: false, ...base, warnings: [] };
  },
});

const costPage = { cost_id: CostId, page: Page, per_page: perPage(20) };

export const getCostSites = defineAbility({
  ...costs,
  name: 'get-cost-sites-v1',
  label: 'Sites of a cost',
  description:
    'The sites a cost covers (named, through a tag or through a client). Errors: svc_cost_not_found ' +
    '(404), svc_module_not_available (501).',
  input: z.object(costPage).strict(),
  output: z.object({
    cost_id: z.number().int(),
    cost_name: z.string(),
    sites: z.array(ListedSite),
    items: z.array(ListedSite),
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int(),
  }),
  annotations: ro,
  execute: ({ cost_id, page, per_page }, ctx) => {
    const cost = ctx.costs.resolve(cost_id);
    const covered = new Set(ctx.costs.coveredSites(cost));
    const all = covered.size ? ctx.sites.filter({ include: [...covered] }, () => []) : [];
    const list = paginate(all, page, per_page).map(listedSite);
    return { cost_id, cost_name: cost.name, sites: list, items: list, page, per_page, total: all.length };
  },
});

const CostClient = Client.extend({ sites_covered: z.number().int().describe("How many of this client's sites the cost covers.") });

export const getCostClients = defineAbility({
  ...costs,
  name: 'get-cost-clients-v1',
  label: 'Clients of a cost',
  description:
    'The clients a cost applies to, each with sites_covered. Errors: svc_cost_not_found (404), ' + 'svc_module_not_available (501).',
  input: z.object(costPage).strict(),
  output: z.object({
    cost_id: z.number().int(),
    cost_name: z.string(),
    clients: z.array(CostClient),
    items: z.array(CostClient),
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int(),
  }),
  annotations: ro,
  execute: ({ cost_id, page, per_page }, ctx) => {
    const cost = ctx.costs.resolve(cost_id);
    const all = ctx.costs.clientsOfCost(cost);
    const list = paginate(all, page, per_page).map(({ client, sites_covered }) => ({ ...clientView(ctx, client), sites_covered }));
    return { cost_id, cost_name: cost.name, clients: list, items: list, page, per_page, total: all.length };
  },
});

export const getSiteCosts = defineAbility({
  ...costs,
  category: 'svc-sites',
  name: 'get-site-costs-v1',
  label: 'Costs of a site',
  description:
    'The costs that apply to a site, its share of each, and monthly/yearly totals. Errors: ' +
    'svc_site_not_found (404), svc_module_not_available (501).',
  input: z
    .object({
      site_id_or_domain: SiteRef,
      full: z.boolean().default(false).describe("Each cost also with its record's fields, as get-cost-v1."),
    })
    .strict(),
  output: z.object({
    site_id: z.number().int(),
    site_url: z.string(),
    costs: z.array(z.union([FullSiteCostItem, SiteCostItem])),
    total: z.number().int().describe('Number of costs listed.'),
    total_monthly: z.number(),
    total_yearly: z.number(),
  }),
  annotations: ro,
  acceptsPost: true,
  execute: ({ site_id_or_domain, full }, ctx) => {
    const site = ctx.sites.resolve(site_id_or_domain);
    const { items, total_monthly, total_yearly } = ctx.costs.siteCosts(site.id);
    const view = (x: (typeof items)[number]) => (full ? { ...costView(ctx, x.cost), ...siteCostView(ctx, x) } : siteCostView(ctx, x));
    return { site_id: site.id, site_url: site.url, costs: items.map(view), total: items.length, total_monthly, total_yearly };
  },
});

export const costAbilities = [listCosts, getCost, addCost, updateCost, deleteCost, getCostSites, getCostClients, getSiteCosts];
