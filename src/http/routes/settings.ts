// REST v2 settings routes (upstream's 30 under /settings, issue 21). Those that mean something here run abilities
// (general: the sync schedule; advanced: sync concurrency and the queue threshold; the cost tracker's product types
// and payment methods; the fleet tools renew-connections and disconnect-all-sites with their status routes). Every
// other one answers 501 svc_not_supported saying why — never a silent no-op. Upstream keys a supported route does
// not apply are refused the same way, naming them, and nothing is changed.
import { disconnectAllSites, renewConnections } from '../../abilities/fleet-tools.js';
import { getBatchJobStatus } from '../../abilities/child-sites.js';
import {
  addCostProductType,
  addPaymentMethod,
  deleteCostProductType,
  deletePaymentMethod,
  getSettings,
  Settings,
  SettingsInput,
  updateCostProductType,
  updatePaymentMethod,
  updateSettings,
} from '../../abilities/settings.js';
import { ServiceError } from '../../core/errors.js';
import { refusal } from '../../core/principal.js';
import type { JobType } from '../../store/records.js';
import { CREATE, READ, REMOVE, route, type RestArgs, type RestRoute } from '../rest-door.js';
import { STATUS_PATHS, withStatusUrl } from '../job-links.js';
import type { Ability } from '../../core/ability.js';
import { pick } from './args.js';
import { z } from 'zod';
import { done, ok } from './answers.js';

const EDIT = ['PUT', 'PATCH', 'POST'] as const;

const notSupported = (why: string) => new ServiceError('svc_not_supported', `Not supported by sitefleet: ${why}`, 501);
const NOT_SUPPORTED_ERROR = { 501: ['svc_not_supported'] } as const;
/** A route sitefleet answers 501 (the reason names what it would need). */
const unsupported = (methods: readonly string[], path: string, why: string): RestRoute => {
  NOT_SUPPORTED.add(path);
  return {
    methods,
    path,
    handler: async () => {
      throw notSupported(why);
    },
    // It never succeeds: no success body.
    doc: {
      summary: 'Not supported',
      description: `Always answers 501 svc_not_supported: ${why}`,
      answers: z.never(),
      errors: NOT_SUPPORTED_ERROR,
    },
  };
};
/** Paths of the upstream routes sitefleet answers 501 (the sweeps in test/ check they answer exactly that). */
export const NOT_SUPPORTED = new Set<string>();

/** Upstream keys a supported route does not apply: refused with 501 (naming them) before anything is written. */
function refuseKeys(a: RestArgs, keys: readonly string[], why: string): void {
  const given = keys.filter((k) => a.args[k] !== undefined);
  if (given.length) throw notSupported(`${given.join(', ')} — ${why} Nothing was changed.`);
}
const Refused = z
  .unknown()
  .optional()
  .describe("Upstream's; not applied here: given, it is refused with 501 svc_not_supported naming it, and nothing is changed.");
const refusedArgs = (keys: readonly string[]) => Object.fromEntries(keys.map((k) => [k, Refused]));

const GENERAL_UNSUPPORTED = [
  'date_format',
  'time_format',
  'timezone_string',
  'sidebar_position',
  'hide_update_everything',
  'mainwp_widgets',
  'plugin_automatic_daily_update',
  'theme_automatic_daily_update',
  'trans_automatic_daily_update',
  'automatic_daily_update',
  'frequency_auto_update',
  'time_auto_update',
  'show_language_updates',
  'disable_update_confirmations',
  'check_http_response',
  'check_http_response_method',
  'backup_before_upgrade',
  'backup_before_upgrade_days',
  'numberdays_outdate_plugin_theme',
  'dayinweek_auto_update',
  'dayinmonth_auto_update',
  'delay_autoupdate',
  'mainwp_primary_backup',
  'mainwp_enable_legacy_backup_feature',
  'mainwp_backups_on_server',
];
const ADVANCED_UNSUPPORTED = [
  'mainwp_maximum_requests',
  'mainwp_minimum_delay',
  'mainwp_maximum_ip_requests',
  'mainwp_minimum_ip_delay',
  'mainwp_chunksitesnumber',
  'mainwp_chunksleepinterval',
  'mainwp_maximum_install_update_requests',
  'mainwp_maximum_uptime_monitoring_requests',
  'mainwp_optimize',
  'mainwp_wp_cron',
  'mainwp_ssl_verify_certificate',
  'mainwp_verify_connection_method',
  'mainwp_connect_signature_algo',
  'mainwp_force_use_ipv4',
  'sync_data',
];

