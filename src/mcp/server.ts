// The MCP server, built from the registry: one tool per ability, plus resources (the fleet, a site, a
// job). Transports (stdio, streamable HTTP) live apart and only connect this same server to a pipe.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  ErrorCode,
  ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
  type LoggingLevel,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { annotationMethod, OPT_IN_TOOLSETS, type Ability } from '../core/ability.js';
import { ServiceError, toServiceError } from '../core/errors.js';
import { refusal, type Principal } from '../core/principal.js';
import { jsonSchemaOf, type Registry } from '../core/registry.js';
import { wpBoolean } from '../core/input.js';
import type { Services } from '../domain/index.js';
import { VERSION } from '../version.js';
import { compactInputSchema, toolDescription } from './compact.js';
import { queuedJob } from '../core/results.js';

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
  'User and post tools pick sites with websites (IDs or domains), groups (tag IDs or names) and clients (client IDs), added up: disconnected and suspended sites come back in skipped[], values that name nothing in unknown[].',
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
}

/** Which tools a caller sees: toolsets, read-only mode, the caller's key or role, and switched-off modules. */
export function visible(a: Ability, f: ToolFilter, services?: Pick<Services, 'settings'>): boolean {
  if (f.toolsets ? !f.toolsets.includes(a.toolset) : OPT_IN_TOOLSETS.includes(a.toolset)) return false;
  if (f.readOnly && !a.annotations.readonly) return false;
  if (refusal(f.principal, a.annotations, annotationMethod(a.annotations))) return false;
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

const LEVELS: LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/**
 * One watcher per process for the module switches (they live in the store, so `sitefleet modules`
 * in another process counts): servers subscribe to hear that their tool list changed.
 */
const moduleListeners = new Set<() => void>();
let moduleTimer: NodeJS.Timeout | null = null;
function watchModules(services: Services, onChange: () => void): () => void {
  moduleListeners.add(onChange);
  if (!moduleTimer) {
    let last = JSON.stringify(services.settings.get().modules);
    moduleTimer = setInterval(() => {
      const now = JSON.stringify(services.settings.get().modules);
      if (now !== last) {
        last = now;
        for (const l of moduleListeners) l();
      }
    }, 500);
    moduleTimer.unref();
  }
  return () => {
    moduleListeners.delete(onChange);
    if (!moduleListeners.size && moduleTimer) {
      clearInterval(moduleTimer);
      moduleTimer = null;
    }
  };
}

interface JobStatus {
  status: string;
  processed: number;
}

export function buildMcpServer(registry: Registry, filter: ToolFilter, services?: Services): Server {
  const server = new Server(
    { name: 'sitefleet', version: VERSION },
    {
      capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: false }, logging: {} },
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
        void server.sendToolListChanged().catch(() => {});
      })
    : () => {};
  let incidentTimer: NodeJS.Timeout | null = null;
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

  server.setRequestHandler(SetLevelRequestSchema, (req) => {
    minLevel = LEVELS.indexOf(req.params.level);
    return {};
  });

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: registry.abilities.filter((a) => visible(a, filter, services)).map((a) => toolOf(a)),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
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
      return { content: [{ type: 'text', text: JSON.stringify(result) }, ...jobLink(result)], structuredContent: result };
    } catch (e) {
      // The error is the result; it is not also sent as a log line.
      const body = toServiceError(e).toBody();
      return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
    }
  });

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
    const m = /^sitefleet:\/\/(sites|jobs)(?:\/([^/?]+))?(?:\?page=(\d+))?$/.exec(uri);
    let body: unknown;
    if (m?.[1] === 'sites' && !m[2]) body = await readAbility('list-sites-v1', { page: Number(m[3] ?? 1), per_page: 100 });
    else if (m?.[1] === 'sites' && m[2])
      body = await readAbility('get-site-v1', { site_id_or_domain: decodeURIComponent(m[2]), include_stats: true });
    else if (m?.[1] === 'jobs' && m[2] && !m[3]) body = await readAbility('get-batch-job-status-v1', { job_id: decodeURIComponent(m[2]) });
    else throw new RpcError(RESOURCE_NOT_FOUND, `Unknown resource: ${uri}`, { uri });
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(body) }] };
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
    for (const i of services!.monitors.incidents().slice(0, 200)) d += `${i.id}:${i.ended_at ?? ''};`;
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
