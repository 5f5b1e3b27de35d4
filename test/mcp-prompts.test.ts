// MCP prompts, completions, per-site resources and help, and per-session choices over HTTP (X-MCP-Toolsets,
// X-MCP-Readonly): through the SDK's own client, over stdio and streamable HTTP, on one fleet of simulated sites.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from './support/process.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { MCP_HEADERS, MCP_INITIALIZE, rawRequest } from './support/fixtures.js';
import { seedSites } from './support/server.js';

let f: Fleet;
const clients: Client[] = [];
let tagId = 0;
let clientId = 0;
let alpha = 0;
let pluginSlug = '';
let jobId = '';

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 3 } });
  await registerSites(f, 3);
  const seeded = await seedSites(f.s.services, 3, (i) => ({
    url: `https://${['alpha', 'alphabet', 'bravo'][i]}.example.com/`,
    name: ['Alpha shop', 'Alphabet soup', 'Bravo blog'][i]!,
  }));
  alpha = seeded[0]!.id;
  tagId = (await f.s.ability('add-tag-v1', { name: 'Production' })).body.id;
  await f.s.ability('update-site-v1', { site_id_or_domain: 1, tags: [tagId] });
  clientId = (await f.s.ability('add-client-v1', { name: 'Acme Ltd', email: 'boss@acme.example', selected_sites: [1] })).body.id;
  pluginSlug = (await f.s.services.siteData.of(f.s.services.sites.get(1)!)).plugins[0]!.slug;
  jobId = (await f.s.services.jobs.enqueue('check', [4, 5, 6])).job_id;
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await f?.close();
});

async function http(token = f.s.creds.key.read_write, headers: Record<string, string> = {}): Promise<Client> {
  const c = new Client({ name: 'test', version: '1' });
  await c.connect(
    new StreamableHTTPClientTransport(new URL(`${f.s.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}`, ...headers } },
    }),
  );
  clients.push(c);
  return c;
}
async function stdio(args: string[] = []): Promise<Client> {
  const c = new Client({ name: 'test', version: '1' });
  await c.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp', '--data-dir', f.s.dataDir, ...(f.s.databaseUrl ? ['--database-url', f.s.databaseUrl] : []), ...args],
      env: { ...process.env, SITEFLEET_LOG: 'warn' } as Record<string, string>,
    }),
  );
  clients.push(c);
  return c;
}
const text = (r: { contents: unknown[] }) => (r.contents[0] as { text: string }).text;

const PROMPT_NAMES = ['client-report', 'onboard-site', 'safe-update-run', 'security-review', 'troubleshoot-site', 'weekly-maintenance'];
/** Arguments that make each prompt say the most. */
const fullArgs = (): Record<string, Record<string, string>> => ({
  'troubleshoot-site': { site: '1', symptom: 'white screen after login' },
  'weekly-maintenance': { tag: 'production', client: 'boss@acme.example' },
  'safe-update-run': { site: '1', types: 'plugins, themes', plugin: pluginSlug },
  'security-review': { site: 'alpha.example.com' },
  'client-report': { client: String(clientId), period: 'October 2026' },
  'onboard-site': { url: 'https://new.example.com', client: 'boss@acme.example', tag: String(tagId) },
});

