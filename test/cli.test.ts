// The command line contract: serve bootstrap, keys, users, modules, --help, and serve + mcp sharing one data dir.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, cli, lastLine, serveProcess } from './support/process.js';
import { tempDir } from './support/server.js';

const stops: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const s of stops) await s();
});

describe('sitefleet serve', () => {
  it('prints an administrator and an API key once, on an empty data dir, and they work', async () => {
    const dir = tempDir();
    const p = await serveProcess(['--data-dir', dir]);
    const out = p.stdout();
    const token = /API key:\s+(\S+)/.exec(out)![1]!;
    const password = /password:\s+(.+)/.exec(out)![1]!.trim();
    expect((await fetch(`${p.url}/wp-json/svc/v2/sites`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    const basic = `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
    expect((await fetch(`${p.url}/wp-json/wp-abilities/v1/abilities`, { headers: { authorization: basic } })).status).toBe(200);
    expect(await p.stop()).toBe(0);
    const again = await serveProcess(['--data-dir', dir]);
    expect(again.stdout()).not.toMatch(/API key:/);
    await again.stop();
  });

  it('mounts the doors where --rest-prefix and --abilities-prefix say', async () => {
    const dir = tempDir();
    const k = await cli(['keys', 'create', '--name', 'x', '--data-dir', dir]);
    const p = await serveProcess(['--data-dir', dir, '--rest-prefix', '/wp-json/mainwp/v2', '--abilities-prefix', '/abilities']);
    stops.push(() => p.stop());
    const r = await fetch(`${p.url}/wp-json/mainwp/v2/sites/count`, { headers: { authorization: `Bearer ${lastLine(k.stdout)}` } });
    expect(await r.json()).toMatchObject({ success: 1, count: 0 });
    expect((await fetch(`${p.url}/abilities/categories`, { headers: { authorization: `Bearer ${lastLine(k.stdout)}` } })).status).toBe(200);
  });

  it('takes SITEFLEET_* from the environment and rejects a bad port', async () => {
    const bad = await cli(['serve', '--data-dir', tempDir()], { SITEFLEET_PORT: 'eighty' });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--port must be an integer/);
  });
});

describe('keys, users and modules', () => {
  const dir = tempDir();
  it('creates a key and prints the token alone on the last line; lists and revokes it', async () => {
    const c = await cli(['keys', 'create', '--name', 'ci', '--permissions', 'read', '--data-dir', dir]);
    expect(c.code).toBe(0);
    expect(lastLine(c.stdout)).toMatch(/^sf_[0-9a-f]{12}_[A-Za-z0-9_-]{32}$/);
    const l = await cli(['keys', 'list', '--data-dir', dir]);
    expect(l.stdout).toMatch(/^1\tci\tread\tactive/m);
    expect(l.stdout).not.toContain(lastLine(c.stdout));
    expect((await cli(['keys', 'revoke', '1', '--data-dir', dir])).code).toBe(0);
    expect((await cli(['keys', 'list', '--data-dir', dir])).stdout).toMatch(/^1\tci\tread\trevoked/m);
  });

  it('refuses a bad permission and an unknown key id', async () => {
    expect((await cli(['keys', 'create', '--name', 'x', '--permissions', 'admin', '--data-dir', dir])).code).toBe(2);
    const r = await cli(['keys', 'revoke', '99', '--data-dir', dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/No API key with ID 99/);
  });

  it('creates users with an application password on the last line, lists and deletes them', async () => {
    const c = await cli(['users', 'create', '--name', 'ann', '--role', 'viewer', '--data-dir', dir]);
    expect(lastLine(c.stdout)).toMatch(/^([A-Za-z0-9]{4} ){5}[A-Za-z0-9]{4}$/);
    expect((await cli(['users', 'list', '--data-dir', dir])).stdout).toMatch(/\tann\tviewer\t/);
    expect((await cli(['users', 'create', '--name', 'ann', '--data-dir', dir])).stderr).toMatch(/already exists/);
    expect((await cli(['users', 'delete', 'ann', '--data-dir', dir])).code).toBe(0);
    expect((await cli(['users', 'delete', 'ann', '--data-dir', dir])).code).toBe(1);
  });

  it('gives users and keys a role and a scope, and refuses a scope that names nothing or is malformed', async () => {
    const made = await cli(['users', 'create', '--name', 'mia', '--role', 'manager', '--data-dir', dir]);
    expect(made.code).toBe(0);
    expect((await cli(['users', 'list', '--data-dir', dir])).stdout).toMatch(/\tmia\tmanager\twhole fleet\t/);
    const unknown = await cli(['users', 'set-scope', 'mia', '--tags', '9', '--data-dir', dir]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No tag found with ID 9|tag.*9/i);
    expect((await cli(['users', 'set-scope', 'mia', '--sites', '1,x', '--data-dir', dir])).code).toBe(2);
    const client = await cli(['users', 'create', '--name', 'cleo', '--role', 'client', '--data-dir', dir]);
    expect(client.code).toBe(1);
    expect(client.stderr).toMatch(/exactly one client/);
    const adminKey = await cli(['keys', 'create', '--name', 'k', '--admin', '--clients', '1', '--data-dir', dir]);
    expect(adminKey.code).toBe(1);
    expect(adminKey.stderr).toMatch(/Administrators see the whole fleet/);
    expect((await cli(['users', 'delete', 'mia', '--data-dir', dir])).code).toBe(0);
  });

  it('switches modules', async () => {
    expect((await cli(['modules', 'disable', 'logs', '--data-dir', dir])).code).toBe(0);
    expect((await cli(['modules', 'list', '--data-dir', dir])).stdout).toMatch(/^logs\tdisabled$/m);
    expect((await cli(['modules', 'enable', 'nope', '--data-dir', dir])).code).toBe(2);
  });

  it('has --help on every command and rejects unknown ones', async () => {
    for (const cmd of ['serve', 'mcp', 'keys', 'users', 'modules', 'child-sim', 'demo']) {
      const r = await cli([cmd, '--help']);
      expect(r.code, cmd).toBe(0);
      expect(r.stdout, cmd).toMatch(/Usage: sitefleet/);
    }
    const u = await cli(['frobnicate']);
    expect(u.code).toBe(2);
    expect(u.stderr).toMatch(/Unknown command "frobnicate"/);
  });
});

describe('serve and mcp on one data dir', () => {
  it("loses no write from either and each sees the other's changes", async () => {
    const dir = tempDir();
    const token = lastLine((await cli(['keys', 'create', '--name', 'k', '--data-dir', dir])).stdout);
    const p = await serveProcess(['--data-dir', dir]);
    stops.push(() => p.stop());
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'mcp', '--data-dir', dir],
        env: { ...process.env, SITEFLEET_LOG: 'warn' } as Record<string, string>,
      }),
    );
    stops.push(() => client.close());
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const viaRest = Array.from({ length: 25 }, (_, i) =>
      fetch(`${p.url}/wp-json/svc/v2/tags/add`, { method: 'POST', headers, body: JSON.stringify({ name: `rest-${i}` }) }).then(
        (r) => r.status,
      ),
    );
    const viaMcp = Array.from({ length: 25 }, (_, i) =>
      client.callTool({ name: 'add-tag-v1', arguments: { name: `mcp-${i}` } }).then((r) => (r.isError ? 500 : 200)),
    );
    expect(await Promise.all([...viaRest, ...viaMcp])).toEqual(Array(50).fill(200));
    const listed = (await (await fetch(`${p.url}/wp-json/svc/v2/tags?per_page=100`, { headers })).json()) as {
      total: number;
      data: Array<{ id: number }>;
    };
    expect(listed.total).toBe(50);
    expect(new Set(listed.data.map((t) => t.id)).size).toBe(50);
    const seen = await client.callTool({ name: 'list-tags-v1', arguments: { per_page: 100 } });
    expect((seen.structuredContent as { total: number }).total).toBe(50);
  });
});
