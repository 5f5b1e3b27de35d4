// Conditional GETs (issue 19): every successful GET answer of the REST and abilities doors carries a strong ETag and
// `Cache-Control: private, no-cache`; a request whose If-None-Match names it gets 304 and no body. The ETag is a hash of
// what is sent (the body and the headers that describe it), so it changes exactly when the answer does, whatever
// changed it: a write here or in another process, the clock, a child site. Pollers then pay for bytes only when the
// fleet changed.
//
// Beside it, a bounded cache of serialised answers for the abilities whose answer is a function of their input and the
// store's collections only (STORE_PURE): keyed by the principal and the full request URL, valid for one store
// fingerprint (every collection's `version`, which both engines bump on any change here or in another process). A hit
// skips validation, the view building and the serialisation; a 304 for it costs a map lookup.
import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import { scopeOf, type Principal } from '../core/principal.js';
import { scopeKey } from '../core/scope.js';
import { liveFeedGeneration } from '../domain/vulnerabilities/feed-store.js';
import { COLLECTION_NAMES, type CollectionName, type Store } from '../store/engine.js';

/**
 * Abilities whose answer depends only on their input, the store's collection records and the live vulnerability feed
 * (no other blob, no clock, no child traffic, nothing kept only in memory): their serialised answers may be reused
 * while the store fingerprint is the same. The vulnerability views qualify: a site's matches change only with its record
 * (a sync or an update moves last_sync or updated_at) or with the feed's generation, which the fingerprint holds.
 */
export const STORE_PURE: ReadonlySet<string> = new Set([
  'list-sites-v1',
  'count-sites-v1',
  'list-vulnerabilities-v1',
  'get-site-vulnerabilities-v1',
]);

/** The bound of the answer cache: at most this many answers, this many bytes in all (bodies and keys), none larger than MAX_ENTRY_BYTES. */
export const PAGE_CACHE_ENTRIES = 256;
export const PAGE_CACHE_BYTES = 16 * 1024 * 1024;
export const MAX_ENTRY_BYTES = 1024 * 1024;

/** Headers that are part of the representation (folded into the ETag, kept with a cached answer, left out of a 304). */
const DESCRIBING = ['X-WP-Total', 'X-WP-TotalPages', 'Link'] as const;
/** Headers a door sets that a cached answer sends again. */
const REPLAYED = ['Allow', 'X-Sitefleet-Ignored-Params', ...DESCRIBING] as const;

export interface Representation {
  body: Buffer;
  etag: string;
  headers: Array<[string, string]>;
}

/**
 * Every collection's version and the live vulnerability feed's generation: changes whenever any record changes or
 * another feed goes live, in this process or another.
 */
export function storeFingerprint(store: Store): string {
  // Made again only when some collection changed or another feed went live (a 304 asks for it on every request).
  const changes = store.changes();
  const feed = liveFeedGeneration(store);
  const last = fingerprints.get(store);
  if (last && last.changes === changes && last.feed === feed) return last.value;
  let s = `${feed}:`;
  for (const c of FINGERPRINTED) s += `${store.version(c)}.`;
  fingerprints.set(store, { changes, feed, value: s });
  return s;
}
const fingerprints = new WeakMap<Store, { changes: number; feed: number; value: string }>();

/**
 * Collections no STORE_PURE answer reads, left out of the fingerprint so that writing them keeps the cached answers:
 * the audit log (a refused call or a failed login writes only there), the uptime checks' records (a fleet's monitors
 * write every few seconds), jobs and their progress, deliveries, leases, console sessions and admin links. A pure
 * ability that comes to read one of them must take it out of this list.
 */
export const NOT_PURE_INPUTS: ReadonlySet<CollectionName> = new Set<CollectionName>([
  'audit',
  'audit_head',
  'monitors',
  'monitor_history',
  'incidents',
  'deliveries',
  'leases',
  'jobs',
  'job_chunks',
  'console_sessions',
  'admin_logins',
  'notification_deliveries',
]);
const FINGERPRINTED = COLLECTION_NAMES.filter((c) => !NOT_PURE_INPUTS.has(c));

/** Who is asking, as far as it can change an answer: the principal, its permission level and its scope. */
export function principalKey(p: Principal): string {
  if (p.kind === 'key') return `k${p.id}:${p.permissions}${p.admin ? ':a' : ''}:${scopeKey(scopeOf(p))}`;
  if (p.kind === 'user') return `u${p.id}:${p.role}:${scopeKey(scopeOf(p))}`;
  if (p.kind === 'oauth') return `o:${p.name}:${p.permissions}:${p.toolsets?.join(',') ?? '*'}`;
  return `l:${p.name}:${p.readOnly ? 'ro' : 'rw'}`;
}

