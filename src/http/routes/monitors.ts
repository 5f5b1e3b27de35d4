// REST v2 monitor routes on upstream's paths (REST v2 more §3), and webhooks. {id_domain} is a monitor id, which is
// the site's id, or the site's domain. Where upstream answers a soft 200 ("Monitor not found.") or miscounts, these
// answer the usual 404 and count what they say (reference: [defect] notes).
import {
  addWebhook,
  checkMonitor,
  deleteWebhook,
  getSiteUptime,
  listHeartbeats,
  listIncidents,
  listMonitors,
  listWebhooks,
  testWebhook,
  updateMonitorSettings,
  type MonitorView,
} from '../../abilities/monitors.js';
import { ServiceError } from '../../core/errors.js';
import { readFlag } from '../../core/input.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestArgs, type RestRoute } from '../rest-door.js';
import { list, pathId, pick, site } from './args.js';
import { z } from 'zod';
import { Int, done, listed, ok, okOrNot } from './answers.js';

// Upstream's status filter takes names or their numbers.
const STATUS_NUMBERS: Record<string, string> = { 1: 'up', 0: 'down', 2: 'pending', 3: 'pending', first: 'pending', '-1': 'paused' };
const listArgs = (a: RestArgs) => {
  const i: Record<string, unknown> = pick(a, 'search', 'page', 'per_page');
  const status = a.args.status;
  if (status !== undefined && status !== '') i.status = STATUS_NUMBERS[String(status)] ?? status;
  for (const k of ['include', 'exclude']) if (list(a.args[k])) i[k] = list(a.args[k]);
  return i;
};

/** "YYYY-MM-DD HH:MM:SS" UTC, as upstream writes last_check_at. */
const sqlTime = (s: string | null) => (s ? s.replace('T', ' ').replace(/Z$/, '') : '');

const upstreamMonitor = (m: MonitorView) => ({
  id: m.id,
  name: m.name,
  url: m.url,
  type: 'http',
  last_status: m.status,
  check_frequency: m.interval_s % 60 ? `${m.interval_s}s` : `${m.interval_s / 60}m`,
  last_check_at: sqlTime(m.last_check_at),
  last_status_code: m.last_http_code,
  last_cause: m.last_cause,
  down_since: m.down_since,
  uptime_24h: m.hourly.map((h) => ({ timestamp: h.hour, status: h.status })),
  uptime_ratio_24h: m.uptime_24h,
  uptime_ratio_7d: m.uptime_7d,
  uptime_ratio_30d: m.uptime_30d,
  incidents_count_7d: m.incidents_7d,
  incidents_count_30d: m.incidents_30d,
  response_time_avg_ms: m.response_ms.avg,
  response_time_min_ms: m.response_ms.min,
  response_time_max_ms: m.response_ms.max,
  response_time_p50_ms: m.response_ms.p50,
  response_time_p95_ms: m.response_ms.p95,
  response_time_p99_ms: m.response_ms.p99,
});

