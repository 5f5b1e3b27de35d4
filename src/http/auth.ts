// Credentials on HTTP: which schemes each door takes, and the 401 every route answers without them.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ServiceError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import type { Services } from '../services/index.js';
import { sendError } from './respond.js';

export type Scheme = 'bearer' | 'basic';

declare module 'express-serve-static-core' {
  interface Request { principal?: Principal }
}

export function readPrincipal(services: Services, header: string | undefined, schemes: readonly Scheme[], missing: () => ServiceError): Principal {
  if (!header) throw missing();
  const space = header.indexOf(' ');
  const scheme = (space === -1 ? header : header.slice(0, space)).toLowerCase();
  const value = space === -1 ? '' : header.slice(space + 1).trim();
  if (scheme === 'bearer' && schemes.includes('bearer')) {
    services.store.refreshIfStale();
    return services.auth.verifyBearer(value);
  }
  if (scheme === 'basic' && schemes.includes('basic')) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) throw new ServiceError('invalid_username', 'Malformed HTTP Basic credentials.', 401);
    services.store.refreshIfStale();
    return services.auth.verifyBasic(decoded.slice(0, colon), decoded.slice(colon + 1));
  }
  throw missing();
}

/**
 * Failed logins per client address: past `limit` failures in a window, the address waits (429 with
 * Retry-After) before it may try again. Guessing a 144-bit secret is hopeless anyway; this keeps a
 * scanner from filling logs and CPU. One limiter per HTTP server, shared by its doors.
 */
export class LoginThrottle {
  private fails = new Map<string, { count: number; since: number; until: number }>();

  constructor(private readonly limit = 30, private readonly windowMs = 60_000) {}

  /** Seconds the address must still wait, or 0. */
  waitFor(addr: string, now = Date.now()): number {
    const f = this.fails.get(addr);
    return f && f.until > now ? Math.ceil((f.until - now) / 1000) : 0;
  }

  failed(addr: string, now = Date.now()): void {
    let f = this.fails.get(addr);
    if (!f || now - f.since > this.windowMs) f = { count: 0, since: now, until: 0 };
    f.count++;
    // Each failure past the limit doubles the wait, up to fifteen minutes.
    if (f.count > this.limit) f.until = now + Math.min(15 * 60_000, 1000 * 2 ** Math.min(f.count - this.limit, 10));
    this.fails.set(addr, f);
    if (this.fails.size > 10_000) this.fails.clear();
  }

  succeeded(addr: string): void {
    this.fails.delete(addr);
  }
}

/** Middleware: sets req.principal or answers 401 (429 while the address is throttled). Runs before body parsing and routing. */
export function requireAuth(services: Services, schemes: readonly Scheme[], missing: () => ServiceError, throttle?: LoginThrottle): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const addr = req.socket.remoteAddress ?? '';
    const wait = throttle?.waitFor(addr) ?? 0;
    if (wait) {
      res.setHeader('Retry-After', String(wait));
      return sendError(res, new ServiceError('svc_too_many_attempts', `Too many failed logins from this address; retry in ${wait} s.`, 429, { retry_after: wait }));
    }
    try {
      req.principal = readPrincipal(services, req.headers.authorization, schemes, missing);
      if (req.headers.authorization) throttle?.succeeded(addr);
      next();
    } catch (e) {
      if (req.headers.authorization) throttle?.failed(addr);
      if (schemes.includes('bearer') && !schemes.includes('basic')) res.setHeader('WWW-Authenticate', 'Bearer');
      sendError(res, e);
    }
  };
}
