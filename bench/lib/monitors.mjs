// bench/lib/monitors.mjs — uptime monitoring at scale (issue 22): `sites` simulated sites monitored every `interval`
// seconds by one `sitefleet serve`. Measures serve's CPU share and memory, the checks done, and lateness as the
// simulator saw it (between two checks of a site, more than two intervals means a check was late by more than one).
// The sites start with a last check spread over the interval before the run (a fleet monitored for a while), so the
// run measures the steady state.
import { startChildSim } from '../../dist/child/simulator/server.js';
import { removeDir, startServe, tempDir } from './proc.mjs';
import { withStore } from './seed.mjs';
import { cpuAccount, procMem, round } from './sys.mjs';

export async function monitorsRound(
  { sites: N = 5000, interval: INTERVAL = 60, seconds: SECONDS = 150, latency: LATENCY = 20 } = {},
  log = () => {},
) {
  const sim = await startChildSim({ sites: N, latencyMs: LATENCY });
  const dataDir = tempDir('monitors');
  const t0 = Math.floor(Date.now() / 1000);
  await withStore(dataDir, async (s) => {
    for (let start = 0; start < N; start += 2000) {
      const end = Math.min(N, start + 2000);
      await s.store.write((tx) => {
        for (let i = start; i < end; i++) {
          const site = s.sites.insert(tx, { url: sim.sites[i].url, name: `Sim ${i + 1}`, admin_username: 'admin' });
          // Last checked at some point of the interval before now: the run starts in the steady state.
          const last = t0 - Math.floor((i * INTERVAL) / N);
          tx.put('monitors', {
            id: site.id,
            settings: {},
            status: 'up',
            last_check: [last, 1, 25, 200, -1],
            down_since: null,
            open_incident: null,
            recent: [],
            hours: [],
            days: [],
          });
        }
      });
    }
    await s.store.write((tx) =>
      tx.put('monitors', {
        id: 0,
        settings: { interval_s: INTERVAL },
        status: 'pending',
        last_check: null,
        down_since: null,
        open_incident: null,
        recent: [],
        hours: [],
        days: [],
      }),
    );
  });
  log(`${N} sites seeded; serve monitors them every ${INTERVAL} s for ${SECONDS} s (simulated latency ${LATENCY} ms)`);

  const serve = await startServe(dataDir, { args: ['--allow-private-sites'] });
  const from = Date.now();
  await new Promise((r) => setTimeout(r, 5_000)); // start-up (store load, lease claims) is not the steady state
  const cpu = cpuAccount([serve.pid]);
  let peakRss = 0;
  const memTimer = setInterval(() => {
    peakRss = Math.max(peakRss, procMem(serve.pid)?.rss_mb ?? 0);
  }, 1000);
  await new Promise((r) => setTimeout(r, (SECONDS - 5) * 1000));
  clearInterval(memTimer);
  const usage = cpu.stop();
  const mem = procMem(serve.pid);
  const to = Date.now();
  await serve.stop();

  let checks = 0;
  let maxGap = 0;
  let lateOverInterval = 0;
  let unchecked = 0;
  let firstWait = 0;
  for (let i = 1; i <= N; i++) {
    const times = sim.requestTimes(i).filter((t) => t >= from && t <= to);
    checks += times.length;
    if (!times.length) {
      unchecked++;
      continue;
    }
    // The first check of the run is due at (seeded last check + interval): late if more than one interval after it.
    const due = (t0 - Math.floor(((i - 1) * INTERVAL) / N) + 1 + INTERVAL) * 1000;
    firstWait = Math.max(firstWait, times[0] - due);
    if (times[0] - due > INTERVAL * 1000) lateOverInterval++;
    for (let k = 1; k < times.length; k++) {
      const gap = times[k] - times[k - 1];
      maxGap = Math.max(maxGap, gap);
      if (gap > 2 * INTERVAL * 1000) lateOverInterval++;
    }
  }
  await sim.close();
  removeDir(dataDir);

  const result = {
    sites: N,
    interval_s: INTERVAL,
    run_s: round((to - from) / 1000, 1),
    simulated_latency_ms: LATENCY,
    checks,
    checks_per_s: round(checks / ((to - from) / 1000), 1),
    expected_checks_per_s: round(N / INTERVAL, 1),
    serve_cpu_cores: usage.measured_cores[0],
    serve_cpu_percent_of_one_core: round(usage.measured_cores[0] * 100, 1),
    serve_cpu_ms_per_check: round((usage.measured_cpu_s[0] * 1000) / Math.max(1, checks), 2),
    bench_and_simulator_cores: usage.bench_cores,
    others_cores: usage.others_cores,
    machine_cores: usage.machine_cores,
    serve_rss_mb: mem?.rss_mb,
    serve_peak_rss_mb: round(peakRss, 1),
    max_gap_between_checks_s: round(maxGap / 1000, 1),
    max_first_check_late_ms: firstWait,
    checks_late_by_more_than_one_interval: lateOverInterval,
    sites_never_checked: unchecked,
    note: 'shared machine: CPU figures are noisy (others_cores is the rest of the machine over the run)',
  };
  return result;
}
