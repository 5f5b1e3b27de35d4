// The web console door: the page shell and its static files, a login that makes a session cookie, one thin JSON
// endpoint that runs any ability through the registry as the session's user, and live job progress as server-sent
// events. No rule lives here: what a user may do is the registry's answer (a viewer's write is refused by it).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import express, { type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import { ServiceError } from '../core/errors.js';
import { refusal, type Principal } from '../core/principal.js';
import type { Registry } from '../core/registry.js';
import { FailureCounter, requestAddress, type LoginThrottle } from '../http/auth.js';
import { bodyErrors, jsonBody, sendError } from '../http/respond.js';
import type { Services } from '../domain/index.js';
import { MODULES } from '../domain/settings.js';
import { NOTIFICATION_EVENTS } from '../store/notification-records.js';
import { annotationMethod, type ModuleName } from '../core/ability.js';
import type { ConsoleSession } from '../domain/console-sessions.js';
import { userPrincipal } from '../domain/auth.js';

/** The files the browser loads. They sit beside the source and ship with the package (package.json "files"). */
export const ASSETS_DIR = fileURLToPath(new URL('../../src/console/assets/', import.meta.url));

export const COOKIE = 'sitefleet_console';
/** Live job streams one user may hold open in one process (whatever their sessions), and the whole process. */
export const MAX_STREAMS_PER_USER = 4;
export const MAX_STREAMS = 200;
/**
 * Successful logins (each a durable write) one user, and one client address, may make in LOGIN_WINDOW_MS per process;
 * past them the login waits (429, Retry-After, doubling) like a failed one. Failed logins have the shared throttle.
 */
export const LOGINS_PER_USER = 20;
export const LOGINS_PER_ADDRESS = 60;
export const LOGIN_WINDOW_MS = 10 * 60_000;
/** How often a job stream reads the job, and how long one stream lasts at most (the browser reconnects). */
const STREAM_POLL_MS = 250;
const STREAM_MAX_MS = 30 * 60_000;
const HEARTBEAT_MS = 15_000;

