// bench/lib/proc.mjs — the service as a real process: `node dist/cli.js serve --port 0 --data-dir <dir>`.
// Every process started here is tracked and killed (by pid) when the bench ends, however it ends.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, openSync, closeSync, rmSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The CLI every spawned process runs: dist/cli.js, or its snapshot once snapshotDist() ran. */
export let CLI = join(ROOT, 'dist', 'cli.js');

const live = new Set();
const dirs = new Set();

export function tempDir(tag) {
  const d = mkdtempSync(join(tmpdir(), `sitefleet-bench-${tag}-`));
  dirs.add(d);
  return d;
}

export function removeDir(d) {
  rmSync(d, { recursive: true, force: true });
  dirs.delete(d);
}

/**
 * Copies dist/ (with package.json and a link to node_modules) to a temp dir and points CLI at it, so that
 * a rebuild of dist/ during the run (someone's `npm test` runs tsc) cannot change the code under test
 * between one spawned server and the next. The bench's own imports were loaded at start.
 */
export function snapshotDist() {
  const d = tempDir('dist');
  cpSync(join(ROOT, 'dist'), join(d, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(d, 'package.json'));
  // The web console serves its assets from src/console/assets (console/door.ts ASSETS_DIR, relative to dist/).
  cpSync(join(ROOT, 'src', 'console', 'assets'), join(d, 'src', 'console', 'assets'), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(d, 'node_modules'), 'dir');
  CLI = join(d, 'dist', 'cli.js');
  return d;
}

/** Kill what is still running and remove temp dirs (exit path, also on SIGINT). */
export function cleanupAll() {
  for (const c of live) {
    try {
      c.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
  live.clear();
  for (const d of dirs) {
    try {
      rmSync(d, { recursive: true, force: true });
    } catch {
      /* best effort */
    }
  }
  dirs.clear();
}

/**
 * Starts `sitefleet serve` on 127.0.0.1, port 0, and resolves when it prints its "listening on" line.
 * stderr (the JSON log) goes to a file in `logDir` so that the bench process does not spend CPU on it.
 * `t0` (performance.now() just before spawn) lets callers measure cold start; `onLine` is given each line of stdout.
 */
export async function startServe(
  dataDir,
  { env = {}, args = [], logDir = dataDir, nodeArgs = [], timeoutMs = 60_000, onLine = null } = {},
) {
  const logFile = join(logDir, `serve-${Date.now()}.log`);
  const errFd = openSync(logFile, 'a');
  const t0 = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, CLI, 'serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, ...args], {
    env: { ...process.env, SITEFLEET_LOG: 'warn', ...env },
    stdio: ['ignore', 'pipe', errFd],
  });
  closeSync(errFd);
  live.add(child);
  const exit = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve(code ?? signal);
    }),
  );
  let out = '';
  let listening = false;
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start in ${timeoutMs} ms: ${tail(logFile)}`)), timeoutMs);
    // Each whole line of stdout goes to `onLine` (node's own lines too, as --trace-gc's); what is kept is the partial
    // line, and everything only until serve says where it listens.
    child.stdout.on('data', (d) => {
      out += d;
      if (!listening) {
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) {
          listening = true;
          clearTimeout(timer);
          resolve(m[1]);
        }
      }
      const cut = out.lastIndexOf('\n');
      if (cut < 0 || (!listening && !onLine)) return;
      if (onLine) for (const line of out.slice(0, cut).split('\n')) onLine(line);
      out = out.slice(cut + 1);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (${code}) before listening: ${tail(logFile)}`));
    });
  });
  const listenMs = performance.now() - t0;
  child.stdout.resume();
  return {
    child,
    pid: child.pid,
    url,
    t0,
    listenMs,
    logFile,
    log: () => tail(logFile),
    /** SIGTERM (graceful) or SIGKILL; resolves with the exit code or signal. Bounded: SIGKILL after 15 s. */
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return exit;
      child.kill(signal);
      const t = setTimeout(() => {
        try {
          child.kill('SIGKILL');
        } catch {
          /* gone */
        }
      }, 15_000);
      const r = await exit;
      clearTimeout(t);
      return r;
    },
  };
}

function tail(file, n = 2000) {
  try {
    const s = readFileSync(file, 'utf8');
    return s.slice(-n);
  } catch {
    return '(no log)';
  }
}

export function track(child) {
  live.add(child);
  child.once('exit', () => live.delete(child));
}
