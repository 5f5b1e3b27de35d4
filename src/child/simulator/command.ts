// src/child/simulator/command.ts — `sitefleet child-sim`: run the child simulator in the foreground and print its sites.
import { parseArgs } from 'node:util';
import { startChildSim } from './server.js';

const USAGE = `Usage: sitefleet child-sim [--port P] [--host H] [--sites N] [--latency-ms L] [--seed S] [--admin NAME --password PW]

Serves N simulated WordPress sites with the MainWP Child plugin at http://H:P/s/<n>/ (n = 1..N).
When ready, prints one JSON line per site: {"url":...,"admin":...,"password":...}. Stops on SIGINT/SIGTERM.

  --port P         listen port (default: a free port)
  --host H         listen address (default 127.0.0.1)
  --sites N        number of sites (default 3)
  --latency-ms L   delay added to every request (default 0)
  --seed S         seed of the generated sites (default 1)
  --admin NAME     admin login on every site (default admin)
  --password PW    admin password on every site (default: one per site)
`;

function nonNegativeInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new Error(`--${name} must be a non-negative integer, got "${value}"`);
  return Number(value);
}

export async function childSimCommand(argv: string[]): Promise<void> {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: argv,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        sites: { type: 'string' },
        'latency-ms': { type: 'string' },
        seed: { type: 'string' },
        admin: { type: 'string' },
        password: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  let options: Parameters<typeof startChildSim>[0];
  try {
    const str = (k: string): string | undefined => (typeof values[k] === 'string' ? (values[k] as string) : undefined);
    const sites = nonNegativeInt('sites', str('sites'));
    if (sites === 0) throw new Error('--sites must be at least 1');
    options = {
      port: nonNegativeInt('port', str('port')),
      host: str('host'),
      sites,
      latencyMs: nonNegativeInt('latency-ms', str('latency-ms')),
      seed: nonNegativeInt('seed', str('seed')),
      admin: str('admin'),
      password: str('password'),
    };
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const sim = await startChildSim(options);
  process.stdout.write(sim.sites.map((s) => JSON.stringify({ url: s.url, admin: s.admin, password: s.password })).join('\n') + '\n');
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await sim.close();
}
