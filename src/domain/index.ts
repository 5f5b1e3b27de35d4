// The services every ability receives in its context, built once per process over one store.
import type { Config } from '../config.js';
import type { Store } from '../store/engine.js';
import { openStore } from '../store/open.js';
import type { SiteRecord } from '../store/records.js';
import { errors } from '../core/errors.js';
import { log } from '../log.js';
import { AuthService } from './auth.js';
import { OAuthService } from './oauth.js';
import { AuditService } from './audit.js';
import { ConsoleSessionService } from './console-sessions.js';
import { SettingsService } from './settings.js';
import { SiteService } from './sites.js';
import { TagService } from './tags.js';
import { ClientService } from './clients.js';
import { ClientFieldService } from './client-fields.js';
import { CostService } from './costs.js';
import { ChildSiteService } from './child-sites.js';
import { JobService } from './jobs.js';
import { DashboardSettings, scheduledSync } from './dashboard-settings.js';
import { UpdateService, type Plan } from './updates.js';
import { MonitorService } from './monitors.js';
import { WebhookService } from './webhooks.js';
import { SiteDataService } from './site-data.js';
import { SiteDataScan } from './site-data-index.js';
import { FleetSecurityService } from './fleet-security.js';
import { PluginActionService } from './plugin-actions.js';
import { SiteSelectorService } from './selectors.js';
import { PostService } from './posts.js';
import { WordPressUserService } from './users.js';
import { UserImportService } from './users-import.js';
import { VulnerabilityService } from './vulnerabilities/service.js';
import { HealthService } from './health.js';
import { UpdateHistoryService } from './update-history.js';
import { UpdateRollback } from './safe-updates.js';
import { PackageSource } from './package-source.js';
import { InstallService } from './installs.js';
import { AdminLoginService } from './admin-logins.js';
import { PackageUploads } from './uploads.js';
import { NotificationService } from './notifications/service.js';
import { wireNotifications } from './notifications/events.js';
import { TlsWatch } from './notifications/tls-watch.js';
import { UpdatePolicyService } from './update-policies.js';
import { ReportService } from './reports/service.js';

export interface Services {
  config: Config;
  store: Store;
  sites: SiteService;
  tags: TagService;
  clients: ClientService;
  clientFields: ClientFieldService;
  costs: CostService;
  auth: AuthService;
  /** OAuth access tokens for MCP over HTTP (--oauth-issuer); off without an issuer. */
  oauth: OAuthService;
  /** The audit log: the registry records every call that may change something; logins; schedulers. */
  audit: AuditService;
  /** Web console logins, in the store (every process sees them; a logout, deletion or role change ends them). */
  consoleSessions: ConsoleSessionService;
  settings: SettingsService;
  children: ChildSiteService;
  jobs: JobService;
  dashboard: DashboardSettings;
  updates: UpdateService;
  monitors: MonitorService;
  webhooks: WebhookService;
  /** What each site's last sync stored: plugin and theme lists, changes, security; the fleet's abandoned items. */
  siteData: SiteDataService;
  /** Sites whose last sync reported security issues, worst first. */
  fleetSecurity: FleetSecurityService;
  /** Plugin and theme actions on a child site (activate, deactivate, delete), stored as the child reports them. */
  pluginActions: PluginActionService;
  /** The sites a users / posts call selects (websites, groups, clients), and child work on one or each of them. */
  selectors: SiteSelectorService;
  /** Posts and pages on child sites. */
  posts: PostService;
  /** WordPress users on child sites (`auth` is the dashboard's own accounts). */
  wpUsers: WordPressUserService;
  /** CSV imports of WordPress users (streamed, bounded). */
  wpUserImport: UserImportService;
  /** Known vulnerabilities: the feed, the fleet's matches, the views and the fix (issue 30). */
  vulnerabilities: VulnerabilityService;
  /** Health probes of sites (home, login, extra paths) and each site's latest health. */
  health: HealthService;
  /** Every update attempt, bounded in time and count. */
  updateHistory: UpdateHistoryService;
  /** The plugin and theme directory (--package-source): search, versions, download links. */
  packages: PackageSource;
  /** Plugin and theme installs on many sites (from the directory or a zip URL). */
  installs: InstallService;
  /** Uploaded plugin and theme zips, checked, served to children from signed links. */
  uploads: PackageUploads;
  /** Notification channels (e-mail, Slack, Discord, Teams, webhooks), rules, and the delivery log. */
  notifications: NotificationService;
  /** tls.expiring: reads each https site's certificate every few hours while a rule wants it. */
  tlsWatch: TlsWatch;
  /** Update policies: unattended safe updates in each site's maintenance window, and their scheduler. */
  policies: UpdatePolicyService;
  /** "Open WP Admin": one-time links to a site's signed wp-admin login. */
  adminLogins: AdminLoginService;
  /** Client reports: white-label settings, preview, the archive, sending on an e-mail channel, schedules. */
  reports: ReportService;
}

