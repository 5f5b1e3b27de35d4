// Child-site abilities through the registry, over the child simulator: adding a site (the child's handshake),
// sync, reachability checks, disconnect and reconnect one or many, fleet tools (renew, disconnect all), background
// jobs above the queue threshold, and the fleet's security issues — without a door.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { until } from '../support/wait.js';
import type { SiteRecord } from '../../src/store/records.js';

let h: AbilityHarness;
let ids: number[];

// Four simulated sites, three registered; more than three sites at once go to a background job.
beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 4, seed: 11 }, config: { queueThreshold: '3' } });
  ids = (await h.addSimSites(3)).map((s) => s.id);
});
afterAll(() => h.close());

describe('add-site-v1', () => {
  it("registers a site with the child's own answers, and refuses one already registered or a wrong password", async () => {
    const info = h.sim.sites[3]!;
    expect(await h.fails('add-site-v1', { url: info.url, admin: info.admin, admin_password: 'wrong' })).toMatchObject({
      status: expect.any(Number),
    });
    const s = await h.call('add-site-v1', { url: info.url, admin: info.admin, admin_password: info.password, name: 'Fourth' });
    expect(s).toMatchObject({ url: info.url, name: 'Fourth', status: 'connected', wp_version: h.sim.state(4).wpVersion });
    expect(await h.fails('add-site-v1', { url: info.url, admin: info.admin, admin_password: info.password })).toMatchObject({
      status: 409,
    });
    expect(await h.fails('add-site-v1', { url: info.url, admin: info.admin, admin_password: info.password }, h.as.viewer)).toMatchObject({
      code: 'svc_permission_denied',
    });
    await h.call('delete-site-v1', { site_id_or_domain: s.id, confirm: true });
  });
});

describe('add-site-v1 with tags', () => {
  it('gives the new site the tags named (kept on its record); an unknown tag is refused and nothing is added', async () => {
    const info = h.sim.sites[3]!;
    const a = await h.call('add-tag-v1', { name: 'added-a' });
    const b = await h.call('add-tag-v1', { name: 'added-b' });
    const add = (tag_ids: number[]) => ({ url: info.url, admin: info.admin, admin_password: info.password, tag_ids });
    expect(await h.fails('add-site-v1', add([a.id, 999]))).toMatchObject({ code: 'svc_tag_not_found', status: 404 });
    expect((await h.call('count-sites-v1', {})).total).toBe(3);
    const s = await h.call('add-site-v1', add([b.id, a.id, b.id]));
    expect(s.tags).toEqual([
      { id: a.id, name: 'added-a' },
      { id: b.id, name: 'added-b' },
    ]);
    expect(h.services.store.get<SiteRecord>('sites', s.id)!.tag_ids).toEqual([a.id, b.id]);
    expect((await h.call('get-tag-v1', { tag_id: a.id })).sites_ids).toEqual([s.id]);
    await h.call('delete-site-v1', { site_id_or_domain: s.id, confirm: true });
    expect((await h.call('get-tag-v1', { tag_id: a.id })).sites_count).toBe(0);
    for (const t of [a, b]) await h.call('delete-tag-v1', { tag_id: t.id, confirm: true });
  });
});

describe('sync-sites-v1, check-site-v1, check-sites-v1', () => {
  it('syncs the chosen sites, leaving out excluded ones and naming unknown ones', async () => {
    const r = await h.call('sync-sites-v1', { site_ids_or_domains: [...ids, 9999], exclude_ids: [ids[2]!] });
    expect(r).toMatchObject({ queued: false, total_synced: 2, total_errors: 1 });
    expect(r.synced!.map((s) => s.id)).toEqual(ids.slice(0, 2));
    expect(r.errors).toEqual([expect.objectContaining({ identifier: 9999, code: 'svc_site_not_found' })]);
  });

  it('checks one site and several, counting the reachable ones', async () => {
    expect(await h.call('check-site-v1', { site_id_or_domain: ids[0]! })).toMatchObject({
      site_id: ids[0],
      reachable: true,
      checked: true,
      status: { online: true },
    });
    h.sim.setFault(2, { type: 'down' });
    try {
      const r = await h.call('check-sites-v1', { site_ids_or_domains: ids });
      expect(r.summary).toEqual({ total_checked: 3, reachable: 2, unreachable: 1 });
      expect(r.results!.find((x) => x.site_id === ids[1])!.reachable).toBe(false);
    } finally {
      h.sim.setFault(2, null);
    }
    expect(await h.fails('check-sites-v1', { site_ids_or_domains: [9998] })).toMatchObject({ code: 'svc_site_not_found', status: 404 });
  });
});

