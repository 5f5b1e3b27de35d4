// The site lifecycle on a real child: add, sync, check, security, changes made outside the dashboard, disconnect,
// reconnect, suspend and remove — each checked against the site itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { realSite, resetSite, wpAdminPluginAction, wpJson } from './kit.js';

const K = 1;
let s: TestServer;
let id: number;

const connectedTo = () => wpJson<string | false>(K, 'return get_option("mainwp_child_pubkey");');

beforeAll(async () => {
  resetSite(K);
  s = await startServer();
});
afterAll(async () => {
  await s?.close();
});

describe('a real child site, from add to remove', () => {
  it("is added through the ability with upstream's adminpassword, and the child then trusts our key", async () => {
    const site = realSite(K);
    const tag = (await s.rest('/tags/add', { method: 'POST', json: { name: 'real' } })).body.data;
    const r = await s.ability('add-site-v1', {
      url: site.url,
      admin: site.admin,
      adminpassword: site.password,
      name: 'Real lifecycle',
      tags: [tag.id],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    id = r.body.id ?? r.body.site?.id;
    expect(id).toBeGreaterThan(0);
    expect(connectedTo()).toBeTruthy();
    const got = await s.rest(`/sites/${id}`);
    expect(got.body.data).toMatchObject({ status: 'connected' });
    // The tag given with it was written with the site, in the write that stored the child's answers.
    expect((await s.rest(`/tags/${tag.id}`)).body.data.sites_ids).toEqual([id]);
  });

  it('syncs, and what it stores is what WordPress says', async () => {
    const r = await s.rest(`/sites/${id}/sync`, { method: 'POST' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const full = (await s.rest(`/sites/${id}?full_data=1`)).body.data;
    expect(full.wp_version ?? full.wpversion).toBe(wpJson<string>(K, 'global $wp_version; return $wp_version;'));
  });

  it('checks the site', async () => {
    const r = await s.rest(`/sites/${id}/check`, { method: 'POST' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(JSON.stringify(r.body)).toMatch(/"reachable":(true|1)/);
  });

  it('reads the security findings the child reports', async () => {
    const r = await s.rest(`/sites/${id}/security`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  });

  it('shows a plugin activated in wp-admin as a change made outside the dashboard, and not our own calls (defect 5)', async () => {
    wpJson(K, 'deactivate_plugins(["rc-beta/rc-beta.php"], true); return 1;');
    await wpAdminPluginAction(K, 'activate', 'rc-beta/rc-beta.php');
    const sync = await s.rest(`/sites/${id}/sync`, { method: 'POST' });
    expect(sync.status).toBe(200);
    const r = await s.ability('get-site-changes-v1', { site_id_or_domain: id }, { method: 'GET' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const text = JSON.stringify(r.body);
    expect(text).toMatch(/plugin/);
    expect(text).toMatch(/RC Beta|rc-beta/);
    // A second sync brings nothing twice.
    await s.rest(`/sites/${id}/sync`, { method: 'POST' });
    const again = await s.ability('get-site-changes-v1', { site_id_or_domain: id }, { method: 'GET' });
    const count = (b: unknown) => (JSON.stringify(b).match(/RC Beta/g) ?? []).length;
    expect(count(again.body)).toBe(count(r.body));
  });

  it('disconnects: the child forgets our key; reconnects: it trusts a new one', async () => {
    const d = await s.rest(`/sites/${id}/disconnect`, { method: 'POST' });
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    expect(connectedTo()).toBeFalsy();
    const before = (await s.rest(`/sites/${id}`)).body.data;
    expect(before.status).toBe('disconnected');
    const r = await s.rest(`/sites/${id}/reconnect`, { method: 'POST', json: { admin_password: realSite(K).password } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(connectedTo()).toBeTruthy();
    expect((await s.rest(`/sites/${id}`)).body.data.status).toBe('connected');
  });

  it('suspends: no child traffic until unsuspended', async () => {
    expect((await s.rest(`/sites/${id}/suspend`, { method: 'POST' })).status).toBe(200);
    const sync = await s.ability('sync-sites-v1', { site_ids_or_domains: [id] });
    expect(sync.body.total_synced ?? 0).toBe(0);
    expect((await s.rest(`/sites/${id}/unsuspend`, { method: 'POST' })).status).toBe(200);
    const ok = await s.ability('sync-sites-v1', { site_ids_or_domains: [id] });
    expect(ok.body.total_synced).toBe(1);
  });

  it('a process refused by its own address policy answers the error and leaves the site connected for everyone (defect 8)', async () => {
    const strict = await startServer({ dataDir: s.dataDir, databaseUrl: s.databaseUrl, config: { allowPrivateSites: false } });
    try {
      const r = await strict.ability('sync-sites-v1', { site_ids_or_domains: [id] });
      expect(r.body.errors?.[0]?.code, JSON.stringify(r.body)).toBe('svc_address_not_allowed');
    } finally {
      await strict.close();
    }
    expect((await s.rest(`/sites/${id}`)).body.data.status).toBe('connected');
    expect((await s.rest('/sites?status=disconnected')).body.total ?? 0).toBe(0);
  });

  it('removes the site and tells the child, which then forgets our key (defect 7)', async () => {
    expect(connectedTo()).toBeTruthy();
    const r = await s.rest(`/sites/${id}/remove`, { method: 'DELETE' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(connectedTo()).toBeFalsy();
    expect((await s.rest(`/sites/${id}`)).status).toBe(404);
  });
});
