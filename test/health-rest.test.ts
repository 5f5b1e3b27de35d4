// Site health and update history through the doors (issue 28): REST GET /sites/{id}/health answers the stored probe
// (a read key may), POST probes (a read key may not: it is an outgoing call); /updates/history fleet-wide and per
// site with outcome and time filters; the abilities door and MCP run the same abilities.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';

let f: Fleet;
let ids: number[];
let mcp: McpTestClient;

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 3 } });
  ids = (await registerSites(f)).map((s) => s.id);
  await f.s.rest('/sites/sync', { method: 'POST' });
  mcp = await connectMcp(f.s);
});
afterAll(async () => {
  await mcp.close();
  await f.close();
});

describe('REST /sites/{id_or_domain}/health', () => {
  it('GET answers the stored latest (null before any probe); POST probes and stores', async () => {
    const none = await f.s.rest(`/sites/${ids[0]}/health`, { token: f.s.creds.key.read });
    expect(none.status).toBe(200);
    expect(none.body).toMatchObject({ success: 1, data: { site_id: ids[0], health: null } });
    const probed = await f.s.rest(`/sites/${ids[0]}/health`, { method: 'POST' });
    expect(probed.status).toBe(200);
    expect(probed.body.data.health).toMatchObject({
      status: 'healthy',
      pages: [
        { kind: 'home', ok: true },
        { kind: 'login', ok: true },
      ],
    });
    const stored = await f.s.rest(`/sites/${ids[0]}/health`, { token: f.s.creds.key.read });
    expect(stored.body.data.health).toEqual(probed.body.data.health);
  });

  it('a read key may not probe (an outgoing call); an unknown site is 404', async () => {
    const before = f.sim.requests(1);
    const r = await f.s.rest(`/sites/${ids[0]}/health`, { method: 'POST', token: f.s.creds.key.read });
    expect(r.status).toBe(403);
    expect(f.sim.requests(1)).toBe(before);
    const missing = await f.s.rest('/sites/99999/health');
    expect(missing.status).toBe(404);
  });

  it('the abilities door and MCP run the same probe', async () => {
    const a = await f.s.ability('check-site-health-v1', { site_id_or_domain: ids[1] }, { method: 'POST' });
    expect(a.status).toBe(200);
    expect(a.body.health.status).toBe('healthy');
    const m = await mcp.call('get-site-health-v1', { site_id_or_domain: ids[1] });
    expect(m.isError).toBe(false);
    expect(m.body.health).toEqual(a.body.health);
  });
});

describe('REST /updates/history', () => {
  it('lists the attempts of an update run fleet-wide and per site, filtered by outcome and time', async () => {
    const k = [1, 2, 3].find((i) => f.sim.state(i).plugins.some((p) => p.updateVersion))!;
    const slug = f.sim.state(k).plugins.find((p) => p.updateVersion)!.slug;
    const run = await f.s.rest(`/updates/${ids[k - 1]}/update/plugins?slug=${encodeURIComponent(slug)}`, { method: 'POST' });
    expect(run.status).toBe(200);
    const all = await f.s.rest('/updates/history', { token: f.s.creds.key.read });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ success: 1, total: 1, page: 1, data: [{ site_id: ids[k - 1], slug, outcome: 'updated' }] });
    const site = await f.s.rest(`/updates/${ids[k - 1]}/history?outcome=updated,rolled_back&since=2000-01-01`);
    expect(site.body.total).toBe(1);
    const other = await f.s.rest(`/updates/${ids[k === 1 ? 1 : 0]}/history`);
    expect(other.body).toMatchObject({ success: 1, total: 0, data: [] });
    const failed = await f.s.rest('/updates/history?outcome=failed');
    expect(failed.body.total).toBe(0);
    const bad = await f.s.rest('/updates/history?since=soon');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('svc_invalid_date');
    const badOutcome = await f.s.rest('/updates/history?outcome=exploded');
    expect(badOutcome.status).toBe(400);
    const unknown = await f.s.rest('/updates/99999/history');
    expect(unknown.status).toBe(404);
  });
});

describe('REST update routes: safe and force', () => {
  it('take safe/force as true or false, refuse anything else, and answer whether the run was safe', async () => {
    const k = [1, 2, 3].find((i) => f.sim.state(i).plugins.some((p) => p.updateVersion))!;
    const slug = f.sim.state(k).plugins.find((p) => p.updateVersion)!.slug;
    const bad = await f.s.rest(`/updates/${ids[k - 1]}/update/plugins?slug=${encodeURIComponent(slug)}&safe=maybe`, { method: 'POST' });
    expect(bad.status).toBe(400);
    const badForce = await f.s.rest(`/updates/update?force=sure`, { method: 'POST' });
    expect(badForce.status).toBe(400);
    const dry = await f.s.rest(`/updates/${ids[k - 1]}/update/plugins?slug=${encodeURIComponent(slug)}&dry_run=1&safe=false`, {
      method: 'POST',
    });
    expect(dry.status).toBe(200);
    const run = await f.s.rest(`/updates/${ids[k - 1]}/update/plugins?slug=${encodeURIComponent(slug)}&safe=true`, { method: 'POST' });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ success: 1, safe: true, data: { updated: [{ slug }], rolled_back: [] } });
    const hist = await f.s.rest(`/updates/${ids[k - 1]}/history?per_page=1`);
    expect(hist.body.data[0]).toMatchObject({ slug, safe: true, probe: { before: 'healthy', after: 'healthy' } });
  });
});
