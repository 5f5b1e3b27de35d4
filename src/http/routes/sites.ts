// REST v2 site routes (and the job status route their batches point to).
import { getSite, listSites, countSites, updateSite, deleteSite, suspendSite, unsuspendSite } from '../../abilities/sites.js';
import {
  addSite,
  checkSite,
  checkSites,
  disconnectSite,
  disconnectSites,
  getBatchJobStatus,
  reconnectSite,
  reconnectSites,
  syncSites,
} from '../../abilities/child-sites.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestArgs, type RestContext, type RestRoute } from '../rest-door.js';
import { jobStatusUrl } from '../job-links.js';
import { either, firstError, flag, list, pick, simple, site } from './args.js';
import { Errors, Flag, Int, ListArg, Queued, SimpleSite, done, listed, ok } from './answers.js';
import { z } from 'zod';
import { BasicSite, FullSite, ListedSite, SiteStatus } from '../../abilities/schemas.js';

const FullData = Flag('Answer full site records (default 0).');
const WithTags = Flag("Add each site's tags (default 0 on lists, 1 on one site).");
const SiteWithTags = FullSite.extend({ tags: FullSite.shape.tags.optional() });
const EXAMPLE_SITE = {
  id: 12,
  url: 'https://shop.example.com/',
  name: 'Shop',
  status: 'connected',
  client_id: 3,
  admin_username: 'admin',
  wp_version: '6.8.2',
  php_version: '8.2.28',
  child_version: '6.1',
  last_sync: '2025-11-20T08:30:00.000Z',
  notes: '',
  tags: [{ id: 2, name: 'Production' }],
  stats: { plugin_updates: 2, theme_updates: 0, wp_update_available: false, health_score: 92 },
};
const matchedArgs = {
  include: ListArg(z.union([Int, z.string()]), 'Only these sites (IDs or domains); default: every site the action applies to.'),
  exclude: ListArg(Int, 'Leave these site IDs out.'),
};

const listArgs = (a: RestArgs) => pick(a, 'page', 'per_page', 'search', 'include', 'exclude', 'status');

const sitesList = route(READ, '/sites', listSites, {
  input: (a) => ({ ...listArgs(a), full: flag(a, 'full_data', false), with_tags: flag(a, 'with_tags', false) }),
  args: { full_data: FullData, with_tags: WithTags },
  example: {
    response: {
      success: 1,
      total: 2,
      data: [
        { id: 12, url: 'https://shop.example.com/', name: 'Shop', status: 'connected', client_id: 3 },
        { id: 14, url: 'https://blog.example.org/', name: 'Blog', status: 'disconnected', client_id: null },
      ],
    },
  },
  answers: listed(z.union([ListedSite, SiteWithTags, ListedSite.extend({ tags: FullSite.shape.tags })])),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});

const sitesBasic = route(READ, '/sites/basic', listSites, {
  input: listArgs,
  answers: listed(SimpleSite),
  output: (r) => ({ success: 1, total: r.total, data: r.items.map(simple) }),
});

const sitesCount = route(READ, '/sites/count', countSites, {
  input: (a) => pick(a, 'include', 'exclude', 'status'),
  answers: ok({ total: Int, count: Int }),
  output: (r) => ({ success: 1, total: r.total, count: r.total }),
});

const siteGet = route(READ, '/sites/:id_or_domain', getSite, {
  input: (a) => ({ site_id_or_domain: site(a), include_stats: true }),
  args: { with_tags: WithTags },
  answers: ok({ data: SiteWithTags }),
  example: { response: { success: 1, data: EXAMPLE_SITE } },
  output: (r, { args }) => ({ success: 1, data: flag(args, 'with_tags', true) ? r : { ...r, tags: undefined } }),
});

const siteEdit = route(EDIT, '/sites/:id_or_domain/edit', updateSite, {
  args: {
    note: z.string().max(5000).optional().describe("Upstream's name for notes."),
    groupids: ListArg(Int, "Upstream's name for tags: the site's tag IDs (replaces them)."),
    tags: ListArg(Int, "The site's tag IDs (replaces them)."),
  },
  answers: done(FullSite),
  errors: { 404: ['svc_client_not_found'] },
  input: (a) => {
    const i: Record<string, unknown> = { site_id_or_domain: site(a), ...pick(a, 'name', 'client_id', 'health_urls', 'health_keyword') };
    // An empty `notes` is no change (as any empty field); upstream's `note` sent empty clears them.
    const notes = either(a, 'notes', 'note');
    if (notes !== undefined && (notes !== '' || a.args.note !== undefined)) i.notes = notes;
    if (a.args.client_id === null || a.args.client_id === 0 || a.args.client_id === '0') i.client_id = null;
    const groups = either(a, 'groupids', 'tags');
    if (groups !== undefined) i.tags = Array.isArray(groups) ? groups : String(groups);
    return i;
  },
  output: (r) => ({ success: 1, message: 'Site updated successfully.', data: r }),
});

