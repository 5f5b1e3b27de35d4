// The HTTP server: REST v2, abilities v1 and MCP on one port. Every path needs credentials.
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import express from 'express';
import type { Registry } from '../core/registry.js';
import { log, logs } from '../log.js';
import type { Services } from '../domain/index.js';
import { abilitiesRouter } from '../http/abilities-door.js';
import { mcpHttp } from '../http/mcp-http.js';
import { LoginThrottle, requestAddress, requireAuth } from '../http/auth.js';
import { restRouter, noRoute } from '../http/rest-door.js';
import { restRoutes } from '../http/rest-routes.js';
import { withDiscovery } from '../http/openapi.js';
import { sendError } from '../http/respond.js';
import { ServiceError } from '../core/errors.js';
import { consoleDoor } from '../console/door.js';
import { doorCaches, fastPath } from '../http/fast-path.js';

export interface RunningHttp {
  server: HttpServer;
  /** The address it listens on. */
  url: string;
  /** The base of the links the doors give (job status URLs, the abilities door's `_links`): SITEFLEET_PUBLIC_URL, else `url`. */
  base: string;
  /** Stop accepting, let requests in flight finish for up to `graceMs`, then cut what is left. */
  close(graceMs?: number): Promise<void>;
}

export interface HttpOptions {
  allowedHosts?: string[];
  /** The web console at /console (and / redirecting there); on unless false (`serve --no-console`). */
  console?: boolean;
}

/** `base`: the base URL of the links the doors give (they never read it from a request's Host header). */
export function createHttpApp(services: Services, registry: Registry, base: string, opts: HttpOptions = {}) {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'extended');
  app.set('trust proxy', false);

  const every = (req: express.Request, res: express.Response) => everyRequest(req, res, services);
  app.use((req, res, next) => {
    every(req, res);
    // With several processes on one database: see every write acknowledged before this request (a no-op on lowdb).
    services.store.sync().then(() => next(), next);
  });

  const throttle = new LoginThrottle(services.config.loginFailureLimit);
  // OAuth for MCP (--oauth-issuer): the protected-resource metadata is public (RFC 9728), the only routes that answer
  // without credentials. Without an issuer they are not served (no route answers then without credentials).
  const oauth = services.oauth;
  const metadataUrl = oauth.enabled ? `${base}/.well-known/oauth-protected-resource/mcp` : null;
  if (oauth.enabled) {
    oauth.audience ??= `${base}/mcp`;
    app.get(['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp'], (_req, res) => {
      res.setHeader('access-control-allow-origin', '*');
      res.setHeader('cache-control', 'public, max-age=3600');
      res.json(oauth.resourceMetadata());
    });
  }
  const mcp = mcpHttp(services, registry, opts.allowedHosts ?? [], throttle, metadataUrl);
  // Cached answers of the doors; the server's fast path (http/fast-path.ts) sends them before express runs.
  const caches = doorCaches();
  app.use(services.config.abilitiesPrefix, abilitiesRouter(services, registry, base, throttle, caches.abilities));
  app.use(
    services.config.restPrefix,
    restRouter(
      services,
      registry,
      withDiscovery(restRoutes, { restPrefix: services.config.restPrefix, publicUrl: base }),
      base,
      throttle,
      caches.rest,
    ),
  );
  app.use('/mcp', mcp.router);
  const web = opts.console === false ? null : consoleDoor(services, registry, throttle, base);
  // Uploaded packages, for child sites: the signed link is the credential (domain/uploads.ts); anything else is 404.
  services.uploads.publicBase = base;
  app.get('/packages/:token', (req, res) => {
    const file = services.uploads.open(String(req.params.token));
    if (!file) return sendError(res, noRoute());
    res.setHeader('cache-control', 'no-store');
    res.sendFile(file.path, { headers: { 'content-type': 'application/zip' }, dotfiles: 'allow' });
  });
  // "Open WP Admin" links (domain/admin-logins.ts): the one-time token is the credential; used, it redirects the
  // browser to the child's signed login, made now. Unknown, used or expired: 410, and nothing is signed.
  services.adminLogins.publicBase = base;
  app.get('/admin-login/:token', async (req, res) => {
    res.setHeader('cache-control', 'no-store');
    res.setHeader('referrer-policy', 'no-referrer');
    try {
      const to = await services.adminLogins.use(String(req.params.token), requestAddress(req, services));
      if (!to)
        return sendError(
          res,
          new ServiceError(
            'svc_admin_login_link_invalid',
            'This login link was used already, has expired or is unknown: make a new one.',
            410,
          ),
        );
      res.redirect(302, to);
    } catch (e) {
      sendError(res, e);
    }
  });
  if (web) {
    app.use('/console', web.router);
    app.get('/', (_req, res) => res.redirect(302, '/console'));
  }
  // Anything else: credentials first (no path answers without them), then 404.
  app.use(
    requireAuth(
      services,
      ['bearer', 'basic'],
      () => new ServiceError('svc_rest_authentication_error', 'You are not authenticated.', 401),
      throttle,
    ),
  );
  app.use((_req, res) => sendError(res, noRoute()));
  app.use(((err, _req, res, _next) => {
    log('error', 'unhandled', { err: (err as Error).stack ?? String(err) });
    sendError(res, err);
  }) as express.ErrorRequestHandler);
  const cached = fastPath(services, caches, throttle, every);
  return { app, mcp, web, fast: (req: IncomingMessage, res: ServerResponse) => cached(req, res) || mcp.fast(req, res, every) };
}

