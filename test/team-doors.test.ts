// Keys and users over the doors (issue 32): upstream's four REST key routes with their shapes, and the administrators-
// only abilities neither run nor offered (MCP tools/list) for anyone else.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from './support/server.js';

let s: TestServer;
let adminToken: string;
beforeAll(async () => {
  s = await startServer();
  adminToken = (await s.services.auth.createKey('root', 'read_write', { admin: true })).token;
});
afterAll(() => s?.close());

const ADMIN_ONLY = [
  'list-api-keys-v1',
  'add-api-key-v1',
  'update-api-key-v1',
  'revoke-api-key-v1',
  'list-dashboard-users-v1',
  'add-dashboard-user-v1',
  'update-dashboard-user-v1',
  'delete-dashboard-user-v1',
];

async function connectHttp(token: string): Promise<Client> {
  const client = new Client({ name: 'sitefleet-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  return client;
}

describe('REST /rest-api key routes', () => {
  it('adds a key (upstream body: description, permissions comma list, active), lists, edits and deletes it', async () => {
    const add = await s.rest('/rest-api/add-key', {
      method: 'POST',
      token: adminToken,
      json: { description: 'deploy bot', permissions: 'read,write', active: true },
    });
    expect(add.status).toBe(200);
    expect(add.body).toMatchObject({ success: 1, message: 'API Key created successfully.', token: expect.stringMatching(/^sf_/) });
    const id = add.body.data.id as number;
    expect(add.body.data).toMatchObject({ version: 'v2', description: 'deploy bot', permissions: ['Read', 'Write'], active: true });
    // The new key works at once, with the permission it was given.
    expect((await s.rest('/sites/count', { token: add.body.token })).status).toBe(200);

    const list = await s.rest('/rest-api/keys?per_page=2', { token: adminToken });
    expect(list.body).toMatchObject({ success: 1, total: expect.any(Number), pages: Math.ceil(list.body.total / 2) });
    expect(list.body.data).toHaveLength(2);
    expect(JSON.stringify(list.body)).not.toContain(add.body.token.slice(-20));

    const edit = await s.rest(`/rest-api/edit-key/${id}`, {
      method: 'PUT',
      token: adminToken,
      json: { description: 'reader', permissions: 'read' },
    });
    expect(edit.body).toMatchObject({ success: 1, data: { description: 'reader', permissions: ['Read'] } });
    expect((await s.rest('/tags/add', { method: 'POST', token: add.body.token, json: { name: 'nope' } })).status).toBe(403);

    const del = await s.rest(`/rest-api/delete-key/${id}`, { method: 'DELETE', token: adminToken });
    expect(del.body).toMatchObject({ success: 1, message: 'API Key deleted successfully.', data: { active: false } });
    // A revoked key is refused on its next request.
    expect((await s.rest('/sites/count', { token: add.body.token })).status).toBe(401);
    expect((await s.rest(`/rest-api/delete-key/99999`, { method: 'DELETE', token: adminToken })).body).toMatchObject({
      code: 'svc_key_not_found',
    });
  });

  it('refuses bad permissions and flags with their names, and a new key that is not active', async () => {
    const bad = await s.rest('/rest-api/add-key', { method: 'POST', token: adminToken, json: { permissions: 'read,admin' } });
    expect(bad).toMatchObject({ status: 400, body: { code: 'rest_invalid_param', data: { params: { permissions: expect.any(String) } } } });
    const inactive = await s.rest('/rest-api/add-key', { method: 'POST', token: adminToken, json: { permissions: 'read', active: false } });
    expect(inactive).toMatchObject({ status: 400, body: { data: { params: { active: expect.any(String) } } } });
    const unclear = await s.rest('/rest-api/edit-key/1', { method: 'PATCH', token: adminToken, json: { active: 'maybe' } });
    expect(unclear).toMatchObject({ status: 400, body: { data: { params: { active: expect.any(String) } } } });
  });

  it('answers 403 to a key that is not an administrator key, whatever its permissions, and 401 without one', async () => {
    expect((await s.rest('/rest-api/keys')).status).toBe(403);
    expect((await s.rest('/rest-api/add-key', { method: 'POST', json: { permissions: 'read' } })).status).toBe(403);
    expect((await s.rest('/rest-api/keys', { token: null })).status).toBe(401);
    expect(s.services.auth.listKeys().filter((k) => k.name === 'API key')).toHaveLength(0);
  });
});

describe('the abilities door', () => {
  it('lets an administrator user add a dashboard user and refuses a viewer', async () => {
    const made = await s.ability('add-dashboard-user-v1', { name: 'frank', role: 'viewer' });
    expect(made.status).toBe(200);
    expect(made.body).toMatchObject({ user: { name: 'frank', role: 'viewer' }, password: expect.any(String) });
    const refused = await s.ability('list-dashboard-users-v1', {}, { method: 'GET', auth: s.creds.viewer });
    expect(refused).toMatchObject({ status: 403, body: { code: 'svc_permission_denied' } });
  });
});

describe('MCP', () => {
  it('does not offer the administrators-only tools to a key that is not an administrator key, and refuses them as unknown', async () => {
    const c = await connectHttp(s.creds.key.read_write);
    try {
      const names = (await c.listTools()).tools.map((t) => t.name);
      for (const n of ADMIN_ONLY) expect(names).not.toContain(n);
      expect(names).toContain('add-tag-v1');
      await expect(c.callTool({ name: 'list-api-keys-v1', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    } finally {
      await c.close();
    }
  });

  it('offers them to an administrator key, and a read administrator key only the read ones', async () => {
    const c = await connectHttp(adminToken);
    const ro = await connectHttp((await s.services.auth.createKey('ro-admin', 'read', { admin: true })).token);
    try {
      const names = (await c.listTools()).tools.map((t) => t.name);
      for (const n of ADMIN_ONLY) expect(names).toContain(n);
      const listed: any = await c.callTool({ name: 'list-dashboard-users-v1', arguments: {} });
      expect(listed.structuredContent.total).toBeGreaterThan(1);
      const roNames = (await ro.listTools()).tools.map((t) => t.name);
      expect(ADMIN_ONLY.filter((n) => roNames.includes(n))).toEqual(['list-api-keys-v1', 'list-dashboard-users-v1']);
    } finally {
      await c.close();
      await ro.close();
    }
  });
});
