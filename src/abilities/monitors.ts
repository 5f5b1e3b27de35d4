// Uptime monitoring abilities: monitors (one per site, id = the site's id), heartbeats, incidents, settings, a
// check now; and the webhooks that announce incidents and failed syncs.
import { z } from 'zod';
import { defineAbility } from './context.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { ServiceError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import { secretUrlFor } from '../core/secret-url.js';
import { Page, paginate, perPage } from '../core/paging.js';
import {
  DEFAULT_SETTINGS,
  INTERVAL_MAX_S,
  INTERVAL_MIN_S,
  MAX_KEYWORD,
  MAX_RETRIES,
  MonitorService,
  TIMEOUT_MAX_S,
  checkExpected,
  parseDuration,
} from '../domain/monitors.js';
import {
  CAUSES,
  WEBHOOK_EVENTS,
  type Beat,
  type DeliveryRecord,
  type MonitorSettings,
  type WebhookRecord,
} from '../store/monitor-records.js';
import { Confirm, DryRun, SiteRef, paged } from './schemas.js';

const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };
const write = { readonly: false, destructive: false, idempotent: true, openWorld: false };
const base = { category: 'svc-monitors', toolset: 'monitors' } as const;

const Int = z.number().int();
const NInt = Int.nullable();
const Status = z.enum(['up', 'down', 'pending', 'paused']);
const Cause = z.enum(CAUSES);

const Ms = z
  .object({ avg: NInt, min: NInt, max: NInt, p50: NInt, p95: NInt, p99: NInt })
  .describe('Response times over 24 h (percentiles are histogram bucket bounds: 100, 250, 500, 1000, 2000, 5000, 10000 ms).');
const Monitor = z.object({
  id: Int,
  url: z.string(),
  name: z.string(),
  status: Status,
  interval_s: Int,
  last_check_at: z.string().nullable(),
  last_http_code: NInt,
  last_response_ms: NInt,
  last_cause: Cause.nullable(),
  down_since: z.string().nullable(),
  open_incident_id: NInt,
  uptime_24h: z.number().nullable(),
  uptime_7d: z.number().nullable(),
  uptime_30d: z.number().nullable(),
  response_ms: Ms,
  incidents_7d: Int,
  incidents_30d: Int,
  hourly: z.array(z.object({ hour: z.string(), status: z.union([z.literal(0), z.literal(1)]).nullable(), up: Int, down: Int })),
});
export type MonitorView = z.output<typeof Monitor>;
const Settings = z.object({
  active: z.boolean(),
  interval_s: Int,
  timeout_s: Int,
  expected_status: z.array(Int),
  keyword: z.string(),
  method: z.enum(['get', 'head']),
  retries: Int,
});
const Incident = z.object({
  id: Int,
  site_id: Int,
  site_url: z.string(),
  started_at: z.string(),
  ended_at: z.string().nullable(),
  resolved: z.boolean(),
  duration_s: Int,
  cause: Cause,
  message: z.string(),
  http_code: NInt,
  down_count: Int,
});
const Heartbeat = z.object({
  time: z.string(),
  status: z.enum(['up', 'down']),
  response_ms: NInt,
  http_code: NInt,
  cause: Cause.nullable(),
});
const Delivery = z.object({
  id: Int,
  webhook_id: Int,
  event: z.string(),
  event_id: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: Int,
  last_http_status: NInt,
  last_error: z.string().nullable(),
  created_at: z.string(),
  delivered_at: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
});
const Webhook = z.object({
  id: Int,
  url: z.string().describe('Whole for callers that may write; else scheme and host only (hook URLs are secrets).'),
  url_masked: z.boolean(),
  description: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  created_at: z.string(),
});

const iso = MonitorService.iso;

const beatView = (b: Beat): z.input<typeof Heartbeat> => ({
  time: iso(b[0]),
  status: b[1] ? 'up' : 'down',
  response_ms: b[2] >= 0 ? b[2] : null,
  http_code: b[3] || null,
  cause: b[4] >= 0 ? (CAUSES[b[4]] ?? null) : null,
});

