// Monitoring abilities through the registry, over the child simulator: a check now (up, then down with an incident,
// then up again), heartbeats, per-site and fleet settings, a removed site's monitor forgotten, and webhooks to a
// receiver on loopback — without a door. (Scheduled checks and deliveries end to end: test/monitors.test.ts.)
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';

let h: AbilityHarness;
let ids: number[];
let srv: Server;
let hookUrl: string;
const got: string[] = [];

beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 2 }, config: { webhookRetryMs: '50' } });
  ids = (await h.addSimSites()).map((s) => s.id);
  srv = createServer((req, res) => {
    let b = '';
    req.on('data', (c) => {
      b += c;
    });
    req.on('end', () => {
      got.push(b);
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  hookUrl = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await h.close();
  await new Promise<void>((r) => {
    srv.close(() => r());
    srv.closeAllConnections();
  });
});

describe('checks, monitors, heartbeats and incidents', () => {
  it('checks a site now: up, then down with an open incident, then up with it resolved', async () => {
    const site = ids[0]!;
    expect(await h.call('check-monitor-v1', { site_id_or_domain: site })).toMatchObject({
      site_id: site,
      uptime_status: 'up',
      http_code: 200,
      cause: null,
    });
    h.sim.setFault(1, { type: 'http500' });
    expect(await h.call('check-monitor-v1', { site_id_or_domain: site })).toMatchObject({
      uptime_status: 'down',
      http_code: 500,
      cause: 'http_status',
    });
    const open = await h.call('list-incidents-v1', { site_id_or_domain: site, state: 'open' }, h.as.viewer);
    expect(open.total).toBe(1);
    expect(open.items[0]).toMatchObject({ site_id: site, resolved: false, cause: 'http_status', http_code: 500 });
    expect((await h.call('get-site-uptime-v1', { site_id_or_domain: site })).open_incident).toMatchObject({ id: open.items[0]!.id });
    h.sim.setFault(1, null);
    await h.call('check-monitor-v1', { site_id_or_domain: site });
    expect((await h.call('list-incidents-v1', { site_id_or_domain: site, state: 'resolved' })).items[0]).toMatchObject({
      id: open.items[0]!.id,
      resolved: true,
    });
    const beats = await h.call('list-heartbeats-v1', { site_id_or_domain: site }, h.as.readKey);
    expect(beats.items.map((b) => b.status).sort()).toEqual(['down', 'up', 'up']);
    expect((await h.call('list-heartbeats-v1', { site_id_or_domain: site, status: 'down' })).items).toEqual([
      expect.objectContaining({ http_code: 500 }),
    ]);
  });

  it("lists monitors with the fleet settings, filters by status, and answers one site's monitor", async () => {
    const all = await h.call('list-monitors-v1', {});
    expect(all.items.map((m) => m.id)).toEqual(ids);
    expect(all.fleet_settings).toMatchObject({ active: true, method: expect.any(String) });
    expect((await h.call('list-monitors-v1', { status: 'up' })).items.map((m) => m.id)).toEqual([ids[0]]);
    const one = await h.call('get-site-uptime-v1', { site_id_or_domain: ids[0]! });
    expect(one).toMatchObject({ id: ids[0], status: 'up', incidents_7d: 1, open_incident: null });
    expect(await h.fails('get-site-uptime-v1', { site_id_or_domain: 999 })).toMatchObject({ code: 'svc_site_not_found', status: 404 });
  });

  it('sets a site\'s own settings over the fleet defaults; "useglobal" only on a site; nothing given is refused', async () => {
    const r = await h.call('update-monitor-settings-v1', { site_id_or_domain: ids[1]!, interval: '5m', keyword: 'It works' });
    expect(r).toMatchObject({
      site_id: ids[1],
      own_settings: { interval_s: 300, keyword: 'It works' },
      settings: { interval_s: 300, keyword: 'It works' },
    });
    const back = await h.call('update-monitor-settings-v1', { site_id_or_domain: ids[1]!, keyword: 'useglobal' });
    expect(back.settings.keyword).toBe('');
    const fleet = await h.call('update-monitor-settings-v1', { timeout: '20s' });
    expect(fleet).toMatchObject({ site_id: null, settings: { timeout_s: 20 } });
    expect((await h.call('get-site-uptime-v1', { site_id_or_domain: ids[1]! })).settings).toMatchObject({ timeout_s: 20, interval_s: 300 });
    expect(await h.fails('update-monitor-settings-v1', { keyword: 'useglobal' })).toMatchObject({ code: 'svc_invalid_input' });
    expect(await h.fails('update-monitor-settings-v1', { site_id_or_domain: ids[1]! })).toMatchObject({ code: 'svc_invalid_input' });
    expect(await h.fails('update-monitor-settings-v1', { interval: '1s' })).toMatchObject({ code: 'svc_invalid_interval' });
    expect(await h.fails('update-monitor-settings-v1', { interval: '5m' }, h.as.readKey)).toMatchObject({ code: 'svc_permission_denied' });
  });

  // Moved from test/monitors.test.ts ("errors and permissions"): what a site's removal lets go of.
  it("forgets a removed site's monitor and incidents", async () => {
    // Another site record on simulated site 1 (registered already), so that it has a monitor of its own.
    const rec = await h.services.store.write((tx) => h.services.sites.insert(tx, { url: `${h.sim.sites[0]!.url}?other`, name: 'Doomed' }));
    h.sim.setFault(1, { type: 'http500' });
    await h.call('check-monitor-v1', { site_id_or_domain: rec.id });
    h.sim.setFault(1, null);
    expect((await h.call('list-incidents-v1', { site_id_or_domain: rec.id })).total).toBe(1);
    await h.call('delete-site-v1', { site_id_or_domain: rec.id, confirm: true });
    expect(await h.fails('get-site-uptime-v1', { site_id_or_domain: rec.id })).toMatchObject({ status: 404 });
    expect(h.services.monitors.record(rec.id)).toBeUndefined();
    expect(h.services.monitors.incidents({ siteId: rec.id })).toEqual([]);
  });
});

describe('webhooks', () => {
  it('adds one (the secret only in that answer), test-sends, lists deliveries, and deletes with confirm', async () => {
    const w = await h.call('add-webhook-v1', { url: hookUrl, events: ['site.down'], description: 'on-call' });
    expect(w).toMatchObject({ url: hookUrl, events: ['site.down'], description: 'on-call', secret: expect.stringMatching(/^whsec_/) });
    const d = await h.call('test-webhook-v1', { webhook_id: w.id });
    expect(d).toMatchObject({ webhook_id: w.id, event: 'webhook.test', status: 'delivered', last_http_status: 204 });
    expect(JSON.parse(got.at(-1)!)).toMatchObject({ event: 'webhook.test' });
    const list = await h.call('list-webhooks-v1', { deliveries: 1 });
    expect(list.items.find((x) => x.id === w.id)!.deliveries).toEqual([expect.objectContaining({ id: d.id })]);
    expect(JSON.stringify(list)).not.toContain(w.secret);
    expect(await h.fails('add-webhook-v1', { url: 'ftp://x.example/' })).toMatchObject({ code: 'svc_invalid_url', status: 400 });
    expect(await h.fails('delete-webhook-v1', { webhook_id: w.id })).toMatchObject({ code: 'svc_confirmation_required' });
    expect(await h.call('delete-webhook-v1', { webhook_id: w.id, confirm: true })).toMatchObject({ deleted: true, webhook: { id: w.id } });
    expect(await h.fails('test-webhook-v1', { webhook_id: w.id })).toMatchObject({ status: 404 });
  });

  it('shows a hook URL (a bearer secret) whole only to callers that may write; others see scheme and host', async () => {
    const slack = 'https://hooks.slack.com/services/T000/B000/XXXXsecretXXXX?x=1';
    const w = await h.call('add-webhook-v1', { url: slack, events: ['site.down'] });
    expect(w).toMatchObject({ url: slack, url_masked: false });
    const seen = async (as: (typeof h.as)[keyof typeof h.as]) =>
      (await h.call('list-webhooks-v1', { deliveries: 0 }, as)).items.find((x) => x.id === w.id)!;
    expect(await seen(h.as.admin)).toMatchObject({ url: slack, url_masked: false });
    for (const as of [h.as.readKey, h.as.viewer, h.as.readOnlyLocal]) {
      const v = await seen(as);
      expect(v).toMatchObject({ url: 'https://hooks.slack.com/***', url_masked: true });
      expect(JSON.stringify(v)).not.toMatch(/services|secret|T000/);
    }
    // A delete key may remove a webhook, not read its URL: the preview and the answer are masked too.
    const dry = await h.call('delete-webhook-v1', { webhook_id: w.id, dry_run: true }, h.as.deleteKey);
    expect(dry.webhook).toMatchObject({ url: 'https://hooks.slack.com/***', url_masked: true });
    const gone = await h.call('delete-webhook-v1', { webhook_id: w.id, confirm: true }, h.as.deleteKey);
    expect(gone).toMatchObject({ deleted: true, webhook: { url: 'https://hooks.slack.com/***', url_masked: true } });
  });
});
