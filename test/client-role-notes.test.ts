// A client user (issue 32, the portal) reads its own client and sites, but not what the agency writes about them for
// itself: the client's `note`, the sites' `notes` and admin account names come back empty (cut in the registry, so on
// every door a user reaches: abilities, MCP, the console; REST takes keys only); an
// administrator still reads them, and the client user's call does not change what the administrator's answer holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, seedSites, startServer, type TestServer } from './support/server.js';

let s: TestServer;
let portal: string;
let clientId = 0;
let siteId = 0;

beforeAll(async () => {
  s = await startServer();
  const c = await s.ability('add-client-v1', { name: 'Acme Bakery', note: 'Pays late; upsell hosting.' });
  expect(c.status, JSON.stringify(c.body)).toBe(200);
  clientId = c.body.id;
  const [site] = await seedSites(s.services, 1, () => ({ notes: 'Owner is difficult.', admin_username: 'agency-admin' }));
  siteId = site!.id;
  const set = await s.ability('update-site-v1', { site_id_or_domain: siteId, client_id: clientId } as never);
  expect(set.status, JSON.stringify(set.body)).toBe(200);
  const { password } = await s.services.auth.createUser('acme-portal', 'client', { clients: [clientId] });
  portal = basic('acme-portal', password);
});
afterAll(() => s?.close());

const secrets = ['Pays late', 'Owner is difficult', 'agency-admin'];

describe("the agency's notes, kept from the client's users", () => {
  it('are empty in what the client user reads', async () => {
    const answers = [
      await s.ability('get-site-v1', { site_id_or_domain: siteId }, { method: 'GET', auth: portal }),
      await s.ability('list-sites-v1', {}, { method: 'GET', auth: portal }),
      await s.ability('get-client-v1', { client_id_or_email: clientId }, { method: 'GET', auth: portal }),
      await s.ability('list-clients-v1', {}, { method: 'GET', auth: portal }),
    ];
    for (const r of answers) {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      for (const text of secrets) expect(JSON.stringify(r.body), JSON.stringify(r.body)).not.toContain(text);
    }
    const site = answers[0]!.body;
    expect([site.notes, site.admin_username]).toEqual(['', '']);
  });

  it('are still there for an administrator, also after the client user read them', async () => {
    const site = await s.ability('get-site-v1', { site_id_or_domain: siteId }, { method: 'GET' });
    expect([site.body.notes, site.body.admin_username]).toEqual(['Owner is difficult.', 'agency-admin']);
    const client = await s.ability('get-client-v1', { client_id_or_email: clientId }, { method: 'GET' });
    expect(JSON.stringify(client.body)).toContain('Pays late');
  });
});
