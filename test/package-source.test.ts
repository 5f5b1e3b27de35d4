// The package source: the wordpress.org directory's info/1.2 API shapes (here the simulator's stand-in at /__sim/dir/,
// the real-site lane uses the kit's /__rc/dir/), resolving a slug and version to a download link, searching, and
// every way the directory can fail, through the service and every door.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildSim, type ChildSim } from '../src/child/simulator/server.js';
import { loadConfig } from '../src/config.js';
import { PackageSource } from '../src/domain/package-source.js';
import { buildMcpServer } from '../src/mcp/server.js';
import { expectError, expectSchema } from './support/fixtures.js';
import { startServer, type TestServer } from './support/server.js';

let sim: ChildSim;
let s: TestServer;
let dir: string;
let mcp: Client;
const servers: Server[] = [];

/** A loopback HTTP server answering every request with `handler` (a directory that misbehaves). */
async function misbehaving(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const srv = createServer(handler);
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`;
}

async function failure(p: Promise<unknown>): Promise<{ code: string; status: number; message: string }> {
  try {
    await p;
  } catch (e) {
    return e as { code: string; status: number; message: string };
  }
  throw new Error('expected a failure');
}

beforeAll(async () => {
  sim = await startChildSim({ sites: 1 });
  dir = `${sim.baseUrl}/__sim/dir/`;
  s = await startServer({ config: { packageSource: dir } });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await buildMcpServer(s.registry, { principal: { kind: 'local', name: 'stdio' } }).connect(a);
  mcp = new Client({ name: 'package-source-test', version: '1' });
  await mcp.connect(b);
});
afterAll(async () => {
  await mcp?.close();
  await s?.close();
  await sim?.close();
  for (const srv of servers) {
    srv.closeAllConnections();
    srv.close();
  }
});

describe('resolving a slug (and a version) to a package', () => {
  it('answers the stable version with its download link, or the version asked for', async () => {
    const src = s.services.packages;
    const stable = await src.resolve('plugin', 'sim-delta');
    expect(stable).toMatchObject({
      type: 'plugin',
      slug: 'sim-delta',
      name: 'Sim Delta',
      version: '1.1.0',
      stable_version: '1.1.0',
      download_url: `${dir}plugin/sim-delta.1.1.0.zip`,
      author: 'Simulator',
      parent: null,
    });
    const old = await src.resolve('plugin', 'sim-delta', '1.0.0');
    expect(old).toMatchObject({ version: '1.0.0', stable_version: '1.1.0', download_url: `${dir}plugin/sim-delta.1.0.0.zip` });
    const theme = await src.resolve('theme', 'sim-nova-child');
    expect(theme).toMatchObject({
      type: 'theme',
      version: '1.0.0',
      parent: 'sim-nova',
      download_url: `${dir}theme/sim-nova-child.1.0.0.zip`,
    });
    expect((await src.resolve('theme', 'sim-nova')).requires_php).toBe('7.4');
  });

  it('an unknown slug or version is a 404 naming it; a malformed slug or version is refused before any request', async () => {
    const src = s.services.packages;
    expect(await failure(src.resolve('plugin', 'no-such-plugin'))).toMatchObject({ code: 'svc_package_not_found', status: 404 });
    expect(await failure(src.resolve('theme', 'no-such-theme'))).toMatchObject({ code: 'svc_package_not_found', status: 404 });
    const v = await failure(src.resolve('plugin', 'sim-delta', '9.9.9'));
    expect(v).toMatchObject({ code: 'svc_package_version_not_found', status: 404 });
    expect(v.message).toContain('1.0.0, 1.1.0');
    expect(await failure(src.resolve('plugin', '../etc'))).toMatchObject({ code: 'svc_invalid_slug', status: 400 });
    expect(await failure(src.resolve('plugin', 'Sim-Delta'))).toMatchObject({ code: 'svc_invalid_slug', status: 400 });
    expect(await failure(src.resolve('plugin', 'sim-delta', '1.0/../x'))).toMatchObject({ code: 'svc_invalid_version', status: 400 });
  });
});

describe('the directory failing', () => {
  it('a private address is refused by the address policy unless private sites are allowed', async () => {
    const strict = new PackageSource({ base: dir, allowPrivate: false });
    try {
      expect(await failure(strict.resolve('plugin', 'sim-delta'))).toMatchObject({ code: 'svc_address_not_allowed', status: 400 });
      const named = new PackageSource({ base: dir.replace('127.0.0.1', 'localhost'), allowPrivate: false });
      expect(await failure(named.resolve('plugin', 'sim-delta'))).toMatchObject({ code: 'svc_address_not_allowed', status: 400 });
      await named.close();
    } finally {
      await strict.close();
    }
  });

  it('nothing listening is a 502; no answer within the bound a 504', async () => {
    const closed = await misbehaving(() => {});
    const port = new URL(closed).port;
    servers.pop()!.close();
    const down = new PackageSource({ base: `http://127.0.0.1:${port}/`, allowPrivate: true });
    expect(await failure(down.resolve('plugin', 'x'))).toMatchObject({ code: 'svc_package_source_unavailable', status: 502 });
    await down.close();
    const hung = new PackageSource({ base: await misbehaving(() => {}), allowPrivate: true, timeoutMs: 150 });
    expect(await failure(hung.resolve('plugin', 'x'))).toMatchObject({ code: 'svc_package_source_timeout', status: 504 });
    await hung.close();
  });

  it('an answer past the byte bound, not JSON, or of another shape is a 502', async () => {
    const big = await misbehaving((_q, res) => res.end(JSON.stringify({ name: 'x', pad: 'y'.repeat(5000) })));
    const chunked = await misbehaving((_q, res) => {
      res.write('{"pad":"');
      res.write('z'.repeat(3000));
      res.end('"}');
    });
    const html = await misbehaving((_q, res) => res.end('<html>maintenance</html>'));
    const odd = await misbehaving((_q, res) => res.end(JSON.stringify({ slug: 'x' })));
    const teapot = await misbehaving((_q, res) => {
      res.statusCode = 500;
      res.end(JSON.stringify({ error: 'Database down' }));
    });
    const cases: Array<[string, RegExp]> = [
      [big, /larger than 1000 bytes/],
      [chunked, /larger than 1000 bytes/],
      [html, /not JSON/],
      [odd, /without a version or a download link/],
      [teapot, /HTTP 500: Database down/],
    ];
    for (const [base, message] of cases) {
      const src = new PackageSource({ base, allowPrivate: true, maxReplyBytes: 1000 });
      const e = await failure(src.resolve('plugin', 'x'));
      expect(e, base).toMatchObject({ code: 'svc_package_source_unavailable', status: 502 });
      expect(e.message).toMatch(message);
      await src.close();
    }
  });

  it('--package-source must be an http(s) URL without credentials, query or fragment; the default is api.wordpress.org', () => {
    expect(loadConfig({}, {}).packageSource).toBe('https://api.wordpress.org/');
    expect(loadConfig({ packageSource: 'http://dir.example/base' }, {}).packageSource).toBe('http://dir.example/base/');
    expect(loadConfig({}, { SITEFLEET_PACKAGE_SOURCE: 'https://mirror.example/' }).packageSource).toBe('https://mirror.example/');
    for (const bad of ['ftp://x.example/', 'https://u:p@x.example/', 'https://x.example/?a=1', 'not a url'])
      expect(() => loadConfig({ packageSource: bad }, {}), bad).toThrow(/--package-source/);
  });
});

