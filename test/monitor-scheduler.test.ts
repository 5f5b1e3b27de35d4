// The uptime scheduler on a moved clock: a change to the sites alone (a sync commits several a second) makes it look
// at every site at most once per SITES_RESCAN_MS, and what that window could hide never matters: a site suspended
// meanwhile is not checked when its check falls due, and a site added meanwhile gets its first check when due.
import { afterAll, expect, it } from 'vitest';
import { startChildSim, type ChildSim } from '../src/child/simulator/server.js';
import { loadConfig } from '../src/config.js';
import { closeServices, openServices, type Services } from '../src/domain/index.js';
import { INTERVAL_MIN_S, SITES_RESCAN_MS } from '../src/domain/monitors.js';
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
