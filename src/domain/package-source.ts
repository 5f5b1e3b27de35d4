// Where plugins and themes come from: the wordpress.org directory, through its real API and download URL shapes
// (api.wordpress.org/{plugins,themes}/info/1.2/ for information and search; the `download_link` and `versions` it
// answers point at downloads.wordpress.org). The base URL is configurable (--package-source, SITEFLEET_PACKAGE_SOURCE):
// a stand-in directory (the real-child kit's /__rc/dir/, the simulator's /__sim/dir/) serves both shapes under one
// base, and its answers carry its own download links. Every call goes through the address policy, with a time and a
// size bound; errors say whose fault they are (an unknown slug: 404; the directory down or odd: 502 / 504).
import { LazyAgent, type ResponseData } from '../child/undici.js';
import { BLOCKED_CODE, assertAllowedHost, guardedLookup } from '../child/address-policy.js';
import { OWN_USER_AGENT } from '../child/snapshot.js';
import { ServiceError } from '../core/errors.js';
import { DEFAULT_PACKAGE_SOURCE, packageSourceBase } from '../config.js';

export type PackageType = 'plugin' | 'theme';

/** A package the directory knows, at one version: what an install sends the child is `download_url`. */
export interface Package {
  type: PackageType;
  slug: string;
  name: string;
  version: string;
  /** The version the directory calls stable (what an install without a version gets). */
  stable_version: string;
  download_url: string;
  /** Minimum WordPress and PHP versions, when the directory says (null: it does not). */
  requires: string | null;
  requires_php: string | null;
  author: string;
  /** Themes: the parent theme's slug for a child theme, else null. */
  parent: string | null;
}

/** A search hit (the directory's query answer has no version list). */
export interface DirectoryItem {
  slug: string;
  name: string;
  version: string;
  author: string;
  requires: string | null;
  requires_php: string | null;
  short_description: string;
  rating: number | null;
  active_installs: number | null;
  download_url: string | null;
}

export interface DirectoryPage {
  items: DirectoryItem[];
  page: number;
  per_page: number;
  total: number;
  pages: number;
}

/** Search results per page at most (the directory's own default is 24). */
export const MAX_DIRECTORY_PER_PAGE = 50;
/** The most of a directory answer read (a popular plugin's information, versions and changelog included, is ~0.5 MB). */
export const MAX_DIRECTORY_REPLY_BYTES = 4 * 1024 * 1024;
export const DIRECTORY_TIMEOUT_MS = 15_000;

/** A directory slug: lowercase letters, digits, - and _ (wordpress.org's own rule for plugins; themes use the same). */
const SLUG = /^[a-z0-9][a-z0-9_-]{0,199}$/;
const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,49}$/;

export function checkSlug(slug: string): string {
  if (!SLUG.test(slug))
    throw new ServiceError(
      'svc_invalid_slug',
      `"${slug.slice(0, 200)}" is not a directory slug (lowercase letters, digits, "-" and "_", up to 200 characters).`,
      400,
    );
  return slug;
}

