// bench/installs.mjs — installs one plugin from the directory on every simulated site through install-plugins-v1
// (the registry, as every door calls it) and prints wall time, per-site rate, CPU and peak requests in flight:
// once inline (queue threshold raised) and once as a job (the default threshold, 200). Server, store and child
// simulator run in this process, from the built dist/.
// Run after `npx tsc`: node bench/installs.mjs [--sites 1000] [--latency-ms 50]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildRegistry } from '../dist/abilities/index.js';
import { loadConfig } from '../dist/config.js';
import { closeServices, openServices } from '../dist/domain/index.js';
import { seedPreconnected } from './lib/seed.mjs';

const { values } = parseArgs({ options: { sites: { type: 'string' }, 'latency-ms': { type: 'string' } } });
const n = Number(values.sites ?? 1000);
const latencyMs = Number(values['latency-ms'] ?? 50);
process.env.SITEFLEET_LOG ??= 'warn';

const dir = mkdtempSync(join(tmpdir(), 'sitefleet-bench-install-'));
const dataDir = join(dir, 'data');
const { sim } = await seedPreconnected(dataDir, n, latencyMs);
const principal = { kind: 'local', name: 'bench' };

async function run(queueThreshold, input) {
  const config = loadConfig(
    { dataDir, allowPrivateSites: true, packageSource: `${sim.baseUrl}/__sim/dir/`, queueThreshold: String(queueThreshold) },
    {},
  );
  const services = await openServices(config);
  const registry = buildRegistry(services);
  try {
    const ids = services.sites.filter({}, () => new Set()).map((s) => s.id);
    const started = performance.now();
    const cpu = process.cpuUsage();
    const r = await registry.run(registry.get('install-plugins-v1'), { site_ids_or_domains: ids, ...input }, { principal, coerce: false });
    let installed = r.summary.installed;
    let failed = r.summary.failed;
    if (r.queued) {
      // The job runs in this process's runner: poll the store until it is done.
      for (;;) {
        const job = services.jobs.get(r.job_id);
        if (job.status === 'completed' || job.status === 'failed') {
          installed = job.succeeded;
          failed = job.errors.length;
          break;
        }
        await new Promise((res) => setTimeout(res, 50));
      }
    }
    const ms = performance.now() - started;
    return {
      mode: r.queued ? 'job' : 'inline',
      sites: ids.length,
      installed,
      failed,
      ms: Math.round(ms),
      sites_per_s: Math.round((ids.length / ms) * 1000),
      cpu_ms: Math.round(Object.values(process.cpuUsage(cpu)).reduce((a, b) => a + b, 0) / 1000),
    };
  } finally {
    await closeServices(services);
  }
}

const rows = [];
rows.push(await run(1_000_000, { slug: 'sim-delta', version: '1.0.0' }));
rows.push(await run(200, { slug: 'sim-delta', version: '1.1.0', overwrite: true }));
for (const row of rows) console.log(JSON.stringify({ ...row, latency_ms: latencyMs, peak_in_flight: sim.peakInFlight() }));
await sim.close();
rmSync(dir, { recursive: true, force: true });
