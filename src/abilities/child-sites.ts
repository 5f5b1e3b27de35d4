// Abilities that talk to child sites: add (registration), sync, check, reconnect, disconnect, and the
// status of background jobs. Batches over the queue threshold become jobs (domain/jobs.ts).
import { z } from 'zod';
import { defineAbility, type AbilityContext } from './context.js';
import { ServiceError, errors as catalogue } from '../core/errors.js';
import { jobView } from '../domain/jobs.js';
import { siteStatus } from '../domain/sites.js';
import type { JobType, SiteRecord } from '../store/records.js';
import { alias, BasicSite, FullSite, ItemError, ListedSite, SiteRef, SiteRefs, TagIds } from './schemas.js';
import { siteState, siteStateFields } from './sites.js';
import { fullSite, listedSite } from './views.js';

const remote = { readonly: false, destructive: false, idempotent: true, openWorld: true };
type ItemErr = z.infer<typeof ItemError>;

const basic = (s: SiteRecord) => ({ id: s.id, url: s.url, name: s.name });
const itemError = (identifier: number | string, e: ServiceError): ItemErr => ({
  identifier,
  code: e.code,
  message: e.message,
  status: e.status,
});

const Queued = {
  queued: z.boolean(),
  job_id: z.string().optional(),
  /** Sites not processed because the caller cancelled (MCP notifications/cancelled). */
  not_processed: z.array(z.number().int()).optional(),
};

const notProcessed = (notDone: SiteRecord[]) => (notDone.length ? { not_processed: notDone.map((s) => s.id) } : {});

export const addSite = defineAbility({
  name: 'add-site-v1',
  label: 'Add site',
  category: 'svc-sites',
  toolset: 'sites',
  description:
    "Connect a WordPress site running MainWP Child (admin: its administrator's user name), then sync it. " +
    'Errors: svc_site_already_exists (409), svc_invalid_url (400), svc_child_refused (400, with the ' +
    "child's reason), svc_connection_failed (502/504, naming the URL).",
  input: z
    .object({
      url: z.string().min(1).max(2000),
      admin: z.string().min(1).max(200).optional().describe("The site's administrator user name."),
      admin_username: alias(z.string().min(1).max(200).optional(), 'admin'),
      admin_password: z.string().max(500).optional().describe('Only when the child asks for it.'),
      name: z.string().max(200).optional(),
      client_id: z.number().int().min(1).nullable().optional(),
      tags: TagIds.optional(),
      tag_ids: alias(TagIds.optional(), 'tags'),
      http_user: z.string().max(200).optional(),
      http_pass: z.string().max(500).optional(),
      ssl_verify: z.boolean().optional().describe('Verify TLS (default true).'),
      verify_certificate: alias(
        z.union([z.literal(0), z.literal(1), z.literal(2)]).optional(),
        'ssl_verify',
        "Upstream's ssl_verify: 0 off, 1 on, 2 default (on).",
      ),
    })
    .strict(),
  output: FullSite,
  aliases: { adminpassword: 'admin_password' },
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: true },
  execute: async (i, ctx) => {
    const admin = i.admin ?? i.admin_username;
    const ssl_verify = i.ssl_verify ?? (i.verify_certificate === undefined ? true : i.verify_certificate !== 0);
    if (!admin) throw catalogue.abilityInput('add-site-v1', 'admin is a required property of input.', 'admin');
    const site = await ctx.children.add({
      url: i.url,
      admin,
      admin_password: i.admin_password,
      name: i.name,
      client_id: i.client_id,
      tags: i.tags ?? i.tag_ids,
      http_user: i.http_user,
      http_pass: i.http_pass,
      ssl_verify,
    });
    return fullSite(ctx, site, true);
  },
});

