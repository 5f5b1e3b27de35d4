// The MCP server, built from the registry: one tool per ability, plus resources (the fleet, a site, a
// job). Transports (stdio, streamable HTTP) live apart and only connect this same server to a pipe.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  CompleteRequestSchema,
  ElicitResultSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ErrorCode,
  ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
  type CallToolRequest,
  type CallToolResult,
  type LoggingLevel,
  type RequestId,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { TOOLSETS, annotationMethod, OPT_IN_TOOLSETS, type Ability } from '../core/ability.js';
import { ServiceError, toServiceError } from '../core/errors.js';
import { refusal, type Principal } from '../core/principal.js';
import { jsonSchemaOf, type Registry } from '../core/registry.js';
import { wpBoolean } from '../core/input.js';
import type { Services } from '../domain/index.js';
import { VERSION } from '../version.js';
import { compactInputSchema, toolDescription } from './compact.js';
import { queuedJob } from '../core/results.js';
import { PROMPTS, UPDATE_TYPES, promptMessages, type ArgKind, type PromptDef, type Resolved } from './prompts.js';
import { completeValue } from './complete.js';

/**
 * A JSON-RPC error whose message goes on the wire as written. The SDK's McpError writes "MCP error <code>: " into its
 * own message, and a client's McpError adds it again ("MCP error -32602: MCP error -32602: …").
 */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}
/** JSON-RPC code of an unknown resource (the MCP specification's "resource not found"). */
const RESOURCE_NOT_FOUND = -32002;

/** Jobs one MCP session may follow at once (resources/subscribe). */
export const MAX_SUBSCRIPTIONS = 100;
const jobUri = (jobId: string) => `sitefleet://jobs/${encodeURIComponent(jobId)}`;

/** A queued result's pointer on this door: a link to its job resource (no HTTP URL: over stdio none may answer). */
function jobLink(result: Record<string, unknown>): CallToolResult['content'] {
  const jobId = queuedJob(result);
  if (!jobId) return [];
  return [
    {
      type: 'resource_link',
      uri: jobUri(jobId),
      name: jobId,
      title: 'Background job',
      mimeType: 'application/json',
      description: 'Read for its progress; subscribe to hear when it moves.',
    },
  ];
}
/** Downtime incidents: a subscriber hears when one opens or closes (in this or another process on the data dir). */
export const INCIDENTS_URI = 'sitefleet://incidents';

export const INSTRUCTIONS = [
  'sitefleet manages a fleet of WordPress child sites from one dashboard.',
  'Sites are named by numeric id or by domain (site_id_or_domain, e.g. 12 or "example.com"; site_ids_or_domains is a list of them). Tags group sites; a site may belong to a client, named by id or e-mail (client_id_or_email).',
  'Lists are paged: page (from 1, the default) and per_page (at most 100); total counts every match. include / exclude take IDs.',
  'get-site-* tools read what each site reported at its last sync (sync-sites-v1 refreshes it); list-users-v1 and list-posts-v1 ask the sites live.',
  'The connection administrator is the WordPress user of a child site this dashboard connects as.',
  'Wherever a tool takes them, groups are tag IDs (or names) and clients are client IDs: their sites.',
  'User and post tools pick sites with websites (IDs or domains), groups and clients, added up: disconnected and suspended sites come back in skipped[], values that name nothing in unknown[].',
  'A site that fails in a call over several sites is reported in errors[] and does not fail the call.',
  "Plugin and theme actions take the slugs get-site-plugins-v1 / get-site-themes-v1 list; a slug that fails is an errors[] entry with its code, and the stored lists follow the site's answer.",
  'A cost applies to its sites, to every site carrying one of its groups (tags) and to every site of its clients.',
  'A site is connected, disconnected (its last contact failed or it was disconnected) or suspended (left out of syncs).',
  'Read tools are safe to call at any time. Destructive tools need confirm=true; call them with dry_run=true first to show the user what would change (clients with elicitation are asked directly).',
  'Update tools: types empty = all four; tags (IDs or names) and clients (IDs) select sites too; dry_run lists exactly what would change; results are per item (updated, errors, skipped, rolled_back). safe (default: the dashboard setting, on) probes each site before and after each item and rolls back an item that breaks it; an unhealthy site is skipped unless force=true.',
  'Uptime: list-monitors-v1 says which sites are down; subscribe to sitefleet://incidents to hear of incidents opening and closing.',
  'Batches over 200 sites become background jobs: the result links the resource sitefleet://jobs/{job_id} (read or subscribe to follow it; or get-batch-job-status-v1).',
  'Errors come back as isError results whose structuredContent is {code, message, data:{status}}.',
].join('\n');

