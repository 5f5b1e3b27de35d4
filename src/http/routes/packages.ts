// REST v2 routes for the plugin and theme directory (ours; upstream has none): search it for the slug an install takes.
import { searchPluginDirectory, searchThemeDirectory } from '../../abilities/packages.js';
import { READ, route, type RestArgs, type RestRoute } from '../rest-door.js';
import { pick } from './args.js';
import { Int, ok } from './answers.js';

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

export const packageRoutes: readonly RestRoute[] = [plugins, themes];
