// Configuration: command-line flags over SITEFLEET_* environment variables over these defaults.
import { isIP } from 'node:net';
import { resolve } from 'node:path';

/** Read once at start and frozen (`loadConfig`, and `boot` again): no part of the process changes it afterwards. */
export type Config = Readonly<ConfigFields>;

interface ConfigFields {
  host: string;
  port: number;
  dataDir: string;
  /** postgres://… runs the PostgreSQL store engine instead of the data dir's files (several processes, one fleet). */
  databaseUrl: string | null;
  restPrefix: string;
  abilitiesPrefix: string;
  /** Calls to child sites in flight at once, over all sites. */
  childConcurrency: number;
  /** Longest a child call may take, reply included; a slower child is a per-site timeout error. */
  childTimeoutMs: number;
  /** Longest a child call that installs or updates a package may take (installs, update applies); at least childTimeoutMs. */
  childPackageTimeoutMs: number;
  /** Let add-site reach loopback and private addresses (tests, the demo, a lab). */
  allowPrivateSites: boolean;
  /** Batches over this many sites become background jobs. */
  queueThreshold: number;
  /**
   * Proxies whose X-Forwarded-For is believed (--trust-proxy, SITEFLEET_TRUST_PROXY), as "address/bits"; none by
   * default, so that no caller can name its own address (core/client-address.ts).
   */
  trustProxy: readonly string[];
  /** Failed logins from one address within a minute before it must wait (429). */
  loginFailureLimit: number;
  /** Life of a web console login (an absolute limit from the login; the cookie's Max-Age). */
  consoleSessionSeconds: number;
  /**
   * SITEFLEET_PUBLIC_URL: where callers reach this server (a proxy's address), the base of the links the HTTP doors
   * give (the REST `status_url`, the abilities door's `_links`); null: the address the HTTP door really listens on.
   */
  publicUrl: string | null;
  /** Uptime checks: every monitor's interval in seconds when set (tests, operators); null = the monitor settings. */
  monitorIntervalS: number | null;
  /** Uptime checks in flight at once, over all sites. */
  monitorConcurrency: number;
  /** How often checked monitors' history is written (state changes are written at once). */
  monitorFlushMs: number;
  /** First webhook retry delay; each next one is five times longer. */
  webhookRetryMs: number;
  /** --package-source: the wordpress.org directory's base URL (api.wordpress.org's info/1.2 shapes), or a stand-in's. */
  packageSource: string;
  /** --oauth-issuer: the OAuth authorization server whose access tokens /mcp takes; null: OAuth off (API keys only). */
  oauthIssuer: string | null;
  /** --oauth-audience: the audience tokens must name; null: this server's /mcp URL (SITEFLEET_PUBLIC_URL's, if set). */
  oauthAudience: string | null;
  /**
   * --heap-growth-percent: how far past what survived its last full collection V8 lets a long-running process's heap
   * grow before collecting again (app/heap.ts); 0 leaves it to V8, which lets a busy server's heap grow to about 4×.
   */
  heapGrowthPercent: number;
}

export type ConfigFlags = Partial<Record<Exclude<keyof ConfigFields, 'publicUrl'>, string | boolean | undefined>>;

/** At most this many --trust-proxy entries (each is checked on every request from a proxy). */
export const TRUST_PROXY_MAX = 100;

