// REST v2 route table: one row per route of the spec, each naming the ability it runs. The spec's
// envelopes ({success:1, total, data}, action messages, batch results) are made here and nowhere else.
import { getSite, listSites, countSites, updateSite, deleteSite, suspendSite, unsuspendSite } from '../abilities/sites.js';
import { addTag, deleteTag, getTag, getTagClients, getTagSites, listTags, updateTag } from '../abilities/tags.js';
import { fullSite } from '../abilities/views.js';
import {
  addSite, checkSite, checkSites, disconnectSite, disconnectSites, getBatchJobStatus, reconnectSite, reconnectSites, syncSites,
} from '../abilities/child-sites.js';
import { ServiceError, asServiceError } from '../core/errors.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestArgs, type RestRoute, type RowRunner } from './rest-door.js';

const site = (a: RestArgs) => a.params.id_or_domain!;
const tagId = (a: RestArgs) => a.params.id!;
const simple = (s: { id: number; name: string; url: string; client_id: number | null }) =>
  ({ id: s.id, name: s.name, url: s.url, client_id: s.client_id });
/** Picks the named arguments that were given; everything else the caller sent is ignored. */
const pick = (a: RestArgs, ...names: string[]) =>
  Object.fromEntries(names.filter((n) => a.args[n] !== undefined && a.args[n] !== '').map((n) => [n, a.args[n]]));
const truthy = (v: unknown, def: boolean) => (v === undefined || v === '' ? def : ['1', 'true', 'yes', true, 1].includes(v as never));

const MAX_BATCH = 100;

/**
 * create[] / update[] / delete[] in one request: each item runs the single route's row and answers its
 * body, or {id, error} — one item's failure never fails the batch. Phases run in that order.
 */
function batch(rows: { create?: RestRoute; update: RestRoute; delete: RestRoute }, idParam: string) {
  return async (a: RestArgs, run: RowRunner) => {
    const list = (k: string): unknown[] => (Array.isArray(a.args[k]) ? a.args[k] as unknown[] : a.args[k] === undefined ? [] : [a.args[k]]);
    const phases = (['create', 'update', 'delete'] as const).map((k) => [k, list(k)] as const);
    if (phases.reduce((n, [, items]) => n + items.length, 0) > MAX_BATCH) {
      throw new ServiceError('svc_rest_request_entity_too_large', `Unable to accept more than ${MAX_BATCH} items for this request.`, 413);
    }
    const out: Record<string, unknown[]> = {};
    for (const [phase, items] of phases) {
      if (!items.length && a.args[phase] === undefined) continue;
      const row = rows[phase];
      if (!row) throw new ServiceError('svc_invalid_input', `This batch route has no ${phase} operation.`, 400);
      out[phase] = await Promise.all(items.map(async (item) => {
        const obj = item && typeof item === 'object' && !Array.isArray(item) ? { ...(item as Record<string, unknown>) } : {};
        const id = phase === 'create' ? 0 : phase === 'delete' ? item : obj.id;
        const idNum = typeof id === 'number' ? id : Number(id);
        if (phase !== 'create' && !(Number.isInteger(idNum) && idNum > 0)) {
          return { id: 0, error: new ServiceError('svc_invalid_input', `A ${phase} item needs a numeric id.`, 400).toBody() };
        }
        delete obj.id;
        try {
          return await run(row, { ...a, params: phase === 'create' ? {} : { [idParam]: String(idNum) }, args: phase === 'delete' ? {} : obj });
        } catch (e) {
          return { id: idNum, error: asServiceError(e).toBody() };
        }
      }));
    }
    return out;
  };
}

// Sites ---------------------------------------------------------------------------------------------

const listArgs = (a: RestArgs) => pick(a, 'page', 'per_page', 'search', 'include', 'exclude', 'status');

const sitesList = route(READ, '/sites', listSites, {
  input: listArgs,
  output: (r, { services, args }) => {
    const full = truthy(args.args.full_data, false);
    const withTags = truthy(args.args.with_tags, false);
    return {
      success: 1,
      total: r.total,
      data: r.items.map((s) => {
        if (full) return fullSite(services, services.sites.get(s.id)!);
        if (!withTags) return s;
        return { ...s, tags: services.tags.tagsOfSite(s.id).map((id) => ({ id, name: services.tags.get(id)!.name })) };
      }),
    };
  },
});

const sitesBasic = route(READ, '/sites/basic', listSites, {
  input: listArgs,
  output: (r) => ({ success: 1, total: r.total, data: r.items.map(simple) }),
});

