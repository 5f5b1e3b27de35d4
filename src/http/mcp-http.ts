// MCP over streamable HTTP at /mcp: Bearer keys, one session per initialize, Host and Origin checks
// against DNS rebinding, a 4 MB body limit, a cap on live sessions and reaping of idle ones.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Request, type Response } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  SUPPORTED_PROTOCOL_VERSIONS,
  isInitializeRequest,
  isJSONRPCRequest,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ServiceError } from '../core/errors.js';
import { TOOLSETS, type Toolset } from '../core/ability.js';
import type { Principal } from '../core/principal.js';
import type { Registry } from '../core/registry.js';
import { buildMcpServer, directToolCall, needsStream, type ToolFilter } from '../mcp/server.js';
import type { Services } from '../domain/index.js';
import { accountOf, readPrincipal, requestAddress, requireMcpAuth, type LoginThrottle } from './auth.js';
import { bodyErrors, jsonBody, sendError } from './respond.js';

const MAX_SESSIONS = 500;
/** One credential cannot take every session slot. */
const MAX_SESSIONS_PER_KEY = 100;
const IDLE_MS = 30 * 60_000;

/**
 * The session's transport: the SDK's streamable HTTP transport, plus plain JSON answers for requests that need no
 * stream. The SDK chooses JSON or an event stream once per transport (enableJsonResponse); we choose per request
 * (see needsStream): a plain answer skips the event-stream framing and the conversion of Node's request and response
 * to web ones, which were most of a call's cost.
 */
class SessionTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (e: Error) => void;
  /** Requests answered as plain JSON, by id: who takes the answer (a message from the SDK, JSON text from directToolCall). */
  private readonly plain = new Map<RequestId, (m: JSONRPCMessage | string) => void>();
  /** Calls run by directToolCall, by id: what cancels them (the SDK's own calls it cancels itself). */
  private readonly direct = new Map<RequestId, AbortController>();

  constructor(readonly sdk: StreamableHTTPServerTransport) {
    sdk.onmessage = (m, extra) => {
      if ('method' in m && m.method === 'notifications/cancelled' && !('id' in m)) this.cancel(m.params);
      this.onmessage?.(m, extra);
    };
    sdk.onerror = (e) => this.onerror?.(e);
    sdk.onclose = () => {
      for (const [id, answer] of this.plain) answer({ jsonrpc: '2.0', id, error: { code: -32000, message: 'Session closed.' } });
      this.plain.clear();
      // As the SDK's Protocol aborts its calls in flight when its transport closes.
      for (const ac of this.direct.values()) ac.abort();
      this.direct.clear();
      this.onclose?.();
    };
  }
  /** notifications/cancelled for a direct call, read as the SDK reads it (a request id; a reason, if any, text). */
  private cancel(params: Record<string, unknown> | undefined): void {
    const id = params?.requestId;
    const reason = params?.reason;
    if ((typeof id === 'string' || typeof id === 'number') && (reason === undefined || typeof reason === 'string'))
      this.direct.get(id)?.abort(reason);
  }
  get sessionId(): string | undefined {
    return this.sdk.sessionId;
  }
  start(): Promise<void> {
    return this.sdk.start();
  }
  close(): Promise<void> {
    return this.sdk.close();
  }
  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (('result' in message || 'error' in message) && message.id !== undefined) {
      const answer = this.plain.get(message.id);
      if (answer) {
        this.plain.delete(message.id);
        answer(message);
        return Promise.resolve();
      }
    }
    const related = options?.relatedRequestId;
    if (related !== undefined && this.plain.has(related)) {
      // needsStream said nothing would be sent before this answer; a request to the client cannot wait for one.
      if ('method' in message && 'id' in message)
        return Promise.reject(new Error('This call is answered as plain JSON and cannot ask the client.'));
      return Promise.resolve();
    }
    return this.sdk.send(message, options);
  }
  /**
   * Runs one request, through `direct` when given (directToolCall) else the SDK's dispatch, and resolves with its
   * answer. A request cancelled by the client gets none (neither sends anything for it): its entry goes when the HTTP
   * exchange closes.
   */
  answer(
    request: JSONRPCRequest,
    extra: MessageExtraInfo,
    res: ServerResponse,
    direct?: (signal: AbortSignal) => Promise<string | null>,
  ): Promise<JSONRPCMessage | string> {
    const id = request.id;
    return new Promise((resolve) => {
      this.plain.set(id, resolve);
      res.once('close', () => {
        if (this.plain.get(id) === resolve) this.plain.delete(id);
      });
      if (!direct) return void this.onmessage?.(request, extra);
      const ac = new AbortController();
      this.direct.set(id, ac);
      direct(ac.signal)
        .then((text) => {
          if (this.direct.get(id) === ac) this.direct.delete(id);
          if (text === null || this.plain.get(id) !== resolve) return;
          this.plain.delete(id);
          resolve(text);
        })
        .catch((e: unknown) => this.onerror?.(e instanceof Error ? e : new Error(String(e))));
    });
  }
  /** Requests waiting for a plain answer, and direct calls in flight (for tests: none is left behind). */
  waiting(): number {
    return this.plain.size + this.direct.size;
  }
  handleRequest(req: Request, res: Response, body: unknown): Promise<void> {
    return this.sdk.handleRequest(req, res, body);
  }
}

