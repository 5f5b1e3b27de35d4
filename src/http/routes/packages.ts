// REST v2 routes for the plugin and theme directory (ours; upstream has none): search it for the slug an install takes.
import { installPlugins, installThemes, searchPluginDirectory, searchThemeDirectory } from '../../abilities/packages.js';
import { CREATE, READ, route, type RestArgs, type RestRoute } from '../rest-door.js';
import { pick } from './args.js';
import { z } from 'zod';
import { Int, ok, okOrNot } from './answers.js';

const searchInput = (a: RestArgs) => pick(a, 'search', 'page', 'per_page');
const Found = ok({
  total: Int,
  page: Int,
  per_page: Int,
  pages: Int,
  source: searchPluginDirectory.output.shape.source,
  data: searchPluginDirectory.output.shape.items,
});
const found = (r: { items: unknown[]; total: number; page: number; per_page: number; pages: number; source: string }) => ({
  success: 1 as const,
  total: r.total,
  page: r.page,
  per_page: r.per_page,
  pages: r.pages,
  source: r.source,
  data: r.items,
});

const plugins = route(READ, '/directory/plugins', searchPluginDirectory, { input: searchInput, answers: Found, output: found });
const themes = route(READ, '/directory/themes', searchThemeDirectory, { input: searchInput, answers: Found, output: found });

const O = installPlugins.output.shape;
/** success 0 when a site failed; the per-site lists under data, as the update runs answer. */
const Installs = okOrNot({
  package: O.package,
  dry_run: O.dry_run,
  would_install: O.would_install,
  sites_to_install: O.sites_to_install,
  queued: O.queued,
  job_id: O.job_id,
  data: z.object({ installed: O.installed, errors: O.errors, skipped: O.skipped }),
  summary: O.summary,
  not_processed: O.not_processed,
});
const installInput = (a: RestArgs) =>
  pick(a, 'site_ids_or_domains', 'tags', 'clients', 'slug', 'version', 'url', 'activate', 'overwrite', 'dry_run');
const installed = (r: z.output<typeof installPlugins.output>) => {
  const { installed: done, errors, skipped, ...rest } = r;
  return { success: errors.length ? (0 as const) : (1 as const), ...rest, data: { installed: done, errors, skipped } };
};

/** Ours (upstream has no install route): POST, the targets and the package in the body. */
const pluginsInstall = route(CREATE, '/plugins/install', installPlugins, { input: installInput, answers: Installs, output: installed });
const themesInstall = route(CREATE, '/themes/install', installThemes, {
  input: (a) => pick(a, 'site_ids_or_domains', 'tags', 'clients', 'slug', 'version', 'url', 'overwrite', 'dry_run'),
  answers: Installs,
  output: installed,
});

export const packageRoutes: readonly RestRoute[] = [plugins, themes, pluginsInstall, themesInstall];