export const syncSites = defineAbility({
  name: 'sync-sites-v1',
  label: 'Sync sites',
  category: 'svc-sites',
  toolset: 'sites',
  description: 'Fetch fresh data (versions, plugins, themes, users, security, changes) from sites; empty list = ' + 'every connected site.',
  input: z
    .object({
      site_ids_or_domains: SiteRefs.default([]),
      exclude_ids: z.array(z.number().int()).optional().describe('Leave these site IDs out.'),
      full: z.boolean().default(false).describe('synced[]: full records with stats, as get-site-v1.'),
    })
    .strict(),
  output: z.object({
    ...Queued,
    synced: z.array(z.union([FullSite, BasicSite])).optional(),
    errors: z.array(ItemError).optional(),
    total_synced: z.number().int().optional(),
    total_errors: z.number().int().optional(),
    sites_queued: z.number().int().optional(),
  }),
  annotations: { ...remote, siteAction: true },
  execute: async (i, ctx) => {
    const { found, errors } = ctx.sites.forBatch(i.site_ids_or_domains, i.exclude_ids, (s) => !s.suspended && !s.disconnected);
    // At most the sync concurrency of the dashboard settings at once (issue 21): the sync job type's limit.
    const ran = await ctx.jobs.batch(ctx, 'sync', found, (s) => ctx.children.fetchSync(s));
    if (ran.queued) return { ...ran, sites_queued: found.length, errors };
    const { results: items, notDone } = ran;
    // A full record is read after the sync, which rewrote it.
    const synced = items.filter((x) => x.ok).map((x) => (i.full ? fullSite(ctx, ctx.sites.get(x.site.id) ?? x.site, true) : basic(x.site)));
    const all = [...errors, ...items.filter((x) => !x.ok).map((x) => itemError(x.site.id, x.error))];
    return { queued: false, synced, errors: all, total_synced: synced.length, total_errors: all.length, ...notProcessed(notDone) };
  },
});

const CheckFields = {
  site_id: z.number().int(),
  site_url: z.string(),
  reachable: z.boolean(),
  response_time_ms: z.number().int(),
  http_status: z.number().int(),
};

export const checkSite = defineAbility({
  name: 'check-site-v1',
  label: 'Check site',
  category: 'svc-sites',
  toolset: 'sites',
  description: 'Is the site up? Times an HTTP request to its root (no child plugin involved). Errors: ' + 'svc_site_not_found (404).',
  input: z.object({ site_id_or_domain: SiteRef }),
  output: z.object({
    ...CheckFields,
    checked: z.boolean(),
    response_time: z.number(),
    status: z.object({ online: z.boolean(), http_code: z.number().int(), response_time: z.number() }),
    site: ListedSite,
  }),
  annotations: { ...remote, siteAction: true },
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const r = await ctx.children.apply(await ctx.children.fetchCheck(site));
    const seconds = Math.round(r.response_time_ms / 10) / 100;
    return {
      site_id: site.id,
      site_url: site.url,
      reachable: r.reachable,
      response_time_ms: r.response_time_ms,
      http_status: r.http_status,
      checked: true,
      response_time: seconds,
      status: { online: r.reachable, http_code: r.http_status, response_time: seconds },
      site: listedSite(site),
    };
  },
});

export const checkSites = defineAbility({
  name: 'check-sites-v1',
  label: 'Check sites',
  category: 'svc-sites',
  toolset: 'sites',
  description: 'Reachability check of many sites (empty list = all): results per site and a summary.',
  input: z.object({ site_ids_or_domains: SiteRefs.default([]), exclude_ids: z.array(z.number().int()).optional() }).strict(),
  output: z.object({
    ...Queued,
    results: z.array(z.object(CheckFields)).optional(),
    summary: z.object({ total_checked: z.number().int(), reachable: z.number().int(), unreachable: z.number().int() }).optional(),
    errors: z.array(ItemError),
    total: z.number().int().optional(),
  }),
  annotations: { ...remote, siteAction: true },
  execute: async (i, ctx) => {
    const { found, errors } = ctx.sites.forBatch(i.site_ids_or_domains, i.exclude_ids, () => true);
    if (!found.length && i.site_ids_or_domains.length) throw catalogue.sitesNotFound(errors);
    const ran = await ctx.jobs.batch(ctx, 'check', found, (s) => ctx.children.fetchCheck(s));
    if (ran.queued) return { ...ran, total: found.length, errors };
    const { results: items, notDone } = ran;
    const results = items
      .filter((x) => x.ok)
      .map((x) => {
        const r = x.value;
        return {
          site_id: x.site.id,
          site_url: x.site.url,
          reachable: r.reachable,
          response_time_ms: r.response_time_ms,
          http_status: r.http_status,
        };
      });
    const up = results.filter((r) => r.reachable).length;
    return {
      queued: false,
      results,
      summary: { total_checked: results.length, reachable: up, unreachable: results.length - up },
      errors: [...errors, ...items.filter((x) => !x.ok).map((x) => itemError(x.site.url, x.error))],
      ...notProcessed(notDone),
    };
  },
});

