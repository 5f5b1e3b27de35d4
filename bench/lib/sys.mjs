// bench/lib/sys.mjs — what the machine and the measured processes are doing: CPU (from /proc), memory, load.
import { readFileSync, readlinkSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { execFileSync } from 'node:child_process';

let hz = 100;
try {
  hz = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  /* Linux default */
}

/** Busy and total CPU time of the whole machine, in core-seconds (from /proc/stat). */
export function machineCpu() {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const idle = f[3] + (f[4] ?? 0);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: (total - idle) / hz, total: total / hz };
  } catch {
    return null;
  }
}

/** user+system CPU seconds of a process (and of its waited-for children: none here). */
export function procCpu(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / hz; // utime, stime (fields 14 and 15)
  } catch {
    return null;
  }
}

/** CPU seconds of this process plus its reaped children (serve, mcp processes once they have exited). */
export function selfAndChildrenCpu() {
  try {
    const s = readFileSync('/proc/self/stat', 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / hz;
  } catch {
    return null;
  }
}

/** Whole-run account: the machine's busy CPU minus ours (this process and every child, once reaped). */
export function runAccount() {
  const t0 = performance.now();
  const m0 = machineCpu();
  const s0 = selfAndChildrenCpu();
  return {
    stop() {
      const secs = (performance.now() - t0) / 1000;
      const m1 = machineCpu();
      const ours = selfAndChildrenCpu() - s0;
      const machine = m0 && m1 ? m1.busy - m0.busy : NaN;
      return {
        seconds: round(secs, 1),
        ours_cores: round(ours / secs, 2),
        others_cores: round(Math.max(0, machine - ours) / secs, 2),
        machine_cores: round(machine / secs, 2),
        loadavg_end: loadavg().map((x) => round(x, 2)),
      };
    },
  };
}

/**
 * A process's RSS by what holds it, in MB, from /proc/<pid>/smaps (read from outside: nothing is attached to it):
 * pages of its executable (`binary`), of other files (`files`), malloc's main heap (`malloc`, the [heap] mapping), and
 * every other anonymous mapping (`anon`: V8's heap pages, thread stacks, malloc's other arenas and large blocks).
 */
export function rssParts(pid) {
  try {
    const exe = readlinkSync(`/proc/${pid}/exe`);
    const parts = { binary: 0, files: 0, malloc: 0, anon: 0 };
    let where = 'anon';
    for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
      const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
      if (head) {
        const name = head[1];
        where = name === exe ? 'binary' : name === '[heap]' ? 'malloc' : name.startsWith('/') ? 'files' : 'anon';
      } else if (line.startsWith('Rss:')) parts[where] += Number(/(\d+) kB/.exec(line)[1]);
    }
    return Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, round(v / 1024, 1)]));
  } catch {
    return null;
  }
}

/** VmRSS / VmHWM of a process in MB (from /proc/<pid>/status). */
export function procMem(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
    return { rss_mb: round(kb('VmRSS') / 1024, 1), hwm_mb: round(kb('VmHWM') / 1024, 1) };
  } catch {
    return null;
  }
}

/**
 * Starts a CPU account over a stretch of time: the measured process (pid), this bench process, and
 * the rest of the machine ("others": other engineers' tests, the simulator is in this process).
 * `stop()` returns cores used on average by each (1.0 = one core fully busy).
 */
export function cpuAccount(pids = []) {
  const t0 = performance.now();
  const m0 = machineCpu();
  const self0 = process.cpuUsage();
  const p0 = pids.map((p) => procCpu(p));
  const l0 = loadavg()[0];
  return {
    stop() {
      const secs = (performance.now() - t0) / 1000;
      const m1 = machineCpu();
      const self = Object.values(process.cpuUsage(self0)).reduce((a, b) => a + b, 0) / 1e6;
      const procs = pids.map((p, i) => {
        const c = procCpu(p);
        return c === null || p0[i] === null ? 0 : c - p0[i];
      });
      const machine = m0 && m1 ? m1.busy - m0.busy : NaN;
      const ours = self + procs.reduce((a, b) => a + b, 0);
      return {
        seconds: round(secs, 2),
        measured_cores: procs.map((c) => round(c / secs, 2)),
        measured_cpu_s: procs,
        bench_cores: round(self / secs, 2),
        others_cores: round(Math.max(0, (machine - ours) / secs), 2),
        machine_cores: round(machine / secs, 2),
        loadavg_1m: round(Math.max(l0, loadavg()[0]), 2),
      };
    },
  };
}

export const round = (x, d = 1) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : null);

export function machine() {
  const c = cpus();
  return {
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    cpus: c.length,
    cpu_model: c[0]?.model ?? 'unknown',
    loadavg_at_start: loadavg().map((x) => round(x, 2)),
  };
}

/** Nearest-rank percentiles (ms) of a list of samples. */
export function percentiles(samples) {
  if (!samples.length) return { n: 0, p50: null, p90: null, p99: null, max: null, mean: null };
  const s = [...samples].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
  return {
    n: s.length,
    p50: round(at(0.5), 2),
    p90: round(at(0.9), 2),
    p99: round(at(0.99), 2),
    max: round(s[s.length - 1], 2),
    mean: round(s.reduce((a, b) => a + b, 0) / s.length, 2),
  };
}

/**
 * Calls `one()` (which resolves to null on success or a short failure text) for `seconds`, at most
 * `maxCount` times, after `warmupCount` unrecorded calls; latencies of successes only, serve CPU per call.
 */
export async function timedCalls(one, { seconds, maxCount, warmupCount, pid }) {
  const samples = [];
  let failures = 0;
  let firstFailure = null;
  const call = async (rec) => {
    const t = performance.now();
    const failure = await one();
    const ms = performance.now() - t;
    if (failure !== null) {
      failures++;
      firstFailure ??= failure;
    } else if (rec) samples.push(ms);
  };
  for (let w = 0; w < warmupCount; w++) await call(false);
  const acct = cpuAccount(pid ? [pid] : []);
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  while (performance.now() < end && samples.length + failures < maxCount) await call(true);
  const elapsed = (performance.now() - started) / 1000;
  const cpu = acct.stop();
  return {
    ...percentiles(samples),
    per_s: round(samples.length / elapsed, 0),
    failures,
    first_failure: firstFailure,
    serve_us_per_req: pid && samples.length ? round((cpu.measured_cpu_s[0] * 1e6) / (samples.length + failures), 0) : null,
    cpu: { serve_cores: cpu.measured_cores[0] ?? null, bench_cores: cpu.bench_cores, others_cores: cpu.others_cores },
  };
}
