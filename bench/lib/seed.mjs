// bench/lib/seed.mjs — fleets written through the store API while no server runs on the data dir.
import { loadConfig } from '../../dist/config.js';
import { openServices, closeServices } from '../../dist/domain/index.js';
import { newKeyPair } from '../../dist/child/keys.js';
import { startChildSim } from '../../dist/child/simulator/server.js';

const WP = ['6.5.5', '6.6.2', '6.7.1', '6.8'];
const PHP = ['7.4', '8.1', '8.2', '8.3'];

export const domainOf = (i) => `site${i + 1}.example.com`;

/** Opens the data dir in this process, runs fn(services), flushes and closes (the lock is released). */
export async function withStore(dataDir, fn) {
  const services = await openServices(loadConfig({ dataDir }, {}));
  try {
    return await fn(services);
  } finally {
    await closeServices(services);
  }
}

/**
 * n registry-only sites (no child behind them) and a read_write API key. Written in batches of 2,000
 * per commit. Returns the bearer token and the domains.
 */
export async function seedFleet(dataDir, n) {
  return withStore(dataDir, async (s) => {
    const { token } = await s.auth.createKey('bench', 'read_write');
    for (let start = 0; start < n; start += 2000) {
      const end = Math.min(n, start + 2000);
      await s.store.write((tx) => {
        for (let i = start; i < end; i++) {
          s.sites.insert(tx, {
            url: `https://${domainOf(i)}/`,
            name: `Site ${i + 1}`,
            admin_username: 'admin',
            wp_version: WP[i % WP.length],
            php_version: PHP[i % PHP.length],
            child_version: '6.1',
            // A few suspended and a few disconnected, so that status filters have something to do.
            suspended: i % 50 === 7,
            disconnected: i % 97 === 3,
          });
        }
      });
    }
    return { token, domains: Array.from({ length: n }, (_, i) => domainOf(i)) };
  });
}

/**
 * A child simulator (in this process) whose n sites already trust one key pair, and n sites in the data
 * dir that use it: the "preconnected" registration (no 1,000 RSA key generations and handshakes).
 */
export async function seedPreconnected(dataDir, n, latencyMs) {
  const pair = await newKeyPair();
  return withStore(dataDir, async (s) => {
    const { token } = await s.auth.createKey('bench', 'read_write');
    const server = await s.settings.installationUrl();
    const sim = await startChildSim({ sites: n, latencyMs, preconnect: { publicKeyPem: pair.publicKeyPem, server } });
    for (let start = 0; start < n; start += 2000) {
      const end = Math.min(n, start + 2000);
      await s.store.write((tx) => {
        for (let i = start; i < end; i++) {
          const info = sim.sites[i];
          s.sites.insert(
            tx,
            { url: info.url, name: `Sim ${i + 1}`, admin_username: info.admin },
            { private_key_pem: pair.privateKeyPem, http_pass: null, regverify: null },
          );
        }
      });
    }
    // A real child site already exists before it is synced: build each simulated WordPress now, not in the timed run.
    for (let i = 1; i <= n; i++) sim.state(i);
    return { token, sim };
  });
}
