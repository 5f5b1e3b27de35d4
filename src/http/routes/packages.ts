// REST v2 routes for the plugin and theme directory (ours; upstream has none): search it for the slug an install takes.
import { installPlugins, installThemes, searchPluginDirectory, searchThemeDirectory, uploadPackage } from '../../abilities/packages.js';
import { ServiceError } from '../../core/errors.js';
import { MAX_PACKAGE_BYTES } from '../../domain/uploads.js';
import { readUpload } from '../multipart.js';
import { CREATE, READ, route, type RestArgs, type RestContext, type RestRoute } from '../rest-door.js';
import { jobStatusUrl } from '../job-links.js';
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
  status_url: z.string().optional().describe('A queued run: where to follow its job.'),
  data: z.object({ installed: O.installed, errors: O.errors, skipped: O.skipped }),
  summary: O.summary,
  not_processed: O.not_processed,
});
const installInput = (a: RestArgs) =>
  pick(a, 'site_ids_or_domains', 'tags', 'clients', 'slug', 'version', 'url', 'upload_id', 'activate', 'overwrite', 'dry_run');
const installed = (r: z.output<typeof installPlugins.output>, ctx: RestContext) => {
  const { installed: done, errors, skipped, ...rest } = r;
  const follow = r.job_id ? { status_url: jobStatusUrl(ctx.restBase, r.job_id) } : {};
  return { success: errors.length ? (0 as const) : (1 as const), ...rest, ...follow, data: { installed: done, errors, skipped } };
};

/** Ours (upstream has no install route): POST, the targets and the package in the body. */
const pluginsInstall = route(CREATE, '/plugins/install', installPlugins, { input: installInput, answers: Installs, output: installed });
const themesInstall = route(CREATE, '/themes/install', installThemes, {
  input: (a) => pick(a, 'site_ids_or_domains', 'tags', 'clients', 'slug', 'version', 'url', 'upload_id', 'overwrite', 'dry_run'),
  answers: Installs,
  output: installed,
});

/** Reads the whole file part (capped at MAX_PACKAGE_BYTES: 413 past it); a zip is checked as a whole. */
async function readZip(file: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of file) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** multipart/form-data: the zip in the field `file`, and `type` (plugin or theme). */
const upload = route(CREATE, '/packages/upload', uploadPackage, {
  body: async (req, res) => {
    let u: Awaited<ReturnType<typeof readUpload>>;
    try {
      u = await readUpload(req, res, { field: 'file', maxBytes: MAX_PACKAGE_BYTES });
    } catch (e) {
      if (e instanceof ServiceError && e.code === 'svc_no_file_uploaded')
        throw new ServiceError('svc_no_file_uploaded', 'No zip uploaded: send multipart/form-data with the zip in the field file.', 400);
      throw e;
    }
    const zip = await readZip(u.file);
    return { ...u.fields, ...(await u.lateFields), file: zip };
  },
  input: (a) => ({ zip: a.args.file, ...pick(a, 'type') }),
  upload: { file: 'file', maxBytes: MAX_PACKAGE_BYTES },
  errors: { 400: ['svc_no_file_uploaded', 'svc_invalid_multipart'], 413: ['svc_upload_too_large'] },
  args: { type: uploadPackage.input.shape.type },
  answers: ok({ data: uploadPackage.output }),
  output: (r) => ({ success: 1 as const, data: r }),
});

export const packageRoutes: readonly RestRoute[] = [plugins, themes, upload, pluginsInstall, themesInstall];