export function loadConfig(flags: ConfigFlags = {}, env = process.env): Config {
  const pick = (flag: keyof ConfigFlags, envName: string, def: string): string => {
    const v = flags[flag];
    if (typeof v === 'string') return v;
    return env[envName] ?? def;
  };
  const int = (name: string, v: string, min: number, max: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max} (got "${v}").`);
    return n;
  };
  const prefix = (name: string, v: string): string => {
    if (!/^\/[\w./-]*[\w-]$/.test(v)) throw new Error(`${name} must start with / and not end with / (got "${v}").`);
    return v;
  };
  const host = pick('host', 'SITEFLEET_HOST', '127.0.0.1');
  const port = int('--port', pick('port', 'SITEFLEET_PORT', '8787'), 0, 65535);
  return Object.freeze({
    host,
    port,
    dataDir: resolve(pick('dataDir', 'SITEFLEET_DATA_DIR', './data')),
    databaseUrl: databaseUrl(storeFlags(flags) === 'dataDir' ? '' : pick('databaseUrl', 'SITEFLEET_DATABASE_URL', '')),
    restPrefix: prefix('--rest-prefix', pick('restPrefix', 'SITEFLEET_REST_PREFIX', '/wp-json/svc/v2')),
    abilitiesPrefix: prefix('--abilities-prefix', pick('abilitiesPrefix', 'SITEFLEET_ABILITIES_PREFIX', '/wp-json/wp-abilities/v1')),
    childConcurrency: int('--child-concurrency', pick('childConcurrency', 'SITEFLEET_CHILD_CONCURRENCY', '32'), 1, 1024),
    heapGrowthPercent: int('--heap-growth-percent', pick('heapGrowthPercent', 'SITEFLEET_HEAP_GROWTH_PERCENT', '50'), 0, 1000),
    childTimeoutMs: int('child timeout', pick('childTimeoutMs', 'SITEFLEET_CHILD_TIMEOUT_MS', '30000'), 100, 3_600_000),
    childPackageTimeoutMs: int(
      'child package timeout',
      pick('childPackageTimeoutMs', 'SITEFLEET_CHILD_PACKAGE_TIMEOUT_MS', '900000'),
      100,
      4 * 3_600_000,
    ),
    allowPrivateSites: flags.allowPrivateSites === true || env.SITEFLEET_ALLOW_PRIVATE_SITES === '1',
    trustProxy: trustProxy(pick('trustProxy', 'SITEFLEET_TRUST_PROXY', '')),
    queueThreshold: int('queue threshold', pick('queueThreshold', 'SITEFLEET_QUEUE_THRESHOLD', '200'), 1, 1_000_000),
    loginFailureLimit: int('login failure limit', pick('loginFailureLimit', 'SITEFLEET_LOGIN_FAILURE_LIMIT', '30'), 1, 1_000_000),
    consoleSessionSeconds: int(
      'console session seconds',
      pick('consoleSessionSeconds', 'SITEFLEET_CONSOLE_SESSION_SECONDS', '28800'),
      1,
      30 * 86_400,
    ),
    monitorIntervalS:
      pick('monitorIntervalS', 'SITEFLEET_MONITOR_INTERVAL', '') === ''
        ? null
        : int('--monitor-interval', pick('monitorIntervalS', 'SITEFLEET_MONITOR_INTERVAL', ''), 1, 86_400),
    monitorConcurrency: int('monitor concurrency', pick('monitorConcurrency', 'SITEFLEET_MONITOR_CONCURRENCY', '64'), 1, 1024),
    monitorFlushMs: int('monitor flush', pick('monitorFlushMs', 'SITEFLEET_MONITOR_FLUSH_MS', '30000'), 50, 600_000),
    webhookRetryMs: int('webhook retry', pick('webhookRetryMs', 'SITEFLEET_WEBHOOK_RETRY_MS', '5000'), 10, 3_600_000),
    publicUrl: publicUrl(env.SITEFLEET_PUBLIC_URL ?? ''),
    packageSource: packageSourceBase(pick('packageSource', 'SITEFLEET_PACKAGE_SOURCE', DEFAULT_PACKAGE_SOURCE)),
    oauthIssuer: oauthUrl('--oauth-issuer', pick('oauthIssuer', 'SITEFLEET_OAUTH_ISSUER', ''), true),
    oauthAudience: oauthUrl('--oauth-audience', pick('oauthAudience', 'SITEFLEET_OAUTH_AUDIENCE', ''), false),
  });
}

/**
 * Which store flag was given, if any. Flags win over the environment, so `--data-dir` alone means the data dir even when
 * SITEFLEET_DATABASE_URL is exported (the command line refuses both flags at once; code that passes both means the URL).
 */
function storeFlags(flags: ConfigFlags): 'dataDir' | 'databaseUrl' | null {
  if (typeof flags.databaseUrl === 'string') return 'databaseUrl';
  return typeof flags.dataDir === 'string' ? 'dataDir' : null;
}

/** An http(s) origin, with a path prefix if the proxy adds one; no trailing slash (links append to it). */
function publicUrl(v: string): string | null {
  if (!v) return null;
  let u: URL | null = null;
  try {
    u = new URL(v);
  } catch {
    /* answered below */
  }
  if (!u || !/^https?:$/.test(u.protocol) || u.search || u.hash || u.username || u.password) {
    throw new Error(`SITEFLEET_PUBLIC_URL must be an http:// or https:// URL without query, fragment or credentials (got "${v}").`);
  }
  return v.replace(/\/+$/, '');
}

