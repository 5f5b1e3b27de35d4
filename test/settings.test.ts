// Dashboard settings (issue 21) through every door: the sync schedule (stored, then run by the job runner's hook),
// sync concurrency and the queue threshold (applied to real syncs), the cost tracker's product types and payment
// methods (which the cost abilities then validate against), the 501 answers of every other upstream settings
// route, and who may change them. The rules of the settings abilities (the next slot, an empty change, the concurrency
// bound, what product types and payment methods allow) are in test/abilities/settings.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardSettings, scheduledSync } from '../src/domain/dashboard-settings.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';
import { startServer } from './support/server.js';
import { until } from './support/wait.js';

let f: Fleet;
let ids: Array<{ id: number; url: string }>;
let mcp: McpTestClient;
const LATENCY = 150;

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 4, latencyMs: LATENCY } });
  ids = await registerSites(f, 4);
  mcp = await connectMcp(f.s);
});
afterAll(async () => {
  await mcp.close();
  await f.close();
});

describe('general: the sync schedule', () => {
  it('is off by default, and stored durably when set (REST, then read back by a new server on the same data)', async () => {
    const before = await f.s.rest('/settings/general', { token: f.s.creds.key.read });
    expect(before.body).toEqual({ success: 1, data: { frequency_daily_update: 0, time_daily_update: '00:00', next_scheduled_sync: null } });
    const r = await f.s.rest('/settings/general/edit', { method: 'PUT', json: { frequency_daily_update: 4, time_daily_update: '06:30' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      success: 1,
      message: 'General settings updated successfully.',
      data: { frequency_daily_update: 4, time_daily_update: '06:30' },
    });
    expect(r.body.data.next_scheduled_sync).toEqual(expect.any(String));
    const other = await startServer({ dataDir: f.s.dataDir, databaseUrl: f.s.databaseUrl });
    try {
      expect((await other.ability('get-settings-v1', {}, { method: 'GET' })).body).toMatchObject({ sync_frequency: 4, sync_time: '06:30' });
    } finally {
      await other.close();
    }
  });

  it('refuses upstream keys it does not apply with 501 naming them, bad values with 400; nothing changes', async () => {
    const mixed = await f.s.rest('/settings/general/edit', {
      method: 'PATCH',
      json: { frequency_daily_update: 2, date_format: 'F j, Y', timezone_string: 'UTC+0' },
    });
    expect([mixed.status, mixed.body.code]).toEqual([501, 'svc_not_supported']);
    expect(mixed.body.message).toContain('date_format, timezone_string');
    for (const body of [{ frequency_daily_update: 13 }, { frequency_daily_update: -1 }, { time_daily_update: '25:00' }, { bogus: 1 }, {}]) {
      const r = await f.s.rest('/settings/general/edit', { method: 'PUT', json: body });
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    expect(f.s.services.dashboard.get()).toMatchObject({ sync_frequency: 4, sync_time: '06:30' });
  });

  it('runs a due slot once (across callers) as a background sync of every connected site', async () => {
    const { dashboard, jobs, sites } = f.s.services;
    await dashboard.update({ sync_frequency: 12, sync_time: '00:00' });
    const lastSync = (id: number) => sites.get(id)!.last_sync;
    const before = ids.map((s) => lastSync(s.id));
    // Nothing is due right after a change: slots under the old schedule are not caught up.
    expect(await scheduledSync(dashboard, jobs, sites)).toBeNull();
    const later = Date.now() + 2 * 3600_000 + 60_000;
    const audit = f.s.services.audit;
    const [a, b] = await Promise.all([
      scheduledSync(dashboard, jobs, sites, later, audit),
      scheduledSync(dashboard, jobs, sites, later, audit),
    ]);
    expect([a, b].filter(Boolean)).toHaveLength(1);
    const jobId = (a ?? b)!;
    expect(jobId).toMatch(/^sync_/);
    // The audit log has it once, as the system's.
    expect((await audit.list({ action: 'scheduled-sync' }, 1, 10)).items).toMatchObject([
      { who_kind: 'system', door: 'scheduler', input: { job_id: jobId, sites: 4 }, outcome: 'ok' },
    ]);
    const done = await until(
      () => f.s.rest(`/jobs/${jobId}`),
      (r) => r.body?.data?.status === 'completed',
    );
    expect(done.body.data).toMatchObject({ total: 4, succeeded: 4 });
    ids.forEach((s, i) => expect(lastSync(s.id)! > before[i]!).toBe(true));
    expect(await scheduledSync(dashboard, jobs, sites, later)).toBeNull();
    expect(DashboardSettings.lastSlot(Date.UTC(2026, 0, 2, 5, 0), 4, '06:30')).toBe(Date.UTC(2026, 0, 2, 0, 30));
    expect(DashboardSettings.lastSlot(Date.UTC(2026, 0, 2, 6, 30), 4, '06:30')).toBe(Date.UTC(2026, 0, 2, 6, 30));
    await dashboard.update({ sync_frequency: 0 });
  });
});

describe('advanced: sync concurrency and the queue threshold, applied', () => {
  it('syncs one site at a time when mainwp_maximum_sync_requests is 1', async () => {
    const r = await f.s.rest('/settings/advanced/edit', { method: 'PUT', json: { mainwp_maximum_sync_requests: 1 } });
    expect(r.body).toMatchObject({
      success: 1,
      message: 'Advanced settings updated successfully.',
      data: { mainwp_maximum_sync_requests: 1 },
    });
    const t0 = Date.now();
    const s = await f.s.ability('sync-sites-v1', {});
    expect(s.body).toMatchObject({ queued: false, total_synced: 4 });
    // One at a time: four child round trips of LATENCY ms each, one after another.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(4 * LATENCY);
  });

  it('queues batches over queue_threshold as jobs, which also keep to the sync concurrency', async () => {
    await f.s.ability('update-settings-v1', { queue_threshold: 2 });
    const r = await mcp.call('sync-sites-v1', {});
    expect(r.body).toMatchObject({ queued: true, sites_queued: 4 });
    const done = await until(
      () => f.s.rest(`/jobs/${r.body.job_id}`),
      (x) => x.body?.data?.status === 'completed',
    );
    expect(done.body.data).toMatchObject({ total: 4, succeeded: 4 });
    const { started_at, completed_at } = f.s.services.jobs.find(r.body.job_id)!;
    expect(Date.parse(completed_at!) - Date.parse(started_at!)).toBeGreaterThanOrEqual(4 * LATENCY);
    const back = await f.s.rest('/settings/advanced/edit', {
      method: 'PATCH',
      json: { queue_threshold: null, mainwp_maximum_sync_requests: null },
    });
    expect(back.body.data).toEqual({
      mainwp_maximum_sync_requests: f.s.services.config.childConcurrency,
      queue_threshold: f.s.services.config.queueThreshold,
    });
    expect((await f.s.ability('sync-sites-v1', {})).body.queued).toBe(false);
  });

  it('refuses keys it does not apply (501)', async () => {
    const r = await f.s.rest('/settings/advanced/edit', { method: 'PUT', json: { mainwp_maximum_requests: 4, sync_data: { users: 0 } } });
    expect([r.status, r.body.code]).toEqual([501, 'svc_not_supported']);
    expect(r.body.message).toContain('mainwp_maximum_requests, sync_data');
    expect((await f.s.rest('/settings/advanced')).body.data.mainwp_maximum_sync_requests).toBe(f.s.services.config.childConcurrency);
  });
});

describe('cost tracker: product types and payment methods', () => {
  it('lists the defaults and adds a product type over REST, with the upstream envelopes', async () => {
    const g = await f.s.rest('/settings/cost-tracker');
    expect(g.body.data.product_categories.map((p: { slug: string }) => p.slug)).toEqual(['plugin', 'theme', 'hosting', 'service', 'other']);
    expect(g.body.data.payment_methods).toMatchObject({ paypal: 'PayPal', stripe: 'Stripe' });
    const a = await f.s.rest('/settings/cost-tracker/product-types/add', { method: 'POST', json: { title: 'Domain names' } });
    expect(a.body).toEqual({
      success: 1,
      message: 'Product type added successfully.',
      data: { 'domain-names': { title: 'Domain names', color: '#34424D', icon: 'deficon:folder open' } },
    });
  });

  it('a default product type over REST (slug from the path): PATCH recolours it, PUT cannot rename it, DELETE cannot delete it', async () => {
    const rename = await f.s.rest('/settings/cost-tracker/product-types/plugin/edit', { method: 'PUT', json: { title: 'Plugins!' } });
    expect([rename.status, rename.body.code]).toEqual([400, 'svc_invalid_title']);
    const recolour = await f.s.rest('/settings/cost-tracker/product-types/plugin/edit', { method: 'PATCH', json: { color: '#112233' } });
    expect(recolour.body.data.plugin).toEqual({ title: 'Plugin', color: '#112233', icon: 'deficon:plug' });
    const delDefault = await f.s.rest('/settings/cost-tracker/product-types/plugin/delete', { method: 'DELETE' });
    expect([delDefault.status, delDefault.body.code]).toEqual([400, 'svc_invalid_slug']);
  });

  it('payment methods over REST: add, rename (slug kept), delete, and a missing title refused', async () => {
    const a = await f.s.rest('/settings/cost-tracker/payment-methods/add', { method: 'POST', json: { title: 'Wire transfer' } });
    expect(a.body).toEqual({ success: 1, message: 'Payment method added successfully.', data: { 'wire-transfer': 'Wire transfer' } });
    const e = await f.s.rest('/settings/cost-tracker/payment-methods/wire-transfer/edit', { method: 'PUT', json: { title: 'Wire' } });
    expect(e.body.data).toEqual({ 'wire-transfer': 'Wire' });
    const gone = await f.s.rest('/settings/cost-tracker/payment-methods/wire-transfer/delete', { method: 'DELETE' });
    expect(gone.body).toEqual({ success: 1, message: 'Payment method deleted successfully.' });
    const missing = await f.s.rest('/settings/cost-tracker/payment-methods/add', { method: 'POST', json: {} });
    expect(missing.status).toBe(400);
  });
});

describe('routes answered 501, and who may change settings', () => {
  it.each([
    ['PUT', '/settings/cost-tracker/edit'],
    ['GET', '/settings/dashboard-insights'],
    ['PUT', '/settings/dashboard-insights/edit'],
    ['GET', '/settings/api-backups'],
    ['PUT', '/settings/api-backups/vultr/edit'],
    ['PUT', '/settings/tools/edit'],
    ['POST', '/settings/tools/destroy-sessions'],
    ['GET', '/settings/tools/destroy-sessions-status/destroy_1'],
    ['POST', '/settings/tools/clear-activation-data'],
    ['POST', '/settings/tools/restore-info-messages'],
  ])('%s %s → 501 svc_not_supported with the reason', async (method, path) => {
    const r = await f.s.rest(path, { method, json: method === 'GET' ? undefined : { x: 1 } });
    expect([r.status, r.body.code]).toEqual([501, 'svc_not_supported']);
    expect(r.body.message).toMatch(/^Not supported by sitefleet: .{20,}/);
  });

  it('read-only keys and viewers read settings but cannot change them', async () => {
    expect((await f.s.rest('/settings/advanced', { token: f.s.creds.key.read })).status).toBe(200);
    const w = await f.s.rest('/settings/general/edit', { method: 'PUT', token: f.s.creds.key.read, json: { frequency_daily_update: 1 } });
    expect(w.status).toBe(403);
    const p = await f.s.rest('/settings/cost-tracker/payment-methods/add', {
      method: 'POST',
      token: f.s.creds.key.read,
      json: { title: 'Nope' },
    });
    expect(p.status).toBe(403);
    expect((await f.s.ability('get-settings-v1', {}, { method: 'GET', auth: f.s.creds.viewer })).status).toBe(200);
    const v = await f.s.ability('update-settings-v1', { sync_frequency: 1 }, { auth: f.s.creds.viewer });
    expect(v.status).toBe(403);
    const t = await f.s.ability('add-cost-product-type-v1', { title: 'Nope' }, { auth: f.s.creds.viewer });
    expect(t.status).toBe(403);
    expect(f.s.services.dashboard.get().sync_frequency).toBe(0);
    expect(f.s.services.dashboard.paymentMethods().map((m) => m.slug)).not.toContain('nope');
    expect(f.s.services.dashboard.productTypes().map((m) => m.slug)).not.toContain('nope');
  });
});
