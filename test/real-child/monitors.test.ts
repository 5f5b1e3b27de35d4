// Uptime monitoring of a real WordPress site: its web server is stopped, the incident opens within one interval and a
// signed webhook reaches a receiver on loopback; the server comes back, the incident closes.
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMonitoring } from '../../src/domain/index.js';
import { startServer, type TestServer } from '../support/server.js';
import { realSite, resetSite, startSitesAgain, stopSitePhp } from './kit.js';
import { until } from '../support/wait.js';

const K = 4;
const INTERVAL_S = 2;
let s: TestServer;
let id: number;
let secret: string;
const got: Array<{ signature: string; body: string }> = [];
const hook = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => {
    body += c;
  });
  req.on('end', () => {
    got.push({ signature: String(req.headers['x-sitefleet-signature']), body });
    res.end();
  });
});

beforeAll(async () => {
  resetSite(K);
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
  s = await startServer({ config: { monitorIntervalS: String(INTERVAL_S), monitorFlushMs: '200' } });
});
afterAll(async () => {
  startSitesAgain(); // whatever happened, the site is back for the next run
  await s?.close();
  await new Promise<void>((r) => {
    hook.close(() => r());
    hook.closeAllConnections();
  });
});

describe('a real site going down and coming back', () => {
  it('is monitored once added, and up', async () => {
    const site = realSite(K);
    const r = await s.ability('add-site-v1', { url: site.url, admin: site.admin, admin_password: site.password, name: 'Real monitored' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    id = r.body.id ?? r.body.site?.id;
    const w = await s.rest('/webhooks/add', {
      method: 'POST',
      json: { url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/`, events: ['site.down', 'site.up'] },
    });
    secret = w.body.data.secret;
    startMonitoring(s.services);
    const m = await until(
      async () => (await s.rest(`/monitors/${id}`)).body.data,
      (d) => d.last_status === 'up',
    );
    expect(m.last_status_code).toBe(200);
  });

  it('opens an incident within one interval of its web server stopping, with a signed webhook', async () => {
    await stopSitePhp(K);
    const stoppedAt = Date.now();
    const inc = await until(
      async () => (await s.rest(`/monitors/${id}/incidents`)).body.data,
      (l) => l.length === 1,
    );
    expect(Date.parse(inc[0].started_at)).toBeLessThanOrEqual(stoppedAt + INTERVAL_S * 1000 + 500);
    expect(inc[0]).toMatchObject({ resolved: false, cause: 'connection' });
    const down = await until(
      async () => got.filter((g) => JSON.parse(g.body).event === 'site.down'),
      (l) => l.length === 1,
    );
    expect(down[0]!.signature).toBe(`sha256=${createHmac('sha256', secret).update(down[0]!.body).digest('hex')}`);
  });

  it('closes it when the server is back on the same URL', async () => {
    startSitesAgain();
    const inc = await until(
      async () => (await s.rest(`/monitors/${id}/incidents`)).body.data[0],
      (i) => i.resolved === true,
    );
    expect(inc.ended_at).not.toBeNull();
    await until(
      async () => got.filter((g) => JSON.parse(g.body).event === 'site.up'),
      (l) => l.length === 1,
    );
    const a = await s.ability('get-site-uptime-v1', { site_id_or_domain: id }, { method: 'GET' });
    expect(a.body).toMatchObject({ status: 'up', open_incident: null, incidents_7d: 1 });
  });
});
