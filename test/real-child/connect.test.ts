// The lane's first proof: a real MainWP Child registers with sitefleet, and what sitefleet lists after a sync is
// what WordPress itself says.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { realSite, resetSite, wpJson } from './kit.js';

describe('a real child site', () => {
  let s: TestServer;
  let id: number;
  beforeAll(async () => {
    resetSite(1);
    s = await startServer();
  });
  afterAll(async () => {
    await s?.close();
  });

  it('registers with the admin password and lists the plugins WordPress has', async () => {
    const site = realSite(1);
    const r = await s.rest('/sites/add', {
      method: 'POST',
      json: { url: site.url, admin: site.admin, admin_password: site.password, name: 'Real 1' },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    id = r.body.data.id;
    const truth = wpJson<Record<string, { Version: string }>>(1, 'return get_plugins();');
    const active = wpJson<string[]>(1, 'return get_option("active_plugins");');
    const listed = await s.rest(`/sites/${id}/plugins`);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    const rows = listed.body.data as Array<{ slug: string; version: string; active: boolean | number }>;
    expect(rows.map((p) => p.slug).sort()).toEqual(Object.keys(truth).sort());
    for (const p of rows) {
      expect(p.version).toBe(truth[p.slug].Version);
      expect(Boolean(p.active)).toBe(active.includes(p.slug));
    }
  });
});
