// A policy run is a persisted job (issue 28 part 4): when the process that claimed a window dies mid-run, another
// process resumes the run's job — the window is not started a second time, and each item is updated once; an item
// the dead process had updated without recording it gets its update-history entry when the job finds it so.
import { hostname } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { newKeyPair } from '../src/child/keys.js';
import { startChildSim } from '../src/child/simulator/server.js';
import { loadConfig } from '../src/config.js';
import { closeServices, openServices } from '../src/domain/index.js';
import type { JobRecord } from '../src/store/records.js';
import type { UpdateHistoryRecord } from '../src/store/health-records.js';
import { seedSites, testFleetStore } from './support/server.js';
import { until } from './support/wait.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
});

describe('a policy run after a crash', () => {
  it('is resumed by another process, never started again', async () => {
    const fleet = await testFleetStore();
    const config = loadConfig({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl, allowPrivateSites: true }, {});
    const first = await openServices(config);
    const keys = await newKeyPair();
    const sim = await startChildSim({
      sites: 2,
      preconnect: { publicKeyPem: keys.publicKeyPem, server: await first.settings.installationUrl() },
    });
    closers.push(() => sim.close());
    const recs = await seedSites(first, 2, (i) => ({ url: sim.sites[i]!.url, name: `Sim ${i + 1}`, admin_username: sim.sites[i]!.admin }));
    await first.store.write((tx) => {
      for (const r of recs) tx.putBlob('secrets', r.id, { private_key_pem: keys.privateKeyPem, http_pass: null, regverify: null });
    });
    for (const r of recs) {
      const o = await first.children.fetchSync(r);
      if (!o.ok) throw o.error;
      await first.store.write(o.commit);
    }
    const pending = [1, 2].map((k) => sim.state(k).plugins.filter((p) => p.updateVersion).length);
    const policy = await first.policies.create({
      name: 'Crash',
      targets: { all: true, sites: [], tags: [], clients: [] },
      updates: { core: 'none', plugins: true, themes: false, translations: false, slugs_mode: 'all', slugs: [] },
      delay_days: 0,
      window: { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '02:00', end: '04:00' },
      max_sites: 1,
      stop_after: 5,
    });
    const at = Date.parse('2026-11-26T02:10:00Z');
    first.policies.now = () => at;
    await first.jobs.stop(); // this process claims the window but never gets to work its job
    const [run] = await first.policies.tick(at);
    // The claiming process died as it started the job: held by a dead owner, its lease run out.
    await first.store.write((tx) => {
      const j = [...tx.all<JobRecord>('jobs')].find((x) => x.job_id === run!.job_id)!;
      tx.put<JobRecord>('jobs', { ...j, status: 'processing', owner: `4194000-deadbeef@${hostname()}`, lease_until: 0, attempts: 1 });
    });
    // It had updated one plugin of site 1 on the child when it died, before recording anything.
    const early = sim.state(1).plugins.find((p) => p.updateVersion)!;
    const [from, to] = [early.version, early.updateVersion];
    await (await first.children.connector()).upgrade(await first.children.credentials(recs[0]!), 'plugin', [early.slug]);
    await closeServices(first);

    const second = await openServices(config);
    closers.push(() => closeServices(second));
    second.policies.now = () => at;
    expect(await second.policies.tick(at)).toEqual([]); // the window has its run
    second.jobs.start(50);
    const job = await until(
      () => second.jobs.find(run!.job_id),
      (j) => j?.status === 'completed' || j?.status === 'failed',
    );
    expect(job).toMatchObject({ status: 'completed', attempts: 2 });
    expect(second.policies.runs(policy.id)).toHaveLength(1);
    expect([...second.store.all<JobRecord>('jobs')].filter((j) => j.type === 'policy')).toHaveLength(1);
    const hist = [...second.store.all<UpdateHistoryRecord>('update_history')].filter((e) => e.actor.kind === 'policy');
    expect(hist.length).toBe(pending[0]! + pending[1]!);
    expect(new Set(hist.map((e) => `${e.site_id}:${e.slug}`)).size).toBe(hist.length);
    // The item found updated on resuming has its entry too, saying so, under the policy.
    expect(hist.find((e) => e.site_id === recs[0]!.id && e.slug === early.slug)).toMatchObject({
      from,
      to,
      outcome: 'updated',
      actor: { kind: 'policy', id: policy.id, name: 'Crash' },
      reason: 'Found updated when the interrupted job resumed: the process that applied it stopped before recording it.',
    });
    expect(await second.policies.tick(at)).toEqual([]);
    for (const k of [1, 2]) {
      const log = sim.state(k).upgradeLog;
      expect(new Set(log).size, `site ${k} upgrade log`).toBe(log.length);
      expect(sim.state(k).plugins.filter((p) => p.updateVersion)).toEqual([]);
    }
  });
});