const sitesCount = route(READ, '/sites/count', countSites, {
  input: (a) => pick(a, 'include', 'exclude', 'status'),
  output: (r) => ({ success: 1, total: r.total, count: r.total }),
});

const siteGet = route(READ, '/sites/:id_or_domain', getSite, {
  input: (a) => ({ site_id_or_domain: site(a), include_stats: true }),
  output: (r, { args }) => ({ success: 1, data: truthy(args.args.with_tags, true) ? r : { ...r, tags: undefined } }),
});

const siteEdit = route(EDIT, '/sites/:id_or_domain/edit', updateSite, {
  input: (a) => {
    const i: Record<string, unknown> = { site_id_or_domain: site(a), ...pick(a, 'name', 'notes', 'client_id') };
    if (a.args.note !== undefined) i.notes = a.args.note;
    if (a.args.client_id === null || a.args.client_id === 0 || a.args.client_id === '0') i.client_id = null;
    const groups = a.args.groupids ?? a.args.tags;
    if (groups !== undefined) i.tags = Array.isArray(groups) ? groups : String(groups);
    return i;
  },
  output: (r) => ({ success: 1, message: 'Site updated successfully.', data: r }),
});

const siteSuspend = route(EDIT, '/sites/:id_or_domain/suspend', suspendSite, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  output: (r) => ({ success: 1, message: 'Site suspended.', suspended: 1, data: simple(r.site) }),
});

const siteUnsuspend = route(EDIT, '/sites/:id_or_domain/unsuspend', unsuspendSite, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  output: (r) => ({ success: 1, message: 'Site unsuspended.', suspended: 0, data: simple(r.site) }),
});

const siteRemove = route(REMOVE, '/sites/:id_or_domain/remove', deleteSite, {
  input: (a) => ({ site_id_or_domain: site(a), confirm: true }),
  output: (r) => ({ success: 1, message: 'The site has been removed.', data: { id: r.site.id, name: r.site.name, url: r.site.url } }),
});

const siteAdd = route(CREATE, '/sites/add', addSite, {
  input: (a) => {
    const i: Record<string, unknown> = pick(a, 'url', 'name', 'admin', 'admin_username', 'admin_password', 'client_id', 'http_user', 'http_pass');
    if (a.args.adminpassword !== undefined) i.admin_password = a.args.adminpassword;
    if (a.args.ssl_verify !== undefined) i.ssl_verify = a.args.ssl_verify;
    const groups = a.args.groupids ?? a.args.tags;
    if (groups !== undefined && groups !== '') i.tags = Array.isArray(groups) ? groups : String(groups);
    return i;
  },
  output: (r) => ({ success: 1, message: 'Site successfully added.', data: r }),
});

/** A per-site error of a batch ability, answered as the single route's own error. */
function firstError(r: { errors?: Array<{ code: string; message: string; status?: number }> }): void {
  const e = r.errors?.[0];
  if (e) throw new ServiceError(e.code, e.message, e.status ?? 502);
}

const siteSync = route(EDIT, '/sites/:id_or_domain/sync', syncSites, {
  input: (a) => ({ site_ids_or_domains: [site(a)] }),
  output: (r, { services }) => {
    firstError(r);
    return { success: 1, message: 'Site synced.', data: fullSite(services, services.sites.get(r.synced![0]!.id)!, true) };
  },
});

/** include / exclude of the "all matched sites" routes. */
const allMatched = (a: RestArgs) => {
  const list = (v: unknown) => (v === undefined || v === '' ? undefined : Array.isArray(v) ? v : String(v).split(','));
  const include = list(a.args.include);
  return { ...(include ? { site_ids_or_domains: include } : {}), ...(list(a.args.exclude) ? { exclude_ids: list(a.args.exclude) } : {}) };
};
const queuedReply = (r: { job_id?: string; status_url?: string; total?: number; sites_queued?: number }, what: string) =>
  ({ success: 1, message: `${what} queued for background processing.`, job_id: r.job_id, status_url: r.status_url, total: r.sites_queued ?? r.total });

const sitesSync = route(EDIT, '/sites/sync', syncSites, {
  input: allMatched,
  output: (r) => (r.queued ? queuedReply(r, 'Sync')
    : { success: 1, total: (r.total_synced ?? 0) + (r.total_errors ?? 0), total_synced: r.total_synced, total_errors: r.total_errors, data: r.synced, errors: r.errors }),
});

