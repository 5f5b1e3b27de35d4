// POST /batch takes its controllers from the body's own keys only. A "__proto__" key (an own key after JSON.parse)
// is one of the "_" arguments every route leaves alone — it was taken for a controller and answered 500 (found by
// the REST door's fuzzing, then in test/fuzz.test.ts, seed 47555361); names Object.prototype has are unknown controllers (400, nothing done).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from './support/fixtures.js';
import { seedSites, startServer, type TestServer } from './support/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => {
  await s.close();
});

const post = (body: string) => s.rest('/batch', { method: 'POST', body, headers: { 'content-type': 'application/json' } });

it('leaves a "__proto__" key alone, like any argument starting with "_", and runs the rest', async () => {
  expect(await post('{"__proto__":{}}')).toMatchObject({ status: 200, body: {} });
  const r = await post('{"__proto__":{"create":[1]},"tags":{"create":[{"name":"kept"}]}}');
  expect(r.status).toBe(200);
  expect(Object.keys(r.body)).toEqual(['tags']);
  expect(r.body.tags.create[0]).toMatchObject({ success: 1, data: { name: 'kept' } });
});

it.each(['constructor', 'toString', 'hasOwnProperty'])('refuses a controller named %s (400, nothing run)', async (key) => {
  const before = s.services.store.count('tags');
  const r = await post(`{"${key}":{},"tags":{"create":[{"name":"x-${key}"}]}}`);
  expectError(r, 400, 'rest_invalid_param', `Unknown batch controller(s): ${key}. This batch takes: sites, tags, clients, costs.`);
  expect(s.services.store.count('tags')).toBe(before);
});

describe('each batch item is authorised as the route it stands for (issue 35, finding 3)', () => {
  const READS = ['plugins', 'themes', 'security', 'non-mainwp-changes'] as const;
  let id: number;
  beforeAll(async () => {
    id = (await seedSites(s.services, 1, () => ({ url: 'http://127.0.0.1:9/batch-keys/' })))[0]!.id;
  });

  it.each(READS)('a write-only key gets 403 for a %s item, as on the GET it stands for, through /sites/batch and /batch', async (kind) => {
    const write = s.creds.key.write;
    const get = await s.rest(`/sites/${id}/${kind}`, { token: write });
    expect(get).toMatchObject({ status: 403, body: { code: 'svc_permission_denied' } });
    const denied = { id, error: { code: 'svc_permission_denied', message: expect.any(String), data: { status: 403 } } };
    const one = await s.rest('/sites/batch', { method: 'POST', token: write, json: { [kind]: [id] } });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ [kind]: [denied] });
    const all = await s.rest('/batch', { method: 'POST', token: write, json: { sites: { [kind]: [id] } } });
    expect(all.status).toBe(200);
    expect(all.body).toEqual({ sites: { [kind]: [denied] } });
  });

  it.each(READS)('a read_write key still reads a %s item through both batches', async (kind) => {
    const direct = await s.rest(`/sites/${id}/${kind}`);
    expect(direct.status).toBe(200);
    const one = await s.rest('/sites/batch', { method: 'POST', json: { [kind]: [id] } });
    expect(one.body[kind][0]).toEqual(direct.body);
    const all = await s.rest('/batch', { method: 'POST', json: { sites: { [kind]: [id] } } });
    expect(all.body.sites[kind][0]).toEqual(direct.body);
  });

  it('a write-only key still runs the write items of a batch (update, suspend; tags create/update/delete)', async () => {
    const write = s.creds.key.write;
    const r = await s.rest('/batch', {
      method: 'POST',
      token: write,
      json: { sites: { update: [{ id, name: 'Renamed by a write key' }], suspend: [id] }, tags: { create: [{ name: 'by-write-key' }] } },
    });
    expect(r.status).toBe(200);
    expect(r.body.sites.update[0]).toMatchObject({ success: 1 });
    expect(r.body.sites.suspend[0]).toMatchObject({ success: 1 });
    expect(r.body.tags.create[0]).toMatchObject({ success: 1, data: { name: 'by-write-key' } });
    const tag = r.body.tags.create[0].data.id;
    const d = await s.rest('/tags/batch', {
      method: 'POST',
      token: write,
      json: { update: [{ id: tag, name: 'renamed' }], delete: [tag] },
    });
    expect(d.body.update[0]).toMatchObject({ success: 1 });
    expect(d.body.delete[0]).not.toHaveProperty('error');
  });
});