const general = (r: { sync_frequency: number; sync_time: string; next_scheduled_sync: string | null }) => ({
  frequency_daily_update: r.sync_frequency,
  time_daily_update: r.sync_time,
  next_scheduled_sync: r.next_scheduled_sync,
});
const General = z.object({
  frequency_daily_update: Settings.shape.sync_frequency,
  time_daily_update: Settings.shape.sync_time,
  next_scheduled_sync: Settings.shape.next_scheduled_sync,
});
const generalGet = route(READ, '/settings/general', getSettings, {
  answers: ok({ data: General }),
  output: (r) => ({ success: 1, data: general(r) }),
});
const generalEdit = route(EDIT, '/settings/general/edit', updateSettings, {
  args: {
    frequency_daily_update: SettingsInput.sync_frequency.describe("Upstream's name for sync_frequency: automatic syncs a day, 0 = off."),
    time_daily_update: SettingsInput.sync_time.describe("Upstream's name for sync_time: the first sync, HH:MM UTC."),
    ...refusedArgs(GENERAL_UNSUPPORTED),
  },
  errors: { 400: ['svc_missing_fields'], ...NOT_SUPPORTED_ERROR },
  answers: done(General),
  input: (a) => {
    refuseKeys(
      a,
      GENERAL_UNSUPPORTED,
      'sitefleet has no dashboard UI, no automatic updates and no backups; of the general settings it applies the automatic sync schedule (frequency_daily_update 0–12 a day, 0 = off; time_daily_update HH:MM UTC).',
    );
    return { sync_frequency: a.args.frequency_daily_update, sync_time: a.args.time_daily_update };
  },
  output: (r) => ({ success: 1, message: 'General settings updated successfully.', data: general(r) }),
});

const advanced = (r: { sync_concurrency: number; queue_threshold: number }) => ({
  mainwp_maximum_sync_requests: r.sync_concurrency,
  queue_threshold: r.queue_threshold,
});
const Advanced = z.object({
  mainwp_maximum_sync_requests: Settings.shape.sync_concurrency,
  queue_threshold: Settings.shape.queue_threshold,
});
const advancedGet = route(READ, '/settings/advanced', getSettings, {
  answers: ok({ data: Advanced }),
  output: (r) => ({ success: 1, data: advanced(r) }),
});
const advancedEdit = route(EDIT, '/settings/advanced/edit', updateSettings, {
  args: {
    mainwp_maximum_sync_requests: SettingsInput.sync_concurrency.describe(
      "Upstream's name for sync_concurrency: sites synced at once; null = default.",
    ),
    ...refusedArgs(ADVANCED_UNSUPPORTED),
  },
  errors: { 400: ['svc_missing_fields'], ...NOT_SUPPORTED_ERROR },
  answers: done(Advanced),
  input: (a) => {
    refuseKeys(
      a,
      ADVANCED_UNSUPPORTED,
      'sitefleet bounds its child traffic with --child-concurrency and --child-timeout-ms and always syncs everything; of the advanced settings it applies mainwp_maximum_sync_requests (sites synced at once) and queue_threshold (sites above which batches run as jobs).',
    );
    return { sync_concurrency: a.args.mainwp_maximum_sync_requests, queue_threshold: a.args.queue_threshold };
  },
  output: (r) => ({ success: 1, message: 'Advanced settings updated successfully.', data: advanced(r) }),
});

