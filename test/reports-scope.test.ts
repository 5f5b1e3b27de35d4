// The client reports archive inside a caller's scope (issue 32 with the reports of #31): a client user, or a key scoped
// to a client, lists and reads only the reports of what it may see; another client's report, or the archive filtered
// by another client, answers exactly as one that does not exist. (Previews and settings resolve their client through
// the scoped client service already.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, startServer, type TestServer } from './support/server.js';

let s: TestServer;
let portal: string;
let scopedKey: string;
const ids = { acme: 0, globex: 0, acmeReport: 0, globexReport: 0 };

beforeAll(async () => {
  s = await startServer();
  const client = async (name: string) => (await s.ability('add-client-v1', { name })).body.id as number;
  ids.acme = await client('Acme Bakery');
  ids.globex = await client('Globex Hardware');
  const gen = async (input: object) => {
    const r = await s.ability('generate-client-report-v1', { ...input, period: 'last_month', send: false });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.id as number;
  };
  ids.acmeReport = await gen({ client_id: ids.acme });
  ids.globexReport = await gen({ client_id: ids.globex });
  const { user, password } = await s.services.auth.createUser('acme-portal', 'client', { clients: [ids.acme] });
  expect(user.role).toBe('client');
  portal = basic('acme-portal', password);
  scopedKey = `Bearer ${(await s.services.auth.createKey('acme-key', 'read', { scope: { clients: [ids.acme] } })).token}`;
});

afterAll(async () => {
  await s.close();
});

const as = (auth: string, name: string, input: object) => s.ability(name, input, { method: 'GET', auth });

describe('the client reports archive in a scope', () => {
  for (const who of ['client user', 'scoped key'] as const) {
    it(`lists and reads only its client's reports (${who})`, async () => {
      const auth = who === 'client user' ? portal : scopedKey;
      const list = await as(auth, 'list-client-reports-v1', {});
      expect(list.status).toBe(200);
      expect(list.body.items.map((r: { id: number }) => r.id)).toEqual([ids.acmeReport]);
      expect(list.body.total).toBe(1);
      expect((await as(auth, 'get-client-report-v1', { report_id: ids.acmeReport, format: 'summary' })).status).toBe(200);
      // Another client's report answers as a missing one.
      const missing = await as(auth, 'get-client-report-v1', { report_id: 98_765, format: 'summary' });
      const other = await as(auth, 'get-client-report-v1', { report_id: ids.globexReport, format: 'summary' });
      expect(missing.status).toBe(404);
      expect(other.status).toBe(404);
      expect(other.body.code).toBe(missing.body.code);
      expect(other.body.message.replace(String(ids.globexReport), 'ID')).toBe(missing.body.message.replace('98765', 'ID'));
      // The archive filtered by another client answers as for a client that does not exist.
      const none = await as(auth, 'list-client-reports-v1', { client_id: 98_765 });
      const globex = await as(auth, 'list-client-reports-v1', { client_id: ids.globex });
      expect(none.status).toBe(404);
      expect(globex.status).toBe(404);
      expect(globex.body.code).toBe(none.body.code);
      expect(globex.body.message.replace(String(ids.globex), 'ID')).toBe(none.body.message.replace('98765', 'ID'));
    });
  }

  it('an administrator still sees the whole archive', async () => {
    const list = await s.ability('list-client-reports-v1', {}, { method: 'GET' });
    expect(list.body.items.map((r: { id: number }) => r.id).sort()).toEqual([ids.acmeReport, ids.globexReport].sort());
    expect((await s.ability('get-client-report-v1', { report_id: ids.globexReport, format: 'summary' }, { method: 'GET' })).status).toBe(
      200,
    );
  });
});
