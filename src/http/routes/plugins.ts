// REST v2 per-site routes for plugins, themes, abandoned items, the security snapshot and the change log.
import {
  activateSitePlugins,
  activateSiteTheme,
  deactivateSitePlugins,
  deleteSitePlugins,
  deleteSiteThemes,
  getAbandonedPlugins,
  getAbandonedThemes,
  getSiteChanges,
  getSitePlugins,
  getSiteSecurity,
  getSiteThemes,
} from '../../abilities/plugins.js';
import { EDIT, READ, REMOVE, route, type RestArgs, type RestRoute } from '../rest-door.js';
import { either, flag, list, pick, simple, site } from './args.js';
import { z } from 'zod';
import { Flag, Int, ListArg, SimpleSite, listed, ok, okOrNot } from './answers.js';

const Slug = ListArg(z.string(), 'One slug, a comma-separated list or an array.');
const SlugErrors = activateSitePlugins.output.shape.errors;
const Item = activateSitePlugins.output.shape.activated;
const deleteAnswer = z.union([
  ok({
    dry_run: z.literal(true),
    message: z.string(),
    data: deleteSitePlugins.output.shape.would_affect,
    warnings: z.array(z.string()),
    errors: SlugErrors,
    site: SimpleSite,
  }),
  okOrNot({ message: z.string(), data: deleteSitePlugins.output.shape.deleted, errors: SlugErrors, site: SimpleSite }),
]);
const abandonedAnswer = listed(getAbandonedPlugins.output.shape.items.element, { page: Int, per_page: Int, site: SimpleSite });

/** The simple view of the site a per-site answer is about (REST v2 reference §0.4), as the ability returned it. */
const siteView = (r: { site: { id: number; name: string; url: string; client_id: number | null } }) => simple(r.site);

/** `status`: active | inactive; any, all, empty or both values mean no filter. Anything else is refused by the ability. */
function status(a: RestArgs): { status?: unknown } {
  const values = list(a.args.status)
    ?.map((v) => String(v).trim().toLowerCase())
    .filter(Boolean);
  if (!values?.length) return {};
  const set = new Set(values.map((v) => (v === 'any' ? 'all' : v)));
  if (set.has('all') || (set.has('active') && set.has('inactive'))) return { status: 'all' };
  return { status: values.length === 1 ? values[0] : a.args.status };
}

/** `slug`: one slug or a comma-separated list (also accepted: slugs, and the family's own plural). */
const slugs = (a: RestArgs, alias: string) =>
  list(either(a, 'slug', 'slugs', alias))
    ?.map((v) => (typeof v === 'string' ? v.trim() : v))
    .filter((v) => v !== '');

const listInput = (a: RestArgs, extra: string[] = []) => ({
  site_id_or_domain: site(a),
  ...status(a),
  ...pick(a, 'search', 'page', 'per_page', 'has_update', ...extra),
});

const plugins = route(READ, '/sites/:id_or_domain/plugins', getSitePlugins, {
  input: (a) => listInput(a, ['must_use']),
  answers: listed(getSitePlugins.output.shape.plugins.element, { site: SimpleSite }),
  output: (r) => ({ success: 1, total: r.total, data: r.plugins, site: siteView(r) }),
});

const pluginsActivate = route(EDIT, '/sites/:id_or_domain/plugins/activate', activateSitePlugins, {
  input: (a) => ({ site_id_or_domain: site(a), slugs: slugs(a, 'plugins') }),
  args: { slug: Slug },
  answers: okOrNot({ message: z.string(), data: Item, errors: SlugErrors, site: SimpleSite }),
  output: (r) => ({
    success: r.activated.length ? 1 : 0,
    message: `${r.activated.length} plugin(s) activated${r.errors.length ? `, ${r.errors.length} not` : ''}.`,
    data: r.activated,
    errors: r.errors,
    site: siteView(r),
  }),
});

const pluginsDeactivate = route(EDIT, '/sites/:id_or_domain/plugins/deactivate', deactivateSitePlugins, {
  input: (a) => ({ site_id_or_domain: site(a), slugs: slugs(a, 'plugins') }),
  args: { slug: Slug },
  answers: okOrNot({ message: z.string(), data: Item, errors: SlugErrors, site: SimpleSite }),
  output: (r) => ({
    success: r.deactivated.length ? 1 : 0,
    message: `${r.deactivated.length} plugin(s) deactivated${r.errors.length ? `, ${r.errors.length} not` : ''}.`,
    data: r.deactivated,
    errors: r.errors,
    site: siteView(r),
  }),
});

/** A DELETE route is its own confirmation; `dry_run=1` previews instead. */
const deleteInput = (alias: string) => (a: RestArgs) => {
  const dry = flag(a, 'dry_run', false);
  return { site_id_or_domain: site(a), slugs: slugs(a, alias), confirm: !dry, dry_run: dry };
};
const deleteOutput = (what: string) => (r: z.output<typeof deleteSitePlugins.output>) =>
  r.dry_run
    ? {
        success: 1,
        dry_run: true,
        message: `${r.would_affect.length} ${what}(s) would be deleted.`,
        data: r.would_affect,
        warnings: r.warnings,
        errors: r.errors,
        site: siteView(r),
      }
    : {
        success: r.deleted.length ? 1 : 0,
        message: `${r.deleted.length} ${what}(s) deleted${r.errors.length ? `, ${r.errors.length} not` : ''}.`,
        data: r.deleted,
        errors: r.errors,
        site: siteView(r),
      };

