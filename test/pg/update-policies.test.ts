// Update policies across processes on one PostgreSQL database (issue 28 part 4): a policy whose window is open when two
// `sitefleet serve` processes start is claimed by exactly one of them — one run, one job, each item updated once —
// and a third instance ticking at the same moment starts nothing either.
import { afterAll, describe, expect, it } from 'vitest';
import { newKeyPair } from '../../src/child/keys.js';
import { startChildSim } from '../../src/child/simulator/server.js';
import { loadConfig } from '../../src/config.js';
import { closeServices, openServices } from '../../src/domain/index.js';
import type { JobRecord } from '../../src/store/records.js';
import type { PolicyRunRecord } from '../../src/store/policy-records.js';
import type { UpdateHistoryRecord } from '../../src/store/health-records.js';
import { serveProcess } from '../support/process.js';
import { seedSites, testFleetStore } from '../support/server.js';
import { until } from '../support/wait.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
});

const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

describe('a policy window across two serve processes', () => {
  it('runs exactly once', async () => {
    const fleet = await testFleetStore();
    expect(fleet.databaseUrl).toMatch(/^postgres:/);
    const seed = await openServices(loadConfig({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl, allowPrivateSites: true }, {}));
    const keys = await newKeyPair();
    const sim = await startChildSim({
      sites: 4,
      preconnect: { publicKeyPem: keys.publicKeyPem, server: await seed.settings.installationUrl() },
    });
    closers.push(() => sim.close());
    const recs = await seedSites(seed, 4, (i) => ({ url: sim.sites[i]!.url, name: `Sim ${i + 1}`, admin_username: sim.sites[i]!.admin }));
    await seed.store.write((tx) => {
      for (const r of recs) tx.putBlob('secrets', r.id, { private_key_pem: keys.privateKeyPem, http_pass: null, regverify: null });
    });
    for (const r of recs) {
      const o = await seed.children.fetchSync(r);
      if (!o.ok) throw o.error;
      await seed.store.write(o.commit);
    }
    const pending = recs.map((_, i) => sim.state(i + 1).plugins.filter((p) => p.updateVersion).length);
    expect(pending.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    // The window is open now on every site (UTC, as the simulator's sites say): from an hour ago to an hour ahead.
    const now = Date.now();
    const policy = await seed.policies.create({
      name: 'Now',
      targets: { all: false, sites: [recs[0]!.id, recs[1]!.id, recs[2]!.id], tags: [], clients: [] },
      updates: { core: 'none', plugins: true, themes: false, translations: false, slugs_mode: 'all', slugs: [] },
      delay_days: 0,
      window: { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: hhmm(now - 3600_000), end: hhmm(now + 3600_000) },
      max_sites: 2,
      stop_after: 10,
    });
    await closeServices(seed);

    // Both start ticking at once (the scheduler's first tick comes as the job runner starts).
    const [a, b] = await Promise.all([
      serveProcess([...fleet.args, '--allow-private-sites']),
      serveProcess([...fleet.args, '--allow-private-sites']),
    ]);
    closers.push(
      () => a.stop(),
      () => b.stop(),
    );
    const third = await openServices(loadConfig({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl, allowPrivateSites: true }, {}));
    closers.push(() => closeServices(third));
    const policyJobs = () => [...third.store.all<JobRecord>('jobs')].filter((j) => j.type === 'policy');
    await until(
      async () => {
        await third.store.sync();
        return policyJobs();
      },
      (js) => js.length > 0 && js.every((j) => j.status === 'completed' || j.status === 'failed'),
      30_000,
    );
    // A third instance at the same moment: the window has its run.
    expect(await Promise.all([third.policies.tick(), third.policies.tick()])).toEqual([[], []]);
    await third.store.sync();
    const runs = [...third.store.all<PolicyRunRecord>('policy_runs')].filter((r) => r.policy_id === policy.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.site_ids.sort()).toEqual([recs[0]!.id, recs[1]!.id, recs[2]!.id].sort());
    const jobs = policyJobs();
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ job_id: runs[0]!.job_id, status: 'completed' });
    const hist = [...third.store.all<UpdateHistoryRecord>('update_history')].filter((e) => e.actor.kind === 'policy');
    const keysOf = hist.map((e) => `${e.site_id}:${e.slug}`);
    expect(new Set(keysOf).size).toBe(keysOf.length); // each item once
    expect(hist.length).toBe(pending[0]! + pending[1]! + pending[2]!);
    expect(hist.every((e) => e.outcome === 'updated' && e.safe && e.actor.id === policy.id)).toBe(true);
    expect(sim.state(4).plugins.filter((p) => p.updateVersion)).toHaveLength(pending[3]!); // not a target
  });
});
