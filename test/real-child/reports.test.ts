// A client report on real WordPress (issue 31 part 3): kit site 1 belongs to a client; rc-gamma (1.0.0, the kit offers
// 1.1.0) is updated through the abilities door; the client's report of this month lists that update with its versions,
// as WordPress now has it on disk.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { resetSite, serverWithRealSite, wpJson } from './kit.js';

let s: TestServer;
let id: number;
const GAMMA = 'rc-gamma/rc-gamma.php';
const gamma = () => wpJson<string>(1, `wp_clean_plugins_cache(); return get_plugins()[${JSON.stringify(GAMMA)}]["Version"];`);

beforeAll(async () => {
  resetSite(1);
  ({ s, id } = await serverWithRealSite(1, startServer));
});
afterAll(async () => {
  await s?.close();
  resetSite(1);
});

describe('a client report of a real site', () => {
  it('lists the update the site received, with its versions', async () => {
    expect(gamma()).toBe('1.0.0');
    const client = await s.rest('/clients/add', {
      method: 'POST',
      json: { name: 'Real client', email: 'real@client.example', selected_sites: [id] },
    });
    expect(client.status).toBe(200);
    const clientId = client.body.data.id as number;
    const u = await s.ability('update-site-plugins-v1', { site_id_or_domain: id, slugs: [GAMMA] });
    expect(u.status).toBe(200);
    expect(gamma()).toBe('1.1.0');
    const today = new Date().toISOString().slice(0, 10);
    const r = await s.rest('/reports/preview', {
      method: 'POST',
      json: { client_id: clientId, from: today, to: today, time_zone: 'UTC', format: 'text' },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.summary).toMatchObject({ sites: 1, updates: 1, updates_by_outcome: { updated: 1 } });
    expect(r.body.data.text).toMatch(/RC Gamma \(plugin\) \| 1\.0\.0 → 1\.1\.0 \| updated/);
    // The change through the dashboard is in the report too (the audit log names the site).
    expect(r.body.data.summary.changes).toBeGreaterThanOrEqual(1);
  });
});
