// bench/lib/onboard.mjs — issue 19: registering 1,000 simulated sites through the REST batch (100 per request), the
// way a new fleet is onboarded: every site a real handshake (a fresh RSA key pair, register, first sync) with the
// simulator, timed from the first request to the last answer.
import { generateKeyPairSync } from 'node:crypto';
import { cpus } from 'node:os';
import { Client } from 'undici';
import { openServices, closeServices } from '../../dist/domain/index.js';
import { loadConfig } from '../../dist/config.js';
import { startChildSim } from '../../dist/child/simulator/server.js';
import { assertLoopback } from './load.mjs';
import { removeDir, startServe, tempDir } from './proc.mjs';
import { cpuAccount, round } from './sys.mjs';

/**
 * The floor of onboarding on this machine: one RSA-2048 key pair per site (the protocol's, §4.1), generated here
 * first (CPU ms per key, 8 keys), times the sites, over every core.
 */
function keygenFloor(sites) {
  const t = process.cpuUsage();
  for (let i = 0; i < 8; i++) generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 0x10001 });
  const u = process.cpuUsage(t);
  const msPerKey = (u.user + u.system) / 1000 / 8;
  return { keygen_cpu_ms_per_key: round(msPerKey, 1), floor_s: round((sites * msPerKey) / 1000 / cpus().length, 1) };
}

export async function onboardBench({ sites = 1000, perRequest = 100, latency = 0 }, log) {
  const floor = keygenFloor(sites);
  log(
    `  RSA-2048 key generation: ${floor.keygen_cpu_ms_per_key} CPU ms per key → ${floor.floor_s} s for ${sites} keys on ${cpus().length} cores`,
  );
  const dir = tempDir('onboard');
  const sim = await startChildSim({ sites, latencyMs: latency });
  let serve;
  try {
    const services = await openServices(loadConfig({ dataDir: dir }, {}));
    const { token } = await services.auth.createKey('bench', 'read_write');
    await closeServices(services);
    serve = await startServe(dir, { args: ['--allow-private-sites'] });
    const client = new Client(assertLoopback(serve.url).origin, { headersTimeout: 600_000, bodyTimeout: 600_000 });
    const acct = cpuAccount([serve.pid]);
    const t0 = performance.now();
    let added = 0;
    const failures = [];
    try {
      for (let from = 0; from < sites; from += perRequest) {
        const create = sim.sites
          .slice(from, from + perRequest)
          .map((s) => ({ url: s.url, admin: s.admin, admin_password: s.password, name: `Sim ${s.index}` }));
        const res = await client.request({
          method: 'POST',
          path: '/wp-json/svc/v2/sites/batch',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ create }),
        });
        const body = JSON.parse(await res.body.text());
        for (const item of body.create ?? []) {
          if (item.error) failures.push(item.error.code);
          else added++;
        }
        if (res.statusCode !== 200) failures.push(`HTTP ${res.statusCode}`);
      }
    } finally {
      await client.close();
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = acct.stop();
    const out = {
      ...floor,
      sites,
      per_request: perRequest,
      seconds: round(seconds, 2),
      added,
      failed: failures.length,
      first_failure: failures[0] ?? null,
      keys_per_s: round(added / seconds, 1),
      serve_cpu_s: round(cpu.measured_cpu_s[0], 1),
      serve_cores: cpu.measured_cores[0],
      others_cores: cpu.others_cores,
      bench_cores: cpu.bench_cores,
    };
    log(`  registered ${added} of ${sites} sites in ${out.seconds} s (${failures.length} failed; serve ${out.serve_cpu_s} CPU s)`);
    return out;
  } finally {
    if (serve) await serve.stop();
    await sim.close();
    removeDir(dir);
  }
}
