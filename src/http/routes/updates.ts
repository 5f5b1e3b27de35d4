// REST v2 routes for updates, on upstream's paths (updates reference §6) but on top of the fixed abilities: paging
// and include/exclude by site id on /updates, working /updates/ignored routes, slug-keyed ignore rules, real
// summaries and the child's own error text. Also unignore routes (DELETE), which upstream lacks.
import {
  getSiteUpdates, ignoreSiteCore, ignoreSitePlugins, ignoreSiteThemes, listIgnoredUpdates, listUpdates, runUpdates,
  updateSiteCore, updateSitePlugins, updateSiteThemes, updateSiteTranslations,
} from '../../abilities/updates.js';
import { cancelBatchJob } from '../../abilities/child-sites.js';
import { ServiceError } from '../../core/errors.js';
import { EDIT, READ, REMOVE, route, type RestArgs } from '../rest-door.js';
import { list, pick, site, truthy } from './args.js';

/** `type`: REST's own names (wp, plugins, themes, translations, all), one or a comma list. */
function types(a: RestArgs): string[] | undefined {
  const values = list(a.args.type ?? a.args.types)?.map((v) => String(v).trim().toLowerCase()).filter(Boolean);
  if (!values?.length || values.includes('all')) return undefined;
  return values.map((v) => (v === 'wp' ? 'core' : v));
}
const ids = (v: unknown) => list(v)?.map((x) => (/^\s*\d+\s*$/.test(String(x)) ? Number(x) : x));
const slugs = (a: RestArgs) => list(a.args.slug ?? a.args.slugs)?.map((v) => String(v).trim()).filter(Boolean);
const flags = (a: RestArgs) => ({ dry_run: truthy(a.args.dry_run, false) });

const runOutput = (r: { dry_run?: boolean; updated: unknown; errors: unknown[]; skipped: unknown[]; summary: unknown; would_update?: unknown[]; queued?: boolean; job_id?: string }) => ({
  success: r.errors.length ? 0 : 1,
  ...(r.dry_run ? { dry_run: true, would_update: r.would_update } : {}),
  ...(r.queued ? { queued: true, job_id: r.job_id } : {}),
  data: { updated: r.updated, errors: r.errors, skipped: r.skipped }, summary: r.summary,
});

const updates = route(READ, '/updates', listUpdates, {
  input: (a) => ({
    site_ids_or_domains: ids(a.args.include) ?? [], ...(types(a) ? { types: types(a) } : {}),
    ...(a.args.tags !== undefined ? { tags: ids(a.args.tags) } : {}), ...(a.args.clients !== undefined ? { clients: ids(a.args.clients) } : {}),
    ...pick(a, 'page', 'per_page', 'refresh'),
  }),
  output: (r, { args }) => {
    // exclude: site ids (upstream removed list positions instead, D15).
    const ex = new Set((ids(args.args.exclude) ?? []).map(Number));
    const data = ex.size ? r.updates.filter((u) => !ex.has(u.site_id)) : r.updates;
    return { success: 1, total: r.total, page: r.page, per_page: r.per_page, summary: r.summary, data, errors: r.errors };
  },
});

const ignored = route(READ, '/updates/ignored', listIgnoredUpdates, {
  input: (a) => ({ site_ids_or_domains: ids(a.args.include) ?? [], ...(types(a) ? { types: types(a) } : {}), ...pick(a, 'page', 'per_page') }),
  output: (r) => ({ success: 1, total: r.total, page: r.page, per_page: r.per_page, data: r.ignored, errors: r.errors }),
});

const updateFleet = route(EDIT, '/updates/update', runUpdates, {
  input: (a) => ({
    site_ids_or_domains: ids(a.args.include) ?? [], ...(types(a) ? { types: types(a) } : {}),
    ...(slugs(a) ? { specific_items: slugs(a) } : {}), ...flags(a),
  }),
  output: runOutput,
});

const siteUpdates = route(READ, '/updates/:id_or_domain', getSiteUpdates, {
  input: (a) => ({ site_id_or_domain: site(a), ...(types(a) ? { types: types(a) } : {}), ...pick(a, 'refresh') }),
  output: (r) => ({ success: 1, total: r.summary.total, summary: r.summary, data: r.updates, ignored: r.ignored, synced_at: r.synced_at }),
});

