// Issue 6 (clients) and issue 4 point 5 (get-site-client-v1, GET /sites/{id_or_domain}/client): clients as a
// resource through the abilities door, REST v2 and MCP (in process); client_id on sites; tag clients.
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildMcpServer } from '../src/mcp/server.js';
import { expectError, expectSchema, invalidInput, seedFleet, type Fleet } from './support/fixtures.js';
import { startServer, type TestServer } from './support/server.js';

interface World {
  s: TestServer;
  fleet: Fleet;
  mcp: McpClient;
}

async function world(): Promise<World> {
  const s = await startServer();
  const fleet = await seedFleet(s.services);
  const [a, b] = InMemoryTransport.createLinkedPair();
  await buildMcpServer(s.registry, { principal: { kind: 'local', name: 'stdio' } }).connect(a);
  const mcp = new McpClient({ name: 'clients-test', version: '1.0.0' });
  await mcp.connect(b);
  return { s, fleet, mcp };
}
const close = async (w: World) => {
  await w.mcp.close();
  await w.s.close();
};

const BLANK = {
  phone: '',
  address_1: '',
  address_2: '',
  city: '',
  state: '',
  zip: '',
  country: '',
  note: '',
  facebook: '',
  twitter: '',
  instagram: '',
  linkedin: '',
};
const outputSchema = (s: TestServer, name: string) => s.registry.schemas(s.registry.get(name)!).output;
const tool = async (mcp: McpClient, name: string, args: Record<string, unknown>) => mcp.callTool({ name, arguments: args }) as Promise<any>;
const names = (items: Array<{ name: string }>) => items.map((c) => c.name);

// The fleet: Beta Ltd (ops@beta.example) owns charlie (3); Acme Corp (it@acme.example) owns alpha (1) and bravo (2).

describe('add-client-v1, get-client-v1, update-client-v1', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });
  afterAll(async () => {
    await close(w);
  });

  it('creates a client with only a name: status active, contact fields empty', async () => {
    const r = await w.s.ability('add-client-v1', { name: '  Gamma <b>GmbH</b> ' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      id: r.body.id,
      name: 'Gamma GmbH',
      email: '',
      status: 'active',
      ...BLANK,
      sites_count: 0,
      created_at: expect.any(String),
      updated_at: r.body.created_at,
    });
    expectSchema(r.body, outputSchema(w.s, 'add-client-v1'));
  });

  it('keeps every contact field and a chosen status', async () => {
    const contact = {
      phone: '+49 30 1234',
      address_1: 'Main St 1',
      address_2: 'Floor 2',
      city: 'Berlin',
      state: 'BE',
      zip: '10115',
      country: 'DE',
      note: 'Pays late',
      facebook: 'delta.fb',
      twitter: '@delta',
      instagram: 'delta.ig',
      linkedin: 'delta-co',
    };
    const r = await w.s.ability('add-client-v1', { name: 'Delta Co', email: 'Boss@Delta.example', status: 'lead', ...contact });
    expect(r.body).toMatchObject({ name: 'Delta Co', email: 'Boss@Delta.example', status: 'lead', ...contact, sites_count: 0 });
    const byEmail = await w.s.ability('get-client-v1', { client_id_or_email: 'boss@delta.example' }, { method: 'GET' });
    expect(byEmail.body).toEqual(r.body);
    expect((await w.s.ability('get-client-v1', { client_id_or_email: String(r.body.id) }, { method: 'GET' })).body).toEqual(r.body);
  });

  it('validates the e-mail, the status (listing the allowed ones) and the name', async () => {
    const { s } = w;
    const before = s.services.store.count('clients');
    expectError(
      await s.ability('add-client-v1', { name: 'X', email: 'not-an-email' }),
      400,
      'ability_invalid_input',
      invalidInput('add-client-v1', 'input[email] is not a valid email.'),
    );
    const st = await s.ability('add-client-v1', { name: 'X', status: 'vip' });
    expectError(
      st,
      400,
      'ability_invalid_input',
      invalidInput('add-client-v1', 'input[status] is not one of active, suspended, lead, and lost.'),
    );
    expect(st.body.data.params).toEqual({ status: 'input[status] is not one of active, suspended, lead, and lost.' });
    expectError(
      await s.ability('add-client-v1', {}),
      400,
      'ability_invalid_input',
      invalidInput('add-client-v1', 'name is a required property of input.'),
    );
    expectError(await s.ability('add-client-v1', { name: '<i></i>' }), 400, 'svc_invalid_input', 'Client name must not be empty.');
    expectError(
      await s.ability('add-client-v1', { name: 'X', fax: '1' }),
      400,
      'ability_invalid_input',
      invalidInput('add-client-v1', 'fax is not a valid property of Object.'),
    );
    expect(s.services.store.count('clients')).toBe(before);
  });

  it('updates only the fields given; null clears the e-mail', async () => {
    const { s } = w;
    const c = (await s.ability('add-client-v1', { name: 'Epsilon', email: 'e@eps.example', city: 'Rome', phone: '1' })).body;
    const r = await s.ability('update-client-v1', { client_id_or_email: 'e@eps.example', status: 'suspended', city: 'Milan' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ...c, status: 'suspended', city: 'Milan', updated_at: expect.any(String) });
    const cleared = await s.ability('update-client-v1', { client_id_or_email: c.id, email: null, name: 'Epsilon SpA' });
    expect(cleared.body).toMatchObject({ name: 'Epsilon SpA', email: '', phone: '1', city: 'Milan', status: 'suspended' });
    expectError(await s.ability('update-client-v1', { client_id_or_email: c.id, email: 'it@acme.example' }), 409, 'svc_client_exists');
    expectError(
      await s.ability('update-client-v1', { client_id_or_email: c.id, status: 'gone' }),
      400,
      'ability_invalid_input',
      invalidInput('update-client-v1', 'input[status] is not one of active, suspended, lead, and lost.'),
    );
    expectError(await s.ability('update-client-v1', { client_id_or_email: 999, name: 'x' }), 404, 'svc_client_not_found');
  });
});