// What the rows read beyond their abilities' fields, and what they answer.
const M = listMonitors.output.shape.items.element.shape;
const Settings = listMonitors.output.shape.fleet_settings;
const NInt = Int.nullable();
const UpstreamMonitor = z.object({
  id: Int,
  name: z.string(),
  url: z.string(),
  type: z.literal('http'),
  last_status: M.status,
  check_frequency: z.string().describe('The interval: "5m" (minutes) or "90s".'),
  last_check_at: z.string().describe('"YYYY-MM-DD HH:MM:SS" UTC; "" before the first check.'),
  last_status_code: NInt,
  last_cause: M.last_cause,
  down_since: M.down_since,
  uptime_24h: z.array(z.object({ timestamp: z.string(), status: M.hourly.element.shape.status })),
  uptime_ratio_24h: M.uptime_24h,
  uptime_ratio_7d: M.uptime_7d,
  uptime_ratio_30d: M.uptime_30d,
  incidents_count_7d: Int,
  incidents_count_30d: Int,
  response_time_avg_ms: NInt,
  response_time_min_ms: NInt,
  response_time_max_ms: NInt,
  response_time_p50_ms: NInt,
  response_time_p95_ms: NInt,
  response_time_p99_ms: NInt,
});
const BasicMonitor = z.object({ id: Int, url: z.string(), last_status: M.status });
const Counted = ok({ count: Int });
/** Upstream's status filter: the names, or their numbers (as text in a query). */
const StatusArg = (names: readonly [string, ...string[]], numbers: readonly [string, ...string[]], said: string) =>
  z
    .union([
      z.enum(names),
      z.enum(numbers),
      z.union(
        numbers.filter((n) => /^-?\d+$/.test(n)).map((n) => z.literal(Number(n))) as [z.ZodLiteral<number>, ...z.ZodLiteral<number>[]],
      ),
    ])
    .optional()
    .describe(`${names.join(', ')}, or upstream's numbers: ${said}.`);
const MonitorStatus = StatusArg(
  ['up', 'down', 'pending', 'paused'],
  ['1', '0', '2', '3', 'first', '-1'],
  '1 up, 0 down, 2 / 3 / first pending, -1 paused',
);
const settingsDocArgs = {
  maxretries: z
    .union([z.literal(-1), z.literal(0), z.literal(1), z.enum(['-1', '0', '1'])])
    .optional()
    .describe("Upstream's re-check count: -1, 0 (both: none) or 1; retries wins when both are given."),
  active: z
    .union([z.boolean(), z.enum(['1', '0', 'true', 'false', 'useglobal'])])
    .optional()
    .describe('Check the site: 1/0, or "useglobal" (a site only).'),
  expected_status: z
    .union([z.array(z.union([Int, z.string()])), z.string()])
    .optional()
    .describe('HTTP codes that mean up, a list or comma-separated; "useglobal" (a site only).'),
};
const SETTINGS_ERRORS = { 400: ['invalid_maxretries', 'svc_invalid_interval', 'svc_invalid_timeout', 'svc_invalid_status_code'] };
const WEBHOOK_NOT_FOUND = { 404: ['svc_webhook_not_found'] };
/** A path site the door cannot tell REST's own code for (a number it does not read as the id, such as -0). */
const SITE_NOT_FOUND = { 404: ['svc_site_not_found'] };

const monitorsList = route(READ, '/monitors', listMonitors, {
  input: listArgs,
  args: { status: MonitorStatus },
  answers: listed(UpstreamMonitor),
  output: (r) => ({ success: 1, total: r.total, data: r.items.map(upstreamMonitor) }),
});
const monitorsBasic = route(READ, '/monitors/basic', listMonitors, {
  input: listArgs,
  args: { status: MonitorStatus },
  answers: listed(BasicMonitor),
  output: (r) => ({ success: 1, total: r.total, data: r.items.map((m) => ({ id: m.id, url: m.url, last_status: m.status })) }),
});
const monitorsCount = route(READ, '/monitors/count', listMonitors, {
  input: (a) => ({ ...listArgs(a), page: 1, per_page: 1 }),
  args: { status: MonitorStatus },
  answers: Counted,
  output: (r) => ({ success: 1, count: r.total }),
});

