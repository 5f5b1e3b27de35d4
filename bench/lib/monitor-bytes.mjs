// bench/lib/monitor-bytes.mjs — what uptime monitoring writes to the data dir (issue 34): `sites` simulated sites with a
// month of history each, checked every `interval` seconds for `rounds` intervals on a moved clock (MonitorService.now
// and pass(): no waiting), history flushed every `flushS` seconds as serve does. Bytes written are counted two ways:
//   files: after every pass, each file of the data dir whose inode, mtime or size changed counts whole, except
//          journal.log, which counts what it grew by (all of it when it was emptied and grew again);
//   write_bytes: /proc/self/io of this process (the store runs in it), which the kernel counts by page dirtied.
// Beside them, what a check adds: the bytes of its heartbeat ([time, up, ms, status, cause] as JSON).
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startChildSim } from '../../dist/child/simulator/server.js';
import { loadConfig } from '../../dist/config.js';
import { closeServices, openServices } from '../../dist/domain/index.js';
import { addBeat } from '../../dist/domain/monitors.js';
import { removeDir, tempDir } from './proc.mjs';
import { round } from './sys.mjs';

/** Every file under `dir` (recursively) with its inode, mtime and size. */
export function look(dir, out = new Map()) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === '.lock') continue; // the lock (a directory that comes and goes), not data
    const p = join(dir, e.name);
    if (e.isDirectory()) look(p, out);
    else if (e.isFile()) {
      const st = statSync(p, { bigint: true });
      out.set(p, { key: `${st.ino}:${st.mtimeNs}`, size: Number(st.size) });
    }
  }
  return out;
}

/** Bytes written between two looks (see the head of this file). */
export function written(before, after) {
  let n = 0;
  for (const [p, a] of after) {
    const b = before.get(p);
    if (p.endsWith('journal.log') && b && a.size >= b.size && a.key.split(':')[0] === b.key.split(':')[0]) n += a.size - b.size;
    else if (!b || b.key !== a.key || b.size !== a.size) n += a.size;
  }
  return n;
}

function writeBytes() {
  try {
    return Number(/write_bytes:\s*(\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))[1]);
  } catch {
    return null;
  }
}

/** A monitor that has been up for a month (a full history), last checked at `last`. */
export function monthOfHistory(id, last, interval) {
  let hours = [];
  let days = [];
  let recent = [];
  // One beat an hour is enough to fill every hourly and daily bucket; the last RAW_KEPT at the interval.
  for (let t = last - 31 * 86_400; t < last - 60 * interval; t += 3600) {
    const b = [t, 1, 20 + (t % 80), 200, -1];
    hours = addBeat(hours, 3600, 25, b);
    days = addBeat(days, 86_400, 31, b);
  }
  for (let t = last - 59 * interval; t <= last; t += interval) {
    const b = [t, 1, 20 + (t % 80), 200, -1];
    recent.push(b);
    hours = addBeat(hours, 3600, 25, b);
    days = addBeat(days, 86_400, 31, b);
  }
  recent = recent.slice(-60);
  return {
    monitor: { id, settings: {}, status: 'up', last_check: recent.at(-1), down_since: null, open_incident: null, history_n: 1 },
    history: { id, n: 1, recent, hours, days },
  };
}

