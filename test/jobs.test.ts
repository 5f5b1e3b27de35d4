// Batches over the queue threshold become persisted jobs that run to completion, survive a restart,
// and never do a site twice once it is recorded.
import { afterAll, describe, expect, it } from 'vitest';
import { closeServices, openServices } from '../src/domain/index.js';
import { loadConfig } from '../src/config.js';
import type { JobRecord, JobState } from '../src/store/records.js';
import { serveProcess } from './support/process.js';
import { preconnectedFleet } from './support/fleet.js';
import { startServer, tempDir, testFleetStore, type TestServer } from './support/server.js';
import { until } from './support/wait.js';
import { captureLogs } from './support/logs.js';
import { jobState } from '../src/domain/job-chunks.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

describe('queued sync', () => {
  let s: TestServer;
  it('queues a sync of 201 sites and runs it to completed through the job route', async () => {
    s = await startServer();
    closers.push(() => s.close());
    const sim = await preconnectedFleet(s.services, 201);
    closers.push(() => sim.close());
    const r = await s.ability('sync-sites-v1', {});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ queued: true, sites_queued: 201 });
    expect(r.body.job_id).toMatch(/^sync_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(r.body.status_url).toBe(`${s.restBase}/jobs/${r.body.job_id}`);
    const done = await until(
      () => s.rest(`/jobs/${r.body.job_id}`),
      (x) => x.body?.data?.status === 'completed',
    );
    expect(done.body.data).toMatchObject({
      type: 'sync',
      progress: 100,
      processed: 201,
      total: 201,
      succeeded: 201,
      failed: 0,
      job_timed_out: false,
    });
    const viaAbility = await s.ability('get-batch-job-status-v1', { job_id: r.body.job_id }, { method: 'GET' });
    expect(viaAbility.body).toMatchObject({ status: 'completed', succeeded: 201 });
    for (let i = 1; i <= 201; i++) expect(sim.requests(i)).toBe(1);
    expect((await s.rest('/sites/count?status=connected')).body.count).toBe(201);
  });

  it('answers 404 svc_job_not_found for an unknown job and 400 for a bad job id', async () => {
    const unknown = await s.ability('get-batch-job-status-v1', { job_id: 'sync_00000000-0000-4000-8000-000000000000' }, { method: 'GET' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('svc_job_not_found');
    const bad = await s.ability('get-batch-job-status-v1', { job_id: 'invalid_job_prefix_123' }, { method: 'GET' });
    expect(bad.status).toBe(400);
    expect((await s.rest('/jobs/nope')).status).toBe(404);
  });
});

describe('queue threshold', () => {
  it('runs exactly the threshold at once and queues one more', async () => {
    const s = await startServer({ config: { queueThreshold: '3' } });
    closers.push(() => s.close());
    const sim = await preconnectedFleet(s.services, 4);
    closers.push(() => sim.close());
    const three = await s.ability('suspend-sites-v1', { site_ids_or_domains: [1, 2, 3] });
    expect(three.body).toMatchObject({ queued: false, total_suspended: 3 });
    const four = await s.ability('check-sites-v1', { site_ids_or_domains: [1, 2, 3, 4] });
    expect(four.body).toMatchObject({ queued: true, total: 4 });
    const job = await until(
      () => s.ability('get-batch-job-status-v1', { job_id: four.body.job_id }, { method: 'GET' }),
      (x) => x.body.status === 'completed',
    );
    expect(job.body).toMatchObject({ type: 'check', succeeded: 4 });
  });
});

describe('claims', () => {
  it('works a job once even when ticks overlap', async () => {
    const s = await startServer();
    closers.push(() => s.close());
    const sim = await preconnectedFleet(s.services, 6);
    closers.push(() => sim.close());
    await s.services.jobs.stop();
    const job = await s.services.jobs.enqueue('sync', [1, 2, 3, 4, 5, 6]);
    (s.services.jobs as unknown as { stopping: boolean }).stopping = false;
    await Promise.all([s.services.jobs.tick(), s.services.jobs.tick(), s.services.jobs.tick()]);
    const done = await until(
      async () => s.services.jobs.get(job.job_id),
      (j) => j.status === 'completed',
    );
    expect(done.done).toHaveLength(6);
    expect(done.succeeded).toBe(6);
    for (let i = 1; i <= 6; i++) expect(sim.requests(i)).toBe(1);
  });
});

describe('the end of a job', () => {
  it('is announced once, after the write that ended it committed: the listener reads it ended in the store', async () => {
    const s = await startServer();
    closers.push(() => s.close());
    const sim = await preconnectedFleet(s.services, 2);
    closers.push(() => sim.close());
    const { jobs } = s.services;
    const heard: Array<{ job_id: string; status: string; stored: string }> = [];
    const listener = (j: JobState) => heard.push({ job_id: j.job_id, status: j.status, stored: jobs.get(j.job_id).status });
    jobs.finishedListeners.add(listener);
    try {
      await jobs.stop();
      const ran = await jobs.enqueue('sync', [1, 2]);
      const cancelled = await jobs.enqueue('sync', [1]);
      // A queued job cancelled ends in the cancel's write; the other is worked to its end.
      await jobs.cancel(cancelled.job_id);
      jobs.start(100);
      await until(
        async () => heard.filter((h) => h.job_id === ran.job_id),
        (h) => h.length > 0,
      );
      // Whatever was scheduled to announce meanwhile has run.
      await new Promise((r) => setImmediate(r));
      expect(heard).toEqual([
        { job_id: cancelled.job_id, status: 'failed', stored: 'failed' },
        { job_id: ran.job_id, status: 'completed', stored: 'completed' },
      ]);
    } finally {
      jobs.finishedListeners.delete(listener);
    }
  });
});

describe('restart', () => {
  it('resumes a job after SIGKILL without redoing the sites it recorded', async () => {
    // On whichever engine the lane runs (a data dir, or a fresh PostgreSQL database in the pg lane).
    const fleet = await testFleetStore();
    const services = await openServices(loadConfig({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl }, {}));
    const { token } = await services.auth.createKey('k', 'read_write');
    const sim = await preconnectedFleet(services, 40, 150);
    closers.push(() => sim.close());
    await closeServices(services);

    const env = { SITEFLEET_QUEUE_THRESHOLD: '5', SITEFLEET_CHILD_CONCURRENCY: '4' };
    const first = await serveProcess([...fleet.args, '--allow-private-sites'], env);
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const q = (await (await fetch(`${first.url}/wp-json/svc/v2/sites/sync`, { method: 'POST', headers: auth })).json()) as {
      job_id: string;
    };
    expect(q.job_id).toMatch(/^sync_/);
    await until(
      async () =>
        ((await (await fetch(`${first.url}/wp-json/svc/v2/jobs/${q.job_id}`, { headers: auth })).json()) as { data: { processed: number } })
          .data.processed,
      (n) => n >= 8,
    );
    await first.stop('SIGKILL');

    const store = await fleet.open();
    const mid = jobState(store, [...store.all<JobRecord>('jobs')][0]!);
    await store.close();
    expect(mid.status).toBe('processing');
    expect(mid.done.length).toBeLessThan(40);

    const second = await serveProcess([...fleet.args, '--allow-private-sites'], env);
    closers.push(() => second.stop());
    const end = await until(
      async () =>
        (
          (await (await fetch(`${second.url}/wp-json/svc/v2/jobs/${q.job_id}`, { headers: auth })).json()) as {
            data: { status: string; processed: number; succeeded: number };
          }
        ).data,
      (d) => d.status === 'completed',
    );
    expect(end).toMatchObject({ processed: 40, succeeded: 40 });
    const after = await fleet.open();
    const job = jobState(after, [...after.all<JobRecord>('jobs')][0]!);
    expect(new Set(job.done).size).toBe(40);
    expect(job.attempts).toBe(2);
    // Sites recorded before the kill were not contacted again; only those whose result was not yet recorded
    // were: in flight (≤ concurrency 4) or waiting for their commit (≤ 2 × concurrency).
    for (const id of mid.done) expect(sim.requests(id)).toBe(1);
    const total = Array.from({ length: 40 }, (_, i) => sim.requests(i + 1)).reduce((a, b) => a + b, 0);
    expect(total - 40).toBeLessThanOrEqual(12);
    await after.close();
  });
});

describe('the job runner stopping', () => {
  it('says nothing of a schedule hook that fails because the runner stopped and the store closed under it; one that fails before is logged', async () => {
    const s = await openServices(loadConfig({ dataDir: tempDir() }, {}));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let fail: Error | null = new Error('the feed answered 500');
    s.jobs.onTick(async () => {
      if (fail) throw fail;
      await held;
      await s.store.write(() => {});
    });
    const before = await captureLogs(() => s.jobs.tick());
    expect(before).toMatch(/job runner hook failed.*the feed answered 500/);
    fail = null;
    const logs = await captureLogs(async () => {
      const tick = s.jobs.tick();
      await s.jobs.stop();
      await closeServices(s);
      release();
      await tick;
    });
    expect(logs).not.toMatch(/job runner hook failed/);
  });
});
