// `sitefleet mcp --server URL`: MCP over stdio for a client on this machine, answered by a remote sitefleet's /mcp.
// Each JSON-RPC message is passed on as it is, both ways; the remote server does all the work with the caller's key.
// The key comes from the environment (SITEFLEET_API_KEY), never from argv, so it stays out of process listings.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export interface RelayOptions {
  /** The remote server's MCP endpoint (…/mcp). */
  url: URL;
  /** Its API key (Bearer). */
  key: string;
  /** Extra headers for the session, e.g. X-MCP-Toolsets / X-MCP-Readonly. */
  headers?: Record<string, string>;
  /** For tests: the local side (stdio by default). */
  local?: Transport;
}

/** Why the remote side refused, in words for the person reading the client's error. */
function reason(err: unknown, url: URL): string {
  const text = err instanceof Error ? err.message : String(err);
  if (/\b401\b/.test(text)) return `the sitefleet server at ${url.href} refused the API key (401): check SITEFLEET_API_KEY`;
  if (/\b403\b/.test(text)) return `the sitefleet server at ${url.href} refused the request (403): ${text}`;
  return `the sitefleet server at ${url.href} could not be reached: ${text}`;
}

/**
 * Connects stdio to the remote endpoint and returns when both are open. A request the remote side cannot take is
 * answered locally with a JSON-RPC error naming why (bad key, unreachable), so the client shows it instead of waiting.
 * Ends (and calls onClose) when either side closes.
 */
export async function startRelay(opts: RelayOptions, onClose: () => void): Promise<void> {
  const local = opts.local ?? new StdioServerTransport();
  const remote = new StreamableHTTPClientTransport(opts.url, {
    requestInit: { headers: { Authorization: `Bearer ${opts.key}`, ...opts.headers } },
  });
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    void Promise.allSettled([local.close(), remote.close()]).then(onClose);
  };
  local.onmessage = (msg: JSONRPCMessage) => {
    remote.send(msg).catch((err: unknown) => {
      if ('id' in msg && 'method' in msg)
        void local.send({ jsonrpc: '2.0', id: msg.id, error: { code: -32603, message: reason(err, opts.url) } }).catch(() => {});
    });
  };
  remote.onmessage = (msg: JSONRPCMessage) => void local.send(msg).catch(() => {});
  remote.onerror = () => {
    /* a failed send is answered above; a dropped notification stream reconnects by itself */
  };
  local.onclose = close;
  remote.onclose = close;
  await remote.start();
  await local.start();
}