/**
 * A request of an open session that can be answered as plain JSON: one JSON-RPC request (not a batch, not a
 * notification), headers the SDK transport would accept, and nothing to send before its answer.
 */
function plainAnswerable(req: Request, server: Server, direct: boolean): req is Request & { body: JSONRPCRequest } {
  // A request directToolCall takes is one isJSONRPCRequest takes (without its cost).
  if (req.method !== 'POST' || (!direct && !isJSONRPCRequest(req.body))) return false;
  // A second initialize: the SDK transport refuses it (400, "Server already initialized").
  if (req.body.method === 'initialize') return false;
  const accept = req.headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
  const version = req.headers['mcp-protocol-version'];
  if (typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return false;
  return !needsStream(server, req.body.method, req.body.params);
}

interface Session {
  transport: SessionTransport;
  server: Server;
  principal: Principal;
  /** The session's tool filter: its principal is the latest request's (a key's new permissions apply at once). */
  filter: ToolFilter;
  seen: number;
}

/** A session follows its credential's current rights, narrowed as the session chose (X-MCP-Readonly). */
function refreshPrincipal(s: Session, p: Principal): void {
  s.principal = p;
  s.filter.principal = s.filter.readOnly ? readOnlyPrincipal(p) : p;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

function rpcError(res: Response, status: number, message: string): void {
  res.status(status).json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });
}

/**
 * What a client chose for its session at initialize: `X-MCP-Toolsets: sites,updates` and `X-MCP-Readonly: true`. Both
 * only narrow what the caller's key or role allows. An unknown toolset or a flag that is not clearly true or false is
 * a 400 naming the header.
 */
export function sessionChoice(req: Request): { toolsets?: Toolset[]; readOnly: boolean; outputSchemas: boolean } {
  const bad = (header: string, message: string) => new ServiceError('svc_invalid_input', `${header}: ${message}`, 400, { header });
  const rawSets = req.headers['x-mcp-toolsets'];
  let toolsets: Toolset[] | undefined;
  if (rawSets !== undefined) {
    const names = String(rawSets)
      .split(',')
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean);
    if (!names.length) throw bad('X-MCP-Toolsets', `name at least one toolset (${TOOLSETS.join(', ')}).`);
    const unknown = names.find((t) => !(TOOLSETS as readonly string[]).includes(t));
    if (unknown) throw bad('X-MCP-Toolsets', `unknown toolset "${unknown}". Toolsets: ${TOOLSETS.join(', ')}.`);
    toolsets = [...new Set(names)] as Toolset[];
  }
  const flag = (header: string): boolean => {
    const raw = req.headers[header.toLowerCase()];
    if (raw === undefined) return false;
    const v = String(raw).trim().toLowerCase();
    if (v === 'true' || v === '1') return true;
    if (v !== 'false' && v !== '0') throw bad(header, `"${String(raw)}" is not true or false.`);
    return false;
  };
  return { toolsets, readOnly: flag('X-MCP-Readonly'), outputSchemas: flag('X-MCP-Output-Schemas') };
}

