// Credentials on HTTP: which schemes each door takes, and the 401 every route answers without them.
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { clientAddress } from '../core/client-address.js';
import { ServiceError } from '../core/errors.js';
import type { CallOrigin, Principal } from '../core/principal.js';
import type { Services } from '../domain/index.js';
import { TokenRefusal } from '../domain/oauth.js';
import { sendError } from './respond.js';

export type Scheme = 'bearer' | 'basic';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

export function readPrincipal(
  services: Services,
  header: string | undefined,
  schemes: readonly Scheme[],
  missing: () => ServiceError,
): Principal {
  if (!header) throw missing();
  const space = header.indexOf(' ');
  const scheme = (space === -1 ? header : header.slice(0, space)).toLowerCase();
  const value = space === -1 ? '' : header.slice(space + 1).trim();
  if (scheme === 'bearer' && schemes.includes('bearer')) {
    return services.auth.verifyBearer(value);
  }
  if (scheme === 'basic' && schemes.includes('basic')) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) throw new ServiceError('invalid_username', 'Malformed HTTP Basic credentials.', 401);
    return services.auth.verifyBasic(decoded.slice(0, colon), decoded.slice(colon + 1));
  }
  const e = missing();
  // Credentials of a kind this door does not take: say so, rather than "not authenticated" alone.
  if (scheme === 'basic' || scheme === 'bearer') {
    const takes = schemes
      .map((x) => (x === 'bearer' ? 'a Bearer API key (Authorization: Bearer sf_…)' : 'HTTP Basic credentials'))
      .join(' or ');
    const sent = scheme === 'basic' ? 'HTTP Basic credentials (a user name and password)' : 'a Bearer token';
    throw new ServiceError(e.code, `${e.message} This API takes ${takes}, not ${sent}.`, e.status, e.data);
  }
  throw e;
}

/** Failures of one key (an address or an account) in a window, and how long it must wait. */
type Failures = { count: number; since: number; until: number };

/**
 * Failed logins counted per key within a window; past `limit` failures the key waits (doubling, up to 15 min).
 * A success does not reset the count (an attacker holding one valid key could otherwise clear it at will). The
 * table is bounded at `maxEntries`: past it, keys that are not blocked are forgotten, oldest first; a key that is
 * blocked is never forgotten while its wait lasts (a full table of blocked keys stops tracking new ones).
 */
export class FailureCounter {
  private map = new Map<string, Failures>();

  constructor(
    private readonly limit: number,
    private readonly windowMs = 60_000,
    private readonly maxEntries = 10_000,
  ) {}

  waitFor(key: string, now = Date.now()): number {
    const f = this.map.get(key);
    return f && f.until > now ? Math.ceil((f.until - now) / 1000) : 0;
  }

  failed(key: string, now = Date.now()): void {
    let f = this.map.get(key);
    if (f)
      this.map.delete(key); // re-inserted below: the map's order is least recently failed first
    else if (this.map.size >= this.maxEntries && !this.makeRoom(now)) return;
    if (!f || (now - f.since > this.windowMs && f.until <= now)) f = { count: 0, since: now, until: 0 };
    f.count++;
    if (f.count > this.limit) f.until = now + Math.min(15 * 60_000, 1000 * 2 ** Math.min(f.count - this.limit, 10));
    this.map.set(key, f);
  }

  get size(): number {
    return this.map.size;
  }

  /** Forgets expired keys, then the oldest unblocked ones, down to 90 % of the bound; false if all are blocked. */
  private makeRoom(now: number): boolean {
    const target = Math.floor(this.maxEntries * 0.9);
    for (const [k, f] of this.map) if (f.until <= now && now - f.since > this.windowMs) this.map.delete(k);
    for (const [k, f] of this.map) {
      if (this.map.size <= target) break;
      if (f.until <= now) this.map.delete(k);
    }
    return this.map.size < this.maxEntries;
  }
}

/**
 * The failed-login throttle of one HTTP server, shared by its doors: failures are counted per client address and
 * per account (API key id or user name) independently, and independently of successes. An address past the limit
 * waits (429 with Retry-After) for any credential; an account past ten times the limit (failures from any number of
 * addresses) waits too. Guessing a 144-bit secret is hopeless anyway; this keeps a scanner from filling logs and CPU.
 */
export class LoginThrottle {
  readonly addresses: FailureCounter;
  readonly accounts: FailureCounter;

  constructor(limit = 30, windowMs = 60_000) {
    this.addresses = new FailureCounter(limit, windowMs);
    this.accounts = new FailureCounter(limit * 10, windowMs);
  }

  /** Seconds the caller must still wait, or 0. */
  waitFor(addr: string, account: string | null, now = Date.now()): number {
    return Math.max(this.addresses.waitFor(addr, now), account ? this.accounts.waitFor(account, now) : 0);
  }

  failed(addr: string, account: string | null, now = Date.now()): void {
    this.addresses.failed(addr, now);
    if (account) this.accounts.failed(account, now);
  }
}

