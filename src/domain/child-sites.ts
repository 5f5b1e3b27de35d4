// Talking to child sites: registration, sync, reachability checks, reconnect and disconnect, on top of
// the wire-protocol connector. Each remote operation is split in two: the network part runs outside the
// store, and returns a commit function that records the outcome in one store transaction (so that a
// background job can record "site done" in the same commit).
import { ChildConnector, type SiteCredentials } from '../child/connector.js';
import { ChildError } from '../child/child-error.js';
import { clip, newestFirst, type SiteChange, type SiteSnapshot } from '../child/snapshot.js';
import { ServiceError, errors, toServiceError } from '../core/errors.js';
import { normaliseSiteUrl, siteKey } from '../core/site-lookup.js';
import type { Config } from '../config.js';
import type { CheckResult, SiteData, SiteRecord, SiteSecret, SiteStats } from '../store/records.js';
import type { Store, Tx } from '../store/store.js';
import type { ClientService } from './clients.js';
import type { SettingsService } from './settings.js';
import type { SiteService } from './sites.js';
import type { TagService } from './tags.js';

/** The result of one site's remote step: what to record, and whether it worked. */
export type Outcome<T> = { ok: true; commit: (tx: Tx) => T } | { ok: false; error: ServiceError; commit?: (tx: Tx) => void };

export interface AddSiteInput {
  url: string;
  admin: string;
  admin_password?: string;
  name?: string;
  client_id?: number | null;
  tags?: number[];
  http_user?: string | null;
  http_pass?: string | null;
  ssl_verify: boolean;
}

const now = () => new Date().toISOString();

/** WordPress Site Health counts → 0..100 (abilities reference §2.3). */
export function healthScore(h: { good: number; recommended: number; critical: number }): number {
  const total = h.good + h.recommended + 1.5 * h.critical;
  if (total === 0) return 100;
  const failed = 0.5 * h.recommended + 1.5 * h.critical;
  return Math.min(100, Math.max(0, 100 - Math.ceil((100 * failed) / total)));
}

function statsOf(snap: SiteSnapshot): SiteStats {
  return {
    plugin_updates: snap.plugins.filter((p) => p.update_version).length,
    theme_updates: snap.themes.filter((t) => t.update_version).length,
    wp_update_available: !!snap.wp_update_version,
    health_score: healthScore(snap.health),
  };
}

/** Changes kept per site: the newest ones. */
export const MAX_CHANGES_KEPT = 1000;

