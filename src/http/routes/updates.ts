// REST v2 routes for updates, on upstream's paths (updates reference §6) but on top of the fixed abilities: paging
// and include/exclude by site id on /updates, working /updates/ignored routes, slug-keyed ignore rules, real
// summaries and the child's own error text. Also unignore routes (DELETE), which upstream lacks.
import {
  getSiteUpdates,
  ignoreSiteCore,
  ignoreSitePlugins,
  ignoreSiteThemes,
  listIgnoredUpdates,
  listUpdates,
  runUpdates,
  updateSiteCore,
  updateSitePlugins,
  updateSiteThemes,
  updateSiteTranslations,
} from '../../abilities/updates.js';
import { cancelBatchJob } from '../../abilities/child-sites.js';
import { ServiceError } from '../../core/errors.js';
import { EDIT, READ, REMOVE, route, type RestArgs } from '../rest-door.js';
import { either, flag, list, pick, site } from './args.js';
import { z } from 'zod';
import { CHILD_ERRORS, Int, ListArg, done, ok, okOrNot } from './answers.js';

/** `type`: REST's own names (wp, plugins, themes, translations, all), one or a comma list. */
function types(a: RestArgs): string[] | undefined {
  const values = list(either(a, 'type', 'types'))
    ?.map((v) => String(v).trim().toLowerCase())
    .filter(Boolean);
  if (!values?.length || values.includes('all')) return undefined;
  return values.map((v) => (v === 'wp' ? 'core' : v));
}
const ids = (v: unknown) => list(v)?.map((x) => (/^\s*\d+\s*$/.test(String(x)) ? Number(x) : x));
const slugs = (a: RestArgs) =>
  list(either(a, 'slug', 'slugs'))
    ?.map((v) => String(v).trim())
    .filter(Boolean);
// safe / force go to the ability as given: the door's coercion reads them as every flag and refuses anything else.
const flags = (a: RestArgs) => ({ dry_run: flag(a, 'dry_run', false), ...pick(a, 'safe', 'force') });

// What the rows read beyond their abilities' fields, and what they answer.
const SiteIds = ListArg(z.union([Int, z.string()]), 'Only these sites (IDs or domains); default: every site.');
const TypeArg = ListArg(
  z.enum(['wp', 'core', 'plugins', 'themes', 'translations', 'all']),
  'Update types, one or a comma list (wp = core; all or none: every type).',
);
const IgnoreTypeArg = ListArg(
  z.enum(['wp', 'core', 'plugins', 'themes', 'all']),
  'Rule types, one or a comma list (wp = core; all or none: every type).',
);
const typeArgs = { type: TypeArg, types: TypeArg.describe('Same as type.') };
const ignoreTypeArgs = { type: IgnoreTypeArg, types: IgnoreTypeArg.describe('Same as type.') };
const SlugArg = ListArg(z.string(), 'Only these items (plugin files, theme stylesheets, translation slugs), one or a comma list.');
const slugArgs = { slug: SlugArg, slugs: SlugArg.describe('Same as slug.') };
const ignoreSlugArg = {
  slug: ListArg(z.string(), 'The plugin files or theme stylesheets, one or a comma list; none: the whole type (a "*" rule).'),
};

const L = listUpdates.output.shape;
const R = runUpdates.output.shape;
/** runOutput: success 0 when an item failed; a dry run lists what would be updated; a queued run names its job. */
const runAnswer = (updated: z.ZodType = R.updated) =>
  okOrNot({
    dry_run: z.literal(true).optional(),
    would_update: R.would_update,
    queued: z.literal(true).optional(),
    job_id: z.string().optional(),
    data: z.object({ updated, errors: R.errors, skipped: R.skipped, rolled_back: R.rolled_back }),
    summary: R.summary,
    safe: R.safe,
  });
const RunAnswer = runAnswer();
const ruleAnswer = okOrNot({ message: z.string(), changed: Int });

// Errors the abilities' descriptions do not name. The child's failures of a refresh (a read ability: not derived).
const REFRESH_ERRORS = { 400: ['svc_address_not_allowed'], ...CHILD_ERRORS };
/**
 * A path site the door cannot tell REST's own code for (a number it does not read as the id, such as -0); on the
 * ignore routes also a site removed while its rule was being written.
 */
const SITE_NOT_FOUND = { 404: ['svc_site_not_found'] };

