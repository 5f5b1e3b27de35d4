// The simulator's outages drive the uptime check's causes: scheduled down windows, slow answers past the timeout,
// and a certificate the check does not trust (TLS).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startChildSim, type ChildSim } from '../src/child/simulator/server.js';
import { KEYWORD_SCAN_BYTES } from '../src/domain/uptime-check.js';
import { seedSites, startServer, tempDir, type TestServer } from './support/server.js';

let openssl = true;
try {
  execFileSync('openssl', ['version'], { stdio: 'ignore' });
} catch {
  openssl = false;
}

let sim: ChildSim;
/** The simulated sites' clock: the real one, moved ahead by the tests (outage windows are read by it). */
let simAhead = 0;
const simNow = () => Date.now() + simAhead;
let s: TestServer;
const ids: Record<string, number> = {};

beforeAll(async () => {
  let tls: { key: string; cert: string } | undefined;
  if (openssl) {
    const dir = tempDir('sitefleet-monitor-tls-');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'k.pem'),
        '-out',
        join(dir, 'c.pem'),
        '-days',
        '30',
        '-subj',
        '/CN=sitefleet-test',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    tls = { key: readFileSync(join(dir, 'k.pem'), 'utf8'), cert: readFileSync(join(dir, 'c.pem'), 'utf8') };
  } else {
    console.warn('monitor-outages.test.ts: openssl not found; the TLS case is skipped.');
  }
  sim = await startChildSim({ sites: 3, tls, now: simNow });
  s = await startServer();
  const rows = [
    { key: 'windows', url: sim.sites[0]!.url, ssl_verify: true },
    { key: 'slow', url: sim.sites[1]!.url, ssl_verify: true },
    ...(sim.httpsBaseUrl
      ? [
          { key: 'tls', url: `${sim.httpsBaseUrl}/s/3/`, ssl_verify: true },
          { key: 'tls-unverified', url: `${sim.httpsBaseUrl}/s/3/index.php`, ssl_verify: false },
        ]
      : []),
  ];
  const recs = await seedSites(s.services, rows.length, (i) => ({ url: rows[i]!.url, ssl_verify: rows[i]!.ssl_verify }));
  rows.forEach((r, i) => {
    ids[r.key] = recs[i]!.id;
  });
});
afterAll(async () => {
  await s?.close();
  await sim?.close();
});

const check = async (key: string) => (await s.ability('check-monitor-v1', { site_id_or_domain: ids[key] })).body;

describe('simulated outages', () => {
  it('is down inside a scheduled window and up outside it', async () => {
    const now = simNow();
    sim.setFault(1, {
      type: 'outage',
      windows: [
        { from: now - 1000, to: now + 1500 },
        { from: now + 60_000, to: now + 61_000 },
      ],
    });
    expect(await check('windows')).toMatchObject({ uptime_status: 'down', cause: 'connection', http_code: 0 });
    simAhead += 1600; // the simulated sites' clock moves past the window's end
    expect(await check('windows')).toMatchObject({ uptime_status: 'up', http_code: 200 });
    const inc = await s.ability('list-incidents-v1', { site_id_or_domain: ids.windows }, { method: 'GET' });
    expect(inc.body.items).toHaveLength(1);
    expect(inc.body.items[0]).toMatchObject({ resolved: true, cause: 'connection' });
  });

  it('does not declare an up site down for a blip: it checks again first (retries)', async () => {
    const incidents = async () => (await s.ability('list-incidents-v1', { site_id_or_domain: ids.windows }, { method: 'GET' })).body.total;
    const before = await incidents();
    const n = sim.requests(1);
    sim.setFault(1, { type: 'outage', windows: [{ from: simNow(), to: simNow() + 300 }] });
    expect(await check('windows')).toMatchObject({ uptime_status: 'up' });
    expect(sim.requests(1)).toBe(n + 2); // the failed check and the one that confirmed it was up
    expect(await incidents()).toBe(before);
    // Without retries the same blip is an incident.
    await s.ability('update-monitor-settings-v1', { site_id_or_domain: ids.windows, retries: 0 });
    sim.setFault(1, { type: 'outage', windows: [{ from: simNow(), to: simNow() + 300 }] });
    expect(await check('windows')).toMatchObject({ uptime_status: 'down' });
    expect(await incidents()).toBe(before + 1);
    sim.setFault(1, null);
    await check('windows');
  });

  it('is up when slow but within the timeout, and down past it', async () => {
    sim.setFault(2, { type: 'latency', ms: 300 });
    const slow = await check('slow');
    expect(slow).toMatchObject({ uptime_status: 'up' });
    expect(slow.response_ms).toBeGreaterThanOrEqual(300);
    sim.setFault(2, { type: 'latency', ms: 1500 });
    await s.ability('update-monitor-settings-v1', { site_id_or_domain: ids.slow, timeout: 1 });
    expect(await check('slow')).toMatchObject({ uptime_status: 'down', cause: 'timeout' });
    sim.setFault(2, null);
  });

  it('runs one check of a site at a time: a second request joins the one in flight', async () => {
    sim.setFault(2, { type: 'latency', ms: 400 });
    await s.ability('update-monitor-settings-v1', { site_id_or_domain: ids.slow, timeout: 'useglobal' });
    const beats = async () => (await s.ability('list-heartbeats-v1', { site_id_or_domain: ids.slow }, { method: 'GET' })).body.total;
    const recorded = await beats();
    const n = sim.requests(2);
    const [a, b, c] = await Promise.all([check('slow'), check('slow'), s.rest(`/monitors/${ids.slow}/check`, { method: 'POST' })]);
    expect(sim.requests(2)).toBe(n + 1);
    expect(a).toMatchObject({ uptime_status: 'up' });
    expect(b.response_ms).toBe(a.response_ms);
    expect(c.body.data.response_ms).toBe(a.response_ms);
    expect(await beats()).toBe(recorded + 1);
    sim.setFault(2, null);
  });

  it.skipIf(!openssl)('is down with cause tls when the certificate is not trusted, up when the site is not verified', async () => {
    const bad = await check('tls');
    expect(bad).toMatchObject({ uptime_status: 'down', cause: 'tls', http_code: 0 });
    expect(bad.message).toMatch(/^TLS: (DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)/);
    expect(await check('tls-unverified')).toMatchObject({ uptime_status: 'up', http_code: 200 });
  });
});

