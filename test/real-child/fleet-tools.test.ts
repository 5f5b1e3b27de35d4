// Fleet tools on real children (two sites): renew connections (inline and as a job) gives each child a new key that
// then signs calls; disconnect-all-sites makes each child forget us and reconnect-sites undoes it; destroy-sessions is
// 501 because MainWP Child has no such call — checked inside WordPress.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { realSite, resetSite, wpJson } from './kit.js';
import { until as waitUntil } from '../support/wait.js';

const SITES = [3, 4] as const;
let s: TestServer;

const pubkey = (k: number) => wpJson<string | false>(k, `return get_option('mainwp_child_pubkey');`);

const until = <T>(fn: () => Promise<T> | T, ok: (v: T) => boolean, ms = 60_000) => waitUntil(fn, ok, ms);

beforeAll(async () => {
  for (const k of SITES) resetSite(k);
  s = await startServer();
  for (const k of SITES) {
    const site = realSite(k);
    const r = await s.rest('/sites/add', { method: 'POST', json: { url: site.url, admin: site.admin, admin_password: site.password } });
    if (r.status !== 200) throw new Error(`registering real site ${k}: ${r.status} ${JSON.stringify(r.body)}`);
  }
});
afterAll(async () => {
  await s?.close();
});

describe('fleet tools on real children', () => {
  it('renews every connection: each child holds a new key, and signed calls work with it', async () => {
    const before = SITES.map(pubkey);
    before.forEach((k) => expect(k).toMatch(/\S{20,}/));
    const r = await s.rest('/settings/tools/renew-connections', { method: 'POST' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ queued: false, total: 2, succeeded: 2, errors: [] });
    SITES.forEach((k, i) => expect(pubkey(k)).not.toBe(before[i]));
    const sync = await s.ability('sync-sites-v1', {});
    expect(sync.body).toMatchObject({ total_synced: 2, total_errors: 0 });
  });

  it('renews as a job above the queue threshold, followed on the status route', async () => {
    await s.ability('update-settings-v1', { queue_threshold: 1 });
    try {
      const before = SITES.map(pubkey);
      const r = await s.rest('/settings/tools/renew-connections', { method: 'POST' });
      expect(r.body.renew_id).toMatch(/^renew_/);
      const done = await until(
        () => s.rest(`/settings/tools/renew-connections-status/${r.body.renew_id}`),
        (x) => x.body?.status === 'completed',
      );
      expect(done.body).toMatchObject({ success: true, total: 2, processed: 2, failed: 0 });
      SITES.forEach((k, i) => expect(pubkey(k)).not.toBe(before[i]));
    } finally {
      await s.ability('update-settings-v1', { queue_threshold: null });
    }
    expect((await s.ability('sync-sites-v1', {})).body).toMatchObject({ total_synced: 2 });
  });

  it('answers destroy-sessions 501: the child has no call that destroys sessions', async () => {
    const calls = wpJson<string[]>(
      SITES[0],
      `
      $p = new ReflectionProperty('MainWP\\Child\\MainWP_Child_Callable', 'callableFunctions');
      $p->setAccessible(true);
      return array_keys($p->getValue(\\MainWP\\Child\\MainWP_Child_Callable::get_instance()));`,
    );
    expect(calls).toContain('disconnect');
    expect(calls.filter((c) => /session|logout|log_out/i.test(c))).toEqual([]);
    const r = await s.rest('/settings/tools/destroy-sessions', { method: 'POST' });
    expect([r.status, r.body.code]).toEqual([501, 'svc_not_supported']);
    expect(r.body.message).toContain('MainWP Child 6.1 has no call that destroys user sessions');
  });

  it('disconnects all sites (confirm): each child forgets our key; reconnect-sites brings them back', async () => {
    const preview = await s.rest('/settings/tools/disconnect-all-sites', { method: 'POST', json: { dry_run: true } });
    expect(preview.body.data).toMatchObject({ dry_run: true, total: 2 });
    SITES.forEach((k) => expect(pubkey(k)).toMatch(/\S{20,}/));
    const r = await s.rest('/settings/tools/disconnect-all-sites', { method: 'POST', json: { confirm: true } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ queued: false, total: 2, succeeded: 2 });
    SITES.forEach((k) => expect(pubkey(k)).toBeFalsy());
    expect((await s.rest('/sites/count?status=disconnected')).body.count).toBe(2);
    const back = await s.ability('reconnect-sites-v1', {});
    expect(back.body, JSON.stringify(back.body)).toMatchObject({ total_reconnected: 2 });
    SITES.forEach((k) => expect(pubkey(k)).toMatch(/\S{20,}/));
  });
});
