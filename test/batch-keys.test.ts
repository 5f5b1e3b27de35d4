// POST /batch takes its controllers from the body's own keys only. A "__proto__" key (an own key after JSON.parse)
// is one of the "_" arguments every route leaves alone — it was taken for a controller and answered 500 (found by
// test/fuzz.test.ts, seed 47555361); names Object.prototype has are unknown controllers (400, nothing done).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectError } from './support/fixtures.js';
import { startServer, type TestServer } from './support/server.js';

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
