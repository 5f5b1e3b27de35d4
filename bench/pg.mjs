// bench/pg.mjs — the PostgreSQL store engine beside the lowdb engine (issue 16). `npm run bench:pg` builds, then runs
// this; `-- --quick` shortens every run, `--sites N` changes the fleet (5,000 by default).
//   rows: lowdb, 1 and 2 processes on one data dir | postgres, 1 and 2 processes on one database
//   list req/s (per process and summed, autocannon, 16 connections per process, GET /sites?per_page=100),
//   durable write p50/p99 (one client, sequential POST /sites/{id}/edit on the first process),
//   50 concurrent writers spread over the processes (writes/s, then SIGKILL and count acknowledged writes lost),
//   plus, on PostgreSQL: NOTIFY lag (a commit in one store until another store's memory has it) and job takeover
//   time after SIGKILL of the process that owns a running job.
//   `--only scaling`: two serve processes vs one (issue 34). `--only fleet`: the 100,000-site rows of issue 34
//   (bench/lib/fleet.mjs): start to first answer, a search + tag list, RSS through a mixed run of `--mixed-seconds`
//   (120 by default; the issue's hour is 3600), a full sync of the fleet. Their fleet is `--sites`, or 100,000
//   (5,000 and a 15 s mixed run with --quick) when --sites is not given; `--skip-sync` leaves out the sync (at 100,000
//   sites it takes about 5 minutes); `--serve-heap-mb N` runs that serve with node's --max-old-space-size=N,
//   `--serve-heap-growth P` with SITEFLEET_HEAP_GROWTH_PERCENT=P (serve's default is 50; 0 leaves the heap's growth to V8).
//   `--skip-fleet` leaves the fleet rows out of a run of everything (the `pg` group of `npm run bench` does, to stay
//   within minutes).
// Starts its own PostgreSQL (bench/lib/postgres.mjs) and removes it at the end. Prints the figures, asserts none:
// the machine is shared, so they are noisy; compare rows of one run, not runs.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { loadConfig } from '../dist/config.js';
import { closeServices, openServices } from '../dist/domain/index.js';
import { openStore } from '../dist/store/open.js';
import { PgStore } from '../dist/store/pg-store.js';
import { jobState } from '../dist/domain/job-chunks.js';
import { newKeyPair } from '../dist/child/keys.js';
import { startChildSim } from '../dist/child/simulator/server.js';
import { fleetRows } from './lib/fleet.mjs';
import { cannon, sequential } from './lib/load.mjs';
import { startPostgres } from './lib/postgres.mjs';
import { cleanupAll, removeDir, startServe, tempDir } from './lib/proc.mjs';
import { cpuAccount, machine, percentiles, round } from './lib/sys.mjs';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    sites: { type: 'string' },
    only: { type: 'string' },
    'skip-fleet': { type: 'boolean' },
    'mixed-seconds': { type: 'string' },
    'skip-sync': { type: 'boolean' },
    'serve-heap-mb': { type: 'string' },
    'serve-heap-growth': { type: 'string' },
  },
});
/** `--only scaling`: just the two-processes-vs-one write rows (issue 34); `--only fleet`: just the 100,000-site rows. */
const only = values.only ?? null;
if (only !== null && only !== 'scaling' && only !== 'fleet')
  throw new Error(`--only takes "scaling" or "fleet", not ${JSON.stringify(only)}`);
