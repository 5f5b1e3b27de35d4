// Test support: run the built CLI (dist/cli.js) as a real process.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

export function run(args: string[], env: Record<string, string> = {}): Proc {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, SITEFLEET_LOG: 'warn', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    err += d;
  });
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  return { child, stdout: () => out, stderr: () => err, exit };
}

/** Runs a CLI command to completion. */
export async function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = run(args, env);
  p.child.stdin!.end();
  const code = await p.exit;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** Starts `sitefleet serve` on an ephemeral port and waits for its "listening on" line. */
export async function serveProcess(
  args: string[],
  env: Record<string, string> = {},
): Promise<Proc & { url: string; stop(signal?: NodeJS.Signals): Promise<number | null> }> {
  const p = run(['serve', '--port', '0', ...args], env);
  const deadline = Date.now() + 15_000;
  let url = '';
  while (!url) {
    const m = /listening on (http:\/\/\S+)/.exec(p.stdout());
    if (m) url = m[1]!;
    else if (Date.now() > deadline || p.child.exitCode !== null) throw new Error(`serve did not start: ${p.stderr()}`);
    else await new Promise((r) => setTimeout(r, 20));
  }
  return {
    ...p,
    url,
    stop: async (signal = 'SIGTERM') => {
      p.child.kill(signal);
      return p.exit;
    },
  };
}

export const lastLine = (s: string) => s.trim().split('\n').pop()!.trim();
