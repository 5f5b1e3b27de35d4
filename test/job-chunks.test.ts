// A job's progress lives in chunks of JOB_CHUNK sites (issue 34): recording a site rewrites its chunk, never the job's
// site list, so a job over a whole large fleet writes a bounded amount per site. Jobs made before chunks still finish.
import { afterAll, describe, expect, it } from 'vitest';
import { JOB_CHUNK, addItems, countItems, jobState, recordSite } from '../src/domain/job-chunks.js';
import { MAX_JOB_ERRORS_VIEW } from '../src/domain/jobs.js';
import type { JobChunkRecord, JobRecord } from '../src/store/records.js';
import { preconnectedFleet } from './support/fleet.js';
import { startServer, type TestServer } from './support/server.js';
import { jobEnded, until } from './support/wait.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

describe('job chunks', () => {
  it('keeps a new job in one chunk per JOB_CHUNK sites: exactly the bound is one chunk, one site more is two', async () => {
    const s = await startServer();
    closers.push(() => s.close());
    await s.services.jobs.stop();
    const at = await s.services.jobs.enqueue(
      'sync',
      Array.from({ length: JOB_CHUNK }, (_, i) => i + 1),
    );
    const past = await s.services.jobs.enqueue(
      'sync',
      Array.from({ length: JOB_CHUNK + 1 }, (_, i) => i + 1),
    );
    expect(at.chunks).toHaveLength(1);
    expect(past.chunks).toHaveLength(2);
    const [first, second] = past.chunks!.map((id) => s.services.store.get<JobChunkRecord>('job_chunks', id)!);
    expect([first!.from, second!.from]).toEqual([0, JOB_CHUNK]);
    // The job record carries no progress of its own: it is in the chunks.
    expect(past).not.toHaveProperty('done');
    expect(past).not.toHaveProperty('succeeded');
  });

  it('records a site by rewriting its chunk only: the job record and the other chunks stay as they were', async () => {
    const s = await startServer();
    closers.push(() => s.close());
    await s.services.jobs.stop();
    const n = 2 * JOB_CHUNK + 7;
    const job = await s.services.jobs.enqueue(
      'sync',
      Array.from({ length: n }, (_, i) => i + 1),
    );
    const store = s.services.store;
    for (const siteId of [1, JOB_CHUNK + 1, n]) {
      const jobBefore = store.get<JobRecord>('jobs', job.id);
      const chunksBefore = job.chunks!.map((id) => store.get<JobChunkRecord>('job_chunks', id));
      const recorded = await store.write((tx) => recordSite(tx, tx.get<JobRecord>('jobs', job.id)!, siteId, null));
      expect(recorded).toBe(true);
      expect(store.get<JobRecord>('jobs', job.id)).toBe(jobBefore);
      const changed = job.chunks!.filter((id, i) => store.get<JobChunkRecord>('job_chunks', id) !== chunksBefore[i]);
      expect(changed).toEqual([job.chunks![Math.floor((siteId - 1) / JOB_CHUNK)]]);
    }
    // A site recorded already is not counted again; a site not in the job is refused.
    expect(await store.write((tx) => recordSite(tx, tx.get<JobRecord>('jobs', job.id)!, 1, null))).toBe(false);
    await expect(store.write((tx) => recordSite(tx, tx.get<JobRecord>('jobs', job.id)!, n + 1, null))).rejects.toThrow(/not in job/);
    const state = s.services.jobs.get(job.job_id);
    expect(state.done).toEqual([1, JOB_CHUNK + 1, n]);
    expect(state.succeeded).toBe(3);
  });

  it('runs a job over two chunks to completed, every site once, with its errors gathered', async () => {
    const s: TestServer = await startServer();
    closers.push(() => s.close());
    const n = JOB_CHUNK + 30;
    const sim = await preconnectedFleet(s.services, n);
    closers.push(() => sim.close());
    // Two sites of the second chunk are down: their errors come back with the job.
    sim.setFault(JOB_CHUNK + 2, { type: 'http500' });
    sim.setFault(JOB_CHUNK + 9, { type: 'http500' });
    const r = await s.ability('sync-sites-v1', {});
    expect(r.body).toMatchObject({ queued: true, sites_queued: n });
    const ended = await jobEnded(s.services.jobs, r.body.job_id);
    expect(ended.status).toBe('completed');
    expect(new Set(ended.done).size).toBe(n);
    expect(ended.succeeded).toBe(n - 2);
    expect(ended.errors.map((e) => e.site_id).sort((a, b) => a - b)).toEqual([JOB_CHUNK + 2, JOB_CHUNK + 9]);
    // Every site that answers is contacted once (the two failing ones are retried by the connector).
    const down = new Set([JOB_CHUNK + 2, JOB_CHUNK + 9]);
    const notOnce = Array.from({ length: n }, (_, i) => i + 1).filter((i) => !down.has(i) && sim.requests(i) !== 1);
    expect(notOnce).toEqual([]);
    const view = await s.rest(`/jobs/${r.body.job_id}`);
    expect(view.body.data).toMatchObject({ processed: n, total: n, succeeded: n - 2, failed: 2, progress: 100 });
  });

  it('finishes a job made before chunks (its progress on its own record) without redoing what it recorded', async () => {
    const s = await startServer();
    closers.push(() => s.close());
    const sim = await preconnectedFleet(s.services, 6);
    closers.push(() => sim.close());
    await s.services.jobs.stop();
    const old = await s.services.store.write((tx) =>
      tx.insert<JobRecord>('jobs', {
        job_id: 'sync_00000000-0000-4000-8000-000000000001',
        type: 'sync',
        status: 'processing',
        sites: [1, 2, 3, 4, 5, 6],
        done: [1, 2],
        succeeded: 1,
        errors: [{ site_id: 2, code: 'svc_child_unreachable', message: 'down then' }],
        created_at: new Date().toISOString(),
        started_at: new Date().toISOString(),
        completed_at: null,
        owner: null,
        lease_until: 0,
        attempts: 1,
        failure: null,
      }),
    );
    (s.services.jobs as unknown as { stopping: boolean }).stopping = false;
    await s.services.jobs.tick();
    const done = await until(
      async () => s.services.jobs.get(old.job_id),
      (j) => j.status === 'completed',
    );
    expect(done.done).toEqual([1, 2, ...done.done.slice(2)]);
    expect(new Set(done.done)).toEqual(new Set([1, 2, 3, 4, 5, 6]));
    expect(done.succeeded).toBe(5);
    expect(done.errors.map((e) => e.message)).toEqual(['down then']);
    expect([1, 2].map((i) => sim.requests(i))).toEqual([0, 0]);
    expect([3, 4, 5, 6].map((i) => sim.requests(i))).toEqual([1, 1, 1, 1]);
    expect(jobState(s.services.store, s.services.store.get<JobRecord>('jobs', old.id)!).done).toHaveLength(6);
  });

  it('removes an ended job with its chunks once it has been kept a day, and keeps a younger one', async () => {
    const s = await startServer();
    closers.push(() => s.close());
    await s.services.jobs.stop();
    const store = s.services.store;
    const sites = Array.from({ length: JOB_CHUNK + 1 }, (_, i) => i + 1);
    const old = await s.services.jobs.enqueue('sync', sites);
    const young = await s.services.jobs.enqueue('sync', sites);
    const ended = (hoursAgo: number) => new Date(Date.now() - hoursAgo * 3600_000).toISOString();
    await store.write((tx) => {
      tx.put<JobRecord>('jobs', { ...tx.get<JobRecord>('jobs', old.id)!, status: 'completed', completed_at: ended(25) });
      tx.put<JobRecord>('jobs', { ...tx.get<JobRecord>('jobs', young.id)!, status: 'completed', completed_at: ended(23) });
    });
    (s.services.jobs as unknown as { stopping: boolean }).stopping = false;
    await s.services.jobs.tick();
    expect(store.get('jobs', old.id)).toBeUndefined();
    expect(old.chunks!.map((id) => store.get('job_chunks', id))).toEqual([undefined, undefined]);
    expect(young.chunks!.map((id) => store.get<JobChunkRecord>('job_chunks', id)?.job)).toEqual([young.id, young.id]);
  });

  it('shows at most MAX_JOB_ERRORS_VIEW errors in a job status and counts them all', async () => {
    const s = await startServer();
    closers.push(() => s.close());
    await s.services.jobs.stop();
    const n = MAX_JOB_ERRORS_VIEW + 1;
    const job = await s.services.jobs.enqueue(
      'sync',
      Array.from({ length: n }, (_, i) => i + 1),
    );
    await s.services.store.write((tx) => {
      for (let i = 1; i <= n; i++)
        recordSite(tx, tx.get<JobRecord>('jobs', job.id)!, i, { site_id: i, code: 'svc_x', message: `site ${i}` });
    });
    const view = await s.rest(`/jobs/${job.job_id}`);
    expect(view.body.data).toMatchObject({ processed: n, failed: n, succeeded: 0 });
    expect(view.body.data.errors).toHaveLength(MAX_JOB_ERRORS_VIEW);
    expect(view.body.data.errors[0]).toEqual({ site_id: 1, code: 'svc_x', message: 'site 1' });
    expect(view.body.data).not.toHaveProperty('items');
  });

  it('counts item rows (a policy stop rule) as a gathering of the whole job does, recounting only the chunks written since', async () => {
    const s = await startServer();
    closers.push(() => s.close());
    await s.services.jobs.stop();
    const n = 3 * JOB_CHUNK;
    const job = await s.services.jobs.enqueue(
      'update',
      Array.from({ length: n }, (_, i) => i + 1),
    );
    const store = s.services.store;
    let asked = 0;
    const failed = (row: unknown) => (asked++, (row as { status: string }).status === 'failed');
    const rows = (site: number) => [
      { site_id: site, status: site % 3 ? 'updated' : 'failed' },
      { site_id: site, status: 'failed' },
    ];
    const add = (site: number) =>
      store.write((tx) => {
        addItems(tx, tx.get<JobRecord>('jobs', job.id)!, site, rows(site));
        recordSite(tx, tx.get<JobRecord>('jobs', job.id)!, site, null);
      });
    for (const site of [1, 2, 3, JOB_CHUNK + 3, 2 * JOB_CHUNK + 1]) await add(site);
    const gathered = () =>
      jobState(store, store.get<JobRecord>('jobs', job.id)!).items.filter((r) => (r as { status: string }).status === 'failed').length;
    expect(countItems(store, store.get<JobRecord>('jobs', job.id)!, failed)).toBe(gathered());
    expect(gathered()).toBe(5 + 1); // every site's second row, and site 3's first
    // One more site in the last chunk: only that chunk's rows are looked at again.
    asked = 0;
    await add(2 * JOB_CHUNK + 3);
    expect(countItems(store, store.get<JobRecord>('jobs', job.id)!, failed)).toBe(gathered());
    expect(asked).toBe(2 * 2);
    asked = 0;
    expect(countItems(store, store.get<JobRecord>('jobs', job.id)!, failed)).toBe(7);
    expect(asked).toBe(0);
  });
});
