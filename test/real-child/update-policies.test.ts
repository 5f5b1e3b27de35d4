// An update policy on real WordPress (issue 28 part 4): a policy whose window is open now, on site 1 only, runs once
// when the scheduler ticks: rc-gamma 1.1.0 (offered by the kit) is applied in safe mode on site 1 and recorded as
// started by the policy; site 2, not a target, keeps 1.0.0; a second tick in the same window starts nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offsetMinutes } from '../../src/core/site-time.js';
import type { JobRecord } from '../../src/store/records.js';
import { startServer, type TestServer } from '../support/server.js';
import { until } from '../support/wait.js';
import { realSite, resetSite, serverWithRealSite, wpJson } from './kit.js';

let s: TestServer;
let id1: number;
let id2: number;
const gamma = (k: number) => wpJson<string>(k, 'wp_clean_plugins_cache(); return get_plugins()["rc-gamma/rc-gamma.php"]["Version"];');
const GAMMA = 'rc-gamma/rc-gamma.php';

beforeAll(async () => {
  ({ s, id: id1 } = await serverWithRealSite(1, () => startServer()));
  resetSite(2);
  const two = realSite(2);
  const r = await s.rest('/sites/add', { method: 'POST', json: { url: two.url, admin: two.admin, admin_password: two.password } });
  expect(r.status).toBe(200);
  id2 = r.body.data.id;
  await s.rest('/sites/sync', { method: 'POST' });
});
afterAll(async () => {
  await s?.close();
  resetSite(1);
  resetSite(2);
});

describe('a policy window on real sites', () => {
  it('runs once, on the right sites, in safe mode, as the policy', async () => {
    expect([gamma(1), gamma(2)]).toEqual(['1.0.0', '1.0.0']);
    // A window from an hour ago to an hour ahead in site 1's own zone (from its sync).
    const zone = s.services.sites.get(id1)!.timezone || '+00:00';
    const local = (ms: number) => new Date(ms + offsetMinutes(zone, ms) * 60_000).toISOString().slice(11, 16);
    const now = Date.now();
    const add = await s.rest('/updates/policies/add', {
      method: 'POST',
      json: {
        name: 'Real',
        sites: [id1],
        core: 'none',
        themes: false,
        translations: false,
        slugs_mode: 'only',
        slugs: [GAMMA],
        days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'],
        start: local(now - 3600_000),
        end: local(now + 3600_000),
      },
    });
    expect(add.status).toBe(200);
    const policyId = add.body.data.id as number;
    const preview = (await s.rest(`/updates/policies/${policyId}/preview`)).body.data;
    expect(preview.next_window).toMatchObject({
      open_now: true,
      sites: [{ site_id: id1 }],
      would_update: [{ slug: GAMMA, new_version: '1.1.0' }],
    });

    const [run] = await s.services.policies.tick();
    expect(run).toMatchObject({ policy_id: policyId, site_ids: [id1] });
    const job = await until(
      () => s.services.jobs.find(run!.job_id),
      (j?: JobRecord) => j?.status === 'completed' || j?.status === 'failed',
      90_000,
    );
    expect(job!.status).toBe('completed');
    expect(await s.services.policies.tick()).toEqual([]);
    expect(s.services.policies.runs(policyId)).toHaveLength(1);
    expect([gamma(1), gamma(2)]).toEqual(['1.1.0', '1.0.0']);
    const hist = (await s.rest(`/updates/history?slug=${encodeURIComponent(GAMMA)}`)).body.data;
    expect(hist).toEqual([
      expect.objectContaining({
        site_id: id1,
        from: '1.0.0',
        to: '1.1.0',
        outcome: 'updated',
        safe: true,
        actor: { kind: 'policy', id: policyId, name: 'Real' },
        probe: expect.objectContaining({ before: 'healthy', after: 'healthy' }),
      }),
    ]);
    expect(id2).toBeGreaterThan(0);
  });
});