/** The representation of a JSON value with the describing headers already set on `res`. */
export function represent(res: Response, value: unknown): Representation {
  const body = Buffer.from(JSON.stringify(value) ?? '');
  const headers: Array<[string, string]> = [];
  const h = createHash('sha1');
  // The scope the answer was made for: two scopes never share an ETag, even for the same bytes.
  const principal = (res.req as Request | undefined)?.principal;
  const scope = principal ? scopeKey(scopeOf(principal)) : '';
  if (scope) h.update(`scope:${scope}\n`);
  for (const name of REPLAYED) {
    const v = res.getHeader(name);
    if (v === undefined) continue;
    headers.push([name, String(v)]);
    h.update(`${name}:${String(v)}\n`);
  }
  h.update(body);
  return { body, headers, etag: `"${h.digest('base64url')}"` };
}

/** Whether an If-None-Match header names this ETag (weak comparison, as RFC 9110 §13.1.2 asks for GET). */
export function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  for (const t of ifNoneMatch.split(',')) {
    const tag = t.trim().replace(/^W\//, '');
    if (tag === etag) return true;
  }
  return false;
}

/** Sends a representation: 304 when the request already holds it, else 200 with the body (none for HEAD). */
export function sendRepresentation(req: Request, res: Response, r: Representation): void {
  for (const [name, value] of r.headers) res.setHeader(name, value);
  res.setHeader('ETag', r.etag);
  res.setHeader('Cache-Control', 'private, no-cache');
  if (matches(req.headers['if-none-match'], r.etag)) {
    for (const name of DESCRIBING) res.removeHeader(name);
    res.statusCode = 304;
    res.end();
    return;
  }
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(r.body.length));
  if (req.method === 'HEAD') res.end();
  else res.end(r.body);
}

/**
 * The fast path of a door for a GET or HEAD that carries nothing beyond its URL, run right after authentication:
 * a cached answer for this principal and URL at the current store fingerprint is sent without body parsing, routing,
 * validation or serialisation. Anything else goes on to the door's routes. `methods`: those the door answers from its
 * GET routes (REST: GET and HEAD; the abilities door refuses HEAD on a run).
 */
export function cachedAnswers(store: Store, answers: AnswerCache, methods: readonly string[]) {
  return (req: Request, res: Response, next: () => void): void => {
    if (!methods.includes(req.method) || hasBody(req) || !answers.entries) return next();
    const hit = answers.get(cacheKey(req), storeFingerprint(store));
    if (!hit) return next();
    sendRepresentation(req, res, hit);
  };
}

/** The cache key of a request: who asks (principal and permission level) and the full URL. */
export function cacheKey(req: Request): string {
  return `${principalKey(req.principal!)} ${req.originalUrl}`;
}

function hasBody(req: Request): boolean {
  const len = req.headers['content-length'];
  return (len !== undefined && len !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** Sends a JSON value as a conditional GET answer. */
export function sendConditional(req: Request, res: Response, value: unknown): void {
  sendRepresentation(req, res, represent(res, value));
}

interface Entry {
  fp: string;
  rep: Representation;
  cost: number;
}

/**
 * Serialised answers, least recently used out first; bounded by PAGE_CACHE_ENTRIES and PAGE_CACHE_BYTES. An answer is
 * sent again only for the store fingerprint it was made at, and a fingerprint that has moved never comes back: when an
 * answer is kept for another fingerprint than the last one kept, every answer of other fingerprints goes. (Kept until
 * pushed out, a fleet written to every few requests held its bound of answers no request could be sent: up to 16 MiB a
 * door.) An answer made at a fingerprint just left (its request began before a write) clears the newer ones: only hits
 * are lost, never a stale answer sent.
 */
export class AnswerCache {
  private readonly map = new Map<string, Entry>();
  private size = 0;
  /** The fingerprint of the last answer kept. */
  private fp = '';

  constructor(
    private readonly maxEntries = PAGE_CACHE_ENTRIES,
    private readonly maxBytes = PAGE_CACHE_BYTES,
  ) {}

  get entries(): number {
    return this.map.size;
  }
  get bytes(): number {
    return this.size;
  }

  get(key: string, fp: string): Representation | undefined {
    const e = this.map.get(key);
    if (!e) return undefined;
    this.map.delete(key);
    if (e.fp !== fp) {
      this.size -= e.cost;
      return undefined;
    }
    this.map.set(key, e);
    return e.rep;
  }

  set(key: string, fp: string, rep: Representation): void {
    // The key (a URL of up to 16 KB) counts too.
    const cost = rep.body.length + key.length;
    if (rep.body.length > MAX_ENTRY_BYTES || cost > this.maxBytes) return;
    if (fp !== this.fp) {
      this.fp = fp;
      for (const [k, e] of this.map) {
        if (e.fp === fp) continue;
        this.map.delete(k);
        this.size -= e.cost;
      }
    }
    const old = this.map.get(key);
    if (old) {
      this.map.delete(key);
      this.size -= old.cost;
    }
    this.map.set(key, { fp, rep, cost });
    this.size += cost;
    for (const [k, e] of this.map) {
      if (this.map.size <= this.maxEntries && this.size <= this.maxBytes) break;
      this.map.delete(k);
      this.size -= e.cost;
    }
  }
}