describe('disconnect and reconnect', () => {
  it('disconnects one site (the child forgets the dashboard) and reconnects it', async () => {
    const d = await h.call('disconnect-site-v1', { site_id_or_domain: ids[2]! });
    expect(d).toMatchObject({ disconnected: true, child_notified: true, child_error: null, site_id: ids[2], status: 'disconnected' });
    const r = await h.call('reconnect-site-v1', { site_id_or_domain: ids[2]! });
    expect(r).toMatchObject({ reconnected: true, status: 'connected' });
    expect((await h.call('check-site-v1', { site_id_or_domain: ids[2]! })).reachable).toBe(true);
  });

  it('disconnects and reconnects several; disconnect-sites wants a list or all', async () => {
    expect(await h.fails('disconnect-sites-v1', {})).toMatchObject({ code: 'ability_invalid_input' });
    const d = await h.call('disconnect-sites-v1', { site_ids_or_domains: ids.slice(0, 2) });
    expect(d).toMatchObject({ queued: false, total_disconnected: 2, total_errors: 0 });
    expect((await h.call('list-sites-v1', { status: 'disconnected' })).items.map((s) => s.id)).toEqual(ids.slice(0, 2));
    const r = await h.call('reconnect-sites-v1', { site_ids_or_domains: ids.slice(0, 2) });
    expect(r).toMatchObject({ queued: false, total_reconnected: 2, total_errors: 0 });
    expect((await h.call('count-sites-v1', { status: 'connected' })).total).toBe(3);
  });
});

describe('fleet tools', () => {
  it('renews every connection, and the sites still answer', async () => {
    expect(await h.call('renew-connections-v1', {})).toMatchObject({ queued: false, total: 3, succeeded: 3, errors: [] });
    expect((await h.call('check-sites-v1', {})).summary).toMatchObject({ reachable: 3 });
  });

  it('disconnects all sites after a preview and confirm; reconnect-sites undoes it', async () => {
    expect(await h.call('disconnect-all-sites-v1', { dry_run: true })).toMatchObject({
      dry_run: true,
      total: 3,
      sites: ids.map((id) => expect.objectContaining({ id })),
    });
    expect(await h.fails('disconnect-all-sites-v1', {})).toMatchObject({ code: 'svc_confirmation_required' });
    expect((await h.call('count-sites-v1', { status: 'connected' })).total).toBe(3);
    expect(await h.call('disconnect-all-sites-v1', { confirm: true })).toMatchObject({
      dry_run: false,
      queued: false,
      total: 3,
      succeeded: 3,
    });
    expect((await h.call('count-sites-v1', { status: 'disconnected' })).total).toBe(3);
    expect(await h.fails('disconnect-all-sites-v1', { confirm: true })).toMatchObject({ code: 'svc_site_not_found' });
    await h.call('reconnect-sites-v1', { site_ids_or_domains: ids });
    expect((await h.call('count-sites-v1', { status: 'connected' })).total).toBe(3);
  });
});

describe('background jobs: get-batch-job-status-v1, cancel-batch-job-v1', () => {
  it('queues a batch above the threshold, reports its progress to the end, and answers an unknown job with 404', async () => {
    const info = h.sim.sites[3]!;
    const fourth = await h.call('add-site-v1', { url: info.url, admin: info.admin, admin_password: info.password });
    const q = await h.call('sync-sites-v1', {});
    expect(q).toMatchObject({ queued: true, sites_queued: 4, job_id: expect.stringMatching(/^sync_/) });
    const done = await until(
      () => h.call('get-batch-job-status-v1', { job_id: q.job_id! }, h.as.viewer),
      (j) => j.status === 'completed',
      10_000,
    );
    expect(done).toMatchObject({ job_id: q.job_id, type: 'sync', total: 4, processed: 4, succeeded: 4, failed: 0, progress: 100 });
    const again = await h.call('cancel-batch-job-v1', { job_id: q.job_id! });
    expect(again).toMatchObject({ job_id: q.job_id, status: 'completed', succeeded: 4 });
    expect(await h.fails('get-batch-job-status-v1', { job_id: 'sync_nope' })).toMatchObject({ code: 'svc_job_not_found', status: 404 });
    expect(await h.fails('cancel-batch-job-v1', { job_id: q.job_id! }, h.as.viewer)).toMatchObject({ code: 'svc_permission_denied' });
    await h.call('delete-site-v1', { site_id_or_domain: fourth.id, confirm: true });
  });
});

describe('get-security-issues-v1', () => {
  it('lists the synced sites with issues as get-site-security-v1 reports them, and filters by severity', async () => {
    await h.call('sync-sites-v1', { site_ids_or_domains: ids });
    const all = await h.call('get-security-issues-v1', { per_page: 100 }, h.as.readKey);
    const expected: number[] = [];
    for (const id of ids) if ((await h.call('get-site-security-v1', { site_id_or_domain: id })).total_issues) expected.push(id);
    expect(expected.length).toBeGreaterThan(0);
    expect(all.items.map((i) => i.site_id).sort()).toEqual(expected.sort());
    const high = await h.call('get-security-issues-v1', { min_severity: 'high' });
    expect(high.items.every((i) => i.high > 0)).toBe(true);
    expect(high.total).toBe(all.items.filter((i) => i.high > 0).length);
  });
});
