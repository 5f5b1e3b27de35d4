// Real child traffic: add / sync / check / reconnect / disconnect against simulated children over loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';

let f: Fleet;
let ids: Array<{ id: number; url: string }>;
beforeAll(async () => {
  f = await startFleet({ sim: { sites: 6 } });
  ids = await registerSites(f, 4);
});
afterAll(async () => {
  await f.close();
});

describe('add-site', () => {
  it('registers a child and stores what its first sync reported', async () => {
    const r = await f.s.rest(`/sites/${ids[0]!.id}`);
    expect(r.status).toBe(200);
    const st = f.sim.state(1);
    expect(r.body.data).toMatchObject({ status: 'connected', wp_version: st.wpVersion, child_version: expect.any(String) });
    expect(r.body.data.last_sync).toMatch(/^\d{4}-/);
    expect(r.body.data.stats.plugin_updates).toBe(st.plugins.filter((p) => p.updateVersion).length);
  });

  it('refuses a duplicate URL with 409 svc_site_already_exists', async () => {
    const info = f.sim.sites[0]!;
    const r = await f.s.ability('add-site-v1', {
      url: info.url.toUpperCase().replace(/\/$/, ''),
      admin: info.admin,
      admin_password: info.password,
    });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('svc_site_already_exists');
  });

  it("answers 400 with the child's reason when the child refuses", async () => {
    const info = f.sim.sites[4]!;
    const r = await f.s.ability('add-site-v1', { url: info.url, admin: info.admin, admin_password: 'wrong password' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('svc_child_refused');
    expect(r.body.message).toContain(info.url);
  });

  it('names the URL when nothing answers there', async () => {
    const r = await f.s.ability('add-site-v1', { url: 'http://127.0.0.1:9/', admin: 'admin' });
    expect(r.status).toBeGreaterThanOrEqual(500);
    expect(r.body.code).toBe('svc_connection_failed');
    expect(r.body.message).toContain('http://127.0.0.1:9/');
  });

  it('refuses a URL that is not http(s) or carries credentials', async () => {
    for (const url of ['ftp://example.com/', 'not a url', 'http://user:pw@example.com/']) {
      const r = await f.s.ability('add-site-v1', { url, admin: 'admin' });
      expect(r.status, url).toBe(400);
      expect(r.body.code).toBe('svc_invalid_url');
    }
  });

  it('accepts admin_username as an alias of admin and never returns keys', async () => {
    const info = f.sim.sites[5]!;
    const r = await f.s.ability('add-site-v1', { url: info.url, admin_username: info.admin, admin_password: info.password });
    expect(r.status).toBe(200);
    expect(JSON.stringify(r.body)).not.toMatch(/PRIVATE KEY|regverify|admin_password/);
    await f.s.ability('delete-site-v1', { site_id_or_domain: r.body.id, confirm: true });
  });
});

describe('sync', () => {
  it('syncs named sites now and reports each', async () => {
    const r = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [ids[0]!.id, ids[1]!.url, 'nope.example'] });
    expect(r.status).toBe(200);
    expect(r.body.queued).toBe(false);
    expect(r.body.synced.map((s: { id: number }) => s.id).sort()).toEqual([ids[0]!.id, ids[1]!.id].sort());
    expect(r.body.errors).toEqual([expect.objectContaining({ identifier: 'nope.example', code: 'svc_site_not_found' })]);
  });

  it('turns a dead child into one per-site error, never a failed batch, and marks it disconnected', async () => {
    f.sim.setFault(2, { type: 'http500' });
    try {
      const r = await f.s.ability('sync-sites-v1', {});
      expect(r.status).toBe(200);
      expect(r.body.total_synced).toBe(3);
      expect(r.body.errors).toEqual([expect.objectContaining({ identifier: ids[1]!.id, code: 'svc_child_not_detected' })]);
      const site = await f.s.rest(`/sites/${ids[1]!.id}`);
      expect(site.body.data.status).toBe('disconnected');
      const one = await f.s.rest(`/sites/${ids[1]!.id}/sync`, { method: 'POST' });
      expect(one.status).toBe(502);
      expect(one.body.code).toBe('svc_child_not_detected');
    } finally {
      f.sim.setFault(2, null);
    }
    const back = await f.s.rest(`/sites/${ids[1]!.id}/sync`, { method: 'POST' });
    expect(back.status).toBe(200);
    expect(back.body.data.status).toBe('connected');
  });

  it('classifies each child fault with its own code', async () => {
    const cases = [
      [{ type: 'bad_signature' }, 'svc_child_auth_failed'],
      [{ type: 'no_marker' }, 'svc_child_not_detected'],
      [{ type: 'garbage_json' }, 'svc_child_bad_reply'],
      [{ type: 'wrong_types' }, 'svc_child_bad_reply'],
      [{ type: 'down' }, 'svc_child_unreachable'],
    ] as const;
    for (const [fault, code] of cases) {
      f.sim.setFault(3, fault);
      const r = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [ids[2]!.id] });
      expect(r.body.errors?.[0]?.code, fault.type).toBe(code);
    }
    f.sim.setFault(3, null);
    await f.s.ability('sync-sites-v1', { site_ids_or_domains: [ids[2]!.id] });
  });

  it('does not contact suspended or disconnected sites', async () => {
    await f.s.ability('suspend-site-v1', { site_id_or_domain: ids[3]!.id });
    const before = f.sim.requests(4);
    const r = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [ids[3]!.id] });
    expect(r.body.errors[0].code).toBe('svc_site_suspended');
    expect(f.sim.requests(4)).toBe(before);
    await f.s.ability('unsuspend-site-v1', { site_id_or_domain: ids[3]!.id });
  });
});

