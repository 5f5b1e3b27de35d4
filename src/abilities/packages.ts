// The plugin and theme directory (wordpress.org, or the stand-in --package-source names): search it to find the slug
// an install takes. Reads only; each call asks the directory (openWorld), never a child site.
import { z } from 'zod';
import { defineAbility } from './context.js';
import { Page } from '../core/paging.js';
import { SiteRefs, undescribed } from './schemas.js';
import { MAX_DIRECTORY_PER_PAGE, type PackageType } from '../domain/package-source.js';
import { KEEP_S, MAX_PACKAGE_BYTES } from '../domain/uploads.js';

const directoryRead = { readonly: true, destructive: false, idempotent: true, openWorld: true };

export const DirectoryItem = z.object({
  slug: z.string().describe('What install-plugins-v1 / install-themes-v1 take as slug.'),
  name: z.string(),
  version: z.string().describe('The stable version.'),
  author: z.string(),
  requires: z.string().nullable().describe('Minimum WordPress version, when the directory says.'),
  requires_php: z.string().nullable(),
  short_description: z.string(),
  rating: z.number().nullable().describe('0-100, when the directory says.'),
  active_installs: z.number().nullable(),
  download_url: z.string().nullable(),
});

export const DIRECTORY_ERRORS =
  'Errors: svc_package_source_unavailable (502), svc_package_source_timeout (504), svc_address_not_allowed (400: the ' +
  'directory is on a private address and --allow-private-sites is off).';

function searchDirectory(type: PackageType) {
  const word = `${type}s`;
  return defineAbility({
    name: `search-${type}-directory-v1`,
    label: `Search the ${type} directory`,
    category: 'svc-sites',
    toolset: 'plugins',
    description:
      `Search the ${type} directory by words, e.g. "contact form"; one page of ` +
      `${word}, each with the slug install-${word}-v1 takes. ${DIRECTORY_ERRORS}`,
    input: z.object({
      search: z.string().trim().min(1).max(200).describe('Words to look for in names and descriptions.'),
      page: Page,
      per_page: z
        .number()
        .int()
        .min(1)
        .max(MAX_DIRECTORY_PER_PAGE)
        .default(10)
        .describe(`Results per page (1-${MAX_DIRECTORY_PER_PAGE}, default 10).`),
    }),
    output: z.object({
      items: z.array(DirectoryItem),
      page: z.number().int(),
      per_page: z.number().int(),
      total: z.number().int(),
      pages: z.number().int(),
      source: z.string().describe('The directory asked.'),
    }),
    annotations: directoryRead,
    acceptsPost: true,
    execute: async (i, ctx) => ({ ...(await ctx.packages.search(type, i)), source: ctx.packages.base }),
  });
}

export const searchPluginDirectory = searchDirectory('plugin');
export const searchThemeDirectory = searchDirectory('theme');

// ---- installs ----

const install = { readonly: false, destructive: false, idempotent: false, openWorld: true };

const Where = { site_id: z.number().int(), site_url: z.string(), site_name: z.string() };
const InstallPackage = z.object({
  type: z.enum(['plugin', 'theme']),
  source: z.enum(['directory', 'url', 'upload']),
  upload_id: z.string().optional(),
  slug: z.string().nullable().describe('The folder it installs into, when known beforehand.'),
  name: z.string().nullable(),
  version: z.string().nullable().describe('From the directory; null for a zip URL (the child reports it).'),
  download_url: z.string().describe('What each child downloads (an upload: upload:ID; each site gets a fresh signed link).'),
});
const Installed = z.object({
  ...Where,
  type: z.enum(['plugin', 'theme']),
  slug: z.string().describe('Plugin file or theme stylesheet, as the child reports it.'),
  name: z.string(),
  version: z.string().describe('The version the child reports installed.'),
  replaced_version: z.string().nullable().describe('The version an overwrite replaced.'),
  activated: z.boolean().nullable().describe('With activate: whether the site reports it active; else null.'),
  activation_error: z.string().optional(),
});
const InstallFailed = z.object({
  site_id: z.number().int().nullable(),
  site_url: z.string().nullable(),
  site_name: z.string().nullable(),
  code: z.string(),
  message: z.string(),
});
const InstallSkipped = z.object({
  ...Where,
  reason: z.enum(['already_installed', 'site_suspended', 'site_disconnected', 'cancelled']),
  message: z.string(),
  installed_version: z.string().optional(),
});
export const InstallOutput = z.object({
  package: InstallPackage,
  dry_run: z.literal(true).optional(),
  would_install: z
    .array(z.object({ ...Where, action: z.enum(['install', 'overwrite']), installed_version: z.string().nullable() }))
    .optional(),
  sites_to_install: z.number().int().describe('Sites the install is (or would be) sent to.'),
  queued: z.literal(true).optional(),
  job_id: z.string().optional(),
  installed: z.array(Installed),
  errors: z.array(InstallFailed),
  skipped: z.array(InstallSkipped),
  summary: z.object({ installed: z.number().int(), failed: z.number().int(), skipped: z.number().int() }),
  not_processed: z.array(z.number().int()).optional(),
});