const pluginsDelete = route(REMOVE, '/sites/:id_or_domain/plugins/delete', deleteSitePlugins, {
  input: deleteInput('plugins'),
  args: { slug: Slug, dry_run: Flag('Preview what would be deleted; deletes nothing.') },
  answers: deleteAnswer,
  output: deleteOutput('plugin'),
});

const abandonedInput = (a: RestArgs) => ({ site_id_or_domain: site(a), ...pick(a, 'page', 'per_page', 'search') });

const pluginsAbandoned = route(READ, '/sites/:id_or_domain/plugins/abandoned', getAbandonedPlugins, {
  input: abandonedInput,
  answers: abandonedAnswer,
  // The row always names the site, so the ability answers it.
  output: (r) => ({ success: 1, total: r.total, page: r.page, per_page: r.per_page, data: r.items, site: simple(r.site!) }),
});

const themes = route(READ, '/sites/:id_or_domain/themes', getSiteThemes, {
  input: (a) => listInput(a),
  answers: listed(getSiteThemes.output.shape.themes.element, { active_theme: z.string(), site: SimpleSite }),
  output: (r) => ({ success: 1, total: r.total, active_theme: r.active_theme, data: r.themes, site: siteView(r) }),
});

const themeActivate = route(EDIT, '/sites/:id_or_domain/themes/activate', activateSiteTheme, {
  input: (a) => {
    const slug = either(a, 'slug', 'theme');
    return { site_id_or_domain: site(a), ...(slug === undefined || slug === '' ? {} : { slug }) };
  },
  answers: okOrNot({
    message: z.string(),
    data: z.object({ activate: activateSiteTheme.output.shape.theme, deactivate: z.string().nullable() }),
    previous_theme: z.string().nullable(),
    errors: SlugErrors,
    site: SimpleSite,
  }),
  output: (r) => ({
    success: r.activated ? 1 : 0,
    message: r.activated ? `Theme ${r.activated} activated.` : `Theme not activated: ${r.errors[0]?.message ?? 'unknown reason'}`,
    data: { activate: r.theme, deactivate: r.activated ? r.previous_theme : null },
    previous_theme: r.previous_theme,
    errors: r.errors,
    site: siteView(r),
  }),
});

const themesDelete = route(REMOVE, '/sites/:id_or_domain/themes/delete', deleteSiteThemes, {
  input: deleteInput('themes'),
  args: { slug: Slug, dry_run: Flag('Preview what would be deleted; deletes nothing.') },
  answers: deleteAnswer,
  output: deleteOutput('theme'),
});

const themesAbandoned = route(READ, '/sites/:id_or_domain/themes/abandoned', getAbandonedThemes, {
  input: abandonedInput,
  answers: abandonedAnswer,
  // The row always names the site, so the ability answers it.
  output: (r) => ({ success: 1, total: r.total, page: r.page, per_page: r.per_page, data: r.items, site: simple(r.site!) }),
});

const security = route(READ, '/sites/:id_or_domain/security', getSiteSecurity, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  answers: ok({ data: getSiteSecurity.output.omit({ site_id: true, site_url: true, site: true }), site: SimpleSite }),
  output: (r) => ({
    success: 1,
    data: { security_issues: r.security_issues, total_issues: r.total_issues, ssl_status: r.ssl_status, synced_at: r.synced_at },
    site: siteView(r),
  }),
});

const changes = route(READ, '/sites/:id_or_domain/non-mainwp-changes', getSiteChanges, {
  input: (a) => ({
    site_id_or_domain: site(a),
    ...pick(a, 'page', 'per_page', 'source'),
    ...(list(a.args.actions) ? { actions: list(a.args.actions) } : {}),
    ...(list(a.args.contexts) ? { contexts: list(a.args.contexts) } : {}),
  }),
  args: {
    actions: ListArg(z.string(), 'Only these actions (activated, updated, …).'),
    contexts: ListArg(z.string(), 'Only these contexts ("allevents" = all).'),
    total_count: Flag('Answer only the count: {data: {total}}.'),
  },
  answers: z.union([
    ok({ data: z.object({ total: Int }), site: SimpleSite }),
    listed(getSiteChanges.output.shape.changes.element, { page: Int, per_page: Int, site: SimpleSite }),
  ]),
  output: (r, { args }) =>
    flag(args, 'total_count', false)
      ? { success: 1, data: { total: r.total }, site: siteView(r) }
      : { success: 1, total: r.total, page: r.page, per_page: r.per_page, data: r.changes, site: siteView(r) },
});

/** Static segments after the site (plugins/abandoned) never collide with a parameter: the order is free. */
/** Per-site reads a site batch can run (routes/batch.ts). */
export const siteBatchReads = { security, plugins, themes, 'non-mainwp-changes': changes };

export const pluginRoutes: readonly RestRoute[] = [
  plugins,
  pluginsActivate,
  pluginsDeactivate,
  pluginsDelete,
  pluginsAbandoned,
  themes,
  themeActivate,
  themesDelete,
  themesAbandoned,
  security,
  changes,
];
