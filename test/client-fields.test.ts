// Client custom fields through the doors: upstream's /clients/fields routes and their envelopes, pre_page, PUT and
// PATCH, the REST delete without confirm, MCP and the abilities door reaching the same fields, read-only callers. The
// rules (names unique, bounds, values kept and cleared, lookups, cascades) are in test/abilities/clients.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from './support/server.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';

let s: TestServer;
let mcp: McpTestClient;
let acme: number;
let globex: number;

beforeAll(async () => {
  s = await startServer();
  mcp = await connectMcp(s);
  acme = (await s.rest('/clients/add', { method: 'POST', json: { name: 'Acme', email: 'it@acme.example' } })).body.data.id;
  globex = (await s.rest('/clients/add', { method: 'POST', json: { name: 'Globex' } })).body.data.id;
});
afterAll(async () => {
  await mcp.close();
  await s.close();
});

describe('defining fields', () => {
  it("adds fields through REST and lists them by name (pre_page is upstream's per_page)", async () => {
    const a = await s.rest('/clients/fields/add', { method: 'POST', json: { name: 'Plan', description: 'Support plan' } });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({
      success: 1,
      message: 'Client field created successfully.',
      data: { id: expect.any(Number), name: 'Plan', description: 'Support plan', clients_count: 0 },
    });
    const b = await s.ability('add-client-field-v1', { name: 'Account manager' });
    expect(b.status).toBe(200);
    expect(b.body).toMatchObject({ name: 'Account manager' });
    const list = await s.rest('/clients/fields?pre_page=1');
    expect(list.body).toMatchObject({ success: 1, total: 2, data: [{ name: 'Account manager' }] });
  });

  it('refuses a missing name and an unknown key on the REST route, and stores nothing', async () => {
    const missing = await s.rest('/clients/fields/add', { method: 'POST', json: { description: 'x' } });
    expect([missing.status, missing.body.code]).toEqual([400, 'rest_invalid_param']);
    const unknown = await s.rest('/clients/fields/add', { method: 'POST', json: { name: 'Tier', colour: 'red' } });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain('colour');
    expect((await s.rest('/clients/fields')).body.total).toBe(2);
  });

  it('edits a field named in the path over PUT, by id over MCP, and answers a clash over PATCH with 409', async () => {
    const e = await s.rest('/clients/fields/Plan/edit', { method: 'PUT', json: { description: 'Support plan (gold, silver)' } });
    expect(e.body).toMatchObject({ success: 1, data: { name: 'Plan', description: 'Support plan (gold, silver)' } });
    const id = e.body.data.id;
    const byId = await mcp.call('update-client-field-v1', { field: id, name: 'Support plan' });
    expect(byId.body).toMatchObject({ id, name: 'Support plan' });
    const clash = await s.rest(`/clients/fields/${id}/edit`, { method: 'PATCH', json: { name: 'account MANAGER' } });
    expect([clash.status, clash.body.code]).toEqual([409, 'svc_client_field_exists']);
  });
});

describe('values on clients', () => {
  it('sets values over REST (by name) and MCP (by id, client by e-mail), reads them back over REST', async () => {
    const r = await s.rest(`/clients/${acme}/fields/edit`, {
      method: 'PUT',
      json: { values: { 'Support plan': 'Gold', 'Account manager': 'Dana' } },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.updated).toEqual(['Support plan', 'Account manager']);
    const plan = s.services.clientFields.resolveRef('support plan');
    const m = await mcp.call('set-client-field-values-v1', {
      client_id_or_email: 'it@acme.example',
      values: { [String(plan.id)]: 'Silver' },
    });
    expect(m.isError).toBe(false);
    const got = await s.rest(`/clients/${acme}/fields`);
    expect(got.body.data).toEqual({
      client_id: acme,
      fields: [
        { id: expect.any(Number), name: 'Account manager', value: 'Dana' },
        { id: plan.id, name: 'Support plan', value: 'Silver' },
      ],
    });
    await s.ability('set-client-field-values-v1', { client_id_or_email: globex, values: { 'Support plan': 'gold plus' } });
  });

  it('finds clients by a value over REST, with the upstream envelope', async () => {
    const exact = await s.rest('/clients/fields/Support plan/clients?value=silver'.replace(' ', '%20'));
    expect(exact.body).toMatchObject({ success: 1, total: 1, data: [{ id: acme, name: 'Acme' }] });
  });

  it('clears a value with "" over PATCH', async () => {
    await s.rest(`/clients/${globex}/fields/edit`, { method: 'PATCH', json: { values: { 'Support plan': '' } } });
    expect(s.services.clientFields.valuesOf(globex).every((f) => f.value === null)).toBe(true);
  });
});

describe('deleting', () => {
  // The confirm / dry_run rule of delete-client-field-v1 is in test/abilities/clients.test.ts; upstream's REST route
  // deletes without it.
  it('a field goes over REST DELETE with the upstream envelope, and takes its values along', async () => {
    const r = await s.rest('/clients/fields/Support%20plan/delete', { method: 'DELETE' });
    expect(r.body).toMatchObject({ success: 1, message: 'Client field deleted successfully.', values_removed: 1 });
    expect(s.services.clientFields.valuesOf(acme).map((f) => f.name)).toEqual(['Account manager']);
    const again = await s.rest('/clients/fields/Support%20plan/delete', { method: 'DELETE' });
    expect([again.status, again.body.code]).toEqual([404, 'svc_client_field_not_found']);
  });

  it('read-only keys and viewers read fields but cannot change them', async () => {
    expect((await s.rest('/clients/fields', { token: s.creds.key.read })).status).toBe(200);
    const w = await s.rest('/clients/fields/add', { method: 'POST', token: s.creds.key.read, json: { name: 'Nope' } });
    expect(w.status).toBe(403);
    expect((await s.ability('list-client-fields-v1', {}, { method: 'GET', auth: s.creds.viewer })).status).toBe(200);
    const v = await s.ability('add-client-field-v1', { name: 'Nope' }, { auth: s.creds.viewer });
    expect(v.status).toBe(403);
    expect(s.services.clientFields.list({ search: 'Nope' })).toEqual([]);
  });
});
