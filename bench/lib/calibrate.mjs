// bench/lib/calibrate.mjs — what this machine can do at all, measured next to the figures so that a
// noisy run can be read: a bare node:http server and a bare express 5 router answering a small JSON
// (same autocannon settings as the REST scenarios), and a durable write (write + fsync + rename +
// directory fsync) in the data dir's filesystem.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { cannon } from './load.mjs';
import { removeDir, tempDir, track } from './proc.mjs';
import { percentiles } from './sys.mjs';

const SERVERS = {
  node_http: `
    import { createServer } from 'node:http';
    const s = createServer((req, res) => {
      const body = JSON.stringify({ success: 1, data: { id: 1, url: 'https://site1.example.com/', name: req.url, status: 'connected', client_id: null } });
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    s.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + s.address().port));`,
  express: `
    import express from 'express';
    const app = express();
    app.set('etag', false);
    app.set('query parser', 'extended');
    const r = express.Router();
    r.get('/sites/:id_or_domain', (req, res) => res.json({ success: 1, data: { id: 1, url: 'https://site1.example.com/', name: req.params.id_or_domain, status: 'connected', client_id: null } }));
    app.use('/wp-json/svc/v2', r);
    const s = app.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + s.address().port));`,
};

export async function startInline(code, env = {}) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    cwd: new URL('../..', import.meta.url).pathname,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  track(child);
  const url = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('calibration server did not start')), 15_000);
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(m[1]);
      }
    });
  });
  return {
    url,
    pid: child.pid,
    stop: () =>
      new Promise((r) => {
        child.once('exit', r);
        child.kill('SIGKILL');
      }),
  };
}

const FLOOR_BODY = 'x'.repeat(64 * 1024);

/** One durable 64 KB write in `dir` (write, fsync, rename, directory fsync): the floor of a durable commit. Its ms. */
export async function durableWrite(dir) {
  const t = performance.now();
  const fh = await open(join(dir, 'f.tmp'), 'w');
  await fh.writeFile(FLOOR_BODY);
  await fh.sync();
  await fh.close();
  await rename(join(dir, 'f.tmp'), join(dir, 'f.json'));
  const dh = await open(dir, 'r');
  await dh.sync();
  await dh.close();
  return performance.now() - t;
}

/**
 * Durable requests (`one()`, resolving to its failure or null) and the floor's durable write taken in turns, a block of
 * BLOCK_MS of each, for `seconds`: both see the same load, so their ratio holds when the load of a shared machine moves
 * during a run (the calibration's floor is taken minutes before). Blocks rather than one of each: a write right after
 * the other's fsyncs would pay for them.
 */
export async function besideFloor(one, { seconds, maxCount = 5_000, warmupCount = 20 }) {
  const BLOCK_MS = 250;
  const dir = tempDir('floor-beside');
  try {
    for (let i = 0; i < warmupCount; i++) await one();
    const req = [];
    const floor = [];
    let failures = 0;
    const end = performance.now() + seconds * 1000;
    while (performance.now() < end && req.length < maxCount) {
      for (const stop = performance.now() + BLOCK_MS; performance.now() < stop;) {
        const t = performance.now();
        if ((await one()) === null) req.push(performance.now() - t);
        else failures++;
      }
      for (const stop = performance.now() + BLOCK_MS; performance.now() < stop;) floor.push(await durableWrite(dir));
    }
    const r = percentiles(req);
    const f = percentiles(floor);
    return { p50: r.p50, p99: r.p99, floor_p50: f.p50, floor_p99: f.p99, pairs: floor.length, failures, ratio: r.p50 / f.p50 };
  } finally {
    removeDir(dir);
  }
}

export async function calibrate(d, log) {
  const out = {};
  for (const [name, code] of Object.entries(SERVERS)) {
    const s = await startInline(code);
    try {
      out[name] = await cannon(s.url, {
        path: '/wp-json/svc/v2/sites/site1.example.com',
        token: 'x',
        connections: 16,
        duration: d.calibrateSeconds,
        warmup: 1,
        pid: s.pid,
      });
      log(`  ${name}: ${out[name].rps} req/s p50 ${out[name].p50} p99 ${out[name].p99} ms`);
    } finally {
      await s.stop();
    }
  }
  const dir = tempDir('fsync');
  try {
    const samples = [];
    const end = performance.now() + d.fsyncSeconds * 1000;
    for (let i = 0; i < 500 && performance.now() < end; i++) samples.push(await durableWrite(dir));
    out.durable_write_64k = percentiles(samples);
    log(`  durable 64 KB write (write, fsync, rename, dir fsync): p50 ${out.durable_write_64k.p50} p99 ${out.durable_write_64k.p99} ms`);
  } finally {
    removeDir(dir);
  }
  return out;
}

// A bare node:http server sending the very bytes sitefleet sent for one request (status, headers, body): the limit
// of this machine for that answer (issue 19). Started per figure, measured with the same autocannon settings.
const SAME_BYTES = `
  import { createServer } from 'node:http';
  import { readFileSync } from 'node:fs';
  const { status, headers } = JSON.parse(readFileSync(process.env.ANSWER_HEAD, 'utf8'));
  const body = readFileSync(process.env.ANSWER_BODY);
  const s = createServer((req, res) => { res.writeHead(status, headers); res.end(status === 304 ? undefined : body); });
  s.keepAliveTimeout = 65000;
  s.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + s.address().port));`;

/** Fetches `path` from sitefleet (with `extraHeaders`), then measures a bare server sending that same answer. */
export async function sameBytes(serveUrl, token, path, extraHeaders, d) {
  const res = await fetch(serveUrl + path, { headers: { authorization: `Bearer ${token}`, ...extraHeaders } });
  const body = Buffer.from(await res.arrayBuffer());
  const headers = {};
  for (const [k, v] of res.headers) if (!['date', 'connection', 'keep-alive', 'transfer-encoding'].includes(k)) headers[k] = v;
  const dir = tempDir('same-bytes');
  try {
    writeFileSync(join(dir, 'head.json'), JSON.stringify({ status: res.status, headers }));
    writeFileSync(join(dir, 'body'), body);
    const s = await startInline(SAME_BYTES, { ANSWER_HEAD: join(dir, 'head.json'), ANSWER_BODY: join(dir, 'body') });
    try {
      const r = await cannon(s.url, { path, token: 'x', connections: 16, duration: d.readSeconds, warmup: d.warmupSeconds, pid: s.pid });
      return { ...r, status: res.status, bytes: body.length };
    } finally {
      await s.stop();
    }
  } finally {
    removeDir(dir);
  }
}
