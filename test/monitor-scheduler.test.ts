// The uptime scheduler on a moved clock: a change to the sites alone (a sync commits several a second) makes it look
// at every site at most once per SITES_RESCAN_MS, and what that window could hide never matters: a site suspended
// meanwhile is not checked when its check falls due, and a site added meanwhile gets its first check when due.
import { afterAll, expect, it } from 'vitest';
import { startChildSim, type ChildSim } from '../src/child/simulator/server.js';
import { loadConfig } from '../src/config.js';
import { closeServices, openServices, type Services } from '../src/domain/index.js';
import { emptyMonitor, INTERVAL_MIN_S, SITES_RESCAN_MS } from '../src/domain/monitors.js';
import { CHANGE_LOG_MAX } from '../src/store/change-log.js';
import type { MonitorRecord } from '../src/store/monitor-records.js';
import type { SiteRecord } from '../src/store/records.js';
import { tempDir } from './support/server.js';

let sim: ChildSim;
let s: Services | undefined;
afterAll(async () => {
  if (s) await closeServices(s);
  await sim?.close();
});

it(`looks at every site again at most once per ${SITES_RESCAN_MS} ms when only the sites changed, and misses nothing by it`, async () => {
  sim = await startChildSim({ sites: 3, latencyMs: 0 });
  s = await openServices(loadConfig({ dataDir: tempDir(), allowPrivateSites: true }, {}));
  const [a, b] = await s.store.write((tx) =>
    [0, 1].map((i) => s!.sites.insert(tx, { url: sim.sites[i]!.url, name: `Sim ${i + 1}`, admin_username: 'admin' })),
  );
  const m = s.monitors;
  let clock = Date.now();
  m.now = () => clock;
  await m.pass(); // leases claimed, every site scheduled an interval from now
  const scans = () => m.schedulerStats().scans;
  const first = scans();
  expect(first).toBe(1);

  // A site edited (as a sync does): no new look at every site within the window, one once it has passed.
  await s.store.write((tx) => s!.sites.patch(tx, a!.id, { notes: 'synced' }));
  clock += 1;
  await m.pass();
  expect(scans()).toBe(first);
  clock += SITES_RESCAN_MS;
  await m.pass();
  expect(scans()).toBe(first + 1);

  // Within the next window: site a suspended, a third site added. Nothing is looked at until a check is due...
  await s.store.write((tx) => s!.sites.patch(tx, a!.id, { suspended: true }));
  const c = await s.store.write((tx) => s!.sites.insert(tx, { url: sim.sites[2]!.url, name: 'Sim 3', admin_username: 'admin' }));
  clock += 1;
  await m.pass();
  expect(scans()).toBe(first + 1);
  // ...then, once every site's first check is due (at most two intervals from the start), b and c are checked, a is not.
  const interval = m.effective(b!.id).interval_s;
  expect(interval).toBeGreaterThanOrEqual(INTERVAL_MIN_S);
  for (let t = 0; t < (2 * interval) / 5 + 2; t++) {
    clock += 5000;
    await m.pass();
    await m.settled();
  }
  await m.flush();
  const checked = (site: SiteRecord) => m.record(site.id)?.last_check ?? null;
  expect(checked(b!)).not.toBeNull();
  expect(checked(c)).not.toBeNull();
  expect(checked(a!)).toBeNull();
});

/** N simulated sites on a fresh fleet, the monitors on a moved clock: `run(ms)` passes a second at a time, `jump(ms)` none. */
async function fleetOnClock(N: number, config: { monitorConcurrency?: string } = {}) {
  const many = await startChildSim({ sites: N, latencyMs: 0 });
  const t = await openServices(loadConfig({ dataDir: tempDir(), allowPrivateSites: true, ...config }, {}));
  const ids = await t.store.write((tx) =>
    many.sites.map((x, i) => t.sites.insert(tx, { url: x.url, name: `Many ${i}`, admin_username: 'admin' }).id),
  );
  const m = t.monitors;
  let clock = Date.now();
  m.now = () => clock;
  const run = async (ms: number) => {
    for (let k = 0; k < ms / 1000; k++) {
      clock += 1000;
      await m.pass();
      await m.settled();
    }
  };
  const jump = (ms: number) => void (clock += ms);
  const close = async () => {
    await closeServices(t);
    await many.close();
  };
  return { many, t, ids, m, run, jump, close };
}

