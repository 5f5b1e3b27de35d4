// Test support: a sitefleet server plus a child-site simulator on loopback, and registration of its sites.
import { expect } from 'vitest';
import { BAD_TEXT_FAULT, startChildSim, type ChildSim, type ChildSimOptions } from '../../src/child/simulator/server.js';
import type { SiteData } from '../../src/store/records.js';
import { seedSites, startServer, type TestServer } from './server.js';
import { newKeyPair } from '../../src/child/keys.js';
import type { Services } from '../../src/domain/index.js';
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

/**
 * With the `bad_text` fault on the `hostile` sites (simulator index = site id), one sync of them and the `healthy` ones
 * succeeds for all: the hostile sites' texts are stored cleaned, and the healthy sites' data is stored as they sent it.
 */
export async function expectBadTextCleaned(f: Fleet, hostile: number[], healthy: number[]): Promise<void> {
  const before = new Map<number, SiteData>();
  for (const id of hostile) before.set(id, (await f.s.services.children.siteData(id))!);
  const versions = new Map(hostile.map((id) => [id, f.s.services.sites.get(id)?.wp_version]));
  const lastSync = new Map(healthy.map((id) => [id, f.s.services.sites.get(id)?.last_sync]));
  for (const id of hostile) f.sim.setFault(id, { type: 'bad_text' });
  try {
    const r = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [...hostile, ...healthy] });
    expect([r.status, r.body.errors]).toEqual([200, []]);
    expect(r.body.total_synced).toBe(hostile.length + healthy.length);
    for (const id of hostile) {
      const data = (await f.s.services.children.siteData(id))!;
      const prev = before.get(id)!;
      // The one plugin, theme and user the fault touched: a name it had, plus the cleaned suffix.
      const names = (d: SiteData) => [d.plugins.map((p) => p.name), d.themes.map((t) => t.name), d.users.map((u) => u.display_name)];
      const [now, then] = [names(data), names(prev)];
      now.forEach((list, i) => {
        const touched = list.filter((n) => n.endsWith(BAD_TEXT_FAULT.cleanSuffix));
        expect(touched).toHaveLength(1);
        expect(then[i]!.map((n) => n + BAD_TEXT_FAULT.cleanSuffix)).toContain(touched[0]);
      });
      expect(data.security.map((x) => x.type)).toContain('evilcheck');
      expect(f.s.services.sites.get(id)?.wp_version).toBe(versions.get(id));
      expect(JSON.stringify(data)).not.toMatch(/\\u0000|\\ud[89a-f]/i);
    }
    for (const id of healthy) {
      expect(f.s.services.sites.get(id)?.sync_error).toBe('');
      expect(f.s.services.sites.get(id)?.last_sync).not.toBe(lastSync.get(id));
    }
  } finally {
    for (const id of hostile) f.sim.setFault(id, null);
  }
}

/** A simulator whose sites already trust one key, and sites in the store that use it (no 201 handshakes). */
export async function preconnectedFleet(services: Services, n: number, latencyMs = 0): Promise<ChildSim> {
  const keys = await newKeyPair();
  const sim = await startChildSim({
    sites: n,
    latencyMs,
    preconnect: { publicKeyPem: keys.publicKeyPem, server: await services.settings.installationUrl() },
  });
  const recs = await seedSites(services, n, (i) => ({ url: sim.sites[i]!.url, name: `Sim ${i + 1}`, admin_username: sim.sites[i]!.admin }));
  await services.store.write((tx) => {
    for (const r of recs) tx.putBlob('secrets', r.id, { private_key_pem: keys.privateKeyPem, http_pass: null, regverify: null });
  });
  return sim;
}