const costTracker = (r: {
  product_types: Array<{ slug: string; title: string; color: string; icon: string }>;
  payment_methods: Array<{ slug: string; title: string }>;
}) => ({
  product_categories: r.product_types,
  // Always an object (upstream sends [] when empty).
  payment_methods: Object.fromEntries(r.payment_methods.map((p) => [p.slug, p.title])),
});
const CostTracker = z.object({
  product_categories: Settings.shape.product_types,
  payment_methods: z.record(z.string(), z.string()).describe('slug → title'),
});
const costGet = route(READ, '/settings/cost-tracker', getSettings, {
  answers: ok({ data: CostTracker }),
  output: (r) => ({ success: 1, data: costTracker(r) }),
});
/** {slug: {title, color, icon}} and {slug: title}: upstream's shapes of one product type and one payment method. */
const ProductTypeAnswer = done(z.record(z.string(), addCostProductType.output.omit({ slug: true })));
const PaymentMethodAnswer = done(z.record(z.string(), z.string()));
const Deleted = ok({ message: z.string() });
const NO_SLUG = { 404: ['svc_invalid_slug'] } as const;
const slug = (a: RestArgs) => ({ slug: a.params.slug });
const typeAdd = route(CREATE, '/settings/cost-tracker/product-types/add', addCostProductType, {
  input: (a) => pick(a, 'title', 'color', 'icon'),
  errors: { 409: ['svc_duplicate_title', 'svc_limit'] },
  answers: ProductTypeAnswer,
  output: (r) => ({
    success: 1,
    message: 'Product type added successfully.',
    data: { [r.slug]: { title: r.title, color: r.color, icon: r.icon } },
  }),
});
const typeEdit = route(EDIT, '/settings/cost-tracker/product-types/:slug/edit', updateCostProductType, {
  input: (a) => ({ ...slug(a), ...pick(a, 'title', 'color', 'icon') }),
  errors: { ...NO_SLUG, 400: ['svc_missing_fields', 'svc_invalid_title'] },
  answers: ProductTypeAnswer,
  output: (r) => ({
    success: 1,
    message: 'Product type updated successfully.',
    data: { [r.slug]: { title: r.title, color: r.color, icon: r.icon } },
  }),
});
const typeDelete = route(REMOVE, '/settings/cost-tracker/product-types/:slug/delete', deleteCostProductType, {
  input: (a) => ({ ...slug(a), confirm: true }),
  // 400 svc_invalid_slug: a default product type.
  errors: { ...NO_SLUG, 400: ['svc_invalid_slug'], 409: ['svc_in_use'] },
  answers: Deleted,
  output: () => ({ success: 1, message: 'Product type deleted successfully.' }),
});
const methodAdd = route(CREATE, '/settings/cost-tracker/payment-methods/add', addPaymentMethod, {
  input: (a) => pick(a, 'title'),
  errors: { 409: ['svc_duplicate_title', 'svc_limit'] },
  answers: PaymentMethodAnswer,
  output: (r) => ({ success: 1, message: 'Payment method added successfully.', data: { [r.slug]: r.title } }),
});
const methodEdit = route(EDIT, '/settings/cost-tracker/payment-methods/:slug/edit', updatePaymentMethod, {
  input: (a) => ({ ...slug(a), ...pick(a, 'title') }),
  errors: NO_SLUG,
  answers: PaymentMethodAnswer,
  output: (r) => ({ success: 1, message: 'Payment method updated successfully.', data: { [r.slug]: r.title } }),
});
const methodDelete = route(REMOVE, '/settings/cost-tracker/payment-methods/:slug/delete', deletePaymentMethod, {
  input: (a) => ({ ...slug(a), confirm: true }),
  errors: { ...NO_SLUG, 409: ['svc_in_use'] },
  answers: Deleted,
  output: () => ({ success: 1, message: 'Payment method deleted successfully.' }),
});

const Job = getBatchJobStatus.output.shape;
/** success: the job completed and no site failed; errors: the first 10. */
const JobStatusAnswer = z.object({
  success: z.boolean(),
  status: Job.status,
  total: Job.total,
  processed: Job.processed,
  succeeded: Job.succeeded,
  failed: Job.failed,
  progress: Job.progress,
  errors: Job.errors.max(10),
  started_at: Job.started_at,
  completed_at: Job.completed_at,
});