const siteSuspend = route(EDIT, '/sites/:id_or_domain/suspend', suspendSite, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  answers: done(SimpleSite, { suspended: z.literal(1) }),
  output: (r) => ({ success: 1, message: 'Site suspended.', suspended: 1, data: simple(r.site) }),
});

const siteUnsuspend = route(EDIT, '/sites/:id_or_domain/unsuspend', unsuspendSite, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  answers: done(SimpleSite, { suspended: z.literal(0) }),
  output: (r) => ({ success: 1, message: 'Site unsuspended.', suspended: 0, data: simple(r.site) }),
});

const siteRemove = route(REMOVE, '/sites/:id_or_domain/remove', deleteSite, {
  input: (a) => ({ site_id_or_domain: site(a), confirm: true }),
  answers: done(BasicSite, { child_notified: z.boolean(), warnings: z.array(z.string()).optional() }),
  output: (r) => ({
    success: 1,
    message: 'The site has been removed.',
    data: { id: r.site.id, name: r.site.name, url: r.site.url },
    child_notified: r.child_notified ?? false,
    ...(r.warnings.length ? { warnings: r.warnings } : {}),
  }),
});

const siteAdd = route(CREATE, '/sites/add', addSite, {
  args: {
    ssl_verify: z
      .union([z.boolean(), z.literal(0), z.literal(1), z.literal(2)])
      .optional()
      .describe('Verify TLS (default true).'),
    groupids: ListArg(Int, "Upstream's name for tags."),
    tags: ListArg(Int, 'Tag IDs to put the site in.'),
  },
  answers: done(FullSite),
  input: (a) => {
    const i: Record<string, unknown> = pick(a, 'url', 'name', 'admin', 'admin_username', 'client_id', 'http_user', 'http_pass');
    const password = either(a, 'admin_password', 'adminpassword');
    if (password !== undefined && password !== '') i.admin_password = password;
    if (a.args.ssl_verify !== undefined) i.ssl_verify = a.args.ssl_verify;
    const groups = either(a, 'groupids', 'tags');
    if (groups !== undefined && groups !== '') i.tags = Array.isArray(groups) ? groups : String(groups);
    return i;
  },
  output: (r) => ({ success: 1, message: 'Site successfully added.', data: r }),
});

const siteSync = route(EDIT, '/sites/:id_or_domain/sync', syncSites, {
  input: (a) => ({ site_ids_or_domains: [site(a)], full: true }),
  answers: done(FullSite),
  output: (r) => {
    firstError(r);
    return { success: 1, message: 'Site synced.', data: r.synced![0]! };
  },
});

/** include / exclude of the "all matched sites" routes. */
const allMatched = (a: RestArgs) => {
  const include = list(a.args.include);
  return { ...(include ? { site_ids_or_domains: include } : {}), ...(list(a.args.exclude) ? { exclude_ids: list(a.args.exclude) } : {}) };
};
/** A queued batch: its job id and where this door serves the job's status. */
const queuedReply = (r: { job_id?: string; total?: number; sites_queued?: number }, what: string, ctx: RestContext) => ({
  success: 1,
  message: `${what} queued for background processing.`,
  job_id: r.job_id,
  status_url: r.job_id ? jobStatusUrl(ctx.restBase, r.job_id) : undefined,
  total: r.sites_queued ?? r.total,
});

const sitesSync = route(EDIT, '/sites/sync', syncSites, {
  input: allMatched,
  args: matchedArgs,
  answers: z.union([
    Queued,
    ok({ total: Int, total_synced: Int.optional(), total_errors: Int.optional(), data: z.array(BasicSite).optional(), errors: Errors }),
  ]),
  output: (r, ctx) =>
    r.queued
      ? queuedReply(r, 'Sync', ctx)
      : {
          success: 1,
          total: (r.total_synced ?? 0) + (r.total_errors ?? 0),
          total_synced: r.total_synced,
          total_errors: r.total_errors,
          data: r.synced,
          errors: r.errors,
        },
});