export interface ToolFilter {
  principal: Principal;
  toolsets?: readonly string[];
  readOnly?: boolean;
  /** Opt-in: tools carry their output schemas, and error results only their text (see typedToolOf). */
  outputSchemas?: boolean;
}

/** Which tools a caller sees: toolsets, read-only mode, the caller's key or role, and switched-off modules. */
export function visible(a: Ability, f: ToolFilter, services?: Pick<Services, 'settings'>): boolean {
  if (f.toolsets ? !f.toolsets.includes(a.toolset) : OPT_IN_TOOLSETS.includes(a.toolset)) return false;
  if (f.readOnly && !a.annotations.readonly) return false;
  if (refusal(f.principal, a.annotations, annotationMethod(a.annotations), a)) return false;
  if (a.module && services && !services.settings.moduleOn(a.module)) return false;
  return true;
}

/** Characters of a dry-run preview put to the user at most (a fleet-wide update preview can list 1,000 items). */
const MAX_PREVIEW_CHARS = 20_000;
function previewText(preview: unknown): string {
  const text = JSON.stringify(preview, null, 2);
  return text.length <= MAX_PREVIEW_CHARS
    ? text
    : `${text.slice(0, MAX_PREVIEW_CHARS)}\n… (preview cut at ${MAX_PREVIEW_CHARS.toLocaleString('en')} characters; the counts above cover everything)`;
}

const toolCache = new WeakMap<Ability, Tool>();

/** The four MCP hints, always all given (a client should not have to know the specification's defaults). */
function hints(a: Ability): Tool['annotations'] {
  const { readonly, destructive, idempotent, openWorld } = a.annotations;
  return { readOnlyHint: readonly, destructiveHint: destructive, idempotentHint: idempotent, openWorldHint: openWorld };
}

/**
 * An ability as the MCP tool list serves it (also the docs/tools-list.json snapshot). No outputSchema: results carry
 * structuredContent and the same JSON as text; the output schemas (schemas/, the abilities door) would more than
 * double the list an assistant pays for on every conversation.
 */
export function toolOf(a: Ability): Tool {
  let tool = toolCache.get(a);
  if (!tool) {
    tool = {
      name: a.name,
      title: a.label,
      description: toolDescription(a.description),
      inputSchema: compactInputSchema(jsonSchemaOf(a.input, 'input')) as Tool['inputSchema'],
      annotations: hints(a),
    };
    toolCache.set(a, tool);
  }
  return tool;
}

const typedCache = new WeakMap<Ability, Tool>();

/**
 * The tool with its output schema, for clients that asked for typed results (`--output-schemas`,
 * `X-MCP-Output-Schemas: true`): about twice the list's size, so never by default.
 */
export function typedToolOf(a: Ability): Tool {
  let tool = typedCache.get(a);
  if (!tool) {
    tool = { ...toolOf(a), outputSchema: compactInputSchema(jsonSchemaOf(a.output, 'output')) as Tool['outputSchema'] };
    typedCache.set(a, tool);
  }
  return tool;
}

const LEVELS: LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/**
 * One watcher per fleet (per Services: one per `serve` process, several where a process holds several, as tests and
 * the demo do) for the module switches (they live in the store, so `sitefleet modules` in another process counts):
 * servers subscribe to hear that their tool list changed. A watcher shared by the whole process followed the first
 * fleet that asked, and the servers of every other fleet never heard of theirs.
 */
const moduleWatchers = new WeakMap<Services, { listeners: Set<() => void>; timer: NodeJS.Timeout }>();
function watchModules(services: Services, onChange: () => void): () => void {
  let w = moduleWatchers.get(services);
  if (!w) {
    const listeners = new Set<() => void>();
    let last = JSON.stringify(services.settings.get().modules);
    const timer = setInterval(() => {
      const now = JSON.stringify(services.settings.get().modules);
      if (now !== last) {
        last = now;
        for (const l of listeners) l();
      }
    }, 500);
    timer.unref();
    w = { listeners, timer };
    moduleWatchers.set(services, w);
  }
  const watcher = w;
  watcher.listeners.add(onChange);
  return () => {
    watcher.listeners.delete(onChange);
    if (!watcher.listeners.size && moduleWatchers.get(services) === watcher) {
      clearInterval(watcher.timer);
      moduleWatchers.delete(services);
    }
  };
}

interface JobStatus {
  status: string;
  processed: number;
}

