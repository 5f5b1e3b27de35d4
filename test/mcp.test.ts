// The MCP doors: stdio (`sitefleet mcp`, run from dist/ — build first) and streamable HTTP at /mcp, both
// driven by the SDK's own Client on one data dir. Tools, hints, structured results, errors, keys, Host checks.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATIONS,
  ISSUE_ABILITIES,
  MCP_HEADERS,
  MCP_INITIALIZE,
  expectSchema,
  invalidInput,
  rawRequest,
  seedFleet,
  seedTag,
  type Fleet,
} from './support/fixtures.js';
import { seedSites, startServer, type TestServer } from './support/server.js';
import { OPT_IN_TOOLSETS } from '../src/core/ability.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

let s: TestServer;
let fleet: Fleet;

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npx tsc -p tsconfig.json" before the MCP tests.`);
  s = await startServer();
  fleet = await seedFleet(s.services);
});
afterAll(async () => {
  await s?.close();
});

async function connectStdio(): Promise<Client> {
  const client = new Client({ name: 'sitefleet-test', version: '1.0.0' });
  const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp', '--data-dir', s.dataDir, ...(s.databaseUrl ? ['--database-url', s.databaseUrl] : [])],
      env: { ...env, SITEFLEET_LOG: 'warn' },
      stderr: 'inherit',
    }),
  );
  return client;
}