export const reconnectSite = defineAbility({
  name: 'reconnect-site-v1',
  label: 'Reconnect site',
  category: 'svc-sites',
  toolset: 'sites',
  description:
    "Renew the keys with a site's child (a disconnected site, or one whose key stopped working). Errors: " +
    'svc_site_not_found (404), svc_reconnect_failed (502/504).',
  input: z.object({ site_id_or_domain: SiteRef, admin_password: z.string().max(500).optional() }),
  output: z.object({ reconnected: z.literal(true), ...siteStateFields }),
  annotations: { ...remote, siteAction: true },
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const s = await ctx.children.apply(await ctx.children.fetchReconnect(site, i.admin_password));
    return { reconnected: true as const, ...siteState(ctx, s) };
  },
});

export const disconnectSite = defineAbility({
  name: 'disconnect-site-v1',
  label: 'Disconnect site',
  category: 'svc-sites',
  toolset: 'sites',
  description:
    'Make the child forget this dashboard and mark the site disconnected (even if unreachable); ' +
    'reconnect-site-v1 undoes it. Errors: svc_site_not_found (404).',
  input: z.object({ site_id_or_domain: SiteRef }),
  output: z.object({ disconnected: z.literal(true), child_notified: z.boolean(), child_error: z.string().nullable(), ...siteStateFields }),
  annotations: { ...remote, siteAction: true },
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const r = await ctx.children.apply(await ctx.children.fetchDisconnect(site));
    return { disconnected: true as const, child_notified: r.child_notified, child_error: r.child_error, ...siteState(ctx, r.site) };
  },
});

function manyResult<K extends string>(verb: K) {
  return z.object({
    ...Queued,
    [verb]: z.array(BasicSite).optional(),
    errors: z.array(ItemError),
    [`total_${verb}`]: z.number().int().optional(),
    total_errors: z.number().int().optional(),
    total: z.number().int().optional(),
  } as Record<string, z.ZodType>);
}

async function many(
  ctx: AbilityContext,
  type: JobType,
  verb: string,
  found: SiteRecord[],
  errors: ItemErr[],
  step: (s: SiteRecord) => ReturnType<typeof ctx.children.fetchSync>,
) {
  const ran = await ctx.jobs.batch(ctx, type, found, step);
  if (ran.queued) return { ...ran, total: found.length, errors };
  const { results: items, notDone } = ran;
  const ok = items.filter((x) => x.ok).map((x) => basic(x.site));
  const all = [...errors, ...items.filter((x) => !x.ok).map((x) => itemError(x.site.url, x.error))];
  return { queued: false, [verb]: ok, errors: all, [`total_${verb}`]: ok.length, total_errors: all.length, ...notProcessed(notDone) };
}

export const reconnectSites = defineAbility({
  name: 'reconnect-sites-v1',
  label: 'Reconnect sites',
  category: 'svc-sites',
  toolset: 'sites',
  description: 'Reconnect several sites (empty list = every disconnected site that is not suspended).',
  input: z.object({ site_ids_or_domains: SiteRefs.default([]), exclude_ids: z.array(z.number().int()).optional() }).strict(),
  output: manyResult('reconnected'),
  annotations: { ...remote, siteAction: true },
  execute: async (i, ctx) => {
    const { found, errors } = ctx.sites.forBatch(
      i.site_ids_or_domains,
      i.exclude_ids,
      (s) => !s.suspended && siteStatus(s) === 'disconnected',
    );
    if (!found.length && i.site_ids_or_domains.length) throw catalogue.sitesNotFound(errors);
    return many(ctx, 'reconnect', 'reconnected', found, errors, (s) => ctx.children.fetchReconnect(s));
  },
});

