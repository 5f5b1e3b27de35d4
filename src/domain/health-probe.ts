// One health probe of one page of a site, as a visitor sees it: an HTTP GET with redirects followed by hand (each hop
// through the address policy), the body read up to a bound, and what a broken WordPress looks like in it — its
// fatal-error page, PHP's fatal/parse error text — and whether a content marker is there. Bounded in time (the whole
// page, redirects and body included), bytes and hops. Never throws: a dead page is an outcome with a cause.
import { undici, type ResponseData } from '../child/undici.js';
import { OWN_USER_AGENT } from '../child/snapshot.js';
import { SiteAgents, classify } from './uptime-check.js';

/** The most of a page read (the marker and error texts are looked for within it; a marker further down counts as missing). */
export const PROBE_MAX_BYTES = 512 * 1024;
/** The most time one page may take, every redirect hop and the body included. */
export const PROBE_TIMEOUT_MS = 15_000;
/** The most redirects followed for one page (WordPress's own: http → https, a trailing slash, a canonical host). */
export const PROBE_MAX_REDIRECTS = 5;

export type ProblemCode =
  'unreachable' | 'timeout' | 'blocked' | 'http_status' | 'too_many_redirects' | 'fatal_error' | 'php_error' | 'content_missing';

export interface PageTarget {
  url: string;
  /** Text that must be on the page ('' = none), matched without regard to case. */
  marker: string;
  sslVerify: boolean;
  httpUser?: string | null;
  httpPass?: string | null;
  timeoutMs?: number;
}

export interface PageOutcome {
  url: string;
  /** Where the last hop answered from (differs from url after redirects). */
  final_url: string;
  /** 0 when nothing answered. */
  http_status: number;
  ms: number;
  bytes: number;
  redirects: number;
  ok: boolean;
  problem: ProblemCode | null;
  message: string | null;
  /** The page's <title> text (entities decoded), when it has one within the bytes read. */
  title: string | null;
  /** True when a marker was asked for and found. */
  marker_found: boolean;
}

/** WordPress's wp_die page after a fatal error (since 5.2), in its own words. */
const WP_FATAL = 'there has been a critical error on this website';
/**
 * PHP's own error output when display_errors is on: its HTML form ("<b>Fatal error</b>:"), its log form ("PHP Fatal
 * error:"), or its plain form at a line start naming a file and line — not any page that mentions the words.
 */
const PHP_ERROR = /<b>(Fatal|Parse) error<\/b>:|PHP (Fatal|Parse) error:|(?:^|\n)(Fatal|Parse) error: [^\n]{0,2000}? on line \d+/;

const ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  ndash: '–',
  mdash: '—',
  rsaquo: '›',
};
export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === '#') {
      const n = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(n) && n > 0 && n < 0x110000 ? String.fromCodePoint(n) : m;
    }
    return ENTITIES[e.toLowerCase()] ?? m;
  });
}

/** The <title> of an HTML page, decoded and with whitespace collapsed; null when there is none. */
export function pageTitle(html: string): string | null {
  const m = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html);
  if (!m) return null;
  const t = decodeEntities(m[1]!).replace(/\s+/g, ' ').trim();
  return t || null;
}

/**
 * The site's own title from its home page's <title>: WordPress writes "Site title – Tagline" (or only the title), so
 * the part before WordPress's separator. What the content marker defaults to.
 */
export function siteTitleOf(title: string | null): string | null {
  if (!title) return null;
  const first = title.split(/\s[–|—-]\s/)[0]!.trim();
  return first || null;
}

export class HealthProber {
  private readonly agents: SiteAgents;

  constructor(opts: { allowPrivate: boolean; connections: number }) {
    this.agents = new SiteAgents(opts);
  }

