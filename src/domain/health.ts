// Site health (issue 28): a probe of a site as its visitors see it — the home page, wp-login.php and any extra paths
// set per site — judged on HTTP status, WordPress's critical-error page, PHP fatal/parse error text, a content marker
// on the home page (a keyword set per site, else the site's title as its home page showed it on the first probe that
// found it well), and the home page's response time against the site's own baseline. The latest probe, the settings
// and the baseline are stored per site (collection site_health). Safe updates probe through here before and after.
import { ServiceError } from '../core/errors.js';
import type { Config } from '../config.js';
import type { SiteRecord } from '../store/records.js';
import type { HealthPage, HealthReport, HealthSettings, HealthStatus, PageKind, SiteHealthRecord } from '../store/health-records.js';
import type { Store, Tx } from '../store/store.js';
import { HealthProber, PROBE_MAX_BYTES, PROBE_MAX_REDIRECTS, PROBE_TIMEOUT_MS, siteTitleOf, type PageOutcome } from './health-probe.js';
import type { SiteService } from './sites.js';

export { PROBE_MAX_BYTES, PROBE_MAX_REDIRECTS, PROBE_TIMEOUT_MS };
/**
 * Sites a safe update run works on at once, as a multiple of --child-concurrency: each site spends most of its time
 * waiting on its own probes and one-at-a-time calls, so more sites overlap; child calls in flight stay bounded by the
 * connector's slots (--child-concurrency), probes by the prober's connections (this many × --child-concurrency per origin).
 */
export const SAFE_SITES_FACTOR = 4;
/** Extra paths a site may have probed besides its home page and login page. */
export const MAX_HEALTH_URLS = 10;
export const MAX_HEALTH_URL_LENGTH = 500;
export const MAX_HEALTH_KEYWORD = 200;
/** Probes of well pages before the baseline is used; the weight of each new one in the moving average. */
export const BASELINE_MIN_SAMPLES = 3;
const BASELINE_WEIGHT = 0.2;
/** Slow: the home page took more than SLOW_FACTOR × the baseline and at least SLOW_MARGIN_MS more than it. */
export const SLOW_FACTOR = 3;
export const SLOW_MARGIN_MS = 1000;

const DEFAULT_SETTINGS: HealthSettings = { urls: [], keyword: '' };
const now = () => new Date().toISOString();

/** "Healthy before, unhealthy after": what safe updates roll back. Degraded (only slow) counts as well. */
export const isRegression = (before: HealthStatus | null, after: HealthStatus | null) => before !== 'unhealthy' && after === 'unhealthy';

/** A site's probe settings, checked: paths on the site itself ("/shop/"), bounded in number and length. */
export function checkSettings(input: { urls?: readonly string[]; keyword?: string }, cur: HealthSettings): HealthSettings {
  const out = { ...cur };
  if (input.urls !== undefined) {
    if (input.urls.length > MAX_HEALTH_URLS)
      throw new ServiceError('svc_invalid_health_url', `Give at most ${MAX_HEALTH_URLS} extra paths to probe.`, 400, {
        max: MAX_HEALTH_URLS,
      });
    const urls: string[] = [];
    for (const raw of input.urls) {
      const u = raw.trim();
      // A path on the site only: the probe must not become a way to make sitefleet fetch another host.
      if (!u.startsWith('/') || u.startsWith('//') || u.includes('\\') || /\s/.test(u) || u.length > MAX_HEALTH_URL_LENGTH)
        throw new ServiceError(
          'svc_invalid_health_url',
          `Invalid path to probe: "${raw.slice(0, 100)}". Give a path on the site starting with "/" (such as "/shop/"), at most ${MAX_HEALTH_URL_LENGTH} characters.`,
          400,
          { value: raw.slice(0, 100) },
        );
      if (!urls.includes(u)) urls.push(u);
    }
    out.urls = urls;
  }
  if (input.keyword !== undefined) {
    const k = input.keyword.trim();
    if (k.length > MAX_HEALTH_KEYWORD)
      throw new ServiceError('svc_invalid_health_keyword', `The content keyword may have at most ${MAX_HEALTH_KEYWORD} characters.`, 400);
    out.keyword = k;
  }
  return out;
}

/**
 * The URL of a path on the site (the site's own base path kept: "/shop/" on https://x.test/blog/ is /blog/shop/).
 * Joined as text, never resolved as a reference, so that no path ("/http://elsewhere/") can name another host.
 */
export function pathOnSite(siteUrl: string, path: string): string {
  const base = siteUrl.endsWith('/') ? siteUrl : `${siteUrl}/`;
  const url = new URL(base + path.replace(/^\/+/, ''));
  if (url.origin !== new URL(base).origin)
    throw new ServiceError('svc_invalid_health_url', `"${path.slice(0, 100)}" is not a path on the site.`, 400);
  return url.toString();
}

function summaryOf(status: HealthStatus, pages: HealthPage[], slow: boolean, ms: number | null, baseline: number | null): string {
  if (status === 'healthy') return 'healthy';
  const parts = pages
    .filter((p) => !p.ok)
    .map((p) => `${p.kind === 'extra' ? p.url : p.kind} ${p.problem}${p.http_status ? ` (HTTP ${p.http_status})` : ''}`);
  if (slow) parts.push(`slow: home ${ms} ms against a baseline of ${baseline} ms`);
  return `${status}: ${parts.join('; ')}`;
}