const Targets = {
  site_ids_or_domains: SiteRefs.max(5000).optional().describe('Sites by ID or domain.'),
  tags: z
    .array(z.union([z.number().int(), z.string().min(1).max(100)]))
    .max(100)
    .optional()
    .describe('Tags (groups) by ID or name: their sites.'),
  clients: z.array(z.number().int().min(1)).max(100).optional().describe('Clients by ID: their sites.'),
};

const INSTALL_ERRORS =
  'Errors: svc_invalid_input / svc_invalid_slug / svc_invalid_version / svc_invalid_url / svc_address_not_allowed / ' +
  'svc_sites_required / svc_upload_not_served (400), svc_package_not_found / svc_package_version_not_found / ' +
  'svc_upload_not_found / svc_sites_not_found (404), ' +
  'svc_package_source_unavailable (502), svc_package_source_timeout (504); per site: errors[] (svc_install_failed, ' +
  'the child failures), skipped[].';

const installFields = {
  version: z.string().min(1).max(50).optional().describe('With slug: this version (default the stable one).'),
  url: z.string().min(1).max(2048).optional().describe('A zip to install instead of a directory package.'),
  upload_id: z.string().min(1).max(64).optional().describe('A zip uploaded with upload-package-v1.'),
  overwrite: z.boolean().default(false).describe('Replace an installed copy (e.g. another version).'),
  dry_run: z.boolean().default(false),
  confirm: z.boolean().optional().describe('Asked for over MCP (by elicitation) when more than one site is touched.'),
};

function installAbility(type: PackageType) {
  const word = `${type}s`;
  return defineAbility({
    name: `install-${word}-v1`,
    label: `Install ${word}`,
    category: 'svc-sites',
    toolset: 'plugins',
    // The theme tool points to the plugin tool for what the shared fields mean: each is paid for once in tools/list.
    description:
      (type === 'plugin'
        ? 'Install a plugin on many sites (site_ids_or_domains, tags, clients) from the directory (slug, version) or ' +
          'a zip (url, upload_id); a site that has it is skipped unless overwrite. Per site: installed (the version ' +
          'the child reports), errors, skipped; over the queue threshold a job; dry_run previews.'
        : 'Install a theme on many sites: as install-plugins-v1 (no activate).') + ` ${INSTALL_ERRORS}`,
    input: z.object({
      ...(type === 'plugin' ? Targets : undescribed(Targets)),
      slug: z.string().min(1).max(200).optional().describe(`Directory slug (search-${type}-directory-v1 finds it).`),
      ...(type === 'plugin' ? installFields : undescribed(installFields)),
      ...(type === 'plugin' ? { activate: z.boolean().default(false).describe('Activate it after the install.') } : {}),
    }),
    output: InstallOutput,
    annotations: { ...install, siteAction: true },
    confirmPreview: (preview: unknown) => ((preview as { sites_to_install?: number }).sites_to_install ?? 0) > 1,
    execute: (i, ctx) => {
      const activate = (i as { activate?: boolean }).activate ?? false;
      return ctx.installs.run(
        ctx,
        { websites: i.site_ids_or_domains, groups: i.tags, clients: i.clients },
        { type, slug: i.slug, version: i.version, url: i.url, upload_id: i.upload_id, activate, overwrite: i.overwrite },
        i.dry_run,
      );
    },
  });
}

export const installPlugins = installAbility('plugin');
export const installThemes = installAbility('theme');

// ---- uploads ----

/** The zip: bytes the REST door read from a multipart upload, or base64 from JSON callers (MCP, abilities). */
const Zip = z
  .custom<Buffer | string>(
    (v) =>
      Buffer.isBuffer(v) ||
      (typeof v === 'string' && v.length > 0 && v.length <= Math.ceil(MAX_PACKAGE_BYTES / 3) * 4 && /^[A-Za-z0-9+/]+={0,2}$/.test(v)),
    `zip is required: the zip file in base64 (at most ${MAX_PACKAGE_BYTES / 1024 / 1024} MB).`,
  )
  .meta({ type: 'string', minLength: 1, contentEncoding: 'base64', description: 'The zip file, base64.' });

export const uploadPackage = defineAbility({
  name: 'upload-package-v1',
  label: 'Upload a plugin or theme zip',
  category: 'svc-sites',
  toolset: 'plugins',
  description:
    `Upload a plugin or theme zip for install-plugins-v1 / install-themes-v1 (upload_id); kept ${KEEP_S / 3600} hours. ` +
    'Checked first: a real zip, one top folder, a plugin header or theme style.css, no path climbing out, bounded ' +
    `entries and unpacked size. Errors: svc_invalid_package (400), svc_upload_too_large (413).`,
  input: z.object({ type: z.enum(['plugin', 'theme']), zip: Zip }),
  output: z.object({
    upload_id: z.string(),
    type: z.enum(['plugin', 'theme']),
    folder: z.string().describe('The top folder: where it installs.'),
    name: z.string(),
    version: z.string(),
    size: z.number().int(),
    unpacked_bytes: z.number().int(),
    entries: z.number().int(),
    created_at: z.string(),
    expires_at: z.string(),
  }),
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: false },
  execute: (i, ctx) => ctx.uploads.save(Buffer.isBuffer(i.zip) ? i.zip : Buffer.from(i.zip, 'base64'), i.type),
});

export const packageAbilities = [searchPluginDirectory, searchThemeDirectory, uploadPackage, installPlugins, installThemes];
