// Known vulnerabilities (issue 30): the fleet-wide and per-site views, the one-call fix and the feed refresh. Rules:
// domain/vulnerabilities/. Every record carries its feed's attribution (licence terms of the feed).
import { z } from 'zod';
import { defineAbility } from './context.js';
import { Page, perPage } from '../core/paging.js';
import { ServiceError } from '../core/errors.js';
import { fixVulnerabilities } from '../domain/vulnerabilities/fix.js';
import { paged, SiteRef, SiteRefs } from './schemas.js';
import { runUpdates } from './updates.js';

const s = { category: 'svc-vulnerabilities', toolset: 'vulnerabilities' } as const;
const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };

const Int = z.number().int();
const Severity = z.enum(['none', 'low', 'medium', 'high', 'critical']);
const ItemType = z.enum(['core', 'plugin', 'theme']);
const Source = z.enum(['wordfence', 'wpvulnerability']);

export const VulnerabilityRecord = z.object({
  id: z.string().describe("The feed's own id (Wordfence: a UUID)."),
  key: z.string().describe('source:id, unique across feeds.'),
  source: Source,
  cve: z.string().nullable(),
  cve_link: z.string().nullable(),
  aliases: z.array(z.string()).describe('Other ids of the same fact (CVE ids, the other feed’s id).'),
  title: z.string(),
  description: z.string(),
  informational: z.boolean().describe('Negligible real-world impact (hidden unless include_informational).'),
  severity: Severity.nullable().describe('From the CVSS score; null when the feed gives none.'),
  cvss: z.object({ score: z.number(), vector: z.string().nullable(), rating: z.string() }).nullable(),
  cwe: z.array(z.object({ id: z.string(), name: z.string() })),
  affected: z.array(
    z.object({
      type: ItemType,
      slug: z.string(),
      name: z.string(),
      versions: z.array(z.string()).describe('Affected ranges: "[from, to]" inclusive, "(" ")" exclusive, * no bound.'),
      fixed_versions: z.array(z.string()),
    }),
  ),
  references: z.array(z.string()),
  published: z.string().nullable(),
  updated: z.string().nullable(),
  attribution: z
    .object({
      feed: z.string(),
      terms: z.string(),
      record_url: z.string().nullable(),
      copyrights: z.record(z.string(), z.unknown()).describe("The feed's copyright notices and licences, verbatim."),
    })
    .describe("Show with the record: the feed's licence requires it."),
});

export const Install = z.object({
  site_id: Int,
  site_url: z.string(),
  site_name: z.string(),
  type: ItemType,
  slug: z.string().describe('Feed slug (plugin folder, theme stylesheet, "wordpress").'),
  item: z.string().describe('sitefleet item: the plugin file, the theme, "wordpress".'),
  name: z.string(),
  version: z.string().describe('Installed version.'),
  fixed_in: z.string().nullable().describe('Lowest version that fixes it; null: no fix known.'),
  update_version: z.string().nullable().describe('The update the site offers (as of its last sync).'),
  update_pending: z.boolean().describe('The offered update fixes it.'),
});

const FeedStatus = z.object({
  source: Source.nullable(),
  origin: z.string().nullable(),
  imported_at: z.string().nullable(),
  records: Int,
  skipped: Int,
  checked_at: z.string().nullable(),
  last_error: z.string().nullable(),
});
const feedStatus = (f: z.infer<typeof FeedStatus>) => ({
  source: f.source,
  origin: f.origin,
  imported_at: f.imported_at,
  records: f.records,
  skipped: f.skipped,
  checked_at: f.checked_at,
  last_error: f.last_error,
});
const IncludeInformational = z.boolean().default(false).describe('Also negligible-impact records.');

export const listVulnerabilities = defineAbility({
  ...s,
  name: 'list-vulnerabilities-v1',
  label: 'List vulnerabilities',
  description: 'Vulnerabilities of installed versions, most severe first: installs, fixed-in, pending fix. Show with attribution.',
  input: z.object({
    severity: Severity.optional().describe('This or worse.'),
    site: SiteRef.optional(),
    slug: z.string().min(1).max(200).optional().describe('Feed slug or plugin file.'),
    fixable: z.boolean().optional().describe('A fixed version exists.'),
    include_informational: IncludeInformational,
    installs_per_record: z.number().int().min(0).max(100).default(10),
    page: Page,
    per_page: perPage(20),
  }),
  output: paged(
    VulnerabilityRecord.extend({
      sites_affected: Int,
      installs_total: Int,
      fixable: z.boolean(),
      updates_pending: Int.describe('Installs whose offered update fixes it.'),
      installs: z.array(Install).describe('First installs_per_record (installs_total counts all).'),
    }),
  ).extend({ feed: FeedStatus }),
  annotations: ro,
  execute: async ({ page, per_page, ...q }, ctx) => {
    const r = await ctx.vulnerabilities.list({ ...q, page, per_page });
    return { items: r.items, page, per_page, total: r.total, feed: feedStatus(r.feed) };
  },
});