const runOutput = (r: {
  dry_run?: boolean;
  updated: unknown;
  errors: unknown[];
  skipped: unknown[];
  rolled_back?: unknown[];
  summary: unknown;
  would_update?: unknown[];
  queued?: boolean;
  job_id?: string;
  safe?: boolean;
}) => ({
  success: r.errors.length ? 0 : 1,
  ...(r.dry_run ? { dry_run: true, would_update: r.would_update } : {}),
  ...(r.queued ? { queued: true, job_id: r.job_id } : {}),
  data: { updated: r.updated, errors: r.errors, skipped: r.skipped, ...(r.rolled_back ? { rolled_back: r.rolled_back } : {}) },
  summary: r.summary,
  ...(r.safe !== undefined ? { safe: r.safe } : {}),
});

/**
 * The path's site, not found: an error item of the one site selected, raised about that site, so that the door
 * answers REST's own code for it (svc_rest_invalid_site_id / _data), as for every route with a site in its path.
 */
const pathSiteError = (e: { code: string; message: string }, a: RestArgs) =>
  new ServiceError(e.code, e.message, 404, {}, { subject: { kind: 'site', ref: site(a) } });

const updates = route(READ, '/updates', listUpdates, {
  input: (a) => ({
    site_ids_or_domains: ids(a.args.include) ?? [],
    ...(types(a) ? { types: types(a) } : {}),
    ...(a.args.tags !== undefined ? { tags: ids(a.args.tags) } : {}),
    ...(a.args.clients !== undefined ? { clients: ids(a.args.clients) } : {}),
    ...pick(a, 'page', 'per_page', 'refresh'),
  }),
  args: {
    include: SiteIds,
    ...typeArgs,
    exclude: ListArg(Int, 'Leave these site IDs out of the page (total and summary still count them).'),
  },
  answers: ok({ total: Int, page: Int, per_page: Int, summary: L.summary, data: L.updates, errors: L.errors }),
  errors: { 400: ['svc_refresh_too_many'] },
  output: (r, { args }) => {
    // exclude: site ids (upstream removed list positions instead, D15).
    const ex = new Set((ids(args.args.exclude) ?? []).map(Number));
    const data = ex.size ? r.updates.filter((u) => !ex.has(u.site_id)) : r.updates;
    return { success: 1, total: r.total, page: r.page, per_page: r.per_page, summary: r.summary, data, errors: r.errors };
  },
});

const ignored = route(READ, '/updates/ignored', listIgnoredUpdates, {
  input: (a) => ({
    site_ids_or_domains: ids(a.args.include) ?? [],
    ...(types(a) ? { types: types(a) } : {}),
    ...pick(a, 'page', 'per_page'),
  }),
  args: { include: SiteIds, ...ignoreTypeArgs },
  answers: ok({
    total: Int,
    page: Int,
    per_page: Int,
    data: listIgnoredUpdates.output.shape.ignored,
    errors: listIgnoredUpdates.output.shape.errors,
  }),
  output: (r) => ({ success: 1, total: r.total, page: r.page, per_page: r.per_page, data: r.ignored, errors: r.errors }),
});

const updateFleet = route(EDIT, '/updates/update', runUpdates, {
  input: (a) => ({
    site_ids_or_domains: ids(a.args.include) ?? [],
    ...(types(a) ? { types: types(a) } : {}),
    ...(slugs(a) ? { specific_items: slugs(a) } : {}),
    ...flags(a),
  }),
  args: { include: SiteIds, ...typeArgs, ...slugArgs },
  answers: RunAnswer,
  output: runOutput,
});

const siteUpdates = route(READ, '/updates/:id_or_domain', getSiteUpdates, {
  input: (a) => ({ site_id_or_domain: site(a), ...(types(a) ? { types: types(a) } : {}), ...pick(a, 'refresh') }),
  args: typeArgs,
  answers: ok({
    total: Int,
    summary: getSiteUpdates.output.shape.summary,
    data: getSiteUpdates.output.shape.updates,
    ignored: getSiteUpdates.output.shape.ignored,
    synced_at: getSiteUpdates.output.shape.synced_at,
  }),
  errors: { ...REFRESH_ERRORS, ...SITE_NOT_FOUND },
  output: (r) => ({ success: 1, total: r.summary.total, summary: r.summary, data: r.updates, ignored: r.ignored, synced_at: r.synced_at }),
});

const siteIgnored = route(READ, '/updates/:id_or_domain/ignored', listIgnoredUpdates, {
  input: (a) => ({ site_ids_or_domains: [site(a)], ...(types(a) ? { types: types(a) } : {}), ...pick(a, 'page', 'per_page') }),
  args: ignoreTypeArgs,
  answers: ok({ total: Int, data: listIgnoredUpdates.output.shape.ignored }),
  output: (r, { args }) => {
    const e = r.errors[0];
    if (e) throw pathSiteError(e, args);
    return { success: 1, total: r.total, data: r.ignored };
  },
});