const quick = values.quick === true;
const count = (name, v, min) => {
  if (!/^\d+$/.test(v) || Number(v) < min) throw new Error(`--${name} takes a whole number of at least ${min}, not ${JSON.stringify(v)}`);
  return Number(v);
};
const N = count('sites', values.sites ?? '5000', 100);
const FLEET = values.sites !== undefined ? N : quick ? 5000 : 100_000;
const MIXED_S = count('mixed-seconds', values['mixed-seconds'] ?? (quick ? '15' : '120'), 1);
/** `--serve-heap-mb N`: the fleet's serve runs with node's --max-old-space-size=N (a heap limit: what bounds its RSS). */
const SERVE_HEAP_MB = values['serve-heap-mb'] === undefined ? null : count('serve-heap-mb', values['serve-heap-mb'], 64);
/** `--serve-heap-growth P`: the fleet's serve runs with SITEFLEET_HEAP_GROWTH_PERCENT=P (0: V8's own; default: serve's, 50). */
const SERVE_HEAP_GROWTH = values['serve-heap-growth'] === undefined ? null : count('serve-heap-growth', values['serve-heap-growth'], 0);
const d = quick ? { read: 2, warmup: 1, write: 2, writers: 3 } : { read: 8, warmup: 2, write: 5, writers: 8 };
const REST = '/wp-json/svc/v2';
const started = performance.now();
const log = (m) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(1).padStart(5)} s] ${m}\n`);
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => {
    cleanupAll();
    pgServer?.stop();
    process.exit(130);
  });
process.on('exit', cleanupAll);

let pgServer = null;
let dbCount = 0;

async function seed(where, n) {
  const s = await openServices(loadConfig({ dataDir: where.dataDir, databaseUrl: where.databaseUrl ?? undefined }, {}));
  try {
    const { token } = await s.auth.createKey('bench', 'read_write');
    for (let start = 0; start < n; start += 2000) {
      await s.store.write((tx) => {
        for (let i = start; i < Math.min(n, start + 2000); i++) {
          s.sites.insert(tx, {
            url: `https://site${i + 1}.example.com/`,
            name: `Site ${i + 1}`,
            admin_username: 'admin',
            wp_version: '6.8',
            php_version: '8.2',
            child_version: '6.1',
          });
        }
      });
    }
    return token;
  } finally {
    await closeServices(s);
  }
}

/** `writers` sequential writers, writer w on process w % urls.length: alternately adds tag cw-w-seq and sets site w+1's notes. */
async function writersAcross(urls, token, writers, seconds) {
  const pools = urls.map((u) => new Pool(u, { connections: Math.ceil(writers / urls.length), pipelining: 1 }));
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const ackedTags = new Set();
  const lastNote = new Map();
  const samples = [];
  let failures = 0;
  let firstFailure = null;
  const post = async (pool, path, body) => {
    const t = performance.now();
    const res = await pool.request({ method: 'POST', path, headers, body: JSON.stringify(body) });
    const text = await res.body.text();
    if (res.statusCode >= 300) {
      failures++;
      firstFailure ??= `${res.statusCode} ${text.slice(0, 200)}`;
      return false;
    }
    samples.push(performance.now() - t);
    return true;
  };
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      const pool = pools[w % pools.length];
      for (let seq = 0; seq < 5000 && performance.now() < end; seq++) {
        const name = `cw-${w}-${seq}`;
        if (seq % 2 === 0) {
          if (await post(pool, `${REST}/tags/add`, { name })) ackedTags.add(name);
        } else if (await post(pool, `${REST}/sites/${w + 1}/edit`, { notes: name })) lastNote.set(w + 1, name);
      }
    }),
  );
  await Promise.all(pools.map((p) => p.close()));
  const elapsed = (performance.now() - t0) / 1000;
  return {
    writes_per_s: round(samples.length / elapsed, 0),
    acked: samples.length,
    failures,
    firstFailure,
    latency: percentiles(samples),
    ackedTags,
    lastNote,
  };
}