/** A job's status on its tool's own route: another tool's job id is not found here. */
function jobStatus(type: JobType, notFound: string): RestRoute {
  return route(READ, `${STATUS_PATHS[type]}:job_id`, getBatchJobStatus, {
    input: (a) => ({ job_id: a.params.job_id }),
    answers: JobStatusAnswer,
    output: (r) => {
      if (r.type !== type) throw new ServiceError('svc_job_not_found', notFound, 404);
      return {
        success: r.status === 'completed' && r.failed === 0,
        status: r.status,
        total: r.total,
        processed: r.processed,
        succeeded: r.succeeded,
        failed: r.failed,
        progress: r.progress,
        errors: r.errors.slice(0, 10),
        started_at: r.started_at,
        completed_at: r.completed_at,
      };
    },
  });
}
/** An unknown job id, or one of the wrong shape, is 404 here (upstream: 500). */
const statusRow = (type: JobType, notFound: string): RestRoute => {
  const row = jobStatus(type, notFound);
  return {
    ...row,
    handler: async (a, run) => {
      try {
        return await run(row, a);
      } catch (e) {
        const err = e instanceof ServiceError ? e : null;
        if (err && (err.code === 'svc_job_not_found' || err.code === 'rest_invalid_param'))
          throw new ServiceError('svc_job_not_found', notFound, 404);
        throw e;
      }
    },
  };
};

// Over the queue threshold: upstream's answer (an id and a status_url, on the tool's own status route, also in the
// data); under it, the batch's result at once.
const NO_SITE = { 404: ['svc_site_not_found'] } as const;
/** A tool's queued answer: upstream's `<tool>_id` and status_url (also in the data, after the job id). */
function toolQueued(ability: Ability, idKey: string, message: string, r: { job_id?: string }, restBase: string) {
  const data = withStatusUrl(ability.name, r, restBase) as { status_url?: string };
  return { success: 1, message, [idKey]: r.job_id, status_url: data.status_url, data };
}
const RenewData = renewConnections.output.extend({ status_url: z.string().optional() });
const DisconnectAllData = disconnectAllSites.output.extend({ status_url: z.string().optional() });
const renew = route(CREATE, '/settings/tools/renew-connections', renewConnections, {
  input: () => ({}),
  errors: NO_SITE,
  answers: z.union([
    ok({ message: z.string(), renew_id: z.string(), status_url: z.string(), data: RenewData }),
    done(renewConnections.output),
  ]),
  output: (r, { restBase }) =>
    r.queued
      ? toolQueued(renewConnections, 'renew_id', 'Renew connection process started in background.', r, restBase)
      : { success: 1, message: `Connections renewed: ${r.succeeded} of ${r.total} site(s).`, data: r },
});
const disconnectAll = route(CREATE, '/settings/tools/disconnect-all-sites', disconnectAllSites, {
  input: (a) => pick(a, 'confirm', 'dry_run'),
  errors: { ...NO_SITE, 400: ['svc_confirmation_required'] },
  answers: z.union([
    ok({ message: z.string(), disconnect_id: z.string(), status_url: z.string(), data: DisconnectAllData }),
    done(disconnectAllSites.output),
  ]),
  output: (r, { restBase }) =>
    r.dry_run
      ? { success: 1, message: `${r.total} site(s) would be disconnected.`, data: r }
      : r.queued
        ? toolQueued(disconnectAllSites, 'disconnect_id', 'Disconnect process started in background.', r, restBase)
        : { success: 1, message: `Sites disconnected: ${r.succeeded} of ${r.total}.`, data: r },
});

// ---- GET /settings/tools: which fleet tools sitefleet has (upstream's answers its UI preferences; sitefleet has no UI) ----

/** Upstream's tools sitefleet does not run, and why (each route answers 501 with the same reason). */
const TOOLS_NOT_SUPPORTED = {
  'destroy-sessions':
    "MainWP Child 6.1 has no call that destroys user sessions (upstream's job sends nothing to the children); log users out per site with update-user-v1 (a new password).",
  'clear-activation-data': 'sitefleet has no extension licences or shop login to clear.',
  'restore-info-messages': 'sitefleet has no UI with dismissible info messages.',
} as const;
const UI_PREFERENCES = 'these are dashboard UI preferences (theme, guided tours, chat); sitefleet has no UI.';

