// SIGTERM: stop accepting, let requests in flight finish, flush, leave jobs resumable, exit 0.
import { connect } from 'node:net';
import { once } from 'node:events';
import { afterAll, describe, expect, it } from 'vitest';
import { listen } from '../src/app/http.js';
import { newKeyPair } from '../src/child/keys.js';
import { startChildSim, type ChildSim } from '../src/child/simulator/server.js';
import { loadConfig } from '../src/config.js';
import { closeServices, openServices } from '../src/domain/index.js';
import type { JobRecord } from '../src/store/records.js';
import { Store } from '../src/store/store.js';
import { serveProcess } from './support/process.js';
import { seedSites, startServer, tempDir } from './support/server.js';
import { until } from './support/wait.js';
import { jobState } from '../src/domain/job-chunks.js';

let sim: ChildSim;
afterAll(async () => {
  await sim?.close();
});

async function fleetDir(n: number, latencyMs: number): Promise<{ dir: string; token: string }> {
  const dir = tempDir();
  const services = await openServices(loadConfig({ dataDir: dir }, {}));
  const { token } = await services.auth.createKey('k', 'read_write');
  const keys = await newKeyPair();
  sim = await startChildSim({
    sites: n,
    latencyMs,
    preconnect: { publicKeyPem: keys.publicKeyPem, server: await services.settings.installationUrl() },
  });
  const recs = await seedSites(services, n, (i) => ({ url: sim.sites[i]!.url, admin_username: 'admin' }));
  await services.store.write((tx) => {
    for (const r of recs) tx.putBlob('secrets', r.id, { private_key_pem: keys.privateKeyPem, http_pass: null, regverify: null });
  });
  await closeServices(services);
  return { dir, token };
}

describe('graceful shutdown', () => {
  it('finishes the request in flight, refuses new ones, keeps a running job resumable and exits 0', async () => {
    const { dir, token } = await fleetDir(12, 600);
    const p = await serveProcess(['--data-dir', dir, '--allow-private-sites'], {
      SITEFLEET_QUEUE_THRESHOLD: '3',
      SITEFLEET_CHILD_CONCURRENCY: '2',
    });
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const job = (await (
      await fetch(`${p.url}/wp-json/svc/v2/sites/sync`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ include: '4,5,6,7,8,9,10,11,12' }),
      })
    ).json()) as { job_id: string };
    expect(job.job_id).toMatch(/^sync_/);
    const inFlight = fetch(`${p.url}/wp-json/svc/v2/sites/1/sync`, { method: 'POST', headers });
    // SIGTERM once the sync of site 1 and the job's first sites are at the children (600 ms each), not after 200 ms.
    await until(
      () => [sim.requests(1), [4, 5, 6, 7, 8, 9, 10, 11, 12].reduce((n, i) => n + sim.requests(i), 0)],
      ([one, job]) => one! > 0 && job! > 0,
      10_000,
    );
    p.child.kill('SIGTERM');
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { status: string } }).data.status).toBe('connected');
    expect(await p.exit).toBe(0);
    await expect(fetch(`${p.url}/wp-json/svc/v2/sites`, { headers })).rejects.toThrow();
    const store = await Store.open(dir);
    const j = jobState(store, [...store.all<JobRecord>('jobs')][0]!);
    await store.close();
    expect(j.status).toBe('processing');
    expect(j.owner).toBeNull();
    expect(j.done.length).toBeLessThan(9);
    const again = await serveProcess(['--data-dir', dir, '--allow-private-sites'], { SITEFLEET_QUEUE_THRESHOLD: '3' });
    try {
      const status = await until(
        async () =>
          ((await (await fetch(`${again.url}/wp-json/svc/v2/jobs/${job.job_id}`, { headers })).json()) as { data: { status: string } }).data
            .status,
        (st) => st === 'completed',
        15_000,
      );
      expect(status).toBe('completed');
    } finally {
      await again.stop();
    }
  });
});

describe('closing the HTTP server', () => {
  it('cuts a connection that never sent a request at once, instead of waiting the whole grace period for it', async () => {
    const s = await startServer();
    try {
      const h = await listen(s.services, s.registry, '127.0.0.1', 0, { console: false });
      // A spare connection, as browsers and undici open ahead of a request: Node counts it busy, never idle.
      const spare = connect(Number(new URL(h.url).port), '127.0.0.1');
      await once(spare, 'connect');
      const ended = once(spare, 'close');
      await until(
        () => new Promise<number>((r) => h.server.getConnections((_e, n) => r(n))),
        (n) => n === 1,
        5_000,
      );
      // A grace period longer than the test's timeout: close() resolves only if it did not wait for it.
      let closed = false;
      const closing = h.close(10 * 60_000).then(() => (closed = true));
      await ended;
      await closing;
      expect(closed).toBe(true);
      expect(spare.bytesRead).toBe(0);
    } finally {
      await s.close();
    }
  });
});