describe.each(['stdio', 'http'] as const)('over %s', (door) => {
  let c: Client;
  let toolNames: Set<string>;
  beforeAll(async () => {
    c = door === 'stdio' ? await stdio() : await http();
    toolNames = new Set((await c.listTools()).tools.map((t) => t.name));
  });

  it('introduces itself with a title and an inline SVG icon', () => {
    const info = c.getServerVersion()!;
    expect(info).toMatchObject({ name: 'sitefleet', title: expect.stringMatching(/WordPress fleet/) });
    const icon = info.icons![0]!;
    expect(icon).toMatchObject({ mimeType: 'image/svg+xml', sizes: ['any'] });
    expect(Buffer.from(icon.src.replace(/^data:image\/svg\+xml;base64,/, ''), 'base64').toString()).toMatch(/^<svg /);
  });

  it('lists the six workflow prompts with titles and typed arguments', async () => {
    const { prompts } = await c.listPrompts();
    expect(prompts.map((p) => p.name).sort()).toEqual(PROMPT_NAMES);
    for (const p of prompts) {
      expect(p.title, p.name).toBeTruthy();
      expect(p.description, p.name).toBeTruthy();
      for (const a of p.arguments ?? []) expect(typeof a.required, `${p.name} ${a.name}`).toBe('boolean');
    }
    expect(prompts.find((p) => p.name === 'troubleshoot-site')!.arguments).toEqual([
      { name: 'site', description: expect.stringMatching(/id or domain/), required: true },
      { name: 'symptom', description: expect.any(String), required: false },
    ]);
  });

  it.each(PROMPT_NAMES)('builds %s naming only real tools and linking resources that read', async (name) => {
    const r = await c.getPrompt({ name, arguments: fullArgs()[name] });
    const [first, ...rest] = r.messages;
    expect(first!.content.type).toBe('text');
    const body = (first!.content as { text: string }).text;
    const named = [...body.matchAll(/\b[a-z]+(?:-[a-z]+)*-v1\b/g)].map((m) => m[0]);
    expect(named.length, body).toBeGreaterThan(2);
    for (const t of named) expect(toolNames.has(t), `${name} names ${t}`).toBe(true);
    expect(rest.length).toBeGreaterThan(0);
    for (const m of rest) {
      expect(m.content.type).toBe('resource_link');
      const uri = (m.content as { uri: string }).uri;
      expect(text(await c.readResource({ uri })).length, uri).toBeGreaterThan(2);
    }
  });

  it('puts the resolved arguments into the prompt', async () => {
    const t = (await c.getPrompt({ name: 'safe-update-run', arguments: fullArgs()['safe-update-run'] })).messages[0]!.content as {
      text: string;
    };
    expect(t.text).toContain(`update-site-plugins-v1 with site_id_or_domain 1, slugs ["${pluginSlug}"]`);
    const w = (await c.getPrompt({ name: 'weekly-maintenance', arguments: fullArgs()['weekly-maintenance'] })).messages[0]!.content as {
      text: string;
    };
    expect(w.text).toContain(`list-updates-v1 with {"tags":[${tagId}],"clients":[${clientId}]}`);
    expect(w.text).toContain('the sites tagged "Production"');
  });

  it.each([
    ['troubleshoot-site', {}, /Missing required argument for troubleshoot-site: site/],
    ['troubleshoot-site', { site: '99999' }, /Argument site: No site found with ID 99999\./],
    ['troubleshoot-site', { site: '1', colour: 'red' }, /Unknown argument for troubleshoot-site: colour/],
    ['troubleshoot-site', { site: '1', symptom: 'x'.repeat(501) }, /longer than 500 characters/],
    ['weekly-maintenance', { tag: 'no such tag' }, /Argument tag: no tag named "no such tag"/],
    ['client-report', { client: 'nobody@example.com' }, /Argument client: .*nobody@example\.com/],
    ['safe-update-run', { types: 'plugins,kernels' }, /"kernels" is not one of core, plugins, themes, translations/],
    ['safe-update-run', { plugin: 'akismet/akismet.php' }, /Argument plugin needs the site argument too/],
    ['safe-update-run', { site: '1', plugin: 'nope/nope.php' }, /has no plugin nope\/nope\.php/],
    ['onboard-site', { url: 'ftp://files.example.com' }, /is not an http\(s\) address/],
    ['no-such-prompt', {}, /Unknown prompt: no-such-prompt/],
  ] as const)('refuses %s %j with -32602', async (name, args, message) => {
    await expect(c.getPrompt({ name, arguments: args as Record<string, string> })).rejects.toMatchObject({ code: -32602, message });
  });

  it('completes sites by domain, name and id, and says when more match', async () => {
    const ref = { type: 'ref/prompt' as const, name: 'troubleshoot-site' };
    const byDomain = await c.complete({ ref, argument: { name: 'site', value: 'https://www.ALPHA' } });
    expect(byDomain.completion.values).toEqual(['alpha.example.com', 'alphabet.example.com']);
    const byName = await c.complete({ ref, argument: { name: 'site', value: 'bravo b' } });
    expect(byName.completion.values).toEqual(['bravo.example.com']);
    const byId = await c.complete({ ref, argument: { name: 'site', value: String(alpha) } });
    expect(byId.completion.values[0]).toBe(String(alpha));
    const none = await c.complete({ ref, argument: { name: 'site', value: 'zzz' } });
    expect(none.completion).toMatchObject({ values: [], hasMore: false });
  });

  it('completes tags, clients, update types, plugin slugs of the chosen site, and job ids', async () => {
    const weekly = { type: 'ref/prompt' as const, name: 'weekly-maintenance' };
    expect((await c.complete({ ref: weekly, argument: { name: 'tag', value: 'prod' } })).completion.values).toEqual(['Production']);
    expect((await c.complete({ ref: weekly, argument: { name: 'client', value: 'acme' } })).completion.values).toEqual([
      'boss@acme.example',
    ]);
    const upd = { type: 'ref/prompt' as const, name: 'safe-update-run' };
    expect((await c.complete({ ref: upd, argument: { name: 'types', value: 'plugins,t' } })).completion.values).toEqual([
      'plugins,themes',
      'plugins,translations',
    ]);
    const plugins = await c.complete({
      ref: upd,
      argument: { name: 'plugin', value: pluginSlug.slice(0, 3) },
      context: { arguments: { site: '1' } },
    });
    expect(plugins.completion.values).toContain(pluginSlug);
    const noSite = await c.complete({ ref: upd, argument: { name: 'plugin', value: '' } });
    expect(noSite.completion.values).toEqual([]);
    const job = await c.complete({
      ref: { type: 'ref/resource', uri: 'sitefleet://jobs/{job_id}' },
      argument: { name: 'job_id', value: 'check_' },
    });
    expect(job.completion.values).toContain(jobId);
    const tpl = await c.complete({
      ref: { type: 'ref/resource', uri: 'sitefleet://sites/{id}/plugins' },
      argument: { name: 'id', value: 'bra' },
    });
    expect(tpl.completion.values).toEqual(['bravo.example.com']);
  });

  it('serves per-site plugins, themes and pending updates as templates', async () => {
    const { resourceTemplates } = await c.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate).sort()).toEqual([
      'sitefleet://jobs/{job_id}',
      'sitefleet://sites/{id}',
      'sitefleet://sites/{id}/plugins',
      'sitefleet://sites/{id}/themes',
      'sitefleet://sites/{id}/updates',
    ]);
    const plugins = JSON.parse(text(await c.readResource({ uri: 'sitefleet://sites/1/plugins' })));
    expect(plugins).toMatchObject({ site_id: 1, page: 1, per_page: 100 });
    expect(plugins.plugins.map((p: { slug: string }) => p.slug)).toContain(pluginSlug);
    const themes = JSON.parse(text(await c.readResource({ uri: 'sitefleet://sites/1/themes' })));
    expect(themes.active_theme).toEqual(expect.any(String));
    const updates = JSON.parse(text(await c.readResource({ uri: 'sitefleet://sites/1/updates' })));
    expect(updates).toMatchObject({ site_id: 1, summary: expect.any(Object) });
    await expect(c.readResource({ uri: 'sitefleet://sites/99999/plugins' })).rejects.toMatchObject({ code: -32002 });
    await expect(c.readResource({ uri: 'sitefleet://sites/1/updates?page=2' })).rejects.toMatchObject({ code: -32002 });
  });

  it('lists a help resource per toolset, naming its tools and what each may do', async () => {
    const { resources } = await c.listResources();
    const help = resources.filter((r) => r.uri.startsWith('sitefleet://help/'));
    expect(help.length).toBeGreaterThanOrEqual(10);
    const tags = text(await c.readResource({ uri: 'sitefleet://help/tags' }));
    expect(tags).toMatch(/`add-tag-v1` — .*\(changes\)/);
    expect(tags).toMatch(/`delete-tag-v1` — .*confirm=true/);
    expect(tags).toMatch(/`list-tags-v1` — .*\(reads\)/);
    await expect(c.readResource({ uri: 'sitefleet://help/nothing' })).rejects.toMatchObject({ code: -32002 });
  });
});