async function engineRow(label, procs, usePg) {
  const dataDir = tempDir(`pg-${label.replace(/\W+/g, '')}`);
  const databaseUrl = usePg ? await pgServer.database(`bench_${++dbCount}`) : null;
  const where = { dataDir, databaseUrl };
  const row = { label, procs };
  try {
    let t = performance.now();
    const token = await seed(where, N);
    row.seed_ms = round(performance.now() - t, 0);
    const args = databaseUrl ? ['--database-url', databaseUrl] : [];
    const serves = await Promise.all(Array.from({ length: procs }, () => startServe(dataDir, { args })));
    row.listen_ms = round(Math.max(...serves.map((s) => s.listenMs)), 0);
    log(`${label}: seeded ${N} sites in ${row.seed_ms} ms; ${procs} process(es) listening`);

    const lists = await Promise.all(
      serves.map((s) =>
        cannon(s.url, { token, path: `${REST}/sites?per_page=100`, connections: 16, duration: d.read, warmup: d.warmup, pid: s.pid }),
      ),
    );
    row.list_rps = lists.map((l) => l.rps);
    row.list_p99 = lists.map((l) => l.p99);
    row.list_errors = lists.reduce((a, l) => a + l.non2xx + l.errors, 0);
    log(`  list: ${row.list_rps.join(' + ')} req/s (p99 ${row.list_p99.join(', ')} ms, ${row.list_errors} errors)`);

    const w = await sequential(serves[0].url, {
      token,
      seconds: d.write,
      maxCount: 5000,
      pid: serves[0].pid,
      make: (i) => ({ path: `${REST}/sites/${1 + ((i * 7919) % N)}/edit`, body: { notes: `edit ${i}` } }),
    });
    row.write = { p50: w.p50, p99: w.p99, per_s: w.per_s, failures: w.failures };
    log(`  durable write (one client): p50 ${w.p50} ms, p99 ${w.p99} ms, ${w.per_s}/s, ${w.failures} failed`);

    const pgPids = usePg ? pgServer.pids() : [];
    const acct = cpuAccount([...serves.map((s) => s.pid), ...pgPids]);
    const cw = await writersAcross(
      serves.map((s) => s.url),
      token,
      50,
      d.writers,
    );
    const cpu = acct.stop();
    const cores = cpu.measured_cores;
    row.writers_cpu = {
      serve_cores: cores.slice(0, serves.length),
      postgres_cores: round(
        cores.slice(serves.length).reduce((a, b) => a + b, 0),
        2,
      ),
      bench_cores: cpu.bench_cores,
      others_cores: cpu.others_cores,
      machine_cores: cpu.machine_cores,
    };
    await Promise.all(serves.map((s) => s.stop('SIGKILL')));
    const store = await openStore(where);
    const names = new Set();
    for (const tag of store.all('tags')) if (tag.name.startsWith('cw-')) names.add(tag.name);
    let lost = 0;
    for (const n of cw.ackedTags) if (!names.has(n)) lost++;
    for (const [id, note] of cw.lastNote) if (store.get('sites', id)?.notes !== note) lost++;
    await store.close();
    row.writers = { writes_per_s: cw.writes_per_s, p50: cw.latency.p50, p99: cw.latency.p99, failures: cw.failures, lost };
    log(
      `  50 writers: ${cw.writes_per_s} writes/s (p50 ${cw.latency.p50}, p99 ${cw.latency.p99} ms), ${cw.failures} failed, ${lost} lost after SIGKILL${cw.firstFailure ? `; first failure ${cw.firstFailure}` : ''}`,
    );
    const wc = row.writers_cpu;
    log(
      `    CPU (cores): serve ${wc.serve_cores.join(' + ')}, postgres ${wc.postgres_cores}, bench ${wc.bench_cores}, others ${wc.others_cores}, machine ${wc.machine_cores}`,
    );
  } finally {
    removeDir(dataDir);
  }
  return row;
}

/**
 * Issue 34: writes/s of `procs` serve processes on one database, for one kind of write at a time: `kind` 'sites' (writer
 * w sets site w+1's notes, sequentially: no two writers touch one record) or 'tags' (writer w creates tags u-w-seq:
 * every name unique, every create checks names against all tags). Then the processes stop and a fresh store checks
 * that nothing was lost or duplicated: every acknowledged tag exactly once and no tag never asked for, each site's
 * notes the last acknowledged, and the audit chain (one entry per write, appended by both processes) verifies.
 */
