// bench/child-sync.mjs — syncs every simulated site once through one connector and prints the wall time.
// Run after `npx tsc`: node bench/child-sync.mjs [--sites 1000] [--latency-ms 50] [--concurrency 32]
import { parseArgs } from 'node:util';
import { ChildConnector } from '../dist/child/connector.js';
import { newKeyPair } from '../dist/child/keys.js';
import { startChildSim } from '../dist/child/simulator/server.js';

const { values } = parseArgs({ options: { sites: { type: 'string' }, 'latency-ms': { type: 'string' }, concurrency: { type: 'string' } } });
const sites = Number(values.sites ?? 1000);
const latencyMs = Number(values['latency-ms'] ?? 50);
const concurrency = Number(values.concurrency ?? 32);
const serverUrl = 'https://bench.sitefleet.test/wp-admin/';

// Every site starts registered to one key pair: 1,000 RSA key generations would dominate the run otherwise.
const pair = await newKeyPair();
const sim = await startChildSim({ sites, latencyMs, preconnect: { publicKeyPem: pair.publicKeyPem, server: serverUrl } });
const connector = new ChildConnector({ serverUrl, concurrency, allowPrivateAddresses: true });

async function syncAll() {
  const started = performance.now();
  const elu = performance.eventLoopUtilization();
  const cpu = process.cpuUsage();
  const results = await Promise.allSettled(
    sim.sites.map((s) => connector.sync({ url: s.url, admin: s.admin, privateKeyPem: pair.privateKeyPem, signAlgo: 7, sslVerify: true })),
  );
  return {
    ms: Math.round(performance.now() - started),
    // Share of the wall time the (single) event loop was busy: near 1 means CPU-bound, not latency-bound.
    busy: Number(performance.eventLoopUtilization(elu).utilization.toFixed(2)),
    cpu_ms: Math.round(Object.values(process.cpuUsage(cpu)).reduce((a, b) => a + b, 0) / 1000),
    failures: results.filter((r) => r.status === 'rejected').length,
  };
}

// First pass: each simulated site builds its WordPress state and its stats reply. Second pass: replies come from cache.
const cold = await syncAll();
const warm = await syncAll();
console.log(
  JSON.stringify({
    sites,
    latency_ms: latencyMs,
    concurrency,
    cold_ms: cold.ms,
    warm_ms: warm.ms,
    cold_loop_busy: cold.busy,
    warm_loop_busy: warm.busy,
    cold_cpu_ms: cold.cpu_ms,
    warm_cpu_ms: warm.cpu_ms,
    failures: cold.failures + warm.failures,
    peak_in_flight: sim.peakInFlight(),
  }),
);
await connector.close();
await sim.close();