/** Settings from upstream's body: labels or seconds, `active` as "0"/"1"/"useglobal", status lists as arrays or commas. */
const settingsArgs = (a: RestArgs) => {
  const i: Record<string, unknown> = pick(a, 'interval', 'timeout', 'keyword', 'method', 'retries');
  // Upstream's maxretries: -1, 0 or 1 (-1 and 0 both mean no re-check here).
  if (a.args.maxretries !== undefined && a.args.maxretries !== '' && i.retries === undefined) {
    const n = Number(a.args.maxretries);
    if (![-1, 0, 1].includes(n)) throw new ServiceError('invalid_maxretries', 'The maxretries value must be -1, 0, or 1.', 400);
    i.retries = Math.max(0, n);
  }
  const active = a.args.active;
  if (active !== undefined && active !== '') i.active = active === 'useglobal' ? active : readFlag('active', active, false);
  const codes = a.args.expected_status;
  if (codes !== undefined && codes !== '') i.expected_status = codes === 'useglobal' ? codes : list(codes)!.map((c) => Number(c));
  if (typeof i.keyword !== 'string' && a.args.keyword === '') i.keyword = '';
  return i;
};
const fleetSettingsGet = route(READ, '/monitors/settings', listMonitors, {
  input: () => ({ per_page: 1 }),
  answers: ok({ data: Settings.extend({ monitor_id: z.literal(0) }) }),
  output: (r) => ({ success: 1, data: { monitor_id: 0, ...r.fleet_settings } }),
});
const fleetSettings = route(EDIT, '/monitors/settings', updateMonitorSettings, {
  input: settingsArgs,
  args: settingsDocArgs,
  answers: ok({ data: Settings.extend({ monitor_id: z.literal(0) }) }),
  errors: SETTINGS_ERRORS,
  output: (r) => ({ success: 1, data: { monitor_id: 0, ...r.settings } }),
});

const monitorGet = route(READ, '/monitors/:id_or_domain', getSiteUptime, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  answers: ok({ data: UpstreamMonitor.extend({ settings: Settings, open_incident: getSiteUptime.output.shape.open_incident }) }),
  errors: SITE_NOT_FOUND,
  output: (r) => ({ success: 1, data: { ...upstreamMonitor(r), settings: r.settings, open_incident: r.open_incident } }),
});
const monitorBasic = route(READ, '/monitors/:id_or_domain/basic', getSiteUptime, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  answers: ok({ data: BasicMonitor }),
  errors: SITE_NOT_FOUND,
  output: (r) => ({ success: 1, data: { id: r.id, url: r.url, last_status: r.status } }),
});
const PERIODS = new Set(['24h', '7d', '30d']);
const heartbeat = route(READ, '/monitors/:id_or_domain/heartbeat', listHeartbeats, {
  input: (a) => {
    const period = a.args.period;
    if (period !== undefined && period !== '' && !PERIODS.has(String(period))) {
      throw new ServiceError('invalid_period', 'Invalid period format. Allowed values: 24h, 7d, 30d.', 400);
    }
    const i: Record<string, unknown> = { site_id_or_domain: site(a), ...pick(a, 'status', 'since', 'page', 'per_page') };
    if (a.args.limit !== undefined && a.args.limit !== '' && Number(a.args.limit) > 0) i.per_page = a.args.limit;
    if (i.status !== undefined) i.status = STATUS_NUMBERS[String(i.status)] ?? i.status;
    return i;
  },
  args: {
    period: z
      .enum(['24h', '7d', '30d'])
      .optional()
      .describe("Upstream's period: checked, but the answer is the latest checks whatever it is."),
    limit: Int.optional().describe("Upstream's name for per_page (0 or less: ignored)."),
    status: StatusArg(['up', 'down'], ['1', '0'], '1 up, 0 down'),
  },
  answers: ok({
    data: z.array(
      z.object({
        monitor_id: Int.optional().describe('When the path names the monitor by id.'),
        status: z.union([z.literal(1), z.literal(0)]),
        time: z.string(),
        ping_ms: NInt,
        http_code: NInt,
        msg: z.string(),
      }),
    ),
    meta: z.object({ page: Int, per_page: Int, total: Int, total_pages: Int }),
  }),
  errors: { 400: ['invalid_period'], ...SITE_NOT_FOUND },
  output: (r, { args }) => ({
    success: 1,
    data: r.items.map((b) => ({
      monitor_id: Number(args.params.id_or_domain) || undefined,
      status: b.status === 'up' ? 1 : 0,
      time: b.time,
      ping_ms: b.response_ms,
      http_code: b.http_code,
      msg: b.cause ?? '',
    })),
    meta: { page: r.page, per_page: r.per_page, total: r.total, total_pages: Math.ceil(r.total / r.per_page) },
  }),
});
const incidents = route(READ, '/monitors/:id_or_domain/incidents', listIncidents, {
  input: (a) => ({ site_id_or_domain: site(a), ...pick(a, 'page', 'per_page', 'state') }),
  answers: listed(listIncidents.output.shape.items.element.omit({ duration_s: true }).extend({ duration_sec: Int })),
  errors: SITE_NOT_FOUND,
  output: (r) => ({
    success: 1,
    total: r.total,
    data: r.items.map((i) => ({ ...i, duration_sec: i.duration_s, duration_s: undefined })),
  }),
});
const incidentsCount = route(READ, '/monitors/:id_or_domain/incidents/count', listIncidents, {
  input: (a) => ({ site_id_or_domain: site(a), ...pick(a, 'state'), page: 1, per_page: 1 }),
  answers: Counted,
  errors: SITE_NOT_FOUND,
  output: (r) => ({ success: 1, count: r.total }),
});
const siteSettings = route(EDIT, '/monitors/:id_or_domain/settings', updateMonitorSettings, {
  input: (a) => ({ site_id_or_domain: site(a), ...settingsArgs(a) }),
  args: settingsDocArgs,
  answers: ok({ data: updateMonitorSettings.output.shape.own_settings.extend({ monitor_id: Int }), settings: Settings }),
  // Also the site removed while its settings were being written.
  errors: { ...SETTINGS_ERRORS, ...SITE_NOT_FOUND },
  output: (r) => ({ success: 1, data: { monitor_id: r.site_id, ...r.own_settings }, settings: r.settings }),
});
const check = route(CREATE, '/monitors/:id_or_domain/check', checkMonitor, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  answers: ok({ data: checkMonitor.output }),
  errors: SITE_NOT_FOUND,
  output: (r) => ({ success: 1, data: r }),
});

