// Fleet tools (issue 21) against simulated children: renew every connection and disconnect every site, each a
// persisted job with its upstream status route, progress on MCP, and the confirm / dry_run rule; a dead child is one
// job error, not a failed job.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildMcpServer } from '../src/mcp/server.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { until } from './support/wait.js';

let f: Fleet;
let ids: Array<{ id: number; url: string }>;

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 4 } });
  ids = await registerSites(f, 4);
});
afterAll(async () => {
  await f.close();
});

describe('GET /settings/tools (issue 27, defect 5: it answered 501)', () => {
  it('answers which fleet tools sitefleet runs, where and whether this key may, and which it does not, with the reason', async () => {
    const r = await f.s.rest('/settings/tools');
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.data)).toEqual([
      'renew-connections',
      'disconnect-all-sites',
      'destroy-sessions',
      'clear-activation-data',
      'restore-info-messages',
    ]);
    expect(r.body.data['renew-connections']).toEqual({
      supported: true,
      ability: 'svc/renew-connections-v1',
      label: 'Renew connections',
      description: expect.stringContaining('New keys for every connected site'),
      method: 'POST',
      path: '/settings/tools/renew-connections',
      status_path: '/settings/tools/renew-connections-status/{id}',
      needs_confirm: false,
      may_run: true,
    });
    expect(r.body.data['disconnect-all-sites']).toMatchObject({ supported: true, needs_confirm: true, may_run: true });
    // What it says is what the routes do: a dry run of the one, the reason of a 501 for the others.
    const dry = await f.s.rest(r.body.data['disconnect-all-sites'].path, { method: 'POST', json: { dry_run: true } });
    expect(dry.body).toMatchObject({ success: 1, data: { dry_run: true } });
    for (const tool of ['destroy-sessions', 'clear-activation-data', 'restore-info-messages']) {
      expect(r.body.data[tool]).toEqual({ supported: false, reason: expect.any(String) });
      const run = await f.s.rest(`/settings/tools/${tool}`, { method: 'POST' });
      expect(run.body).toMatchObject({ code: 'svc_not_supported', message: `Not supported by sitefleet: ${r.body.data[tool].reason}` });
    }
    // A read key reads the list and is told it may not run them.
    const read = await f.s.rest('/settings/tools', { token: f.s.creds.key.read });
    expect(read.body.data['renew-connections'].may_run).toBe(false);
    expect((await f.s.rest('/settings/tools', { token: f.s.creds.key.write })).status).toBe(403);
  });
});

describe('renew connections', () => {
  it('gives every connected site a new key while the caller waits (REST); syncs work after', async () => {
    await f.s.ability('suspend-site-v1', { site_id_or_domain: ids[3]!.id });
    const keys = [1, 2, 3, 4].map((i) => f.sim.state(i).connection.pubkeyPem);
    const r = await f.s.rest('/settings/tools/renew-connections', { method: 'POST' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      success: 1,
      message: 'Connections renewed: 3 of 3 site(s).',
      data: { queued: false, total: 3, succeeded: 3, errors: [] },
    });
    [1, 2, 3].forEach((i) => expect(f.sim.state(i).connection.pubkeyPem).not.toBe(keys[i - 1]));
    expect(f.sim.state(4).connection.pubkeyPem).toBe(keys[3]);
    const sync = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [ids[0]!.id, ids[1]!.id, ids[2]!.id] });
    expect(sync.body).toMatchObject({ total_synced: 3, total_errors: 0 });
    await f.s.ability('unsuspend-site-v1', { site_id_or_domain: ids[3]!.id });
  });

  it('reports progress per site on MCP, and a dead child as one error', async () => {
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await buildMcpServer(f.s.registry, { principal: { kind: 'local', name: 'stdio' } }, f.s.services).connect(serverSide);
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(clientSide);
    f.sim.setFault(2, { type: 'down' });
    try {
      const seen: number[] = [];
      const r = await client.callTool({ name: 'renew-connections-v1', arguments: {} }, undefined, {
        onprogress: (p) => seen.push(p.progress),
      });
      expect(r.isError).toBeFalsy();
      expect(r.structuredContent).toMatchObject({ queued: false, total: 4, succeeded: 3 });
      expect((r.structuredContent as { errors: Array<{ site_id: number; code: string }> }).errors).toEqual([
        expect.objectContaining({ site_id: ids[1]!.id, code: 'svc_reconnect_failed' }),
      ]);
      expect(seen).toEqual([1, 2, 3, 4]);
    } finally {
      f.sim.setFault(2, null);
      await client.close();
    }
  });

  it("above the queue threshold: a persisted job (upstream's renew_id and status_url), followed on its status route", async () => {
    await f.s.ability('update-settings-v1', { queue_threshold: 2 });
    try {
      const keys = [1, 2, 3, 4].map((i) => f.sim.state(i).connection.pubkeyPem);
      const r = await f.s.rest('/settings/tools/renew-connections', { method: 'POST' });
      expect(r.body).toMatchObject({
        success: 1,
        message: 'Renew connection process started in background.',
        renew_id: expect.stringMatching(/^renew_/),
      });
      expect(r.body.status_url).toBe(`${f.s.restBase}/settings/tools/renew-connections-status/${r.body.renew_id}`);
      const done = await until(
        () => f.s.rest(`/settings/tools/renew-connections-status/${r.body.renew_id}`),
        (x) => x.body?.status === 'completed',
      );
      expect(done.body).toMatchObject({ success: true, status: 'completed', total: 4, processed: 4, failed: 0, progress: 100, errors: [] });
      expect(done.body.started_at).toEqual(expect.any(String));
      [1, 2, 3, 4].forEach((i) => expect(f.sim.state(i).connection.pubkeyPem).not.toBe(keys[i - 1]));
      const viaAbility = await f.s.ability('get-batch-job-status-v1', { job_id: r.body.renew_id }, { method: 'GET' });
      expect(viaAbility.body).toMatchObject({ type: 'renew', succeeded: 4 });
    } finally {
      await f.s.ability('update-settings-v1', { queue_threshold: null });
    }
  });

  it("status routes: unknown ids and another tool's job are 404; read keys may read them, not start jobs", async () => {
    const sync = await f.s.services.jobs.enqueue('sync', [ids[0]!.id]);
    const wrong = await f.s.rest(`/settings/tools/renew-connections-status/${sync.job_id}`);
    expect([wrong.status, wrong.body.code]).toEqual([404, 'svc_job_not_found']);
    const unknown = await f.s.rest('/settings/tools/renew-connections-status/renew_00000000-0000-4000-8000-000000000000', {
      token: f.s.creds.key.read,
    });
    expect([unknown.status, unknown.body.message]).toEqual([404, 'Renew connection job not found.']);
    const odd = await f.s.rest('/settings/tools/disconnect-all-sites-status/nonsense');
    expect(odd.status).toBe(404);
    const ro = await f.s.rest('/settings/tools/renew-connections', { method: 'POST', token: f.s.creds.key.read });
    expect(ro.status).toBe(403);
    const viewer = await f.s.ability('renew-connections-v1', {}, { auth: f.s.creds.viewer });
    expect(viewer.status).toBe(403);
    const extra = await f.s.rest('/settings/tools/renew-connections', { method: 'POST', json: { wait: true } });
    expect(extra.status).toBe(400);
  });
});

