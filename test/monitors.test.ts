// Uptime monitoring end to end: scheduled checks of simulated sites, an outage opening an incident within one
// interval and its end closing it, signed webhooks to a receiver on loopback, and all of it through every door.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startMonitoring } from '../src/domain/index.js';
import { DAYS_KEPT, HOURS_KEPT, INCIDENTS_KEPT, MAX_EXPECTED, RAW_KEPT, addBeat, summarise } from '../src/domain/monitors.js';
import { HIST_MS, type Beat, type Bucket, type DeliveryRecord, type IncidentRecord } from '../src/store/monitor-records.js';
import { DELIVERIES_KEPT, MAX_PENDING, MAX_WEBHOOKS } from '../src/domain/webhooks.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';
import { until as waitUntil } from './support/wait.js';
import { startServer } from './support/server.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A webhook receiver on loopback: records every POST; answers `status()` (500 makes the sender retry). */
async function receiver(status: () => number = () => 204): Promise<{ url: string; got: Received[]; close(): Promise<void> }> {
  const got: Received[] = [];
  const srv: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      got.push({ headers: req.headers, body, at: Date.now() });
      res.statusCode = status();
      res.end();
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`,
    got,
    close: () =>
      new Promise<void>((r) => {
        srv.close(() => r());
        srv.closeAllConnections();
      }),
  };
}

const until = <T>(fn: () => Promise<T> | T, ok: (v: T) => boolean, ms = 10_000) => waitUntil(fn, ok, ms);

const INTERVAL_S = 1;
let f: Fleet;
let ids: number[];
let hook: Awaited<ReturnType<typeof receiver>>;
let secret: string;
let mcp: McpTestClient;

beforeAll(async () => {
  f = await startFleet({
    sim: { sites: 3 },
    config: { monitorIntervalS: String(INTERVAL_S), monitorFlushMs: '100', webhookRetryMs: '50' },
  });
  ids = (await registerSites(f)).map((s) => s.id);
  hook = await receiver();
  const add = await f.s.rest('/webhooks/add', { method: 'POST', json: { url: hook.url, description: 'on-call' } });
  expect(add.status, JSON.stringify(add.body)).toBe(200);
  secret = add.body.data.secret;
  expect(secret).toMatch(/^whsec_[0-9a-f]{48}$/);
  mcp = await connectMcp(f.s);
  startMonitoring(f.s.services);
});
afterAll(async () => {
  await mcp?.close();
  await f?.close();
  await hook?.close();
});

const monitor = async (id: number) => (await f.s.rest(`/monitors/${id}`)).body.data;

describe('an outage, from the first check to the incident closed', () => {
  it('checks every connected site on its interval and shows it up', async () => {
    for (const id of ids)
      await until(
        () => monitor(id),
        (m) => m.last_status === 'up',
        5_000,
      );
    const list = await f.s.rest('/monitors');
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(3);
    expect(list.body.data[0]).toMatchObject({ type: 'http', check_frequency: '1s', last_status: 'up', last_status_code: 200 });
    expect(list.body.data[0].uptime_24h).toHaveLength(24);
    expect(list.body.data[0].last_check_at).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  });

  it('opens an incident within one interval of the site going down, and a signed webhook says so', async () => {
    const id = ids[0]!;
    const before = hook.got.length;
    const downAt = Date.now();
    f.sim.setFault(1, { type: 'down' });
    const inc = await until(
      async () => (await f.s.rest(`/monitors/${id}/incidents`)).body,
      (b) => b.data?.length === 1,
      5_000,
    );
    const opened = Date.parse(inc.data[0].started_at);
    // A beat's time is the second its check began; the check that saw the outage began within one interval.
    // (+ 500 ms: the scheduler ticks every 250 ms and may run late on a busy machine)
    expect(opened).toBeLessThanOrEqual(downAt + INTERVAL_S * 1000 + 500);
    expect(inc.data[0]).toMatchObject({ resolved: false, ended_at: null, cause: 'connection', site_id: id });
    expect((await monitor(id)).last_status).toBe('down');

    const got = await until(
      () => hook.got.slice(before).filter((r) => JSON.parse(r.body).event === 'site.down'),
      (l) => l.length === 1,
    );
    const d = got[0]!;
    expect(d.headers['x-sitefleet-signature']).toBe(`sha256=${createHmac('sha256', secret).update(d.body).digest('hex')}`);
    expect(d.headers['x-sitefleet-event']).toBe('site.down');
    const body = JSON.parse(d.body);
    expect(body).toMatchObject({ event: 'site.down', site: { id }, incident: { site_id: id, cause: 'connection', ended_at: null } });
    expect(d.headers['x-sitefleet-delivery']).toBe(body.id);
    // Other sites stay up, and more failed checks do not open more incidents: waited for as checks (the site's requests;
    // a site is never checked twice at once, so the third request means two more checks have ended), not as time.
    const seen = f.sim.requests(1);
    await until(
      () => f.sim.requests(1),
      (n) => n >= seen + 3,
    );
    expect((await f.s.rest(`/monitors/${id}/incidents/count`)).body).toEqual({ success: 1, count: 1 });
    expect((await monitor(ids[1]!)).last_status).toBe('up');
  });

  it('closes the incident when the site comes back, and announces it', async () => {
    const id = ids[0]!;
    f.sim.setFault(1, null);
    const inc = await until(
      async () => (await f.s.rest(`/monitors/${id}/incidents`)).body.data[0],
      (i) => i.resolved === true,
      5_000,
    );
    expect(inc.down_count).toBeGreaterThanOrEqual(2);
    expect(inc.duration_sec).toBeGreaterThanOrEqual(1);
    const up = await until(
      () => hook.got.map((r) => JSON.parse(r.body)).filter((b) => b.event === 'site.up'),
      (l) => l.length === 1,
    );
    expect(up[0].incident).toMatchObject({ id: inc.id, ended_at: inc.ended_at });
    const m = await monitor(id);
    expect(m.last_status).toBe('up');
    expect(m.uptime_ratio_24h).toBeGreaterThan(0);
    expect(m.uptime_ratio_24h).toBeLessThan(100);
  });

  it('is readable through the abilities door, MCP and the heartbeat route', async () => {
    const id = ids[0]!;
    const a = await f.s.ability('list-incidents-v1', { site_id_or_domain: id }, { method: 'GET' });
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(a.body.items[0]).toMatchObject({ site_id: id, resolved: true, cause: 'connection' });

    const up = await mcp.call('get-site-uptime-v1', { site_id_or_domain: id });
    expect(up.isError).toBe(false);
    expect(up.body).toMatchObject({ id, status: 'up', settings: { interval_s: INTERVAL_S }, open_incident: null });
    expect(up.body.response_ms.p95).not.toBeNull();
    const down = await mcp.call('list-monitors-v1', { status: 'down' });
    expect(down.body.total).toBe(0);

    const hb = await f.s.rest(`/monitors/${id}/heartbeat?per_page=100`);
    expect(hb.status).toBe(200);
    const statuses = hb.body.data.map((b: { status: number }) => b.status);
    expect(statuses).toContain(0);
    expect(statuses[0]).toBe(1); // newest first
    const downOnly = await f.s.rest(`/monitors/${id}/heartbeat?status=down`);
    expect(downOnly.body.data.every((b: { status: number; msg: string }) => b.status === 0 && b.msg === 'connection')).toBe(true);
  });

  it('tells an MCP subscriber of sitefleet://incidents when an incident opens', async () => {
    const seen: string[] = [];
    mcp.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      seen.push(n.params.uri);
    });
    await mcp.client.subscribeResource({ uri: 'sitefleet://incidents' });
    f.sim.setFault(2, { type: 'http500' });
    await until(
      () => seen,
      (l) => l.includes('sitefleet://incidents'),
      5_000,
    );
    const r = await mcp.client.readResource({ uri: 'sitefleet://incidents' });
    const body = JSON.parse((r.contents[0] as { text: string }).text);
    expect(body.open.items[0]).toMatchObject({ site_id: ids[1], cause: 'http_status', http_code: 500 });
    f.sim.setFault(2, null);
    await until(
      async () => (await mcp.call('list-incidents-v1', { state: 'open' })).body.total,
      (n) => n === 0,
      5_000,
    );
  });
});

describe('settings', () => {
  it('checks for a keyword, and a missing one is a keyword incident', async () => {
    const id = ids[2]!;
    const r = await f.s.rest(`/monitors/${id}/settings`, { method: 'PUT', json: { keyword: 'no-such-words-on-this-page' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toEqual({ monitor_id: id, keyword: 'no-such-words-on-this-page' });
    const c = await f.s.rest(`/monitors/${id}/check`, { method: 'POST' });
    expect(c.body.data).toMatchObject({ uptime_status: 'down', cause: 'keyword', http_code: 200 });
    await f.s.rest(`/monitors/${id}/settings`, { method: 'PUT', json: { keyword: 'useglobal' } });
    const again = await f.s.rest(`/monitors/${id}/check`, { method: 'POST' });
    expect(again.body.data).toMatchObject({ uptime_status: 'up' });
  });

  it('reports a hung site as a timeout', async () => {
    const id = ids[2]!;
    f.sim.setFault(3, { type: 'timeout' });
    await f.s.rest(`/monitors/${id}/settings`, { method: 'PATCH', json: { timeout: '1s' } });
    const c = await f.s.ability('check-monitor-v1', { site_id_or_domain: id });
    expect(c.body).toMatchObject({ uptime_status: 'down', cause: 'timeout', http_code: 0 });
    expect(c.body.response_ms).toBeGreaterThanOrEqual(900);
    expect(c.body.response_ms).toBeLessThan(3000);
    f.sim.setFault(3, null);
    await f.s.rest(`/monitors/${id}/settings`, { method: 'PATCH', json: { timeout: 'useglobal' } });
  });

  it('writes fleet defaults with upstream labels, and refuses values it cannot use', async () => {
    const ok = await f.s.rest('/monitors/settings', {
      method: 'PUT',
      json: { interval: '10m', timeout: '45s', expected_status: [200, 301] },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.data).toMatchObject({ monitor_id: 0, interval_s: 600, timeout_s: 45, expected_status: [200, 301], active: true });
    expect((await f.s.rest('/monitors/settings', { token: f.s.creds.key.read })).body.data).toEqual(ok.body.data);
    const bad = async (json: unknown, code: string) => {
      const r = await f.s.rest('/monitors/settings', { method: 'PUT', json });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.code).toBe(code);
    };
    await bad({ interval: '5x' }, 'svc_invalid_interval');
    await bad({ interval: 30 }, 'svc_invalid_interval');
    await bad({ timeout: '3h' }, 'svc_invalid_timeout');
    await bad({ expected_status: [200, 999] }, 'svc_invalid_status_code');
    await bad({ keyword: 'useglobal' }, 'svc_invalid_input');
    await bad({ maxretries: 5 }, 'invalid_maxretries');
    await bad({ type: 'ping' }, 'rest_invalid_param'); // not ours: refused by name, not dropped
    await bad({}, 'svc_invalid_input');
    await f.s.rest('/monitors/settings', {
      method: 'PUT',
      json: { interval: '5m', timeout: 30, expected_status: [200, 201, 202, 203, 204, 205, 206] },
    });
  });

  it('pauses a site whose monitor is switched off', async () => {
    const id = ids[2]!;
    await f.s.rest(`/monitors/${id}/settings`, { method: 'PUT', json: { active: '0' } });
    expect((await f.s.rest(`/monitors/${id}/basic`)).body.data).toEqual({ id, url: expect.any(String), last_status: 'paused' });
    const n = f.sim.requests(3);
    // Two checks of an active site mean the scheduler has been round twice since: time enough for the paused one's.
    const other = f.sim.requests(2);
    await until(
      () => f.sim.requests(2),
      (k) => k >= other + 2,
    );
    expect(f.sim.requests(3)).toBe(n);
    expect((await f.s.rest('/monitors/count?status=-1')).body).toEqual({ success: 1, count: 1 });
    await f.s.rest(`/monitors/${id}/settings`, { method: 'PUT', json: { active: 'useglobal' } });
  });
});

describe('errors and permissions', () => {
  it('answers 404 for a monitor that does not exist, whatever door', async () => {
    expect((await f.s.rest('/monitors/999')).body.code).toBe('svc_rest_invalid_site_id');
    expect((await f.s.rest('/monitors/nosuch.example/incidents')).body.code).toBe('svc_rest_invalid_site_data');
    expect((await mcp.call('get-site-uptime-v1', { site_id_or_domain: 999 })).body.code).toBe('svc_site_not_found');
    expect((await f.s.rest('/webhooks/999/test', { method: 'POST' })).status).toBe(404);
  });

  it('refuses an unknown status filter and period', async () => {
    const r = await f.s.rest('/monitors?status=bogus');
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('rest_invalid_param');
    expect(Object.keys(r.body.data.params)).toEqual(['status']);
    expect((await f.s.rest(`/monitors/${ids[0]}/heartbeat?period=2w`)).body.code).toBe('invalid_period');
  });

  it('lets a read-only key read monitors but not check, configure or add webhooks', async () => {
    const ro = f.s.creds.key.read;
    expect((await f.s.rest('/monitors', { token: ro })).status).toBe(200);
    for (const [path, method] of [
      [`/monitors/${ids[0]}/check`, 'POST'],
      ['/monitors/settings', 'PUT'],
      ['/webhooks/add', 'POST'],
    ] as const) {
      const r = await f.s.rest(path, { method, token: ro, json: { url: hook.url, interval: '5m' } });
      expect(r.status, path).toBe(403);
    }
    const viewer = await f.s.ability('check-monitor-v1', { site_id_or_domain: ids[0] }, { auth: f.s.creds.viewer });
    expect(viewer.status).toBe(403);
  });

  it('never answers the webhook secret after creation', async () => {
    const list = await until(
      () => f.s.rest('/webhooks'),
      (r) => r.body.data[0].deliveries[0]?.status === 'delivered',
    );
    expect(JSON.stringify(list.body)).not.toContain(secret);
    expect(list.body.data[0].deliveries[0]).toMatchObject({ status: 'delivered', attempts: 1, last_http_status: 204 });
  });
});

describe('webhooks', () => {
  it('test-sends a signed delivery and logs it', async () => {
    const list = (await f.s.rest('/webhooks')).body.data;
    const before = hook.got.length;
    const t = await f.s.rest(`/webhooks/${list[0].id}/test`, { method: 'POST' });
    expect(t.body).toMatchObject({ success: 1, data: { event: 'webhook.test', status: 'delivered', last_http_status: 204 } });
    const got = hook.got[before]!;
    expect(got.headers['x-sitefleet-signature']).toBe(`sha256=${createHmac('sha256', secret).update(got.body).digest('hex')}`);
  });

  it('retries a failing receiver with backoff until it answers 2xx', async () => {
    let fails = 2;
    const flaky = await receiver(() => (fails-- > 0 ? 500 : 200));
    try {
      const add = await f.s.ability('add-webhook-v1', { url: flaky.url, events: ['site.sync_failed'] });
      expect(add.status, JSON.stringify(add.body)).toBe(200);
      f.sim.setFault(2, { type: 'http500' });
      await f.s.rest(`/sites/${ids[1]}/sync`, { method: 'POST' });
      f.sim.setFault(2, null);
      const d = await until(
        async () => (await f.s.rest('/webhooks?deliveries=1')).body.data.find((w: { id: number }) => w.id === add.body.id).deliveries[0],
        (x) => x?.status === 'delivered',
        5_000,
      );
      expect(d).toMatchObject({ event: 'site.sync_failed', attempts: 3, last_http_status: 200 });
      expect(flaky.got).toHaveLength(3);
      // Backoff: the second retry waited five times longer than the first (50 ms, then 250 ms).
      expect(flaky.got[2]!.at - flaky.got[1]!.at).toBeGreaterThanOrEqual(200);
      expect(new Set(flaky.got.map((g) => g.headers['x-sitefleet-delivery'])).size).toBe(1);
      expect(JSON.parse(flaky.got[0]!.body)).toMatchObject({
        event: 'site.sync_failed',
        site: { id: ids[1] },
        error: { code: expect.stringMatching(/^svc_/) },
      });
      const del = await f.s.ability(
        'delete-webhook-v1',
        { webhook_id: add.body.id },
        { method: 'DELETE', query: `input[webhook_id]=${add.body.id}` },
      );
      expect(del.body.code).toBe('svc_confirmation_required');
      expect((await f.s.rest(`/webhooks/${add.body.id}/remove`, { method: 'DELETE' })).body.success).toBe(1);
    } finally {
      await flaky.close();
    }
  });

  it('refuses URLs it must not call', async () => {
    for (const url of ['ftp://x.example/', 'not a url', 'http://user:pw@x.example/']) {
      const r = await f.s.rest('/webhooks/add', { method: 'POST', json: { url } });
      expect(r.status, url).toBe(400);
      expect(r.body.code).toBe('svc_invalid_url');
    }
    expect((await f.s.rest('/webhooks/add', { method: 'POST', json: { url: hook.url, events: 'site.exploded' } })).status).toBe(400);
  });
});

describe('bounds', () => {
  it('keeps the last RAW_KEPT heartbeats of a site, no more', async () => {
    const id = ids[2]!;
    for (let i = 0; i < RAW_KEPT + 1; i++) await f.s.services.monitors.check(f.s.services.sites.get(id)!);
    const hb = await f.s.ability('list-heartbeats-v1', { site_id_or_domain: id, per_page: 100 }, { method: 'GET' });
    expect(hb.body.total).toBe(RAW_KEPT);
  });

  const fill = (n: number, status: DeliveryRecord['status'], webhookId: number) =>
    f.s.services.store.write((tx) => {
      for (let i = 0; i < n; i++) {
        tx.insert<DeliveryRecord>('deliveries', {
          webhook_id: webhookId,
          event: 'site.down',
          event_id: `filler-${i}`,
          body: '{}',
          status,
          attempts: 0,
          next_attempt_at: Date.now() + 3600_000,
          claim_owner: null,
          claim_until: 0,
          last_http_status: null,
          last_error: null,
          created_at: new Date().toISOString(),
          delivered_at: null,
        });
      }
    });
  const clear = () =>
    f.s.services.store.write((tx) => {
      for (const d of [...tx.all<DeliveryRecord>('deliveries')]) if (d.event_id.startsWith('filler-')) tx.delete('deliveries', d.id);
    });

  it(`keeps the last ${DELIVERIES_KEPT} deliveries in the log`, async () => {
    const w = (await f.s.rest('/webhooks')).body.data[0];
    await fill(DELIVERIES_KEPT, 'delivered', w.id);
    await f.s.rest(`/webhooks/${w.id}/test`, { method: 'POST' });
    expect(f.s.services.store.count('deliveries')).toBe(DELIVERIES_KEPT);
    await clear();
  });

  it(`drops (and logs) an event when ${MAX_PENDING} deliveries already wait`, async () => {
    const w = (await f.s.rest('/webhooks')).body.data[0];
    await fill(MAX_PENDING, 'pending', w.id);
    const before = f.s.services.store.count('deliveries');
    await f.s.services.webhooks.emit('site.down', { site: { id: 1 } });
    expect(f.s.services.store.count('deliveries')).toBe(before);
    await clear();
    await f.s.services.webhooks.emit('site.down', { site: { id: 1 } });
    expect(f.s.services.store.count('deliveries')).toBeGreaterThan(0);
    const hooks = (await f.s.rest('/webhooks')).body.data;
    expect(hooks[0].deliveries[0]).toMatchObject({ event: 'site.down' });
  });

  it(`keeps ${HOURS_KEPT} hourly and ${DAYS_KEPT} daily buckets, no more`, () => {
    let hours: Bucket[] = [];
    let days: Bucket[] = [];
    for (let h = 0; h <= 24 * (DAYS_KEPT + 1); h++) {
      const beat: Beat = [h * 3600 + 30, 1, 120, 200, -1];
      hours = addBeat(hours, 3600, HOURS_KEPT, beat);
      days = addBeat(days, 86_400, DAYS_KEPT, beat);
    }
    expect(hours).toHaveLength(HOURS_KEPT);
    expect(days).toHaveLength(DAYS_KEPT);
    expect(hours.at(-1)![0]).toBe(24 * (DAYS_KEPT + 1) * 3600);
    // A beat older than the window is dropped, not a new bucket.
    expect(addBeat(hours, 3600, HOURS_KEPT, [0, 0, 5, 0, 0])).toEqual(hours);
  });

  it(`keeps ${INCIDENTS_KEPT} incidents: the oldest resolved one goes when another opens`, async () => {
    const store = f.s.services.store;
    await store.write((tx) => {
      const n = INCIDENTS_KEPT - store.count('incidents');
      for (let i = 0; i < n; i++) {
        tx.insert<IncidentRecord>('incidents', {
          site_id: ids[1]!,
          started_at: '2020-01-01T00:00:00Z',
          ended_at: '2020-01-01T00:01:00Z',
          cause: 'timeout',
          message: 'filler',
          http_code: null,
          down_count: 1,
        });
      }
    });
    expect(store.count('incidents')).toBe(INCIDENTS_KEPT);
    const oldest = Math.min(...[...store.all<IncidentRecord>('incidents')].map((i) => i.id));
    f.sim.setFault(3, { type: 'http500' });
    await f.s.ability('check-monitor-v1', { site_id_or_domain: ids[2] });
    f.sim.setFault(3, null);
    await f.s.ability('check-monitor-v1', { site_id_or_domain: ids[2] });
    expect(store.count('incidents')).toBe(INCIDENTS_KEPT);
    expect(store.get('incidents', oldest)).toBeUndefined();
    await store.write((tx) => {
      for (const i of [...tx.all<IncidentRecord>('incidents')]) if (i.message === 'filler') tx.delete('incidents', i.id);
    });
  });

  it(`refuses a webhook past ${MAX_WEBHOOKS} and an expected-status list past ${MAX_EXPECTED}`, async () => {
    const have = (await f.s.rest('/webhooks')).body.total;
    for (let i = have; i < MAX_WEBHOOKS; i++) {
      expect((await f.s.ability('add-webhook-v1', { url: `${hook.url}?n=${i}`, events: ['site.sync_failed'] })).status).toBe(200);
    }
    const over = await f.s.ability('add-webhook-v1', { url: hook.url });
    expect(over.status).toBe(409);
    expect(over.body.code).toBe('svc_webhook_limit');
    const codes = Array.from({ length: MAX_EXPECTED + 1 }, (_, i) => 200 + i);
    const r = await f.s.ability('update-monitor-settings-v1', { expected_status: codes });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('svc_invalid_status_code');
  });

  it('reads percentiles from the histogram buckets', () => {
    // 100 checks: 90 of 80 ms, 9 of 400 ms, 1 of 3000 ms.
    const b = [0, 100, 0, 90 * 80 + 9 * 400 + 3000, 80, 3000, 90, 0, 9, 0, 0, 1, 0, 0];
    expect(b).toHaveLength(6 + HIST_MS.length + 1);
    expect(summarise([b], 0)).toMatchObject({ checks: 100, uptime: 100, p50_ms: 100, p95_ms: 500, p99_ms: 500, max_ms: 3000, min_ms: 80 });
    expect(summarise([b], 1).checks).toBe(0);
  });
});

describe('HTTP authentication of a check', () => {
  it("sends a site's HTTP user and password, and reads no stored secret for a site without a user", async () => {
    const seen: Array<string | undefined> = [];
    const site = createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.end('ok');
    });
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', () => r()));
    const s = await startServer();
    try {
      const url = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
      const secret = (http_pass: string | null) => ({ private_key_pem: 'unused', http_pass, regverify: null });
      const [plain, locked] = await s.services.store.write((tx) => [
        s.services.sites.insert(tx, { url: `${url}plain/`, http_user: null }, secret('never-sent')),
        s.services.sites.insert(tx, { url: `${url}locked/`, http_user: 'ops' }, secret('s3cret')),
      ]);
      // Count the secrets the real store is asked for (a wrapper around this instance's own method).
      const store = s.services.store;
      const read = store.readBlob.bind(store);
      const asked: number[] = [];
      store.readBlob = ((kind: string, id: number, opts?: { cache?: boolean }) => {
        if (kind === 'secrets') asked.push(id);
        return read(kind as never, id, opts);
      }) as typeof store.readBlob;
      expect((await s.services.monitors.check(plain!)).up).toBe(true);
      expect(asked).toEqual([]);
      expect((await s.services.monitors.check(locked!)).up).toBe(true);
      expect(asked).toEqual([locked!.id]);
      expect(seen).toEqual([undefined, `Basic ${Buffer.from('ops:s3cret').toString('base64')}`]);
    } finally {
      await s.close();
      await new Promise<void>((r) => site.close(() => r()));
    }
  });
});