it('between scans, takes the checks that fall due from its queue: every site checked once an interval, few scans of every site', async () => {
  const { many, m, run, close } = await fleetOnClock(40);
  try {
    await m.pass();
    const interval = m.effective(1).interval_s * 1000;
    // Every site's first check falls due within two intervals (each first check writes the site's new state at once).
    await run(2 * interval);
    const before = many.sites.map((_, i) => many.requests(i + 1));
    expect(before.every((n) => n >= 1)).toBe(true);
    m.resetStats();
    // Three more intervals, a pass every second: each site checked once an interval.
    await run(3 * interval);
    const checks = many.sites.map((_, i) => many.requests(i + 1) - before[i]!);
    for (const [i, n] of checks.entries()) expect(n, `site ${i + 1}`).toBeGreaterThanOrEqual(2);
    for (const [i, n] of checks.entries()) expect(n, `site ${i + 1}`).toBeLessThanOrEqual(4);
    const stats = m.schedulerStats();
    expect(stats.checks).toBe(checks.reduce((a, b) => a + b, 0));
    // Every site is looked at when what the schedule depends on changed, not on each pass where a check fell due (a
    // scan per pass with a check due was about one per check), nor at each flush of the history (the next test).
    const flushes = (3 * interval) / loadConfig({ dataDir: tempDir() }, {}).monitorFlushMs;
    expect(stats.scans).toBeLessThanOrEqual(flushes + 2);
    expect(stats.checks).toBeGreaterThan(4 * stats.scans);
  } finally {
    await close();
  }
});

it('while the checks are behind (no room for more), starts them from its queue as room frees, not from a scan on each pass', async () => {
  const { many, t, ids, m, run, jump, close } = await fleetOnClock(30, { monitorConcurrency: '2' });
  try {
    await m.pass(); // every site given its first due time, within two intervals
    // A site edited (a sync: the next pass looks at every site), and every first check due at once: 30, room for 2.
    await t.store.write((tx) => t.sites.patch(tx, ids[0]!, { notes: 'synced' }));
    jump(2 * m.effective(1).interval_s * 1000);
    const scans = m.schedulerStats().scans;
    await run(20_000);
    expect(many.sites.every((_, i) => many.requests(i + 1) >= 1)).toBe(true);
    // One scan, then 2 a pass from the queue; not a scan a pass (each a look at every site and the queue built again)
    // for as long as the checks were behind.
    expect(m.schedulerStats().scans).toBe(scans + 1);
  } finally {
    await close();
  }
});

it('writes the states that checks find together: a flush of some sites joins the one waiting to start', async () => {
  const N = 40;
  const { many, ids, m, run, jump, close } = await fleetOnClock(N, { monitorConcurrency: String(N) });
  try {
    await m.pass();
    // Three checks' flushes asked while another flush runs: one more flush writes all three.
    m.resetStats();
    const running = m.flush();
    const joined = [m.flush([ids[0]!]), m.flush([ids[1]!]), m.flush([ids[2]!])];
    await Promise.all([running, ...joined]);
    expect(m.schedulerStats().flushes).toBe(2);
    // Every first check due at once: each finds a state (none was known) and waits for it to be written; all are.
    jump(2 * m.effective(1).interval_s * 1000);
    m.resetStats();
    await run(1000);
    expect(many.sites.every((_, i) => many.requests(i + 1) === 1)).toBe(true);
    for (const id of ids) expect(m.record(id)?.status, `site ${id}`).toBe('up');
    expect(m.schedulerStats().checks).toBe(N);
  } finally {
    await close();
  }
});

