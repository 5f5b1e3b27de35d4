// `sitefleet demo`: a child-site simulator with 25 sites and the service on its defaults, the sites
// registered and synced, and three commands to try.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { boot } from './app/boot.js';
import { startChildSim } from './child/simulator/server.js';
import { loadConfig } from './config.js';
import type { Principal } from './core/principal.js';
import { parseCommand, UsageError } from './cli-args.js';

/** The file that marks a directory as made by the demo, and so the demo's to empty. */
export const DEMO_MARKER = '.sitefleet-demo';

export const DEMO_HELP = `Usage: sitefleet demo [--port 8787] [--data-dir ./data/demo] [--sites 25]

Starts a child-site simulator on loopback, the service on http://127.0.0.1:<port> (--port 0: a free port), registers
and syncs the simulated sites, and prints the credentials and three commands to try. Ctrl-C stops both.
The demo's data dir is emptied at start (the simulated sites do not outlive the demo), but only a directory the demo
made itself (it leaves a ${DEMO_MARKER} file in it): an existing directory with anything else in it is refused.`;

/**
 * The simulator forgets its sites when it stops, so every demo starts from an empty data dir — but the demo empties only
 * what it made: a missing or empty directory becomes the demo's (marked), a marked one is emptied, anything else (a real
 * fleet given by mistake) is refused untouched.
 */
function claimDemoDir(dir: string): void {
  const marker = join(dir, DEMO_MARKER);
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) throw new Error(`${dir} is a file; give --data-dir a directory for the demo.`);
    const entries = readdirSync(dir);
    if (entries.length && !existsSync(marker)) {
      throw new Error(
        `${dir} is not empty and was not made by the demo (no ${DEMO_MARKER} in it); the demo empties its data dir at start, so it leaves this one alone. Give --data-dir a new or empty directory.`,
      );
    }
    for (const e of entries) if (e !== DEMO_MARKER) rmSync(join(dir, e), { recursive: true, force: true });
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(marker, 'Made by "sitefleet demo", which empties this directory each time it starts.\n');
}

export async function demo(args: string[]): Promise<void> {
  const { values } = parseCommand(
    'demo',
    args,
    { port: { type: 'string' }, 'data-dir': { type: 'string' }, sites: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    { positionals: 0 },
  );
  if (values.help) return void console.log(DEMO_HELP);
  const count = Number(values.sites ?? 25);
  if (!Number.isInteger(count) || count < 1 || count > 1000) throw new UsageError('--sites is a number from 1 to 1000.');
  const cfg = loadConfig({ port: values.port, dataDir: values['data-dir'] ?? './data/demo', allowPrivateSites: true });
  claimDemoDir(cfg.dataDir);
  const sim = await startChildSim({ sites: count, seed: 1 });
  const { services, registry, http: served, close } = await boot(cfg, { http: {} });
  const http = served!;
  const local: Principal = { kind: 'local', name: 'cli' };
  for (const s of sim.sites) {
    await registry.call(
      'add-site-v1',
      { url: s.url, admin: s.admin, admin_password: s.password, name: `Demo site ${s.index}` },
      { principal: local, coerce: false },
    );
  }
  const sync = await registry.call('sync-sites-v1', {}, { principal: local, coerce: false });
  const { token } = await services.auth.createKey(`demo-${Date.now()}`, 'read_write');
  const { password } = await services.auth.createUser('demo', 'administrator');
  const rest = `${http.url}${cfg.restPrefix}`;
  process.stdout.write(
    [
      '',
      `Child-site simulator: ${sim.baseUrl}/s/1/ … /s/${count}/ (${count} sites, registered and ${sync.total_synced ?? 0} synced)`,
      `sitefleet:            ${http.url}  (data: ${cfg.dataDir})`,
      `API key:              ${token}`,
      `User / password:      demo / ${password}`,
      `Web console:          ${http.url}/console  (log in as demo)`,
      '',
      'Try:',
      `  curl -H "Authorization: Bearer ${token}" "${rest}/sites?per_page=5"`,
      `  curl -u "demo:${password}" "${http.url}${cfg.abilitiesPrefix}/abilities/svc/get-site-v1/run?input[site_id_or_domain]=1&input[include_stats]=true" -g`,
      `  curl -X POST -H "Authorization: Bearer ${token}" "${rest}/sites/check"`,
      '',
      'Ctrl-C stops the demo.',
      '',
    ].join('\n'),
  );
  const stop = async () => {
    await close();
    await sim.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}