export const disconnectSites = defineAbility({
  name: 'disconnect-sites-v1',
  label: 'Disconnect sites',
  category: 'svc-sites',
  toolset: 'sites',
  description:
    'Disconnect several sites, or all=true for every site. Errors: svc_site_not_found (404) when no ' + 'identifier names a site.',
  input: z
    .object({
      site_ids_or_domains: SiteRefs.optional(),
      all: z.boolean().optional().describe('Every site.'),
      exclude_ids: z.array(z.number().int()).optional(),
    })
    .strict(),
  output: manyResult('disconnected'),
  annotations: { ...remote, siteAction: true },
  execute: async (i, ctx) => {
    if (!i.site_ids_or_domains && !i.all) {
      throw catalogue.abilityInput('disconnect-sites-v1', 'site_ids_or_domains is a required property of input.', 'site_ids_or_domains');
    }
    const refs = i.all ? [] : i.site_ids_or_domains!;
    const { found, errors } = i.all || refs.length ? ctx.sites.forBatch(refs, i.exclude_ids, () => true) : { found: [], errors: [] };
    if (!found.length) throw catalogue.sitesNotFound(errors);
    return many(ctx, 'disconnect', 'disconnected', found, errors, async (s) => {
      const o = await ctx.children.fetchDisconnect(s);
      return o.ok ? { ok: true, commit: (tx) => o.commit(tx).site } : o;
    });
  },
});

export const getBatchJobStatus = defineAbility({
  name: 'get-batch-job-status-v1',
  label: 'Batch job status',
  category: 'svc-batch',
  toolset: 'jobs',
  description:
    'Progress of a background job (a batch over 200 sites). Errors: svc_job_not_found (404; finished ' + 'jobs are kept 24 hours).',
  input: z.object({ job_id: z.string().regex(/^(sync|update|reconnect|disconnect|check|suspend|renew|install)_/) }).strict(),
  output: z.object({
    job_id: z.string(),
    type: z.string(),
    status: z.enum(['queued', 'processing', 'completed', 'failed']),
    progress: z.number().int(),
    processed: z.number().int(),
    total: z.number().int(),
    succeeded: z.number().int(),
    failed: z.number().int(),
    started_at: z.string().nullable(),
    completed_at: z.string().nullable(),
    errors: z
      .array(z.object({ site_id: z.number().int(), code: z.string(), message: z.string() }))
      .describe('The first 500 per-site errors (failed counts them all).'),
    job_timed_out: z.boolean(),
    failure: z.string().optional(),
    /** Update jobs: per-item results (updated / failed / skipped), the first 500, and how many there are. */
    items: z.array(z.unknown()).optional(),
    items_total: z.number().int().optional(),
  }),
  annotations: { readonly: true, destructive: false, idempotent: true, openWorld: false },
  execute: ({ job_id }, ctx) => jobView(ctx.jobs.get(job_id)),
});

export const cancelBatchJob = defineAbility({
  name: 'cancel-batch-job-v1',
  label: 'Cancel batch job',
  category: 'svc-batch',
  toolset: 'jobs',
  description: 'Stop a background job: no site starts after this; what was done stays recorded. Returns its status.',
  input: getBatchJobStatus.input,
  output: getBatchJobStatus.output,
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false, siteAction: true },
  execute: async ({ job_id }, ctx) => jobView(await ctx.jobs.cancel(job_id)),
});

export const childSiteAbilities = [
  addSite,
  syncSites,
  checkSite,
  checkSites,
  reconnectSite,
  reconnectSites,
  disconnectSite,
  disconnectSites,
];
export const jobAbilities = [getBatchJobStatus, cancelBatchJob];
