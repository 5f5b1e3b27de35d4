// One uptime check: an HTTP request to the site's public URL (no child plugin involved), timed and classified —
// up, or down with a cause (timeout, DNS, TLS, connection, HTTP status, keyword, refused by the address policy).
// Where it may connect is the address policy's call, as for child calls.
import { TlsAgents, undici, type LazyAgent, type ResponseData } from '../child/undici.js';
import { BLOCKED_CODE, assertAllowedHost, guardedLookup } from '../child/address-policy.js';
import { OWN_USER_AGENT } from '../child/snapshot.js';
import type { Cause } from '../store/monitor-records.js';

export interface CheckTarget {
  url: string;
  method: 'get' | 'head';
  timeoutMs: number;
  expected: readonly number[];
  keyword: string;
  sslVerify: boolean;
  httpUser?: string | null;
  httpPass?: string | null;
}

export interface CheckOutcome {
  up: boolean;
  /** 0 when nothing answered. */
  http_code: number;
  ms: number;
  cause: Cause | null;
  message: string | null;
}

/** The most of a page read when looking for the keyword; a keyword further down counts as missing. */
export const KEYWORD_SCAN_BYTES = 1024 * 1024;

const TLS_CODES =
  /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT|ERR_OSSL_)/;

function codeOf(e: unknown): string {
  const c = (e as { code?: unknown })?.code;
  return typeof c === 'string' ? c : '';
}

/** The cause of a failed request, looking through undici's wrapping (err.cause). */
export function classify(err: unknown, timedOut: boolean): { cause: Cause; message: string } {
  const chain: unknown[] = [];
  for (let e: unknown = err, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) chain.push(e);
  const codes = chain.map(codeOf);
  const msg = (e: unknown) => (e instanceof Error ? e.message : String(e));
  const last = chain[chain.length - 1] ?? err;
  if (codes.includes(BLOCKED_CODE)) return { cause: 'blocked', message: msg(chain[codes.indexOf(BLOCKED_CODE)]) };
  if (
    timedOut ||
    codes.some(
      (c) => c === 'UND_ERR_CONNECT_TIMEOUT' || c === 'UND_ERR_HEADERS_TIMEOUT' || c === 'UND_ERR_BODY_TIMEOUT' || c === 'ETIMEDOUT',
    )
  ) {
    return { cause: 'timeout', message: 'No answer within the timeout.' };
  }
  if (codes.some((c) => c === 'ENOTFOUND' || c === 'EAI_AGAIN' || c === 'EAI_NONAME'))
    return { cause: 'dns', message: `DNS: ${msg(last)}` };
  const tls = codes.find((c) => TLS_CODES.test(c));
  if (tls) return { cause: 'tls', message: `TLS: ${tls}` };
  return { cause: 'connection', message: msg(last) };
}

/**
 * The HTTP agents of outgoing checks of sites' own pages (uptime checks, health probes): one per TLS-verification
 * setting, every connection resolved through the address policy unless private sites are allowed.
 */
export class SiteAgents {
  private readonly agents: TlsAgents;

  constructor(private readonly opts: { allowPrivate: boolean; connections: number }) {
    this.agents = new TlsAgents((verify) => ({
      connections: opts.connections,
      keepAliveTimeout: 4_000,
      connect: { rejectUnauthorized: verify, ...(opts.allowPrivate ? {} : { lookup: guardedLookup }) },
    }));
  }

  /** Throws when the URL names a host the address policy refuses (a literal address; names are checked as resolved). */
  assertAllowed(url: string): void {
    if (!this.opts.allowPrivate) assertAllowedHost(new URL(url).hostname);
  }

  for(verify: boolean): LazyAgent {
    return this.agents.for(verify);
  }

  close(): Promise<void> {
    return this.agents.end();
  }
}

export class UptimeChecker {
  private readonly agents: SiteAgents;

  constructor(opts: { allowPrivate: boolean; connections: number }) {
    this.agents = new SiteAgents(opts);
  }

  /** Never throws: a dead site is a down outcome. The whole check (body included) ends by timeoutMs. */
  async check(t: CheckTarget): Promise<CheckOutcome> {
    await undici(); // loaded by the process's first check, and not counted in its time
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const signal = AbortSignal.timeout(t.timeoutMs);
    const headers: Record<string, string> = { 'user-agent': OWN_USER_AGENT, 'accept-encoding': 'identity' };
    if (t.httpUser && t.httpPass) headers.authorization = 'Basic ' + Buffer.from(`${t.httpUser}:${t.httpPass}`).toString('base64');
    const method = t.keyword ? 'GET' : t.method === 'head' ? 'HEAD' : 'GET';
    let res: ResponseData;
    try {
      this.agents.assertAllowed(t.url);
      res = await this.agents.for(t.sslVerify).request(t.url, {
        method,
        headers,
        signal,
        headersTimeout: t.timeoutMs,
        bodyTimeout: t.timeoutMs,
      });
    } catch (e) {
      return { up: false, http_code: 0, ms: elapsed(), ...classify(e, signal.aborted) };
    }
    const code = res.statusCode;
    let found = !t.keyword;
    try {
      if (t.keyword && t.expected.includes(code)) {
        // Read until the keyword shows up or the bound is reached; a keyword split across chunks is still found.
        const needle = t.keyword.toLowerCase();
        let tail = '';
        let size = 0;
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          // Only the bytes within the bound are read: a chunk that crosses it is cut there.
          const part = chunk.length > KEYWORD_SCAN_BYTES - size ? chunk.subarray(0, KEYWORD_SCAN_BYTES - size) : chunk;
          size += part.length;
          const text = tail + part.toString('utf8').toLowerCase();
          if (text.includes(needle)) {
            found = true;
            break;
          }
          tail = text.slice(-needle.length);
          if (size >= KEYWORD_SCAN_BYTES) break;
        }
      }
    } catch (e) {
      res.body.destroy();
      return { up: false, http_code: code, ms: elapsed(), ...classify(e, signal.aborted) };
    }
    res.body.on('error', () => {});
    res.body.destroy();
    const ms = elapsed();
    if (!t.expected.includes(code))
      return { up: false, http_code: code, ms, cause: 'http_status', message: `HTTP ${code} is not an expected status.` };
    if (!found) return { up: false, http_code: code, ms, cause: 'keyword', message: `The page does not contain "${t.keyword}".` };
    return { up: true, http_code: code, ms, cause: null, message: null };
  }

  close(): Promise<void> {
    return this.agents.close();
  }
}
