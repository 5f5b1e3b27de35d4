// Clients written for the upstream dashboard, sending what they send (issue #13): each item is tested through the
// door where it broke, with the request as such a client makes it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';

let f: Fleet;
let ids: Array<{ id: number; url: string }>;
beforeAll(async () => {
  f = await startFleet({ sim: { sites: 3 } });
  ids = await registerSites(f, 3);
});
afterAll(async () => {
  await f.close();
});

describe("REST answers in upstream's shape", () => {
  it("POST /sites/{id}/check carries a message and the site's client_id", async () => {
    const r = await f.s.rest(`/sites/${ids[0]!.id}/check`, { method: 'POST' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, message: 'Site is reachable.', data: { id: ids[0]!.id, client_id: null, reachable: true } });
  });

  it('POST /sites/{id}/check answers data.status and data.http_code as numbers, as upstream does (issue 27, defect 5)', async () => {
    const up = await f.s.rest(`/sites/${ids[0]!.id}/check`, { method: 'POST' });
    expect(up.body.data).toMatchObject({ status: 1, http_code: 200, http_status: 200, site_status: 'connected' });
    f.sim.setFault(2, { type: 'http500' });
    try {
      const down = await f.s.rest(`/sites/${ids[1]!.id}/check`, { method: 'POST' });
      expect(down.body).toMatchObject({
        success: 1,
        message: 'Site is not reachable.',
        data: { status: 0, http_code: 500, reachable: false },
      });
    } finally {
      f.sim.setFault(2, null);
    }
  });

  it('GET /posts/{site}/{id} sends is_sticky as 0/1 and post_gallery_images', async () => {
    const c = await f.s.rest(`/posts/${ids[0]!.id}/create`, {
      method: 'POST',
      json: { post_title: 'Sticky', post_status: 'publish', is_sticky: 1 },
    });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    const r = await f.s.rest(`/posts/${ids[0]!.id}/${c.body.data.post_id}`);
    expect(r.body.data).toMatchObject({ is_sticky: 1, post_gallery_images: [] });
    const viaAbility = await f.s.ability('get-post-v1', { site_id_or_domain: ids[0]!.id, post_id: c.body.data.post_id }, { method: 'GET' });
    expect(viaAbility.body).toMatchObject({ is_sticky: true, post_gallery_images: [] });
  });
});

describe('abilities discovery as the official MCP bridge reads it', () => {
  it('gives every ability meta.annotations.instructions', async () => {
    const res = await fetch(`${f.s.abilitiesBase}/abilities?per_page=100`, { headers: { authorization: f.s.creds.admin } });
    const list = (await res.json()) as Array<{ name: string; meta: { annotations: { instructions?: unknown; destructive: boolean } } }>;
    expect(list.length).toBeGreaterThan(50);
    for (const a of list) expect(typeof a.meta.annotations.instructions, a.name).toBe('string');
    const del = list.find((a) => a.name === 'svc/delete-tag-v1')!;
    expect(del.meta.annotations.instructions).toMatch(/dry_run=true first/);
  });
});

describe('form bodies, as WordPress reads them (curl -d, HTML forms)', () => {
  const form = (path: string, body: string, method = 'POST') =>
    f.s.rest(path, {
      method,
      body,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });

  it('reads an urlencoded body on every route: curl -d name=… creates a tag', async () => {
    const r = await form('/tags/add', 'name=From+curl&color=%23aa3300');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ name: 'From curl' });
    expect((await f.s.rest(`/tags/${r.body.data.id}`)).body.data).toMatchObject({ name: 'From curl', color: '#aa3300' });
  });

  it('reads PHP bracket keys into lists: slugs[]=a&slugs[]=b', async () => {
    const off = f.sim
      .state(1)
      .plugins.filter((p) => !p.active && !p.mu && !p.isChild)
      .slice(0, 2)
      .map((p) => p.slug);
    expect(off.length).toBe(2);
    const r = await form(`/sites/${ids[0]!.id}/plugins/activate`, off.map((s) => `slugs[]=${encodeURIComponent(s)}`).join('&'));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.map((p: { slug: string }) => p.slug).sort()).toEqual([...off].sort());
  });

  it('reads the fields of a multipart form, refuses a file where none is taken, and bounds the size', async () => {
    const fd = new FormData();
    fd.append('name', 'From a form');
    const r = await f.s.rest('/tags/add', { method: 'POST', body: fd });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.name).toBe('From a form');
    const withFile = new FormData();
    withFile.append('name', 'x');
    withFile.append('file', new Blob(['a,b']), 'x.csv');
    expect((await f.s.rest('/tags/add', { method: 'POST', body: withFile })).body.code).toBe('svc_no_file_expected');
    const big = await form('/tags/add', `name=${'a'.repeat(1024 * 1024 + 10)}`);
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('svc_request_too_large');
  });

  it('gives a missing field its own error, not a misleading one', async () => {
    const r = await form('/tags/add', 'color=%23ffffff');
    expect(r.status).toBe(400);
    expect(r.body.data.params).toHaveProperty('name');
  });
});

