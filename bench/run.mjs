// bench/run.mjs — the sitefleet benchmark suite (issue 7). `npm run bench` builds, then runs this.
//   npm run bench                 full: fleets of 100 / 1,000 / 5,000 / 20,000, 10 s per load run
//   npm run bench -- --quick      100 and 5,000 (+ cold start and domain lookup at 20,000), short runs: < 2 min
//   node bench/run.mjs --sizes 100,1000 --only fleet,sync    (debugging; groups: calibrate, fleet, 20k, mcp, onboard, sync, rss, attack, updates,
//                                                            safe-updates, monitors, monitor-bytes, job-record, pg)
// Prints one table and writes bench/results.json. Never fails on timing: figures are printed, not asserted.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { calibrate } from './lib/calibrate.mjs';
import { cleanupAll, snapshotDist } from './lib/proc.mjs';
import { call, fleetRound, rssAfterSync, syncAndCheck, underAttack } from './lib/scenarios.mjs';
import { monitorsRound } from './lib/monitors.mjs';
import { monitorBytes } from './lib/monitor-bytes.mjs';
import { jobRecord } from './lib/job-record.mjs';
import { onboardBench } from './lib/onboard.mjs';
import { mcpHttpVsBare } from './lib/mcp-plain.mjs';
import { machine, runAccount } from './lib/sys.mjs';
import { listUpdatesBench, runUpdatesBench } from './lib/updates.mjs';
import { historyBench } from './lib/history.mjs';
import { nearTheLimit, renderTable, targets } from './lib/table.mjs';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    sizes: { type: 'string' },
    skip: { type: 'string' },
    only: { type: 'string' },
    out: { type: 'string' },
  },
});
const quick = values.quick === true;
const sizes = values.sizes ? values.sizes.split(',').map(Number) : quick ? [100, 5000] : [100, 1000, 5000, 20000];
const skipped = new Set((values.skip ?? '').split(',').filter(Boolean));
const only = values.only ? new Set(values.only.split(',')) : null;
const run = (group) => !skipped.has(group) && (!only || only.has(group));
const outFile = values.out ?? fileURLToPath(new URL('./results.json', import.meta.url));
const d = quick
  ? {
      calibrateSeconds: 1,
      fsyncSeconds: 1,
      readSeconds: 2,
      warmupSeconds: 1,
      mcpSeconds: 2,
      writeSeconds: 2,
      writersSeconds: 3,
      maxSequential: 5_000,
      jobTimeoutMs: 60_000,
      rssJobTimeoutMs: 90_000,
    }
  : {
      calibrateSeconds: 5,
      fsyncSeconds: 3,
      readSeconds: 10,
      warmupSeconds: 2,
      mcpSeconds: 5,
      writeSeconds: 5,
      writersSeconds: 10,
      maxSequential: 20_000,
      jobTimeoutMs: 120_000,
      rssJobTimeoutMs: 300_000,
    };

const started = performance.now();
const log = (m) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(1).padStart(5)} s] ${m}\n`);
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => {
    cleanupAll();
    process.exit(130);
  });
process.on('exit', cleanupAll);

// The first undici request of a process loads code lazily: pay that before anything is timed.
{
  const srv = createServer((_q, r) => r.end('{}'));
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  await call(`http://127.0.0.1:${srv.address().port}`, 'x', 'GET', '/');
  await new Promise((r) => srv.close(r));
}