async function scalingRow(procs, kind, writers, seconds) {
  const dataDir = tempDir(`pg-scale-${kind}-${procs}`);
  const databaseUrl = await pgServer.database(`bench_${++dbCount}`);
  try {
    const token = await seed({ dataDir, databaseUrl }, Math.max(writers, 100));
    const serves = await Promise.all(Array.from({ length: procs }, () => startServe(dataDir, { args: ['--database-url', databaseUrl] })));
    const pools = serves.map((s) => new Pool(s.url, { connections: Math.ceil(writers / procs), pipelining: 1 }));
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const acked = new Set();
    const asked = new Set();
    const lastNote = new Map();
    let failures = 0;
    let firstFailure = null;
    const pgPids = pgServer.pids();
    const acct = cpuAccount([...serves.map((s) => s.pid), ...pgPids]);
    const t0 = performance.now();
    const end = t0 + seconds * 1000;
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        const pool = pools[w % procs];
        for (let seq = 0; seq < 100_000 && performance.now() < end; seq++) {
          const name = `u-${w}-${seq}`;
          asked.add(name);
          const [path, body] = kind === 'tags' ? [`${REST}/tags/add`, { name }] : [`${REST}/sites/${w + 1}/edit`, { notes: name }];
          const res = await pool.request({ method: 'POST', path, headers, body: JSON.stringify(body) });
          const text = await res.body.text();
          if (res.statusCode >= 300) {
            failures++;
            firstFailure ??= `${res.statusCode} ${text.slice(0, 200)}`;
          } else if (kind === 'tags') acked.add(name);
          else lastNote.set(w + 1, name);
        }
      }),
    );
    const elapsed = (performance.now() - t0) / 1000;
    const cpu = acct.stop();
    await Promise.all(pools.map((p) => p.close()));
    await Promise.all(serves.map((s) => s.stop()));
    const s = await openServices(loadConfig({ dataDir, databaseUrl }, {}));
    let lost = 0;
    let duplicated = 0;
    let writes = 0;
    try {
      if (kind === 'tags') {
        writes = acked.size;
        const seen = new Map();
        for (const t of s.store.all('tags')) if (t.name.startsWith('u-')) seen.set(t.name, (seen.get(t.name) ?? 0) + 1);
        for (const n of acked) if (!seen.has(n)) lost++;
        for (const [n, c] of seen) if (c > 1 || !asked.has(n)) duplicated += c > 1 ? c - 1 : 1;
      } else {
        writes = [...asked].length - failures;
        for (const [id, note] of lastNote) if (s.store.get('sites', id)?.notes !== note) lost++;
      }
      const v = s.audit.verify();
      if (!v.ok) throw new Error(`the audit chain does not verify after the run: ${JSON.stringify(v.bad)}`);
    } finally {
      await closeServices(s);
    }
    return {
      procs,
      kind,
      writes_per_s: round(writes / elapsed, 0),
      writes,
      failures,
      firstFailure,
      lost,
      duplicated,
      serve_cores: cpu.measured_cores.slice(0, procs),
      postgres_cores: round(
        cpu.measured_cores.slice(procs).reduce((a, b) => a + b, 0),
        2,
      ),
      machine_cores: cpu.machine_cores,
      loadavg_1m: cpu.loadavg_1m,
    };
  } finally {
    removeDir(dataDir);
  }
}

/** Both scaling rows, 1 then 2 processes each, side by side in one run. */
async function scaling() {
  const out = {};
  for (const kind of ['sites', 'tags']) {
    const one = await scalingRow(1, kind, 50, d.writers);
    const two = await scalingRow(2, kind, 50, d.writers);
    out[kind] = { one, two, ratio: round(two.writes_per_s / one.writes_per_s, 2) };
    for (const r of [one, two])
      log(
        `  ${kind}, ${r.procs} process(es): ${r.writes_per_s} writes/s, ${r.failures} failed, ${r.lost} lost, ${r.duplicated} duplicated; CPU serve ${r.serve_cores.join(' + ')}, postgres ${r.postgres_cores}, machine ${r.machine_cores}; load ${r.loadavg_1m}${r.firstFailure ? `; first failure ${r.firstFailure}` : ''}`,
      );
  }
  return out;
}