describe('no write drops a field silently', () => {
  it('refuses a field the route does not read, naming it, and changes nothing', async () => {
    const before = (await f.s.rest('/tags')).body.total;
    const r = await f.s.rest('/tags/add', { method: 'POST', json: { name: 'Misspelt', colour: '#ffffff' } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'rest_invalid_param', data: { params: { colour: 'Unknown parameter.' } } });
    expect((await f.s.rest('/tags')).body.total).toBe(before);
    // WordPress's own arguments (_method, _envelope, _fields …) are not fields, and an empty one carries nothing.
    expect((await f.s.rest('/tags/add?_fields=id', { method: 'POST', json: { name: 'With global', uniqueid: '' } })).status).toBe(200);
    expect((await f.s.rest('/tags/add', { method: 'POST', json: { name: 'Not empty', uniqueid: 'abc' } })).body.data.params).toHaveProperty(
      'uniqueid',
    );
  });
});

describe('clients as upstream clients send them', () => {
  it("stores upstream's field names on add and edit (client_email, client_phone, …), never dropping them", async () => {
    const r = await f.s.rest('/clients/add', {
      method: 'POST',
      json: {
        name: 'Acme',
        client_email: 'it@acme.example',
        client_phone: '+1 555 0100',
        address: '1 Main St',
        client_linkedin: 'acme',
        suspended: 2,
        selected_sites: [ids[1]!.id],
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const id = r.body.data.id as number;
    expect(r.body.data).toMatchObject({
      email: 'it@acme.example',
      phone: '+1 555 0100',
      address_1: '1 Main St',
      linkedin: 'acme',
      status: 'lead',
    });
    expect((await f.s.rest(`/sites/${ids[1]!.id}`)).body.data.client_id).toBe(id);
    const e = await f.s.rest(`/clients/${id}/edit`, { method: 'PUT', json: { client_phone: '+1 555 0199', client_twitter: '@acme' } });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
    expect((await f.s.rest(`/clients/${id}`)).body.data).toMatchObject({
      phone: '+1 555 0199',
      twitter: '@acme',
      email: 'it@acme.example',
    });
    // The same names through the abilities door.
    const viaAbility = await f.s.ability('update-client-v1', { client_id_or_email: id, client_facebook: 'acme.fb' });
    expect(viaAbility.body).toMatchObject({ facebook: 'acme.fb' });
    // Both names with different values: refused, naming them.
    const both = await f.s.ability('update-client-v1', { client_id_or_email: id, email: 'a@b.example', client_email: 'c@d.example' });
    expect(both.status).toBe(400);
    expect(both.body.message).toMatch(/email and client_email name the same field and were given different values/);
  });

  it('answers the client routes upstream has: count, get by e-mail, suspend, unsuspend, sites count', async () => {
    const c = (await f.s.rest('/clients/add', { method: 'POST', json: { name: 'Globex', email: 'ops@globex.example' } })).body.data;
    await f.s.rest(`/sites/${ids[2]!.id}/edit`, { method: 'PUT', json: { client_id: c.id } });
    const count = await f.s.rest('/clients/count');
    expect(count.body).toMatchObject({ success: 1, total: expect.any(Number) });
    expect(count.body.total).toBeGreaterThanOrEqual(2);
    expect((await f.s.rest('/clients/ops@globex.example')).body.data).toMatchObject({ id: c.id, name: 'Globex' });
    expect((await f.s.rest('/clients/nobody@globex.example')).status).toBe(404);
    expect((await f.s.rest(`/clients/${c.id}/sites/count`)).body).toMatchObject({ success: 1, total: 1 });

    const s = await f.s.rest(`/clients/${c.id}/suspend`, { method: 'POST' });
    expect(s.body).toMatchObject({ success: 1, suspended: 1, sites_count: 1, data: { status: 'suspended' } });
    expect((await f.s.rest(`/sites/${ids[2]!.id}`)).body.data.status).toBe('suspended');
    const sync = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [ids[2]!.id] });
    expect(sync.body.total_synced ?? 0).toBe(0);
    const u = await f.s.rest(`/clients/${c.id}/unsuspend`, { method: 'POST' });
    expect(u.body).toMatchObject({ success: 1, suspended: 0, data: { status: 'active' } });
    expect((await f.s.rest(`/sites/${ids[2]!.id}`)).body.data.status).toBe('connected');

    const viaAbility = await f.s.ability('count-client-sites-v1', { client_id_or_email: 'ops@globex.example' }, { method: 'GET' });
    expect(viaAbility.body).toEqual({ client_id: c.id, total: 1 });
    expect((await f.s.ability('suspend-client-v1', { client_id_or_email: 999_999 })).body.code).toBe('svc_client_not_found');
  });
});

describe("POST /batch, upstream's combined batch", () => {
  it('runs site, tag and client operations of one request, each item answered like its own route', async () => {
    const r = await f.s.rest('/batch', {
      method: 'POST',
      json: {
        sites: { sync: [ids[0]!.id, 999_999], check: [ids[1]!.id], plugins: [ids[0]!.id] },
        tags: { create: [{ name: 'From batch' }], update: [{ id: 999_999, name: 'zz' }] },
        clients: { create: [{ name: 'Batch client', client_email: 'batch@example.test' }] },
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.sites.sync[0]).toMatchObject({ success: 1 });
    expect(r.body.sites.sync[1]).toMatchObject({ id: 999_999, error: { code: 'svc_rest_invalid_site_id', data: { status: 404 } } });
    expect(r.body.sites.check[0]).toMatchObject({ success: 1, data: { id: ids[1]!.id, reachable: true } });
    expect(r.body.sites.plugins[0]).toMatchObject({ success: 1, total: expect.any(Number) });
    expect(r.body.tags.create[0]).toMatchObject({ success: 1, data: { name: 'From batch' } });
    // Unlike upstream, an update is run (and here answers its error), never dropped.
    expect(r.body.tags.update[0]).toMatchObject({ id: 999_999, error: { data: { status: 404 } } });
    expect(r.body.clients.create[0].data).toMatchObject({ name: 'Batch client', email: 'batch@example.test' });
  });

  it('refuses more than 100 items in all (413, nothing done), an unknown controller or operation (400); {} answers {}', async () => {
    const before = (await f.s.rest('/tags')).body.total;
    const big = await f.s.rest('/batch', {
      method: 'POST',
      json: { sites: { check: Array(60).fill(ids[0]!.id) }, tags: { create: Array(41).fill({ name: 'x' }) } },
    });
    expect(big.status).toBe(413);
    expect((await f.s.rest('/tags')).body.total).toBe(before);
    const updates = await f.s.rest('/batch', { method: 'POST', json: { updates: { create: [{}] } } });
    expect(updates.status).toBe(400);
    expect(updates.body.data.params.updates).toMatch(/not supported/);
    const op = await f.s.rest('/batch', { method: 'POST', json: { tags: { sync: [1] } } });
    expect(op.status).toBe(400);
    expect(op.body.message).toMatch(/Unknown batch operation\(s\): sync/);
    expect((await f.s.rest('/batch', { method: 'POST', json: {} })).body).toEqual({});
  });
});
