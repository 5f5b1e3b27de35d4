// The HTTP server's fast path (issue 19): a GET (or HEAD, on REST) that carries nothing beyond its URL and whose answer
// the door has cached (http/conditional.ts) for this principal, URL and store fingerprint is answered here, before
// express: no router, no body parsers, no route matching, no validation, no serialisation. Everything that guards the
// door still runs here, in the door's order — the throttle, the credentials (and the key's method permission on
// REST) — and anything unusual (no credentials, a refusal, a miss, a body) goes on to express, which answers it as
// it always has (and counts a failed login once, there).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { ServiceError } from '../core/errors.js';
import { keyAllowsMethod, type Principal } from '../core/principal.js';
import type { Services } from '../domain/index.js';
import { accountOf, readPrincipal, requestAddress, type LoginThrottle } from './auth.js';
import { AnswerCache, principalKey, sendRepresentation, storeFingerprint } from './conditional.js';

/** The answer caches of the doors, shared by the doors (which fill them) and the fast path (which reads them). */
export interface DoorCaches {
  rest: AnswerCache;
  abilities: AnswerCache;
}

export function doorCaches(): DoorCaches {
  return { rest: new AnswerCache(), abilities: new AnswerCache() };
}

const MISSING = () => new ServiceError('svc_rest_authentication_error', 'You are not authenticated.', 401);

/**
 * Returns a function that answers a request from a door's cache and returns true, or returns false having touched
 * nothing (then express handles it). `before` runs on an answered request exactly as the app's first middleware would.
 */
export function fastPath(services: Services, caches: DoorCaches, throttle: LoginThrottle, before: (req: Request, res: Response) => void) {
  const { restPrefix, abilitiesPrefix } = services.config;
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    const method = req.method;
    const url = req.url ?? '';
    if (method !== 'GET' && method !== 'HEAD') return false;
    let cache: AnswerCache;
    let rest: boolean;
    if (url.startsWith(`${restPrefix}/`)) {
      cache = caches.rest;
      rest = true;
    } else if (method === 'GET' && url.startsWith(`${abilitiesPrefix}/`)) {
      cache = caches.abilities;
      rest = false;
    } else return false;
    if (!cache.entries) return false;
    const len = req.headers['content-length'];
    if ((len !== undefined && len !== '0') || req.headers['transfer-encoding'] !== undefined) return false;
    const header = req.headers.authorization;
    if (!header) return false;
    // Another process's commits are in memory before anything is read (store.sync is immediate on lowdb; the
    // PostgreSQL engine's needs a round trip: it takes the usual path).
    if (services.store.engine !== 'lowdb') return false;
    if (throttle.waitFor(requestAddress(req, services), accountOf(header))) return false;
    let principal: Principal;
    try {
      principal = readPrincipal(services, header, rest ? ['bearer'] : ['basic', 'bearer'], MISSING);
    } catch {
      return false;
    }
    if (rest && principal.kind === 'key' && !keyAllowsMethod(principal.permissions, method)) return false;
    const hit = cache.get(`${principalKey(principal)} ${url}`, storeFingerprint(services.store));
    if (!hit) return false;
    const q = req as Request;
    q.principal = principal;
    before(q, res as Response);
    sendRepresentation(q, res as Response, hit);
    return true;
  };
}