const deliveryView = (d: DeliveryRecord): z.input<typeof Delivery> => ({
  id: d.id,
  webhook_id: d.webhook_id,
  event: d.event,
  event_id: d.event_id,
  status: d.status,
  attempts: d.attempts,
  last_http_status: d.last_http_status,
  last_error: d.last_error,
  created_at: d.created_at,
  delivered_at: d.delivered_at,
  next_attempt_at: d.status === 'pending' && d.next_attempt_at ? new Date(d.next_attempt_at).toISOString() : null,
});

/** A webhook as `p` may see it: its URL is a secret (secretUrlFor). */
const webhookView = (w: WebhookRecord, p: Principal): z.input<typeof Webhook> => ({
  id: w.id,
  ...secretUrlFor(p, w.url),
  description: w.description,
  events: w.events,
  created_at: w.created_at,
});

export const listMonitors = defineAbility({
  ...base,
  name: 'list-monitors-v1',
  label: 'List monitors',
  description:
    'Uptime monitors (one per site, id = site id): status, last check, uptime % over 24 h / 7 d / 30 d, response times, incident counts; and the fleet default settings.',
  input: z.object({
    status: Status.optional(),
    search: z.string().max(200).default(''),
    include: z.array(Int).optional(),
    exclude: z.array(Int).optional(),
    page: Page,
    per_page: perPage(20),
  }),
  output: paged(Monitor).extend({ fleet_settings: Settings }),
  annotations: ro,
  execute: async (i, ctx) => {
    const { items, total } = await ctx.monitors.page(i, i.page, i.per_page);
    return { items, page: i.page, per_page: i.per_page, total, fleet_settings: ctx.monitors.fleetSettings() };
  },
});

export const getSiteUptime = defineAbility({
  ...base,
  name: 'get-site-uptime-v1',
  label: 'Get site uptime',
  description:
    "One site's monitor: status, uptime %, response-time percentiles, hourly status for 24 h, open incident, and its settings (own and effective).",
  input: z.object({ site_id_or_domain: SiteRef }),
  output: Monitor.extend({ settings: Settings, own_settings: Settings.partial(), open_incident: Incident.nullable() }),
  annotations: ro,
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const view = await ctx.monitors.summary(site);
    const open = view.open_incident_id ? ctx.monitors.incident(view.open_incident_id) : undefined;
    return {
      ...view,
      settings: ctx.monitors.effective(site.id),
      own_settings: ctx.monitors.record(site.id)?.settings ?? {},
      open_incident: open ? ctx.monitors.incidentSummary(open) : null,
    };
  },
});

export const listHeartbeats = defineAbility({
  ...base,
  name: 'list-heartbeats-v1',
  label: 'List heartbeats',
  description: "A site's latest uptime checks (the last 60 are kept; older ones live on as hourly and daily uptime), newest first.",
  input: z.object({
    site_id_or_domain: SiteRef,
    status: z.enum(['up', 'down']).optional(),
    since: z.iso.datetime({ offset: true }).optional().describe('ISO 8601; only checks at or after it.'),
    page: Page,
    per_page: perPage(20),
  }),
  output: paged(Heartbeat),
  annotations: ro,
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const beats = await ctx.monitors.heartbeats(site.id, {
      since: i.since ? Math.floor(Date.parse(i.since) / 1000) : undefined,
      status: i.status,
    });
    return { items: paginate(beats, i.page, i.per_page).map(beatView), page: i.page, per_page: i.per_page, total: beats.length };
  },
});

