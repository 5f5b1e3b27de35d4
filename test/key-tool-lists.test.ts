// Per-key allow / deny lists of tools (issue 33 item 4): set on keys through the REST key routes, the abilities door and
// the CLI; applied on every door (REST v2, abilities v1, MCP tools/list and tools/call), never widening the key's
// permission level, and followed at once by an open MCP session.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from './support/process.js';
import { startServer, tempDir, type TestServer } from './support/server.js';

let s: TestServer;
let adminToken: string;
beforeAll(async () => {
  s = await startServer();
  adminToken = (await s.services.auth.createKey('root', 'read_write', { admin: true })).token;
});
afterAll(() => s?.close());

async function connectHttp(token: string): Promise<Client> {
  const client = new Client({ name: 'sitefleet-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  return client;
}

const bearer = (t: string) => `Bearer ${t}`;

describe('an allow list', () => {
  it('limits the key to the tools it names on REST, the abilities door and MCP', async () => {
    const { token } = await s.services.auth.createKey('counter', 'read_write', { allow_tools: ['count-sites-v1', 'list-tags-v1'] });
    expect((await s.rest('/sites/count', { token })).status).toBe(200);
    expect((await s.rest('/tags', { token })).status).toBe(200);
    const rest = await s.rest('/tags/add', { method: 'POST', token, json: { name: 'nope' } });
    expect(rest).toMatchObject({ status: 403, body: { code: 'svc_permission_denied', message: expect.stringContaining('add-tag-v1') } });
    expect((await s.rest('/sites', { token })).status).toBe(403);

    expect((await s.ability('count-sites-v1', {}, { method: 'GET', auth: bearer(token) })).status).toBe(200);
    const door = await s.ability('add-tag-v1', { name: 'nope' }, { auth: bearer(token) });
    expect(door).toMatchObject({ status: 403, body: { code: 'svc_permission_denied' } });

    const c = await connectHttp(token);
    try {
      expect((await c.listTools()).tools.map((t) => t.name).sort()).toEqual(['count-sites-v1', 'list-tags-v1']);
      await expect(c.callTool({ name: 'add-tag-v1', arguments: { name: 'nope' } })).rejects.toMatchObject({ code: -32602 });
      expect((await c.callTool({ name: 'count-sites-v1', arguments: {} })).isError).toBeFalsy();
    } finally {
      await c.close();
    }
    expect([...s.services.store.all<{ id: number; name: string }>('tags')].map((t) => t.name)).not.toContain('nope');
  });

  it('never widens the permission level: a read key allowed a write tool still may not write', async () => {
    const { token } = await s.services.auth.createKey('reader', 'read', { allow_tools: ['add-tag-v1', 'list-tags-v1'] });
    expect((await s.rest('/tags/add', { method: 'POST', token, json: { name: 'wider' } })).status).toBe(403);
    expect((await s.ability('add-tag-v1', { name: 'wider' }, { auth: bearer(token) })).status).toBe(403);
    const c = await connectHttp(token);
    try {
      expect((await c.listTools()).tools.map((t) => t.name)).toEqual(['list-tags-v1']);
    } finally {
      await c.close();
    }
  });
});

describe('a deny list', () => {
  it('takes the tools it names away on every door and leaves the rest', async () => {
    const { token } = await s.services.auth.createKey('no-sites', 'read_write', { deny_tools: ['list-sites-v1', 'svc/add-tag-v1'] });
    expect((await s.rest('/sites', { token })).status).toBe(403);
    expect((await s.rest('/sites/count', { token })).status).toBe(200);
    expect((await s.rest('/tags/add', { method: 'POST', token, json: { name: 'denied' } })).status).toBe(403);
    expect((await s.ability('list-sites-v1', {}, { method: 'GET', auth: bearer(token) })).status).toBe(403);
    const c = await connectHttp(token);
    try {
      const names = (await c.listTools()).tools.map((t) => t.name);
      expect(names).not.toContain('list-sites-v1');
      expect(names).not.toContain('add-tag-v1');
      expect(names).toContain('update-tag-v1');
    } finally {
      await c.close();
    }
  });
});

describe('editing the lists', () => {
  it('sets and clears them on the REST key routes, and an open MCP session follows at once', async () => {
    const add = await s.rest('/rest-api/add-key', {
      method: 'POST',
      token: adminToken,
      json: { description: 'bot', permissions: 'read,write' },
    });
    const id = add.body.data.id as number;
    const token = add.body.token as string;
    const c = await connectHttp(token);
    try {
      expect((await c.callTool({ name: 'list-tags-v1', arguments: {} })).isError).toBeFalsy();
      const edit = await s.rest(`/rest-api/edit-key/${id}`, {
        method: 'PUT',
        token: adminToken,
        json: { deny_tools: 'list-tags-v1,get-tag-v1' },
      });
      expect(edit.body).toMatchObject({ success: 1, data: { deny_tools: ['get-tag-v1', 'list-tags-v1'], allow_tools: null } });
      await expect(c.callTool({ name: 'list-tags-v1', arguments: {} })).rejects.toMatchObject({ code: -32602 });
      expect((await c.listTools()).tools.map((t) => t.name)).not.toContain('list-tags-v1');
      const cleared = await s.rest(`/rest-api/edit-key/${id}`, { method: 'PATCH', token: adminToken, json: { deny_tools: '' } });
      expect(cleared.body.data.deny_tools).toBeNull();
      expect((await c.callTool({ name: 'list-tags-v1', arguments: {} })).isError).toBeFalsy();
    } finally {
      await c.close();
    }
  });

  it('refuses a name that is no tool, naming it, and a list past 500 names, and changes nothing', async () => {
    const admin = { auth: bearer(adminToken) };
    const made = await s.ability('add-api-key-v1', { name: 'listed' }, admin);
    const id = made.body.key.id as number;
    expect(made.body.key).toMatchObject({ allow_tools: null, deny_tools: null });
    const typo = await s.ability('update-api-key-v1', { key_id: id, allow_tools: ['list-sites-v1', 'list-site-v1'] }, admin);
    expect(typo).toMatchObject({ status: 400, body: { code: 'svc_invalid_input', message: expect.stringContaining('"list-site-v1"') } });
    expect(s.services.auth.getKey(id).allow_tools).toBeNull();
    const long = await s.ability('update-api-key-v1', { key_id: id, deny_tools: Array(501).fill('list-sites-v1') }, admin);
    expect(long.status).toBe(400);
    const most = await s.ability('update-api-key-v1', { key_id: id, deny_tools: Array(500).fill('list-sites-v1') }, admin);
    expect(most).toMatchObject({ status: 200, body: { deny_tools: ['list-sites-v1'] } });
    const ok = await s.ability('update-api-key-v1', { key_id: id, allow_tools: ['svc/list-sites-v1'], deny_tools: [] }, admin);
    expect(ok).toMatchObject({ status: 200, body: { allow_tools: ['list-sites-v1'], deny_tools: null } });
  });

  it('sets them from the command line (keys create, keys tools) and lists them', async () => {
    const dir = tempDir();
    const made = await cli([
      'keys',
      'create',
      '--name',
      'ci',
      '--permissions',
      'read',
      '--allow-tools',
      'list-sites-v1,count-sites-v1',
      '--data-dir',
      dir,
    ]);
    expect(made.code).toBe(0);
    expect((await cli(['keys', 'list', '--data-dir', dir])).stdout).toContain('allow:count-sites-v1,list-sites-v1');
    const denied = await cli(['keys', 'tools', '1', '--allow-tools', '', '--deny-tools', 'list-tags-v1', '--data-dir', dir]);
    expect(denied).toMatchObject({ code: 0, stdout: expect.stringContaining('allow -; deny list-tags-v1') });
    const unknown = await cli(['keys', 'tools', '1', '--deny-tools', 'no-such-v1', '--data-dir', dir]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('no-such-v1');
    // keys create checks its lists too (it loads the abilities only when it has a list), and makes no key when one is wrong.
    const badCreate = await cli(['keys', 'create', '--name', 'bad', '--allow-tools', 'list-sites-v1,nope-v1', '--data-dir', dir]);
    expect(badCreate.code).not.toBe(0);
    expect(badCreate.stderr).toContain('no tool named "nope-v1"');
    const plain = await cli(['keys', 'create', '--name', 'plain', '--data-dir', dir]);
    expect(plain.code).toBe(0);
    const listed = (await cli(['keys', 'list', '--data-dir', dir])).stdout.trim().split('\n');
    expect(listed.map((l) => l.split('\t')[1])).toEqual(['ci', 'plain']);
  });
});
