// Known vulnerabilities across the fleet (issue 30): the feed (imported from a file or fetched over HTTP), every site's
// installed core, plugins and themes matched against it, the fleet-wide and per-site views, the one-call fix, and the
// vulnerability.found / vulnerability.fixed events.
//
// Matching is incremental: each site's matches are stamped with what they were derived from (the live feed
// generation, the site's last sync and last change, its WordPress version); `reconcile` re-matches only the sites whose stamp moved
// (after a sync, after a feed import) and stores them in 'vulnerability-matches' blobs (one per 250 sites), so that a
// restart re-matches nothing and the events fire once per change, whichever process notices it first.
import { callScope, scopeKey, unscoped } from '../../core/scope.js';
import { open } from 'node:fs/promises';
import { readdirSync, statSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { LazyAgent, type RequestOptions } from '../../child/undici.js';
import { assertAllowedHost, guardedLookup } from '../../child/address-policy.js';
import { ServiceError } from '../../core/errors.js';
import { paginate } from '../../core/paging.js';
import type { Config } from '../../config.js';
import { log } from '../../log.js';
import type { SiteRecord } from '../../store/records.js';
import { eachSiteData } from '../../store/blob-batches.js';
import type { Store } from '../../store/engine.js';
import type { ChildSiteService } from '../child-sites.js';
import type { SiteService } from '../sites.js';
import { VERSION } from '../../version.js';
import { FeedStore, type FeedState } from './feed-store.js';
import { installedItems, type Hit } from './matching.js';
import {
  SEVERITY_RANK,
  normaliseWpvulnerability,
  streamWordfenceFeed,
  type FeedSource,
  type Severity,
  type SoftwareType,
  type VulnRecord,
} from './records.js';

export const WORDFENCE_URL = 'https://www.wordfence.com/api/intelligence/v3/vulnerabilities/production';
export const WPVULNERABILITY_URL = 'https://www.wpvulnerability.net';
/** A downloaded or imported Wordfence feed larger than this is refused (the real one is about 160 MB). */
export const MAX_FEED_BYTES = 1024 * 1024 * 1024;
/** One WPVulnerability answer (per slug) larger than this is refused. */
export const MAX_ANSWER_BYTES = 8 * 1024 * 1024;
/** A WPVulnerability refresh asks about at most this many distinct slugs and core versions. */
export const MAX_WPV_LOOKUPS = 2_000;
/** Files of a WPVulnerability directory import. */
export const MAX_IMPORT_FILES = 100_000;
export const FETCH_TIMEOUT_MS = 10 * 60_000;
export const IDLE_TIMEOUT_MS = 60_000;
/** Sites listed in one vulnerability.found / .fixed event; events of one reconcile round. */
export const EVENT_SITES = 100;
export const EVENTS_PER_ROUND = 200;
const SHARD = 250;
/** Sets of filters whose fleet-view rows are kept (each holds references to the matches, no copies of them). */
export const VIEW_CACHE_ENTRIES = 32;
const SETTINGS_ID = 3;
/** The API key lives with the sites' secrets, under an id no site has (site ids start at 1). */
const KEY_SECRET_ID = 0;

export interface VulnSettingsRecord {
  id: typeof SETTINGS_ID;
  /** Which feed a refresh fetches; null = none configured. */
  source: FeedSource | null;
  /** Hours between scheduled refreshes (0 = no schedule). Wordfence asks for at most one download every 30 minutes. */
  refresh_hours: number;
  /** Another base URL than the feed's official one (a mirror, or a test server); null = official. */
  feed_url: string | null;
  /** The last scheduled refresh started (ISO), claimed in a store write so that one process runs it. */
  last_scheduled_refresh: string | null;
}
const SETTINGS_DEFAULTS: VulnSettingsRecord = {
  id: SETTINGS_ID,
  source: null,
  refresh_hours: 24,
  feed_url: null,
  last_scheduled_refresh: null,
};

export interface VulnSettingsPatch {
  vulnerability_source?: FeedSource | null;
  vulnerability_api_key?: string | null;
  vulnerability_refresh_hours?: number;
  vulnerability_feed_url?: string | null;
}
export interface VulnSettingsView {
  vulnerability_source: FeedSource | null;
  vulnerability_api_key_set: boolean;
  vulnerability_refresh_hours: number;
  vulnerability_feed_url: string | null;
}

export interface SeverityCounts {
  /** Distinct records matched, and how many of them per severity (from the CVSS score; unscored: none given). */
  vulnerabilities: number;
  sites: number;
  installs: number;
  by_severity: Record<Severity | 'unscored', number>;
}

interface ViewRow {
  key: string;
  score: number;
  installs: Array<{ site: SiteRecord; hit: Hit }>;
}

interface SiteMatches {
  stamp: string;
  hits: Hit[];
}
interface MatchShard {
  sites: Record<string, SiteMatches>;
}

export interface VulnEvent {
  event: 'vulnerability.found' | 'vulnerability.fixed';
  data: Record<string, unknown>;
}

/** One install of a vulnerable item on a site. */
export interface InstallView {
  site_id: number;
  site_url: string;
  site_name: string;
  type: SoftwareType;
  slug: string;
  /** sitefleet's own identifier: the plugin file, the theme stylesheet, "wordpress". */
  item: string;
  name: string;
  version: string;
  fixed_in: string | null;
  /** The update the site offers (as of its last sync), and whether installing it fixes this record. */
  update_version: string | null;
  update_pending: boolean;
}

export interface RecordView {
  id: string;
  key: string;
  source: FeedSource;
  cve: string | null;
  cve_link: string | null;
  aliases: string[];
  title: string;
  description: string;
  informational: boolean;
  severity: Severity | null;
  cvss: { score: number; vector: string | null; rating: string } | null;
  cwe: Array<{ id: string; name: string }>;
  affected: Array<{ type: SoftwareType; slug: string; name: string; versions: string[]; fixed_versions: string[] }>;
  references: string[];
  published: string | null;
  updated: string | null;
  attribution: { feed: string; terms: string; record_url: string | null; copyrights: Record<string, unknown> };
}

export interface FleetQuery {
  severity?: Severity;
  site?: number | string;
  slug?: string;
  fixable?: boolean;
  include_informational: boolean;
  /** Installs listed per record (all are counted). */
  installs_per_record: number;
  page: number;
  per_page: number;
}

const isoNow = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
const rangeText = (r: VulnRecord['software'][number]['ranges'][number]) => {
  if (r.from === null && r.to === null) return '*';
  if (r.from !== null && r.from === r.to && r.from_inclusive && r.to_inclusive) return r.from;
  return `${r.from_inclusive ? '[' : '('}${r.from ?? '*'}, ${r.to ?? '*'}${r.to_inclusive ? ']' : ')'}`;
};

/** Who the record comes from and on what terms: shown wherever the record is (reference §2.5, §3.5). */
export function attributionOf(r: VulnRecord): RecordView['attribution'] {
  if (r.source === 'wordfence')
    return {
      feed: 'Wordfence Intelligence',
      terms:
        'Vulnerability data provided by Wordfence Intelligence (Defiant, Inc.), used under its licence: the copyright notices and licence texts below travel with this record, which links to its Wordfence advisory.',
      record_url: r.references.find((u) => /^https:\/\/www\.wordfence\.com\//.test(u)) ?? r.references[0] ?? null,
      copyrights: r.copyrights,
    };
  return {
    feed: 'WPVulnerability (wpvulnerability.net)',
    terms:
      'Vulnerability data from the WPVulnerability API, which aggregates the sources listed in references; redistribution terms unknown.',
    record_url: r.references[0] ?? null,
    copyrights: r.copyrights,
  };
}

export function recordView(r: VulnRecord): RecordView {
  return {
    id: r.source_id,
    key: r.key,
    source: r.source,
    cve: r.cve,
    cve_link: r.cve_link,
    aliases: r.aliases,
    title: r.title,
    description: r.description,
    informational: r.informational,
    severity: r.severity,
    cvss: r.cvss ? { score: r.cvss.score, vector: r.cvss.vector, rating: r.cvss.rating } : null,
    cwe: r.cwe,
    affected: r.software.map((s) => ({
      type: s.type,
      slug: s.slug,
      name: s.name,
      versions: s.ranges.map(rangeText),
      fixed_versions: s.patched ? s.patched_versions : [],
    })),
    references: r.references,
    published: r.published,
    updated: r.updated,
    attribution: attributionOf(r),
  };
}

/** The feed's error answer as a ServiceError (the key is never part of a message). */
function httpFailure(status: number, url: string, retryAfter?: string): ServiceError {
  if (status === 401 || status === 403)
    return new ServiceError(
      'svc_feed_auth_failed',
      `The feed at ${url} refused the API key (HTTP ${status}); set vulnerability_api_key.`,
      502,
    );
  if (status === 429)
    return new ServiceError('svc_feed_rate_limited', `The feed at ${url} is rate-limited (HTTP 429); retry later.`, 503, {
      retry_after: retryAfter ?? null,
    });
  return new ServiceError('svc_feed_unavailable', `The feed at ${url} answered HTTP ${status}; the previous data is kept.`, 502);
}

export class VulnerabilityService {
  readonly feed: FeedStore;
  private agent: LazyAgent;
  private mem = new Map<number, SiteMatches>();
  /** The site record, and feed generation, each entry of `mem` is current for (reconcile looks no further). */
  private matchedFor = new Map<number, { site: SiteRecord; gen: number }>();
  /** The site record, generation and shard object for which the stored matches were found current. */
  private storedFor = new Map<number, { site: SiteRecord; gen: number; shard: MatchShard | null }>();
  /**
   * Each matches shard as the last persisting round found it, and the highest site id it knew: a round over the
   * changed sites alone also looks at the sites of a shard rewritten since (here or by another process).
   */
  private shardsLooked = new Map<number, MatchShard | null>();
  private topSiteId = 0;
  private seenMem = { sites: -1, gen: -1 };
  private seenStored = { sites: -1, gen: -1 };
  private round: Promise<void> | null = null;
  /** The scheduled refresh running in this process, if any. */
  scheduled: Promise<void> | null = null;
  /** Settles when the last refresh asked for in this process has (see refresh): never rejects. */
  private refreshing: Promise<void> | null = null;
  private aggregate: { sites: number; gen: number; byKey: Map<string, Array<{ site: SiteRecord; hit: Hit }>> } | null = null;
  private keyMeta: { gen: number; byKey: Map<string, { bucket: number; score: number | null; informational: boolean }> } | null = null;
  /** The fleet view's rows per set of filters, for the current aggregate (emptied with it). */
  private views = new Map<string, ViewRow[]>();
  /** Where vulnerability.found / .fixed go (the webhooks, wired in domain/index.ts). */
  readonly eventListeners = new Set<(e: VulnEvent) => void>();

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly sites: SiteService,
    private readonly children: ChildSiteService,
  ) {
    this.feed = new FeedStore(store);
    this.agent = new LazyAgent({
      headersTimeout: IDLE_TIMEOUT_MS,
      bodyTimeout: IDLE_TIMEOUT_MS,
      connect: config.allowPrivateSites ? {} : { lookup: guardedLookup },
    });
  }

  // ---- settings ----

  settings(): VulnSettingsRecord {
    return { ...SETTINGS_DEFAULTS, ...this.store.get<VulnSettingsRecord>('settings', SETTINGS_ID) };
  }

  async settingsView(): Promise<VulnSettingsView> {
    const s = this.settings();
    return {
      vulnerability_source: s.source,
      vulnerability_api_key_set: !!(await this.apiKey()),
      vulnerability_refresh_hours: s.refresh_hours,
      vulnerability_feed_url: s.feed_url,
    };
  }

  /** The feed's API key (a secrets blob: cold, read from the store through its bounded cache). */
  private async apiKey(): Promise<string | null> {
    return (await this.store.readBlob<{ vulnerability_api_key?: string }>('secrets', KEY_SECRET_ID))?.vulnerability_api_key ?? null;
  }

  private checkUrl(raw: string): string {
    let url: URL;
    try {
      url = new URL(raw.trim());
    } catch {
      throw new ServiceError('svc_invalid_url', 'vulnerability_feed_url must be an absolute http:// or https:// URL.', 400);
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password)
      throw new ServiceError('svc_invalid_url', 'vulnerability_feed_url must be an http:// or https:// URL without credentials.', 400);
    if (!this.config.allowPrivateSites) {
      try {
        assertAllowedHost(url.hostname);
      } catch (e) {
        throw new ServiceError('svc_address_not_allowed', (e as Error).message, 400);
      }
    }
    return url.toString().replace(/\/$/, '');
  }

  /** True when the patch names a vulnerability setting (update-settings-v1 passes the rest to the dashboard). */
  static touches(p: VulnSettingsPatch): boolean {
    return Object.values(p).some((v) => v !== undefined);
  }

  async updateSettings(p: VulnSettingsPatch): Promise<VulnSettingsView> {
    const feedUrl = p.vulnerability_feed_url ? this.checkUrl(p.vulnerability_feed_url) : p.vulnerability_feed_url;
    const key = p.vulnerability_api_key?.trim();
    if (key !== undefined && key !== '' && !/^[\x21-\x7e]{8,512}$/.test(key))
      throw new ServiceError('svc_invalid_input', 'vulnerability_api_key must be 8–512 printable characters without spaces.', 400, {
        params: { vulnerability_api_key: 'invalid' },
      });
    await this.store.write((tx) => {
      const cur = { ...SETTINGS_DEFAULTS, ...tx.get<VulnSettingsRecord>('settings', SETTINGS_ID) };
      tx.put<VulnSettingsRecord>('settings', {
        ...cur,
        ...(p.vulnerability_source !== undefined ? { source: p.vulnerability_source } : {}),
        ...(p.vulnerability_refresh_hours !== undefined ? { refresh_hours: p.vulnerability_refresh_hours } : {}),
        ...(feedUrl !== undefined ? { feed_url: feedUrl } : {}),
      });
      if (p.vulnerability_api_key !== undefined) tx.putBlob('secrets', KEY_SECRET_ID, key ? { vulnerability_api_key: key } : null);
    });
    return this.settingsView();
  }

  // ---- feed: import and refresh ----

  /** What is loaded: source, when, how many records (and skipped), the validators of the last download. */
  async status(): Promise<FeedState & { settings: VulnSettingsView }> {
    return { ...this.feed.state(), settings: await this.settingsView() };
  }

  /** Imports a Wordfence feed file (streamed) or a WPVulnerability answer file or directory of them. */
  async importFile(path: string, source: FeedSource): Promise<FeedState> {
    let st;
    try {
      st = statSync(path);
    } catch {
      throw new ServiceError('svc_not_found', `No such file or directory: ${path}`, 404);
    }
    let state: FeedState;
    if (source === 'wordfence') {
      if (!st.isFile()) throw new ServiceError('svc_invalid_input', 'A Wordfence feed import is one JSON file.', 400);
      const fh = await open(path, 'r');
      try {
        state = await this.feed.replace('wordfence', `file:${basename(path)}`, (add) =>
          streamWordfenceFeed(fh.createReadStream({ highWaterMark: 64 * 1024 }), add, MAX_FEED_BYTES),
        );
      } finally {
        await fh.close().catch(() => {});
      }
    } else {
      const files = st.isDirectory()
        ? readdirSync(path)
            .filter((f) => f.endsWith('.json'))
            .sort()
            .map((f) => join(path, f))
        : [path];
      if (files.length > MAX_IMPORT_FILES) throw new ServiceError('svc_limit', `At most ${MAX_IMPORT_FILES} files in one import.`, 413);
      state = await this.feed.replace('wpvulnerability', `file:${basename(path)}`, async (add) => {
        for (const f of files) {
          if (statSync(f).size > MAX_ANSWER_BYTES)
            throw new ServiceError('svc_feed_invalid', `${basename(f)} is over ${MAX_ANSWER_BYTES} bytes.`, 400);
          let body: unknown;
          try {
            body = JSON.parse(readFileSync(f, 'utf8'));
          } catch {
            throw new ServiceError('svc_feed_invalid', `${basename(f)} is not valid JSON; the previous data is kept.`, 400);
          }
          for (const r of normaliseWpvulnerability(body, hintOf(basename(f)))) await add(r);
        }
        return { skipped: 0, skipped_reasons: [], bytes: 0 };
      });
    }
    await this.reconcile();
    return state;
  }

  private async get(url: string, headers: Record<string, string>, signal: AbortSignal) {
    const u = new URL(url);
    if (!this.config.allowPrivateSites) {
      try {
        assertAllowedHost(u.hostname);
      } catch (e) {
        throw new ServiceError('svc_address_not_allowed', (e as Error).message, 400);
      }
    }
    try {
      return await this.agent.request(url, {
        headers: { 'user-agent': `sitefleet/${VERSION}`, accept: 'application/json', ...headers },
        signal,
        maxRedirections: 0,
      } as RequestOptions);
    } catch (e) {
      const err = e as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      if (err.code === 'ERR_SITEFLEET_ADDRESS_NOT_ALLOWED' || err.cause?.code === 'ERR_SITEFLEET_ADDRESS_NOT_ALLOWED')
        throw new ServiceError('svc_address_not_allowed', `${u.hostname} is a private or local address (see --allow-private-sites).`, 400);
      throw new ServiceError('svc_feed_unavailable', `Cannot reach the feed at ${u.origin}: ${err.message}`, 502);
    }
  }

  /**
   * Fetches the configured feed (conditional request: 304 keeps the data and only notes the check) and imports it.
   * Wordfence: one streamed download with the API key as a Bearer token. WPVulnerability: one request per distinct
   * plugin/theme slug and core version installed in the fleet (at most MAX_WPV_LOOKUPS).
   */
  refresh(signal?: AbortSignal): Promise<{ status: 'updated' | 'not_modified'; feed: FeedState }> {
    // One at a time in a process: a refresh asked for while another runs (the scheduled one) waits for it, then asks
    // the feed itself (a conditional request: most often a 304). Two at once raced: one's reconcile read the index of
    // the generation the other was still committing, not yet in the database, and failed (503, "being replaced").
    const run = (this.refreshing ?? Promise.resolve()).then(() => this.refreshNow(signal));
    const settled: Promise<void> = run.then(
      () => this.refreshed(settled),
      () => this.refreshed(settled),
    );
    this.refreshing = settled;
    return run;
  }
  private refreshed(settled: Promise<void>): void {
    if (this.refreshing === settled) this.refreshing = null;
  }

  private async refreshNow(signal?: AbortSignal): Promise<{ status: 'updated' | 'not_modified'; feed: FeedState }> {
    const s = this.settings();
    if (!s.source)
      throw new ServiceError(
        'svc_feed_not_configured',
        'No vulnerability feed is configured: set vulnerability_source in the settings.',
        409,
      );
    const timeout = AbortSignal.timeout(FETCH_TIMEOUT_MS);
    const sig = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      const r = s.source === 'wordfence' ? await this.refreshWordfence(s, sig) : await this.refreshWpv(s, sig);
      await this.reconcile();
      return r;
    } catch (e) {
      const err =
        e instanceof ServiceError ? e : new ServiceError('svc_feed_unavailable', `The feed download failed: ${(e as Error).message}`, 502);
      await this.feed.patchState({ checked_at: isoNow(), last_error: err.message }).catch(() => {});
      throw err;
    }
  }

  private async refreshWordfence(
    s: VulnSettingsRecord,
    signal: AbortSignal,
  ): Promise<{ status: 'updated' | 'not_modified'; feed: FeedState }> {
    const url = s.feed_url ?? WORDFENCE_URL;
    const key = await this.apiKey();
    if (!key && !s.feed_url)
      throw new ServiceError(
        'svc_feed_not_configured',
        'The Wordfence Intelligence feed needs an API key: set vulnerability_api_key.',
        409,
      );
    const cur = this.feed.state();
    const same = cur.source === 'wordfence' && cur.origin === url;
    const headers: Record<string, string> = {};
    if (key) headers.authorization = `Bearer ${key}`;
    if (same && cur.etag) headers['if-none-match'] = cur.etag;
    if (same && cur.last_modified) headers['if-modified-since'] = cur.last_modified;
    const res = await this.get(url, headers, signal);
    if (res.statusCode === 304) {
      await res.body.dump().catch(() => {});
      return { status: 'not_modified', feed: await this.feed.patchState({ checked_at: isoNow(), last_error: null }) };
    }
    if (res.statusCode !== 200) {
      await res.body.dump().catch(() => {});
      throw httpFailure(res.statusCode, url, String(res.headers['retry-after'] ?? '') || undefined);
    }
    const len = Number(res.headers['content-length'] ?? 0);
    if (len > MAX_FEED_BYTES) {
      res.body.destroy();
      throw new ServiceError(
        'svc_feed_invalid',
        `The feed is refused (larger than ${MAX_FEED_BYTES} bytes); the previous data is kept.`,
        400,
      );
    }
    const header = (h: string) => (typeof res.headers[h] === 'string' ? (res.headers[h] as string) : null);
    try {
      const feed = await this.feed.replace('wordfence', url, (add) => streamWordfenceFeed(res.body, add, MAX_FEED_BYTES), {
        etag: header('etag'),
        last_modified: header('last-modified'),
      });
      return { status: 'updated', feed };
    } finally {
      res.body.destroy();
    }
  }

  private async refreshWpv(s: VulnSettingsRecord, signal: AbortSignal): Promise<{ status: 'updated'; feed: FeedState }> {
    const base = s.feed_url ?? WPVULNERABILITY_URL;
    const wanted = new Set<string>();
    await eachSiteData(this.store, [...this.store.all<SiteRecord>('sites')], (site, data) => {
      for (const i of installedItems(site.wp_version, data))
        wanted.add(i.type === 'core' ? `core/${i.version.trim()}` : `${i.type}/${i.slug}`);
    });
    const lookups = [...wanted].sort().slice(0, MAX_WPV_LOOKUPS);
    if (wanted.size > MAX_WPV_LOOKUPS)
      log('warn', 'vulnerability refresh: too many slugs, some not asked', { asked: MAX_WPV_LOOKUPS, total: wanted.size });
    const feed = await this.feed.replace('wpvulnerability', base, async (add) => {
      for (const l of lookups) {
        const res = await this.get(`${base}/${l.split('/').map(encodeURIComponent).join('/')}/`, {}, signal);
        if (res.statusCode === 404) {
          await res.body.dump().catch(() => {});
          continue;
        }
        if (res.statusCode !== 200) {
          await res.body.dump().catch(() => {});
          throw httpFailure(res.statusCode, base);
        }
        const chunks: Buffer[] = [];
        let n = 0;
        for await (const c of res.body) {
          n += (c as Buffer).length;
          if (n > MAX_ANSWER_BYTES) {
            res.body.destroy();
            throw new ServiceError(
              'svc_feed_invalid',
              `An answer of ${base} is over ${MAX_ANSWER_BYTES} bytes; the previous data is kept.`,
              400,
            );
          }
          chunks.push(c as Buffer);
        }
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          throw new ServiceError('svc_feed_invalid', `${base}/${l}/ did not answer JSON; the previous data is kept.`, 400);
        }
        const [type, slug] = l.split('/') as [SoftwareType, string];
        for (const r of normaliseWpvulnerability(body, { type, slug })) await add(r);
      }
      return { skipped: 0, skipped_reasons: [], bytes: 0 };
    });
    return { status: 'updated', feed };
  }

  /** The scheduled refresh, run on each job runner tick: claimed once across processes (a store write). */
  async scheduledRefresh(now = Date.now()): Promise<boolean> {
    const s = this.settings();
    if (!s.source || !s.refresh_hours || this.scheduled) return false;
    const due = (r: VulnSettingsRecord) =>
      !r.last_scheduled_refresh || Date.parse(r.last_scheduled_refresh) + r.refresh_hours * 3_600_000 <= now;
    if (!due(s)) return false;
    // Skips, rather than waits for, a settings record another process holds (claiming it too): due again next tick.
    const claimed = await this.store.write(
      (tx) => {
        const cur = { ...SETTINGS_DEFAULTS, ...tx.get<VulnSettingsRecord>('settings', SETTINGS_ID) };
        if (!cur.source || !cur.refresh_hours || !due(cur)) return false;
        tx.put<VulnSettingsRecord>('settings', { ...cur, last_scheduled_refresh: new Date(now).toISOString() });
        return true;
      },
      { skipLocked: true },
    );
    if (claimed !== true) return false;
    // In the background: a download of the whole feed must not hold up the job runner's tick.
    this.scheduled = this.refresh()
      .then(() => undefined)
      .catch((e: unknown) => {
        log('warn', 'scheduled vulnerability feed refresh failed', { code: (e as ServiceError).code, message: (e as Error).message });
      })
      .finally(() => {
        this.scheduled = null;
      });
    return true;
  }

  // ---- matching ----

  /**
   * What a site's matches derive from. updated_at too: an update whose reply carries no sync block moves the stored
   * versions (updates.ts commitSite) and patches the record, not last_sync.
   */
  private stampOf(site: SiteRecord, gen: number): string {
    return `${gen}|${site.last_sync ?? ''}|${site.updated_at}|${site.wp_version}`;
  }

  /** Every site, for a round over all of them: the shards are taken as looked at, as they are now. */
  private lookedAtShards(sites: readonly SiteRecord[]): readonly SiteRecord[] {
    this.topSiteId = 0;
    for (const site of sites) if (site.id > this.topSiteId) this.topSiteId = site.id;
    this.shardsLooked.clear();
    for (let n = 0; n * SHARD <= this.topSiteId; n++) this.shardsLooked.set(n, this.shardOrNull(n));
    return sites;
  }

  /** The changed sites, and those of each shard rewritten since the last persisting round (SHARD sites a shard). */
  private withRewrittenShards(sites: readonly SiteRecord[]): SiteRecord[] {
    const out = new Map(sites.map((x) => [x.id, x]));
    for (const site of sites) if (site.id > this.topSiteId) this.topSiteId = site.id;
    for (let n = 0; n * SHARD <= this.topSiteId; n++) {
      const shard = this.shardOrNull(n);
      if (shard === (this.shardsLooked.get(n) ?? null)) continue;
      this.shardsLooked.set(n, shard);
      // Each as the record its matches in memory were made for (a site added since the round began has none yet: the
      // next round takes it, as a changed site).
      for (let id = n * SHARD; id < (n + 1) * SHARD; id++) {
        const site = out.has(id) ? undefined : this.matchedFor.get(id)?.site;
        if (site) out.set(id, site);
      }
    }
    return [...out.values()];
  }

  private shardOrNull(n: number): MatchShard | null {
    return this.store.getBlob<MatchShard>('vulnerability-matches', n);
  }

  /** How many sites this process keeps matches for (tests read it: none in a fleet that never imported a feed). */
  keptSites(): number {
    return this.mem.size;
  }

  /** The sites of `ids` that are there now. */
  private present(ids: readonly number[]): SiteRecord[] {
    const out: SiteRecord[] = [];
    for (const id of ids) {
      const site = this.store.get<SiteRecord>('sites', id);
      if (site) out.push(site);
    }
    return out;
  }

  private shardOf(id: number): MatchShard {
    return this.store.getBlob<MatchShard>('vulnerability-matches', Math.floor(id / SHARD)) ?? { sites: {} };
  }

  /**
   * Re-matches the sites whose stamp moved since they were last matched (every site after a feed import). With
   * `persist` (the job runner's tick, imports, the fix) it also stores the matches that differ from the stored ones and
   * emits the events; without (the read-only views) it only brings this process's memory up to date, so that a
   * read-only call neither writes nor sends anything. One round at a time per process; cheap when nothing changed.
   */
  async reconcile(persist = true): Promise<void> {
    let loaded: Awaited<ReturnType<FeedStore['index']>>;
    // Reading the index may wait: look again for a round started meanwhile (one round at a time).
    for (;;) {
      while (this.round) await this.round;
      loaded = await this.feed.index();
      if (!this.round) break;
    }
    const sitesV = this.store.version('sites');
    const { generation: gen, index } = loaded;
    const seen = persist ? this.seenStored : this.seenMem;
    if (sitesV === seen.sites && gen === seen.gen) return;
    this.round = (async () => {
      const changed: Array<{ site: SiteRecord; prev: SiteMatches | undefined; next: SiteMatches }> = [];
      // Under the same feed, only the sites changed since the last round (the store's change log names them): not a
      // pass over the fleet on every tick of a fleet being edited. A new feed, a first round, or a log that no longer
      // reaches back that far: every site.
      const ids = gen === seen.gen && seen.sites >= 0 ? this.store.changedSince('sites', seen.sites) : null;
      const sites = ids ? this.present(ids) : [...this.store.all<SiteRecord>('sites')];
      // The sites to match again: their data is read in batches (site data is a cold blob), stamps taken before.
      const toMatch: Array<{ site: SiteRecord; stamp: string }> = [];
      for (const site of sites) {
        // Records are replaced, never changed in place: the record this site's matches were made for, under this
        // feed, has not moved (most sites on most rounds: a sync commits a few at a time). No stamp to build.
        const was = this.matchedFor.get(site.id);
        if (was?.site === site && was.gen === gen) continue;
        // No feed was ever imported: nothing to match, and nothing kept per site (a site without an entry has no
        // matches, for every reader). At 100,000 sites that was about 40 MB of empty entries.
        if (!gen) continue;
        const stamp = this.stampOf(site, gen);
        if (this.mem.get(site.id)?.stamp !== stamp) {
          const stored = this.shardOf(site.id).sites[site.id];
          if (stored?.stamp === stamp) this.mem.set(site.id, stored);
          else {
            toMatch.push({ site, stamp });
            continue;
          }
        }
        this.matchedFor.set(site.id, { site, gen });
      }
      const stampOf = new Map(toMatch.map((m) => [m.site.id, m.stamp]));
      await eachSiteData(
        this.store,
        toMatch.map((m) => m.site),
        (site, data) => {
          this.mem.set(site.id, {
            stamp: stampOf.get(site.id)!,
            hits: installedItems(site.wp_version, data).flatMap((i) => index.match(i)),
          });
          this.matchedFor.set(site.id, { site, gen });
        },
      );
      if (persist)
        for (const site of ids ? this.withRewrittenShards(sites) : this.lookedAtShards(sites)) {
          // The stored matches were found current for this record under this feed, and their shard is the object it
          // was then (any write of the shard, here or in another process, replaces it): nothing to compare.
          const shard = this.store.getBlob<MatchShard>('vulnerability-matches', Math.floor(site.id / SHARD));
          const was = this.storedFor.get(site.id);
          if (was?.site === site && was.gen === gen && was.shard === shard) continue;
          const stamp = this.stampOf(site, gen);
          const stored = shard?.sites[site.id];
          // Without a feed and nothing stored there is nothing to keep: a fleet that uses no feed never writes here.
          if (!gen && !stored) continue;
          if (stored?.stamp !== stamp) changed.push({ site, prev: stored, next: this.mem.get(site.id) ?? { stamp, hits: [] } });
          else this.storedFor.set(site.id, { site, gen, shard });
        }
      // What this process keeps of sites removed since: the changed ids absent now, or (every site) all not listed.
      const kept = [this.mem, this.matchedFor, this.storedFor];
      if (ids) {
        const gone = ids.filter((id) => !this.store.get('sites', id));
        for (const m of kept) for (const id of gone) m.delete(id);
      } else {
        const live = new Set(sites.map((x) => x.id));
        for (const m of kept) for (const id of [...m.keys()]) if (!live.has(id)) m.delete(id);
      }
      if (changed.length) {
        // Matches of sites that are no longer there leave the shards written (looked up before the write, whose reads
        // lock what they read on PostgreSQL).
        const absent = new Set<number>();
        for (const n of new Set(changed.map((c) => Math.floor(c.site.id / SHARD))))
          for (const id of Object.keys(this.shardOf(n * SHARD).sites)) if (!this.store.get('sites', Number(id))) absent.add(Number(id));
        await this.store.write((tx) => {
          const shards = new Map<number, MatchShard>();
          for (const c of changed) {
            const n = Math.floor(c.site.id / SHARD);
            if (!shards.has(n)) shards.set(n, structuredClone(this.shardOf(c.site.id)));
            shards.get(n)!.sites[c.site.id] = c.next;
          }
          for (const [n, shard] of shards) {
            for (const id of Object.keys(shard.sites)) if (absent.has(Number(id))) delete shard.sites[id];
            tx.putBlob('vulnerability-matches', n, shard);
          }
        });
        for (const c of changed)
          this.storedFor.set(c.site.id, {
            site: c.site,
            gen,
            shard: this.store.getBlob<MatchShard>('vulnerability-matches', Math.floor(c.site.id / SHARD)),
          });
        await this.emitChanges(changed, gen);
      }
      this.seenMem = { sites: sitesV, gen };
      if (persist) this.seenStored = { sites: sitesV, gen };
    })();
    try {
      await this.round;
    } finally {
      this.round = null;
    }
  }

  /**
   * vulnerability.found: a record now matches installs it did not (a new feed record, a downgrade, a new site's first
   * match). vulnerability.fixed: an install left a record because the site's version changed under the same feed.
   * One event per record, listing up to EVENT_SITES sites.
   */
  private async emitChanges(
    changed: Array<{ site: SiteRecord; prev: SiteMatches | undefined; next: SiteMatches }>,
    gen: number,
  ): Promise<void> {
    if (!this.eventListeners.size) return;
    const found = new Map<string, Array<Record<string, unknown>>>();
    const fixed = new Map<string, Array<Record<string, unknown>>>();
    const at = (m: Map<string, Array<Record<string, unknown>>>, key: string, v: Record<string, unknown>) => {
      const l = m.get(key) ?? [];
      if (!m.has(key)) m.set(key, l);
      l.push(v);
    };
    const left: Array<{ site: SiteRecord; hits: Hit[] }> = [];
    for (const { site, prev, next } of changed) {
      const id = (h: Hit) => `${h.key}|${h.type}:${h.slug}`;
      const before = new Map((prev?.hits ?? []).filter((h) => !h.informational).map((h) => [id(h), h]));
      const after = new Map(next.hits.filter((h) => !h.informational).map((h) => [id(h), h]));
      const where = { id: site.id, url: site.url, name: site.name };
      for (const [k, h] of after)
        if (!before.has(k)) at(found, h.key, { site: where, type: h.type, slug: h.slug, version: h.version, fixed_in: h.fixed_in });
      const sameFeed = prev?.stamp.split('|')[0] === String(gen);
      const gone = sameFeed ? [...before].flatMap(([k, h]) => (after.has(k) ? [] : [h])) : [];
      if (gone.length) left.push({ site, hits: gone });
    }
    // The version now installed of what a site left (its data read in batches, only for sites that left something).
    const hitsOf = new Map(left.map((l) => [l.site.id, l.hits]));
    await eachSiteData(
      this.store,
      left.map((l) => l.site),
      (site, data) => {
        const where = { id: site.id, url: site.url, name: site.name };
        for (const h of hitsOf.get(site.id)!) {
          const now = installedItems(site.wp_version, data).find((i) => i.type === h.type && i.slug === h.slug);
          at(fixed, h.key, { site: where, type: h.type, slug: h.slug, old_version: h.version, version: now?.version ?? null });
        }
      },
    );
    const records = await this.feed.records(await this.bucketsOf([...found.keys(), ...fixed.keys()]));
    let sent = 0;
    const send = (event: VulnEvent['event'], m: Map<string, Array<Record<string, unknown>>>) => {
      for (const [key, list] of m) {
        if (sent++ >= EVENTS_PER_ROUND) return;
        const r = records.get(key);
        const data = {
          vulnerability: r ? { ...recordView(r), description: undefined } : { key },
          sites_total: list.length,
          installs: list.slice(0, EVENT_SITES),
        };
        for (const l of this.eventListeners) l({ event, data });
      }
    };
    send('vulnerability.found', found);
    send('vulnerability.fixed', fixed);
    if (sent > EVENTS_PER_ROUND)
      log('warn', 'vulnerability events over the round limit were not sent', { limit: EVENTS_PER_ROUND, events: sent });
  }

  /**
   * Matches by record key across the fleet, each list in (site id, slug) order, rebuilt when a site or the feed
   * changed (which also empties the cached views of the fleet).
   */
  private byRecord(): Map<string, Array<{ site: SiteRecord; hit: Hit }>> {
    const sitesV = this.store.version('sites');
    const gen = this.feed.state().generation;
    if (this.aggregate && this.aggregate.sites === sitesV && this.aggregate.gen === gen) return this.aggregate.byKey;
    const byKey = new Map<string, Array<{ site: SiteRecord; hit: Hit }>>();
    for (const [id, m] of this.mem) {
      // The fleet's aggregate, kept for every caller: built outside the caller's scope, cut to it in list().
      const site = unscoped(() => this.sites.get(id));
      if (!site) continue;
      for (const hit of m.hits) {
        const l = byKey.get(hit.key);
        if (l) l.push({ site, hit });
        else byKey.set(hit.key, [{ site, hit }]);
      }
    }
    for (const l of byKey.values()) l.sort((a, b) => a.site.id - b.site.id || (a.hit.slug < b.hit.slug ? -1 : 1));
    this.aggregate = { sites: sitesV, gen, byKey };
    this.views.clear();
    return byKey;
  }

  /** Per record key of the live generation: its bucket, score and informational flag (built once per generation). */
  private async metaOf(): Promise<Map<string, { bucket: number; score: number | null; informational: boolean }>> {
    const { generation, index } = await this.feed.index();
    if (this.keyMeta?.gen === generation) return this.keyMeta.byKey;
    const byKey = new Map<string, { bucket: number; score: number | null; informational: boolean }>();
    for (const [, entries] of index.entries())
      for (const e of entries) byKey.set(e.key, { bucket: e.bucket, score: e.score, informational: e.informational });
    this.keyMeta = { gen: generation, byKey };
    return byKey;
  }

  private async bucketsOf(keys: Iterable<string>): Promise<Map<string, number>> {
    const meta = await this.metaOf();
    const out = new Map<string, number>();
    for (const k of keys) {
      const m = meta.get(k);
      if (m) out.set(k, m.bucket);
    }
    return out;
  }

  private install(site: SiteRecord, h: Hit): InstallView {
    return {
      site_id: site.id,
      site_url: site.url,
      site_name: site.name,
      type: h.type,
      slug: h.slug,
      item: h.ref,
      name: h.name,
      version: h.version,
      fixed_in: h.fixed_in,
      update_version: h.offered,
      update_pending: h.offered_clears,
    };
  }

  /** The fleet-wide view: one entry per record with the installs it affects, most severe first. */
  async list(q: FleetQuery): Promise<{
    items: Array<
      RecordView & { sites_affected: number; installs_total: number; fixable: boolean; updates_pending: number; installs: InstallView[] }
    >;
    total: number;
    feed: FeedState;
  }> {
    await this.reconcile(false);
    const site = q.site === undefined ? undefined : this.sites.resolve(q.site);
    const rows = this.viewRows(q, site?.id, await this.metaOf());
    const page = paginate(rows, q.page, q.per_page);
    const records = await this.feed.records(await this.bucketsOf(page.map((r) => r.key)));
    const items = page.flatMap((row) => {
      const r = records.get(row.key);
      if (!r) return [];
      // The installs are in (site id, slug) order already: one pass counts, the first ones are listed.
      let sites = 0;
      let last = -1;
      let fixable = false;
      let pending = 0;
      for (const { site, hit } of row.installs) {
        if (site.id !== last) sites++;
        last = site.id;
        if (hit.fixed_in !== null) fixable = true;
        if (hit.offered_clears) pending++;
      }
      return [
        {
          ...recordView(r),
          sites_affected: sites,
          installs_total: row.installs.length,
          fixable,
          updates_pending: pending,
          installs: row.installs.slice(0, q.installs_per_record).map((i) => this.install(i.site, i.hit)),
        },
      ];
    });
    return { items, total: rows.length, feed: this.feed.state() };
  }

  /**
   * The fleet view's rows for a set of filters (most severe first), kept until a site or the feed changes: paging
   * through the view, or asking it again, does not filter and sort the fleet's matches again.
   */
  private viewRows(
    q: FleetQuery,
    siteId: number | undefined,
    meta: Map<string, { bucket: number; score: number | null; informational: boolean }>,
  ): ViewRow[] {
    const all = this.byRecord();
    // The caller's scope is part of the key: rows cut to one scope never answer another (issue 32).
    const cacheKey = JSON.stringify([scopeKey(callScope()), q.severity, siteId, q.slug, q.fixable, q.include_informational]);
    const cached = this.views.get(cacheKey);
    if (cached) return cached;
    const rows: ViewRow[] = [];
    for (const [key, list] of all) {
      const m = meta.get(key);
      if (!m) continue;
      if (m.informational && !q.include_informational) continue;
      if (q.severity && (m.score === null || SEVERITY_RANK[severityFromScore(m.score)] < SEVERITY_RANK[q.severity])) continue;
      let installs = list.filter((i) => this.sites.access.seesSite(i.site.id));
      if (siteId !== undefined) installs = installs.filter((i) => i.site.id === siteId);
      if (q.slug) installs = installs.filter((i) => i.hit.slug === q.slug || i.hit.ref === q.slug);
      if (q.fixable !== undefined) installs = installs.filter((i) => (i.hit.fixed_in !== null) === q.fixable);
      if (!installs.length) continue;
      rows.push({ key, score: m.score ?? -1, installs });
    }
    rows.sort((a, b) => b.score - a.score || b.installs.length - a.installs.length || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    if (this.views.size >= VIEW_CACHE_ENTRIES) this.views.delete(this.views.keys().next().value!);
    this.views.set(cacheKey, rows);
    return rows;
  }

  /** One site's vulnerable installs, one entry per (record, item), most severe first. */
  async ofSite(
    ref: number | string,
    includeInformational: boolean,
  ): Promise<{ site: SiteRecord; items: Array<RecordView & { install: InstallView }>; feed: FeedState }> {
    const site = this.sites.resolve(ref);
    await this.reconcile(false);
    const hits = (this.mem.get(site.id)?.hits ?? []).filter((h) => includeInformational || !h.informational);
    const records = await this.feed.records(await this.bucketsOf(hits.map((h) => h.key)));
    const items = hits.flatMap((h) => {
      const r = records.get(h.key);
      return r ? [{ ...recordView(r), install: this.install(site, h) }] : [];
    });
    items.sort((a, b) => (b.cvss?.score ?? -1) - (a.cvss?.score ?? -1) || (a.key < b.key ? -1 : 1));
    return { site, items, feed: this.feed.state() };
  }

  /** Full records by key (live generation). */
  async recordsByKey(keys: Iterable<string>): Promise<Map<string, VulnRecord>> {
    return this.feed.records(await this.bucketsOf(keys));
  }

  /**
   * Per site, the vulnerable non-informational hits (for the fix and the counts). `persist` has no default: a read
   * passes false (matches in memory only, nothing written or sent), only a write (the fix) passes true.
   */
  async hitsBySite(persist: boolean): Promise<Map<number, Hit[]>> {
    await this.reconcile(persist);
    const out = new Map<number, Hit[]>();
    for (const [id, m] of this.mem) {
      const hits = m.hits.filter((h) => !h.informational);
      if (hits.length) out.set(id, hits);
    }
    return out;
  }

  /**
   * The fleet's known vulnerabilities (informational ones not counted) for its security view: records by severity,
   * vulnerable installs and sites. Read-only: matches in memory only, nothing stored or sent.
   */
  async severityCounts(): Promise<SeverityCounts> {
    await this.reconcile(false);
    const meta = await this.metaOf();
    const by: SeverityCounts['by_severity'] = { critical: 0, high: 0, medium: 0, low: 0, none: 0, unscored: 0 };
    const seen = new Set<string>();
    let installs = 0;
    let sites = 0;
    for (const m of this.mem.values()) {
      let vulnerable = false;
      for (const h of m.hits) {
        if (h.informational) continue;
        vulnerable = true;
        installs++;
        if (seen.has(h.key)) continue;
        seen.add(h.key);
        const score = meta.get(h.key)?.score ?? null;
        by[score === null ? 'unscored' : severityFromScore(score)]++;
      }
      if (vulnerable) sites++;
    }
    return { vulnerabilities: seen.size, sites, installs, by_severity: by };
  }

  /**
   * Vulnerable installs and sites of the fleet (informational records not counted), for the overview counts.
   * Read-only: matches in memory only, nothing stored or sent (the job runner's round and the imports store them).
   */
  async counts(): Promise<{ vulnerabilities: number; sites: number; installs: number }> {
    const by = await this.hitsBySite(false);
    const keys = new Set<string>();
    let installs = 0;
    for (const hits of by.values()) {
      installs += hits.length;
      for (const h of hits) keys.add(h.key);
    }
    return { vulnerabilities: keys.size, sites: by.size, installs };
  }
}

const severityFromScore = (score: number): Severity =>
  score <= 0 ? 'none' : score < 4 ? 'low' : score < 7 ? 'medium' : score < 9 ? 'high' : 'critical';

/** A WPVulnerability file name says what it answers: plugin-<slug>.json, theme-<slug>.json, core-<version>.json. */
function hintOf(file: string): { type: SoftwareType; slug: string } | undefined {
  const m = /^(plugin|theme|core)-(.+)\.json$/.exec(file);
  return m ? { type: m[1] as SoftwareType, slug: m[2]! } : undefined;
}
