// Upstream's GET /settings/monitoring and /settings/monitoring/edit, answered from the fleet's uptime monitor
// settings (the same as /monitors/settings), in upstream's key names and labels. Site-health keys have no
// counterpart here: an edit naming them is refused with 501 before anything is written.
import { listMonitors, updateMonitorSettings } from '../../abilities/monitors.js';
import { ServiceError } from '../../core/errors.js';
import { READ, route, type RestArgs, type RestRoute } from '../rest-door.js';
import { pick } from './args.js';
import { z } from 'zod';
import { Int, ok } from './answers.js';

const EDIT = ['PUT', 'PATCH', 'POST'] as const;
const HEALTH_KEYS = ['mainwp_disable_sites_health_monitoring', 'mainwp_sitehealth_threshold'] as const;

const Monitoring = z.object({
  mainwp_uptime_monitoring_active: z.union([z.literal(0), z.literal(1)]),
  mainwp_uptime_monitoring_interval: z.string().describe('"5m", "1h", or seconds as "90s".'),
  mainwp_uptime_monitoring_method: z.enum(['get', 'head']),
  mainwp_uptime_monitoring_timeout: z.string().describe('"30s", "2min".'),
  mainwp_uptime_monitoring_type: z.literal('http'),
  mainwp_uptime_monitoring_up_status_codes: z.array(z.string()),
  mainwp_uptime_monitoring_down_confirmation_check: z.union([z.literal(0), z.literal(1)]),
  mainwp_uptime_monitoring_keyword: z.string(),
  mainwp_uptime_monitoring_retries: Int.describe("sitefleet's re-check count (upstream's confirmation check is 1 when it is over 0)."),
});

type Fleet = z.output<typeof listMonitors.output>['fleet_settings'];
const intervalLabel = (s: number) => (s % 3600 === 0 ? `${s / 3600}h` : s % 60 === 0 ? `${s / 60}m` : `${s}s`);
const timeoutLabel = (s: number) => (s % 60 === 0 && s >= 120 ? `${s / 60}min` : `${s}s`);
const upstream = (f: Fleet): z.input<typeof Monitoring> => ({
  mainwp_uptime_monitoring_active: f.active ? 1 : 0,
  mainwp_uptime_monitoring_interval: intervalLabel(f.interval_s),
  mainwp_uptime_monitoring_method: f.method,
  mainwp_uptime_monitoring_timeout: timeoutLabel(f.timeout_s),
  mainwp_uptime_monitoring_type: 'http',
  mainwp_uptime_monitoring_up_status_codes: f.expected_status.map(String),
  mainwp_uptime_monitoring_down_confirmation_check: f.retries > 0 ? 1 : 0,
  mainwp_uptime_monitoring_keyword: f.keyword,
  mainwp_uptime_monitoring_retries: f.retries,
});

const flag = (v: unknown, key: string) => {
  if (['1', 'true', 1, true].includes(v as never)) return true;
  if (['0', 'false', 0, false].includes(v as never)) return false;
  throw new ServiceError('svc_invalid_input', `${key} takes 1 or 0.`, 400, { params: { [key]: 'Invalid flag.' } });
};

/** Upstream's keys to update-monitor-settings-v1's input (the fleet defaults). */
const editArgs = (a: RestArgs) => {
  const given = HEALTH_KEYS.filter((k) => a.args[k] !== undefined);
  if (given.length)
    throw new ServiceError(
      'svc_not_supported',
      `Not supported by sitefleet: ${given.join(', ')} — sitefleet has no site-health monitoring. Nothing was changed.`,
      501,
    );
  const p = (k: string) => `mainwp_uptime_monitoring_${k}`;
  const i: Record<string, unknown> = {};
  const v = pick(a, p('active'), p('interval'), p('method'), p('timeout'), p('up_status_codes'), p('keyword'), p('retries'));
  if (v[p('active')] !== undefined) i.active = flag(v[p('active')], p('active'));
  if (v[p('interval')] !== undefined) i.interval = v[p('interval')];
  if (v[p('timeout')] !== undefined) i.timeout = v[p('timeout')];
  if (v[p('method')] !== undefined) i.method = v[p('method')];
  if (a.args[p('keyword')] !== undefined) i.keyword = a.args[p('keyword')];
  const codes = v[p('up_status_codes')];
  if (codes !== undefined) i.expected_status = (Array.isArray(codes) ? codes : String(codes).split(',')).map((c) => Number(c));
  if (v[p('retries')] !== undefined) i.retries = v[p('retries')];
  else if (a.args[p('down_confirmation_check')] !== undefined && a.args[p('down_confirmation_check')] !== '')
    i.retries = flag(a.args[p('down_confirmation_check')], p('down_confirmation_check')) ? 1 : 0;
  return i;
};

const monitoringGet = route(READ, '/settings/monitoring', listMonitors, {
  input: () => ({ per_page: 1 }),
  answers: ok({ data: Monitoring }),
  output: (r) => ({ success: 1, data: upstream(r.fleet_settings) }),
});
const monitoringEdit = route(EDIT, '/settings/monitoring/edit', updateMonitorSettings, {
  input: editArgs,
  args: {
    mainwp_uptime_monitoring_active: z.union([z.boolean(), z.enum(['1', '0', 'true', 'false']), z.literal(0), z.literal(1)]).optional(),
    mainwp_uptime_monitoring_interval: z.union([Int, z.string()]).optional(),
    mainwp_uptime_monitoring_timeout: z.union([Int, z.string()]).optional(),
    mainwp_uptime_monitoring_method: z.enum(['get', 'head']).optional(),
    mainwp_uptime_monitoring_up_status_codes: z.union([z.array(z.union([Int, z.string()])), z.string()]).optional(),
    mainwp_uptime_monitoring_keyword: z.string().optional(),
    mainwp_uptime_monitoring_retries: Int.optional(),
    mainwp_uptime_monitoring_down_confirmation_check: z.union([z.literal(0), z.literal(1), z.enum(['0', '1'])]).optional(),
    mainwp_disable_sites_health_monitoring: z.unknown().optional().describe('Refused (501): no site-health monitoring.'),
    mainwp_sitehealth_threshold: z.unknown().optional().describe('Refused (501): no site-health monitoring.'),
  },
  answers: ok({ data: Monitoring }),
  errors: {
    400: ['svc_invalid_input', 'svc_invalid_interval', 'svc_invalid_timeout', 'svc_invalid_status_code'],
    501: ['svc_not_supported'],
  },
  output: (r) => ({ success: 1, data: upstream(r.settings) }),
});

export const settingsMonitoringRoutes: readonly RestRoute[] = [monitoringGet, monitoringEdit];