const webhooksList = route(READ, '/webhooks', listWebhooks, {
  input: (a) => pick(a, 'deliveries'),
  answers: listed(listWebhooks.output.shape.items.element),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const webhookAdd = route(CREATE, '/webhooks/add', addWebhook, {
  input: (a) => {
    const i: Record<string, unknown> = pick(a, 'url', 'description');
    if (list(a.args.events)) i.events = list(a.args.events);
    return i;
  },
  answers: done(addWebhook.output),
  errors: { 400: ['svc_invalid_url', 'svc_address_not_allowed'], 409: ['svc_webhook_limit'] },
  output: (r) => ({ success: 1, message: 'Webhook created. Keep the secret: it is not shown again.', data: r }),
});
const webhookRemove = route([...REMOVE, 'POST'], '/webhooks/:id/remove', deleteWebhook, {
  input: (a) => ({ webhook_id: pathId(a), confirm: true }),
  answers: done(deleteWebhook.output.shape.webhook),
  errors: WEBHOOK_NOT_FOUND,
  output: (r) => ({ success: 1, message: 'Webhook deleted.', data: r.webhook }),
});
const webhookTest = route(CREATE, '/webhooks/:id/test', testWebhook, {
  input: (a) => ({ webhook_id: pathId(a) }),
  answers: okOrNot({ data: testWebhook.output }),
  errors: WEBHOOK_NOT_FOUND,
  output: (r) => ({ success: r.status === 'delivered' ? 1 : 0, data: r }),
});

export const monitorRoutes: readonly RestRoute[] = [
  monitorsList,
  monitorsBasic,
  monitorsCount,
  fleetSettingsGet,
  fleetSettings, // before /monitors/:id_or_domain
  monitorGet,
  monitorBasic,
  heartbeat,
  incidents,
  incidentsCount,
  siteSettings,
  check,
  webhooksList,
  webhookAdd,
  webhookRemove,
  webhookTest,
];