const siteCheck = route(EDIT, '/sites/:id_or_domain/check', checkSite, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  output: (r) => ({ success: 1, data: { ...r.site, reachable: r.reachable, http_status: r.http_status, response_time_ms: r.response_time_ms } }),
});
const sitesCheck = route(EDIT, '/sites/check', checkSites, {
  input: allMatched,
  output: (r) => (r.queued ? queuedReply(r, 'Check') : { success: 1, total: r.results!.length, summary: r.summary, data: r.results, errors: r.errors }),
});

const siteReconnect = route(EDIT, '/sites/:id_or_domain/reconnect', reconnectSite, {
  input: (a) => ({ site_id_or_domain: site(a), ...pick(a, 'admin_password') }),
  output: (r) => ({ success: 1, message: 'Site reconnected.', reconnected: true, data: simple(r.site) }),
});
const sitesReconnect = route(EDIT, '/sites/reconnect', reconnectSites, {
  input: allMatched,
  output: (r) => (r.queued ? queuedReply(r, 'Reconnect') : { success: 1, total: (r.reconnected as unknown[]).length, data: r.reconnected, errors: r.errors }),
});

const siteDisconnect = route(EDIT, '/sites/:id_or_domain/disconnect', disconnectSite, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  output: (r) => ({ success: 1, message: r.child_notified ? 'Site disconnected.' : `Site disconnected here; the child was not told: ${r.child_error ?? 'it was already disconnected'}.`, child_notified: r.child_notified, data: simple(r.site) }),
});
const sitesDisconnect = route(EDIT, '/sites/disconnect', disconnectSites, {
  input: (a) => { const m = allMatched(a); return m.site_ids_or_domains ? m : { ...m, all: true }; },
  output: (r) => (r.queued ? queuedReply(r, 'Disconnect') : { success: 1, total: (r.disconnected as unknown[]).length, data: r.disconnected, errors: r.errors }),
});

const jobGet = route(READ, '/jobs/:job_id', getBatchJobStatus, {
  input: (a) => ({ job_id: a.params.job_id }),
  output: (r) => ({ success: 1, data: r }),
});

const sitesBatch: RestRoute = { methods: EDIT, path: '/sites/batch', handler: batch({ create: siteAdd, update: siteEdit, delete: siteRemove }, 'id_or_domain') };

// Tags ----------------------------------------------------------------------------------------------

const tagsList = route(READ, '/tags', listTags, {
  input: (a) => pick(a, 'page', 'per_page', 'search', 'include', 'exclude'),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const tagGet = route(READ, '/tags/:id', getTag, {
  input: (a) => ({ tag_id: tagId(a) }),
  output: (r) => ({ success: 1, data: r }),
});
const tagAdd = route(CREATE, '/tags/add', addTag, {
  input: (a) => pick(a, 'name', 'color'),
  output: (r) => ({ success: 1, message: 'Tag created successfully.', data: r }),
});
const tagEdit = route(EDIT, '/tags/:id/edit', updateTag, {
  input: (a) => ({ tag_id: tagId(a), ...pick(a, 'name', 'color') }),
  output: (r) => ({ success: 1, message: 'Tag updated successfully.', data: r }),
});
const tagRemove = route(REMOVE, '/tags/:id/remove', deleteTag, {
  input: (a) => ({ tag_id: tagId(a), confirm: true }),
  output: (r) => ({ success: 1, message: 'Tag deleted successfully.', data: r.tag }),
});
const tagSites = route(READ, '/tags/:id/sites', getTagSites, {
  input: (a) => ({ tag_id: tagId(a), ...pick(a, 'page', 'per_page') }),
  output: (r) => ({ success: 1, total: r.total, data: r.sites }),
});
const tagClients = route(READ, '/tags/:id/clients', getTagClients, {
  input: (a) => ({ tag_id: tagId(a), ...pick(a, 'page', 'per_page') }),
  output: (r) => ({ success: 1, total: r.total, data: r.clients }),
});
const tagsBatch: RestRoute = { methods: EDIT, path: '/tags/batch', handler: batch({ create: tagAdd, update: tagEdit, delete: tagRemove }, 'id') };

/** Static paths come before parameterised ones so that /sites/count is never read as a domain. */
export const restRoutes: readonly RestRoute[] = [
  sitesList, sitesBasic, sitesCount, sitesBatch, siteAdd, sitesSync, sitesCheck, sitesReconnect, sitesDisconnect,
  siteGet, siteEdit, siteSuspend, siteUnsuspend, siteRemove, siteSync, siteCheck, siteReconnect, siteDisconnect,
  jobGet,
  tagsList, tagAdd, tagsBatch, tagGet, tagEdit, tagRemove, tagSites, tagClients,
];