const updateSite = route(EDIT, '/updates/:id_or_domain/update', runUpdates, {
  input: (a) => ({
    site_ids_or_domains: [site(a)],
    ...(types(a) ? { types: types(a) } : {}),
    ...(slugs(a) ? { specific_items: slugs(a) } : {}),
    ...flags(a),
  }),
  args: { ...typeArgs, ...slugArgs },
  answers: RunAnswer,
  output: (r, { args }) => {
    const e = r.errors.find((x) => x.type === 'site' && x.site_id === 0);
    if (e) throw pathSiteError(e, args);
    return runOutput(r);
  },
});

/** The run's failure is the answer (502, or 504 for a timeout: updates-service codes or the child's). */
const core = (path: string) =>
  route(EDIT, path, updateSiteCore, {
    input: (a) => ({ site_id_or_domain: site(a), ...flags(a) }),
    answers: runAnswer(updateSiteCore.output.shape.updated),
    errors: {
      404: ['svc_no_updates', 'svc_site_not_found'],
      409: ['svc_update_in_progress'],
      502: [
        'svc_update_failed',
        'svc_update_not_applied',
        'svc_update_unverified',
        'svc_address_not_allowed',
        'svc_update_rolled_back',
        'svc_rollback_failed',
      ],
    },
    output: runOutput,
  });
const items = (path: string, ability: typeof updateSitePlugins) =>
  route(EDIT, path, ability, {
    input: (a) => ({ site_id_or_domain: site(a), ...(slugs(a) ? { slugs: slugs(a) } : {}), ...flags(a) }),
    args: slugArgs,
    answers: RunAnswer,
    errors: { 409: ['svc_update_in_progress'], ...SITE_NOT_FOUND },
    output: runOutput,
  });

/** Without `slug`: the whole type (a "*" rule). */
const ignoreItems = (methods: readonly string[], path: string, ability: typeof ignoreSitePlugins, action: 'add' | 'remove') =>
  route(methods, path, ability, {
    input: (a) => ({ site_id_or_domain: site(a), slugs: slugs(a) ?? ['*'], action }),
    args: { ...ignoreSlugArg, slugs: ignoreSlugArg.slug.describe('Same as slug.') },
    answers: ruleAnswer,
    errors: { 400: ['svc_invalid_slug'], ...SITE_NOT_FOUND },
    output: (r) => ({ success: r.success ? 1 : 0, message: r.message, changed: r.ignored_count }),
  });
const ignoreCore = (methods: readonly string[], path: string, action: 'add' | 'remove') =>
  route(methods, path, ignoreSiteCore, {
    input: (a) => ({ site_id_or_domain: site(a), action }),
    answers: ok({ message: z.string(), changed: Int }),
    errors: SITE_NOT_FOUND,
    output: (r) => ({ success: 1, message: r.message, changed: r.ignored_count }),
  });

/** Any background job (updates are the long ones): no site starts after this. */
const jobCancel = route(EDIT, '/jobs/:job_id/cancel', cancelBatchJob, {
  input: (a) => ({ job_id: a.params.job_id }),
  answers: done(cancelBatchJob.output),
  errors: { 404: ['svc_job_not_found'] },
  output: (r) => ({
    success: 1,
    message:
      r.status === 'failed' && r.failure === 'cancelled'
        ? 'Job cancelled.'
        : r.status === 'completed'
          ? 'The job had already completed.'
          : 'Cancel requested; no further site will start.',
    data: r,
  }),
});

export const updateRoutes = [
  jobCancel,
  updates,
  ignored,
  updateFleet,
  siteUpdates,
  siteIgnored,
  updateSite,
  core('/updates/:id_or_domain/update/wp'),
  core('/updates/:id_or_domain/update/core'),
  items('/updates/:id_or_domain/update/plugins', updateSitePlugins),
  items('/updates/:id_or_domain/update/themes', updateSiteThemes),
  items('/updates/:id_or_domain/update/translations', updateSiteTranslations),
  ignoreCore(EDIT, '/updates/:id_or_domain/ignore/wp', 'add'),
  ignoreCore(EDIT, '/updates/:id_or_domain/ignore/core', 'add'),
  ignoreCore(REMOVE, '/updates/:id_or_domain/ignore/wp', 'remove'),
  ignoreCore(REMOVE, '/updates/:id_or_domain/ignore/core', 'remove'),
  ignoreItems(EDIT, '/updates/:id_or_domain/ignore/plugins', ignoreSitePlugins, 'add'),
  ignoreItems(REMOVE, '/updates/:id_or_domain/ignore/plugins', ignoreSitePlugins, 'remove'),
  ignoreItems(EDIT, '/updates/:id_or_domain/ignore/themes', ignoreSiteThemes, 'add'),
  ignoreItems(REMOVE, '/updates/:id_or_domain/ignore/themes', ignoreSiteThemes, 'remove'),
];
