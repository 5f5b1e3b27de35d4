// REST interface v2, site routes of issue 2: /sites, /sites/basic, /sites/count, /sites/{id_or_domain},
// /edit, /suspend, /unsuspend, /remove and /sites/batch — parameters, envelopes, lookups and errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, rawRequest, seedClients, seedFleet, seedTag, type Fleet } from './support/fixtures.js';
import { seedSites, startServer, type TestServer } from './support/server.js';

const ids = (list: Array<{ id: number }>) => list.map((x) => x.id);

let s: TestServer;
let fleet: Fleet;
const at = (...idx: number[]) => idx.map((i) => fleet.sites[i]!.id);

beforeAll(async () => {
  s = await startServer();
  fleet = await seedFleet(s.services);
});
afterAll(async () => {
  await s.close();
});

describe('GET /sites', () => {
  it('answers the list envelope {success: 1, total, data: [id, name, url, status, client_id]} with numeric ids', async () => {
    const r = await s.rest('/sites');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, total: 6 });
    expect(Array.isArray(r.body.data)).toBe(true);
    expect(ids(r.body.data)).toEqual(at(0, 1, 2, 3, 4, 5));
    expect(r.body.data[0]).toEqual({
      id: fleet.sites[0]!.id,
      name: 'Alpha',
      url: 'https://alpha.example.com/',
      status: 'connected',
      client_id: fleet.clients[1]!.id,
    });
    for (const item of r.body.data) expect(typeof item.id).toBe('number');
  });

  it('pages with page and per_page; total counts every match', async () => {
    const r = await s.rest('/sites?page=2&per_page=4');
    expect(ids(r.body.data)).toEqual(at(4, 5));
    expect(r.body.total).toBe(6);
    const past = await s.rest('/sites?page=9&per_page=4');
    expect(past.status).toBe(200);
    expect(past.body).toEqual({ success: 1, total: 6, data: [] });
  });

  it.each([
    ['per_page=0', 'per_page'],
    ['per_page=101', 'per_page'],
    ['per_page=abc', 'per_page'],
    ['page=0', 'page'],
    ['page=-2', 'page'],
  ])('refuses %s with 400 rest_invalid_param naming the parameter', async (query, param) => {
    const r = await s.rest(`/sites?${query}`);
    expectError(r, 400, 'rest_invalid_param', `Invalid parameter(s): ${param}`);
    expect(Object.keys(r.body.data.params)).toEqual([param]);
  });

  it('includes and excludes ids given as a comma list or as an array', async () => {
    expect(ids((await s.rest(`/sites?include=${at(0, 2).join(',')}`)).body.data)).toEqual(at(0, 2));
    expect(ids((await s.rest(`/sites?include[]=${at(3)[0]}&include[]=${at(5)[0]}`)).body.data)).toEqual(at(3, 5));
    const ex = await s.rest(`/sites?exclude=${at(0, 1, 2).join(',')}`);
    expect(ids(ex.body.data)).toEqual(at(3, 4, 5));
    expect(ex.body.total).toBe(3);
  });

  it('filters by status, and refuses an unknown status naming the parameter', async () => {
    expect(ids((await s.rest('/sites?status=connected')).body.data)).toEqual(at(0, 3, 5));
    expect(ids((await s.rest('/sites?status=suspended')).body.data)).toEqual(at(2, 4));
    expect(ids((await s.rest('/sites?status=disconnected')).body.data)).toEqual(at(1));
    const bad = await s.rest('/sites?status=bogus');
    expectError(bad, 400, 'rest_invalid_param', 'Invalid parameter(s): status');
  });

  it("adds each site's tags with with_tags=true", async () => {
    const r = await s.rest('/sites?with_tags=true&per_page=1');
    expect(r.body.data[0]).toMatchObject({ id: at(0)[0], tags: [{ id: fleet.tags.production.id, name: 'Production' }] });
    const off = await s.rest('/sites?with_tags=false&per_page=1');
    expect(off.body.data[0]).not.toHaveProperty('tags');
  });

  it('answers full site records with full_data=true', async () => {
    const r = await s.rest('/sites?full_data=true&per_page=1');
    expect(r.body.data[0]).toMatchObject({
      id: at(0)[0],
      admin_username: 'admin',
      wp_version: '6.8',
      php_version: '8.2',
      child_version: '6.1',
      notes: 'first',
    });
    const off = await s.rest('/sites?full_data=0&per_page=1');
    expect(off.body.data[0]).not.toHaveProperty('wp_version');
  });

  it('ignores an empty query parameter (?=) on an unfiltered list', async () => {
    const r = await s.rest('/sites?=');
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(6);
  });
});