/** The server's icon in clients that show one: a small SVG (a stack of three sites), inline so it needs no host. */
const ICON = {
  src: `data:image/svg+xml;base64,${Buffer.from(
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="12" fill="#1d4ed8"/>' +
      '<g fill="#fff"><rect x="14" y="14" width="36" height="9" rx="2"/><rect x="14" y="28" width="36" height="9" rx="2"/>' +
      '<rect x="14" y="42" width="36" height="9" rx="2"/></g></svg>',
  ).toString('base64')}`,
  mimeType: 'image/svg+xml',
  sizes: ['any'],
};

/** Per server: whether a request could send anything before its answer (see needsStream). */
const streamNeeds = new WeakMap<Server, (method: string, params: Record<string, unknown> | undefined) => boolean>();

/**
 * Does this request need an event stream, or can it be answered as plain JSON? A stream only when something may go
 * to the client before the answer: progress (a progressToken), log lines (the client asked with logging/setLevel), or
 * a question to the person (elicitation, for a tool that asks before acting, from a client that can be asked).
 */
export function needsStream(server: Server, method: string, params: Record<string, unknown> | undefined): boolean {
  const meta = params?._meta as { progressToken?: unknown } | undefined;
  if (meta?.progressToken !== undefined) return true;
  return streamNeeds.get(server)?.(method, params) ?? true;
}

/** What a tools/call handler uses of the SDK's request context. */
type CallExtra = Pick<RequestHandlerExtra<ServerRequest, ServerNotification>, 'signal' | 'sendNotification' | 'sendRequest'>;
type ToolCall = (req: CallToolRequest, extra: CallExtra) => Promise<CallToolResult>;
/** Per server: its tools/call handler, for directToolCall. */
const toolCalls = new WeakMap<Server, ToolCall>();
/** A result's structuredContent as the JSON text its content already carries (directToolCall writes it once). */
const structuredText = new WeakMap<CallToolResult, string>();

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A tools/call the SDK would dispatch as it is and that needs nothing of its dispatch: a JSON-RPC request exactly as its
 * (strict) schema takes it, whose params its CallToolRequest schema takes, with no task, no related task and no
 * progress token. Anything else is left to the SDK, which answers it or refuses it in its own words.
 */
function plainToolCall(m: unknown): m is CallToolRequest & { jsonrpc: '2.0'; id: RequestId } {
  if (!isRecord(m) || m.jsonrpc !== '2.0' || m.method !== 'tools/call') return false;
  if (typeof m.id !== 'string' && !Number.isSafeInteger(m.id)) return false;
  for (const k in m) if (k !== 'jsonrpc' && k !== 'id' && k !== 'method' && k !== 'params') return false;
  const p = m.params;
  if (!isRecord(p) || typeof p.name !== 'string' || p.task !== undefined) return false;
  if (p.arguments !== undefined && !isRecord(p.arguments)) return false;
  const meta = p._meta;
  return meta === undefined || (isRecord(meta) && meta.progressToken === undefined && meta[RELATED_TASK_META_KEY] === undefined);
}

/** The result check the SDK's Server makes of every tools/call result, made only when ours could fail it. */
function checkedResult(result: CallToolResult): CallToolResult {
  if (Array.isArray(result.content) && (result.structuredContent === undefined || isRecord(result.structuredContent))) return result;
  const v = CallToolResultSchema.safeParse(result);
  if (!v.success) throw new McpError(ErrorCode.InvalidParams, `Invalid tools/call result: ${v.error.message}`);
  return v.data;
}

/** A tools/call answer as JSON text, writing the structured result once: the text content holds the same JSON. */
function answerText(id: RequestId, result: CallToolResult): string {
  const text = structuredText.get(result);
  if (text === undefined) return JSON.stringify({ result, jsonrpc: '2.0', id });
  const { structuredContent: _, ...rest } = result;
  return `{"result":${JSON.stringify(rest).slice(0, -1)},"structuredContent":${text}},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`;
}