/** Stored changes with new ones, each event once, newest first, at most MAX_CHANGES_KEPT. */
function mergeChanges(stored: readonly SiteChange[], fresh: readonly SiteChange[]): SiteChange[] {
  const seen = new Set<string>();
  const out: SiteChange[] = [];
  for (const c of [...fresh, ...stored]) {
    const key = `${c.timestamp}|${c.type}|${c.action}|${c.description}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(c);
    }
  }
  return out.sort(newestFirst).slice(0, MAX_CHANGES_KEPT);
}

/** A connector failure as a service error: 4xx/5xx that names the cause, never a bare 500. */
export function childFailure(err: unknown, site: { url: string }): ServiceError {
  if (err instanceof ServiceError) return err;
  // Not the child's doing (the connector reports every failure of the site as a ChildError): a defect of ours.
  if (!(err instanceof ChildError)) return toServiceError(err, { site: site.url });
  const data = { site_url: site.url, reason: err.kind };
  // The message may carry the child's own text: it is stored (sync_error) and echoed, so it is bounded.
  const e = new ChildError(err.kind, clip(err.message, 500), err.childCode);
  switch (e.kind) {
    case 'blocked':
      return new ServiceError('svc_address_not_allowed', e.message, 400, data);
    case 'timeout':
      return new ServiceError('svc_child_timeout', `${site.url} did not answer in time: ${e.message}`, 504, data);
    case 'transport':
      return new ServiceError('svc_child_unreachable', `Could not reach ${site.url}: ${e.message}`, 502, data);
    case 'no_marker':
      return new ServiceError('svc_child_not_detected', `${site.url}: ${e.message}`, 502, data);
    case 'auth_failed':
      return new ServiceError('svc_child_auth_failed', `${site.url} refused our signature (${e.message}); reconnect the site.`, 502, data);
    case 'child_error':
      return new ServiceError('svc_child_error', `${site.url} answered: ${e.message}`, 502, { ...data, child_code: e.childCode });
    default:
      return new ServiceError('svc_child_bad_reply', `${site.url} sent an invalid reply: ${e.message}`, 502, data);
  }
}

export class ChildSiteService {
  private connectorP: Promise<ChildConnector> | null = null;
  /** Told of every sync that failed at the site (notifications). */
  readonly syncFailureListeners = new Set<(site: SiteRecord, error: ServiceError) => void>();
  /**
   * Run in the transaction that stores a site's fresh data, with what was stored before (null: the first snapshot, or
   * not known: another snapshot of the site was stored after the one read before the write, see recordSnapshot):
   * update policies note when each update was first seen; notifications compare users and plugins.
   */
  readonly snapshotHooks = new Set<(tx: Tx, siteId: number, data: SiteData, prev: SiteData | null) => void>();

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly sites: SiteService,
    private readonly tags: TagService,
    private readonly clients: ClientService,
    private readonly settings: SettingsService,
  ) {}

  /** One connector (one undici Agent, one bound on calls in flight) per process, made on first use. */
  connector(): Promise<ChildConnector> {
    this.connectorP ??= this.settings.installationUrl().then(
      (serverUrl) =>
        new ChildConnector({
          serverUrl,
          concurrency: this.config.childConcurrency,
          timeoutMs: this.config.childTimeoutMs,
          packageTimeoutMs: this.config.childPackageTimeoutMs,
          allowPrivateAddresses: this.config.allowPrivateSites,
        }),
    );
    return this.connectorP;
  }

  async close(): Promise<void> {
    if (this.connectorP) await (await this.connectorP).close();
  }

  /** What signing a request to the site's child takes (its key is a cold blob: read from the store, never sent out). */
  async credentials(site: SiteRecord): Promise<SiteCredentials> {
    const secret = await this.sites.secret(site.id);
    if (!secret) throw new ServiceError('svc_site_keys_missing', `Site ${site.id} has no connection keys; reconnect it.`, 409);
    return {
      url: site.url,
      admin: site.admin_username,
      privateKeyPem: secret.private_key_pem,
      signAlgo: site.sign_algo,
      regverify: secret.regverify,
      httpUser: site.http_user,
      httpPass: secret.http_pass,
      sslVerify: site.ssl_verify,
    };
  }

  /** credentials, or null for a site without keys. */
  async credentialsIfAny(site: SiteRecord): Promise<SiteCredentials | null> {
    return (await this.sites.secret(site.id)) ? this.credentials(site) : null;
  }

  /** A site's stored data (a cold blob: read from the store, through its bounded cache). */
  siteData(id: number): Promise<SiteData | null> {
    return this.store.readBlob<SiteData>('site-data', id);
  }

  /** Suspended and disconnected sites get no child traffic. */
  assertReachable(site: SiteRecord): void {
    if (site.suspended) throw errors.siteSuspended(site);
    if (site.disconnected) throw errors.siteDisconnected(site);
  }

  /**
   * Store what a child reported (a sync, or the `sync` block of an action reply) and the stats derived from it.
   * `prev` is the site's stored data as read before the write (site data is a cold blob: a write function cannot read
   * it). Nothing serialises two snapshots of one site across that read (two syncs, a sync and an action, in one
   * process or two), so `prev` may be older than what is stored by the time this runs. What that can cost heals on the
   * next sync, and nothing is told twice: a sync asked its child for every change after prev's cursor, so its changes
   * and cursor are complete; an action's block (no change log) keeps prev's cursor, never a newer one than the changes
   * it writes, so the next sync fetches again what a snapshot in between brought; and when the site's last_sync shows
   * that another snapshot came in between, the hooks are given no previous data (they compare it to tell what is new).
   */
  recordSnapshot(tx: Tx, id: number, snap: SiteSnapshot, prev: SiteData | null, extra: Partial<SiteRecord> = {}): SiteRecord {
    return this.storeSnapshot(tx, id, snap, prev, extra).site;
  }

  /** recordSnapshot, answering the data stored too (what a write that goes on to change it starts from). */
  storeSnapshot(
    tx: Tx,
    id: number,
    snap: SiteSnapshot,
    prev: SiteData | null,
    extra: Partial<SiteRecord> = {},
  ): { site: SiteRecord; data: SiteData } {
    // Changes accumulate: a sync brings only events newer than the cursor, an action's sync block none of the log.
    const data: SiteData = {
      plugins: snap.plugins,
      themes: snap.themes,
      security: snap.security,
      changes: mergeChanges(prev?.changes ?? [], snap.changes),
      changes_cursor: snap.changes_cursor ?? prev?.changes_cursor ?? null,
      users: snap.users,
      updates: snap.updates,
      synced_at: now(),
    };
    const current = prev !== null && tx.get<SiteRecord>('sites', id)?.last_sync === prev.synced_at;
    tx.putBlob('site-data', id, data);
    for (const hook of this.snapshotHooks) hook(tx, id, data, current ? prev : null);
    const site = this.sites.patch(tx, id, {
      wp_version: snap.wp_version,
      php_version: snap.php_version,
      child_version: snap.child_version,
      timezone: snap.timezone,
      admin_username: snap.admin_username || undefined,
      last_sync: data.synced_at,
      sync_error: '',
      stats: statsOf(snap),
      ...extra,
    } as Partial<SiteRecord>);
    return { site, data };
  }

  /** Registers a site with its child (the handshake of the wire protocol) and stores it, synced. */
  async add(input: AddSiteInput): Promise<SiteRecord> {
    const url = normaliseSiteUrl(input.url);
    if (!url) throw new ServiceError('svc_invalid_url', 'Invalid site URL format: use an absolute http:// or https:// URL.', 400);
    if (/^[a-z]+:\/\/[^/]*@/i.test(input.url.trim())) {
      throw new ServiceError('svc_invalid_url', 'Site URLs must not carry credentials; use http_user and http_pass.', 400);
    }
    if (this.sites.findByUrl(url)) throw errors.siteExists(url);
    if (input.client_id) this.clients.resolve(input.client_id);
    for (const t of input.tags ?? []) this.tags.resolve(t);
    const connector = await this.connector();
    let reg;
    try {
      reg = await connector.register({
        url,
        admin: input.admin,
        adminPassword: input.admin_password,
        httpUser: input.http_user ?? null,
        httpPass: input.http_pass ?? null,
        sslVerify: input.ssl_verify,
      });
    } catch (e) {
      if (e instanceof ChildError && (e.kind === 'child_error' || e.kind === 'auth_failed')) {
        throw new ServiceError('svc_child_refused', `${url} refused the registration: ${e.message.replace(/^ERROR: /, '')}`, 400, {
          site_url: url,
          child_code: e.childCode,
        });
      }
      const f = childFailure(e, { url });
      if (f.code === 'svc_address_not_allowed') throw f;
      throw new ServiceError('svc_connection_failed', f.message, f.status, f.data);
    }
    const secret: SiteSecret = { private_key_pem: reg.privateKeyPem, http_pass: input.http_pass ?? null, regverify: reg.regverify };
    return this.store.write((tx) => {
      if (this.sites.findByUrl(url)) throw errors.siteExists(url);
      // The client may have gone while the child answered.
      if (input.client_id) this.clients.resolve(input.client_id);
      const rec = this.sites.insert(
        tx,
        {
          url,
          name: input.name?.trim() || url.replace(/^https?:\/\//, '').replace(/\/$/, ''),
          admin_username: input.admin,
          client_id: input.client_id ?? null,
          ssl_verify: input.ssl_verify,
          http_user: input.http_user ?? null,
          sign_algo: reg.signAlgo,
        },
        secret,
      );
      if (input.tags?.length) this.tags.setSiteTags(tx, rec.id, input.tags);
      return this.recordSnapshot(tx, rec.id, reg.snapshot, null);
    });
  }

  /**
   * A reply must come from the site we asked: WordPress reports its own `siteurl`, whose host must be the
   * site's (the path may differ: WordPress core can live in a subdirectory of the public URL).
   */
  private assertSameSite(site: SiteRecord, snap: SiteSnapshot): void {
    const host = (u: string) => siteKey(u).split('/')[0];
    if (snap.site_url && host(snap.site_url) !== host(site.url)) {
      throw new ServiceError(
        'svc_child_wrong_site',
        `${site.url} answered as another site (${snap.site_url}); its data was not stored.`,
        502,
        { site_url: site.url },
      );
    }
  }

  /** Sync one site: the child's `stats`. A failure is recorded on the site (it then shows disconnected). */
  async fetchSync(site: SiteRecord): Promise<Outcome<SiteRecord>> {
    try {
      this.assertReachable(site);
      const creds = await this.credentials(site);
      const prev = await this.siteData(site.id);
      const snap = await (await this.connector()).sync(creds, { changesSince: prev?.changes_cursor });
      this.assertSameSite(site, snap);
      return { ok: true, commit: (tx) => this.recordSnapshot(tx, site.id, snap, prev) };
    } catch (e) {
      const error = childFailure(e, site);
      // Only a failed contact marks the site: a refusal by our own address policy never reached it (another process
      // on the same data dir may be allowed to), and a ServiceError raised here is about the request.
      const remote = (!(e instanceof ServiceError) && error.code !== 'svc_address_not_allowed') || error.code === 'svc_child_wrong_site';
      if (remote) for (const l of this.syncFailureListeners) l(site, error);
      return {
        ok: false,
        error,
        commit: remote
          ? (tx) => {
              if (tx.get('sites', site.id)) this.sites.patch(tx, site.id, { sync_error: error.message });
            }
          : undefined,
      };
    }
  }

  /** Reachability: an unsigned POST to the site root, timed. Stored on the site. Never throws for a dead site. */
  async fetchCheck(site: SiteRecord): Promise<Outcome<CheckResult>> {
    const r = await (
      await this.connector()
    ).probe(site.url, {
      httpUser: site.http_user,
      httpPass: (await this.sites.secret(site.id))?.http_pass ?? null,
      sslVerify: site.ssl_verify,
    });
    const result: CheckResult = { at: now(), ...r };
    return {
      ok: true,
      commit: (tx) => {
        if (tx.get('sites', site.id)) this.sites.patch(tx, site.id, { last_check: result });
        return result;
      },
    };
  }

  /** Renew the site's keys with its child; success makes it connected. */
  async fetchReconnect(site: SiteRecord, adminPassword?: string): Promise<Outcome<SiteRecord>> {
    if (site.suspended) {
      return { ok: false, error: errors.siteSuspended(site) };
    }
    try {
      const secret = await this.sites.secret(site.id);
      const creds: SiteCredentials = secret
        ? await this.credentials(site)
        : {
            url: site.url,
            admin: site.admin_username,
            privateKeyPem: '',
            signAlgo: site.sign_algo,
            regverify: null,
            httpUser: site.http_user,
            httpPass: null,
            sslVerify: site.ssl_verify,
          };
      const reg = await (await this.connector()).reconnect(creds, { adminPassword });
      const prev = await this.siteData(site.id);
      const next: SiteSecret = {
        private_key_pem: reg.privateKeyPem,
        http_pass: secret?.http_pass ?? null,
        regverify: reg.regverify ?? secret?.regverify ?? null,
      };
      return {
        ok: true,
        commit: (tx) => {
          tx.putBlob('secrets', site.id, next);
          return this.recordSnapshot(tx, site.id, reg.snapshot, prev, { disconnected: false, sign_algo: reg.signAlgo });
        },
      };
    } catch (e) {
      const f = childFailure(e, site);
      return {
        ok: false,
        error: new ServiceError('svc_reconnect_failed', `Site reconnection failed: ${f.message}`, f.status === 504 ? 504 : 502, f.data),
      };
    }
  }

  /**
   * Tells the child to forget our key (its `disconnect`), best effort: what disconnecting or removing a site starts
   * with, so that no child keeps trusting a key this dashboard no longer uses. Nothing to tell when the site is
   * already disconnected or has no keys; a failure is reported, not thrown.
   */
  async tellChildToForget(
    site: SiteRecord,
    known?: SiteCredentials | null,
  ): Promise<{ child_notified: boolean; child_error: string | null }> {
    if (site.disconnected) return { child_notified: false, child_error: null };
    const creds = known === undefined ? await this.credentialsIfAny(site) : known;
    if (!creds) return { child_notified: false, child_error: null };
    try {
      await (await this.connector()).disconnect(creds);
      return { child_notified: true, child_error: null };
    } catch (e) {
      return { child_notified: false, child_error: childFailure(e, site).message };
    }
  }

  /**
   * Removes a site here first (all or nothing, with its cascade), then tells the child with the keys read before: a
   * removal that fails to commit leaves the child trusting us; one that commits is never undone by the child call.
   */
  async removeSite(site: SiteRecord): Promise<{ child_notified: boolean; child_error: string | null }> {
    const creds = await this.credentialsIfAny(site);
    await this.sites.remove(site.id);
    return this.tellChildToForget(site, creds);
  }

  /** Tell the child to forget us (best effort), then mark the site disconnected whatever it answered. */
  async fetchDisconnect(site: SiteRecord): Promise<Outcome<{ site: SiteRecord; child_notified: boolean; child_error: string | null }>> {
    const { child_notified: notified, child_error } = await this.tellChildToForget(site);
    return {
      ok: true,
      commit: (tx) => ({
        site: this.sites.patch(tx, site.id, { disconnected: true, sync_error: 'Manually disconnected' }),
        child_notified: notified,
        child_error,
      }),
    };
  }

  /** Runs one remote step and records it at once: for single-site abilities. */
  async apply<T>(o: Outcome<T>): Promise<T> {
    if (o.ok) return this.store.write(o.commit);
    if (o.commit) await this.store.write(o.commit);
    throw o.error;
  }
}