describe('GET /sites/basic and /sites/count', () => {
  it('answers id, name, url and client_id only, with the list envelope', async () => {
    const r = await s.rest('/sites/basic');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, total: 6 });
    expect(r.body.data[1]).toEqual({ id: at(1)[0], name: 'Bravo', url: 'http://www.bravo.example.org/', client_id: fleet.clients[1]!.id });
    for (const item of r.body.data) expect(Object.keys(item).sort()).toEqual(['client_id', 'id', 'name', 'url']);
  });

  it('takes page, per_page, search, include, exclude and status', async () => {
    const p = await s.rest('/sites/basic?page=2&per_page=5');
    expect(ids(p.body.data)).toEqual(at(5));
    expect(p.body.total).toBe(6);
    expect(ids((await s.rest('/sites/basic?search=charlie')).body.data)).toEqual(at(2));
    expect(ids((await s.rest(`/sites/basic?include=${at(1, 4).join(',')}&exclude=${at(4)[0]}`)).body.data)).toEqual(at(1));
    expect(ids((await s.rest('/sites/basic?status=suspended')).body.data)).toEqual(at(2, 4));
    expectError(await s.rest('/sites/basic?per_page=500'), 400, 'rest_invalid_param', 'Invalid parameter(s): per_page');
    expectError(await s.rest('/sites/basic?status=offline'), 400, 'rest_invalid_param', 'Invalid parameter(s): status');
  });

  it('counts, filtered by include, exclude and status', async () => {
    const all = await s.rest('/sites/count');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ success: 1, count: 6 });
    expect((await s.rest(`/sites/count?include=${at(0, 1, 2).join(',')}`)).body.count).toBe(3);
    expect((await s.rest(`/sites/count?exclude=${at(0)[0]}`)).body.count).toBe(5);
    expect((await s.rest('/sites/count?status=suspended')).body.count).toBe(2);
    expect((await s.rest(`/sites/count?status=connected&include=${at(0, 1).join(',')}`)).body.count).toBe(1);
    expectError(await s.rest('/sites/count?status=nope'), 400, 'rest_invalid_param', 'Invalid parameter(s): status');
  });
});