describe('check', () => {
  it('probes one site for real', async () => {
    const r = await f.s.ability('check-site-v1', { site_id_or_domain: ids[0]!.id });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ site_id: ids[0]!.id, reachable: true, http_status: 200 });
    expect(r.body.response_time_ms).toBeGreaterThanOrEqual(0);
  });

  it('reports a dead site as unreachable with http_status 0', async () => {
    f.sim.setFault(1, { type: 'down' });
    const r = await f.s.ability('check-sites-v1', {});
    f.sim.setFault(1, null);
    expect(r.status).toBe(200);
    const dead = r.body.results.find((x: { site_id: number }) => x.site_id === ids[0]!.id);
    expect(dead).toMatchObject({ reachable: false, http_status: 0 });
    expect(r.body.summary).toMatchObject({ total_checked: 4, unreachable: 1 });
  });
});

describe('disconnect and reconnect', () => {
  it('tells the child, marks the site disconnected, and a reconnect brings it back', async () => {
    const id = ids[2]!.id;
    const d = await f.s.rest(`/sites/${id}/disconnect`, { method: 'POST' });
    expect(d.status).toBe(200);
    expect(d.body.child_notified).toBe(true);
    expect(f.sim.state(3).connection.pubkeyPem).toBeNull();
    expect((await f.s.rest(`/sites/${id}`)).body.data.status).toBe('disconnected');
    const sync = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [id] });
    expect(sync.body.errors[0].code).toBe('svc_site_disconnected');
    const info = f.sim.sites[2]!;
    const rc = await f.s.ability('reconnect-site-v1', { site_id_or_domain: id, admin_password: info.password });
    expect(rc.status).toBe(200);
    expect(rc.body).toMatchObject({ reconnected: true, site_id: id, status: 'connected' });
  });

  it('disconnects a site whose child is unreachable, saying so', async () => {
    f.sim.setFault(4, { type: 'down' });
    const r = await f.s.ability('disconnect-site-v1', { site_id_or_domain: ids[3]!.id });
    f.sim.setFault(4, null);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ disconnected: true, child_notified: false, status: 'disconnected' });
  });

  it('fails a reconnect with a clear code when the child is dead', async () => {
    f.sim.setFault(4, { type: 'http500' });
    const r = await f.s.rest(`/sites/${ids[3]!.id}/reconnect`, { method: 'POST' });
    f.sim.setFault(4, null);
    expect(r.status).toBe(502);
    expect(r.body.code).toBe('svc_reconnect_failed');
  });
});