describe('client_id on sites', () => {
  let w: World;
  beforeEach(async () => {
    w = await world();
  });
  afterEach(async () => {
    await close(w);
  });

  it('must name an existing client (404 svc_client_not_found) on update-site-v1 and REST edit; null unassigns', async () => {
    const { s, fleet } = w;
    const beta = fleet.clients[0]!;
    expectError(
      await s.ability('update-site-v1', { site_id_or_domain: 4, client_id: 999 }),
      404,
      'svc_client_not_found',
      'No client found with ID 999.',
    );
    expectError(await s.rest('/sites/4/edit', { method: 'PATCH', json: { client_id: 999 } }), 404, 'svc_client_not_found');
    expect(s.services.sites.get(4)!.client_id).toBeNull();
    expect((await s.ability('update-site-v1', { site_id_or_domain: 4, client_id: beta.id })).body.client_id).toBe(beta.id);
    expect((await s.ability('get-client-v1', { client_id_or_email: beta.id }, { method: 'GET' })).body.sites_count).toBe(2);
    expect((await s.ability('update-site-v1', { site_id_or_domain: 4, client_id: null })).body.client_id).toBeNull();
    expect((await s.ability('get-client-v1', { client_id_or_email: beta.id }, { method: 'GET' })).body.sites_count).toBe(1);
  });

  it('get-tag-clients-v1 and GET /tags/{id}/clients list real clients with sites_with_tag, following edits', async () => {
    const { s, fleet } = w;
    const [beta, acme] = fleet.clients;
    await s.ability('update-client-v1', { client_id_or_email: acme!.id, name: 'Acme Group' });
    const r = await s.ability('get-tag-clients-v1', { tag_id: fleet.tags.production.id });
    expect(r.body.clients).toEqual([
      { id: acme!.id, name: 'Acme Group', email: 'it@acme.example', status: 'active', sites_with_tag: 2 },
      { id: beta!.id, name: 'Beta Ltd', email: 'ops@beta.example', status: 'active', sites_with_tag: 1 },
    ]);
    const rest = await s.rest(`/tags/${fleet.tags.production.id}/clients`);
    expect(rest.body).toMatchObject({
      success: 1,
      total: 2,
      data: [
        { name: 'Acme Group', sites_with_tag: 2 },
        { name: 'Beta Ltd', sites_with_tag: 1 },
      ],
    });
  });
});

