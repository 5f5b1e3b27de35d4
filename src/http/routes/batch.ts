// Batches: /sites/batch (create, update, delete and the per-site actions of upstream: sync, check, plugins, …) and
// upstream's combined POST /batch, one request holding site, tag, client and cost operations.
import { ServiceError } from '../../core/errors.js';
import { EDIT, type BatchShape, type RestArgs, type RestRoute, type RowRunner } from '../rest-door.js';
import { MAX_BATCH, batch, batchItems } from './args.js';
import { runClientsBatch } from './clients.js';
import { costsBatch } from './costs.js';
import { siteBatchReads } from './plugins.js';
import { siteBatchRows } from './sites.js';
import { runTagsBatch } from './tags.js';

const siteActions = { ...siteBatchRows.actions, ...siteBatchReads };
const runSitesBatch = batch(siteBatchRows.rows, 'id_or_domain', siteActions);

export const sitesBatch: RestRoute = {
  methods: EDIT,
  path: '/sites/batch',
  handler: runSitesBatch,
  doc: {
    summary: 'Site batch',
    description: 'Add, edit and remove sites, and run per-site actions, in one request.',
    batch: runSitesBatch.shape,
  },
};

/** Each controller of the combined batch: its own batch, and the operations counted towards the limit. */
const CONTROLLERS: Record<string, { run: (a: RestArgs, run: RowRunner) => Promise<unknown>; ops: readonly string[]; shape: BatchShape }> = {
  sites: { run: runSitesBatch, ops: ['create', 'update', 'delete', ...Object.keys(siteActions)], shape: runSitesBatch.shape },
  tags: { run: runTagsBatch, ops: ['create', 'update', 'delete'], shape: runTagsBatch.shape },
  clients: { run: runClientsBatch, ops: ['create', 'update', 'delete'], shape: runClientsBatch.shape },
  costs: { run: (a, run) => costsBatch.handler!(a, run), ops: ['create', 'update', 'delete'], shape: costsBatch.doc!.batch! },
};

/**
 * POST /batch: `{"sites": {"sync": [1, 2]}, "tags": {"create": [{…}]}, …}` → the same keys with one result per item
 * (the single route's body, or {id, error}). At most 100 items in all (413); a controller or an operation it does
 * not have is refused (400) rather than skipped; an empty body answers {}.
 */
export const globalBatch: RestRoute = {
  methods: EDIT,
  path: '/batch',
  doc: {
    summary: 'Combined batch',
    description: 'Site, tag, client and cost batches in one request, keyed by controller.',
    controllers: Object.fromEntries(Object.entries(CONTROLLERS).map(([k, c]) => [k, c.shape])),
  },
  handler: async (a, run) => {
    // Own keys of CONTROLLERS only: `in` would take "__proto__", "constructor", … for controllers (a 500).
    const unknown = Object.keys(a.args).filter((k) => !Object.hasOwn(CONTROLLERS, k) && !k.startsWith('_'));
    if (unknown.length) {
      throw new ServiceError(
        'rest_invalid_param',
        `Unknown batch controller(s): ${unknown.join(', ')}. This batch takes: ${Object.keys(CONTROLLERS).join(', ')}.`,
        400,
        {
          params: Object.fromEntries(
            unknown.map((k) => [k, k === 'updates' ? 'Updates are not supported by sitefleet yet.' : 'Unknown batch controller.']),
          ),
        },
      );
    }
    const bodies = Object.entries(a.args)
      .filter(([k]) => Object.hasOwn(CONTROLLERS, k))
      .map(([k, v]) => {
        if (!v || typeof v !== 'object' || Array.isArray(v))
          throw new ServiceError('rest_invalid_param', `${k} must be an object of operation lists.`, 400, {
            params: { [k]: 'Not an object.' },
          });
        return [k, v as Record<string, unknown>] as const;
      });
    const total = bodies.reduce((n, [k, v]) => n + batchItems(v, CONTROLLERS[k]!.ops), 0);
    if (total > MAX_BATCH)
      throw new ServiceError('svc_rest_request_entity_too_large', `Unable to accept more than ${MAX_BATCH} items for this request.`, 413);
    const out: Record<string, unknown> = {};
    for (const [k, v] of bodies) out[k] = await CONTROLLERS[k]!.run({ ...a, args: v }, run);
    return out;
  },
};

export const batchRoutes: readonly RestRoute[] = [sitesBatch, globalBatch];
