// Installing a plugin or theme on many sites: from the directory by slug (and version), or from a zip URL. The package
// is resolved once (the directory's download link, or the URL checked by the address policy), the sites selected
// (websites, tags, clients), a site that already has it is skipped unless overwrite, and each other site's child is
// asked to install it (`installplugintheme`); what the child reports installed is stored at once. Over the queue
// threshold the run is a job, recorded site by site. Each site's attempt (installed or failed) is an entry of the
// update history with action 'install', in the same write as its result.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isPrivateAddress } from '../child/address-policy.js';
import { ChildError } from '../child/child-error.js';
import type { SitePlugin, SiteTheme } from '../child/snapshot.js';
import type { CallContext } from '../core/ability.js';
import { ServiceError } from '../core/errors.js';
import type { Config } from '../config.js';
import type { JobRecord, SiteData, SiteRecord } from '../store/records.js';
import { addItems, itemsOfSite } from './job-chunks.js';
import type { Store, Tx } from '../store/store.js';
import { childFailure, type ChildSiteService, type Outcome } from './child-sites.js';
import { eachSite, type JobService } from './jobs.js';
import type { PackageSource, PackageType } from './package-source.js';
import type { PluginActionService } from './plugin-actions.js';
import type { SiteSelector, SiteSelectorService } from './selectors.js';
import type { SiteDataService } from './site-data.js';
import type { SiteService } from './sites.js';
import { actorOf, type HistoryEntry, type UpdateHistoryService } from './update-history.js';
import type { PackageUploads } from './uploads.js';
import type { UpdateActor } from '../store/health-records.js';

/** What to install and how. Exactly one of slug (a directory package), url (a zip) or upload_id (an uploaded zip). */
export interface InstallRequest {
  type: PackageType;
  slug?: string;
  version?: string;
  url?: string;
  upload_id?: string;
  /** Plugins: activate after the install. */
  activate: boolean;
  /** Replace an installed copy (else a site that has it is skipped). */
  overwrite: boolean;
}

/** The package an install sends every site: the URL the child downloads, and what is known of it beforehand. */
export interface InstallPackage {
  type: PackageType;
  source: 'directory' | 'url' | 'upload';
  /** An uploaded zip: each site gets a fresh signed link to it (download_url is then upload:ID). */
  upload_id?: string;
  /** The folder it installs into, when known (directory slug; a zip URL's file name SLUG.zip or SLUG.VERSION.zip). */
  slug: string | null;
  name: string | null;
  version: string | null;
  download_url: string;
}

interface Where {
  site_id: number;
  site_url: string;
  site_name: string;
}
export interface InstalledRow extends Where {
  type: PackageType;
  /** Plugin file (folder/file.php) or theme stylesheet, as the child reports it. */
  slug: string;
  name: string;
  version: string;
  /** The version that was there before (an overwrite), else null. */
  replaced_version: string | null;
  /** Plugins asked to activate: whether the site reports it active afterwards; else null. */
  activated: boolean | null;
  activation_error?: string;
}
export interface FailedRow {
  site_id: number | null;
  site_url: string | null;
  site_name: string | null;
  code: string;
  message: string;
}
export type SkipReason = 'already_installed' | 'site_suspended' | 'site_disconnected' | 'cancelled';
export interface SkippedRow extends Where {
  reason: SkipReason;
  message: string;
  installed_version?: string;
}
export interface PlannedRow extends Where {
  action: 'install' | 'overwrite';
  installed_version: string | null;
}

export interface InstallAnswer {
  package: InstallPackage;
  dry_run?: true;
  would_install?: PlannedRow[];
  sites_to_install: number;
  queued?: true;
  job_id?: string;
  installed: InstalledRow[];
  errors: FailedRow[];
  skipped: SkippedRow[];
  summary: { installed: number; failed: number; skipped: number };
  not_processed?: number[];
}

