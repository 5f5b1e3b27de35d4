// The plugin and theme directory (wordpress.org, or the stand-in --package-source names): search it to find the slug
// an install takes. Reads only; each call asks the directory (openWorld), never a child site.
import { z } from 'zod';
import { defineAbility } from './context.js';
import { Page } from '../core/paging.js';
import { MAX_DIRECTORY_PER_PAGE, type PackageType } from '../domain/package-source.js';

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
      `Search the ${type} directory (wordpress.org, or --package-source) by words, e.g. "contact form"; one page of ` +
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

export const packageAbilities = [searchPluginDirectory, searchThemeDirectory];
