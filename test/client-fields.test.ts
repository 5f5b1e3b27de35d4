// Client custom fields through every door: define (upstream's /clients/fields routes), give clients values, read
// them, find clients by them; the errors (duplicate, unknown, bounds) and what deleting a field or a client removes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CLIENT_FIELDS } from '../src/domain/client-fields.js';
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
    expect(b.body).toMatchObject({ name: 'Account manager', description: '' });
    const list = await s.rest('/clients/fields?pre_page=1');
    expect(list.body).toMatchObject({ success: 1, total: 2, data: [{ name: 'Account manager' }] });
    const searched = await s.ability('list-client-fields-v1', { search: 'support' }, { method: 'GET' });
    expect(searched.body.items.map((f: { name: string }) => f.name)).toEqual(['Plan']);
  });

  it('refuses a duplicate name (any case), an empty or digits-only name and a missing name', async () => {
    const dup = await s.rest('/clients/fields/add', { method: 'POST', json: { name: 'plan', description: 'x' } });
    expect([dup.status, dup.body.code]).toEqual([409, 'svc_client_field_exists']);
    const empty = await s.ability('add-client-field-v1', { name: '  <b></b> ' });
    expect([empty.status, empty.body.code]).toEqual([400, 'svc_invalid_input']);
    const digits = await s.ability('add-client-field-v1', { name: '42' });
    expect(digits.status).toBe(400);
    const missing = await s.rest('/clients/fields/add', { method: 'POST', json: { description: 'x' } });
    expect([missing.status, missing.body.code]).toEqual([400, 'rest_invalid_param']);
    const long = await s.ability('add-client-field-v1', { name: 'x'.repeat(101) });
    expect(long.status).toBe(400);
    const unknown = await s.rest('/clients/fields/add', { method: 'POST', json: { name: 'Tier', colour: 'red' } });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain('colour');
    expect((await s.rest('/clients/fields')).body.total).toBe(2);
  });

  it('edits a field by id or name; unknown is 404, a clash 409', async () => {
    const e = await s.rest('/clients/fields/Plan/edit', { method: 'PUT', json: { description: 'Support plan (gold, silver)' } });
    expect(e.body).toMatchObject({ success: 1, data: { name: 'Plan', description: 'Support plan (gold, silver)' } });
    const id = e.body.data.id;
    const byId = await mcp.call('update-client-field-v1', { field: id, name: 'Support plan' });
    expect(byId.body).toMatchObject({ id, name: 'Support plan' });
    const clash = await s.rest(`/clients/fields/${id}/edit`, { method: 'PATCH', json: { name: 'account MANAGER' } });
    expect([clash.status, clash.body.code]).toEqual([409, 'svc_client_field_exists']);
    const none = await s.rest('/clients/fields/nosuch/edit', { method: 'PUT', json: { name: 'x' } });
    expect([none.status, none.body.code]).toEqual([404, 'svc_client_field_not_found']);
    const nothing = await s.rest(`/clients/fields/${id}/edit`, { method: 'PUT', json: {} });
    expect([nothing.status, nothing.body.code]).toEqual([400, 'svc_missing_fields']);
  });

  it('holds the number of fields to its bound', async () => {
    const have = (await s.rest('/clients/fields')).body.total as number;
    await s.services.store.write((tx) => {
      for (let i = have; i < MAX_CLIENT_FIELDS; i++) s.services.clientFields.create(tx, { name: `Bulk ${i}`, description: '' });
    });
    const over = await s.ability('add-client-field-v1', { name: 'One too many' });
    expect([over.status, over.body.code]).toEqual([409, 'svc_client_field_limit']);
    await s.services.store.write((tx) => {
      for (const f of s.services.clientFields.list({ search: 'Bulk ' })) s.services.clientFields.delete(tx, f.id);
    });
  });
});