export class HealthService {
  private readonly prober: HealthProber;

  constructor(
    private readonly store: Store,
    config: Config,
    private readonly sites: SiteService,
  ) {
    // Per origin: many simulated (or multisite) sites share one origin, and safe runs probe that many sites at once.
    this.prober = new HealthProber({ allowPrivate: config.allowPrivateSites, connections: SAFE_SITES_FACTOR * config.childConcurrency });
  }

  record(siteId: number): SiteHealthRecord {
    return (
      this.store.get<SiteHealthRecord>('site_health', siteId) ?? {
        id: siteId,
        settings: DEFAULT_SETTINGS,
        title: null,
        baseline_ms: null,
        baseline_samples: 0,
        latest: null,
      }
    );
  }

  /** Sets a site's extra paths and/or content keyword (one write). */
  async configure(site: SiteRecord, input: { urls?: readonly string[]; keyword?: string }): Promise<HealthSettings> {
    const settings = checkSettings(input, this.record(site.id).settings);
    return this.store.write((tx) => {
      if (!tx.get('sites', site.id)) return settings;
      const cur = tx.get<SiteHealthRecord>('site_health', site.id) ?? this.record(site.id);
      tx.put<SiteHealthRecord>('site_health', { ...cur, settings });
      return settings;
    });
  }

  /**
   * Probes the site's pages concurrently (each bounded by PROBE_TIMEOUT_MS, PROBE_MAX_BYTES and PROBE_MAX_REDIRECTS)
   * and stores the report as its latest health, with the baseline and learned title moved on.
   */
  async probe(site: SiteRecord): Promise<HealthReport> {
    const rec = this.record(site.id);
    const marker = rec.settings.keyword
      ? { text: rec.settings.keyword, source: 'keyword' as const }
      : rec.title
        ? { text: rec.title, source: 'title' as const }
        : { text: '', source: 'none' as const };
    const started = performance.now();
    const checkedAt = now();
    const common = {
      sslVerify: site.ssl_verify,
      httpUser: site.http_user,
      httpPass: (await this.sites.secret(site.id))?.http_pass ?? null,
    };
    const targets: Array<{ kind: PageKind; url: string; marker: string }> = [
      { kind: 'home', url: site.url, marker: marker.text },
      { kind: 'login', url: pathOnSite(site.url, '/wp-login.php'), marker: '' },
      ...rec.settings.urls.map((u) => ({ kind: 'extra' as const, url: pathOnSite(site.url, u), marker: '' })),
    ];
    const outcomes: PageOutcome[] = await Promise.all(targets.map((t) => this.prober.page({ ...common, url: t.url, marker: t.marker })));
    const pages: HealthPage[] = outcomes.map((o, i) => ({
      kind: targets[i]!.kind,
      url: o.url,
      final_url: o.final_url,
      http_status: o.http_status,
      ms: o.ms,
      bytes: o.bytes,
      redirects: o.redirects,
      ok: o.ok,
      problem: o.problem,
      message: o.message,
    }));
    const home = outcomes[0]!;
    const bad = pages.some((p) => !p.ok);
    const baseline = rec.baseline_samples >= BASELINE_MIN_SAMPLES ? rec.baseline_ms : null;
    const slow = home.ok && baseline !== null && home.ms > Math.max(SLOW_FACTOR * baseline, baseline + SLOW_MARGIN_MS);
    const status: HealthStatus = bad ? 'unhealthy' : slow ? 'degraded' : 'healthy';
    const report: HealthReport = {
      status,
      checked_at: checkedAt,
      duration_ms: Math.round(performance.now() - started),
      marker: { ...marker, found: marker.text ? home.marker_found : false },
      response_ms: home.http_status ? home.ms : null,
      baseline_ms: baseline,
      slow,
      pages,
      summary: '',
    };
    report.summary = summaryOf(status, pages, slow, report.response_ms, baseline);
    await this.store.write((tx) => {
      if (!tx.get('sites', site.id)) return;
      const cur = tx.get<SiteHealthRecord>('site_health', site.id) ?? rec;
      const next: SiteHealthRecord = { ...cur, latest: report };
      if (!bad) {
        next.baseline_ms =
          cur.baseline_ms === null ? home.ms : Math.round((1 - BASELINE_WEIGHT) * cur.baseline_ms + BASELINE_WEIGHT * home.ms);
        next.baseline_samples = cur.baseline_samples + 1;
        // The first well probe without a keyword learns the site's title: the marker from then on.
        if (!cur.title) next.title = siteTitleOf(home.title);
      }
      tx.put<SiteHealthRecord>('site_health', next);
    });
    return report;
  }

  /** A removed site's health goes with it (a cascade of sites.remove). */
  forgetSite(tx: Tx, siteId: number): void {
    tx.delete('site_health', siteId);
  }

  async close(): Promise<void> {
    await this.prober.close();
  }
}