export const listIncidents = defineAbility({
  ...base,
  name: 'list-incidents-v1',
  label: 'List incidents',
  description:
    'Downtime incidents (down from → up at, cause: timeout, dns, tls, connection, http_status, keyword, blocked), newest first; of one site or all.',
  input: z.object({
    site_id_or_domain: SiteRef.optional(),
    state: z.enum(['open', 'resolved', 'any']).default('any'),
    page: Page,
    per_page: perPage(20),
  }),
  output: paged(Incident),
  annotations: ro,
  execute: (i, ctx) => {
    const siteId = i.site_id_or_domain === undefined ? undefined : ctx.sites.resolve(i.site_id_or_domain).id;
    const all = ctx.monitors.incidents({ siteId, state: i.state });
    return {
      items: paginate(all, i.page, i.per_page).map((x) => ctx.monitors.incidentSummary(x)),
      page: i.page,
      per_page: i.per_page,
      total: all.length,
    };
  },
});

const UseGlobal = z.literal('useglobal');
export const updateMonitorSettings = defineAbility({
  ...base,
  name: 'update-monitor-settings-v1',
  label: 'Update monitor settings',
  description:
    'Set uptime-check settings of one site, or the fleet defaults when no site is given. "useglobal" puts a site field back on the fleet default. Returns own and effective settings.',
  input: z.object({
    site_id_or_domain: SiteRef.optional(),
    active: z.union([z.boolean(), UseGlobal]).optional(),
    interval: z.union([Int, z.string()]).optional().describe(`Seconds (${INTERVAL_MIN_S}–${INTERVAL_MAX_S}) or a label: "5m", "1h".`),
    timeout: z.union([Int, z.string()]).optional().describe(`Seconds (1–${TIMEOUT_MAX_S}) or a label: "30s".`),
    expected_status: z
      .union([z.array(Int), UseGlobal])
      .optional()
      .describe('HTTP codes that mean up.'),
    keyword: z.string().max(MAX_KEYWORD).optional().describe('Text the page must contain; "" for none.'),
    method: z.enum(['get', 'head', 'useglobal']).optional(),
    retries: z
      .union([Int.min(0).max(MAX_RETRIES), UseGlobal])
      .optional()
      .describe('Re-checks before declaring an up site down.'),
  }),
  output: z.object({ site_id: NInt, own_settings: Settings.partial(), settings: Settings }),
  annotations: write,
  execute: async (i, ctx) => {
    const siteId = i.site_id_or_domain === undefined ? 0 : ctx.sites.resolve(i.site_id_or_domain).id;
    const fleet = siteId === 0;
    const glob = (v: unknown) => {
      if (v !== 'useglobal') return false;
      if (fleet)
        throw new ServiceError('svc_invalid_input', '"useglobal" applies to a site\'s settings; the fleet defaults need a value.', 400);
      return true;
    };
    const patch: { [K in keyof MonitorSettings]?: MonitorSettings[K] | null } = {};
    if (i.active !== undefined) patch.active = glob(i.active) ? null : (i.active as boolean);
    if (i.interval !== undefined)
      patch.interval_s = glob(i.interval)
        ? null
        : parseDuration(i.interval, INTERVAL_MIN_S, INTERVAL_MAX_S, 'svc_invalid_interval', 'interval');
    if (i.timeout !== undefined)
      patch.timeout_s = glob(i.timeout) ? null : parseDuration(i.timeout, 1, TIMEOUT_MAX_S, 'svc_invalid_timeout', 'timeout');
    if (i.expected_status !== undefined)
      patch.expected_status = glob(i.expected_status) ? null : checkExpected(i.expected_status as number[]);
    if (i.keyword !== undefined) patch.keyword = glob(i.keyword) ? null : i.keyword;
    if (i.method !== undefined) patch.method = glob(i.method) ? null : (i.method as 'get' | 'head');
    if (i.retries !== undefined) patch.retries = glob(i.retries) ? null : (i.retries as number);
    if (!Object.keys(patch).length) throw new ServiceError('svc_invalid_input', 'Nothing to change: give at least one setting.', 400);
    const rec = await ctx.monitors.updateSettings(siteId, patch);
    return {
      site_id: fleet ? null : siteId,
      own_settings: rec.settings,
      settings: fleet ? { ...DEFAULT_SETTINGS, ...rec.settings } : ctx.monitors.effective(siteId),
    };
  },
});

