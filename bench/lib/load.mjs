// bench/lib/load.mjs — load drivers: autocannon for throughput, undici clients for sequential and
// concurrent writes, all bounded in time and in count, all against 127.0.0.1 only.
import autocannon from 'autocannon';
import { Client, Pool } from 'undici';
import { cpuAccount, percentiles, round, timedCalls } from './sys.mjs';

export function assertLoopback(url) {
  const u = new URL(url);
  if (u.hostname !== '127.0.0.1') throw new Error(`the bench only targets 127.0.0.1, not ${u.hostname}`);
  return u;
}

/**
 * autocannon against one server: `paths` is a path or a function returning the next path (spread over
 * a fleet). Returns req/s, latency p50/p99 (ms), non-2xx and errors, and CPU accounting.
 */
export async function cannon(url, { path, paths, token, connections = 16, duration = 5, warmup = 1, pid, extraHeaders = {} }) {
  const u = assertLoopback(url);
  const headers = { authorization: `Bearer ${token}`, ...extraHeaders };
  const requests = paths ? [{ method: 'GET', setupRequest: (req) => ({ ...req, path: paths() }) }] : [{ method: 'GET', path }];
  const base = { url: u.origin, connections, headers, requests, pipelining: 1, timeout: 10 };
  if (warmup > 0) await autocannon({ ...base, duration: warmup });
  const acct = cpuAccount(pid ? [pid] : []);
  // Bounded by time (autocannon ignores duration when amount is set, so no amount here).
  const r = await autocannon({ ...base, duration });
  const cpu = acct.stop();
  return {
    rps: round(r.requests.average, 0),
    p50: r.latency.p50,
    p90: r.latency.p90,
    p99: r.latency.p99,
    max: r.latency.max,
    requests: r.requests.total,
    ok2xx: r['2xx'],
    non2xx: r.non2xx,
    status_3xx: r['3xx'],
    errors: r.errors,
    timeouts: r.timeouts,
    duration_s: duration,
    connections,
    // Serve CPU (all threads) per answered request: far less sensitive to other load on the machine than req/s.
    serve_us_per_req: pid && r.requests.total ? round((cpu.measured_cpu_s[0] * 1e6) / r.requests.total, 0) : null,
    cpu: {
      serve_cores: cpu.measured_cores[0] ?? null,
      bench_cores: cpu.bench_cores,
      others_cores: cpu.others_cores,
      loadavg_1m: cpu.loadavg_1m,
    },
  };
}

/** One keep-alive connection, one request at a time: the latency a single careful client sees. */
export async function sequential(url, { token, make, seconds = 5, maxCount = 5_000, warmupCount = 20, pid, calls = timedCalls }) {
  const u = assertLoopback(url);
  const client = new Client(u.origin, { pipelining: 1, keepAliveTimeout: 60_000 });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  let i = 0;
  const one = async () => {
    const { method = 'POST', path, body } = make(i++);
    const res = await client.request({ method, path, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.body.text();
    return res.statusCode >= 300 ? `${res.statusCode} ${text.slice(0, 200)}` : null;
  };
  try {
    return await calls(one, { seconds, maxCount, warmupCount, pid });
  } finally {
    await client.close();
  }
}

/**
 * `writers` concurrent writers, each sequential, each with its own site: writer w alternately adds the
 * tag "cw-w-seq" and sets notes "cw-w-seq" on site w+1. Records what was acknowledged (2xx) so that
 * the caller can compare with what the store holds afterwards.
 */
export async function concurrentWriters(url, { token, writers = 50, seconds = 5, maxPerWriter = 2_000, pid }) {
  const u = assertLoopback(url);
  const pool = new Pool(u.origin, { connections: writers, pipelining: 1, keepAliveTimeout: 60_000 });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const ackedTags = new Set();
  const lastNote = new Map();
  const samples = [];
  let failures = 0;
  let firstFailure = null;
  const post = async (path, body) => {
    const t = performance.now();
    const res = await pool.request({ method: 'POST', path, headers, body: JSON.stringify(body) });
    const text = await res.body.text();
    samples.push(performance.now() - t);
    if (res.statusCode >= 300) {
      failures++;
      firstFailure ??= `${res.statusCode} ${text.slice(0, 200)}`;
      return false;
    }
    return true;
  };
  const acct = cpuAccount(pid ? [pid] : []);
  const started = performance.now();
  const end = started + seconds * 1000;
  try {
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let seq = 0; seq < maxPerWriter && performance.now() < end; seq++) {
          const name = `cw-${w}-${seq}`;
          if (seq % 2 === 0) {
            if (await post(`/wp-json/svc/v2/tags/add`, { name })) ackedTags.add(name);
          } else if (await post(`/wp-json/svc/v2/sites/${w + 1}/edit`, { notes: name })) {
            lastNote.set(w + 1, name);
          }
        }
      }),
    );
  } finally {
    await pool.close();
  }
  const elapsed = (performance.now() - started) / 1000;
  const cpu = acct.stop();
  const acked = samples.length - failures;
  return {
    writes_per_s: round(acked / elapsed, 0),
    acked,
    failures,
    first_failure: firstFailure,
    writers,
    serve_us_per_req: pid && samples.length ? round((cpu.measured_cpu_s[0] * 1e6) / samples.length, 0) : null,
    latency: percentiles(samples),
    ackedTags,
    lastNote,
    cpu: { serve_cores: cpu.measured_cores[0] ?? null, bench_cores: cpu.bench_cores, others_cores: cpu.others_cores },
  };
}