const SECURITY_HEADERS: Record<string, string> = {
  // Everything comes from this server; no inline script or style, no framing.
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

const LoginBody = z
  .object({
    name: z.string().min(1).max(200),
    password: z.string().min(1).max(200),
  })
  .strict();

const RunBody = z.object({ input: z.unknown().optional() }).strict();

type ConsoleRequest = Request & { consoleSession?: ConsoleSession; consoleSessionToken?: string };

function cookieValue(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function invalidBody(e: z.ZodError): ServiceError {
  const issue = e.issues[0]!;
  const where = issue.path.join('.') || (issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : 'body');
  return new ServiceError('svc_invalid_input', `Invalid ${where}: ${issue.message}`, 400, { params: { [where]: issue.message } });
}

/** The media type of a Content-Type header, without its parameters, lower case. */
const mediaType = (header: string | undefined) => (header ?? '').split(';')[0]!.trim().toLowerCase();

const loginRequired = (expired: boolean) =>
  new ServiceError(
    'svc_console_login_required',
    expired ? 'Your console session has ended; log in again.' : 'Log in to the console first.',
    401,
  );

export interface ConsoleDoor {
  router: express.Router;
  /** Ends the live streams (at shutdown), so that they do not hold the server open. */
  close(): void;
}

/** `base`: the server's public base URL (its scheme says whether the session cookie is Secure). */
export function consoleDoor(services: Services, registry: Registry, throttle: LoginThrottle, base: string): ConsoleDoor {
  const r = express.Router();
  const sessions = services.consoleSessions;
  const streams = new Set<() => void>();
  /** Live streams per user id, in this process. */
  const userStreams = new Map<number, number>();
  // A counter lets `limit` events through and blocks after the next one: LOGINS_PER_… - 1 blocks after the bound.
  const loginsByUser = new FailureCounter(LOGINS_PER_USER - 1, LOGIN_WINDOW_MS);
  const loginsByAddress = new FailureCounter(LOGINS_PER_ADDRESS - 1, LOGIN_WINDOW_MS);
  const secure = base.startsWith('https:');
  const publicOrigin = new URL(base).origin;
  const indexHtml = readFileSync(`${ASSETS_DIR}index.html`);

  const setCookie = (res: Response, value: string, maxAge: number) => {
    res.setHeader(
      'Set-Cookie',
      `${COOKIE}=${value}; Path=/console; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`,
    );
  };

  r.use((_req, res, next) => {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    next();
  });

  // The page shell: the login form and the pages are drawn by the script; no data is in it.
  const shell = (_req: Request, res: Response) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(indexHtml);
  };
  r.get('/', shell);
  r.use(
    '/assets',
    express.static(ASSETS_DIR, { index: false, dotfiles: 'deny', redirect: false, cacheControl: true, maxAge: 0, fallthrough: true }),
  );

  const api = express.Router();
  api.use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });
  // A page elsewhere can post only form encodings and text/plain without asking (CORS): exactly application/json (with
  // the CSRF token below) closes that door. A page on another port of this host or on a sibling subdomain is "same
  // site", so the SameSite cookie lets it through: the login and every write must also come from this very origin.
  api.use((req, _res, next) => {
    const write = req.method !== 'GET' && req.method !== 'HEAD';
    const site = req.headers['sec-fetch-site'];
    if (site === 'cross-site' || (write && site === 'same-site') || (write && !sameOrigin(req.headers.origin, req.headers.host))) {
      return next(new ServiceError('svc_csrf_refused', "Requests to the console from another site's pages are refused.", 403));
    }
    if (write && mediaType(req.headers['content-type']) !== 'application/json') {
      return next(new ServiceError('svc_unsupported_media_type', 'Console requests carry JSON (Content-Type: application/json).', 415));
    }
    next();
  });
  api.use(jsonBody('1mb'));
  api.use(bodyErrors);

  api.post('/login', async (req, res) => {
    const addr = requestAddress(req, services);
    const now = sessions.now();
    const raw: unknown = req.body;
    const name =
      raw && typeof raw === 'object' && typeof (raw as { name?: unknown }).name === 'string' ? (raw as { name: string }).name : '';
    const account = name ? `user:${name.slice(0, 200).toLowerCase()}` : null;
    const failures = throttle.waitFor(addr, account);
    const wait = Math.max(failures, loginsByAddress.waitFor(addr, now), account ? loginsByUser.waitFor(account, now) : 0);
    if (wait) {
      res.setHeader('Retry-After', String(wait));
      const what = failures ? 'Too many failed logins from this address' : 'Too many logins for this user or from this address';
      return sendError(res, new ServiceError('svc_too_many_attempts', `${what}; retry in ${wait} s.`, 429, { retry_after: wait }));
    }
    const body = LoginBody.safeParse(raw ?? {});
    if (!body.success) return sendError(res, invalidBody(body.error));
    let principal: Principal;
    try {
      principal = services.auth.verifyBasic(body.data.name, body.data.password);
    } catch (e) {
      throttle.failed(addr, account);
      const code = e instanceof ServiceError ? e.code : undefined;
      await services.audit.login({ door: 'console', address: addr, account, ok: false, code }).catch(() => {});
      return sendError(res, e);
    }
    if (principal.kind !== 'user') return sendError(res, loginRequired(false));
    // Counted in the same bounded tables as failures are (FailureCounter), but apart from them.
    loginsByAddress.failed(addr, now);
    loginsByUser.failed(account!, now);
    try {
      await services.audit.login({ door: 'console', address: addr, account, ok: true, principal });
      const { token, session } = await sessions.create(principal, cookieValue(req, COOKIE));
      setCookie(res, token, services.config.consoleSessionSeconds);
      res.json(sessionView(principal, session));
    } catch (e) {
      sendError(res, e);
    }
  });

  // Everything below needs a live session; writes need its CSRF token too.
  api.use((req: ConsoleRequest, _res, next) => {
    const token = cookieValue(req, COOKIE);
    const session = sessions.get(token);
    if (!session) return next(loginRequired(token !== undefined));
    const user = session.user;
    // The user as stored now: a changed scope applies to this request.
    req.principal = { ...userPrincipal(user), origin: { door: 'console', address: requestAddress(req, services) } };
    req.consoleSession = session;
    req.consoleSessionToken = token;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      if (!sessions.csrfMatches(token!, req.headers['x-csrf-token'])) {
        return next(new ServiceError('svc_csrf_token_invalid', "The console's CSRF token is missing or wrong; reload the page.", 403));
      }
    }
    next();
  });

  api.get('/session', (req: ConsoleRequest, res) => {
    res.json(sessionView(req.principal!, req.consoleSession!));
  });

  api.post('/logout', async (req: ConsoleRequest, res) => {
    try {
      await sessions.end(req.consoleSessionToken!);
      setCookie(res, '', 0);
      res.json({ logged_out: true });
    } catch (e) {
      sendError(res, e);
    }
  });

  api.post('/run/:name', async (req: ConsoleRequest, res) => {
    const ac = new AbortController();
    res.on('close', () => {
      if (!res.writableEnded) ac.abort();
    });
    try {
      const name = String(req.params.name);
      const a = /^[a-z0-9-]{1,100}$/.test(name) ? registry.get(name) : undefined;
      if (!a) throw new ServiceError('rest_ability_not_found', 'Ability not found.', 404);
      const body = RunBody.safeParse(req.body ?? {});
      if (!body.success) throw invalidBody(body.error);
      res.json(await registry.run(a, body.data.input ?? null, { principal: req.principal!, coerce: false, signal: ac.signal }));
    } catch (e) {
      sendError(res, e);
    }
  });

  // An archived client report's printable page, opened in its own tab: the report's own document with a policy of its
  // own (inline styles and the logo only, no script), served as the session's user through get-client-report-v1.
  api.get('/reports/:id/page', async (req: ConsoleRequest, res) => {
    try {
      const id = Number(req.params.id);
      const a = registry.get('get-client-report-v1');
      if (!a || !/^\d{1,10}$/.test(String(req.params.id))) throw new ServiceError('rest_no_route', 'No such report page.', 404);
      const r = (await registry.run(a, { report_id: id, format: 'page' }, { principal: req.principal!, coerce: false })) as {
        page: string;
      };
      res
        .status(200)
        .set({
          'Content-Type': 'text/html; charset=utf-8',
          'Content-Security-Policy':
            "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; base-uri 'none'; form-action 'none'",
          'Cache-Control': 'no-store',
        })
        .send(r.page);
    } catch (e) {
      sendError(res, e);
    }
  });

  // Live progress of a background job: an event each time its status changes, until it ends.
  api.get('/jobs/:job_id/events', async (req: ConsoleRequest, res) => {
    const session = req.consoleSession!;
    const token = req.consoleSessionToken!;
    const userId = session.user.id;
    const status = registry.get('get-batch-job-status-v1')!;
    const read = () => registry.run(status, { job_id: String(req.params.job_id) }, { principal: req.principal!, coerce: false });
    let first: unknown;
    try {
      first = await read();
      if ((userStreams.get(userId) ?? 0) >= MAX_STREAMS_PER_USER) {
        throw new ServiceError(
          'svc_too_many_streams',
          `A console user follows at most ${MAX_STREAMS_PER_USER} jobs at once; close one.`,
          429,
          { limit: MAX_STREAMS_PER_USER },
        );
      }
      if (streams.size >= MAX_STREAMS)
        throw new ServiceError('svc_too_many_streams', 'Too many live job streams on this server; retry later.', 503);
    } catch (e) {
      return sendError(res, e);
    }
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' });
    // A read in flight may finish after the browser left: never write to a closed stream.
    const write = (text: string) => {
      if (!res.writableEnded && !res.destroyed) res.write(text);
    };
    const send = (event: string, data: unknown) => write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    let last = JSON.stringify(first);
    write('retry: 2000\n\n');
    send('job', first);
    userStreams.set(userId, (userStreams.get(userId) ?? 0) + 1);
    const started = Date.now();
    let beat = Date.now();
    let busy = false;
    const finished = (j: unknown) => ['completed', 'failed'].includes((j as { status?: string }).status ?? '');
    const stop = () => {
      clearInterval(timer);
      if (streams.delete(stop)) {
        const left = (userStreams.get(userId) ?? 1) - 1;
        if (left > 0) userStreams.set(userId, left);
        else userStreams.delete(userId);
      }
      if (!res.writableEnded) res.end();
    };
    const tick = async () => {
      if (busy) return;
      busy = true;
      try {
        if (sessions.get(token)?.id !== session.id) {
          send('expired', { code: 'svc_console_login_required', message: 'Your console session has ended; log in again.' });
          return stop();
        }
        const j = await read();
        const now = JSON.stringify(j);
        if (now !== last) {
          last = now;
          send('job', j);
        }
        if (finished(j)) {
          send('end', j);
          return stop();
        }
        if (Date.now() - started > STREAM_MAX_MS) return stop(); // the browser reconnects with a fresh stream
        if (Date.now() - beat > HEARTBEAT_MS) {
          beat = Date.now();
          write(': keep-alive\n\n');
        }
      } catch (e) {
        const err = e instanceof ServiceError ? e : new ServiceError('svc_internal_error', 'Internal error.', 500);
        send('failure', err.toBody());
        stop();
      } finally {
        busy = false;
      }
    };
    const timer = setInterval(() => void tick(), STREAM_POLL_MS);
    streams.add(stop);
    res.on('close', stop);
    if (finished(first)) {
      send('end', first);
      stop();
    }
  });

  api.use(() => {
    throw new ServiceError('rest_no_route', 'No console route was found matching the URL and request method.', 404);
  });
  api.use(((err, _req, res, _next) => sendError(res, err)) as express.ErrorRequestHandler);

  r.use('/api', api);
  r.use((_req: Request, res: Response, _next: NextFunction) =>
    sendError(res, new ServiceError('rest_no_route', 'No console page was found at this URL.', 404)),
  );

  /** No Origin (a client that is not a browser) or this server's own: its public URL's, or the Host it was asked by. */
  function sameOrigin(origin: string | undefined, host: string | undefined): boolean {
    if (origin === undefined) return true;
    let o: URL;
    try {
      o = new URL(origin);
    } catch {
      return false; // "null" (a sandboxed frame, a data: URL) and anything else that is no origin
    }
    if (o.origin === publicOrigin) return true;
    return (o.protocol === 'http:' || o.protocol === 'https:') && host !== undefined && o.host === host.toLowerCase();
  }

  function sessionView(p: Principal, s: ConsoleSession) {
    const user = p.kind === 'user' ? { name: p.name, role: p.role } : { name: p.name, role: 'viewer' as const };
    return {
      user,
      csrf_token: s.csrf,
      expires_at: new Date(s.expiresAt).toISOString(),
      // What the registry offers, so the pages show only what exists (and, for a viewer, nothing that writes).
      abilities: registry.abilities.map((a) => ({
        name: a.name,
        label: a.label,
        readonly: a.annotations.readonly,
        destructive: a.annotations.destructive,
        admin: a.annotations.admin === true,
        // The one permission rule (core/principal.ts), so a page offers a manager its site actions and nothing else.
        may: refusal(p, a.annotations, annotationMethod(a.annotations)) === null,
        inputs: Object.keys(a.input.shape),
      })),
      modules: Object.fromEntries((Object.keys(MODULES) as ModuleName[]).map((m) => [m, services.settings.moduleOn(m)])),
      /** The events a notification rule may name (the Notifications page lists them). */
      notification_events: NOTIFICATION_EVENTS,
    };
  }

  return {
    router: r,
    close: () => {
      for (const stop of [...streams]) stop();
    },
  };
}
