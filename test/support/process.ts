// Test support: run the built CLI (dist/cli.js) as a real process.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** The exit code, once the process has ended and its output has been read to the end. */
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
  // 'close', not 'exit': the process may have exited before its last output was read (a loaded machine cut a --help
  // short); 'close' comes once its pipes are drained, so stdout() and stderr() are whole when `exit` resolves.
  const exit = once(child, 'close').then(([code]) => code as number | null);
  return { child, stdout: () => out, stderr: () => err, exit };
}

/**
 * Waits for `pattern` in `read()` (a child's output so far), checked again on each chunk the child writes — no polling
 * on the clock; refused when the child exits first or after `ms`, with `errors()` (its stderr) in the message.
 */
export function untilOutput(
  child: ChildProcess,
  read: () => string,
  pattern: RegExp,
  opts: { ms: number; what: string; errors: () => string },
): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const done = (fn: () => void) => {
      clearTimeout(timer);
      child.stdout!.off('data', check);
      child.off('exit', exited);
      fn();
    };
    const check = () => {
      const m = pattern.exec(read());
      if (m) done(() => resolve(m));
    };
    const exited = () => done(() => reject(new Error(`${opts.what} exited before it was ready: ${opts.errors()}`)));
    const timer = setTimeout(
      () => done(() => reject(new Error(`${opts.what} was not ready within ${opts.ms} ms: ${opts.errors()}`))),
      opts.ms,
    );
    child.stdout!.on('data', check);
    child.once('exit', exited);
    if (child.exitCode !== null) exited();
    else check();
  });
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
  const url = (await untilOutput(p.child, p.stdout, /listening on (http:\/\/\S+)/, { ms: 15_000, what: 'serve', errors: p.stderr }))[1]!;
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