export const checkMonitor = defineAbility({
  ...base,
  name: 'check-monitor-v1',
  label: 'Check monitor now',
  description: "Run a site's uptime check now with its monitor settings and record it (opens or closes an incident as it finds).",
  input: z.object({ site_id_or_domain: SiteRef }),
  output: z.object({
    site_id: Int,
    url: z.string(),
    uptime_status: z.enum(['up', 'down']),
    http_code: Int,
    response_ms: Int,
    cause: Cause.nullable(),
    message: z.string().nullable(),
  }),
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: true, siteAction: true },
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    const r = await ctx.monitors.check(site);
    return {
      site_id: site.id,
      url: site.url,
      uptime_status: r.up ? ('up' as const) : ('down' as const),
      http_code: r.http_code,
      response_ms: r.ms,
      cause: r.cause,
      message: r.message,
    };
  },
});

const WebhookId = Int.min(1);

export const addWebhook = defineAbility({
  ...base,
  name: 'add-webhook-v1',
  label: 'Add webhook',
  description:
    'Notify a URL of site.down, site.up and site.sync_failed events: signed POSTs (X-Sitefleet-Signature: sha256=HMAC of the body), retried. The secret is shown only in this answer.',
  input: z.object({
    url: z.string().min(1).max(2000),
    events: z
      .array(z.enum(WEBHOOK_EVENTS))
      .min(1)
      .default([...WEBHOOK_EVENTS]),
    description: z.string().max(200).default(''),
  }),
  output: Webhook.extend({ secret: z.string() }),
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: false },
  execute: async (i, ctx) => {
    const { webhook, secret } = await ctx.webhooks.create(i);
    return { ...webhookView(webhook, ctx.principal), secret };
  },
});

export const listWebhooks = defineAbility({
  ...base,
  name: 'list-webhooks-v1',
  label: 'List webhooks',
  description: 'Webhooks with their latest deliveries (status, attempts, last HTTP status or error).',
  input: z.object({ deliveries: Int.min(0).max(50).default(5).describe('Latest deliveries per webhook.') }),
  output: z.object({ items: z.array(Webhook.extend({ deliveries: z.array(Delivery) })), total: Int }),
  annotations: ro,
  execute: (i, ctx) => {
    const all = ctx.webhooks.list();
    return {
      items: all.map((w) => ({
        ...webhookView(w, ctx.principal),
        deliveries: ctx.webhooks.deliveries(w.id, i.deliveries).map(deliveryView),
      })),
      total: all.length,
    };
  },
});

export const deleteWebhook = defineAbility({
  ...base,
  name: 'delete-webhook-v1',
  label: 'Delete webhook',
  description: 'Delete a webhook; its pending deliveries are dropped.',
  input: z.object({ webhook_id: WebhookId, confirm: Confirm, dry_run: DryRun }),
  output: z.object({ deleted: z.boolean(), dry_run: z.boolean(), webhook: Webhook }),
  annotations: { readonly: false, destructive: true, idempotent: true, openWorld: false },
  acceptsPost: true,
  execute: async (i, ctx) => {
    refuseBothFlags(i);
    const w = ctx.webhooks.resolve(i.webhook_id);
    if (i.dry_run) return { deleted: false, dry_run: true, webhook: webhookView(w, ctx.principal) };
    requireConfirm(i);
    return { deleted: true, dry_run: false, webhook: webhookView(await ctx.webhooks.remove(w.id), ctx.principal) };
  },
});

export const testWebhook = defineAbility({
  ...base,
  name: 'test-webhook-v1',
  label: 'Test webhook',
  description: 'Send a signed webhook.test event now (one attempt) and return the delivery.',
  input: z.object({ webhook_id: WebhookId }),
  output: Delivery,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: true },
  execute: async (i, ctx) => deliveryView(await ctx.webhooks.test(i.webhook_id)),
});

export const monitorAbilities = [
  listMonitors,
  getSiteUptime,
  listHeartbeats,
  listIncidents,
  updateMonitorSettings,
  checkMonitor,
  addWebhook,
  listWebhooks,
  deleteWebhook,
  testWebhook,
] as const;