async function connectHttp(token: string = s.creds.key.read_write): Promise<Client> {
  const client = new Client({ name: 'sitefleet-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

/** The error body an isError result carries, checked in both its structured and its text form. */
function expectToolError(result: any, status: number, code: string, message?: string): void {
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toMatchObject({ code, data: { status } });
  expect(typeof result.structuredContent.message).toBe('string');
  if (message) expect(result.structuredContent.message).toBe(message);
  expect(Object.keys(result.structuredContent).sort()).toEqual(['code', 'data', 'message']);
  expect(JSON.parse(result.content[0].text)).toEqual(result.structuredContent);
}

describe.each([
  ['stdio', () => connectStdio()],
  // An administrator key: every tool (the administrators-only ones are not offered to other keys; team-doors.test.ts).
  ['streamable HTTP', async () => connectHttp((await s.services.auth.createKey('mcp-admin', 'read_write', { admin: true })).token)],
])('MCP over %s', (label, connect) => {
  let c: Client;
  let tools: Tool[];
  const tool = (name: string) => tools.find((t) => t.name === name)!;

  beforeAll(async () => {
    c = await connect();
    tools = (await c.listTools()).tools;
  });
  afterAll(async () => {
    await c?.close();
  });

  it('lists one tool per ability, named by its slug', () => {
    // Every ability but those of the opt-in toolsets (a login link is a secret: --toolsets admin-login).
    expect(tools.map((t) => t.name)).toEqual(s.registry.abilities.filter((a) => !OPT_IN_TOOLSETS.includes(a.toolset)).map((a) => a.name));
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(ISSUE_ABILITIES));
    expect(new Set(tools.map((t) => t.name)).size).toBe(tools.length);
    for (const t of tools) expect(t.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  });

  it('serves exactly the tools of the docs/tools-list.json snapshot (npm run docs)', async () => {
    const snapshot = JSON.parse(readFileSync(new URL('../docs/tools-list.json', import.meta.url), 'utf8')) as Tool[];
    const byName = (x: Tool, y: Tool) => x.name.localeCompare(y.name);
    expect(JSON.parse(JSON.stringify([...tools].sort(byName)))).toEqual(snapshot);
  });

  it('gives every tool a title, an input schema and all four hints as booleans, and no output schema', () => {
    for (const t of tools) {
      expect(typeof t.title, t.name).toBe('string');
      expect(t.title!.length, t.name).toBeGreaterThan(0);
      expect(typeof t.description, t.name).toBe('string');
      expect(t.inputSchema.type, t.name).toBe('object');
      // Results carry structuredContent; its schema is in schemas/ and the abilities door, not in every tools/list
      // (it more than doubled the list an assistant pays for on each conversation; #13).
      expect(t.outputSchema, t.name).toBeUndefined();
      const a = t.annotations ?? {};
      expect(typeof a.readOnlyHint, `${t.name} readOnlyHint`).toBe('boolean');
      expect(typeof a.destructiveHint, `${t.name} destructiveHint`).toBe('boolean');
      expect(typeof a.idempotentHint, `${t.name} idempotentHint`).toBe('boolean');
      expect(typeof a.openWorldHint, `${t.name} openWorldHint`).toBe('boolean');
    }
  });

  it('sets the hints from the ability annotations; registry-only abilities are not open-world', () => {
    for (const name of ISSUE_ABILITIES) {
      const a = tool(name).annotations!;
      expect([a.readOnlyHint, a.destructiveHint, a.idempotentHint], name).toEqual(ANNOTATIONS[name]);
      // delete-site-v1 tells the child to forget our key first: it reaches outside this process.
      expect(a.openWorldHint, name).toBe(name === 'delete-site-v1');
    }
  });

  it("answers a call with structuredContent that validates against the ability's output schema, and a JSON text copy", async () => {
    const r: any = await c.callTool({ name: 'list-sites-v1', arguments: { per_page: 2, status: 'any' } });
    expect(r.isError ?? false).toBe(false);
    const viaRest = await s.rest('/sites?per_page=2');
    expect(r.structuredContent).toMatchObject({ page: 1, per_page: 2, total: viaRest.body.total });
    expect(r.structuredContent.items).toEqual(viaRest.body.data);
    expect(r.content[0].type).toBe('text');
    expect(JSON.parse(r.content[0].text)).toEqual(r.structuredContent);
    expectSchema(r.structuredContent, s.registry.schemas(s.registry.get('list-sites-v1')!).output);
  });

  it('finds a site by domain and returns the full site', async () => {
    const r: any = await c.callTool({
      name: 'get-site-v1',
      arguments: { site_id_or_domain: 'WWW.bravo.example.org', include_stats: true },
    });
    expect(r.structuredContent).toMatchObject({ id: fleet.sites[1]!.id, status: 'disconnected', stats: expect.any(Object) });
    expectSchema(r.structuredContent, s.registry.schemas(s.registry.get('get-site-v1')!).output);
  });

  it('answers an unknown site with an isError result carrying {code, message, data}', async () => {
    const r = await c.callTool({ name: 'get-site-v1', arguments: { site_id_or_domain: 99999 } });
    expectToolError(r, 404, 'svc_site_not_found', 'No site found with ID 99999.');
  });

  it('answers invalid arguments with ability_invalid_input in WordPress wording', async () => {
    const r = await c.callTool({ name: 'add-tag-v1', arguments: { name: 'x', color: 'green' } });
    expectToolError(r, 400, 'ability_invalid_input', invalidInput('add-tag-v1', 'input[color] does not match pattern ^#[0-9A-Fa-f]{6}$.'));
    const missing = await c.callTool({ name: 'get-tag-v1', arguments: {} });
    expectToolError(missing, 400, 'ability_invalid_input', invalidInput('get-tag-v1', 'tag_id is a required property of input.'));
  });

  it('keeps the destructive flow: dry run previews, a missing confirm is refused, confirm deletes', async () => {
    const name = `mcp ${label}`;
    const created: any = await c.callTool({ name: 'add-tag-v1', arguments: { name } });
    expect(created.structuredContent).toMatchObject({ name, sites_count: 0 });
    expectSchema(created.structuredContent, s.registry.schemas(s.registry.get('add-tag-v1')!).output);
    const id = created.structuredContent.id;
    // A write through either MCP door is seen at once by the HTTP server on the same data dir.
    expect((await s.rest(`/tags/${id}`)).body.data.name).toBe(name);
    const dup = await c.callTool({ name: 'add-tag-v1', arguments: { name: name.toUpperCase() } });
    expectToolError(dup, 409, 'svc_tag_exists');
    const preview: any = await c.callTool({ name: 'delete-tag-v1', arguments: { tag_id: id, dry_run: true } });
    expect(preview.structuredContent).toMatchObject({ dry_run: true, tag_id: id, sites_affected: 0 });
    expectToolError(await c.callTool({ name: 'delete-tag-v1', arguments: { tag_id: id } }), 400, 'svc_confirmation_required');
    const both = await c.callTool({ name: 'delete-tag-v1', arguments: { tag_id: id, dry_run: true, confirm: true } });
    expectToolError(both, 400, 'svc_invalid_input');
    const done: any = await c.callTool({ name: 'delete-tag-v1', arguments: { tag_id: id, confirm: true } });
    expect(done.structuredContent).toMatchObject({ deleted: true, tag_id: id });
    expect((await s.rest(`/tags/${id}`)).status).toBe(404);
    expectToolError(await c.callTool({ name: 'get-tag-v1', arguments: { tag_id: id } }), 404, 'svc_tag_not_found');
  });

  it('sees a change made over HTTP at once', async () => {
    const name = `from rest for ${label}`;
    const r = await s.rest('/tags/add', { method: 'POST', json: { name } });
    const seen: any = await c.callTool({ name: 'get-tag-v1', arguments: { tag_id: r.body.data.id } });
    expect(seen.structuredContent.name).toBe(name);
  });

  describe('every ability of the issue', () => {
    // What each call needs: sites and a tag of this transport's own, made through the store (the stdio
    // process sees them through the shared data dir).
    const mine: { site: number; site2: number; doomed: number; tag: number } = { site: 0, site2: 0, doomed: 0, tag: 0 };
    beforeAll(async () => {
      const slug = label.replace(/\W+/g, '-');
      const made = await seedSites(s.services, 3, (i) => ({ url: `https://mcp-${slug}-${i}.example.com/`, name: `MCP ${label} ${i}` }));
      [mine.site, mine.site2, mine.doomed] = made.map((x) => x.id);
      mine.tag = (await seedTag(s.services, `mcp tag ${label}`)).id;
    });

    const ok: Array<[string, () => Record<string, unknown>, (sc: any) => void]> = [
      [
        'list-sites-v1',
        () => ({ search: 'charlie', status: 'suspended' }),
        (sc) => expect(sc.items.map((i: any) => i.id)).toEqual([fleet.sites[2]!.id]),
      ],
      [
        'get-site-v1',
        () => ({ site_id_or_domain: fleet.sites[0]!.id, include_stats: true }),
        (sc) => expect(sc).toMatchObject({ name: 'Alpha', stats: { plugin_updates: 2 } }),
      ],
      ['count-sites-v1', () => ({ status: 'disconnected' }), (sc) => expect(sc).toEqual({ total: 1 })],
      [
        'get-sites-basic-v1',
        () => ({ per_page: 1 }),
        (sc) => {
          expect(sc.sites).toHaveLength(1);
          expect(sc.total).toBeGreaterThanOrEqual(6);
        },
      ],
      [
        'update-site-v1',
        () => ({ site_id_or_domain: mine.site, name: `Renamed over ${label}`, notes: 'mcp', tags: [mine.tag] }),
        (sc) => expect(sc).toMatchObject({ id: mine.site, name: `Renamed over ${label}`, notes: 'mcp', tags: [{ id: mine.tag }] }),
      ],
      [
        'suspend-site-v1',
        () => ({ site_id_or_domain: mine.site }),
        (sc) => expect(sc).toMatchObject({ suspended: true, site_id: mine.site, status: 'suspended' }),
      ],
      [
        'unsuspend-site-v1',
        () => ({ site_id_or_domain: mine.site }),
        (sc) => expect(sc).toMatchObject({ unsuspended: true, site_id: mine.site, status: 'connected' }),
      ],
      [
        'suspend-sites-v1',
        () => ({ site_ids_or_domains: [mine.site2, 999999] }),
        (sc) =>
          expect(sc).toMatchObject({
            total_suspended: 1,
            total_errors: 1,
            suspended: [{ id: mine.site2 }],
            errors: [{ identifier: 999999, code: 'svc_site_not_found' }],
          }),
      ],
      [
        'delete-site-v1',
        () => ({ site_id_or_domain: mine.doomed, confirm: true }),
        (sc) => expect(sc).toMatchObject({ deleted: true, site_id: mine.doomed }),
      ],
      [
        'list-tags-v1',
        () => ({ search: 'Production' }),
        (sc) => expect(sc.items.map((t: any) => t.id)).toEqual([fleet.tags.production.id]),
      ],
      [
        'get-tag-v1',
        () => ({ tag_id: fleet.tags.production.id }),
        (sc) => expect(sc).toMatchObject({ name: 'Production', sites_count: 3 }),
      ],
      [
        'add-tag-v1',
        () => ({ name: `added over ${label}`, color: '#0f0f0f' }),
        (sc) => expect(sc).toMatchObject({ name: `added over ${label}`, color: '#0f0f0f', sites_count: 0 }),
      ],
      [
        'update-tag-v1',
        () => ({ tag_id: mine.tag, color: '#f0f0f0' }),
        (sc) => expect(sc).toMatchObject({ id: mine.tag, color: '#f0f0f0' }),
      ],
      [
        'delete-tag-v1',
        () => ({ tag_id: mine.tag, dry_run: true }),
        (sc) => expect(sc).toMatchObject({ dry_run: true, tag_id: mine.tag, sites_affected: 1 }),
      ],
      [
        'get-tag-sites-v1',
        () => ({ tag_id: fleet.tags.production.id, per_page: 2 }),
        (sc) => expect(sc).toMatchObject({ tag_name: 'Production', total: 3 }),
      ],
      [
        'get-tag-clients-v1',
        () => ({ tag_id: fleet.tags.production.id }),
        (sc) => expect(sc.clients.map((c: any) => c.sites_with_tag)).toEqual([2, 1]),
      ],
    ];

    it('has a case for each ability', () => {
      expect(ok.map(([n]) => n).sort()).toEqual([...ISSUE_ABILITIES].sort());
    });

    it.each(ok)('runs %s and answers structuredContent that fits its output schema', async (name, args, check) => {
      const r: any = await c.callTool({ name, arguments: args() });
      expect(r.isError ?? false, JSON.stringify(r.structuredContent)).toBe(false);
      check(r.structuredContent);
      expect(JSON.parse(r.content[0].text)).toEqual(r.structuredContent);
      expectSchema(r.structuredContent, s.registry.schemas(s.registry.get(name)!).output);
    });

    it('has done the work: the changes are seen over REST', async () => {
      expect((await s.rest(`/sites/${mine.site}`)).body.data).toMatchObject({ name: `Renamed over ${label}`, status: 'connected' });
      expect((await s.rest(`/sites/${mine.site2}`)).body.data.status).toBe('suspended');
      expect((await s.rest(`/sites/${mine.doomed}`)).status).toBe(404);
      expect((await s.rest(`/tags/${mine.tag}`)).body.data).toMatchObject({ color: '#f0f0f0', sites_ids: [mine.site] });
    });

    const bad: Array<[string, Record<string, unknown>, number, string]> = [
      ['list-sites-v1', { per_page: 500 }, 400, 'ability_invalid_input'],
      ['get-site-v1', { site_id_or_domain: 'nope.example' }, 404, 'svc_site_not_found'],
      ['count-sites-v1', { status: 'gone' }, 400, 'ability_invalid_input'],
      ['get-sites-basic-v1', { page: 0 }, 400, 'ability_invalid_input'],
      ['update-site-v1', { site_id_or_domain: 999999, name: 'x' }, 404, 'svc_site_not_found'],
      ['delete-site-v1', { site_id_or_domain: 999999, confirm: true }, 404, 'svc_site_not_found'],
      ['suspend-site-v1', { site_id_or_domain: 999999 }, 404, 'svc_site_not_found'],
      ['unsuspend-site-v1', {}, 400, 'ability_invalid_input'],
      ['suspend-sites-v1', { site_ids_or_domains: [999999] }, 404, 'svc_site_not_found'],
      ['list-tags-v1', { per_page: 0 }, 400, 'ability_invalid_input'],
      ['get-tag-v1', { tag_id: 999999 }, 404, 'svc_tag_not_found'],
      ['add-tag-v1', { name: '' }, 400, 'ability_invalid_input'],
      ['update-tag-v1', { tag_id: 999999, name: 'x' }, 404, 'svc_tag_not_found'],
      ['delete-tag-v1', { tag_id: 999999, confirm: true }, 404, 'svc_tag_not_found'],
      ['get-tag-sites-v1', { tag_id: 999999 }, 404, 'svc_tag_not_found'],
      ['get-tag-clients-v1', { tag_id: 'one' }, 400, 'ability_invalid_input'],
    ];

    it('has an error case for each ability', () => {
      expect(bad.map(([n]) => n).sort()).toEqual([...ISSUE_ABILITIES].sort());
    });

    it.each(bad)('answers %s %j with an isError result (%i %s)', async (name, args, status, code) => {
      expectToolError(await c.callTool({ name, arguments: args }), status, code);
    });
  });

  it('answers an unknown tool with JSON-RPC error -32602', async () => {
    await expect(c.callTool({ name: 'no-such-tool-v1', arguments: {} })).rejects.toMatchObject({ code: -32602 });
  });
});

describe('MCP over HTTP: credentials and Host', () => {
  it('answers a request without a key with 401', async () => {
    const r = await rawRequest(`${s.url}/mcp`, { method: 'POST', headers: MCP_HEADERS, body: MCP_INITIALIZE });
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ code: 'svc_rest_authentication_error', data: { status: 401 } });
    await expect(connectHttp('sf_000000000000_' + 'A'.repeat(32))).rejects.toThrow();
  });

  it('shows a read key only the read-only tools, and refuses a write tool as unknown', async () => {
    const c = await connectHttp(s.creds.key.read);
    try {
      const { tools } = await c.listTools();
      const readOnly = s.registry.abilities.filter((a) => a.annotations.readonly && !a.annotations.admin).map((a) => a.name);
      expect(tools.map((t) => t.name)).toEqual(readOnly);
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(ISSUE_ABILITIES.filter((n) => ANNOTATIONS[n]![0])));
      for (const t of tools) expect(t.annotations?.readOnlyHint, t.name).toBe(true);
      const ok: any = await c.callTool({ name: 'count-sites-v1', arguments: {} });
      expect(ok.structuredContent).toEqual({ total: expect.any(Number) });
      await expect(c.callTool({ name: 'add-tag-v1', arguments: { name: 'read key tag' } })).rejects.toMatchObject({ code: -32602 });
      expect((await s.rest('/tags?search=read%20key%20tag')).body.total).toBe(0);
    } finally {
      await c.close();
    }
  });

  it('shows a write key only the tools that change things', async () => {
    const c = await connectHttp(s.creds.key.write);
    try {
      const { tools } = await c.listTools();
      expect(tools.length).toBeGreaterThan(0);
      for (const t of tools) expect(t.annotations?.readOnlyHint, t.name).toBe(false);
      await expect(c.callTool({ name: 'list-sites-v1', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    } finally {
      await c.close();
    }
  });

  it('answers a Host header that is not allowed with 403, even with a valid key', async () => {
    const port = new URL(s.url).port;
    for (const host of [`evil.example:${port}`, 'evil.example', `127.0.0.1.evil.example:${port}`]) {
      const r = await rawRequest(`${s.url}/mcp`, {
        method: 'POST',
        body: MCP_INITIALIZE,
        headers: { ...MCP_HEADERS, host, authorization: `Bearer ${s.creds.key.read_write}` },
      });
      expect(r.status, host).toBe(403);
    }
  });

  it('answers an Origin that is not allowed with 403', async () => {
    const r = await rawRequest(`${s.url}/mcp`, {
      method: 'POST',
      body: MCP_INITIALIZE,
      headers: { ...MCP_HEADERS, origin: 'http://evil.example', authorization: `Bearer ${s.creds.key.read_write}` },
    });
    expect(r.status).toBe(403);
  });

  it('accepts loopback Host names', async () => {
    const port = new URL(s.url).port;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`]) {
      const r = await rawRequest(`${s.url}/mcp`, {
        method: 'POST',
        body: MCP_INITIALIZE,
        headers: { ...MCP_HEADERS, host, origin: `http://${host}`, authorization: `Bearer ${s.creds.key.read_write}` },
      });
      expect(r.status, host).toBe(200);
    }
  });

  it('refuses a body over its limit with 413', async () => {
    const huge = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { pad: 'x'.repeat(5 * 1024 * 1024) } });
    const r = await fetch(`${s.url}/mcp`, {
      method: 'POST',
      body: huge,
      headers: { ...MCP_HEADERS, authorization: `Bearer ${s.creds.key.read_write}` },
    });
    expect(r.status).toBe(413);
    expect(((await r.json()) as any).data.status).toBe(413);
  });

  it('refuses a session of another key', async () => {
    const init = await fetch(`${s.url}/mcp`, {
      method: 'POST',
      body: MCP_INITIALIZE,
      headers: { ...MCP_HEADERS, authorization: `Bearer ${s.creds.key.read_write}` },
    });
    expect(init.status).toBe(200);
    const sid = init.headers.get('mcp-session-id')!;
    await init.text();
    expect(sid).toBeTruthy();
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
    const r = await fetch(`${s.url}/mcp`, {
      method: 'POST',
      body: list,
      headers: { ...MCP_HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18', authorization: `Bearer ${s.creds.key.read}` },
    });
    expect(r.status).toBe(404);
  });
});