describe('disconnect all sites', () => {
  it('needs confirm; dry_run lists the sites and changes nothing', async () => {
    const bare = await f.s.rest('/settings/tools/disconnect-all-sites', { method: 'POST' });
    expect([bare.status, bare.body.code]).toEqual([400, 'svc_confirmation_required']);
    const both = await f.s.ability('disconnect-all-sites-v1', { confirm: true, dry_run: true });
    expect([both.status, both.body.code]).toEqual([400, 'svc_invalid_input']);
    const preview = await f.s.rest('/settings/tools/disconnect-all-sites', { method: 'POST', json: { dry_run: true } });
    expect(preview.body).toMatchObject({ success: 1, message: '4 site(s) would be disconnected.', data: { dry_run: true, total: 4 } });
    expect(preview.body.data.sites.map((s: { id: number }) => s.id)).toEqual(ids.map((s) => s.id));
    expect((await f.s.rest('/sites/count?status=connected')).body.count).toBe(4);
  });

  it('disconnects every site: the children forget us, the sites show disconnected; reconnect undoes it', async () => {
    const r = await f.s.ability('disconnect-all-sites-v1', { confirm: true }, { method: 'DELETE' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ dry_run: false, queued: false, total: 4, succeeded: 4, errors: [] });
    for (let i = 1; i <= 4; i++) expect(f.sim.state(i).connection.pubkeyPem).toBeNull();
    expect((await f.s.rest('/sites/count?status=disconnected')).body.count).toBe(4);
    const none = await f.s.rest('/settings/tools/disconnect-all-sites', { method: 'POST', json: { confirm: true } });
    expect([none.status, none.body.code]).toEqual([404, 'svc_site_not_found']);
    const renew = await f.s.rest('/settings/tools/renew-connections', { method: 'POST' });
    expect([renew.status, renew.body.code]).toEqual([404, 'svc_site_not_found']);
    const back = await f.s.ability('reconnect-sites-v1', {});
    expect(back.body).toMatchObject({ total_reconnected: 4 });
  });

  it("above the queue threshold: a job with upstream's disconnect_id and its status route", async () => {
    await f.s.ability('update-settings-v1', { queue_threshold: 2 });
    try {
      const r = await f.s.rest('/settings/tools/disconnect-all-sites', { method: 'POST', json: { confirm: true } });
      expect(r.body).toMatchObject({
        success: 1,
        message: 'Disconnect process started in background.',
        disconnect_id: expect.stringMatching(/^disconnect_/),
      });
      const done = await until(
        () => f.s.rest(`/settings/tools/disconnect-all-sites-status/${r.body.disconnect_id}`),
        (x) => x.body?.status === 'completed',
      );
      expect(done.body).toMatchObject({ success: true, processed: 4, failed: 0 });
      for (let i = 1; i <= 4; i++) expect(f.sim.state(i).connection.pubkeyPem).toBeNull();
    } finally {
      await f.s.ability('update-settings-v1', { queue_threshold: null });
    }
  });
});
