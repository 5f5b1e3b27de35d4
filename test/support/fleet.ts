// Test support: a sitefleet server plus a child-site simulator on loopback, and registration of its sites.
import { startChildSim, type ChildSim, type ChildSimOptions } from '../../src/child/simulator/server.js';
import { startServer, type TestServer } from './server.js';
import type { Config } from '../../src/config.js';

export interface Fleet {
  s: TestServer;
  sim: ChildSim;
  close(): Promise<void>;
}

export async function startFleet(
  opts: { sim?: ChildSimOptions; config?: Partial<Record<keyof Config, string | boolean>> } = {},
): Promise<Fleet> {
  const sim = await startChildSim({ sites: 5, seed: 7, ...opts.sim });
  const s = await startServer({ config: opts.config });
  return {
    s,
    sim,
    close: async () => {
      await s.close();
      await sim.close();
    },
  };
}

/** Registers simulator sites 1..n through REST POST /sites/add; returns the site records as answered. */
export async function registerSites(f: Fleet, n = f.sim.sites.length): Promise<Array<{ id: number; url: string }>> {
  const out: Array<{ id: number; url: string }> = [];
  for (const info of f.sim.sites.slice(0, n)) {
    const r = await f.s.rest('/sites/add', {
      method: 'POST',
      json: { url: info.url, admin: info.admin, admin_password: info.password, name: `Sim ${info.index}` },
    });
    if (r.status !== 200) throw new Error(`add ${info.url}: ${r.status} ${JSON.stringify(r.body)}`);
    out.push({ id: r.body.data.id, url: r.body.data.url });
  }
  return out;
}