describe('what a session may see', () => {
  it('keeps write steps and write prompts from a read-only stdio server', async () => {
    const c = await stdio(['--read-only']);
    const names = (await c.listPrompts()).prompts.map((p) => p.name).sort();
    expect(names).toEqual(['client-report', 'security-review', 'troubleshoot-site', 'weekly-maintenance']);
    const t = (await c.getPrompt({ name: 'troubleshoot-site', arguments: { site: '1' } })).messages[0]!.content as { text: string };
    expect(t.text).toContain('get-site-changes-v1');
    expect(t.text).not.toMatch(/check-site-v1|sync-sites-v1|reconnect-site-v1/);
  });

  it('offers a key that may not read sites no site completion and no per-site templates', async () => {
    const c = await http(f.s.creds.key.write);
    const r = await c.complete({ ref: { type: 'ref/resource', uri: 'sitefleet://sites/{id}' }, argument: { name: 'id', value: 'alpha' } });
    expect(r.completion.values).toEqual([]);
    expect((await c.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).not.toContain('sitefleet://sites/{id}/plugins');
    expect((await c.listPrompts()).prompts.map((p) => p.name)).toEqual(['onboard-site']);
  });
});

describe('per-session choice over HTTP', () => {
  it('serves only the toolsets named in X-MCP-Toolsets, and their help', async () => {
    const c = await http(undefined, { 'X-MCP-Toolsets': 'tags, updates' });
    const tools = (await c.listTools()).tools.map((t) => t.name);
    const expected = f.s.registry.abilities.filter((a) => a.toolset === 'tags' || a.toolset === 'updates').map((a) => a.name);
    expect(tools).toEqual(expected);
    const help = (await c.listResources()).resources.filter((r) => r.uri.startsWith('sitefleet://help/')).map((r) => r.uri);
    expect(help).toEqual(['sitefleet://help/tags', 'sitefleet://help/updates']);
    await expect(c.callTool({ name: 'list-sites-v1', arguments: {} })).rejects.toMatchObject({ code: -32602 });
  });

  it('serves only reads with X-MCP-Readonly: true, and the session cannot write even through a read tool', async () => {
    const c = await http(undefined, { 'X-MCP-Readonly': 'true' });
    const tools = (await c.listTools()).tools;
    expect(tools.length).toBeGreaterThan(10);
    expect(tools.every((t) => t.annotations?.readOnlyHint === true)).toBe(true);
    await expect(c.callTool({ name: 'add-tag-v1', arguments: { name: 'ro' } })).rejects.toMatchObject({ code: -32602 });
    // get-site-updates-v1 is a read, but refresh=true syncs the site first: a write this session may not make.
    const requests = f.sim.requests(1);
    const refresh = await c.callTool({ name: 'get-site-updates-v1', arguments: { site_id_or_domain: 1, refresh: true } });
    expect(refresh.isError).toBe(true);
    expect(refresh.structuredContent).toMatchObject({ data: { status: 403 } });
    expect(f.sim.requests(1)).toBe(requests);
    expect((await c.listPrompts()).prompts.map((p) => p.name)).not.toContain('safe-update-run');
  });

  it('never widens a key: a read key asking for write toolsets and no read-only gets no write tool', async () => {
    const c = await http(f.s.creds.key.read, { 'X-MCP-Toolsets': 'tags', 'X-MCP-Readonly': 'false' });
    const tools = (await c.listTools()).tools.map((t) => t.name).sort();
    expect(tools).toEqual(['get-tag-clients-v1', 'get-tag-sites-v1', 'get-tag-v1', 'list-tags-v1']);
  });

  it.each([
    [{ 'X-MCP-Toolsets': 'sites,nope' }, /X-MCP-Toolsets: unknown toolset "nope"/],
    [{ 'X-MCP-Toolsets': ' , ' }, /X-MCP-Toolsets: name at least one toolset/],
    [{ 'X-MCP-Readonly': 'yes' }, /X-MCP-Readonly: "yes" is not true or false/],
  ])('refuses %j at initialize with 400', async (headers, message) => {
    const r = await rawRequest(`${f.s.url}/mcp`, {
      method: 'POST',
      body: MCP_INITIALIZE,
      headers: { ...MCP_HEADERS, ...headers, authorization: `Bearer ${f.s.creds.key.read_write}` },
    });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'svc_invalid_input', message: expect.stringMatching(message), data: { status: 400 } });
  });
});