/**
 * An OAuth issuer or audience: an absolute URL without query, fragment or credentials. An issuer is https (OAuth 2.1),
 * or http on a loopback address (a development authorization server on this machine). Empty: not set.
 */
function oauthUrl(name: string, v: string, issuer: boolean): string | null {
  if (!v) return null;
  let u: URL | null = null;
  try {
    u = new URL(v);
  } catch {
    /* answered below */
  }
  if (!u || !/^https?:$/.test(u.protocol) || u.search || u.hash || u.username || u.password)
    throw new Error(`${name} must be an http:// or https:// URL without query, fragment or credentials (got "${v}").`);
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname);
  if (issuer && u.protocol === 'http:' && !loopback)
    throw new Error(`${name} must be https:// (http:// only on a loopback address) (got "${v}").`);
  // The issuer is compared with the tokens' "iss" as written; the metadata's "issuer" must match it exactly.
  return v;
}

/** wordpress.org's directory API: its answers carry downloads.wordpress.org's links. */
export const DEFAULT_PACKAGE_SOURCE = 'https://api.wordpress.org/';

/** The base URL of a package directory: http(s), no credentials, query or fragment; always ends with "/". */
export function packageSourceBase(v: string): string {
  let u: URL | null = null;
  try {
    u = new URL(v);
  } catch {
    /* answered below */
  }
  if (!u || !/^https?:$/.test(u.protocol) || u.search || u.hash || u.username || u.password)
    throw new Error(`--package-source must be an http:// or https:// URL without query, fragment or credentials (got "${v}").`);
  return u.href.endsWith('/') ? u.href : `${u.href}/`;
}

/**
 * "127.0.0.1, 10.0.0.0/8, ::1, fd00::/8" → ["127.0.0.1/32", "10.0.0.0/8", "::1/128", "fd00::/8"]. A CIDR with bits
 * set past its prefix is refused (10.0.0.1/8 is a typo for 10.0.0.0/8 or for 10.0.0.1, and either guess is a risk).
 */
function trustProxy(v: string): readonly string[] {
  const entries = v
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  if (entries.length > TRUST_PROXY_MAX) throw new Error(`--trust-proxy takes at most ${TRUST_PROXY_MAX} entries (got ${entries.length}).`);
  return Object.freeze(entries.map(trustEntry));
}

function trustEntry(entry: string): string {
  const bad = (why: string) =>
    new Error(`--trust-proxy: "${entry}" ${why}; give IP addresses or CIDRs separated by commas (127.0.0.1,10.0.0.0/8,::1,fd00::/8).`);
  const slash = entry.indexOf('/');
  const addr = slash === -1 ? entry : entry.slice(0, slash);
  const family = addr.includes('%') ? 0 : isIP(addr);
  if (!family) throw bad('is not an IPv4 or IPv6 address');
  const max = family === 4 ? 32 : 128;
  const bitsText = slash === -1 ? String(max) : entry.slice(slash + 1);
  const bits = /^\d{1,3}$/.test(bitsText) ? Number(bitsText) : NaN;
  if (!(bits >= 0 && bits <= max)) throw bad(`has a prefix length that is not 0 to ${max}`);
  if (hostBitsSet(addr, family, bits)) throw bad(`sets bits past its /${bits} prefix`);
  return `${addr}/${bits}`;
}

/** Whether any bit of the address past the first `bits` is 1. */
function hostBitsSet(addr: string, family: number, bits: number): boolean {
  let bytes: number[];
  if (family === 4) bytes = addr.split('.').map(Number);
  else {
    // The URL parser writes any IPv6 spelling (an embedded IPv4 included) as hex groups with at most one "::".
    const [head, tail = ''] = new URL(`http://[${addr}]/`).hostname.slice(1, -1).split('::') as [string, string?];
    const groups = (s: string) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
    const h = groups(head);
    const t = groups(tail);
    const all = [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
    bytes = all.flatMap((g) => [g >> 8, g & 0xff]);
  }
  return bytes.some((b, i) => {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    return (b & (0xff >> keep)) !== 0;
  });
}

function databaseUrl(v: string): string | null {
  if (!v) return null;
  if (!/^postgres(ql)?:\/\/\S+$/.test(v)) throw new Error('--database-url must be a postgres:// or postgresql:// URL.');
  return v;
}