const siteIgnored = route(READ, '/updates/:id_or_domain/ignored', listIgnoredUpdates, {
  input: (a) => ({ site_ids_or_domains: [site(a)], ...(types(a) ? { types: types(a) } : {}), ...pick(a, 'page', 'per_page') }),
  output: (r) => {
    const e = r.errors[0];
    if (e) throw new ServiceError(e.code, e.message, 404);
    return { success: 1, total: r.total, data: r.ignored };
  },
});

const updateSite = route(EDIT, '/updates/:id_or_domain/update', runUpdates, {
  input: (a) => ({ site_ids_or_domains: [site(a)], ...(types(a) ? { types: types(a) } : {}), ...(slugs(a) ? { specific_items: slugs(a) } : {}), ...flags(a) }),
  output: (r) => {
    const e = r.errors.find((x) => x.type === 'site' && x.site_id === 0);
    if (e) throw new ServiceError(e.code, e.message, 404);
    return runOutput(r);
  },
});

const core = (path: string) => route(EDIT, path, updateSiteCore, { input: (a) => ({ site_id_or_domain: site(a), ...flags(a) }), output: runOutput });
const items = (path: string, ability: typeof updateSitePlugins) => route(EDIT, path, ability, {
  input: (a) => ({ site_id_or_domain: site(a), ...(slugs(a) ? { slugs: slugs(a) } : {}), ...flags(a) }),
  output: runOutput,
});

/** Without `slug`: the whole type (a "*" rule). */
const ignoreItems = (methods: readonly string[], path: string, ability: typeof ignoreSitePlugins, action: 'add' | 'remove') => route(methods, path, ability, {
  input: (a) => ({ site_id_or_domain: site(a), slugs: slugs(a) ?? ['*'], action }),
  output: (r) => ({ success: r.success ? 1 : 0, message: r.message, changed: r.ignored_count }),
});
const ignoreCore = (methods: readonly string[], path: string, action: 'add' | 'remove') => route(methods, path, ignoreSiteCore, {
  input: (a) => ({ site_id_or_domain: site(a), action }),
  output: (r) => ({ success: 1, message: r.message, changed: r.ignored_count }),
});

/** Any background job (updates are the long ones): no site starts after this. */
const jobCancel = route(EDIT, '/jobs/:job_id/cancel', cancelBatchJob, {
  input: (a) => ({ job_id: a.params.job_id }),
  output: (r) => ({ success: 1, message: r.status === 'failed' && r.failure === 'cancelled' ? 'Job cancelled.' : r.status === 'completed' ? 'The job had already completed.' : 'Cancel requested; no further site will start.', data: r }),
});

export const updateRoutes = [
  jobCancel,
  updates, ignored, updateFleet, siteUpdates, siteIgnored, updateSite,
  core('/updates/:id_or_domain/update/wp'), core('/updates/:id_or_domain/update/core'),
  items('/updates/:id_or_domain/update/plugins', updateSitePlugins),
  items('/updates/:id_or_domain/update/themes', updateSiteThemes),
  items('/updates/:id_or_domain/update/translations', updateSiteTranslations),
  ignoreCore(EDIT, '/updates/:id_or_domain/ignore/wp', 'add'), ignoreCore(EDIT, '/updates/:id_or_domain/ignore/core', 'add'),
  ignoreCore(REMOVE, '/updates/:id_or_domain/ignore/wp', 'remove'), ignoreCore(REMOVE, '/updates/:id_or_domain/ignore/core', 'remove'),
  ignoreItems(EDIT, '/updates/:id_or_domain/ignore/plugins', ignoreSitePlugins, 'add'),
  ignoreItems(REMOVE, '/updates/:id_or_domain/ignore/plugins', ignoreSitePlugins, 'remove'),
  ignoreItems(EDIT, '/updates/:id_or_domain/ignore/themes', ignoreSiteThemes, 'add'),
  ignoreItems(REMOVE, '/updates/:id_or_domain/ignore/themes', ignoreSiteThemes, 'remove'),
];
