// Fleet tools (issue 21; upstream's settings/tools): renew every connection and disconnect every site. Like sync:
// up to the queue threshold the batch runs while the caller waits (progress per site on MCP); above it, it is a
// persisted, resumable job (domain/jobs.ts); the REST door points at the tool's own status route.
import { z } from 'zod';
import { defineAbility, type AbilityContext } from './context.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { ServiceError } from '../core/errors.js';
import type { JobType, SiteRecord } from '../store/records.js';
import { BasicSite, Confirm, DryRun } from './schemas.js';

/** Sites a dry run names (the total is always given). */
const PREVIEW_MAX = 100;

const Ran = {
  queued: z.boolean(),
  job_id: z.string().optional(),
  total: z.number().int(),
  succeeded: z.number().int().optional(),
  errors: z.array(z.object({ site_id: z.number().int(), code: z.string(), message: z.string() })).optional(),
  not_processed: z.array(z.number().int()).optional(),
};

async function run(ctx: AbilityContext, type: JobType, sites: readonly SiteRecord[]): Promise<z.infer<z.ZodObject<typeof Ran>>> {
  const ran = await ctx.jobs.batch(ctx, type, sites);
  if (ran.queued) return { ...ran, total: sites.length };
  const { results, notDone } = ran;
  return {
    queued: false,
    total: sites.length,
    succeeded: results.filter((r) => r.ok).length,
    errors: results.flatMap((r) => (r.ok ? [] : [{ site_id: r.site.id, code: r.error.code, message: r.error.message }])),
    ...(notDone.length ? { not_processed: notDone.map((s) => s.id) } : {}),
  };
}

export const renewConnections = defineAbility({
  name: 'renew-connections-v1',
  label: 'Renew connections',
  category: 'svc-batch',
  toolset: 'sites',
  description: 'New keys for every connected site, as reconnect makes them; a job above the queue threshold.',
  input: z.object({}).strict(),
  output: z.object(Ran),
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: true, siteAction: true },
  execute: async (_i, ctx) => {
    const sites = [...ctx.sites.filter({}, () => [])].filter((s) => !s.suspended && !s.disconnected);
    if (!sites.length)
      throw new ServiceError('svc_site_not_found', 'No connected site to renew (suspended and disconnected sites are left out).', 404);
    return run(ctx, 'renew', sites);
  },
});

export const disconnectAllSites = defineAbility({
  name: 'disconnect-all-sites-v1',
  label: 'Disconnect all sites',
  category: 'svc-batch',
  toolset: 'sites',
  description: 'Make every child forget this dashboard; a job above the queue threshold. reconnect-sites-v1 undoes it.',
  input: z.object({ confirm: Confirm, dry_run: DryRun }).strict(),
  output: z.object({
    ...Ran,
    queued: Ran.queued.optional(),
    dry_run: z.boolean(),
    sites: z.array(BasicSite).optional().describe(`The first ${PREVIEW_MAX} (dry_run).`),
  }),
  annotations: { readonly: false, destructive: true, idempotent: true, openWorld: true },
  acceptsPost: true,
  execute: async ({ confirm, dry_run }, ctx) => {
    refuseBothFlags({ confirm, dry_run });
    const sites = [...ctx.sites.filter({}, () => [])].filter((s) => !s.disconnected);
    if (!sites.length) throw new ServiceError('svc_site_not_found', 'No connected site to disconnect.', 404);
    if (dry_run)
      return {
        dry_run: true,
        total: sites.length,
        sites: sites.slice(0, PREVIEW_MAX).map((s) => ({ id: s.id, url: s.url, name: s.name })),
      };
    requireConfirm({ confirm }, `Disconnecting all ${sites.length} sites requires confirm=true (preview with dry_run=true).`);
    return { dry_run: false, ...(await run(ctx, 'disconnect', sites)) };
  },
});

export const fleetToolAbilities = [renewConnections, disconnectAllSites];
