// REST interface v2, tag routes of issue 2: /tags, /tags/{id}, /tags/add, /tags/{id}/edit,
// /tags/{id}/remove, /tags/{id}/sites, /tags/{id}/clients and /tags/batch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, seedFleet, seedTag, type Fleet } from './support/fixtures.js';
import { seedSites, startServer, type TestServer } from './support/server.js';

const ids = (list: Array<{ id: number }>) => list.map((x) => x.id);

describe('reading tags', () => {
  let s: TestServer;
  let fleet: Fleet;
  beforeAll(async () => {
    s = await startServer();
    fleet = await seedFleet(s.services);
  });
  afterAll(async () => {
    await s.close();
  });

  describe('GET /tags', () => {
    it('answers {success: 1, total, data: [tag]} ordered by name, with numeric ids and counts', async () => {
      const r = await s.rest('/tags');
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: 1, total: 3 });
      expect(Array.isArray(r.body.data)).toBe(true);
      expect(r.body.data.map((t: any) => t.name)).toEqual(['Empty', 'Production', 'staging']);
      expect(r.body.data[1]).toMatchObject({
        id: fleet.tags.production.id,
        name: 'Production',
        color: '#21ba45',
        sites_count: 3,
        sites_ids: ids(fleet.sites.slice(0, 3)),
      });
      for (const t of r.body.data) {
        expect(typeof t.id).toBe('number');
        expect(typeof t.sites_count).toBe('number');
        expect(typeof t.created_at).toBe('string');
        expect(typeof t.updated_at).toBe('string');
      }
    });

    it('takes page and per_page, and refuses bad values naming the parameter', async () => {
      const r = await s.rest('/tags?page=2&per_page=2');
      expect(r.body.data.map((t: any) => t.name)).toEqual(['staging']);
      expect(r.body.total).toBe(3);
      expect((await s.rest('/tags?page=3&per_page=2')).body).toEqual({ success: 1, total: 3, data: [] });
      for (const [q, p] of [
        ['per_page=0', 'per_page'],
        ['per_page=101', 'per_page'],
        ['page=0', 'page'],
        ['page=x', 'page'],
      ]) {
        const bad = await s.rest(`/tags?${q}`);
        expectError(bad, 400, 'rest_invalid_param', `Invalid parameter(s): ${p}`);
        expect(Object.keys(bad.body.data.params)).toEqual([p]);
      }
    });

    it('includes and excludes ids given as a comma list or an array', async () => {
      const { production, staging, empty } = fleet.tags;
      expect(ids((await s.rest(`/tags?include=${production.id},${empty.id}`)).body.data)).toEqual([empty.id, production.id]);
      expect(ids((await s.rest(`/tags?include[]=${staging.id}`)).body.data)).toEqual([staging.id]);
      const ex = await s.rest(`/tags?exclude=${production.id}`);
      expect(ids(ex.body.data)).toEqual([empty.id, staging.id]);
      expect(ex.body.total).toBe(2);
      expectError(await s.rest('/tags?include=a,b'), 400, 'rest_invalid_param', 'Invalid parameter(s): include');
    });
  });

  describe('GET /tags/{id}', () => {
    it('answers {success: 1, data: tag}', async () => {
      const t = fleet.tags.production;
      const r = await s.rest(`/tags/${t.id}`);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        success: 1,
        data: {
          id: t.id,
          name: 'Production',
          color: '#21ba45',
          sites_count: 3,
          sites_ids: ids(fleet.sites.slice(0, 3)),
          created_at: t.created_at,
          updated_at: t.updated_at,
        },
      });
    });

    it('answers an unknown id with 404 svc_rest_invalid_tag_id and a non-numeric one with 404 rest_no_route', async () => {
      expectError(await s.rest('/tags/99999'), 404, 'svc_rest_invalid_tag_id', 'Invalid or not found ID.');
      expectError(await s.rest('/tags/abc'), 404, 'rest_no_route');
    });

    it('answers an id beyond the integer range with 404 svc_rest_invalid_tag_id, not a parameter error', async () => {
      const huge = '99999999999999999999999';
      expectError(await s.rest(`/tags/${huge}`), 404, 'svc_rest_invalid_tag_id');
      expectError(await s.rest(`/tags/${huge}/sites`), 404, 'svc_rest_invalid_tag_id');
      expectError(await s.rest(`/tags/${huge}/edit`, { method: 'POST', json: { name: 'x' } }), 404, 'svc_rest_invalid_tag_id');
      expectError(await s.rest(`/tags/${huge}/remove`, { method: 'DELETE' }), 404, 'svc_rest_invalid_tag_id');
    });
  });

  describe('GET /tags/{id}/sites and /tags/{id}/clients', () => {
    it('lists the sites in a tag with the list envelope', async () => {
      const r = await s.rest(`/tags/${fleet.tags.production.id}/sites`);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: 1, total: 3 });
      expect(ids(r.body.data).sort()).toEqual(ids(fleet.sites.slice(0, 3)).sort());
      expect(r.body.data).toContainEqual(
        expect.objectContaining({ id: fleet.sites[2]!.id, url: 'https://charlie.example.net/', name: 'Charlie', status: 'suspended' }),
      );
      expect((await s.rest(`/tags/${fleet.tags.empty.id}/sites`)).body).toEqual({ success: 1, total: 0, data: [] });
      const paged = await s.rest(`/tags/${fleet.tags.production.id}/sites?per_page=2&page=2`);
      expect(paged.body.data).toHaveLength(1);
      expect(paged.body.total).toBe(3);
    });

    it("lists the clients of a tag's sites, by name, with sites_with_tag", async () => {
      const [beta, acme] = fleet.clients;
      const r = await s.rest(`/tags/${fleet.tags.production.id}/clients`);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: 1, total: 2 });
      expect(r.body.data).toEqual([
        expect.objectContaining({ id: acme!.id, name: 'Acme Corp', email: 'it@acme.example', sites_with_tag: 2 }),
        expect.objectContaining({ id: beta!.id, name: 'Beta Ltd', email: 'ops@beta.example', sites_with_tag: 1 }),
      ]);
      expect((await s.rest(`/tags/${fleet.tags.staging.id}/clients`)).body).toEqual({ success: 1, total: 0, data: [] });
    });

    it.each(['sites', 'clients'])('answers /tags/{unknown}/%s with 404 svc_rest_invalid_tag_id', async (sub) => {
      expectError(await s.rest(`/tags/99999/${sub}`), 404, 'svc_rest_invalid_tag_id');
    });

    it.each(['sites', 'clients'])('refuses bad paging on /tags/{id}/%s naming the parameter', async (sub) => {
      for (const [q, p] of [
        ['per_page=0', 'per_page'],
        ['per_page=101', 'per_page'],
        ['page=0', 'page'],
      ]) {
        const r = await s.rest(`/tags/${fleet.tags.production.id}/${sub}?${q}`);
        expectError(r, 400, 'rest_invalid_param', `Invalid parameter(s): ${p}`);
      }
      const one = await s.rest(`/tags/${fleet.tags.production.id}/${sub}?per_page=1`);
      expect(one.body.data).toHaveLength(1);
      expect(one.body.total).toBeGreaterThan(1);
    });
  });

  it.each([
    ['PUT', '/tags/add', 'POST'],
    ['GET', '/tags/add', 'POST'],
    ['POST', '/tags', 'GET'],
    ['DELETE', '/tags/1', 'GET'],
    ['GET', '/tags/1/edit', 'POST, PUT, PATCH'],
    ['POST', '/tags/1/remove', 'DELETE'],
    ['POST', '/tags/1/sites', 'GET'],
    ['PUT', '/tags/1/clients', 'GET'],
    ['GET', '/tags/batch', 'POST, PUT, PATCH'],
  ])('answers %s %s with 405 and Allow: %s', async (method, path, allow) => {
    const r = await s.rest(path, { method, ...(method === 'GET' || method === 'DELETE' ? {} : { json: {} }) });
    expectError(r, 405, 'rest_no_route_method');
    expect(r.headers.get('allow')).toBe(allow);
  });

  it.each(['/tags/1/nope', '/tags/1/sites/x', '/tags/add/1'])('answers %s with 404 rest_no_route', async (path) => {
    expectError(await s.rest(path), 404, 'rest_no_route');
  });
});

