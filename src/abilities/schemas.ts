// Parameter and result schemas shared by several abilities. Declared once, reused everywhere.
import { z } from 'zod';
import { ItemError, SkippedSite } from '../core/results.js';
import { SITE_STATUSES } from '../domain/sites.js';

export { ItemError, SkippedSite };

/**
 * Another name a field is accepted under (upstream's): the abilities door and schemas/ show it, the MCP tool list
 * leaves it out (the field it stands for is listed) — see mcp/compact.ts.
 */
export const alias = <T extends z.ZodType>(schema: T, of: string, description = `Alias of ${of}.`) =>
  schema.meta({ description, 'x-alias-of': of });

/**
 * The same fields without their descriptions, for a tool whose description points to the one that explains them
 * (update-X-v1 → add-X-v1): an assistant pays for each tools/list description on every conversation.
 */
export const undescribed = <T extends Record<string, z.ZodType>>(fields: T): T =>
  Object.fromEntries(Object.entries(fields).map(([k, s]) => [k, bare(s)])) as T;

/** A schema with the same checks and no description, down through optional, nullable, default and array. */
function bare(s: z.ZodType): z.ZodType {
  const def = s._zod.def as { type: string; innerType?: z.ZodType; element?: z.ZodType };
  const inner = def.type === 'array' ? 'element' : ['optional', 'nullable', 'default'].includes(def.type) ? 'innerType' : null;
  if (!inner) return s.meta({ description: undefined });
  const Same = s.constructor as new (d: object) => z.ZodType;
  const rebuilt = new Same({ ...def, [inner]: bare(def[inner]!) });
  return rebuilt.meta({ ...z.globalRegistry.get(s), description: undefined });
}

export const SiteRef = z
  .union([z.number().int(), z.string()])
  .describe('Site ID (number or digits) or domain / URL, e.g. 12 or "example.com".');
export const SiteRefs = z.array(SiteRef).describe('Site IDs or domains.');
export const TagId = z.number().int().min(1);
export const TagIds = z.array(z.number().int().min(1));
export const TagName = z.string().min(1).max(100).describe('Unique, case-insensitive.');
export const HexColor = z
  .string()
  .regex(/^#[0-9A-Fa-f]{6}$/)
  .describe('#RRGGBB');
export const Confirm = z.boolean().default(false).describe('Must be true to really delete (not needed with dry_run).');
export const DryRun = z.boolean().default(false).describe('Preview what would be deleted; changes nothing.');
export const SiteStatusFilter = z.enum(['any', ...SITE_STATUSES, 'available_update']);
export const SiteStatus = z.enum(SITE_STATUSES);

export const BasicSite = z.object({ id: z.number().int(), url: z.string(), name: z.string() });
export const ListedSite = BasicSite.extend({ status: SiteStatus, client_id: z.number().int().nullable() });
export const SiteStats = z.object({
  plugin_updates: z.number().int(),
  theme_updates: z.number().int(),
  wp_update_available: z.boolean(),
  health_score: z.number().int().nullable(),
});
export const FullSite = ListedSite.extend({
  admin_username: z.string(),
  wp_version: z.string(),
  php_version: z.string(),
  child_version: z.string(),
  last_sync: z.string().nullable(),
  notes: z.string(),
  tags: z.array(z.object({ id: z.number().int(), name: z.string() })),
  stats: SiteStats.optional(),
});

export const Tag = z.object({
  id: z.number().int(),
  name: z.string(),
  color: z.string().nullable(),
  sites_count: z.number().int(),
  sites_ids: z.array(z.number().int()),
  created_at: z.string(),
  updated_at: z.string(),
});

export const paged = <T extends z.ZodType>(item: T) =>
  z.object({
    items: z.array(item),
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int(),
  });

// Site selectors of the multi-site users and posts abilities (domain/selectors.ts); REST sends comma strings.
export const SiteSelectors = {
  websites: SiteRefs.optional().describe('Sites by ID or domain.'),
  groups: z
    .array(z.union([z.number().int(), z.string().min(1).max(100)]))
    .optional()
    .describe('Tag IDs or names.'),
  clients: z.array(z.number().int().min(1)).optional().describe('Client IDs.'),
};
/** What a selection left out: skipped sites, and selector values that name nothing (identifier = the value). */
export const SelectionNotes = { skipped: z.array(SkippedSite), unknown: z.array(ItemError) };
export const NotProcessed = z.array(z.number().int()).optional().describe('Sites not reached because the call was cancelled.');
/** A fan-out's list keyed by site URL (posts, pages, WordPress users): the items, their total, and the sites that failed, were skipped or named nothing. */
export const bySiteList = <T extends z.ZodType>(item: T) =>
  z.object({
    data: z.record(z.string(), z.array(item)),
    total: z.number().int(),
    errors: z.array(ItemError),
    ...SelectionNotes,
    not_processed: NotProcessed,
  });