/** The caller as a read-only session runs: no write and no outgoing call whatever its key or role allows. */
function readOnlyPrincipal(p: Principal): Principal {
  if (p.kind === 'key' || p.kind === 'oauth') return p.permissions === 'read_write' ? { ...p, permissions: 'read' } : p;
  if (p.kind === 'user') return { ...p, role: 'viewer' };
  return { ...p, readOnly: true };
}

/** A body the server reads itself on the fast path: JSON, no content coding, its length given and within the limit. */
const MAX_BODY = 4 * 1024 * 1024;

/** A request's body (its length is bounded by the caller); rejects if the request ends early. */
function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let done = false;
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => {
      done = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    req.once('error', reject);
    req.once('close', () => {
      if (!done) reject(new Error('The request ended before its body.'));
    });
  });
}

/** JSON as express.json reads it (strict, a BOM dropped): an object or an array, anything else a SyntaxError. */
function strictJson(text: string): unknown {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const first = /^[ \t\n\r]*(.)/.exec(body)?.[1];
  if (first !== '{' && first !== '[') throw new SyntaxError('Not a JSON object or array.');
  return JSON.parse(body);
}

export interface McpHttp {
  router: express.Router;
  /**
   * Answers a plain request of an open session before express runs (see plainAnswerable) and returns true, or returns
   * false having touched nothing. `before` runs as the app's first middleware would.
   */
  fast(req: IncomingMessage, res: ServerResponse, before: (req: Request, res: Response) => void): boolean;
  close(): Promise<void>;
  sessions(): number;
}

