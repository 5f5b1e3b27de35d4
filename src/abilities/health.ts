// Site health and update history (issue 28): probe a site now (check-site-health-v1, an outgoing call: not for
// read-only callers), read its latest probe (get-site-health-v1), and the record of every update attempt
// (list-update-history-v1). Rules live in domain/health.ts and domain/update-history.ts.
import { z } from 'zod';
import { defineAbility } from './context.js';
import { SiteRef } from './schemas.js';
import { HISTORY_ACTIONS, UPDATE_OUTCOMES } from '../store/health-records.js';
import { HISTORY_MAX_DAYS, HISTORY_MAX_ENTRIES, HISTORY_MAX_PER_PAGE } from '../domain/update-history.js';
import { MAX_HEALTH_URLS, PROBE_MAX_BYTES, PROBE_MAX_REDIRECTS, PROBE_TIMEOUT_MS } from '../domain/health.js';
import type { SiteRecord } from '../store/records.js';
import type { AbilityContext } from './context.js';

const Status = z.enum(['healthy', 'degraded', 'unhealthy']);
const Page = z.object({
  kind: z.enum(['home', 'login', 'extra']),
  url: z.string(),
  final_url: z.string(),
  http_status: z.number().int(),
  ms: z.number().int(),
  bytes: z.number().int(),
  redirects: z.number().int(),
  ok: z.boolean(),
  problem: z.string().nullable(),
  message: z.string().nullable(),
});
export const HealthReport = z.object({
  status: Status,
  checked_at: z.string(),
  duration_ms: z.number().int(),
  marker: z.object({ text: z.string(), source: z.enum(['keyword', 'title', 'none']), found: z.boolean() }),
  response_ms: z.number().int().nullable(),
  baseline_ms: z.number().int().nullable(),
  slow: z.boolean(),
  pages: z.array(Page),
  summary: z.string(),
});
const Settings = z.object({ urls: z.array(z.string()), keyword: z.string() });
const HealthOutput = z.object({
  site_id: z.number().int(),
  site_url: z.string(),
  site_name: z.string(),
  /** null: never probed. */
  health: HealthReport.nullable(),
  settings: Settings,
  title: z.string().nullable().describe("The site's title as its home page showed it: the content marker when no keyword is set."),
  baseline_ms: z.number().int().nullable(),
});

function healthView(ctx: AbilityContext, site: SiteRecord) {
  const rec = ctx.health.record(site.id);
  return {
    site_id: site.id,
    site_url: site.url,
    site_name: site.name,
    health: rec.latest,
    settings: rec.settings,
    title: rec.title,
    baseline_ms: rec.baseline_ms,
  };
}

export const getSiteHealth = defineAbility({
  name: 'get-site-health-v1',
  label: 'Get Site Health',
  category: 'svc-updates',
  toolset: 'updates',
  description:
    "A site's stored latest health probe (null: never probed), probe settings and baseline; no outgoing call. " +
    'Errors: svc_site_not_found (404).',
  input: z.object({ site_id_or_domain: SiteRef }),
  output: HealthOutput,
  annotations: { readonly: true, destructive: false, idempotent: true, openWorld: false },
  acceptsPost: true,
  execute: (i, ctx) => healthView(ctx, ctx.sites.resolve(i.site_id_or_domain)),
});

export const checkSiteHealth = defineAbility({
  name: 'check-site-health-v1',
  label: 'Check Site Health',
  category: 'svc-updates',
  toolset: 'updates',
  description:
    'Probe a site now: home page (content marker), wp-login.php, extra paths; status, critical-error page, PHP errors, ' +
    `slowness. Stored as its latest health. ${PROBE_TIMEOUT_MS / 1000} s, ${PROBE_MAX_BYTES / 1024} KiB a page, ` +
    `${PROBE_MAX_REDIRECTS} redirects. Errors: svc_site_not_found (404).`,
  input: z.object({ site_id_or_domain: SiteRef }),
  output: HealthOutput,
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: true, siteAction: true },
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    await ctx.health.probe(site);
    return healthView(ctx, ctx.sites.get(site.id) ?? site);
  },
});

const HistoryEntry = z.object({
  id: z.number().int(),
  site_id: z.number().int(),
  site_url: z.string(),
  type: z.enum(['core', 'plugin', 'theme', 'translation', 'site']),
  slug: z.string(),
  name: z.string(),
  from: z.string().nullable(),
  to: z.string().nullable(),
  outcome: z.enum(UPDATE_OUTCOMES),
  reason: z.string(),
  code: z.string(),
  actor: z.object({ kind: z.enum(['user', 'key', 'oauth', 'local', 'job', 'policy']), id: z.number().int().nullable(), name: z.string() }),
  at: z.string(),
  duration_ms: z.number().int(),
  safe: z.boolean(),
  probe: z.object({ before: Status.nullable(), after: Status.nullable(), summary: z.string() }).nullable(),
  action: z.enum(HISTORY_ACTIONS).describe('update, or install (install-plugins-v1 / install-themes-v1: outcome installed or failed).'),
});

export const listUpdateHistory = defineAbility({
  name: 'list-update-history-v1',
  label: 'List Update History',
  category: 'svc-updates',
  toolset: 'updates',
  description:
    'Update and install attempts, newest first (action, item, from, to, who, when, outcome and reason, duration, ' +
    `probes), of the fleet, a site or an item (type+slug). Kept ${HISTORY_MAX_DAYS} days / ${HISTORY_MAX_ENTRIES} entries. ` +
    'Errors: svc_site_not_found (404), svc_invalid_date (400).',
  input: z.object({
    site_id_or_domain: SiteRef.optional(),
    action: z.enum(HISTORY_ACTIONS).optional().describe('Only updates or only installs (default both).'),
    type: z.enum(['core', 'plugin', 'theme', 'translation']).optional(),
    slug: z.string().min(1).max(500).optional().describe('Plugin file, theme stylesheet, "wordpress" for core.'),
    outcomes: z.array(z.enum(UPDATE_OUTCOMES)).max(UPDATE_OUTCOMES.length).optional(),
    since: z.string().max(40).optional().describe('ISO 8601; entries at or after it.'),
    until: z.string().max(40).optional().describe('ISO 8601; entries at or before it.'),
    page: z.number().int().min(1).default(1),
    per_page: z.number().int().min(1).max(HISTORY_MAX_PER_PAGE).default(50),
  }),
  output: z.object({
    entries: z.array(HistoryEntry),
    total: z.number().int(),
    page: z.number().int(),
    per_page: z.number().int(),
  }),
  annotations: { readonly: true, destructive: false, idempotent: true, openWorld: false },
  acceptsPost: true,
  execute: (i, ctx) => {
    const siteId = i.site_id_or_domain !== undefined ? ctx.sites.resolve(i.site_id_or_domain).id : undefined;
    const r = ctx.updateHistory.list(
      { site_id: siteId, action: i.action, type: i.type, slug: i.slug, outcomes: i.outcomes, since: i.since, until: i.until },
      i.page,
      i.per_page,
    );
    return { entries: r.entries, total: r.total, page: i.page, per_page: i.per_page };
  },
});

export { MAX_HEALTH_URLS };
export const healthAbilities = [checkSiteHealth, getSiteHealth, listUpdateHistory];
