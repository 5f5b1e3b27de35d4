// Output schemas as an opt-in (--output-schemas over stdio, X-MCP-Output-Schemas: true over HTTP): every tool then
// carries its output schema, and the SDK client's own validation of structuredContent passes; errors are text only.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from './support/process.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';

let f: Fleet;
const clients: Client[] = [];
beforeAll(async () => {
  f = await startFleet({ sim: { sites: 3 } });
  await registerSites(f, 3);
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await f?.close();
});

async function connect(door: 'stdio' | 'http', on: boolean): Promise<Client> {
  const c = new Client({ name: 'typed', version: '1' });
  await c.connect(
    door === 'stdio'
      ? new StdioClientTransport({
          command: process.execPath,
          args: [
            CLI,
            'mcp',
            '--data-dir',
            f.s.dataDir,
            ...(f.s.databaseUrl ? ['--database-url', f.s.databaseUrl] : []),
            ...(on ? ['--output-schemas'] : []),
          ],
          env: { ...process.env, SITEFLEET_LOG: 'warn' } as Record<string, string>,
        })
      : new StreamableHTTPClientTransport(new URL(`${f.s.url}/mcp`), {
          requestInit: {
            headers: { authorization: `Bearer ${f.s.creds.key.read_write}`, ...(on ? { 'X-MCP-Output-Schemas': 'true' } : {}) },
          },
        }),
  );
  clients.push(c);
  return c;
}

describe.each(['stdio', 'http'] as const)('over %s', (door) => {
  it('gives every tool an object output schema when asked, and results the SDK client validates', async () => {
    const c = await connect(door, true);
    const { tools } = await c.listTools();
    // The same tools as without the opt-in (what this caller may see: opt-in toolsets and admin tools aside).
    const plain = (await (await connect(door, false)).listTools()).tools;
    expect(tools.map((t) => t.name)).toEqual(plain.map((t) => t.name));
    expect(tools.length).toBeGreaterThan(100);
    for (const t of tools) expect(t.outputSchema?.type, t.name).toBe('object');
    const list = await c.callTool({ name: 'list-sites-v1', arguments: { per_page: 2 } });
    expect(list.structuredContent).toMatchObject({ total: 3, per_page: 2 });
    const site = await c.callTool({ name: 'get-site-v1', arguments: { site_id_or_domain: 1, include_stats: true } });
    expect(site.structuredContent).toMatchObject({ id: 1, stats: expect.any(Object) });
    const tag = await c.callTool({ name: 'add-tag-v1', arguments: { name: `typed ${door}` } });
    expect(tag.structuredContent).toMatchObject({ name: `typed ${door}` });
    const plugins = await c.callTool({ name: 'get-site-plugins-v1', arguments: { site_id_or_domain: 1 } });
    expect((plugins.structuredContent as { plugins: unknown[] }).plugins.length).toBeGreaterThan(0);
    // An error cannot fit the tool's output schema: it is text only, still with its code.
    const missing = await c.callTool({ name: 'get-site-v1', arguments: { site_id_or_domain: 99999 } });
    expect(missing.isError).toBe(true);
    expect(missing.structuredContent).toBeUndefined();
    expect(JSON.parse((missing.content as Array<{ text: string }>)[0]!.text)).toMatchObject({ code: 'svc_site_not_found' });
  });

  it('keeps the default list without output schemas', async () => {
    const c = await connect(door, false);
    expect((await c.listTools()).tools.every((t) => t.outputSchema === undefined)).toBe(true);
  });
});

it('refuses an X-MCP-Output-Schemas value that is not true or false', async () => {
  await expect(
    new Client({ name: 'x', version: '1' }).connect(
      new StreamableHTTPClientTransport(new URL(`${f.s.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${f.s.creds.key.read_write}`, 'X-MCP-Output-Schemas': 'please' } },
      }),
    ),
  ).rejects.toThrow(/svc_invalid_input.*X-MCP-Output-Schemas: .*please.* is not true or false/);
});