describe('searching the directory through every door', () => {
  it('the abilities door pages through the results (total and pages from the directory)', async () => {
    const r = await s.ability('search-plugin-directory-v1', { search: 'form', per_page: 2, page: 1 });
    expect(r.status).toBe(200);
    expectSchema(r.body, s.registry.schemas(s.registry.get('search-plugin-directory-v1')!).output);
    expect(r.body).toMatchObject({ total: 3, pages: 2, page: 1, per_page: 2, source: dir });
    expect(r.body.items.map((i: { slug: string }) => i.slug)).toEqual(['contact-form-lite', 'contact-form-sim']);
    expect(r.body.items[0]).toMatchObject({ name: 'Contact Form Lite', version: '2.3.1', author: 'Simulator', rating: 90 });
    const next = await s.ability('search-plugin-directory-v1', { search: 'form', per_page: 2, page: 2 });
    expect(next.body.items.map((i: { slug: string }) => i.slug)).toEqual(['form-builder-sim']);
    const themes = await s.ability('search-theme-directory-v1', { search: 'nova' });
    expect(themes.body).toMatchObject({ total: 2, per_page: 10 });
    expect(themes.body.items.map((i: { slug: string }) => i.slug)).toEqual(['sim-nova', 'sim-nova-child']);
  });

  it('REST answers the same page; per_page past the bound and an empty search are refused', async () => {
    const r = await s.rest('/directory/plugins?search=form&per_page=2&page=2');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, total: 3, pages: 2, page: 2, per_page: 2 });
    expect(r.body.data.map((i: { slug: string }) => i.slug)).toEqual(['form-builder-sim']);
    expect((await s.rest('/directory/themes?search=nova')).body.total).toBe(2);
    expect((await s.rest('/directory/plugins?search=contact&per_page=51')).status).toBe(400);
    expectError(await s.ability('search-plugin-directory-v1', { search: 'x', per_page: 51 }), 400, 'ability_invalid_input');
    expectError(await s.ability('search-plugin-directory-v1', { search: '  ' }), 400, 'ability_invalid_input');
    expect((await s.rest('/directory/plugins', { token: null })).status).toBe(401);
  });

  it('MCP lists the search tools as read-only and open-world, and answers through them', async () => {
    const tools = (await mcp.listTools()).tools.filter((t) => t.name.includes('directory'));
    expect(tools.map((t) => t.name).sort()).toEqual(['search-plugin-directory-v1', 'search-theme-directory-v1']);
    for (const t of tools) expect(t.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: true });
    const r = await mcp.callTool({ name: 'search-plugin-directory-v1', arguments: { search: 'delta' } });
    expect(r.isError).toBeFalsy();
    expect((r.structuredContent as { items: Array<{ slug: string }> }).items.map((i) => i.slug)).toEqual(['sim-delta']);
  });

  it('a directory that is down is a 502 on every door', async () => {
    const down = await startServer({ config: { packageSource: 'http://127.0.0.1:9/' } });
    try {
      expectError(await down.ability('search-theme-directory-v1', { search: 'x' }), 502, 'svc_package_source_unavailable');
      const r = await down.rest('/directory/plugins?search=x');
      expect(r.status).toBe(502);
      expect(r.body.code).toBe('svc_package_source_unavailable');
    } finally {
      await down.close();
    }
  });
});