/** What every request gets first: its log line when it ends, and nosniff. */
function everyRequest(req: express.Request, res: express.Response, services: Services): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  // The level is read as the request arrives (a level set later does not log requests already in flight).
  if (!logs('info')) return;
  const start = process.hrtime.bigint();
  res.on('finish', () => {
    log('info', 'request', {
      method: req.method,
      // The whole path: inside a router `req.path` has lost the door's prefix (`/sites` for `/wp-json/svc/v2/sites`).
      path: new URL(req.originalUrl ?? req.url, 'http://x').pathname,
      status: res.statusCode,
      client: requestAddress(req, services),
      ms: Number(process.hrtime.bigint() - start) / 1e6,
      who: req.principal && 'name' in req.principal ? req.principal.name : undefined,
    });
  });
}

export async function listen(
  services: Services,
  registry: Registry,
  host: string,
  port: number,
  opts: HttpOptions = {},
): Promise<RunningHttp> {
  // The doors are built once the address is known (port 0 picks one), so that they hold their base URL from the
  // start and nothing is rewritten later (the config is frozen). They are built in the same turn as 'listening' is
  // answered (only microtasks between), so no request is read before their handler is attached.
  const server = createServer({ maxHeaderSize: 16 * 1024 });
  // Every open connection, so that close() can also cut those that never sent a byte (a browser's or undici's spare
  // connection): Node counts them as busy, not idle, and server.close() would wait for them the whole grace period.
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // Requests the HTTP parser refuses (a URL or headers over 16 KB, garbage) still get the error envelope.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const [status, code, message] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'svc_request_header_too_large', 'The request line or headers are larger than 16 KB.']
        : [400, 'svc_bad_request', 'Malformed HTTP request.'];
    const body = JSON.stringify({ code, message, data: { status } });
    socket.end(
      `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 5 * 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address();
  const p = typeof addr === 'object' && addr ? addr.port : port;
  const h = host.includes(':') ? `[${host}]` : host;
  const url = `http://${h}:${p}`;
  const base = services.config.publicUrl ?? url;
  let built: ReturnType<typeof createHttpApp>;
  try {
    built = createHttpApp(services, registry, base, opts);
  } catch (e) {
    server.close();
    throw e;
  }
  const { app, mcp, web, fast } = built;
  server.on('request', (req, res) => {
    if (!fast(req, res)) app(req, res);
  });
  const closeIdle = () => {
    server.closeIdleConnections();
    for (const socket of sockets) if (socket.bytesRead === 0) socket.destroy();
  };
  return {
    server,
    url,
    base,
    close: async (graceMs = 10_000) => {
      const closed = new Promise<void>((resolve) => {
        server.close(() => resolve());
        closeIdle();
      });
      // Keep-alive connections turn idle as their last response ends: close them as they do.
      const idle = setInterval(closeIdle, 25);
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      web?.close();
      await mcp.close();
      await closed;
      clearInterval(idle);
      clearTimeout(timer);
    },
  };
}
