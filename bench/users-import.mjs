// bench/users-import.mjs — imports a generated CSV of users spread over simulated sites through REST
// POST /users/import (multipart, streamed) and prints wall time and peak RSS. Server and child simulator run
// in this process, from the built dist/.
// Run after `npx tsc`: node bench/users-import.mjs [--rows 10000] [--sites 10] [--latency-ms 0]
import { createWriteStream, mkdtempSync, openAsBlob, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { buildRegistry } from '../dist/abilities/index.js';
import { startChildSim } from '../dist/child/simulator/server.js';
import { loadConfig } from '../dist/config.js';
import { listen } from '../dist/app/http.js';
import { closeServices, openServices } from '../dist/domain/index.js';

const { values } = parseArgs({ options: { rows: { type: 'string' }, sites: { type: 'string' }, 'latency-ms': { type: 'string' } } });
const rows = Number(values.rows ?? 10_000);
const siteCount = Number(values.sites ?? 10);
const latencyMs = Number(values['latency-ms'] ?? 0);
process.env.SITEFLEET_LOG ??= 'warn';

const dir = mkdtempSync(join(tmpdir(), 'sitefleet-bench-import-'));
const sim = await startChildSim({ sites: siteCount, latencyMs, seed: 11 });
const config = loadConfig({ host: '127.0.0.1', port: '0', dataDir: join(dir, 'data'), allowPrivateSites: true }, {});
const services = await openServices(config);
const http = await listen(services, buildRegistry(services), '127.0.0.1', 0);
const { token } = await services.auth.createKey('bench', 'read_write');
const base = `${http.url}${config.restPrefix}`;
const auth = { authorization: `Bearer ${token}` };

for (const s of sim.sites) {
  const res = await fetch(`${base}/sites/add`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ url: s.url, admin: s.admin, admin_password: s.password }),
  });
  if (res.status !== 200) throw new Error(`add ${s.url}: ${res.status} ${await res.text()}`);
}

// The CSV is written to a file and uploaded from it, so that the client side holds no copy of it in memory.
const csvPath = join(dir, 'users.csv');
const out = createWriteStream(csvPath);
out.write('username,email,first_name,last_name,user_url,password,send_password,role,select_sites,select_groups\r\n');
for (let i = 0; i < rows; i++) {
  const site = sim.sites[i % siteCount];
  out.write(
    `bench${i},bench${i}@example.com,First ${i},"Last, ${i}",https://example.com/u/${i},Pw-${i}-secret,false,subscriber,${site.url},\r\n`,
  );
}
out.end();
await finished(out);

global.gc?.();
const baseline = process.memoryUsage();
let peakRss = baseline.rss;
let peakHeap = baseline.heapUsed;
const sampler = setInterval(() => {
  const m = process.memoryUsage();
  peakRss = Math.max(peakRss, m.rss);
  peakHeap = Math.max(peakHeap, m.heapUsed);
}, 10);

const started = performance.now();
const form = new FormData();
form.append('csv_file', await openAsBlob(csvPath, { type: 'text/csv' }), 'users.csv');
const res = await fetch(`${base}/users/import`, { method: 'POST', headers: auth, body: form });
const body = await res.json();
const ms = Math.round(performance.now() - started);
clearInterval(sampler);

const created = sim.sites.reduce((n, s) => n + sim.state(s.index).users.filter((u) => u.login.startsWith('bench')).length, 0);
const mb = (b) => Math.round((b / 1024 / 1024) * 10) / 10;
console.log(
  JSON.stringify({
    rows,
    sites: siteCount,
    latency_ms: latencyMs,
    csv_mb: mb(statSync(csvPath).size),
    status: res.status,
    total: body.total,
    success_count: body.success_count,
    failed_count: body.failed_count,
    users_on_children: created,
    wall_ms: ms,
    rows_per_s: Math.round(rows / (ms / 1000)),
    rss_before_mb: mb(baseline.rss),
    rss_peak_mb: mb(peakRss),
    rss_growth_mb: mb(peakRss - baseline.rss),
    heap_before_mb: mb(baseline.heapUsed),
    heap_peak_mb: mb(peakHeap),
    max_rss_process_mb: mb(process.resourceUsage().maxRSS * 1024),
    child_calls_peak_in_flight: sim.peakInFlight(),
  }),
);
if (body.failed_count) console.error(JSON.stringify(body.failed_users.slice(0, 5)));

await http.close();
await closeServices(services);
await sim.close();
rmSync(dir, { recursive: true, force: true });