/** A commit in one store until another store (its own connections, as in another process) has it in memory. */
async function notifyLag() {
  const url = await pgServer.database(`bench_${++dbCount}`);
  const a = await PgStore.open(url);
  const b = await PgStore.open(url);
  const samples = [];
  try {
    for (let i = 0; i < (quick ? 100 : 300); i++) {
      const rec = await a.write((tx) => tx.insert('tags', { name: `lag-${i}` }));
      const t = performance.now();
      while (!b.get('tags', rec.id)) {
        if (performance.now() - t > 5000) throw new Error('a commit did not reach the other store in 5 s');
        await new Promise((r) => setImmediate(r));
      }
      samples.push(performance.now() - t);
    }
  } finally {
    await a.close();
    await b.close();
  }
  return percentiles(samples);
}

/** Two processes, a queued sync of 100 slow sites; SIGKILL the owner and time until the other holds the job. */
async function takeover() {
  const dataDir = tempDir('pg-takeover');
  const databaseUrl = await pgServer.database(`bench_${++dbCount}`);
  const s = await openServices(loadConfig({ dataDir, databaseUrl }, {}));
  const pair = await newKeyPair();
  const sim = await startChildSim({
    sites: 100,
    latencyMs: 100,
    preconnect: { publicKeyPem: pair.publicKeyPem, server: await s.settings.installationUrl() },
  });
  const { token } = await s.auth.createKey('bench', 'read_write');
  await s.store.write((tx) => {
    for (const info of sim.sites)
      s.sites.insert(
        tx,
        { url: info.url, name: info.url, admin_username: info.admin },
        { private_key_pem: pair.privateKeyPem, http_pass: null, regverify: null },
      );
  });
  await closeServices(s);
  const env = { SITEFLEET_QUEUE_THRESHOLD: '5', SITEFLEET_CHILD_CONCURRENCY: '4', SITEFLEET_ALLOW_PRIVATE_SITES: '1' };
  const serves = await Promise.all([
    startServe(dataDir, { args: ['--database-url', databaseUrl], env }),
    startServe(dataDir, { args: ['--database-url', databaseUrl], env }),
  ]);
  const store = await PgStore.open(databaseUrl);
  try {
    const res = await fetch(`${serves[0].url}${REST}/sites/sync`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`sync answered ${res.status}`);
    const job = () => {
      const j = [...store.all('jobs')][0];
      return j && jobState(store, j);
    };
    const wait = async (ok, what) => {
      const end = performance.now() + 60_000;
      while (!ok()) {
        if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
        await store.sync();
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    await wait(() => job()?.done.length >= 10, 'the job to record 10 sites');
    const before = job();
    const owner = serves.find((p) => p.pid === Number(before.owner.split('-')[0]));
    const t = performance.now();
    await owner.stop('SIGKILL');
    await wait(() => job().owner && job().owner !== before.owner, 'another process to take the job');
    const takeoverMs = performance.now() - t;
    const recorded = new Set(job().done);
    await wait(() => job().status === 'completed', 'the job to complete');
    const redone = [...recorded].filter((id) => sim.requests(id) > 1).length;
    return { takeover_ms: round(takeoverMs, 0), recorded_at_kill: before.done.length, redone_recorded: redone, succeeded: job().succeeded };
  } finally {
    await store.close();
    await Promise.all(serves.map((p) => p.stop()));
    await sim.close();
    removeDir(dataDir);
  }
}

const results = {
  suite: 'sitefleet bench: PostgreSQL engine (issue 16)',
  date: new Date().toISOString(),
  machine: machine(),
  sites: N,
  quick,
  rows: [],
};
try {
  log('starting a PostgreSQL server');
  pgServer = await startPostgres();
  if (!only) {
    results.rows.push(await engineRow('lowdb, 1 process', 1, false));
    results.rows.push(await engineRow('lowdb, 2 processes', 2, false));
    results.rows.push(await engineRow('postgres, 1 process', 1, true));
    results.rows.push(await engineRow('postgres, 2 processes', 2, true));
  }
  if (only !== 'fleet') {
    log('postgres: two serve processes vs one, 50 writers, one kind of write at a time');
    results.scaling = await scaling();
  }
  if (!only) {
    results.notify_lag = await notifyLag();
    log(`NOTIFY lag: p50 ${results.notify_lag.p50} ms, p99 ${results.notify_lag.p99} ms`);
    results.takeover = await takeover();
    log(`job takeover after SIGKILL: ${results.takeover.takeover_ms} ms`);
  }
  if ((!only && values['skip-fleet'] !== true) || only === 'fleet') {
    log(`postgres: a fleet of ${FLEET.toLocaleString('en')} sites, one serve process`);
    results.fleet = await fleetRows(pgServer, `bench_${++dbCount}`, {
      n: FLEET,
      mixedSeconds: MIXED_S,
      querySeconds: quick ? 3 : 10,
      clients: 4,
      skipSync: values['skip-sync'] === true,
      serveHeapMb: SERVE_HEAP_MB,
      serveHeapGrowth: SERVE_HEAP_GROWTH,
      log,
    });
    results.fleet_loadavg_end = loadavg().map((x) => round(x, 2));
  }
} finally {
  pgServer?.stop();
}

const pad = (s, n) => String(s).padEnd(n);
const sc = results.scaling;
const scaleLine = (label, r) =>
  `${pad(label, 60)}${pad(`${r.one.writes_per_s} -> ${r.two.writes_per_s} writes/s`, 26)}${pad(`${r.ratio}x (target >= 1.6x)`, 24)}lost ${r.one.lost + r.two.lost}, duplicated ${r.one.duplicated + r.two.duplicated} (target 0), failed ${r.one.failures + r.two.failures}`;
const scaleLines = sc
  ? [
      `postgres, 50 writers, load ${results.machine.loadavg_at_start.join(' ')} at start (${results.machine.cpus} CPUs shared: compare the ratios)`,
      scaleLine('two serve processes vs one: writes/s to different sites', sc.sites),
      scaleLine('two serve processes vs one: tag creates with unique names', sc.tags),
    ]
  : [];
const fl = results.fleet;
const num = (x) => (x === null || x === undefined ? 'n/a' : x.toLocaleString('en'));
/** measured ÷ target, for a target that is an upper bound: at most 1x meets it. */
const vsTarget = (measured, target) => `${round(measured / target, 2)}x the target: ${measured <= target ? 'met' : 'not met'}`;
const fleetLine = (label, figure, target, ratio) => `${pad(label, 72)} ${pad(figure, 36)} ${pad(target, 54)} ${ratio}`.trimEnd();
const fleetLines = fl
  ? [
      `postgres, a fleet of ${num(fl.sites)} sites, one serve process — ${results.machine.cpus} CPUs, load ${results.machine.loadavg_at_start.join(' ')} at start, ${results.fleet_loadavg_end.join(' ')} at the end (shared machine: noisy figures)`,
      `  seeded through the store in ${num(round(fl.seed_ms / 1000, 1))} s (site data ≈ ${round(fl.site_data_bytes / 1024, 1)} KB a site, from ${fl.samples} synced simulated sites, varied)`,
      fleetLine(
        'start to first answer (spawn -> first 200 of an authenticated GET)',
        `${num(fl.start.first_answer_ms)} ms (RSS ${num(fl.start.rss_mb)} MB)`,
        'target <= 3,000 ms',
        vsTarget(fl.start.first_answer_ms, 3000),
      ),
      fleetLine(
        `list-sites-v1 per_page=100, search + tag: ${fl.query.n} distinct queries (${fl.query.matching_min}-${fl.query.matching_max} match)`,
        `p50 ${fl.query.p50} ms, p99 ${fl.query.p99} ms`,
        'target p50 <= 10 ms',
        vsTarget(fl.query.p50, 10),
      ),
      fleetLine(
        "  beside it: one of them repeated (the door's answer cache)",
        `p50 ${fl.query_repeated.p50} ms, p99 ${fl.query_repeated.p99} ms`,
        '',
        '',
      ),
      fleetLine(
        '  and REST GET /sites?per_page=100 with the search only, repeated',
        `p50 ${fl.query_rest_search.p50} ms, p99 ${fl.query_rest_search.p99} ms`,
        '(REST /sites has no tag filter)',
        '',
      ),
      fleetLine(
        `RSS after a ${fl.mixed.seconds} s mixed run (${fl.mixed.clients} clients, ${num(fl.mixed.requests)} requests, ${fl.mixed.failures} failed)`,
        `end ${num(fl.mixed.rss.end_mb)} MB, peak ${num(fl.mixed.rss.peak_mb)} MB; live heap ${num(fl.mixed.live_heap_mb)} MB`,
        `target <= 300 MB (after ${MIXED_S >= 3600 ? 'this hour' : 'an hour: --mixed-seconds 3600'})`,
        vsTarget(fl.mixed.rss.end_mb, 300),
      ),
      fleetLine(
        '  uptime at its end: sites checked within an interval and a minute',
        `${num(fl.uptime.recent)} of ${num(fl.uptime.sites)} (${num(fl.uptime.ever)} ever)`,
        `(every site every ${fl.uptime.interval_s} s)`,
        '',
      ),
      !fl.sync
        ? 'full sync: skipped (--skip-sync)'
        : fleetLine(
            `full sync of ${num(fl.sync.sites)} simulated sites (${fl.sync.status}${fl.sync.timed_out ? ', timed out' : ''}, ${num(fl.sync.succeeded)} ok, ${num(fl.sync.failed)} failed)`,
            `${num(fl.sync.seconds)} s, ${num(fl.sync.sites_per_s)} sites/s`,
            'target: completes, memory bounded',
            `serve RSS ${num(fl.sync.rss_before_mb)} MB before -> peak ${num(fl.sync.rss_peak_mb)} MB (${round(fl.sync.rss_peak_mb / fl.sync.rss_before_mb, 2)}x before); live heap ${num(fl.sync.live_heap_mb)} MB`,
          ),
    ]
  : [];
const lines = only
  ? ['', ...scaleLines, ...fleetLines, '']
  : [
      '',
      `sitefleet store engines at ${N.toLocaleString('en')} sites — ${results.machine.cpus} CPUs, load ${results.machine.loadavg_at_start.join(' ')} at start (shared machine: noisy figures)`,
      `${pad('engine', 24)}${pad('list req/s (per process)', 28)}${pad('write p50/p99 ms', 20)}${pad('50 writers: writes/s', 22)}${pad('lost', 6)}CPU while writing (cores: serve | postgres | whole machine)`,
      ...results.rows.map(
        (r) =>
          `${pad(r.label, 24)}${pad(`${r.list_rps.reduce((a, b) => a + b, 0)} (${r.list_rps.join(' + ')})`, 28)}${pad(`${r.write.p50} / ${r.write.p99}`, 20)}${pad(r.writers.writes_per_s, 22)}${pad(r.writers.lost, 6)}${r.writers_cpu.serve_cores.join(' + ')} | ${r.writers_cpu.postgres_cores} | ${r.writers_cpu.machine_cores}`,
      ),
      '',
      `postgres: NOTIFY lag p50 ${results.notify_lag.p50} ms, p99 ${results.notify_lag.p99} ms; job takeover after SIGKILL ${results.takeover.takeover_ms} ms (recorded sites redone: ${results.takeover.redone_recorded})`,
      `targets: list >= 2,000 req/s per process; write p50 <= 5 ms; 2 processes >= 1.6x the writes/s of 1 (postgres ${round(results.rows[3].writers.writes_per_s / results.rows[2].writers.writes_per_s, 2)}x, lowdb ${round(results.rows[1].writers.writes_per_s / results.rows[0].writers.writes_per_s, 2)}x)`,
      ...scaleLines,
      '',
      ...fleetLines,
      '',
    ];
process.stdout.write(lines.join('\n'));
for (const r of results.rows) delete r.writers.ackedTags;
writeFileSync(fileURLToPath(new URL('./pg-results.json', import.meta.url)), JSON.stringify(results, null, 2));