/** Sites an answer lists at most per list (the summary counts them all). */
export const MAX_LISTED = 1000;
/** Longest zip URL taken. */
export const MAX_URL_LENGTH = 2048;

const where = (s: SiteRecord): Where => ({ site_id: s.id, site_url: s.url, site_name: s.name });

/** The folder a zip's file name names: SLUG.zip or SLUG.VERSION.zip (wordpress.org's shapes), else null. */
export function folderOfZip(url: string): string | null {
  const base = decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
  return /^([a-z0-9_-]+?)(?:\.\d[0-9A-Za-z.+_-]*)?\.zip$/.exec(base)?.[1] ?? null;
}

/**
 * A zip URL an install may send: http(s), no credentials (they would be stored in jobs and shown in answers), and, unless
 * private sites are allowed, a host that resolves to public addresses only (the address policy: a caller must not make
 * the fleet fetch from the dashboard's own network).
 */
export async function checkZipUrl(raw: string, allowPrivate: boolean): Promise<string> {
  let u: URL | null = null;
  try {
    u = new URL(raw);
  } catch {
    /* answered below */
  }
  if (!u || !/^https?:$/.test(u.protocol) || raw.length > MAX_URL_LENGTH)
    throw new ServiceError('svc_invalid_url', `url must be an http:// or https:// URL of at most ${MAX_URL_LENGTH} characters.`, 400);
  if (u.username || u.password) throw new ServiceError('svc_invalid_url', 'url must not carry credentials.', 400);
  if (allowPrivate) return u.href;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const refused = () =>
    new ServiceError(
      'svc_address_not_allowed',
      `${u.hostname} is refused: it is a private or local address, which sitefleet uses only when started with --allow-private-sites`,
      400,
    );
  if (host.toLowerCase() === 'localhost' || host.toLowerCase().endsWith('.localhost')) throw refused();
  if (isIP(host)) {
    if (isPrivateAddress(host)) throw refused();
    return u.href;
  }
  let addresses: string[];
  try {
    addresses = (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    throw new ServiceError('svc_invalid_url', `The host of url (${u.hostname}) does not resolve.`, 400);
  }
  if (addresses.some(isPrivateAddress)) throw refused();
  return u.href;
}

/** Is the package there already? The stored item of its folder (plugins: folder/file.php; themes: the stylesheet). */
function installedItem(data: SiteData, type: PackageType, folder: string | null): SitePlugin | SiteTheme | null {
  if (!folder) return null;
  if (type === 'plugin') return data.plugins.find((p) => p.slug.startsWith(`${folder}/`)) ?? null;
  return data.themes.find((t) => t.slug === folder) ?? null;
}

/**
 * The child's failure, for the answer. MainWP Child 6.1 has no error reply for a package WordPress could not install
 * over an http:// URL (download failed, folder exists, no plugin or theme in the zip): it goes on to read the error
 * as an array, a PHP fatal error, which the site answers as HTTP 500 without a reply.
 */
function installFailure(e: unknown, site: SiteRecord, label: string): ServiceError {
  if (e instanceof ChildError && e.kind === 'no_marker' && /\(HTTP 500\)/.test(e.message))
    return new ServiceError(
      'svc_install_failed',
      `${site.url} could not install ${label}: the site answered HTTP 500 without a reply (a PHP error). MainWP Child 6.1 ends ` +
        'that way when WordPress cannot install a package: the download failed, the folder exists, or the zip holds no plugin or theme.',
      502,
      { site_url: site.url },
    );
  if (e instanceof ChildError && e.kind === 'child_error')
    return new ServiceError('svc_install_failed', `${site.url} could not install ${label}: ${e.message.replace(/^ERROR:\s*/, '')}`, 502, {
      site_url: site.url,
      child_code: e.childCode,
    });
  return childFailure(e, site);
}

type Call = Omit<CallContext, 'principal'> & Partial<Pick<CallContext, 'principal'>>;

/** The params of an install job: what each site of it installs. */
interface JobParams {
  package: InstallPackage;
  activate: boolean;
  overwrite: boolean;
  /** Who started it, for the history (a job keeps the caller that queued it; absent in jobs queued before). */
  actor?: UpdateActor;
}

export class InstallService {
  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly sites: SiteService,
    private readonly selectors: SiteSelectorService,
    private readonly children: ChildSiteService,
    private readonly siteData: SiteDataService,
    private readonly pluginActions: PluginActionService,
    private readonly jobs: JobService,
    private readonly packages: PackageSource,
    private readonly uploads: PackageUploads,
    private readonly history: UpdateHistoryService,
    /** The clock (tests move it). */
    public now: () => number = Date.now,
  ) {}

  /** The package of a request: resolved in the directory, or the zip URL checked. Nothing reaches a site before. */
  async package(req: InstallRequest): Promise<InstallPackage> {
    const given = [req.slug, req.url, req.upload_id].filter((v) => v !== undefined).length;
    if (given !== 1)
      throw new ServiceError(
        'svc_invalid_input',
        'Give one of slug (a directory package), url (a zip) or upload_id (an uploaded zip).',
        400,
      );
    if (req.upload_id !== undefined) {
      if (req.version !== undefined)
        throw new ServiceError('svc_invalid_input', 'version goes with slug; an uploaded zip installs the version it holds.', 400);
      const rec = this.uploads.get(req.upload_id);
      if (rec.type !== req.type)
        throw new ServiceError('svc_invalid_input', `Upload ${rec.upload_id} is a ${rec.type}, not a ${req.type}.`, 400);
      this.uploads.link(rec.upload_id); // no public address here: refused before any site
      return {
        type: req.type,
        source: 'upload',
        upload_id: rec.upload_id,
        slug: rec.folder,
        name: rec.name,
        version: rec.version || null,
        download_url: `upload:${rec.upload_id}`,
      };
    }
    if (req.url !== undefined) {
      if (req.version !== undefined)
        throw new ServiceError('svc_invalid_input', 'version goes with slug; a zip URL installs the version it holds.', 400);
      const url = await checkZipUrl(req.url, this.config.allowPrivateSites);
      return { type: req.type, source: 'url', slug: folderOfZip(url), name: null, version: null, download_url: url };
    }
    const p = await this.packages.resolve(req.type, req.slug!, req.version);
    return { type: req.type, source: 'directory', slug: p.slug, name: p.name, version: p.version, download_url: p.download_url };
  }

  async run(call: Call, sel: SiteSelector, req: InstallRequest, dryRun: boolean): Promise<InstallAnswer> {
    const pkg = await this.package(req);
    const { sites, skipped: off, unknown } = this.selectors.select(sel);
    const errors: FailedRow[] = unknown.map((u) => ({ site_id: null, site_url: null, site_name: null, code: u.code, message: u.message }));
    const skipped: SkippedRow[] = off.map((s) => {
      const site = this.sites.get(s.site_id)!;
      return { ...where(site), reason: s.status === 'suspended' ? 'site_suspended' : 'site_disconnected', message: s.message };
    });
    const todo: Array<{ site: SiteRecord; was: SitePlugin | SiteTheme | null }> = [];
    for (const site of sites) {
      const was = installedItem(await this.siteData.of(site), req.type, pkg.slug);
      if (was && !req.overwrite) {
        skipped.push({
          ...where(site),
          reason: 'already_installed',
          installed_version: was.version,
          message: `${was.name || was.slug} ${was.version} is installed on ${site.url} (as of its last sync); overwrite=true replaces it.`,
        });
      } else todo.push({ site, was });
    }
    const answer = (a: Partial<InstallAnswer>): InstallAnswer => {
      const installed = a.installed ?? [];
      const all = { errors: [...errors, ...(a.errors ?? [])], skipped: [...skipped, ...(a.skipped ?? [])] };
      return {
        package: pkg,
        ...a,
        sites_to_install: todo.length,
        installed: installed.slice(0, MAX_LISTED),
        errors: all.errors.slice(0, MAX_LISTED),
        skipped: all.skipped.slice(0, MAX_LISTED),
        summary: { installed: installed.length, failed: all.errors.length, skipped: all.skipped.length },
      };
    };
    if (dryRun)
      return answer({
        dry_run: true,
        would_install: todo.slice(0, MAX_LISTED).map(({ site, was }) => ({
          ...where(site),
          action: was ? 'overwrite' : 'install',
          installed_version: was?.version ?? null,
        })),
      });
    const params: JobParams = { package: pkg, activate: req.activate, overwrite: req.overwrite, actor: actorOf(call.principal) };
    const queued = await this.jobs.queueIfOver(
      'install',
      todo.map((t) => t.site),
      params as unknown as Record<string, unknown>,
    );
    if (queued) return answer({ queued: true, job_id: queued.job_id });
    const { results, notDone } = await eachSite(
      { config: this.config, signal: call.signal, progress: call.progress },
      todo.map((t) => t.site),
      'install',
      (site) => this.installOn(site, params),
    );
    const installed: InstalledRow[] = [];
    const failed: FailedRow[] = [];
    for (const r of results) {
      if (r.ok) installed.push(r.value);
      else failed.push({ ...where(r.site), code: r.error.code, message: r.error.message });
    }
    const cancelled: SkippedRow[] = notDone.map((s) => ({
      ...where(s),
      reason: 'cancelled',
      message: 'Not started: the run was cancelled.',
    }));
    return answer({
      installed,
      errors: failed,
      skipped: cancelled,
      ...(notDone.length ? { not_processed: notDone.map((s) => s.id) } : {}),
    });
  }

  /**
   * One site: the child installs the package; what it reports is stored on the site's list at once (a new item, or the
   * replaced one's version), then a plugin asked to activate is activated through plugin_action, whose sync block
   * says whether it really is active (the install reply does not) and is stored too.
   */
  async installOn(site: SiteRecord, p: JobParams, tx?: (tx: Tx, row: InstalledRow) => void): Promise<InstalledRow> {
    const started = this.now();
    // `ended` is read before the write that records the entry, never inside it: a write function may run more than
    // once (the PostgreSQL engine's dry run), and each run must record the same duration.
    const entry = (
      e: Pick<HistoryEntry, 'slug' | 'name' | 'from' | 'to' | 'outcome' | 'reason' | 'code'>,
      ended: number,
    ): HistoryEntry => ({
      site_id: site.id,
      site_url: site.url,
      type: p.package.type,
      ...e,
      actor: p.actor ?? { kind: 'job', id: null, name: 'install job' },
      at: new Date(started).toISOString(),
      duration_ms: Math.max(0, Math.round(ended - started)),
      safe: false,
      probe: null,
      action: 'install',
    });
    try {
      return await this.attempt(site, p, (t, row, ended) => {
        const reason = row.activation_error ? `Installed; not activated: ${row.activation_error}` : '';
        this.history.record(t, [
          entry(
            { slug: row.slug, name: row.name, from: row.replaced_version, to: row.version, outcome: 'installed', reason, code: '' },
            ended,
          ),
        ]);
        tx?.(t, row);
      });
    } catch (e) {
      const error = e instanceof ServiceError ? e : childFailure(e, site);
      const pkg = p.package;
      const was = installedItem(await this.siteData.of(site), pkg.type, pkg.slug);
      const slug = was?.slug ?? pkg.slug ?? pkg.download_url;
      await this.history.add([
        entry(
          {
            slug,
            name: pkg.name ?? was?.name ?? slug,
            from: was?.version ?? null,
            to: pkg.version,
            outcome: 'failed',
            reason: error.message,
            code: error.code,
          },
          this.now(),
        ),
      ]);
      throw e;
    }
  }

  /**
   * One site's install; `tx` runs in the write that stores its result (after the activation, when asked for), given
   * the time the result was in (read before that write).
   */
  private async attempt(site: SiteRecord, p: JobParams, tx: (tx: Tx, row: InstalledRow, ended: number) => void): Promise<InstalledRow> {
    const { package: pkg } = p;
    const label = `${pkg.type} ${pkg.slug ?? pkg.download_url}${pkg.version ? ` ${pkg.version}` : ''}`;
    this.children.assertReachable(site);
    const creds = await this.children.credentials(site);
    const connector = await this.children.connector();
    let item: Awaited<ReturnType<typeof connector.install>>;
    try {
      const url = pkg.upload_id ? this.uploads.link(pkg.upload_id) : pkg.download_url;
      item = await connector.install(creds, pkg.type, url, { overwrite: p.overwrite });
    } catch (e) {
      throw installFailure(e, site, label);
    }
    if (!item) throw new ServiceError('svc_install_failed', `${site.url} reported ${label} as not installed.`, 502, { site_url: site.url });
    // Read once the child has answered (a write function cannot read a cold blob): a snapshot stored between this read
    // and the write below is overwritten by these lists plus the item installed (child-sites.ts recordSnapshot: why
    // that heals on the next sync).
    const data = await this.siteData.of(site);
    const kind = pkg.type === 'plugin' ? 'plugins' : 'themes';
    const list: Array<SitePlugin | SiteTheme> = data[kind];
    const was = list.find((i) => i.slug === item.slug) ?? null;
    const now: SitePlugin | SiteTheme = {
      ...(was ?? { active: false, last_updated: null, ...(pkg.type === 'plugin' ? { must_use: false } : {}) }),
      slug: item.slug,
      name: item.name || was?.name || item.slug,
      version: item.version,
      // The package installed is the one offered, or newer: whatever update was pending for the old copy is gone.
      update_version: null,
    } as SitePlugin | SiteTheme;
    const row: InstalledRow = {
      ...where(site),
      type: pkg.type,
      slug: item.slug,
      name: now.name,
      version: item.version,
      replaced_version: was?.version ?? null,
      activated: null,
    };
    const installed = this.now();
    await this.store.write((t) => {
      if (!t.get('sites', site.id)) return;
      const items = (data[kind] as Array<SitePlugin | SiteTheme>).filter((i) => i.slug !== item.slug);
      t.putBlob('site-data', site.id, { ...data, [kind]: [...items, now] });
      if (!(pkg.type === 'plugin' && p.activate)) tx(t, row, installed);
    });
    if (pkg.type === 'plugin' && p.activate) {
      try {
        const r = await this.pluginActions.pluginAction(site, 'activate', [item.slug]);
        row.activated = r.done.length > 0;
        if (!row.activated) row.activation_error = r.errors[0]?.message ?? `${site.url} did not activate ${item.slug}.`;
      } catch (e) {
        row.activated = false;
        row.activation_error = childFailure(e, site).message;
      }
      const activated = this.now();
      await this.store.write((t) => tx(t, row, activated));
    }
    return row;
  }

  /** The job step: one site of an install job, its row recorded in the job with the site's data. */
  async jobStep(site: SiteRecord, job: JobRecord): Promise<Outcome<unknown>> {
    if (itemsOfSite(this.store, job, site.id).length) return { ok: true, commit: () => null }; // recorded before a crash
    const params = job.params as unknown as JobParams;
    const record = (t: Tx, row: Record<string, unknown>) => {
      const cur = t.get<JobRecord>('jobs', job.id);
      if (cur) addItems(t, cur, site.id, [row]);
    };
    try {
      await this.installOn(site, params, (t, row) => record(t, { ...row, status: 'installed' }));
      return { ok: true, commit: () => null };
    } catch (e) {
      const error = e instanceof ServiceError ? e : childFailure(e, site);
      return { ok: false, error, commit: (t) => record(t, { ...where(site), status: 'failed', code: error.code, message: error.message }) };
    }
  }
}