describe('REST client routes', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });
  afterAll(async () => {
    await close(w);
  });

  it('GET /clients: {success, total, data} with paging and filters', async () => {
    const r = await w.s.rest('/clients');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, total: 2 });
    expect(names(r.body.data)).toEqual(['Acme Corp', 'Beta Ltd']);
    expect((await w.s.rest('/clients?search=beta&status=active')).body).toMatchObject({ total: 1, data: [{ name: 'Beta Ltd' }] });
    expect((await w.s.rest('/clients?per_page=1&page=2')).body).toMatchObject({ total: 2, data: [{ name: 'Beta Ltd' }] });
    const bad = await w.s.rest('/clients?status=vip');
    expectError(bad, 400, 'rest_invalid_param', 'Invalid parameter(s): status');
    expect(bad.body.data.params).toEqual({ status: 'status is not one of any, active, suspended, lead, and lost.' });
  });

  it('POST /clients/add, GET /clients/{id}, POST|PUT|PATCH /clients/{id}/edit, DELETE /clients/{id}/remove', async () => {
    const { s } = w;
    const made = await s.rest('/clients/add', { method: 'POST', json: { name: 'Omega', email: 'o@omega.example', city: 'Oslo' } });
    expect(made.status).toBe(200);
    expect(made.body).toMatchObject({
      success: 1,
      message: 'Client created successfully.',
      data: { name: 'Omega', email: 'o@omega.example', city: 'Oslo', status: 'active' },
    });
    const id = made.body.data.id as number;
    expect((await s.rest(`/clients/${id}`)).body).toEqual({ success: 1, data: made.body.data });
    for (const [method, status] of [
      ['POST', 'lead'],
      ['PUT', 'suspended'],
      ['PATCH', 'lost'],
    ] as const) {
      const e = await s.rest(`/clients/${id}/edit`, { method, json: { status } });
      expect(e.body).toMatchObject({ success: 1, message: 'Client updated successfully.', data: { id, status, city: 'Oslo' } });
    }
    expectError(
      await s.rest(`/clients/${id}/edit`, { method: 'PATCH', json: { email: 'nope' } }),
      400,
      'rest_invalid_param',
      'Invalid parameter(s): email',
    );
    expectError(
      await s.rest('/clients/add', { method: 'POST', json: { email: 'x@y.example' } }),
      400,
      'rest_invalid_param',
      'Invalid parameter(s): name',
    );
    expectError(await s.rest('/clients/add', { method: 'PUT', json: { name: 'x' } }), 405, 'rest_no_route_method');
    const gone = await s.rest(`/clients/${id}/remove`, { method: 'DELETE' });
    expect(gone.body).toMatchObject({
      success: 1,
      message: 'Client deleted successfully.',
      sites_unassigned: 0,
      data: { id, name: 'Omega' },
    });
    expectError(await s.rest(`/clients/${id}`), 404, 'svc_rest_invalid_client_id', 'Invalid or not found ID.');
  });

  it('GET /clients/{id}/sites and /clients/{id}/costs; unknown, huge and odd ids', async () => {
    const { s, fleet } = w;
    const acme = fleet.clients[1]!;
    expect((await s.rest(`/clients/${acme.id}/sites`)).body).toMatchObject({ success: 1, total: 2, data: [{ id: 1 }, { id: 2 }] });
    await s.ability('add-cost-v1', {
      name: 'Care plan',
      price: 50,
      payment_type: 'subscription',
      product_type: 'service',
      renewal_type: 'monthly',
      sites: [2],
    });
    expect((await s.rest(`/clients/${acme.id}/costs`)).body).toMatchObject({
      success: 1,
      total: 1,
      data: [{ name: 'Care plan', price: 50 }],
    });
    for (const path of ['/clients/999', '/clients/999/sites', '/clients/999/costs', '/clients/99999999999999999999999']) {
      expectError(await s.rest(path), 404, 'svc_rest_invalid_client_id', 'Invalid or not found ID.');
    }
    expectError(await s.rest('/clients/999/edit', { method: 'PATCH', json: { name: 'x' } }), 404, 'svc_rest_invalid_client_id');
    expectError(await s.rest('/clients/999/remove', { method: 'DELETE' }), 404, 'svc_rest_invalid_client_id');
    expectError(await s.rest('/clients/abc'), 404, 'rest_no_route');
  });

  it('GET /sites/{id_or_domain}/client', async () => {
    const { s, fleet } = w;
    const beta = fleet.clients[0]!;
    expect((await s.rest('/sites/charlie.example.net/client')).body).toMatchObject({
      success: 1,
      message: 'Client found.',
      data: { id: beta.id, name: 'Beta Ltd' },
    });
    expect((await s.rest('/sites/4/client')).body).toEqual({ success: 1, message: 'No client assigned to this site.', data: null });
    expectError(await s.rest('/sites/999/client'), 404, 'svc_rest_invalid_site_id');
    expectError(await s.rest('/sites/nowhere.example/client'), 404, 'svc_rest_invalid_site_data');
  });
});

