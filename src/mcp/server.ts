// The MCP server, built from the registry: one tool per ability. Transports (stdio, streamable HTTP)
// live apart and only connect this same server to a different pipe.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { annotationMethod, type Ability } from '../core/ability.js';
import { asServiceError } from '../core/errors.js';
import { keyAllowsMethod, type Principal } from '../core/principal.js';
import type { Registry } from '../core/registry.js';
import { VERSION } from '../version.js';

export const INSTRUCTIONS = [
  'sitefleet manages a fleet of WordPress child sites from one dashboard.',
  'Sites are named by numeric id or by domain (site_id_or_domain). Tags group sites; a site may belong to a client.',
  'A site is connected, disconnected (its last contact failed or it was disconnected) or suspended (left out of syncs).',
  'Read tools are safe to call at any time. Destructive tools need confirm=true; call them with dry_run=true first to show the user what would change.',
  'Errors come back as isError results whose structuredContent is {code, message, data:{status}}.',
].join('\n');

// Every tool may also answer with this error body (isError results carry it as structuredContent).
const ERROR_BODY = {
  type: 'object',
  properties: {
    code: { type: 'string' },
    message: { type: 'string' },
    data: { type: 'object', properties: { status: { type: 'integer' } }, required: ['status'] },
  },
  required: ['code', 'message', 'data'],
} as const;

export interface ToolFilter {
  principal: Principal;
  toolsets?: readonly string[];
  readOnly?: boolean;
}

/** Which tools a caller sees: read-only mode and a read key hide writes; toolsets narrow the list. */
export function visible(a: Ability, f: ToolFilter): boolean {
  if (f.toolsets && !f.toolsets.includes(a.toolset)) return false;
  if (f.readOnly && !a.annotations.readonly) return false;
  const p = f.principal;
  if (p.kind === 'key' && !keyAllowsMethod(p.permissions, annotationMethod(a.annotations))) return false;
  if (p.kind === 'user' && p.role !== 'administrator' && !a.annotations.readonly) return false;
  return true;
}

const toolCache = new WeakMap<Registry, Map<string, Tool>>();

export function toolOf(registry: Registry, a: Ability): Tool {
  let cache = toolCache.get(registry);
  if (!cache) toolCache.set(registry, (cache = new Map()));
  let tool = cache.get(a.name);
  if (!tool) {
    const { input, output } = registry.schemas(a);
    tool = {
      name: a.name,
      title: a.label,
      description: a.description,
      inputSchema: input as Tool['inputSchema'],
      outputSchema: { type: 'object', anyOf: [output, ERROR_BODY] } as Tool['outputSchema'],
      annotations: {
        title: a.label,
        readOnlyHint: a.annotations.readonly,
        destructiveHint: a.annotations.destructive,
        idempotentHint: a.annotations.idempotent,
        openWorldHint: a.annotations.openWorld,
      },
    };
    cache.set(a.name, tool);
  }
  return tool;
}

export function buildMcpServer(registry: Registry, filter: ToolFilter): Server {
  const server = new Server(
    { name: 'sitefleet', version: VERSION },
    { capabilities: { tools: { listChanged: true } }, instructions: INSTRUCTIONS },
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: registry.abilities.filter((a) => visible(a, filter)).map((a) => toolOf(registry, a)),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const a = registry.get(req.params.name);
    if (!a || !visible(a, filter)) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
    const token = req.params._meta?.progressToken;
    try {
      const result = await registry.run(a, req.params.arguments ?? {}, {
        principal: filter.principal,
        coerce: false,
        signal: extra.signal,
        progress: token === undefined ? undefined : (p) => {
          void extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: p.done, total: p.total, ...(p.message ? { message: p.message } : {}) },
          });
        },
      });
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result as Record<string, unknown> };
    } catch (e) {
      const body = asServiceError(e).toBody();
      return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
    }
  });

  return server;
}
