// Test support: the services and the registry over a temp data dir (or, in the pg lane, a fresh database), without
// any door — for the per-ability tests in test/abilities/. Calls go through `registry.call` as one of the principals
// below, with zod's own types and no WordPress-style coercion; every answer is held to the ability's output schema
// (SITEFLEET_CHECK_OUTPUTS=1, set in the vitest configs). With `sim`, a child-site simulator on loopback gives the
// child abilities real sites to talk to.
import { rmSync } from 'node:fs';
import { boot } from '../../src/app/boot.js';
import type { AbilityName, FleetRegistry, InputOf, OutputOf } from '../../src/abilities/index.js';
import { startChildSim, type ChildSim, type ChildSimOptions } from '../../src/child/simulator/server.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { ServiceError } from '../../src/core/errors.js';
import type { Principal } from '../../src/core/principal.js';
import type { Services } from '../../src/domain/index.js';
import { freshDatabase, testPgUrl } from './postgres.js';
import { tempDir } from './server.js';

export interface Principals {
  /** A dashboard account with the administrator role. */
  admin: Principal;
  /** A dashboard account with the viewer role (read-only abilities only). */
  viewer: Principal;
  /** API keys by permission (checked against the ability's own method, as on the abilities and MCP doors). */
  readKey: Principal;
  writeKey: Principal;
  deleteKey: Principal;
  /** The local stdio process in read-only mode. */
  readOnlyLocal: Principal;
}

export interface AbilityHarness {
  services: Services;
  registry: FleetRegistry;
  dataDir: string;
  as: Principals;
  /** The simulator, when asked for. */
  sim: ChildSim;
  /** Runs an ability through the registry (no coercion) as `as` (default: the administrator); the answer is typed. */
  call<N extends AbilityName>(name: N, input: InputOf<N>, as?: Principal): Promise<OutputOf<N>>;
  /** Runs an ability that must fail; resolves to the ServiceError it threw (and fails the test when it succeeds). */
  fails<N extends AbilityName>(name: N, input: unknown, as?: Principal): Promise<ServiceError>;
  /** Registers simulator sites 1..n through add-site-v1; returns their ids and URLs. */
  addSimSites(n?: number, from?: number): Promise<Array<{ id: number; url: string }>>;
  close(): Promise<void>;
}

export async function openAbilities(
  opts: {
    sim?: ChildSimOptions | true;
    /** The config, or a function of the simulator's base URL (e.g. its stand-in directory as packageSource). */
    config?: Partial<Record<keyof Config, string | boolean>> | ((simBaseUrl: string) => Partial<Record<keyof Config, string | boolean>>);
  } = {},
): Promise<AbilityHarness> {
  const dataDir = tempDir('sitefleet-abilities-');
  const pg = testPgUrl();
  const databaseUrl = pg ? await freshDatabase(pg) : undefined;
  const sim = opts.sim ? await startChildSim({ sites: 3, seed: 7, ...(opts.sim === true ? {} : opts.sim) }) : undefined;
  const extra = typeof opts.config === 'function' ? opts.config(sim?.baseUrl ?? '') : opts.config;
  const config = loadConfig({ dataDir, databaseUrl, allowPrivateSites: true, ...extra }, {});
  const app = await boot(config, { jobTickMs: 100 });
  const { services, registry } = app;
  const admin = (await services.auth.createUser('admin', 'administrator')).user;
  const viewer = (await services.auth.createUser('viewer', 'viewer')).user;
  const key = async (permissions: 'read' | 'write' | 'delete') => (await services.auth.createKey(permissions, permissions)).key;
  const [readKey, writeKey, deleteKey] = [await key('read'), await key('write'), await key('delete')];
  const as: Principals = {
    admin: { kind: 'user', id: admin.id, name: admin.name, role: 'administrator' },
    viewer: { kind: 'user', id: viewer.id, name: viewer.name, role: 'viewer' },
    readKey: { kind: 'key', id: readKey.id, name: readKey.name, permissions: 'read' },
    writeKey: { kind: 'key', id: writeKey.id, name: writeKey.name, permissions: 'write' },
    deleteKey: { kind: 'key', id: deleteKey.id, name: deleteKey.name, permissions: 'delete' },
    readOnlyLocal: { kind: 'local', name: 'stdio', readOnly: true },
  };
  const call: AbilityHarness['call'] = (name, input, principal = as.admin) => registry.call(name, input, { principal, coerce: false });
  return {
    services,
    registry,
    dataDir,
    as,
    call,
    get sim(): ChildSim {
      if (!sim) throw new Error('openAbilities({ sim }) was not asked for a simulator');
      return sim;
    },
    async fails(name, input, principal = as.admin) {
      let answer: unknown;
      try {
        answer = await registry.call(name, input as never, { principal, coerce: false });
      } catch (e) {
        return e as ServiceError;
      }
      throw new Error(`${name} succeeded where it must fail: ${JSON.stringify(answer)}`);
    },
    async addSimSites(n, from = 1) {
      if (!sim) throw new Error('openAbilities({ sim }) was not asked for a simulator');
      const out: Array<{ id: number; url: string }> = [];
      for (const info of sim.sites.slice(from - 1, from - 1 + (n ?? sim.sites.length))) {
        const r = await call('add-site-v1', { url: info.url, admin: info.admin, admin_password: info.password, name: `Sim ${info.index}` });
        out.push({ id: r.id, url: r.url });
      }
      return out;
    },
    async close() {
      await app.close();
      await sim?.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