describe('permissions', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });
  afterAll(async () => {
    await close(w);
  });

  it('refuses client writes to a viewer and to a read-only key (403) on the abilities door, and lets them read', async () => {
    const { s, fleet } = w;
    const acme = fleet.clients[1]!;
    for (const auth of [s.creds.viewer, `Bearer ${s.creds.key.read}`]) {
      expectError(await s.ability('add-client-v1', { name: 'X' }, { auth }), 403, 'svc_permission_denied');
      expectError(await s.ability('update-client-v1', { client_id_or_email: acme.id, name: 'X' }, { auth }), 403, 'svc_permission_denied');
      expectError(
        await s.ability('delete-client-v1', { client_id_or_email: acme.id, confirm: true }, { auth }),
        403,
        'svc_permission_denied',
      );
      expect((await s.ability('list-clients-v1', undefined, { auth, method: 'GET' })).status).toBe(200);
      expect((await s.ability('get-site-client-v1', { site_id_or_domain: 1 }, { auth, method: 'GET' })).status).toBe(200);
    }
    expect(s.services.store.count('clients')).toBe(2);
    expect(s.services.clients.get(acme.id)!.name).toBe('Acme Corp');
  });

  it('refuses a read-only key on REST client writes (403)', async () => {
    const { s, fleet } = w;
    const token = s.creds.key.read;
    const id = fleet.clients[1]!.id;
    expectError(await s.rest('/clients/add', { method: 'POST', token, json: { name: 'X' } }), 403, 'svc_permission_denied');
    expectError(await s.rest(`/clients/${id}/edit`, { method: 'PATCH', token, json: { name: 'X' } }), 403, 'svc_permission_denied');
    expectError(await s.rest(`/clients/${id}/remove`, { method: 'DELETE', token }), 403, 'svc_permission_denied');
    expect((await s.rest('/clients', { token })).status).toBe(200);
    expect(s.services.store.count('clients')).toBe(2);
  });
});

describe('MCP: the key flows', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });
  afterAll(async () => {
    await close(w);
  });

  it('adds a client, assigns a site, reads it back through the site, and deletes it with confirm', async () => {
    const { mcp, s } = w;
    const tools = (await mcp.listTools()).tools;
    expect(tools.find((t) => t.name === 'delete-client-v1')!.annotations).toMatchObject({ destructiveHint: true, readOnlyHint: false });
    expect(tools.find((t) => t.name === 'get-site-client-v1')!.annotations).toMatchObject({ readOnlyHint: true });

    const made = await tool(mcp, 'add-client-v1', { name: 'Kappa', email: 'k@kappa.example', status: 'lead' });
    expect(made.isError).toBeFalsy();
    const id = made.structuredContent.id;
    expect(
      (await tool(mcp, 'update-site-v1', { site_id_or_domain: 'delta.example.com/blog', client_id: id })).structuredContent.client_id,
    ).toBe(id);
    expect((await tool(mcp, 'get-site-client-v1', { site_id_or_domain: 4 })).structuredContent).toMatchObject({
      site_id: 4,
      client: { id, name: 'Kappa', sites_count: 1 },
    });
    expect((await s.rest(`/clients/${id}/sites`)).body).toMatchObject({ total: 1, data: [{ id: 4 }] });
    expect((await tool(mcp, 'list-clients-v1', { status: 'lead' })).structuredContent.items.map((c: any) => c.name)).toEqual(['Kappa']);

    const bad = await tool(mcp, 'add-client-v1', { name: 'X', email: 'broken' });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toMatchObject({
      code: 'ability_invalid_input',
      message: invalidInput('add-client-v1', 'input[email] is not a valid email.'),
    });
    expect((await tool(mcp, 'update-site-v1', { site_id_or_domain: 4, client_id: 777 })).structuredContent).toMatchObject({
      code: 'svc_client_not_found',
      data: { status: 404 },
    });

    expect((await tool(mcp, 'delete-client-v1', { client_id_or_email: 'k@kappa.example' })).structuredContent).toMatchObject({
      code: 'svc_confirmation_required',
    });
    expect((await tool(mcp, 'delete-client-v1', { client_id_or_email: 'k@kappa.example', confirm: true })).structuredContent).toMatchObject(
      { deleted: true, sites_unassigned: 1 },
    );
    expect((await tool(mcp, 'get-site-client-v1', { site_id_or_domain: 4 })).structuredContent).toMatchObject({ client: null });
  });
});