const ToolView = z.union([
  z.object({
    supported: z.literal(true),
    ability: z.string().describe('svc/<name>: the same tool on the abilities door and MCP.'),
    label: z.string(),
    description: z.string(),
    method: z.literal('POST'),
    path: z.string().describe('Relative to the REST base.'),
    status_path: z.string().describe("Where a queued run is followed ({id}: the answer's <tool>_id)."),
    needs_confirm: z.boolean().describe('A run needs confirm: true (dry_run: true previews).'),
    may_run: z.boolean().describe('Whether the calling key may run it.'),
  }),
  z.object({ supported: z.literal(false), reason: z.string() }),
]);
const RUNNABLE_TOOLS = [
  [renewConnections, '/settings/tools/renew-connections', 'renew'],
  [disconnectAllSites, '/settings/tools/disconnect-all-sites', 'disconnect'],
] as const;
const toolsGet: RestRoute = {
  methods: READ,
  path: '/settings/tools',
  handler: async (a) => ({
    success: 1,
    data: {
      ...Object.fromEntries(
        RUNNABLE_TOOLS.map(([ability, path, job]) => [
          path.slice('/settings/tools/'.length),
          {
            supported: true,
            ability: `svc/${ability.name}`,
            label: ability.label,
            description: ability.description,
            method: 'POST',
            path,
            status_path: `${STATUS_PATHS[job]}{id}`,
            needs_confirm: 'confirm' in ability.input.shape,
            may_run: refusal(a.principal, ability.annotations, 'POST', ability) === null,
          },
        ]),
      ),
      ...Object.fromEntries(Object.entries(TOOLS_NOT_SUPPORTED).map(([tool, reason]) => [tool, { supported: false, reason }])),
    },
  }),
  doc: {
    summary: 'Fleet tools',
    description:
      "The fleet tools sitefleet runs (renew connections, disconnect all sites: where, how they are followed, and whether this key may run them) and upstream's it does not, with the reason. Upstream answers its dashboard's UI preferences here; sitefleet has no UI.",
    answers: ok({ data: z.record(z.string(), ToolView) }),
  },
};

export const settingsRoutes: readonly RestRoute[] = [
  generalGet,
  generalEdit,
  advancedGet,
  advancedEdit,
  costGet,
  unsupported(
    EDIT,
    '/settings/cost-tracker/edit',
    'sitefleet keeps prices as plain numbers and formats no amounts, so currency and number format would change nothing. Product types and payment methods are supported.',
  ),
  typeAdd,
  typeEdit,
  typeDelete,
  methodAdd,
  methodEdit,
  methodDelete,
  unsupported(READ, '/settings/dashboard-insights', 'sitefleet keeps no dashboard insights log.'),
  unsupported(EDIT, '/settings/dashboard-insights/edit', 'sitefleet keeps no dashboard insights log.'),
  unsupported(READ, '/settings/api-backups', 'sitefleet has no backups, so no hosting-provider backup API keys.'),
  unsupported(EDIT, '/settings/api-backups/:api_slug/edit', 'sitefleet has no backups, so no hosting-provider backup API keys.'),
  toolsGet,
  unsupported(EDIT, '/settings/tools/edit', UI_PREFERENCES),
  unsupported(CREATE, '/settings/tools/destroy-sessions', TOOLS_NOT_SUPPORTED['destroy-sessions']),
  unsupported(
    READ,
    '/settings/tools/destroy-sessions-status/:destroy_id',
    'MainWP Child 6.1 has no call that destroys user sessions, so there are no such jobs.',
  ),
  renew,
  statusRow('renew', 'Renew connection job not found.'),
  disconnectAll,
  statusRow('disconnect', 'Disconnect job not found.'),
  unsupported(CREATE, '/settings/tools/clear-activation-data', TOOLS_NOT_SUPPORTED['clear-activation-data']),
  unsupported(CREATE, '/settings/tools/restore-info-messages', TOOLS_NOT_SUPPORTED['restore-info-messages']),
];