describe('GET /sites/{id_or_domain}', () => {
  it('answers {success: 1, data: full site} with tags and stored stats', async () => {
    const r = await s.rest(`/sites/${at(0)[0]}`);
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(1);
    expect(r.body.data).toMatchObject({
      id: at(0)[0],
      url: 'https://alpha.example.com/',
      name: 'Alpha',
      status: 'connected',
      admin_username: 'admin',
      wp_version: '6.8',
      php_version: '8.2',
      child_version: '6.1',
      notes: 'first',
      tags: [{ id: fleet.tags.production.id, name: 'Production' }],
      stats: { plugin_updates: 2, theme_updates: 1, wp_update_available: true, health_score: 87 },
    });
  });

  it('leaves the tags out with with_tags=false', async () => {
    const r = await s.rest(`/sites/${at(0)[0]}?with_tags=false`);
    expect(r.status).toBe(200);
    expect(r.body.data).not.toHaveProperty('tags');
    expect(r.body.data.id).toBe(at(0)[0]);
  });

  it.each([
    ['bravo.example.org', 1],
    ['www.bravo.example.org', 1],
    ['BRAVO.EXAMPLE.ORG', 1],
    ['WWW.Bravo.Example.Org', 1],
    ['alpha.example.com', 0],
    ['www.alpha.example.com', 0],
    ['ALPHA.example.COM', 0],
  ])('finds a site by the domain %s, whatever scheme it was stored with', async (ref, idx) => {
    const r = await s.rest(`/sites/${ref}`);
    expect(r.status).toBe(200);
    expect(r.body.data.id).toBe(at(idx)[0]);
  });

  it('answers an unknown id with 404 svc_rest_invalid_site_id and an unknown domain with 404 svc_rest_invalid_site_data', async () => {
    expectError(await s.rest('/sites/99999'), 404, 'svc_rest_invalid_site_id', 'Invalid or not found ID.');
    expectError(await s.rest('/sites/nope.example.com'), 404, 'svc_rest_invalid_site_data', 'Invalid or not found domain.');
    expectError(await s.rest('/sites/delta.example.com'), 404, 'svc_rest_invalid_site_data');
  });

  it('answers an id written with leading zeros that names no site with svc_rest_invalid_site_id', async () => {
    expectError(await s.rest('/sites/0099999'), 404, 'svc_rest_invalid_site_id');
  });

  it('answers an id beyond the integer range with 404 svc_rest_invalid_site_id, not a parameter error', async () => {
    expectError(await s.rest('/sites/99999999999999999999999'), 404, 'svc_rest_invalid_site_id');
    expectError(await s.rest('/sites/99999999999999999999999/suspend', { method: 'POST' }), 404, 'svc_rest_invalid_site_id');
    expectError(await s.rest('/sites/99999999999999999999999/remove', { method: 'DELETE' }), 404, 'svc_rest_invalid_site_id');
  });

  it('answers a path segment that cannot be a site with 404 rest_no_route', async () => {
    expectError(await s.rest('/sites/bad%20name'), 404, 'rest_no_route');
    expectError(await s.rest('/sites/https%3A%2F%2Falpha.example.com'), 404, 'rest_no_route');
  });

  it('answers a wrong method with 405 and an Allow header', async () => {
    const r = await s.rest(`/sites/${at(0)[0]}`, { method: 'POST', json: {} });
    expectError(r, 405, 'rest_no_route_method');
    expect(r.headers.get('allow')).toBe('GET');
  });
});

describe('routes without a match', () => {
  it.each(['/sites/1/nope', '/nope', '/sites/1/sync/now', '/tags/1/sites/2'])('answers %s with 404 rest_no_route', async (path) => {
    expectError(await s.rest(path), 404, 'rest_no_route', 'No route was found matching the URL and request method.');
  });

  it.each([
    ['DELETE', '/sites', 'GET'],
    ['POST', '/sites/count', 'GET'],
    ['PUT', '/sites/basic', 'GET'],
    ['GET', '/sites/batch', 'POST, PUT, PATCH'],
    ['GET', '/sites/1/edit', 'POST, PUT, PATCH'],
    ['DELETE', '/sites/1/suspend', 'POST, PUT, PATCH'],
    ['GET', '/sites/1/unsuspend', 'POST, PUT, PATCH'],
    ['POST', '/sites/1/remove', 'DELETE'],
    ['GET', '/sites/1/remove', 'DELETE'],
  ])('answers %s %s with 405 and Allow: %s', async (method, path, allow) => {
    const r = await s.rest(path, { method, ...(method === 'GET' ? {} : { json: {} }) });
    expectError(r, 405, 'rest_no_route_method');
    expect(r.headers.get('allow')).toBe(allow);
  });

  // Issue 27, defect 5: a method no route serves (TRACE, fetch refuses to send it) was a key's 403, whatever the key.
  it.each([
    ['TRACE', '/sites', 'GET'],
    ['TRACE', '/sites/1', 'GET'],
    ['PROPFIND', '/sites/1/edit', 'POST, PUT, PATCH'],
  ])('answers %s %s with 405 and Allow: %s, for any key', async (method, path, allow) => {
    for (const token of [s.creds.key.read_write, s.creds.key.read, s.creds.key.delete]) {
      const r = await rawRequest(`${s.restBase}${path}`, { method, headers: { authorization: `Bearer ${token}` } });
      expect(r.status).toBe(405);
      expect(r.body).toMatchObject({ code: 'rest_no_route_method', data: { status: 405 } });
      expect(r.headers.allow).toBe(allow);
    }
    const unknown = await rawRequest(`${s.restBase}/nope`, { method, headers: { authorization: `Bearer ${s.creds.key.read}` } });
    expect(unknown.body).toMatchObject({ code: 'rest_no_route', data: { status: 404 } });
    // Credentials still come first.
    expect((await rawRequest(`${s.restBase}${path}`, { method })).status).toBe(401);
  });

  it('answers a malformed JSON body with 400 rest_invalid_json', async () => {
    const r = await s.rest(`/sites/${at(0)[0]}/edit`, {
      method: 'POST',
      body: '{"name":',
      headers: { 'content-type': 'application/json' },
    });
    expectError(r, 400, 'rest_invalid_json');
  });
});

