// REST v2 cost routes (module cost-tracker), and the costs of one site (GET /sites/{id_or_domain}/costs).
// With the module off every one of them answers 501 svc_module_not_available, whatever else is wrong with
// the request: upstream removes the routes altogether, so the module comes before argument checks here.
import { addCost, deleteCost, getCost, getCostClients, getCostSites, getSiteCosts, listCosts, updateCost } from '../../abilities/costs.js';
import { ServiceError, toServiceError } from '../../core/errors.js';
import { EDIT, READ, REMOVE, route, type RestArgs, type RestRoute } from '../rest-door.js';
import { batch, pathId, pick } from './args.js';
import { z } from 'zod';
import { Cost, FullSiteCostItem } from '../../abilities/cost-views.js';
import { done, listed } from './answers.js';

const COST_FIELDS = [
  'name',
  'price',
  'payment_type',
  'product_type',
  'product_slug',
  'license_type',
  'renewal_type',
  'last_renewal',
  'payment_method',
  'cost_tracker_status',
  'url',
  'note',
  'product_color',
  'icon_hidden',
  'sites',
  'groups',
  'clients',
] as const;

/**
 * A failed cost route: REST's own code for the cost named in the path (mainwp_rest_invalid_costs_id), also for an id
 * no record can have. (With the module off the door has answered 501 before the row ran.)
 */
function costError(e: unknown): never {
  const err = toServiceError(e);
  const badPathId = err.code === 'rest_invalid_param' && 'cost_id' in ((err.data.params ?? {}) as object);
  if (err.code === 'svc_cost_not_found' || badPathId) throw new ServiceError('svc_rest_invalid_costs_id', 'Invalid or not found ID.', 404);
  throw err;
}

function costRow(row: RestRoute): RestRoute {
  const errors = { ...row.doc?.errors, 404: [...(row.doc?.errors?.[404] ?? []), 'svc_rest_invalid_costs_id'] };
  return { ...row, doc: { ...row.doc, errors }, handler: (a, run) => run(row, a).catch(costError) };
}

/** Product types and payment methods must be ones of the cost-tracker settings (domain/dashboard-settings.ts). */
const LIST_ERRORS = { 400: ['svc_invalid_product_type', 'svc_invalid_payment_method'] } as const;

const costId = (a: RestArgs) => ({ cost_id: pathId(a) });
/** Fields the caller gave; null clears the nullable ones (renewal_type, last_renewal, url, product_color). */
const costFields = (a: RestArgs) => ({
  ...pick(a, ...COST_FIELDS),
  ...Object.fromEntries(COST_FIELDS.filter((f) => a.args[f] === null).map((f) => [f, null])),
});

const costsList = costRow(
  route(READ, '/costs', listCosts, {
    input: (a) => pick(a, 'page', 'per_page', 'search', 'include', 'exclude', 'status', 'category', 'type'),
    // category: a product type.
    errors: { 400: ['svc_invalid_product_type'] },
    answers: listed(Cost),
    output: (r) => ({ success: 1, total: r.total, data: r.items }),
  }),
);
const costAdd = costRow(
  route(EDIT, '/costs/add', addCost, {
    input: costFields,
    errors: LIST_ERRORS,
    answers: done(Cost),
    output: (r) => ({ success: 1, message: 'Cost created successfully.', data: r }),
  }),
);
const costGet = costRow(
  route(READ, '/costs/:id', getCost, {
    input: costId,
  }),
);
const costEdit = costRow(
  route(EDIT, '/costs/:id/edit', updateCost, {
    input: (a) => ({ ...costId(a), ...costFields(a) }),
    errors: LIST_ERRORS,
    answers: done(Cost),
    output: (r) => ({ success: 1, message: 'Cost updated successfully.', data: r }),
  }),
);
const costRemove = costRow(
  route(REMOVE, '/costs/:id/remove', deleteCost, {
    input: (a) => ({ ...costId(a), confirm: true }),
    answers: done(Cost),
    output: (r) => ({ success: 1, message: 'Cost deleted successfully.', data: r.cost }),
  }),
);
const costSites = costRow(
  route(READ, '/costs/:id/sites', getCostSites, {
    input: (a) => ({ ...costId(a), ...pick(a, 'page', 'per_page') }),
    answers: listed(getCostSites.output.shape.sites.element),
    output: (r) => ({ success: 1, total: r.total, data: r.sites }),
  }),
);
const costClients = costRow(
  route(READ, '/costs/:id/clients', getCostClients, {
    input: (a) => ({ ...costId(a), ...pick(a, 'page', 'per_page') }),
    answers: listed(getCostClients.output.shape.clients.element),
    output: (r) => ({ success: 1, total: r.total, data: r.clients }),
  }),
);

const runBatch = batch({ create: costAdd, update: costEdit, delete: costRemove }, 'id');
/** One entry per item, each with its own success: the route's body (success 1) or {id, success: 0, error}. */
export const costsBatch: RestRoute = {
  methods: EDIT,
  path: '/costs/batch',
  module: 'cost-tracker',
  doc: {
    summary: 'Cost batch',
    description: 'Create, edit and delete costs in one request.',
    batch: runBatch.shape,
    errors: { 501: ['svc_module_not_available'] },
  },
  handler: async (a, run) => {
    const out = await runBatch(a, run);
    const failed = (e: unknown): e is { id: number; error: unknown } => !!e && typeof e === 'object' && 'error' in e;
    return Object.fromEntries(
      Object.entries(out).map(([phase, entries]) => [
        phase,
        entries.map((e) => (failed(e) ? { id: e.id, success: 0, error: e.error } : e)),
      ]),
    );
  },
};

const siteCosts = route(READ, '/sites/:id_or_domain/costs', getSiteCosts, {
  // REST lists full records (REST v2 reference §7.3); the ability's short view stays the other doors' default.
  input: (a) => ({ site_id_or_domain: a.params.id_or_domain!, full: true }),
  answers: listed(FullSiteCostItem, { total_monthly: z.number(), total_yearly: z.number() }),
  output: (r) => ({ success: 1, total: r.total, total_monthly: r.total_monthly, total_yearly: r.total_yearly, data: r.costs }),
});

/** Static paths before parameterised ones. */
export const costRoutes: readonly RestRoute[] = [
  costsList,
  costAdd,
  costsBatch,
  costGet,
  costEdit,
  costRemove,
  costSites,
  costClients,
  siteCosts,
];
