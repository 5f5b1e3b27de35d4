// An install's history entry on the PostgreSQL engine, whose write functions run more than once (a dry run finds the
// locks; this lane runs every batch once more, SITEFLEET_CHECK_REPLAY): the entry's duration is read before the write
// that records it, so every run records the same one and the install commits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildSim } from '../../src/child/simulator/server.js';
import { registerSites, type Fleet } from '../support/fleet.js';
import { startServer } from '../support/server.js';

let f: Fleet;
let id: number;

beforeAll(async () => {
  const sim = await startChildSim({ sites: 1, seed: 43 });
  // The simulator's stand-in for the plugin directory.
  const s = await startServer({ config: { packageSource: `${sim.baseUrl}/__sim/dir/` } });
  f = {
    s,
    sim,
    close: async () => {
      await s.close();
      await sim.close();
    },
  };
  id = (await registerSites(f))[0]!.id;
});
afterAll(async () => f?.close());

describe('an install recorded in the update history on PostgreSQL', () => {
  it('records the duration up to the child’s answer, the same in every run of its write, while the clock moves on every look', async () => {
    const { installs } = f.s.services;
    let clock = Date.now();
    installs.now = () => (clock += 5);
    try {
      const r = await f.s.ability('install-plugins-v1', { site_ids_or_domains: [id], slug: 'sim-delta' });
      expect(r.status).toBe(200);
      expect(r.body.summary).toEqual({ installed: 1, failed: 0, skipped: 0 });
      const hist = await f.s.rest(`/updates/${id}/history?action=install`);
      expect(hist.body.data).toHaveLength(1);
      // Two looks: when it started, and when the child's answer was in (before the write).
      expect(hist.body.data[0]).toMatchObject({ slug: 'sim-delta/sim-delta.php', outcome: 'installed', duration_ms: 5 });
    } finally {
      installs.now = Date.now;
    }
  });
});
