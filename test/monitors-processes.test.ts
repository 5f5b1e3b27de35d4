// Two `serve` processes on one data dir share the uptime checks through leases in the store: each site is checked
// by one of them, once an interval, never by both.
import { afterAll, describe, expect, it } from 'vitest';
import { startChildSim, type ChildSim } from '../src/child/simulator/server.js';
import { loadConfig } from '../src/config.js';
import { closeServices, openServices } from '../src/domain/index.js';
import type { LeaseRecord } from '../src/store/monitor-records.js';
import { Store } from '../src/store/store.js';
import { serveProcess } from './support/process.js';
import { seedSites, tempDir } from './support/server.js';
import { until } from './support/wait.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

const SITES = 12;
describe('two serve processes on one data dir', () => {
  it('check every site once an interval between them, each site by one process at a time', async () => {
    const dataDir = tempDir();
    const sim: ChildSim = await startChildSim({ sites: SITES });
    closers.push(() => sim.close());
    const services = await openServices(loadConfig({ dataDir }, {}));
    await seedSites(services, SITES, (i) => ({ url: sim.sites[i]!.url, name: `Sim ${i + 1}` }));
    await closeServices(services);

    const args = ['--data-dir', dataDir, '--allow-private-sites', '--monitor-interval', '1'];
    const env = { SITEFLEET_MONITOR_FLUSH_MS: '200' };
    const a = await serveProcess(args, env);
    closers.push(() => a.stop());
    const b = await serveProcess(args, env);
    closers.push(() => b.stop());
    const from = Date.now();
    // The checks themselves are waited for (five of every site), not a span of time: a loaded machine takes longer.
    await until(
      () => Array.from({ length: SITES }, (_, i) => sim.requestTimes(i + 1).filter((t) => t >= from).length),
      (counts) => counts.every((n) => n >= 5),
      30_000,
    );

    // Both processes hold partitions (a fair share each) while they run.
    const store = await Store.open(dataDir);
    const leases = [...store.all<LeaseRecord>('leases')].filter((l) => /^monitor:\d+$/.test(l.name) && l.until > Date.now());
    await store.close();
    const owners = new Map<string, number>();
    for (const l of leases) owners.set(l.owner!, (owners.get(l.owner!) ?? 0) + 1);
    expect([...owners.values()].sort()).toEqual([8, 8]);

    const to = Date.now();
    for (let i = 1; i <= SITES; i++) {
      const times = sim.requestTimes(i).filter((t) => t >= from && t <= to);
      // First checks come one interval after start, spread over the next; then one a second.
      expect(times.length, `site ${i}`).toBeGreaterThanOrEqual(5);
      expect(times.length, `site ${i}`).toBeLessThanOrEqual(Math.floor((to - from) / 1000) + 2);
      // Two processes checking a site would double the count above (one a second over the window, plus one at each
      // end; the window ends when the slowest site has had its five); and the checks of a site keep their pace: a check
      // that starts late (a busy machine) is followed by the next after half an interval at least, hand-over included.
      const gaps = times.slice(1).map((t, k) => t - times[k]!);
      expect(Math.min(...gaps), `site ${i}: ${gaps.join(',')}`).toBeGreaterThanOrEqual(450);
    }
  }, 40_000);
});

describe('partition leases', () => {
  it('are taken over once their holder stops renewing them, and shared while both renew', async () => {
    const { PartitionLeases } = await import('../src/domain/leases.js');
    const store = await Store.open(tempDir());
    closers.push(() => store.close());
    // The leases' clock is the test's: time passes only when the test moves it, however loaded the machine.
    let now = Date.now();
    const clock = () => now;
    const ttl = 1_500;
    const dead = new PartitionLeases(store, 'p', 4, ttl, 'dead-owner', clock);
    expect((await dead.round()).held.size).toBe(4);
    const live = new PartitionLeases(store, 'p', 4, ttl, 'live-owner', clock);
    // While the first one's leases hold, the newcomer gets nothing (its share is 2, none is free).
    expect((await live.round()).held.size).toBe(0);
    // The holder renews: it sees two members and gives back what is over its share.
    const back = await dead.round();
    expect(back.released.sort()).toEqual([2, 3]);
    expect((await live.round()).taken.sort()).toEqual([2, 3]);
    // Just before the time to live, the live one renews alone: the first one's leases and membership still hold.
    now += ttl - 1;
    const early = await live.round();
    expect([...early.held].sort()).toEqual([2, 3]);
    expect(early.members).toBe(2);
    // The first one stops renewing: after the time to live its partitions and membership are free.
    now += 2;
    const all = await live.round();
    expect([...all.held].sort()).toEqual([0, 1, 2, 3]);
    expect(all.members).toBe(1);
  });
});