export const getSiteVulnerabilities = defineAbility({
  ...s,
  name: 'get-site-vulnerabilities-v1',
  label: 'Site vulnerabilities',
  description: "One site's vulnerable installs: record, item, version, fixed-in, pending fix.",
  input: z.object({ site_id_or_domain: SiteRef, include_informational: IncludeInformational }),
  output: z.object({
    site: z.object({ id: Int, name: z.string(), url: z.string(), client_id: Int.nullable() }),
    total: Int,
    items: z.array(VulnerabilityRecord.extend({ install: Install })),
    feed: FeedStatus,
  }),
  annotations: ro,
  execute: async (i, ctx) => {
    const r = await ctx.vulnerabilities.ofSite(i.site_id_or_domain, i.include_informational);
    const { id, name, url, client_id } = r.site;
    return { site: { id, name, url, client_id }, total: r.items.length, items: r.items, feed: feedStatus(r.feed) };
  },
});

const RunShape = runUpdates.output.shape;
const PlanItem = z.object({ type: ItemType, slug: z.string(), item: z.string(), version: z.string(), records: z.array(z.string()) });

export const fixVulnerabilitiesAbility = defineAbility({
  ...s,
  name: 'fix-vulnerabilities-v1',
  label: 'Fix vulnerabilities',
  description:
    'Update every vulnerable install whose offered update fixes it (run-updates-v1 path, safe mode); the rest in not_fixable ' +
    'with why. Per site. dry_run previews; else confirm: true.',
  input: z.object({
    sites: SiteRefs.optional(),
    vulnerabilities: z.array(z.string().min(1).max(200)).max(1000).optional().describe('Feed ids, CVE ids or keys.'),
    slug: z.string().min(1).max(200).optional(),
    dry_run: z.boolean().default(false).describe('Preview what would be updated; changes nothing.'),
    confirm: z.boolean().default(false).describe('Must be true to update (not needed with dry_run).'),
    safe: runUpdates.input.shape.safe,
    force: runUpdates.input.shape.force,
  }),
  output: z.object({
    dry_run: z.boolean(),
    sites: z.array(
      z.object({
        site_id: Int,
        site_url: z.string(),
        site_name: z.string(),
        planned: z.array(PlanItem.extend({ to: z.string() })),
        not_fixable: z.array(
          PlanItem.extend({
            reason: z.enum(['no_fix_known', 'no_update_offered', 'offered_update_not_fixed']),
            fixed_in: z.string().nullable(),
            update_version: z.string().nullable(),
          }),
        ),
        updated: RunShape.updated,
        errors: RunShape.errors,
        skipped: RunShape.skipped,
        rolled_back: RunShape.rolled_back,
      }),
    ),
    summary: z.object({ sites: Int, planned: Int, updated: Int, errors: Int, not_fixable: Int }),
  }),
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: true, siteAction: true },
  execute: async (i, ctx) => {
    if (i.dry_run && i.confirm) throw new ServiceError('svc_invalid_input', 'Cannot specify both dry_run and confirm.', 400);
    if (!i.dry_run && !i.confirm)
      throw new ServiceError('svc_confirmation_required', 'Updating sites requires confirm: true (or dry_run: true to preview).', 400);
    return fixVulnerabilities(ctx, ctx.vulnerabilities, ctx.sites, ctx.updates, { ...i, safe: i.safe ?? ctx.dashboard.safeUpdates() });
  },
});

export const refreshVulnerabilityFeed = defineAbility({
  ...s,
  name: 'refresh-vulnerability-feed-v1',
  label: 'Refresh vulnerability feed',
  description: 'Fetch the configured vulnerability feed now (conditional), import, re-match. A refused feed keeps the old data.',
  input: z.object({}).strict(),
  output: z.object({ status: z.enum(['updated', 'not_modified']), feed: FeedStatus }),
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: true },
  execute: async (_i, ctx) => {
    const r = await ctx.vulnerabilities.refresh(ctx.signal);
    return { status: r.status, feed: feedStatus(r.feed) };
  },
});

export const vulnerabilityAbilities = [listVulnerabilities, getSiteVulnerabilities, fixVulnerabilitiesAbility, refreshVulnerabilityFeed];