describe('list defaults', () => {
  let d: TestServer;
  beforeAll(async () => {
    d = await startServer();
    await seedSites(d.services, 25);
  });
  afterAll(async () => {
    await d.close();
  });

  it('answers page 1 of 20 sites when no paging is given, with the full total', async () => {
    for (const path of ['/sites', '/sites/basic']) {
      const r = await d.rest(path);
      expect(r.body.data, path).toHaveLength(20);
      expect(r.body.total, path).toBe(25);
    }
    const p2 = await d.rest('/sites?page=2');
    expect(p2.body.data).toHaveLength(5);
    expect((await d.rest('/sites?per_page=100')).body.data).toHaveLength(25);
    expect((await d.rest('/sites/count')).body.count).toBe(25);
  });

  it('answers HEAD like GET, without a body', async () => {
    const r = await fetch(`${d.restBase}/sites/count`, { method: 'HEAD', headers: { authorization: `Bearer ${d.creds.key.read}` } });
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('');
  });
});

// Routes that change things run on a server of their own; every test makes the sites it uses.
describe('site changes', () => {
  let w: TestServer;
  let n = 0;
  const newSite = async (fields: Record<string, unknown> = {}) => {
    n += 1;
    const [site] = await seedSites(w.services, 1, () => ({ url: `https://rest${n}.example.com/`, name: `Rest ${n}`, ...fields }));
    return site!;
  };
  const read = async (id: number) => (await w.rest(`/sites/${id}`)).body.data;

  beforeAll(async () => {
    w = await startServer();
  });
  afterAll(async () => {
    await w.close();
  });

  describe('POST|PUT|PATCH /sites/{id_or_domain}/edit', () => {
    it.each(['POST', 'PUT', 'PATCH'])('edits name and notes over %s and answers {success, message, data: full site}', async (method) => {
      const site = await newSite();
      const r = await w.rest(`/sites/${site.id}/edit`, { method, json: { name: `Edited ${method}`, notes: 'hello' } });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: 1, data: { id: site.id, name: `Edited ${method}`, notes: 'hello', url: site.url } });
      expect(typeof r.body.message).toBe('string');
      expect(await read(site.id)).toMatchObject({ name: `Edited ${method}`, notes: 'hello' });
    });

    it('accepts note as the name of notes, and parameters in the query string', async () => {
      const site = await newSite();
      const r = await w.rest(`/sites/${site.id}/edit?name=FromQuery`, { method: 'POST', json: { note: 'via note' } });
      expect(r.status).toBe(200);
      expect(await read(site.id)).toMatchObject({ name: 'FromQuery', notes: 'via note' });
    });

    it('replaces the tags with groupids, given as a comma list or an array', async () => {
      const site = await newSite();
      const a = await seedTag(w.services, `g-a-${site.id}`, [site.id]);
      const b = await seedTag(w.services, `g-b-${site.id}`);
      const c = await seedTag(w.services, `g-c-${site.id}`);
      const r = await w.rest(`/sites/${site.id}/edit`, { method: 'PUT', json: { groupids: `${b.id},${c.id}` } });
      expect(r.status).toBe(200);
      expect(r.body.data.tags.map((t: any) => t.id).sort()).toEqual([b.id, c.id].sort());
      const arr = await w.rest(`/sites/${site.id}/edit`, { method: 'PATCH', json: { groupids: [a.id] } });
      expect(arr.body.data.tags.map((t: any) => t.id)).toEqual([a.id]);
      expect((await w.rest(`/tags/${b.id}`)).body.data.sites_count).toBe(0);
    });

    it('sets client_id, and 0 or null unassigns it', async () => {
      const site = await newSite();
      const [client] = await seedClients(w.services, [{ name: 'REST client', email: 'rc@example.com' }]);
      expect((await w.rest(`/sites/${site.id}/edit`, { method: 'POST', json: { client_id: client!.id } })).body.data.client_id).toBe(
        client!.id,
      );
      expect((await w.rest(`/sites/${site.id}/edit`, { method: 'POST', json: { client_id: 0 } })).body.data.client_id).toBeNull();
      await w.rest(`/sites/${site.id}/edit`, { method: 'POST', json: { client_id: client!.id } });
      expect((await w.rest(`/sites/${site.id}/edit`, { method: 'POST', json: { client_id: null } })).body.data.client_id).toBeNull();
    });

    it('answers unknown sites, tags and clients with 404, and changes nothing', async () => {
      const site = await newSite();
      expectError(await w.rest('/sites/99999/edit', { method: 'POST', json: { name: 'x' } }), 404, 'svc_rest_invalid_site_id');
      expectError(await w.rest('/sites/gone.example.com/edit', { method: 'POST', json: { name: 'x' } }), 404, 'svc_rest_invalid_site_data');
      expectError(
        await w.rest(`/sites/${site.id}/edit`, { method: 'POST', json: { name: 'Changed', groupids: '99999' } }),
        404,
        'svc_tag_not_found',
      );
      expectError(
        await w.rest(`/sites/${site.id}/edit`, { method: 'POST', json: { name: 'Changed', client_id: 99999 } }),
        404,
        'svc_client_not_found',
      );
      expect((await read(site.id)).name).toBe(site.name);
    });

    it('refuses a field of the wrong type with 400 rest_invalid_param naming it', async () => {
      const site = await newSite();
      const r = await w.rest(`/sites/${site.id}/edit`, { method: 'POST', json: { name: 5 } });
      expectError(r, 400, 'rest_invalid_param', 'Invalid parameter(s): name');
      expect(Object.keys(r.body.data.params)).toEqual(['name']);
      expectError(await w.rest(`/sites/${site.id}/edit`, { method: 'POST', json: { groupids: 'a,b' } }), 400, 'rest_invalid_param');
    });
  });

  describe('suspend and unsuspend', () => {
    it.each(['POST', 'PUT', 'PATCH'])('suspends and unsuspends over %s with the action envelope', async (method) => {
      const site = await newSite({ sync_error: 'HTTP error' });
      const r = await w.rest(`/sites/${site.id}/suspend`, { method });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: 1, data: { id: site.id, name: site.name, url: site.url, client_id: null } });
      expect(typeof r.body.message).toBe('string');
      expect((await read(site.id)).status).toBe('suspended');
      const again = await w.rest(`/sites/${site.id}/suspend`, { method });
      expect(again.status).toBe(200);
      const u = await w.rest(`/sites/${site.id}/unsuspend`, { method });
      expect(u.status).toBe(200);
      expect(u.body).toMatchObject({ success: 1, data: { id: site.id } });
      expect((await read(site.id)).status).toBe('connected');
    });

    it('finds the site by domain and answers unknown ones with 404', async () => {
      const site = await newSite();
      const r = await w.rest(`/sites/${site.url.replace('https://', '').replace(/\/$/, '')}/suspend`, { method: 'POST' });
      expect(r.status).toBe(200);
      expect(r.body.data.id).toBe(site.id);
      for (const action of ['suspend', 'unsuspend']) {
        expectError(await w.rest(`/sites/99999/${action}`, { method: 'POST' }), 404, 'svc_rest_invalid_site_id');
        expectError(await w.rest(`/sites/none.example.com/${action}`, { method: 'PUT' }), 404, 'svc_rest_invalid_site_data');
      }
    });
  });

  describe('DELETE /sites/{id_or_domain}/remove', () => {
    it('removes the site and answers {success, message, data: {id, name, url}}', async () => {
      const site = await newSite();
      const tag = await seedTag(w.services, `rm-${site.id}`, [site.id]);
      const r = await w.rest(`/sites/${site.id}/remove`, { method: 'DELETE' });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: 1, data: { id: site.id, name: site.name, url: site.url } });
      expect(typeof r.body.message).toBe('string');
      expectError(await w.rest(`/sites/${site.id}`), 404, 'svc_rest_invalid_site_id');
      expect((await w.rest(`/tags/${tag.id}`)).body.data).toMatchObject({ sites_count: 0, sites_ids: [] });
      expectError(await w.rest(`/sites/${site.id}/remove`, { method: 'DELETE' }), 404, 'svc_rest_invalid_site_id');
    });

    it('removes a site named by domain, and answers an unknown domain with 404', async () => {
      const site = await newSite();
      const r = await w.rest(`/sites/www.${site.url.replace('https://', '').replace(/\/$/, '')}/remove`, { method: 'DELETE' });
      expect(r.status).toBe(200);
      expect(r.body.data.id).toBe(site.id);
      expectError(await w.rest('/sites/never.example.com/remove', { method: 'DELETE' }), 404, 'svc_rest_invalid_site_data');
    });
  });

  describe('/sites/batch', () => {
    it('updates and deletes in one request, answering one entry per item, each with its own success or error', async () => {
      const a = await newSite();
      const b = await newSite();
      const c = await newSite();
      const r = await w.rest('/sites/batch', {
        method: 'POST',
        json: {
          update: [{ id: a.id, name: 'Batch A' }, { id: 99999, name: 'x' }, { name: 'no id' }],
          delete: [c.id, 99998],
        },
      });
      expect(r.status).toBe(200);
      expect(r.body.update).toHaveLength(3);
      expect(r.body.update[0]).toMatchObject({ success: 1, data: { id: a.id, name: 'Batch A' } });
      expect(r.body.update[1]).toEqual({
        id: 99999,
        error: { code: 'svc_rest_invalid_site_id', message: 'Invalid or not found ID.', data: { status: 404 } },
      });
      expect(r.body.update[2]).toMatchObject({ id: 0, error: { code: expect.any(String), data: { status: 400 } } });
      expect(r.body.delete).toHaveLength(2);
      expect(r.body.delete[0]).toMatchObject({ success: 1, data: { id: c.id } });
      expect(r.body.delete[1]).toMatchObject({ id: 99998, error: { code: 'svc_rest_invalid_site_id', data: { status: 404 } } });
      expect((await read(a.id)).name).toBe('Batch A');
      expect((await read(b.id)).name).toBe(b.name);
      expectError(await w.rest(`/sites/${c.id}`), 404, 'svc_rest_invalid_site_id');
    });

    it('accepts PUT and PATCH as well as POST', async () => {
      const a = await newSite();
      for (const method of ['PUT', 'PATCH']) {
        const r = await w.rest('/sites/batch', { method, json: { update: [{ id: a.id, notes: method }] } });
        expect(r.status).toBe(200);
        expect(r.body.update[0]).toMatchObject({ success: 1, data: { notes: method } });
      }
    });

    it('refuses more than 100 items with 413 and processes none of them', async () => {
      const a = await newSite();
      const r = await w.rest('/sites/batch', {
        method: 'POST',
        json: {
          update: [{ id: a.id, name: 'Too many' }],
          delete: Array.from({ length: 100 }, (_, i) => 90000 + i),
        },
      });
      expectError(r, 413, 'svc_rest_request_entity_too_large', 'Unable to accept more than 100 items for this request.');
      expect((await read(a.id)).name).toBe(a.name);
      const ok = await w.rest('/sites/batch', { method: 'POST', json: { delete: Array.from({ length: 100 }, (_, i) => 90000 + i) } });
      expect(ok.status).toBe(200);
      expect(ok.body.delete).toHaveLength(100);
    });
  });
});
