// MCP over streamable HTTP at /mcp: Bearer keys, one session per initialize, Host and Origin checks
// against DNS rebinding, a 4 MB body limit, a cap on live sessions and reaping of idle ones.
import { randomUUID } from 'node:crypto';
import express, { type Request, type Response } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ServiceError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import type { Registry } from '../core/registry.js';
import { buildMcpServer, type ToolFilter } from '../mcp/server.js';
import type { Services } from '../domain/index.js';
import { requireAuth, type LoginThrottle } from './auth.js';
import { bodyErrors, jsonBody, sendError } from './respond.js';

const MAX_SESSIONS = 500;
/** One credential cannot take every session slot. */
const MAX_SESSIONS_PER_KEY = 100;
const IDLE_MS = 30 * 60_000;

interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  principal: Principal;
  /** The session's tool filter: its principal is the latest request's (a key's new permissions apply at once). */
  filter: ToolFilter;
  seen: number;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

function rpcError(res: Response, status: number, message: string): void {
  res.status(status).json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });
}

export interface McpHttp {
  router: express.Router;
  close(): Promise<void>;
  sessions(): number;
}

export function mcpHttp(services: Services, registry: Registry, allowedHosts: readonly string[], throttle?: LoginThrottle): McpHttp {
  const sessions = new Map<string, Session>();
  const r = express.Router();
  const hosts = new Set([...LOOPBACK, ...allowedHosts.map((h) => h.toLowerCase())]);

  const reaper = setInterval(() => {
    const cutoff = Date.now() - IDLE_MS;
    for (const [id, s] of sessions) if (s.seen < cutoff) void s.transport.close().finally(() => sessions.delete(id));
  }, 60_000);
  reaper.unref();

  // DNS rebinding: a browser page must not reach us through a name that resolves to this machine.
  r.use((req, res, next) => {
    const host = (req.headers.host ?? '').toLowerCase().replace(/:\d+$/, '');
    if (!hosts.has(host) && !hosts.has('*'))
      return rpcError(res, 403, 'Host not allowed (DNS rebinding protection): add it with --allowed-hosts.');
    const origin = req.headers.origin;
    if (origin) {
      let oh = '';
      try {
        oh = new URL(origin).hostname.toLowerCase();
      } catch {
        /* not a URL */
      }
      if (!hosts.has('*') && !hosts.has(oh) && !hosts.has(`[${oh}]`)) return rpcError(res, 403, `Origin not allowed: ${origin}`);
    }
    next();
  });
  r.use(
    requireAuth(services, ['bearer'], () => new ServiceError('svc_rest_authentication_error', 'You are not authenticated.', 401), throttle),
  );
  r.use(jsonBody('4mb'));
  r.use(bodyErrors);

  const samePrincipal = (a: Principal, b: Principal) => a.kind === b.kind && ('id' in a ? a.id : a.name) === ('id' in b ? b.id : b.name);

  r.all('/', async (req: Request, res: Response) => {
    try {
      const sid = req.headers['mcp-session-id'];
      if (typeof sid === 'string') {
        const s = sessions.get(sid);
        if (!s || !samePrincipal(s.principal, req.principal!)) return rpcError(res, 404, 'Session not found.');
        s.seen = Date.now();
        s.principal = s.filter.principal = req.principal!;
        return await s.transport.handleRequest(req, res, req.body);
      }
      if (req.method !== 'POST' || !isInitializeRequest(req.body)) {
        return rpcError(res, 400, 'Bad request: no session. Send initialize first.');
      }
      const principal = req.principal!;
      const mine = [...sessions.values()].filter((s) => samePrincipal(s.principal, principal)).length;
      if (sessions.size >= MAX_SESSIONS || mine >= MAX_SESSIONS_PER_KEY)
        return rpcError(res, 503, 'Too many MCP sessions; close some and retry.');
      const filter: ToolFilter = { principal };
      const server = buildMcpServer(registry, filter, services);
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, { transport, server, principal, filter, seen: Date.now() });
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch (e) {
      if (!res.headersSent) sendError(res, e);
    }
  });

  return {
    router: r,
    sessions: () => sessions.size,
    close: async () => {
      clearInterval(reaper);
      await Promise.all([...sessions.values()].map((s) => s.transport.close().catch(() => {})));
      sessions.clear();
    },
  };
}
