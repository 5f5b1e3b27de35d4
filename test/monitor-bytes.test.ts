// Uptime monitoring's history costs the disk a small multiple of what the checks add (issue 34): heartbeats go to the
// journal as what changed in each monitor record and its history record, and the monitor shards are rewritten only once the journal is about as
// long as they are. A real store on a temp dir, real checks of simulated sites, time moved rather than waited for; bytes
// counted from the files themselves.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startChildSim, type ChildSim } from '../src/child/simulator/server.js';
import { loadConfig } from '../src/config.js';
import { closeServices, openServices, type Services } from '../src/domain/index.js';
import { addBeat } from '../src/domain/monitors.js';
import type { Beat, Bucket, MonitorHistoryRecord, MonitorRecord } from '../src/store/monitor-records.js';
import { tempDir } from './support/server.js';

/** At most this many times the bytes of the heartbeats themselves are written to the data dir, compactions included. */
const MULTIPLE = 40;
const SITES = 250;
const INTERVAL_S = 60;
const ROUNDS = 20;
const STEP_S = 5;

/** Each file under `dir` with its inode, mtime and size. */
function look(dir: string, out = new Map<string, { ino: bigint; mtime: bigint; size: number }>()) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === '.lock') continue; // the lock (a directory that comes and goes), not data
    const p = join(dir, e.name);
    if (e.isDirectory()) look(p, out);
    else if (e.isFile()) {
      const st = statSync(p, { bigint: true });
      out.set(p, { ino: st.ino, mtime: st.mtimeNs, size: Number(st.size) });
    }
  }
  return out;
}

/**
 * Bytes written between two looks: a file new or changed counts whole, except the journal, which counts what it grew by
 * (all of it when a compaction emptied it meanwhile). What is appended and compacted between two looks is not seen: a
 * pass makes at most one commit of checks, and looks are taken after each.
 */
function written(before: ReturnType<typeof look>, after: ReturnType<typeof look>): number {
  let n = 0;
  for (const [p, a] of after) {
    const b = before.get(p);
    if (p.endsWith('journal.log') && b && b.ino === a.ino && a.size >= b.size) n += a.size - b.size;
    else if (!b || b.ino !== a.ino || b.mtime !== a.mtime || b.size !== a.size) n += a.size;
  }
  return n;
}

/** A monitor up for a month: every hourly and daily bucket filled, the last 60 beats at the interval. */
function monthOfHistory(id: number, last: number): { monitor: MonitorRecord; history: MonitorHistoryRecord } {
  let hours: Bucket[] = [];
  let days: Bucket[] = [];
  const recent: Beat[] = [];
  for (let t = last - 31 * 86_400; t <= last; t += t < last - 60 * INTERVAL_S ? 3600 : INTERVAL_S) {
    const b: Beat = [t, 1, 20 + (t % 80), 200, -1];
    if (t > last - 60 * INTERVAL_S) recent.push(b);
    hours = addBeat(hours, 3600, 25, b);
    days = addBeat(days, 86_400, 31, b);
  }
  return {
    monitor: { id, settings: {}, status: 'up', last_check: recent.at(-1)!, down_since: null, open_incident: null, history_n: 1 },
    history: { id, n: 1, recent, hours, days },
  };
}

let sim: ChildSim;
let s: Services | undefined;
afterAll(async () => {
  if (s) await closeServices(s);
  await sim?.close();
});

it(`writes at most ${MULTIPLE}× the bytes of the heartbeats to the data dir, the shards' compaction included`, async () => {
  sim = await startChildSim({ sites: SITES, latencyMs: 0 });
  const dataDir = tempDir();
  const config = loadConfig(
    { dataDir, allowPrivateSites: true, monitorConcurrency: '256', monitorFlushMs: '30000', monitorIntervalS: String(INTERVAL_S) },
    {},
  );
  let clock = Date.now();
  const t0 = Math.floor(clock / 1000);
  const seed = await openServices(config);
  await seed.store.write((tx) => {
    for (let i = 0; i < SITES; i++) {
      const site = seed.sites.insert(tx, { url: sim.sites[i]!.url, name: `Sim ${i + 1}`, admin_username: 'admin' });
      const { monitor, history } = monthOfHistory(site.id, t0 - Math.floor((i * INTERVAL_S) / SITES));
      tx.put('monitors', monitor);
      tx.put('monitor_history', history);
    }
  });
  await closeServices(seed); // the shards at rest hold the month of history
  s = await openServices(config);
  // The compaction threshold at its floor of 4 MB would hide the rule under test (the journal waits until it is as
  // long as the shards it changed, ~1 MB here): a lower floor makes that rule the one that decides.
  (s.store as unknown as { journalMax: number }).journalMax = 32 * 1024;
  const shards = readdirSync(dataDir)
    .filter((f) => f.startsWith('monitor_history.'))
    .reduce((n, f) => n + statSync(join(dataDir, f)).size, 0);
  expect(shards).toBeGreaterThan(SITES * 3000);
  s.monitors.now = () => clock;
  await s.monitors.pass(); // leases claimed
  await s.monitors.settled();
  s.monitors.resetStats();

  let before = look(dataDir);
  let bytes = 0;
  let compactions = 0;
  const journal = join(dataDir, 'journal.log');
  for (let p = 0; p < (ROUNDS * INTERVAL_S) / STEP_S; p++) {
    clock += STEP_S * 1000;
    await s.monitors.pass();
    await s.monitors.settled();
    const after = look(dataDir);
    if (after.get(journal)!.size < before.get(journal)!.size) compactions++;
    bytes += written(before, after);
    before = after;
  }
  await s.monitors.flush();
  bytes += written(before, look(dataDir));

  const checks = s.monitors.schedulerStats().checks;
  let added = 0;
  let beats = 0;
  for (const m of await s.store.readRecords<MonitorHistoryRecord>('monitor_history', { order: 'oldest', limit: SITES }))
    for (const b of m.recent)
      if (b[0] > t0) {
        added += JSON.stringify(b).length;
        beats++;
      }
  // Every site checked once an interval, every check's heartbeat kept.
  expect(checks).toBeGreaterThanOrEqual(SITES * (ROUNDS - 1));
  expect(beats).toBe(checks);
  // The journal was taken into the shards along the way (their rewrite is in the count), and not at every flush.
  expect(compactions).toBeGreaterThanOrEqual(1);
  expect(compactions).toBeLessThanOrEqual(3);
  expect(bytes).toBeLessThanOrEqual(MULTIPLE * added);
}, 120_000);