describe('the address policy', () => {
  it('refuses to check or notify private addresses unless the server allows them', async () => {
    const strict = await startServer({ config: { allowPrivateSites: false } });
    try {
      const [rec] = await seedSites(strict.services, 1, () => ({ url: sim.sites[0]!.url }));
      const n = sim.requests(1);
      const c = await strict.ability('check-monitor-v1', { site_id_or_domain: rec!.id });
      expect(c.body).toMatchObject({ uptime_status: 'down', cause: 'blocked', http_code: 0 });
      expect(sim.requests(1)).toBe(n); // nothing was sent
      for (const url of ['http://127.0.0.1:9/hook', 'http://localhost:9/hook', 'http://[::1]:9/', 'http://10.0.0.1/']) {
        const w = await strict.rest('/webhooks/add', { method: 'POST', json: { url } });
        expect(w.status, url).toBe(400);
        expect(w.body.code).toBe('svc_address_not_allowed');
      }
    } finally {
      await strict.close();
    }
  });
});

describe('the keyword bound', () => {
  it(`finds a keyword within the first ${KEYWORD_SCAN_BYTES} bytes of a page (across chunks), and not past them`, async () => {
    // /near: the keyword ends exactly at the bound; /far: it starts just past it.
    const page = (path: string) => {
      const word = 'Needle-Word';
      const pad = path === '/near' ? KEYWORD_SCAN_BYTES - word.length : KEYWORD_SCAN_BYTES + 1;
      return Buffer.concat([Buffer.alloc(pad, 'x'), Buffer.from(word)]);
    };
    const srv = createServer((req, res) => {
      const body = page(req.url ?? '/');
      res.writeHead(200, { 'content-type': 'text/html' });
      // In 1000-byte writes, so the word may straddle chunks.
      for (let i = 0; i < body.length; i += 1000) res.write(body.subarray(i, i + 1000));
      res.end();
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    try {
      const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
      const [near, far] = await seedSites(s.services, 2, (i) => ({ url: `${base}/${i ? 'far' : 'near'}` }));
      for (const rec of [near!, far!]) await s.ability('update-monitor-settings-v1', { site_id_or_domain: rec.id, keyword: 'needle-word' });
      expect((await s.ability('check-monitor-v1', { site_id_or_domain: near!.id })).body).toMatchObject({ uptime_status: 'up' });
      expect((await s.ability('check-monitor-v1', { site_id_or_domain: far!.id })).body).toMatchObject({
        uptime_status: 'down',
        cause: 'keyword',
      });
    } finally {
      await new Promise<void>((r) => {
        srv.close(() => r());
        srv.closeAllConnections();
      });
    }
  });
});