describe('changing tags', () => {
  let w: TestServer;
  let n = 0;
  const unique = (p: string) => {
    n += 1;
    return `${p} ${n}`;
  };
  beforeAll(async () => {
    w = await startServer();
  });
  afterAll(async () => {
    await w.close();
  });

  describe('POST /tags/add', () => {
    it('creates a tag and answers {success: 1, message, data: tag}', async () => {
      const name = unique('Created');
      const r = await w.rest('/tags/add', { method: 'POST', json: { name, color: '#123abc' } });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: 1, data: { name, color: '#123abc', sites_count: 0, sites_ids: [] } });
      expect(typeof r.body.message).toBe('string');
      expect(typeof r.body.data.id).toBe('number');
      expect(typeof r.body.data.created_at).toBe('string');
      expect((await w.rest(`/tags/${r.body.data.id}`)).body.data).toEqual(r.body.data);
    });

    it('creates a tag without a colour (color null)', async () => {
      const r = await w.rest('/tags/add', { method: 'POST', json: { name: unique('Plain') } });
      expect(r.status).toBe(200);
      expect(r.body.data.color).toBeNull();
    });

    it.each(['red', '#abc', '#12345g', '123456'])('refuses the colour %s with 400 rest_invalid_param naming color', async (color) => {
      const r = await w.rest('/tags/add', { method: 'POST', json: { name: unique('Colour'), color } });
      expectError(r, 400, 'rest_invalid_param', 'Invalid parameter(s): color');
      expect(Object.keys(r.body.data.params)).toEqual(['color']);
    });

    it('names a nested parameter as REST does (include[1]), never as input[include][1]', async () => {
      const r = await w.rest('/tags?include[]=1&include[]=x');
      expectError(r, 400, 'rest_invalid_param', 'Invalid parameter(s): include');
      expect(r.body.data).toEqual({
        status: 400,
        params: { include: 'include[1] is not of type integer.' },
        reason: 'include[1] is not of type integer.',
      });
    });

    it('refuses a missing or empty name with 400 rest_invalid_param naming name', async () => {
      for (const json of [{}, { name: '' }, { color: '#000000' }]) {
        const r = await w.rest('/tags/add', { method: 'POST', json });
        expectError(r, 400, 'rest_invalid_param', 'Invalid parameter(s): name');
      }
      expectError(
        await w.rest('/tags/add', { method: 'POST', json: { name: 7 } }),
        400,
        'rest_invalid_param',
        'Invalid parameter(s): name',
      );
    });
  });

  describe('POST|PUT|PATCH /tags/{id}/edit', () => {
    it.each(['POST', 'PUT', 'PATCH'])('renames over %s and keeps the colour; a colour alone keeps the name', async (method) => {
      const t = await seedTag(w.services, unique('Edit me'), [], '#101010');
      const name = unique('Edited');
      const r = await w.rest(`/tags/${t.id}/edit`, { method, json: { name } });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: 1, data: { id: t.id, name, color: '#101010' } });
      expect(typeof r.body.message).toBe('string');
      const c = await w.rest(`/tags/${t.id}/edit`, { method, json: { color: '#202020' } });
      expect(c.body.data).toMatchObject({ name, color: '#202020' });
    });

    it('answers an unknown tag with 404, a taken name with 409 and a bad colour with 400', async () => {
      const taken = await seedTag(w.services, unique('Taken'));
      const t = await seedTag(w.services, unique('Other'));
      expectError(await w.rest('/tags/99999/edit', { method: 'POST', json: { name: 'x' } }), 404, 'svc_rest_invalid_tag_id');
      expectError(await w.rest(`/tags/${t.id}/edit`, { method: 'POST', json: { name: taken.name.toLowerCase() } }), 409, 'svc_tag_exists');
      expectError(
        await w.rest(`/tags/${t.id}/edit`, { method: 'POST', json: { color: 'blue' } }),
        400,
        'rest_invalid_param',
        'Invalid parameter(s): color',
      );
      expect((await w.rest(`/tags/${t.id}`)).body.data.name).toBe(t.name);
    });
  });

  it('refuses a taken name whatever changed the tags before: grouped creates, a rename, a delete, an undone write', async () => {
    const tags = w.services.tags;
    const base = unique('Index');
    // Two creates of one name (any case) in one commit: the second is refused.
    const both = await Promise.allSettled([tags.add({ name: base }), tags.add({ name: base.toUpperCase() })]);
    expect(both.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect((both[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'svc_tag_exists' });
    const a = (both[0] as PromiseFulfilledResult<{ id: number }>).value;
    // Renamed: the old name is free, the new one taken.
    await tags.edit(a.id, { name: `${base} renamed` });
    await expect(tags.add({ name: `${base} RENAMED` })).rejects.toMatchObject({ code: 'svc_tag_exists' });
    const again = await tags.add({ name: base });
    // Deleted: its name is free again.
    await tags.remove(again.id);
    const third = await tags.add({ name: base.toLowerCase() });
    expect(third.name).toBe(base.toLowerCase());
    // A create undone (its write threw afterwards) leaves its name free.
    const lost = unique('Undone');
    await expect(
      w.services.store.write((tx) => {
        tags.create(tx, { name: lost });
        throw new Error('after the create');
      }),
    ).rejects.toThrow('after the create');
    expect((await tags.add({ name: lost })).name).toBe(lost);
  });

  describe('DELETE /tags/{id}/remove', () => {
    it('deletes the tag, keeps its sites, and answers {success, message, data: {id, name}}', async () => {
      const [site] = await seedSites(w.services, 1, () => ({ url: `https://${unique('tagged').replace(' ', '-')}.example.com/` }));
      const t = await seedTag(w.services, unique('Doomed'), [site!.id]);
      const r = await w.rest(`/tags/${t.id}/remove`, { method: 'DELETE' });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: 1, data: { id: t.id, name: t.name } });
      expect(typeof r.body.message).toBe('string');
      expectError(await w.rest(`/tags/${t.id}`), 404, 'svc_rest_invalid_tag_id');
      const still = await w.rest(`/sites/${site!.id}`);
      expect(still.status).toBe(200);
      expect(still.body.data.tags).toEqual([]);
      expectError(await w.rest(`/tags/${t.id}/remove`, { method: 'DELETE' }), 404, 'svc_rest_invalid_tag_id');
    });
  });

  describe('/tags/batch', () => {
    it('creates, updates and deletes in one request with per-item results and errors', async () => {
      const keep = await seedTag(w.services, unique('Batch keep'));
      const drop = await seedTag(w.services, unique('Batch drop'));
      const name = unique('Batch new');
      const r = await w.rest('/tags/batch', {
        method: 'POST',
        json: {
          create: [{ name, color: '#00ff00' }, { name: name.toLowerCase() }, { color: 'bad' }],
          update: [
            { id: keep.id, color: '#0000ff' },
            { id: 99999, name: 'x' },
          ],
          delete: [drop.id, 99998],
        },
      });
      expect(r.status).toBe(200);
      expect(r.body.create).toHaveLength(3);
      expect(r.body.create[0]).toMatchObject({ success: 1, data: { name, color: '#00ff00' } });
      expect(r.body.create[1]).toEqual({ id: 0, error: expect.objectContaining({ code: 'svc_tag_exists', data: { status: 409 } }) });
      expect(r.body.create[2]).toMatchObject({ id: 0, error: { code: 'rest_invalid_param', data: { status: 400 } } });
      expect(r.body.update[0]).toMatchObject({ success: 1, data: { id: keep.id, name: keep.name, color: '#0000ff' } });
      expect(r.body.update[1]).toEqual({
        id: 99999,
        error: { code: 'svc_rest_invalid_tag_id', message: 'Invalid or not found ID.', data: { status: 404 } },
      });
      expect(r.body.delete[0]).toMatchObject({ success: 1, data: { id: drop.id } });
      expect(r.body.delete[1]).toMatchObject({ id: 99998, error: { code: 'svc_rest_invalid_tag_id', data: { status: 404 } } });
      expectError(await w.rest(`/tags/${drop.id}`), 404, 'svc_rest_invalid_tag_id');
      expect((await w.rest(`/tags/${keep.id}`)).body.data.color).toBe('#0000ff');
    });

    it('refuses more than 100 items with 413 and creates nothing', async () => {
      const prefix = unique('Bulk').replace(' ', '-');
      const create = Array.from({ length: 101 }, (_, i) => ({ name: `${prefix}-${i}` }));
      expectError(await w.rest('/tags/batch', { method: 'POST', json: { create } }), 413, 'svc_rest_request_entity_too_large');
      expect((await w.rest(`/tags?search=${prefix}`)).body.total).toBe(0);
      const mixed = { create: create.slice(0, 50), update: [], delete: Array.from({ length: 51 }, (_, i) => 80000 + i) };
      expectError(await w.rest('/tags/batch', { method: 'POST', json: mixed }), 413, 'svc_rest_request_entity_too_large');
      expect((await w.rest(`/tags?search=${prefix}`)).body.total).toBe(0);
      const ok = await w.rest('/tags/batch', { method: 'POST', json: { create: create.slice(0, 100) } });
      expect(ok.status).toBe(200);
      expect(ok.body.create.every((e: any) => e.success === 1)).toBe(true);
      expect((await w.rest(`/tags?search=${prefix}&per_page=1`)).body.total).toBe(100);
    });
  });
});