  async page(t: PageTarget): Promise<PageOutcome> {
    await undici(); // loaded by the process's first probe, and not counted in its time
    const started = performance.now();
    const timeoutMs = t.timeoutMs ?? PROBE_TIMEOUT_MS;
    const signal = AbortSignal.timeout(timeoutMs);
    const headers: Record<string, string> = {
      'user-agent': OWN_USER_AGENT,
      'accept-encoding': 'identity',
      accept: 'text/html,*/*;q=0.8',
    };
    const auth = t.httpUser && t.httpPass ? 'Basic ' + Buffer.from(`${t.httpUser}:${t.httpPass}`).toString('base64') : null;
    const origin = new URL(t.url).origin;
    let url = t.url;
    let redirects = 0;
    const out = (o: Partial<PageOutcome> & Pick<PageOutcome, 'ok' | 'problem' | 'message'>): PageOutcome => ({
      url: t.url,
      final_url: url,
      http_status: 0,
      bytes: 0,
      redirects,
      title: null,
      marker_found: false,
      ...o,
      ms: Math.round(performance.now() - started),
    });
    for (;;) {
      let res: ResponseData;
      try {
        this.agents.assertAllowed(url);
        res = await this.agents.for(t.sslVerify).request(url, {
          method: 'GET',
          // The site's HTTP auth goes to the site's own origin only, never to where a redirect points.
          headers: auth && new URL(url).origin === origin ? { ...headers, authorization: auth } : headers,
          signal,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
      } catch (e) {
        const c = classify(e, signal.aborted);
        const problem: ProblemCode = c.cause === 'timeout' ? 'timeout' : c.cause === 'blocked' ? 'blocked' : 'unreachable';
        return out({ ok: false, problem, message: c.message });
      }
      const code = res.statusCode;
      const location = res.headers.location;
      if (code >= 300 && code < 400 && typeof location === 'string' && location) {
        res.body.on('error', () => {});
        res.body.destroy();
        if (redirects >= PROBE_MAX_REDIRECTS)
          return out({
            http_status: code,
            ok: false,
            problem: 'too_many_redirects',
            message: `More than ${PROBE_MAX_REDIRECTS} redirects.`,
          });
        try {
          url = new URL(location, url).toString();
        } catch {
          return out({ http_status: code, ok: false, problem: 'http_status', message: `HTTP ${code} to an invalid Location.` });
        }
        if (!/^https?:$/.test(new URL(url).protocol))
          return out({ http_status: code, ok: false, problem: 'http_status', message: `HTTP ${code} to a non-HTTP address.` });
        redirects++;
        continue;
      }
      // Read the body up to the bound: a chunk that crosses it is cut there.
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          const part = chunk.length > PROBE_MAX_BYTES - size ? chunk.subarray(0, PROBE_MAX_BYTES - size) : chunk;
          chunks.push(part);
          size += part.length;
          if (size >= PROBE_MAX_BYTES) break;
        }
      } catch (e) {
        res.body.destroy();
        const c = classify(e, signal.aborted);
        return out({
          http_status: code,
          bytes: size,
          ok: false,
          problem: c.cause === 'timeout' ? 'timeout' : 'unreachable',
          message: c.message,
        });
      }
      res.body.on('error', () => {});
      res.body.destroy();
      const html = Buffer.concat(chunks).toString('utf8');
      const lower = html.toLowerCase();
      const title = pageTitle(html);
      const markerFound = t.marker ? lower.includes(t.marker.toLowerCase()) : false;
      const base = { http_status: code, bytes: size, title, marker_found: markerFound };
      if (lower.includes(WP_FATAL))
        return out({ ...base, ok: false, problem: 'fatal_error', message: `WordPress's critical-error page (HTTP ${code}).` });
      const php = PHP_ERROR.exec(html);
      if (php) {
        const kind = (php[1] ?? php[2] ?? php[3])!.toLowerCase();
        return out({ ...base, ok: false, problem: 'php_error', message: `PHP ${kind} error text on the page (HTTP ${code}).` });
      }
      if (code < 200 || code > 299) return out({ ...base, ok: false, problem: 'http_status', message: `HTTP ${code}.` });
      if (t.marker && !markerFound)
        return out({
          ...base,
          ok: false,
          problem: 'content_missing',
          message: `The page does not contain "${t.marker}" (within its first ${PROBE_MAX_BYTES} bytes).`,
        });
      return out({ ...base, ok: true, problem: null, message: null });
    }
  }

  close(): Promise<void> {
    return this.agents.close();
  }
}