describe('values on clients', () => {
  it('sets values by field name or id, reads them back on every door; other fields keep theirs', async () => {
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
    const other = await s.ability('get-client-field-values-v1', { client_id_or_email: globex }, { method: 'GET' });
    expect(other.body.fields.every((f: { value: unknown }) => f.value === null)).toBe(true);
    await s.ability('set-client-field-values-v1', { client_id_or_email: globex, values: { 'Support plan': 'gold plus' } });
  });

  it('changes nothing when one field is unknown; refuses an empty set, a too long value and an unknown client', async () => {
    const bad = await s.ability('set-client-field-values-v1', {
      client_id_or_email: acme,
      values: { 'Account manager': 'Lee', Colour: 'red' },
    });
    expect([bad.status, bad.body.code]).toEqual([404, 'svc_client_field_not_found']);
    expect(bad.body.message).toContain('Colour');
    expect(s.services.clientFields.valuesOf(acme).find((f) => f.name === 'Account manager')!.value).toBe('Dana');
    const empty = await s.ability('set-client-field-values-v1', { client_id_or_email: acme, values: {} });
    expect([empty.status, empty.body.code]).toEqual([400, 'svc_missing_fields']);
    const long = await s.ability('set-client-field-values-v1', {
      client_id_or_email: acme,
      values: { 'Account manager': 'x'.repeat(2001) },
    });
    expect(long.status).toBe(400);
    const twice = await s.ability('set-client-field-values-v1', {
      client_id_or_email: acme,
      values: { 'Account manager': 'a', 'account manager': 'b' },
    });
    expect(twice.status).toBe(400);
    const nobody = await s.rest('/clients/999/fields');
    expect([nobody.status, nobody.body.code]).toEqual([404, 'svc_client_not_found']);
  });

  it('finds clients by a value: exact, contains, set (case-insensitive)', async () => {
    const exact = await s.rest('/clients/fields/Support plan/clients?value=silver'.replace(' ', '%20'));
    expect(exact.body).toMatchObject({ success: 1, total: 1, data: [{ id: acme, name: 'Acme' }] });
    const contains = await s.ability(
      'list-clients-by-field-v1',
      { field: 'Support plan', value: 'GOLD', match: 'contains' },
      { method: 'GET' },
    );
    expect(contains.body.items.map((c: { id: number }) => c.id)).toEqual([globex]);
    const set = await mcp.call('list-clients-by-field-v1', { field: 'Support plan', match: 'set' });
    expect(set.body.items.map((c: { name: string }) => c.name)).toEqual(['Acme', 'Globex']);
    const none = await s.rest('/clients/fields/nosuch/clients');
    expect(none.status).toBe(404);
  });

  it('clears a value with null or ""', async () => {
    await s.ability('set-client-field-values-v1', { client_id_or_email: acme, values: { 'Account manager': null } });
    expect(s.services.clientFields.valuesOf(acme).find((f) => f.name === 'Account manager')!.value).toBeNull();
    await s.rest(`/clients/${globex}/fields/edit`, { method: 'PATCH', json: { values: { 'Support plan': '' } } });
    expect(s.services.clientFields.valuesOf(globex).every((f) => f.value === null)).toBe(true);
  });
});

describe('deleting', () => {
  it('a field needs confirm on the abilities door, previews with dry_run, and takes its values along', async () => {
    const bare = await s.ability('delete-client-field-v1', { field: 'Support plan' });
    expect([bare.status, bare.body.code]).toEqual([400, 'svc_confirmation_required']);
    const preview = await s.ability('delete-client-field-v1', { field: 'Support plan', dry_run: true });
    expect(preview.body).toMatchObject({
      deleted: false,
      dry_run: true,
      values_removed: 1,
      field: { name: 'Support plan', clients_count: 1 },
    });
    const r = await s.rest('/clients/fields/Support%20plan/delete', { method: 'DELETE' });
    expect(r.body).toMatchObject({ success: 1, message: 'Client field deleted successfully.', values_removed: 1 });
    expect(s.services.clientFields.valuesOf(acme).map((f) => f.name)).toEqual(['Account manager']);
    const again = await s.rest('/clients/fields/Support%20plan/delete', { method: 'DELETE' });
    expect([again.status, again.body.code]).toEqual([404, 'svc_client_field_not_found']);
  });

  it("a deleted client's values go with it", async () => {
    await s.ability('set-client-field-values-v1', { client_id_or_email: globex, values: { 'Account manager': 'Kim' } });
    expect(s.services.clientFields.usedBy(s.services.clientFields.resolveRef('Account manager').id)).toEqual([globex]);
    const d = await s.rest(`/clients/${globex}/remove`, { method: 'DELETE' });
    expect(d.status).toBe(200);
    expect(s.services.store.get('client_field_values', globex)).toBeUndefined();
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