export async function monitorBytes({ sites: N = 5000, interval = 60, rounds = 20, flushS = 30, stepS = 1 } = {}, log = () => {}) {
  const sim = await startChildSim({ sites: N, latencyMs: 0 });
  const dataDir = tempDir('monitor-bytes');
  const config = loadConfig(
    {
      dataDir,
      allowPrivateSites: true,
      monitorConcurrency: '256',
      monitorFlushMs: String(flushS * 1000),
      monitorIntervalS: String(interval),
    },
    {},
  );
  let clock = Date.now();
  const t0 = Math.floor(clock / 1000);
  // Seeded, then closed (a clean stop takes the journal into the shards): the run starts from the files at rest.
  const seed = await openServices(config);
  try {
    for (let start = 0; start < N; start += 1000) {
      await seed.store.write((tx) => {
        for (let i = start; i < Math.min(N, start + 1000); i++) {
          const site = seed.sites.insert(tx, { url: sim.sites[i].url, name: `Sim ${i + 1}`, admin_username: 'admin' });
          // Last checked at some point of the interval before now: the run starts in the steady state.
          const { monitor, history } = monthOfHistory(site.id, t0 - Math.floor((i * interval) / N), interval);
          tx.put('monitors', monitor);
          tx.put('monitor_history', history);
        }
      });
    }
  } finally {
    await closeServices(seed);
  }
  const shardBytes = readdirSync(dataDir)
    .filter((f) => f.startsWith('monitors.') || f.startsWith('monitor_history.'))
    .reduce((n, f) => n + statSync(join(dataDir, f)).size, 0);
  const s = await openServices(config);
  try {
    const recordBytes =
      JSON.stringify(s.store.get('monitors', 1)).length +
      JSON.stringify((await s.store.readRecords('monitor_history', { order: 'oldest', ids: [1], limit: 1 }))[0]).length;
    s.monitors.now = () => clock;
    // Leases are claimed and the first pass scheduled before the measured run.
    await s.monitors.pass();
    await s.monitors.settled();
    s.monitors.resetStats();
    let before = look(dataDir);
    const wb0 = writeBytes();
    let files = 0;
    let compactions = 0;
    const t = performance.now();
    const passes = Math.round((rounds * interval) / stepS);
    for (let p = 0; p < passes; p++) {
      clock += stepS * 1000;
      await s.monitors.pass();
      await s.monitors.settled();
      const after = look(dataDir);
      const j = [...after].find(([f]) => f.endsWith('journal.log'))?.[1];
      const jb = [...before].find(([f]) => f.endsWith('journal.log'))?.[1];
      if (j && jb && j.size < jb.size) compactions++;
      files += written(before, after);
      before = after;
    }
    // The beats still waiting in memory are written as a run would (the next flush): counted too.
    await s.monitors.flush();
    files += written(before, look(dataDir));
    const wb = wb0 === null ? null : writeBytes() - wb0;
    const checks = s.monitors.schedulerStats().checks;
    let beatChars = 0;
    let beats = 0;
    const histories = [];
    for (let above = 0; ;) {
      const page = await s.store.readRecords('monitor_history', { order: 'oldest', above, limit: 1000 });
      histories.push(...page);
      if (page.length < 1000) break;
      above = page.at(-1).id;
    }
    for (const m of histories)
      for (const b of m.recent ?? [])
        if (b[0] > t0) {
          beatChars += JSON.stringify(b).length;
          beats++;
        }
    const beatBytes = beats ? beatChars / beats : null;
    const out = {
      sites: N,
      interval_s: interval,
      flush_s: flushS,
      rounds,
      checks,
      late_over_interval: s.monitors.schedulerStats().late_over_interval,
      seconds: round((performance.now() - t) / 1000, 1),
      monitor_record_bytes: recordBytes,
      monitor_shard_bytes: shardBytes,
      beat_bytes: round(beatBytes, 1),
      bytes_per_check_files: checks ? round(files / checks, 0) : null,
      bytes_per_check_write_bytes: checks && wb !== null ? round(wb / checks, 0) : null,
      compactions,
      method:
        'files: whole size of each file whose inode/mtime/size changed between passes, journal.log by growth; write_bytes: /proc/self/io',
    };
    out.multiple_files = out.bytes_per_check_files && beatBytes ? round(out.bytes_per_check_files / beatBytes, 1) : null;
    out.multiple_write_bytes = out.bytes_per_check_write_bytes && beatBytes ? round(out.bytes_per_check_write_bytes / beatBytes, 1) : null;
    log(
      `  ${checks} checks in ${out.seconds} s: ${out.bytes_per_check_files} B/check by files, ${out.bytes_per_check_write_bytes} B/check by write_bytes; a heartbeat is ${out.beat_bytes} B (×${out.multiple_files} / ×${out.multiple_write_bytes}); ${compactions} compactions; record ${recordBytes} B, monitor shards ${round(shardBytes / 1e6, 1)} MB`,
    );
    return out;
  } finally {
    await closeServices(s);
    await sim.close();
    removeDir(dataDir);
  }
}
