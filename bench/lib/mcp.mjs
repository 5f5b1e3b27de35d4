// bench/lib/mcp.mjs — MCP tools/call latency through the SDK client: over stdio (`sitefleet mcp`, a
// process of its own on the same data dir as serve) and over streamable HTTP (serve's /mcp).
import { setMaxListeners } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CLI } from './proc.mjs';
import { assertLoopback } from './load.mjs';
import { round, timedCalls } from './sys.mjs';

/** The list's total, from structured content or from the JSON text block. */
function totalOf(r) {
  if (r.structuredContent && typeof r.structuredContent.total === 'number') return r.structuredContent.total;
  try {
    return JSON.parse(r.content?.find((c) => c.type === 'text')?.text ?? '').total;
  } catch {
    return undefined;
  }
}

async function timeCalls(client, { tool, args, seconds, maxCount, warmupCount, pid, expectTotal }) {
  const probe = await client.callTool({ name: tool, arguments: args });
  if (expectTotal !== undefined && totalOf(probe) !== expectTotal) {
    throw new Error(`sanity check failed: MCP ${tool} total ${totalOf(probe)} ≠ ${expectTotal}: ${JSON.stringify(probe).slice(0, 300)}`);
  }
  const one = async () => {
    const r = await client.callTool({ name: tool, arguments: args });
    return r.isError ? JSON.stringify(r.content).slice(0, 200) : null;
  };
  return timedCalls(one, { seconds, maxCount, warmupCount, pid });
}

export async function mcpStdio(
  dataDir,
  { tool = 'list-sites-v1', args = {}, seconds = 3, maxCount = 5_000, warmupCount = 50, expectTotal } = {},
) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--data-dir', dataDir],
    env: { ...process.env, SITEFLEET_LOG: 'warn' },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'sitefleet-bench', version: '1' });
  const t0 = performance.now();
  await client.connect(transport);
  const connectMs = performance.now() - t0;
  try {
    const r = await timeCalls(client, { tool, args, seconds, maxCount, warmupCount, pid: transport.pid, expectTotal });
    return { ...r, connect_ms: round(connectMs, 0) };
  } finally {
    await client.close().catch(() => {});
  }
}

export async function mcpHttp(
  url,
  token,
  { tool = 'list-sites-v1', args = {}, seconds = 3, maxCount = 5_000, warmupCount = 50, pid, expectTotal } = {},
) {
  const u = assertLoopback(url);
  // The SDK passes one session-long AbortSignal to every fetch, and each fetch hangs a listener on it until the
  // request is garbage-collected: thousands of quick calls trip Node's leak warning (printed per call, on the
  // client's clock). Lift the limit on that signal; the calls themselves are unchanged.
  const fetchNoWarn = (url, init) => {
    if (init?.signal) setMaxListeners(0, init.signal);
    return fetch(url, init);
  };
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', u.origin), {
    fetch: fetchNoWarn,
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'sitefleet-bench', version: '1' });
  await client.connect(transport);
  try {
    return await timeCalls(client, { tool, args, seconds, maxCount, warmupCount, pid, expectTotal });
  } finally {
    await transport.terminateSession?.().catch(() => {});
    await client.close().catch(() => {});
  }
}
