// Calls that install or apply a package (installplugintheme, upgradeplugintheme, upgradetranslation, upgrade) have
// their own, longer bound (SITEFLEET_CHILD_PACKAGE_TIMEOUT_MS) than every other child call (SITEFLEET_CHILD_TIMEOUT_MS):
// the child downloads and unpacks inside the call. The simulator holds a child function until the test releases it,
// so a call outlasts the ordinary bound without the test sleeping: an ordinary call held alongside it times out first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';

const CHILD_MS = 1000;
const PACKAGE_MS = 3000;
let h: AbilityHarness;
let ids: number[];

beforeAll(async () => {
  h = await openAbilities({
    sim: { sites: 3, seed: 31 },
    config: (base) => ({
      packageSource: `${base}/__sim/dir/`,
      childTimeoutMs: String(CHILD_MS),
      childPackageTimeoutMs: String(PACKAGE_MS),
    }),
  });
  ids = (await h.addSimSites(3)).map((s) => s.id);
});
afterAll(() => h.close());

/** An ordinary call to site `n` held at the child: it fails at the ordinary bound, CHILD_MS after it started. */
async function ordinaryCallTimesOut(n: number): Promise<void> {
  const held = h.sim.hold(n, 'get_all_users');
  try {
    const r = await h.call('list-users-v1', { websites: [ids[n - 1]!] });
    expect(JSON.stringify(r)).toContain(`timed out after ${CHILD_MS} ms`);
  } finally {
    held.release();
  }
}

describe('the package bound', () => {
  it('an install outlasts the ordinary child bound and succeeds', async () => {
    const held = h.sim.hold(1, 'installplugintheme');
    const install = h.call('install-plugins-v1', { site_ids_or_domains: [ids[0]!], slug: 'sim-delta', overwrite: false, dry_run: false });
    await held.arrived;
    await ordinaryCallTimesOut(1); // started after the install, and already past the ordinary bound
    held.release();
    const r = await install;
    expect(r.summary).toEqual({ installed: 1, failed: 0, skipped: 0 });
    expect(h.sim.state(1).plugins.find((p) => p.slug.startsWith('sim-delta/'))).toMatchObject({ version: expect.any(String) });
  });

  it('an update apply outlasts it too', async () => {
    const plugin = h.sim.state(2).plugins[0]!;
    h.sim.offerUpdate(2, 'plugin', plugin.slug, '99.0.0');
    await h.call('sync-sites-v1', { site_ids_or_domains: [ids[1]!] });
    const held = h.sim.hold(2, 'upgradeplugintheme');
    const run = h.call('run-updates-v1', { site_ids_or_domains: [ids[1]!], types: ['plugins'], specific_items: [plugin.slug] });
    await held.arrived;
    await ordinaryCallTimesOut(2);
    held.release();
    const r = await run;
    expect(r.updated).toEqual([expect.objectContaining({ slug: plugin.slug, new_version: '99.0.0' })]);
    expect(h.sim.state(2).plugins.find((p) => p.slug === plugin.slug)!.version).toBe('99.0.0');
  });

  it(`an install that takes longer than the package bound is that site's svc_child_timeout, naming the bound`, async () => {
    const held = h.sim.hold(3, 'installplugintheme'); // never released: the site never answers
    try {
      const started = performance.now();
      const r = await h.call('install-plugins-v1', { site_ids_or_domains: [ids[2]!], slug: 'sim-delta', overwrite: false, dry_run: false });
      expect(performance.now() - started).toBeGreaterThanOrEqual(PACKAGE_MS - 50);
      expect(r.summary).toEqual({ installed: 0, failed: 1, skipped: 0 });
      expect(r.errors).toEqual([
        expect.objectContaining({ site_id: ids[2], code: 'svc_child_timeout', message: expect.stringContaining(`after ${PACKAGE_MS} ms`) }),
      ]);
    } finally {
      held.release();
    }
  });
});

describe('SITEFLEET_CHILD_PACKAGE_TIMEOUT_MS', () => {
  it('is 15 minutes by default; 100 ms to 4 hours, refused just past either end', () => {
    expect(loadConfig({}, {}).childPackageTimeoutMs).toBe(900_000);
    expect(loadConfig({}, { SITEFLEET_CHILD_PACKAGE_TIMEOUT_MS: '100' }).childPackageTimeoutMs).toBe(100);
    expect(loadConfig({}, { SITEFLEET_CHILD_PACKAGE_TIMEOUT_MS: '14400000' }).childPackageTimeoutMs).toBe(14_400_000);
    for (const bad of ['99', '14400001', '1.5', 'soon', ''])
      expect(() => loadConfig({}, { SITEFLEET_CHILD_PACKAGE_TIMEOUT_MS: bad }), bad).toThrow(/child package timeout/);
  });
});
