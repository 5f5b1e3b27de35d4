import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedSites, startServer, type TestServer } from './support/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
  await seedSites(s.services, 3);
});
afterAll(async () => {
  await s.close();
});

describe('smoke', () => {
  it('lists seeded sites over REST', async () => {
    const r = await s.rest('/sites');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, total: 3 });
  });
  it('lists seeded sites over the abilities door', async () => {
    const r = await s.ability('list-sites-v1', { per_page: 2 }, { method: 'GET' });
    expect(r.status).toBe(200);
    expect(r.body.items).toHaveLength(2);
  });
});