const siteCheck = route(EDIT, '/sites/:id_or_domain/check', checkSite, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  answers: done(
    SimpleSite.extend({
      status: z.union([z.literal(0), z.literal(1)]).describe("Upstream's number: 1 when the site answered 200–206, else 0."),
      http_code: Int.describe("Upstream's name for http_status."),
      site_status: SiteStatus,
      reachable: z.boolean(),
      http_status: Int,
      response_time_ms: Int,
    }),
  ),
  output: (r) => ({
    success: 1,
    message: r.reachable ? 'Site is reachable.' : 'Site is not reachable.',
    data: {
      ...simple(r.site),
      // Upstream answers status and http_code as numbers (REST v2 reference §0.4); the site's own status is site_status.
      status: r.reachable ? (1 as const) : (0 as const),
      http_code: r.http_status,
      site_status: r.site.status,
      reachable: r.reachable,
      http_status: r.http_status,
      response_time_ms: r.response_time_ms,
    },
  }),
});
const sitesCheck = route(EDIT, '/sites/check', checkSites, {
  input: allMatched,
  args: matchedArgs,
  answers: z.union([
    Queued,
    ok({ total: Int, summary: checkSites.output.shape.summary, data: checkSites.output.shape.results, errors: Errors }),
  ]),
  output: (r, ctx) =>
    r.queued
      ? queuedReply(r, 'Check', ctx)
      : { success: 1, total: r.results!.length, summary: r.summary, data: r.results, errors: r.errors },
});

const siteReconnect = route(EDIT, '/sites/:id_or_domain/reconnect', reconnectSite, {
  input: (a) => ({ site_id_or_domain: site(a), ...pick(a, 'admin_password') }),
  answers: done(SimpleSite, { reconnected: z.literal(true) }),
  output: (r) => ({ success: 1, message: 'Site reconnected.', reconnected: true, data: simple(r.site) }),
});
const sitesReconnect = route(EDIT, '/sites/reconnect', reconnectSites, {
  input: allMatched,
  args: matchedArgs,
  answers: z.union([Queued, ok({ total: Int, data: z.array(BasicSite), errors: Errors })]),
  output: (r, ctx) =>
    r.queued
      ? queuedReply(r, 'Reconnect', ctx)
      : { success: 1, total: (r.reconnected as unknown[]).length, data: r.reconnected, errors: r.errors },
});

const siteDisconnect = route(EDIT, '/sites/:id_or_domain/disconnect', disconnectSite, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  answers: done(SimpleSite, { child_notified: z.boolean() }),
  output: (r) => ({
    success: 1,
    message: r.child_notified
      ? 'Site disconnected.'
      : `Site disconnected here; the child was not told: ${r.child_error ?? 'it was already disconnected'}.`,
    child_notified: r.child_notified,
    data: simple(r.site),
  }),
});
const sitesDisconnect = route(EDIT, '/sites/disconnect', disconnectSites, {
  args: matchedArgs,
  answers: z.union([Queued, ok({ total: Int, data: z.array(BasicSite), errors: Errors })]),
  input: (a) => {
    const m = allMatched(a);
    return m.site_ids_or_domains ? m : { ...m, all: true };
  },
  output: (r, ctx) =>
    r.queued
      ? queuedReply(r, 'Disconnect', ctx)
      : { success: 1, total: (r.disconnected as unknown[]).length, data: r.disconnected, errors: r.errors },
});

const jobGet = route(READ, '/jobs/:job_id', getBatchJobStatus, {
  input: (a) => ({ job_id: a.params.job_id }),
});

/** The rows a site batch runs (routes/batch.ts): create/update/delete and the per-site actions of this file. */
export const siteBatchRows = {
  rows: { create: siteAdd, update: siteEdit, delete: siteRemove },
  actions: {
    sync: siteSync,
    reconnect: siteReconnect,
    disconnect: siteDisconnect,
    suspend: siteSuspend,
    check: siteCheck,
    remove: siteRemove,
  },
};

/** Static paths come before parameterised ones so that /sites/count is never read as a domain. */
export const siteRoutes: readonly RestRoute[] = [
  sitesList,
  sitesBasic,
  sitesCount,
  siteAdd,
  sitesSync,
  sitesCheck,
  sitesReconnect,
  sitesDisconnect,
  siteGet,
  siteEdit,
  siteSuspend,
  siteUnsuspend,
  siteRemove,
  siteSync,
  siteCheck,
  siteReconnect,
  siteDisconnect,
  jobGet,
];