snapshotDist();
const git = (args) => {
  try {
    return execFileSync('git', args, { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
};
const results = {
  suite: 'sitefleet bench (issue 7)',
  mode: quick ? 'quick' : 'full',
  date: new Date().toISOString(),
  machine: machine(),
  // Read-only git queries: which code was measured.
  code: {
    commit: git(['rev-parse', '--short', 'HEAD']),
    uncommitted_files: (git(['--no-optional-locks', 'status', '--porcelain', '--', 'src']) ?? '').split('\n').filter(Boolean).length,
  },
  durations: d,
  sizes,
  rounds: {},
  errors: [],
};
const whole = runAccount();

async function step(name, fn) {
  try {
    return await fn();
  } catch (e) {
    log(`  ${name} FAILED: ${e.stack ?? e}`);
    results.errors.push({ scenario: name, error: String(e.message ?? e) });
    return null;
  }
}

if (run('calibrate')) {
  log('calibration: this machine without sitefleet');
  results.calibration = await step('calibration', () => calibrate(d, log));
}
for (const n of run('fleet') ? sizes : []) {
  log(`fleet of ${n.toLocaleString('en')} sites`);
  results.rounds[n] = await step(`fleet ${n}`, () => fleetRound(n, d, log));
}
if (quick && !sizes.includes(20000) && run('20k')) {
  // The quick mode still measures the two figures whose target is at 20,000 sites.
  log('fleet of 20,000 sites (cold start and domain lookup only)');
  results.rounds[20000] = await step('fleet 20000', () => fleetRound(20000, d, log, ['get_domain']));
}
if (run('mcp')) {
  log('MCP HTTP tools/call at 1,000 sites, side by side with a bare node:http server sending the same bytes (issue 33)');
  results.mcp_http_vs_bare = await step('mcp http vs bare', () => mcpHttpVsBare(1000, d, log));
}
if (run('sync')) {
  log('sync and check of 1,000 simulated sites, 50 ms child latency');
  results.sync_check = await step('sync/check 1000', () => syncAndCheck(1000, 50, d, log));
}
if (run('onboard')) {
  log('onboarding: register 1,000 simulated sites, 100 per batch request (issue 19)');
  results.onboard = await step('onboard 1000', () => onboardBench({ sites: 1000, perRequest: 100 }, log));
}
if (run('rss')) {
  log('RSS after a full sync of 5,000 simulated sites');
  results.rss = await step('rss 5000', () => rssAfterSync(5000, 0, d, log));
}
if (run('updates')) {
  log('updates (issue 15): list-updates-v1 over 5,000 synced sites; run-updates-v1 over 1,000 simulated sites, 50 ms latency');
  results.updates = {
    list: await step('list-updates 5000', () => listUpdatesBench(5000, d, log)),
    run: await step('run-updates 1000', () => runUpdatesBench(1000, 50, d, log)),
  };
}
// Safe updates (issue 28): update-all-v1 over 1,000 sites × 3 items at 50 ms, safe against safe: false (target ≤ 2×);
// one site's update history over 100,000 entries (target ≤ 20 ms p50). `--only safe-updates` runs just these.
if (run('safe-updates')) {
  log('safe updates (issue 28): update-all-v1 over 1,000 simulated sites × 3 plugin updates, 50 ms latency; update history');
  const plain3 = await step('update-all 1000×3 safe:false', () =>
    runUpdatesBench(1000, 50, d, log, { items: 3, ability: 'update-all-v1' }),
  );
  const safe3 = await step('update-all 1000×3 safe', () =>
    runUpdatesBench(1000, 50, d, log, { items: 3, safe: true, ability: 'update-all-v1' }),
  );
  results.safe_updates = {
    plain: plain3,
    safe: safe3,
    ratio: plain3?.seconds ? Math.round((100 * safe3?.seconds) / plain3.seconds) / 100 : null,
    history: await step('history 100000', () => historyBench({ entries: 100_000, sites: 1_000 }, d, log)),
  };
  log(`  safe / safe:false: ${results.safe_updates.ratio}× (target ≤ 2×)`);
}

// 5,000 monitored sites at a 60 s interval (issue 22): two and a half intervals, so not in --quick unless asked.
if (run('monitors') && (!quick || only?.has('monitors'))) {
  log('uptime monitoring of 5,000 simulated sites at a 60 s interval (150 s)');
  results.monitors = await step('monitors 5000', () => monitorsRound({ sites: 5000, interval: 60, seconds: 150, latency: 20 }, log));
}
// What the monitors' history costs the disk (issue 34): bytes written to the data dir per check beside the bytes of the
// heartbeat itself, over 20 intervals on a moved clock (no waiting), compactions included.
if (run('monitor-bytes')) {
  const mb = quick ? { sites: 1000, rounds: 20 } : { sites: 5000, rounds: 20 };
  log(`monitor history: bytes written per check, ${mb.sites} sites with a month of history, ${mb.rounds} intervals of 60 s (issue 34)`);
  results.monitor_bytes = await step('monitor bytes', () => monitorBytes(mb, log));
}
// Recording a job's sites as the job grows (issue 34): per-site cost of a 100,000-site job vs a 1,000-site one.
if (run('job-record')) {
  const jr = quick ? { sites: 20_000, capS: 20 } : { sites: 100_000, capS: 60 };
  log(`job recording: every site of a ${jr.sites.toLocaleString('en')}-site job vs a 1,000-site one (issue 34)`);
  results.job_record = await step('job record', () => jobRecord(jr, log));
}
if (run('attack')) {
  log('reads while the worst CSV upload and a hostile child run (issue 18)');
  results.attack = await step('under attack', () => underAttack(d, log));
}

// The store engines side by side (issue 16): bench/pg.mjs in a process of its own, with the PostgreSQL server it
// starts from Debian's binaries (apt-get install -y postgresql); where they are missing the row says so.
if (run('pg')) {
  log('store engines, lowdb and PostgreSQL, one and two processes at 5,000 sites (issue 16): bench/pg.mjs');
  results.pg = await step('pg engines', async () => {
    // The 100,000-site rows (issue 34) take many minutes and gigabytes: `npm run bench:pg` runs them.
    const args = ['--skip-fleet', ...(quick ? ['--quick'] : [])];
    const r = spawnSync(process.execPath, [fileURLToPath(new URL('./pg.mjs', import.meta.url)), ...args], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (r.status !== 0) return { skipped: `bench/pg.mjs exited ${r.status} (PostgreSQL server binaries missing?)` };
    return JSON.parse(readFileSync(fileURLToPath(new URL('./pg-results.json', import.meta.url)), 'utf8'));
  });
}

const load = whole.stop();
results.load = {
  ...load,
  note: 'others_cores: CPU used on this machine by processes other than the bench and the processes it started (servers, MCP stdio server, simulator), averaged over the run',
};
results.elapsed_s = Math.round((performance.now() - started) / 1000);
results.targets = targets(results);
results.near_the_limit = nearTheLimit(results);
writeFileSync(outFile, JSON.stringify(results, null, 2) + '\n');
process.stdout.write(renderTable(results) + '\n');
log(`wrote ${outFile} (${results.elapsed_s} s)`);
process.exit(0);
