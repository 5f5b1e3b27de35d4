// bench/lib/sim-proc.mjs — the child simulator in a process of its own (forked by bench/lib/fleet.mjs), so that a fleet
// of 100,000 simulated sites neither shares the bench's heap nor its event loop. It starts `startChildSim` with every
// site preconnected to the key and dashboard URL it is given, builds every simulated WordPress before the timed run (a
// real site exists before it is synced), sends { baseUrl } to the parent, and answers { stats } with its own memory and
// the simulator's peak of requests in flight. It exits when the parent disconnects or sends { stop }.
import { startChildSim } from '../../dist/child/simulator/server.js';

const { sites, publicKeyPem, server, latencyMs } = JSON.parse(process.env.SITEFLEET_BENCH_SIM);
const sim = await startChildSim({ sites, latencyMs, preconnect: { publicKeyPem, server } });
const t = performance.now();
for (let i = 1; i <= sites; i++) sim.state(i);
const mem = () => ({
  rss_mb: Math.round(process.memoryUsage().rss / 1048576),
  heap_mb: Math.round(process.memoryUsage().heapUsed / 1048576),
});
process.send({ baseUrl: sim.baseUrl, build_ms: Math.round(performance.now() - t), ...mem() });
process.on('message', async (m) => {
  if (m === 'stats') process.send({ stats: { ...mem(), peak_in_flight: sim.peakInFlight() } });
  if (m === 'stop') {
    await sim.close();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