/** The address a request counts as coming from: the throttle's key and the request log's `client` (--trust-proxy). */
export function requestAddress(req: IncomingMessage, services: Services): string {
  return clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], services.config.trustProxy);
}

/** Which door a request is for, by its path: the audit log's `door`. */
function doorOf(req: Request, services: Services): CallOrigin['door'] {
  const path = req.originalUrl;
  if (path.startsWith(services.config.restPrefix)) return 'rest';
  if (path.startsWith(services.config.abilitiesPrefix)) return 'abilities';
  if (path === '/mcp' || path.startsWith('/mcp/') || path.startsWith('/mcp?')) return 'mcp';
  return 'http';
}

/** The account a credential names, before it is checked: "key:<key id>" or "user:<name>". */
export function accountOf(header: string | undefined): string | null {
  if (!header) return null;
  const bearer = /^bearer\s+sf_([0-9a-f]{12})_/i.exec(header);
  if (bearer) return `key:${bearer[1]}`;
  const basic = /^basic\s+(\S+)/i.exec(header);
  if (!basic) return null;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon > 0 ? `user:${decoded.slice(0, Math.min(colon, 200)).toLowerCase()}` : null;
}

/** Middleware: sets req.principal or answers 401 (429 while the address is throttled). Runs before body parsing and routing. */
function tooMany(res: Response, wait: number): void {
  res.setHeader('Retry-After', String(wait));
  sendError(
    res,
    new ServiceError('svc_too_many_attempts', `Too many failed logins from this address; retry in ${wait} s.`, 429, {
      retry_after: wait,
    }),
  );
}

export function requireAuth(
  services: Services,
  schemes: readonly Scheme[],
  missing: () => ServiceError,
  throttle?: LoginThrottle,
  /** The WWW-Authenticate of a refusal on a Bearer-only door; default "Bearer". */
  challenge: (e: unknown, given: boolean) => string = () => 'Bearer',
): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const addr = requestAddress(req, services);
    const account = throttle ? accountOf(req.headers.authorization) : null;
    const wait = throttle?.waitFor(addr, account) ?? 0;
    if (wait) return tooMany(res, wait);
    const door = doorOf(req, services);
    try {
      req.principal = { ...readPrincipal(services, req.headers.authorization, schemes, missing), origin: { door, address: addr } };
      next();
    } catch (e) {
      if (req.headers.authorization) {
        throttle?.failed(addr, account);
        const code = e instanceof ServiceError ? e.code : undefined;
        void services.audit
          .login({ door, address: addr, account: account ?? accountOf(req.headers.authorization), ok: false, code })
          .catch(() => {});
      }
      if (schemes.includes('bearer') && !schemes.includes('basic'))
        res.setHeader('WWW-Authenticate', challenge(e, req.headers.authorization !== undefined));
      sendError(res, e);
    }
  };
}

/** A quoted-string value of a challenge parameter: no quote or backslash can end it early. */
const quoted = (s: string) => `"${s.replace(/["\\\r\n]/g, ' ')}"`;

/**
 * The credentials of MCP over HTTP: API keys as every door takes them, and, with --oauth-issuer, OAuth access tokens
 * (domain/oauth.ts). With OAuth on, a refusal's WWW-Authenticate names the protected-resource metadata (RFC 9728 §5.1)
 * and, for a token, what was wrong with it (RFC 6750 §3). A refused token counts as a failed login of its address.
 */
export function requireMcpAuth(services: Services, throttle: LoginThrottle | undefined, metadataUrl: string | null): RequestHandler {
  const missing = () => new ServiceError('svc_rest_authentication_error', 'You are not authenticated.', 401);
  if (!metadataUrl || !services.oauth.enabled) return requireAuth(services, ['bearer'], missing, throttle);
  const challenge = (e: unknown, given: boolean): string => {
    let h = `Bearer resource_metadata=${quoted(metadataUrl)}`;
    if (e instanceof TokenRefusal) {
      h += `, error="${e.oauthError}", error_description=${quoted(e.message)}`;
      if (e.scope) h += `, scope=${quoted(e.scope)}`;
    } else if (given) h += ', error="invalid_token"';
    return h;
  };
  const keys = requireAuth(services, ['bearer'], missing, throttle, challenge);
  return (req: Request, res: Response, next: NextFunction) => {
    const token = /^bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!token || token.startsWith('sf_')) return keys(req, res, next);
    const addr = requestAddress(req, services);
    const wait = throttle?.waitFor(addr, null) ?? 0;
    if (wait) return tooMany(res, wait);
    services.oauth.verify(token).then(
      (p) => {
        req.principal = { ...p, origin: { door: 'mcp', address: addr } };
        next();
      },
      (e: unknown) => {
        if (!(e instanceof TokenRefusal && e.oauthError === 'insufficient_scope')) throttle?.failed(addr, null);
        const code = e instanceof ServiceError ? e.code : undefined;
        void services.audit.login({ door: 'mcp', address: addr, account: null, ok: false, code }).catch(() => {});
        res.setHeader('WWW-Authenticate', challenge(e, true));
        sendError(res, e);
      },
    );
  };
}