export async function openServices(config: Config): Promise<Services> {
  const store = await openStore(config);
  const tags = new TagService(store);
  const sites = new SiteService(store, tags);
  const clients = new ClientService(store, sites);
  const clientFields = new ClientFieldService(store);
  const dashboard = new DashboardSettings(store, config);
  const costs = new CostService(store, sites, tags, clients, dashboard);
  const settings = new SettingsService(store);
  const children = new ChildSiteService(store, config, sites, tags, clients, settings);
  const jobs = new JobService(store, sites, config);
  const audit = new AuditService(store);
  jobs.threshold = () => dashboard.queueThreshold();
  jobs.define(
    'sync',
    (s) => children.fetchSync(s),
    () => dashboard.syncConcurrency(),
  );
  jobs.onTick(async () => {
    await scheduledSync(dashboard, jobs, sites, Date.now(), audit);
  });
  jobs.define('check', (s) => children.fetchCheck(s));
  jobs.define('reconnect', (s) => children.fetchReconnect(s));
  jobs.define('disconnect', (s) => children.fetchDisconnect(s));
  const packages = new PackageSource({ base: config.packageSource, allowPrivate: config.allowPrivateSites });
  const health = new HealthService(store, config, sites);
  const updateHistory = new UpdateHistoryService(store, tags.access);
  // One read of a site's data feeds every fleet-wide index over it (pending updates, abandoned items, security issues).
  const siteDataScan = new SiteDataScan(store);
  const updates = new UpdateService(
    store,
    config,
    sites,
    tags,
    children,
    jobs,
    health,
    updateHistory,
    new UpdateRollback(packages, health),
    siteDataScan,
  );
  // Removing a record lets go of every reference to it, in the same write.
  sites.onRemove.also((tx, id) => costs.forgetSite(tx, id));
  tags.onRemove.also((tx, id) => costs.forgetTag(tx, id));
  clients.onRemove.also((tx, id) => sites.unassignClient(tx, id));
  clients.onRemove.also((tx, id) => costs.forgetClient(tx, id));
  clients.onRemove.also((tx, id) => clientFields.dropClient(tx, id));
  sites.onRemove.also((tx, id) => updates.forgetSite(tx, id));
  sites.onRemove.also((tx, id) => health.forgetSite(tx, id));
  // Renew connections (issue 21): new keys for a connected site, as reconnect makes them.
  jobs.define('renew', async (s) => (s.disconnected ? { ok: false, error: errors.siteDisconnected(s, true) } : children.fetchReconnect(s)));
  jobs.define(
    'update',
    (s, job) => updates.jobStep(s, job!), // always run by a job
    (job) => updates.siteConcurrency(job?.params as Plan | undefined),
  );
  jobs.define('suspend', async (s) => ({ ok: true, commit: (tx) => sites.patch(tx, s.id, { suspended: true }) }));
  const monitors = new MonitorService(store, config, sites);
  const webhooks = new WebhookService(store, config);
  monitors.onEvent((e) => void webhooks.emit(e.event, { site: e.site, incident: e.incident }).catch(() => {}));
  children.syncFailureListeners.add(
    (site, error) =>
      void webhooks
        .emit('site.sync_failed', {
          site: { id: site.id, url: site.url, name: site.name },
          error: { code: error.code, message: error.message },
        })
        .catch(() => {}),
  );
  sites.onRemove.also((tx, id) => monitors.forgetSite(tx, id));
  const siteData = new SiteDataService(config, sites, children, siteDataScan);
  const vulnerabilities = new VulnerabilityService(store, config, sites, children);
  vulnerabilities.eventListeners.add((e) => void webhooks.emit(e.event, e.data).catch(() => {}));
  // After syncs (the matches of the sites that changed) and on the refresh schedule, claimed once across processes.
  jobs.onTick(async () => {
    await vulnerabilities.scheduledRefresh();
    await vulnerabilities.reconcile();
  });
  const selectors = new SiteSelectorService(config, sites, tags, clients, children);
  const auth = new AuthService(store);
  const consoleSessions = new ConsoleSessionService(store, config.consoleSessionSeconds * 1000);
  const notifications = new NotificationService(store, config);
  wireNotifications(notifications, { monitors, children, jobs, sites, tags, clients, history: updateHistory, vulnerabilities });
  const tlsWatch = new TlsWatch(notifications, () => store.all<SiteRecord>('sites'), { allowPrivate: config.allowPrivateSites });
  auth.onAccessChange.also((tx, id) => consoleSessions.endAllOf(tx, id));
  const pluginActions = new PluginActionService(store, sites, children, siteData);
  const uploads = new PackageUploads(config);
  const installs = new InstallService(
    store,
    config,
    sites,
    selectors,
    children,
    siteData,
    pluginActions,
    jobs,
    packages,
    uploads,
    updateHistory,
  );
  jobs.define('install', (s, job) => installs.jobStep(s, job!));
  const policies = new UpdatePolicyService(store, sites, tags, clients, updates, jobs, webhooks, vulnerabilities);
  children.snapshotHooks.add((tx, id, data) => policies.noteSeen(tx, id, data));
  sites.onRemove.also((tx, id) => policies.forgetSite(tx, id));
  jobs.define(
    'policy',
    (s, job) => policies.jobStep(s, job!),
    (job) => Number((job?.params as { max_sites?: number } | undefined)?.max_sites) || config.childConcurrency,
    (job, notStarted) => policies.cancelledRows(job, notStarted),
  );
  jobs.onTick(() => policies.scheduledTick());
  const adminLogins = new AdminLoginService(store, sites, children);
  const fleetSecurity = new FleetSecurityService(siteDataScan, tags.access);
  const reports = new ReportService(store, config, sites, tags, clients, costs, settings, fleetSecurity, notifications);
  clients.onRemove.also((tx, id) => reports.forgetClient(tx, id));
  vulnerabilities.eventListeners.add(
    (e) => void reports.logVulnerability(e).catch((x: unknown) => log('error', 'vulnerability log', { err: String(x) })),
  );
  jobs.onTick(() => reports.scheduledTick());
  return {
    config,
    store,
    sites,
    tags,
    clients,
    clientFields,
    costs,
    auth,
    oauth: new OAuthService(config),
    audit,
    consoleSessions,
    settings,
    children,
    jobs,
    dashboard,
    updates,
    monitors,
    webhooks,
    siteData,
    fleetSecurity,
    pluginActions,
    selectors,
    posts: new PostService(selectors),
    wpUsers: new WordPressUserService(selectors),
    wpUserImport: new UserImportService(config, sites, tags, selectors),
    vulnerabilities,
    health,
    updateHistory,
    packages,
    installs,
    uploads,
    notifications,
    tlsWatch,
    policies,
    adminLogins,
    reports,
  };
}

/** Scheduled uptime checks and webhook retries (serve does; tests that need them too). */
export function startMonitoring(s: Services): void {
  s.monitors.start();
  s.webhooks.start();
  s.notifications.start();
  s.tlsWatch.start();
}

/** Stop job runners (jobs stay resumable), close child connections, flush writes. */
export async function closeServices(s: Services): Promise<void> {
  await s.jobs.stop();
  await s.monitors.stop();
  await s.webhooks.stop();
  await s.tlsWatch.stop();
  await s.notifications.stop();
  await s.reports.stop();
  await s.children.close();
  await s.health.close();
  await s.packages.close();
  await s.oauth.close();
  await s.store.close();
}