/** The SDK's JSON-RPC error answer for a handler that threw (shared/protocol.ts _onrequest). */
function errorText(id: RequestId, e: unknown): string {
  const err = e as { code?: unknown; message?: string; data?: unknown };
  const code = Number.isSafeInteger(err.code) ? (err.code as number) : ErrorCode.InternalError;
  const error = { code, message: err.message ?? 'Internal error', ...(err.data !== undefined && { data: err.data }) };
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

/**
 * A tools/call that needs no stream (the caller checked needsStream), answered as the SDK's dispatch answers it but
 * without it: its JSON-RPC type checks, its three schema parses of the request and one of the result were most of a
 * plain call's cost. The same handler runs, with the signal given (the caller aborts it on notifications/cancelled and
 * when the session closes); it sends nothing to the client and cannot ask it anything. Resolves with the answer's
 * JSON text, or null once the call was cancelled (the SDK answers nothing then either). Undefined for a request it does
 * not take as it is (see plainToolCall), which then goes the SDK's way.
 */
export function directToolCall(server: Server, message: unknown): ((signal: AbortSignal) => Promise<string | null>) | undefined {
  const call = toolCalls.get(server);
  if (!call || !plainToolCall(message)) return undefined;
  return (signal) => {
    const extra: CallExtra = {
      signal,
      sendNotification: () => Promise.resolve(),
      sendRequest: () => Promise.reject(new Error('This call is answered as plain JSON and cannot ask the client.')),
    };
    return call(message, extra)
      .then(checkedResult)
      .then(
        (result) => (signal.aborted ? null : answerText(message.id, result)),
        (e: unknown) => (signal.aborted ? null : errorText(message.id, e)),
      );
  };
}

/** Per-site resources: a template each, read through the tool named (so the same permissions apply). */
const SITE_PARTS = [
  {
    part: 'plugins',
    tool: 'get-site-plugins-v1',
    title: "A site's plugins",
    description: 'Plugins as of the last sync, 100 per page (?page=2).',
  },
  {
    part: 'themes',
    tool: 'get-site-themes-v1',
    title: "A site's themes",
    description: 'Themes and the active one as of the last sync, 100 per page.',
  },
  {
    part: 'updates',
    tool: 'get-site-updates-v1',
    title: "A site's pending updates",
    description: 'Pending core, plugin, theme and translation updates, and the ignored ones.',
  },
] as const;

/** Characters of one prompt argument at most. */
export const MAX_PROMPT_ARG = 500;

export function buildMcpServer(registry: Registry, filter: ToolFilter, services?: Services): Server {
  const server = new Server(
    { name: 'sitefleet', version: VERSION, title: 'sitefleet: WordPress fleet manager', icons: [ICON] },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        completions: {},
        logging: {},
      },
      instructions: INSTRUCTIONS,
    },
  );
  // No log notification until the client asks for them with logging/setLevel: a proxy that takes the first event of a
  // call's stream as its reply would otherwise show a log line instead of the result.
  let minLevel = Infinity;
  // Job subscriptions of this session: job id → the status last sent. One timer polls them all while any is open.
  const subscriptions = new Map<string, string>();
  let pollTimer: NodeJS.Timeout | null = null;
  const stopWatching = services
    ? watchModules(services, () => {
        // A module's tools leave the list, and with them the prompts that need them and their toolset's help resource.
        void server.sendToolListChanged().catch(() => {});
        void server.sendResourceListChanged().catch(() => {});
        void server.sendPromptListChanged().catch(() => {});
      })
    : () => {};
  let incidentTimer: NodeJS.Timeout | null = null;
  /** The tools of one toolset this session sees (a help resource is listed when there is at least one). */
  const toolsetAbilities = (t: string) => registry.abilities.filter((a) => a.toolset === t && visible(a, filter, services));
  const helpText = (t: string) =>
    [
      `# The ${t} tools`,
      '',
      ...toolsetAbilities(t).map((a) => {
        const { readonly, destructive } = a.annotations;
        const kind = readonly ? 'reads' : destructive ? 'deletes or cannot be undone: confirm=true, dry_run=true first' : 'changes';
        return `- \`${a.name}\` — ${a.label} (${kind}). ${toolDescription(a.description)}`;
      }),
      '',
      'Resources: sitefleet://sites (the fleet), sitefleet://sites/{id} and its /plugins, /themes, /updates, sitefleet://jobs/{job_id}, sitefleet://incidents.',
    ].join('\n');
  server.onclose = () => {
    stopWatching();
    if (pollTimer) clearInterval(pollTimer);
    if (incidentTimer) clearInterval(incidentTimer);
    subscriptions.clear();
  };

  const run = (name: string, input: unknown, extra?: { signal?: AbortSignal }) => {
    const a = registry.get(name)!;
    return registry.run(a, input, { principal: filter.principal, coerce: false, signal: extra?.signal });
  };

  /** This session may call the tool (its toolsets, read-only choice, key or role, modules). */
  const can = (name: string) => {
    const a = registry.get(name);
    return !!a && visible(a, filter, services);
  };
  /** The caller may run the tool at all (key or role, modules), whatever toolsets the session chose: reads behind resources. */
  const may = (name: string) => {
    const a = registry.get(name);
    return !!a && visible(a, { principal: filter.principal }, services);
  };

  streamNeeds.set(server, (method, params) => {
    if (method !== 'tools/call') return false;
    if (minLevel !== Infinity) return true;
    const a = typeof params?.name === 'string' ? registry.get(params.name) : undefined;
    const args = (params?.arguments ?? {}) as Record<string, unknown>;
    // The same test as the call's own before it asks the person (see CallToolRequestSchema below).
    return (
      !!a &&
      (a.annotations.destructive || !!a.confirmPreview) &&
      args.confirm !== true &&
      args.dry_run !== true &&
      !!server.getClientCapabilities()?.elicitation
    );
  });

  server.setRequestHandler(SetLevelRequestSchema, (req) => {
    minLevel = LEVELS.indexOf(req.params.level);
    return {};
  });

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: registry.abilities.filter((a) => visible(a, filter, services)).map((a) => (filter.outputSchemas ? typedToolOf(a) : toolOf(a))),
  }));

  const callTool: ToolCall = async (req, extra) => {
    const a = registry.get(req.params.name);
    if (!a || !visible(a, filter, services)) throw new RpcError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
    const token = req.params._meta?.progressToken;
    // Request-scoped log lines, on the request's own stream.
    const say = (level: LoggingLevel, data: unknown) => {
      if (LEVELS.indexOf(level) < minLevel) return;
      void extra.sendNotification({ method: 'notifications/message', params: { level, logger: a.name, data } }).catch(() => {});
    };
    let args = (req.params.arguments ?? {}) as Record<string, unknown>;
    try {
      // Confirmation by elicitation: a destructive call without confirm (and not a dry run) from a client
      // that can ask its user gets the dry-run preview put to the person; only "accept" goes ahead.
      // Some others (an update run over several sites) are asked about when their preview says so.
      const asks = a.annotations.destructive || !!a.confirmPreview;
      const preview =
        asks && wpBoolean(args.confirm) !== true && wpBoolean(args.dry_run) !== true && server.getClientCapabilities()?.elicitation
          ? await registry.run(a, { ...args, dry_run: true }, { principal: filter.principal, coerce: false, signal: extra.signal })
          : undefined;
      if (preview !== undefined && (a.annotations.destructive || a.confirmPreview!(preview))) {
        const answer = await extra.sendRequest(
          {
            method: 'elicitation/create',
            params: {
              message: `${a.label}: ${a.annotations.destructive ? 'this cannot be undone' : 'this changes several sites'}. Preview of what would change:\n${previewText(preview)}\nProceed?`,
              requestedSchema: {
                type: 'object',
                properties: { confirm: { type: 'boolean', title: 'Yes, do it', description: 'Confirm the deletion.' } },
                required: ['confirm'],
              },
            },
          },
          ElicitResultSchema,
        );
        if (answer.action !== 'accept' || (answer.content as { confirm?: unknown } | undefined)?.confirm === false) {
          throw new ServiceError('svc_confirmation_declined', `The user did not confirm ${a.name}; nothing was changed.`, 400, {
            action: answer.action,
          });
        }
        args = { ...args, confirm: true };
      }
      say('debug', { event: 'start', tool: a.name });
      const result = (await registry.run(a, args, {
        principal: filter.principal,
        coerce: false,
        signal: extra.signal,
        progress: async (p) => {
          if (p.message && !p.message.endsWith(': ok')) say('warning', p.message);
          if (token === undefined) return;
          await extra
            .sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: p.done, total: p.total, ...(p.message ? { message: p.message } : {}) },
            })
            .catch(() => {});
        },
      })) as Record<string, unknown>;
      if (extra.signal.aborted) say('notice', { event: 'cancelled', not_processed: result.not_processed ?? [] });
      // The SDK client dispatches notifications a microtask late but responses at once: a last progress
      // notification read in the same chunk as the result would find its handler gone. A short pause
      // puts them in separate reads.
      if (token !== undefined) await new Promise((r) => setTimeout(r, 15));
      const text = JSON.stringify(result);
      const out: CallToolResult = { content: [{ type: 'text', text }, ...jobLink(result)], structuredContent: result };
      structuredText.set(out, text);
      return out;
    } catch (e) {
      // The error is the result; it is not also sent as a log line.
      const body = toServiceError(e).toBody();
      const text = JSON.stringify(body);
      // With output schemas, structuredContent must fit the tool's: an error is then its JSON text only.
      if (filter.outputSchemas) return { isError: true, content: [{ type: 'text', text }] };
      const out: CallToolResult = { isError: true, content: [{ type: 'text', text }], structuredContent: body };
      structuredText.set(out, text);
      return out;
    }
  };
  server.setRequestHandler(CallToolRequestSchema, callTool);
  toolCalls.set(server, callTool);

  // Resources: read through the same abilities, so the same permissions apply.
  const readAbility = async (name: string, input: unknown): Promise<unknown> => {
    try {
      return await run(name, input);
    } catch (e) {
      const err = toServiceError(e);
      throw new RpcError(
        err.status === 404 ? RESOURCE_NOT_FOUND : err.status < 500 ? ErrorCode.InvalidParams : ErrorCode.InternalError,
        err.message,
        err.toBody(),
      );
    }
  };

  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: [
      {
        uri: 'sitefleet://sites',
        name: 'sites',
        title: 'The fleet',
        description: 'Every managed site (id, url, name, status), 100 per page: sitefleet://sites?page=2 for more.',
        mimeType: 'application/json',
      },
      {
        uri: INCIDENTS_URI,
        name: 'incidents',
        title: 'Downtime incidents',
        description: 'Open incidents and the 50 latest; subscribe to hear when one opens or closes.',
        mimeType: 'application/json',
      },
      ...TOOLSETS.filter((t) => toolsetAbilities(t).length).map((t) => ({
        uri: `sitefleet://help/${t}`,
        name: `help-${t}`,
        title: `Help: the ${t} tools`,
        description: `What the ${t} tools do, which only read and which change or delete, and the resources that go with them.`,
        mimeType: 'text/markdown',
      })),
    ],
  }));

  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: 'sitefleet://sites/{id}',
        name: 'site',
        title: 'A site',
        description: 'One site with its stats (id or domain).',
        mimeType: 'application/json',
      },
      {
        uriTemplate: 'sitefleet://jobs/{job_id}',
        name: 'job',
        title: 'A background job',
        description: 'Progress of a batch job; subscribe to hear when it moves.',
        mimeType: 'application/json',
      },
      ...SITE_PARTS.filter((p) => may(p.tool)).map((p) => ({
        uriTemplate: `sitefleet://sites/{id}/${p.part}`,
        name: `site-${p.part}`,
        title: p.title,
        description: p.description,
        mimeType: 'application/json',
      })),
    ],
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
    const uri = req.params.uri;
    if (uri === INCIDENTS_URI) {
      const [open, latest] = await Promise.all([
        readAbility('list-incidents-v1', { state: 'open', per_page: 100 }),
        readAbility('list-incidents-v1', { per_page: 50 }),
      ]);
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify({ open, latest }) }] };
    }
    const help = /^sitefleet:\/\/help\/([a-z]+)$/.exec(uri);
    if (help && toolsetAbilities(help[1]!).length) return { contents: [{ uri, mimeType: 'text/markdown', text: helpText(help[1]!) }] };
    const part = /^sitefleet:\/\/sites\/([^/?]+)\/(plugins|themes|updates)(?:\?page=(\d+))?$/.exec(uri);
    if (part) {
      const p = SITE_PARTS.find((x) => x.part === part[2])!;
      const site = decodeURIComponent(part[1]!);
      const input =
        p.part === 'updates' ? { site_id_or_domain: site } : { site_id_or_domain: site, page: Number(part[3] ?? 1), per_page: 100 };
      if (p.part === 'updates' && part[3]) throw new RpcError(RESOURCE_NOT_FOUND, `Unknown resource: ${uri}`, { uri });
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(await readAbility(p.tool, input)) }] };
    }
    const m = /^sitefleet:\/\/(sites|jobs)(?:\/([^/?]+))?(?:\?page=(\d+))?$/.exec(uri);
    let body: unknown;
    if (m?.[1] === 'sites' && !m[2]) body = await readAbility('list-sites-v1', { page: Number(m[3] ?? 1), per_page: 100 });
    else if (m?.[1] === 'sites' && m[2])
      body = await readAbility('get-site-v1', { site_id_or_domain: decodeURIComponent(m[2]), include_stats: true });
    else if (m?.[1] === 'jobs' && m[2] && !m[3]) body = await readAbility('get-batch-job-status-v1', { job_id: decodeURIComponent(m[2]) });
    else throw new RpcError(RESOURCE_NOT_FOUND, `Unknown resource: ${uri}`, { uri });
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(body) }] };
  });

  // Prompts: listed when the session can use their core tools; arguments resolved through the abilities.
  const promptFor = (name: string): PromptDef | undefined => {
    const p = PROMPTS.find((x) => x.name === name);
    return p && p.needs.every(can) ? p : undefined;
  };
  server.setRequestHandler(ListPromptsRequestSchema, () => ({
    prompts: PROMPTS.filter((p) => p.needs.every(can)).map((p) => ({
      name: p.name,
      title: p.title,
      description: p.description,
      arguments: p.arguments.map(({ name, description, required }) => ({ name, description, required: !!required })),
    })),
  }));

  /** An argument that names nothing the caller may see is an invalid parameter, named in the message. */
  const argError = (name: string, e: unknown): never => {
    throw new RpcError(ErrorCode.InvalidParams, `Argument ${name}: ${toServiceError(e).message}`, toServiceError(e).toBody());
  };
  const resolveArgs = async (p: PromptDef, given: Record<string, string>): Promise<Resolved> => {
    const r: Resolved = { text: {} };
    for (const key of Object.keys(given)) {
      if (!p.arguments.some((a) => a.name === key)) throw new RpcError(ErrorCode.InvalidParams, `Unknown argument for ${p.name}: ${key}`);
    }
    for (const arg of p.arguments) {
      const value = given[arg.name]?.trim() ?? '';
      if (!value) {
        if (arg.required) throw new RpcError(ErrorCode.InvalidParams, `Missing required argument for ${p.name}: ${arg.name}`);
        continue;
      }
      if (value.length > MAX_PROMPT_ARG) {
        throw new RpcError(ErrorCode.InvalidParams, `Argument ${arg.name} is longer than ${MAX_PROMPT_ARG} characters.`);
      }
      try {
        await resolveArg(arg.kind, arg.name, value, r);
      } catch (e) {
        if (e instanceof RpcError) throw e;
        argError(arg.name, e);
      }
    }
    return r;
  };
  const resolveArg = async (kind: ArgKind, name: string, value: string, r: Resolved): Promise<void> => {
    switch (kind) {
      case 'site': {
        const s = (await run('get-site-v1', { site_id_or_domain: value })) as { id: number; url: string; name: string };
        r.site = { id: s.id, url: s.url, name: s.name };
        return;
      }
      case 'tag': {
        if (/^\d+$/.test(value)) {
          const t = (await run('get-tag-v1', { tag_id: Number(value) })) as { id: number; name: string };
          r.tag = { id: t.id, name: t.name };
          return;
        }
        const list = (await run('list-tags-v1', { search: value, per_page: 100 })) as { items: Array<{ id: number; name: string }> };
        const t = list.items.find((x) => x.name.toLowerCase() === value.toLowerCase());
        if (!t) throw new RpcError(ErrorCode.InvalidParams, `Argument ${name}: no tag named "${value}".`);
        r.tag = { id: t.id, name: t.name };
        return;
      }
      case 'client': {
        const c = (await run('get-client-v1', { client_id_or_email: value })) as { id: number; name: string };
        r.client = { id: c.id, name: c.name };
        return;
      }
      case 'plugin': {
        if (!r.site) throw new RpcError(ErrorCode.InvalidParams, `Argument ${name} needs the site argument too.`);
        const list = (await run('get-site-plugins-v1', { site_id_or_domain: r.site.id, search: value, per_page: 100 })) as {
          plugins: Array<{ slug: string }>;
        };
        if (!list.plugins.some((x) => x.slug === value))
          throw new RpcError(ErrorCode.InvalidParams, `Argument ${name}: ${r.site.name} has no plugin ${value}.`);
        r.plugin = value;
        return;
      }
      case 'types': {
        const types = value
          .split(',')
          .map((x) => x.trim().toLowerCase())
          .filter(Boolean);
        const bad = types.find((t) => !(UPDATE_TYPES as readonly string[]).includes(t));
        if (bad) throw new RpcError(ErrorCode.InvalidParams, `Argument ${name}: "${bad}" is not one of ${UPDATE_TYPES.join(', ')}.`);
        r.types = [...new Set(types)];
        return;
      }
      case 'url': {
        let u: URL | null = null;
        try {
          u = new URL(value);
        } catch {
          /* refused below */
        }
        if (!u || (u.protocol !== 'https:' && u.protocol !== 'http:'))
          throw new RpcError(ErrorCode.InvalidParams, `Argument ${name}: "${value}" is not an http(s) address.`);
        r.url = u.href;
        return;
      }
      default:
        r.text[name] = value;
    }
  };
  server.setRequestHandler(GetPromptRequestSchema, async (req) => {
    const p = promptFor(req.params.name);
    if (!p) throw new RpcError(ErrorCode.InvalidParams, `Unknown prompt: ${req.params.name}`);
    const r = await resolveArgs(p, req.params.arguments ?? {});
    return { description: p.description, messages: promptMessages(p, r, can) };
  });

  // Completions of prompt arguments and template variables, limited to what the caller may read.
  server.setRequestHandler(CompleteRequestSchema, async (req) => {
    const { ref, argument } = req.params;
    const none = { completion: { values: [], hasMore: false } };
    if (!services) return none;
    let kind: ArgKind | undefined;
    if (ref.type === 'ref/prompt') kind = promptFor(ref.name)?.arguments.find((a) => a.name === argument.name)?.kind;
    else if (ref.uri.startsWith('sitefleet://sites/{id}') && argument.name === 'id') kind = 'site';
    else if (ref.uri === 'sitefleet://jobs/{job_id}' && argument.name === 'job_id') kind = 'job';
    if (!kind) return none;
    // In the caller's scope (as the session's principal is now): nothing it could not read is suggested.
    const k = kind;
    return {
      completion: await registry.within(filter.principal, () =>
        completeValue(services, k, argument.value, req.params.context?.arguments ?? {}, may),
      ),
    };
  });

  const pollJobs = async () => {
    for (const [jobId, last] of subscriptions) {
      let s: JobStatus;
      try {
        s = await (run('get-batch-job-status-v1', { job_id: jobId }) as Promise<JobStatus>);
      } catch {
        subscriptions.delete(jobId); // expired or removed: nothing more will happen to it
        continue;
      }
      const now = JSON.stringify(s);
      if (now === last || !subscriptions.has(jobId)) continue;
      subscriptions.set(jobId, now);
      void server.sendResourceUpdated({ uri: jobUri(jobId) }).catch(() => {});
      if (s.status === 'completed' || s.status === 'failed') subscriptions.delete(jobId);
    }
    if (!subscriptions.size && pollTimer) {
      clearInterval(pollTimer);
      pollTimer = null;
    }
  };

  // Incidents: a digest of (id, end) of the newest ones, recomputed only when the incidents collection changed.
  const incidentDigest = () => {
    let d = '';
    // Only the incidents the session's principal may read: another site's incident must not wake this subscriber.
    for (const i of registry.within(filter.principal, () => services!.monitors.incidents()).slice(0, 200))
      d += `${i.id}:${i.ended_at ?? ''};`;
    return d;
  };
  const subscribeIncidents = async () => {
    if (!services) throw new RpcError(ErrorCode.InvalidParams, 'Incident subscriptions need a server with services.');
    await readAbility('list-incidents-v1', { per_page: 1 }); // the caller may read them
    if (incidentTimer) return {};
    let version = services.store.version('incidents');
    let digest = incidentDigest();
    incidentTimer = setInterval(() => {
      const v = services.store.version('incidents');
      if (v === version) return;
      version = v;
      const d = incidentDigest();
      if (d === digest) return; // a down run counted one more failed check: no incident opened or closed
      digest = d;
      void server.sendResourceUpdated({ uri: INCIDENTS_URI }).catch(() => {});
    }, 250);
    incidentTimer.unref();
    return {};
  };

  server.setRequestHandler(SubscribeRequestSchema, async (req) => {
    const uri = req.params.uri;
    if (uri === INCIDENTS_URI) return subscribeIncidents();
    const m = /^sitefleet:\/\/jobs\/([^/?]+)$/.exec(uri);
    if (!m)
      throw new RpcError(
        ErrorCode.InvalidParams,
        `Only ${INCIDENTS_URI} and job resources (sitefleet://jobs/{job_id}) can be subscribed to: ${uri}`,
      );
    // One subscription per job, however its id is percent-encoded; the job must exist.
    const jobId = decodeURIComponent(m[1]!);
    const status = (await readAbility('get-batch-job-status-v1', { job_id: jobId })) as JobStatus;
    if (subscriptions.has(jobId)) return {};
    // A finished job will not move again: nothing to watch.
    if (status.status === 'completed' || status.status === 'failed') return {};
    if (subscriptions.size >= MAX_SUBSCRIPTIONS) {
      throw new RpcError(ErrorCode.InvalidRequest, `This session already follows ${MAX_SUBSCRIPTIONS} jobs; unsubscribe from one first.`);
    }
    subscriptions.set(jobId, JSON.stringify(status));
    if (!pollTimer) {
      pollTimer = setInterval(() => void pollJobs(), 250);
      pollTimer.unref();
    }
    return {};
  });

  server.setRequestHandler(UnsubscribeRequestSchema, (req) => {
    if (req.params.uri === INCIDENTS_URI && incidentTimer) {
      clearInterval(incidentTimer);
      incidentTimer = null;
    }
    const m = /^sitefleet:\/\/jobs\/([^/?]+)$/.exec(req.params.uri);
    if (m) subscriptions.delete(decodeURIComponent(m[1]!));
    return {};
  });

  return server;
}