it("scans every site when a monitor's settings change (here or in another process), not when a check writes its state", async () => {
  const N = 12;
  const { many, t, ids, m, run, close } = await fleetOnClock(N);
  try {
    await m.pass();
    const interval = m.effective(1).interval_s * 1000;
    const writes = t.store.version('monitors');
    // The first checks (each a change of state, written at once) and the flushes after them: one scan, the first.
    await run(3 * interval);
    expect(t.store.version('monitors') - writes).toBeGreaterThan(N);
    expect(m.schedulerStats().scans).toBe(1);
    // Monitors without settings of their own share one frozen empty object (not one per record).
    const settings = new Set(ids.map((id) => t.store.get<MonitorRecord>('monitors', id)!.settings));
    expect(settings.size).toBe(1);
    expect(Object.isFrozen([...settings][0])).toBe(true);
    const requests = () => many.sites.map((_, i) => many.requests(i + 1));

    // Paused here: the next pass scans, and the site is not checked again.
    await m.updateSettings(ids[0]!, { active: false });
    await run(1000);
    expect(m.schedulerStats().scans).toBe(2);
    // Paused by another process: its write reaches this one as a changed record (the lane's other process, or here a
    // write of the record as the store would hand it over). A state-only write of another monitor changes nothing.
    await t.store.write((tx) => {
      const rec = tx.get<MonitorRecord>('monitors', ids[1]!)!;
      tx.put<MonitorRecord>('monitors', { ...rec, settings: { ...rec.settings, active: false } });
      const other = tx.get<MonitorRecord>('monitors', ids[2]!)!;
      tx.put<MonitorRecord>('monitors', { ...other, status: other.status === 'up' ? 'down' : 'up' });
    });
    await run(1000);
    expect(m.schedulerStats().scans).toBe(3);
    // The same settings written again (a no-op patch from another process): no scan.
    await t.store.write((tx) => void tx.put<MonitorRecord>('monitors', { ...tx.get<MonitorRecord>('monitors', ids[1]!)! }));
    await run(1000);
    expect(m.schedulerStats().scans).toBe(3);

    const before = requests();
    await run(2 * interval);
    const after = requests();
    expect(after[0]).toBe(before[0]);
    expect(after[1]).toBe(before[1]);
    for (let i = 2; i < N; i++) expect(after[i]! - before[i]!, `site ${i + 1}`).toBeGreaterThanOrEqual(1);
    // A no-op patch here still takes the site out of the schedule and back in by a scan: it is checked again.
    await m.updateSettings(ids[0]!, { active: true });
    await m.updateSettings(ids[3]!, {});
    const b3 = requests();
    await run(2 * interval);
    expect(requests()[0]! - b3[0]!).toBeGreaterThanOrEqual(1);
    expect(requests()[3]! - b3[3]!).toBeGreaterThanOrEqual(1);
  } finally {
    await close();
  }
});

it(`past the store's log of changed ids (${2 * CHANGE_LOG_MAX} at most), compares every monitor's settings: a scan only if one changed`, async () => {
  const t = await openServices(loadConfig({ dataDir: tempDir(), allowPrivateSites: true }, {}));
  try {
    const m = t.monitors;
    await m.pass();
    const scans = () => m.schedulerStats().scans;
    const first = scans();
    const many = 2 * CHANGE_LOG_MAX + 10; // the log keeps between one and two times its bound
    const writeAll = (settingsOf: (id: number) => MonitorRecord['settings']) =>
      t.store.write((tx) => {
        for (let id = 1; id <= many; id++) {
          const cur = tx.get<MonitorRecord>('monitors', id);
          tx.put<MonitorRecord>('monitors', {
            ...(cur ?? emptyMonitor(id)),
            status: cur?.status === 'up' ? 'down' : 'up',
            settings: settingsOf(id),
          });
        }
      });
    await writeAll((id) => (id === 7 ? { interval_s: 900 } : {}));
    await m.pass();
    expect(scans()).toBe(first + 1);
    expect(t.store.changedSince('monitors', t.store.version('monitors') - many)).toBeNull();
    await writeAll((id) => (id === 7 ? { interval_s: 900 } : {}));
    await m.pass();
    expect(scans()).toBe(first + 1);
    await writeAll((id) => (id === 7 ? { interval_s: 900 } : id === many ? { active: false } : {}));
    await m.pass();
    expect(scans()).toBe(first + 2);
  } finally {
    await closeServices(t);
  }
});