export function checkVersion(version: string): string {
  if (!VERSION.test(version)) throw new ServiceError('svc_invalid_version', `"${version.slice(0, 60)}" is not a version number.`, 400);
  return version;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');
const optStr = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
/** Plugins name their author as HTML (`<a href=…>Name</a>`); themes as an object. Either way: the plain name. */
function authorOf(v: unknown): string {
  const raw =
    v && typeof v === 'object' ? str((v as Record<string, unknown>).display_name) || str((v as Record<string, unknown>).author) : str(v);
  return raw
    .replace(/<[^>]*>/g, '')
    .replace(/&amp;/g, '&')
    .trim()
    .slice(0, 200);
}
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const httpUrl = (v: unknown): string | null => {
  if (typeof v !== 'string') return null;
  try {
    return /^https?:$/.test(new URL(v).protocol) ? v : null;
  } catch {
    return null;
  }
};

export interface PackageSourceOptions {
  /** The directory's base URL (default https://api.wordpress.org/). */
  base?: string;
  /** Reach loopback and private addresses too (--allow-private-sites). */
  allowPrivate: boolean;
  timeoutMs?: number;
  maxReplyBytes?: number;
}

/** The wordpress.org directory (or a stand-in with its shapes): information, versions, download links, search. */
export class PackageSource {
  readonly base: string;
  private readonly agent: LazyAgent;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;

  constructor(private readonly opts: PackageSourceOptions) {
    this.base = packageSourceBase(opts.base ?? DEFAULT_PACKAGE_SOURCE);
    this.timeoutMs = opts.timeoutMs ?? DIRECTORY_TIMEOUT_MS;
    this.maxBytes = opts.maxReplyBytes ?? MAX_DIRECTORY_REPLY_BYTES;
    this.agent = new LazyAgent({
      connections: 8,
      keepAliveTimeout: 4_000,
      connect: { timeout: this.timeoutMs, ...(opts.allowPrivate ? {} : { lookup: guardedLookup }) },
    });
  }

  private unavailable(message: string, status = 502): ServiceError {
    return new ServiceError(
      status === 504 ? 'svc_package_source_timeout' : 'svc_package_source_unavailable',
      `The package directory (${this.base}) ${message}`,
      status,
      { package_source: this.base },
    );
  }

  /** One GET of the info/1.2 API: its JSON and HTTP status (any status: a 404 carries the directory's own error). */
  private async get(kind: 'plugins' | 'themes', query: URLSearchParams): Promise<{ status: number; json: unknown }> {
    const url = new URL(`${kind}/info/1.2/`, this.base);
    url.search = query.toString();
    const signal = AbortSignal.timeout(this.timeoutMs);
    let res: ResponseData;
    try {
      if (!this.opts.allowPrivate) assertAllowedHost(url.hostname);
      res = await this.agent.request(url, {
        method: 'GET',
        headers: { 'user-agent': OWN_USER_AGENT, accept: 'application/json', 'accept-encoding': 'identity' },
        signal,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
    } catch (e) {
      throw this.failure(e, signal);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      if (Number(res.headers['content-length']) > this.maxBytes) throw new RangeError('too large');
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > this.maxBytes) throw new RangeError('too large');
        chunks.push(chunk);
      }
    } catch (e) {
      res.body.on('error', () => {});
      res.body.destroy();
      if (e instanceof RangeError) throw this.unavailable(`sent an answer larger than ${this.maxBytes} bytes.`);
      throw this.failure(e, signal);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw this.unavailable(`answered HTTP ${res.statusCode} with something that is not JSON.`);
    }
    return { status: res.statusCode, json };
  }

  private failure(e: unknown, signal: AbortSignal): ServiceError {
    const chain: unknown[] = [];
    for (let c: unknown = e, i = 0; c && i < 5; c = (c as { cause?: unknown }).cause, i++) chain.push(c);
    const blocked = chain.find((c) => (c as { code?: unknown }).code === BLOCKED_CODE);
    if (blocked)
      return new ServiceError('svc_address_not_allowed', `The package directory: ${(blocked as Error).message}`, 400, {
        package_source: this.base,
      });
    const codes = chain.map((c) => (c as { code?: unknown }).code);
    if (
      signal.aborted ||
      codes.some((c) => c === 'UND_ERR_HEADERS_TIMEOUT' || c === 'UND_ERR_BODY_TIMEOUT' || c === 'UND_ERR_CONNECT_TIMEOUT')
    )
      return this.unavailable(`did not answer within ${this.timeoutMs} ms.`, 504);
    const last = chain[chain.length - 1] ?? e;
    return this.unavailable(`could not be reached: ${last instanceof Error ? last.message : String(last)}`);
  }

  /** The directory's own "not found" (404 {"error": …}) as ours; anything else that is not 200 is the directory's fault. */
  private answer(type: PackageType, slug: string, r: { status: number; json: unknown }): Record<string, unknown> {
    const error = isObject(r.json) ? str(r.json.error) : '';
    if (r.status === 404 || (r.status === 200 && error && /not found|invalid .*slug/i.test(error)))
      throw new ServiceError('svc_package_not_found', `The directory has no ${type} "${slug}"${error ? ` (${error})` : ''}.`, 404, {
        type,
        slug,
      });
    if (r.status !== 200 || !isObject(r.json) || error)
      throw this.unavailable(`answered HTTP ${r.status}${error ? `: ${error.slice(0, 200)}` : ' with an unexpected shape.'}`);
    return r.json;
  }

  /** A package's information: every version the directory offers (version → download URL). */
  async info(type: PackageType, slug: string): Promise<{ package: Package; versions: Record<string, string> }> {
    checkSlug(slug);
    const kind = type === 'plugin' ? 'plugins' : 'themes';
    const q = new URLSearchParams({ action: `${type}_information`, 'request[slug]': slug });
    // Themes list their versions only when asked; plugins always do (asking does no harm).
    q.set('request[fields][versions]', '1');
    const j = this.answer(type, slug, await this.get(kind, q));
    const version = str(j.version);
    const link = httpUrl(j.download_link);
    if (!version || !link) throw this.unavailable(`answered ${type} "${slug}" without a version or a download link.`);
    const versions: Record<string, string> = {};
    if (isObject(j.versions)) for (const [v, u] of Object.entries(j.versions)) if (httpUrl(u) && v !== 'trunk') versions[v] = u as string;
    versions[version] ??= link;
    const parent = isObject(j.parent) ? optStr(j.parent.slug) : optStr(j.template);
    return {
      package: {
        type,
        slug,
        name: str(j.name).slice(0, 500) || slug,
        version,
        stable_version: version,
        download_url: link,
        requires: optStr(j.requires),
        requires_php: optStr(j.requires_php),
        author: authorOf(j.author),
        parent: type === 'theme' ? parent : null,
      },
      versions,
    };
  }

  /**
   * A slug (and a version; without one, the stable version) as a package with its download URL: what an install
   * sends the child, and what the rollback of a safe update re-installs. 404 svc_package_not_found /
   * svc_package_version_not_found when the directory has no such slug or version.
   */
  async resolve(type: PackageType, slug: string, version?: string | null): Promise<Package> {
    if (version) checkVersion(version);
    const { package: p, versions } = await this.info(type, slug);
    if (!version || version === p.version) return p;
    const url = versions[version];
    if (!url) {
      const known = Object.keys(versions).slice(-20);
      throw new ServiceError(
        'svc_package_version_not_found',
        `The directory has no version ${version} of ${type} "${slug}" (it has: ${known.join(', ')}).`,
        404,
        { type, slug, version, versions: known },
      );
    }
    return { ...p, version, download_url: url };
  }

  /** Searches the directory (query_plugins / query_themes), one page of at most MAX_DIRECTORY_PER_PAGE. */
  async search(type: PackageType, o: { search: string; page: number; per_page: number }): Promise<DirectoryPage> {
    const kind = type === 'plugin' ? 'plugins' : 'themes';
    const perPage = Math.min(Math.max(1, o.per_page), MAX_DIRECTORY_PER_PAGE);
    const q = new URLSearchParams({
      action: `query_${kind}`,
      'request[search]': o.search,
      'request[page]': String(o.page),
      'request[per_page]': String(perPage),
    });
    const r = await this.get(kind, q);
    const error = isObject(r.json) ? str(r.json.error) : '';
    if (r.status !== 200 || !isObject(r.json) || error)
      throw this.unavailable(`answered the search with HTTP ${r.status}${error ? `: ${error.slice(0, 200)}` : ''}.`);
    const info = isObject(r.json.info) ? r.json.info : {};
    const list = Array.isArray(r.json[kind]) ? (r.json[kind] as unknown[]) : [];
    const items = list
      .filter(isObject)
      .slice(0, perPage)
      .map((j) => ({
        slug: str(j.slug),
        name: str(j.name).slice(0, 500),
        version: str(j.version),
        author: authorOf(j.author),
        requires: optStr(j.requires),
        requires_php: optStr(j.requires_php),
        short_description: (str(j.short_description) || str(j.description)).slice(0, 1000),
        rating: num(j.rating),
        active_installs: num(j.active_installs),
        download_url: httpUrl(j.download_link),
      }))
      .filter((i) => SLUG.test(i.slug));
    const total = num(info.results) ?? items.length;
    return { items, page: o.page, per_page: perPage, total, pages: num(info.pages) ?? Math.ceil(total / perPage) };
  }

  close(): Promise<void> {
    return this.agent.end();
  }
}