export function mcpHttp(
  services: Services,
  registry: Registry,
  allowedHosts: readonly string[],
  throttle?: LoginThrottle,
  /** With OAuth on: the protected-resource metadata URL the 401's WWW-Authenticate names. */
  oauthMetadataUrl: string | null = null,
): McpHttp {
  const sessions = new Map<string, Session>();
  const r = express.Router();
  const hosts = new Set([...LOOPBACK, ...allowedHosts.map((h) => h.toLowerCase())]);

  const reaper = setInterval(() => {
    const cutoff = Date.now() - IDLE_MS;
    for (const [id, s] of sessions) if (s.seen < cutoff) void s.transport.close().finally(() => sessions.delete(id));
  }, 60_000);
  reaper.unref();

  // DNS rebinding: a browser page must not reach us through a name that resolves to this machine.
  const hostRefusal = (req: IncomingMessage): string | null => {
    const host = (req.headers.host ?? '').toLowerCase().replace(/:\d+$/, '');
    if (!hosts.has(host) && !hosts.has('*')) return 'Host not allowed (DNS rebinding protection): add it with --allowed-hosts.';
    const origin = req.headers.origin;
    if (origin) {
      let oh = '';
      try {
        oh = new URL(origin).hostname.toLowerCase();
      } catch {
        /* not a URL */
      }
      if (!hosts.has('*') && !hosts.has(oh) && !hosts.has(`[${oh}]`)) return `Origin not allowed: ${origin}`;
    }
    return null;
  };
  r.use((req, res, next) => {
    const refused = hostRefusal(req);
    if (refused) return rpcError(res, 403, refused);
    next();
  });
  r.use(requireMcpAuth(services, throttle, oauthMetadataUrl));
  r.use(jsonBody('4mb'));
  r.use(bodyErrors);

  const samePrincipal = (a: Principal, b: Principal) => a.kind === b.kind && ('id' in a ? a.id : a.name) === ('id' in b ? b.id : b.name);

  r.all('/', async (req: Request, res: Response) => {
    try {
      const sid = req.headers['mcp-session-id'];
      if (typeof sid === 'string') {
        const s = sessions.get(sid);
        if (!s || !samePrincipal(s.principal, req.principal!)) return rpcError(res, 404, 'Session not found.');
        return await inSession(req, res, s, sid);
      }
      if (req.method !== 'POST' || !isInitializeRequest(req.body)) {
        return rpcError(res, 400, 'Bad request: no session. Send initialize first.');
      }
      const principal = req.principal!;
      const mine = [...sessions.values()].filter((s) => samePrincipal(s.principal, principal)).length;
      if (sessions.size >= MAX_SESSIONS || mine >= MAX_SESSIONS_PER_KEY)
        return rpcError(res, 503, 'Too many MCP sessions; close some and retry.');
      const choice = sessionChoice(req);
      const filter: ToolFilter = {
        principal: choice.readOnly ? readOnlyPrincipal(principal) : principal,
        toolsets: choice.toolsets,
        readOnly: choice.readOnly,
        outputSchemas: choice.outputSchemas,
      };
      const server = buildMcpServer(registry, filter, services);
      const transport = new SessionTransport(
        new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            sessions.set(id, { transport, server, principal, filter, seen: Date.now() });
          },
        }),
      );
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch (e) {
      if (!res.headersSent) sendError(res, e);
    }
  });

  /**
   * A request of an open session, from either path: the session follows the request's principal (a key's changed
   * permissions or its revocation apply at once), then a plain JSON answer when the call needs no stream, else the
   * SDK transport's.
   */
  const inSession = async (req: Request, res: Response, s: Session, sid: string): Promise<void> => {
    s.seen = Date.now();
    refreshPrincipal(s, req.principal!);
    const direct = req.method === 'POST' ? directToolCall(s.server, req.body) : undefined;
    if (plainAnswerable(req, s.server, direct !== undefined)) {
      const answer = await s.transport.answer(req.body, { requestInfo: { headers: req.headers } }, res, direct);
      const text = typeof answer === 'string' ? answer : JSON.stringify(answer);
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': sid, 'content-length': Buffer.byteLength(text) });
      return void res.end(text);
    }
    await s.transport.handleRequest(req, res, req.body);
  };

  /** Answers a request the fast path has taken on: plainly when it can, else through the SDK transport. */
  const answerTaken = async (req: Request, res: Response, s: Session, sid: string) => {
    const raw = await readBody(req);
    try {
      req.body = strictJson(raw.toString('utf8'));
    } catch {
      const body = new ServiceError('rest_invalid_json', 'Invalid JSON body passed.', 400, {
        json_error_code: 4,
        json_error_message: 'Syntax error',
      });
      res.writeHead(400, { 'content-type': 'application/json; charset=utf-8' });
      return void res.end(JSON.stringify(body.toBody()));
    }
    await inSession(req, res, s, sid);
  };

  const fast: McpHttp['fast'] = (req, res, before) => {
    // Only what the router would answer the same way: POST /mcp of a live session, JSON of a known length, no content
    // coding, an allowed Host and Origin, valid credentials of the session's own caller, no throttle in force. The
    // PostgreSQL engine's store.sync needs a round trip: it takes the usual path.
    if (req.method !== 'POST' || (req.url !== '/mcp' && req.url !== '/mcp/')) return false;
    const sid = req.headers['mcp-session-id'];
    const s = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (!s || services.store.engine !== 'lowdb') return false;
    const type = (req.headers['content-type'] ?? '').toLowerCase().replace(/\s+/g, '');
    if (type !== 'application/json' && type !== 'application/json;charset=utf-8') return false;
    const len = Number(req.headers['content-length']);
    if (!(len > 0 && len <= MAX_BODY) || req.headers['transfer-encoding'] !== undefined || req.headers['content-encoding'] !== undefined)
      return false;
    if (hostRefusal(req)) return false;
    const header = req.headers.authorization;
    const address = requestAddress(req, services);
    if (!header || throttle?.waitFor(address, accountOf(header))) return false;
    let principal: Principal;
    try {
      principal = readPrincipal(
        services,
        header,
        ['bearer'],
        () => new ServiceError('svc_rest_authentication_error', 'You are not authenticated.', 401),
      );
    } catch {
      return false;
    }
    if (!samePrincipal(s.principal, principal)) return false;
    const q = req as Request;
    // As requireAuth sets it: the audit log's door and address.
    q.principal = { ...principal, origin: { door: 'mcp', address } };
    before(q, res as Response);
    answerTaken(q, res as Response, s, sid as string).catch((e: unknown) => {
      if (!res.headersSent) sendError(res as Response, e);
      else res.destroy();
    });
    return true;
  };

  return {
    router: r,
    fast,
    sessions: () => sessions.size,
    close: async () => {
      clearInterval(reaper);
      await Promise.all([...sessions.values()].map((s) => s.transport.close().catch(() => {})));
      sessions.clear();
    },
  };
}
