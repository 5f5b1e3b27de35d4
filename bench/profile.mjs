// bench/profile.mjs — one scenario with `node --cpu-prof` on the serve process, then the functions
// that took the time (self and inclusive), by function and by file. For finding what bounds a figure.
//   node bench/profile.mjs --scenario get_domain --sites 20000 [--seconds 10] [--keep]
//   node bench/profile.mjs --scenario sync --sites 1000 --strace    (syscall counts instead: fsync, open, rename… per scenario)
// Scenarios: rest_list, not_modified (the same with If-None-Match: 304s), abilities_list, get_domain, tag_add, site_edit, writers, sync, check, mcp_call.
import { readdirSync, readFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { spawn } from 'node:child_process';
import { cleanupAll, removeDir, startServe, tempDir, track } from './lib/proc.mjs';
import { cannon, concurrentWriters, sequential } from './lib/load.mjs';
import { seedFleet, seedPreconnected } from './lib/seed.mjs';
import { call, REST, ABILITIES } from './lib/scenarios.mjs';
import { mcpHttp } from './lib/mcp.mjs';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string' },
    sites: { type: 'string' },
    seconds: { type: 'string' },
    top: { type: 'string' },
    keep: { type: 'boolean' },
    latency: { type: 'string' },
    strace: { type: 'boolean' },
    trace: { type: 'boolean' },
  },
});
const scenario = values.scenario ?? 'rest_list';
const n = Number(values.sites ?? 5000);
const seconds = Number(values.seconds ?? 8);
const top = Number(values.top ?? 25);
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => {
    cleanupAll();
    process.exit(130);
  });
process.on('exit', () => {
  if (!values.keep) cleanupAll();
});

const dir = tempDir(`prof-${scenario}`);
const profDir = join(dir, 'profile');
mkdirSync(profDir);
const remote = scenario === 'sync' || scenario === 'check';
const seeded = remote ? await seedPreconnected(join(dir, 'data'), n, Number(values.latency ?? 50)) : await seedFleet(join(dir, 'data'), n);
const { token } = seeded;
const env = scenario === 'check' ? { SITEFLEET_QUEUE_THRESHOLD: '100000' } : {};
if (values.trace) values.strace = true;
const nodeArgs = values.strace ? [] : ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--cpu-prof-interval=200'];
const serve = await startServe(join(dir, 'data'), { nodeArgs, args: ['--allow-private-sites'], env, logDir: dir });
let strace = null;
const straceOut = join(dir, 'strace.txt');
if (values.strace) {
  const mode = values.trace ? ['-tt', '-T'] : ['-c'];
  strace = spawn(
    'strace',
    [
      '-f',
      ...mode,
      '-e',
      'trace=fsync,fdatasync,openat,rename,mkdir,rmdir,utimensat,statx,newfstatat,write,writev,pwrite64',
      '-o',
      straceOut,
      '-p',
      String(serve.pid),
    ],
    { stdio: 'ignore' },
  );
  track(strace);
  await new Promise((r) => setTimeout(r, 500)); // attached
}
const t0 = performance.now();
let figure;
const ac = { token, connections: 16, duration: seconds, warmup: 1, pid: serve.pid };
let k = 0;
if (scenario === 'rest_list') figure = await cannon(serve.url, { ...ac, path: `${REST}/sites?per_page=100` });
else if (scenario === 'not_modified') {
  const path = `${REST}/sites?per_page=100`;
  const etag = (await fetch(serve.url + path, { headers: { authorization: `Bearer ${token}` } })).headers.get('etag');
  figure = await cannon(serve.url, { ...ac, path, extraHeaders: { 'if-none-match': etag } });
} else if (scenario === 'abilities_list')
  figure = await cannon(serve.url, { ...ac, path: `${ABILITIES}/abilities/svc/list-sites-v1/run?input[per_page]=100` });
else if (scenario === 'get_domain')
  figure = await cannon(serve.url, { ...ac, paths: () => `${REST}/sites/site${1 + (k = (k + 7919) % n)}.example.com` });
else if (scenario === 'tag_add')
  figure = await sequential(serve.url, {
    token,
    seconds,
    pid: serve.pid,
    make: (i) => ({ path: `${REST}/tags/add`, body: { name: `p-${i}` } }),
  });
else if (scenario === 'site_edit')
  figure = await sequential(serve.url, {
    token,
    seconds,
    pid: serve.pid,
    make: (i) => ({ path: `${REST}/sites/${1 + ((i * 7919) % n)}/edit`, body: { notes: `e${i}` } }),
  });
else if (scenario === 'writers') {
  const { ackedTags: _acked, lastNote: _last, ...w } = await concurrentWriters(serve.url, { token, seconds, pid: serve.pid });
  figure = w;
} else if (scenario === 'sync') {
  const q = await call(serve.url, token, 'POST', `${REST}/sites/sync`);
  const end = performance.now() + 300_000;
  let job;
  while (performance.now() < end) {
    job = (await call(serve.url, token, 'GET', `${REST}/jobs/${q.json.job_id}`)).json?.data;
    if (job?.status === 'completed' || job?.status === 'failed') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  figure = { seconds: (performance.now() - t0) / 1000, succeeded: job?.succeeded, failed: job?.failed };
} else if (scenario === 'mcp_call') {
  // One MCP SDK client over streamable HTTP, tools/call list-sites-v1 back to back (the bench's MCP HTTP row).
  figure = await mcpHttp(serve.url, token, { seconds, maxCount: 1_000_000, pid: serve.pid, expectTotal: n });
} else if (scenario === 'check') {
  const c = await call(serve.url, token, 'POST', `${ABILITIES}/abilities/svc/check-sites-v1/run`, { input: {} });
  figure = { seconds: (performance.now() - t0) / 1000, summary: c.json?.summary };
} else throw new Error(`unknown scenario ${scenario}`);
if (strace) {
  await new Promise((r) => {
    strace.once('exit', r);
    strace.kill('SIGINT');
  });
}
await serve.stop('SIGTERM');
if (seeded.sim) await seeded.sim.close();
console.log(JSON.stringify({ scenario, sites: n, figure }));
if (strace && values.trace) {
  // Commit timeline: the store's lock is a directory (mkdir .lock … rmdir .lock) held for exactly one commit.
  const lines = readFileSync(straceOut, 'utf8').split('\n');
  const sec = (l) => {
    const m = /(\d\d):(\d\d):(\d\d\.\d+)/.exec(l);
    return m ? +m[1] * 3600 + +m[2] * 60 + +m[3] : NaN;
  };
  const commits = [];
  let cur = null;
  for (const l of lines) {
    if (/mkdir\(".*\.lock"/.test(l) && / = 0 /.test(l)) cur = { start: sec(l), fsync: 0, fsyncMs: 0, opens: 0 };
    else if (cur && /fsync\(/.test(l)) {
      cur.fsync++;
      cur.fsyncMs += 1000 * Number(/<([\d.]+)>/.exec(l)?.[1] ?? 0);
    } else if (cur && /openat\(/.test(l)) cur.opens++;
    else if (cur && /rmdir\(".*\.lock"/.test(l)) {
      cur.end = sec(l);
      commits.push(cur);
      cur = null;
    }
  }
  const dur = commits.map((c) => (c.end - c.start) * 1000);
  const gaps = commits.slice(1).map((c, i) => (c.start - commits[i].end) * 1000);
  const { percentiles } = await import('./lib/sys.mjs');
  console.log(
    JSON.stringify(
      {
        commits: commits.length,
        commit_ms: percentiles(dur),
        gap_between_commits_ms: percentiles(gaps),
        fsyncs_per_commit: percentiles(commits.map((c) => c.fsync)),
        fsync_ms_per_commit: percentiles(commits.map((c) => c.fsyncMs)),
        opens_per_commit: percentiles(commits.map((c) => c.opens)),
        span_s: commits.length ? commits[commits.length - 1].end - commits[0].start : 0,
      },
      null,
      1,
    ),
  );
  if (!values.keep) removeDir(dir);
  process.exit(0);
}
if (strace) {
  console.log(readFileSync(straceOut, 'utf8'));
  if (!values.keep) removeDir(dir);
  process.exit(0);
}

const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error('no profile written');
const prof = JSON.parse(readFileSync(join(profDir, file), 'utf8'));
const byId = new Map(prof.nodes.map((x) => [x.id, x]));
const parent = new Map();
for (const x of prof.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
const short = (url) =>
  url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\//, 'nm:')
    .replace(/^.*\/work\/main\//, '');
const keyOf = (cf) => `${cf.functionName || '(anonymous)'} ${short(cf.url)}:${cf.lineNumber + 1}`;
const fileOf = (cf) =>
  cf.url
    ? short(cf.url).startsWith('nm:')
      ? short(cf.url)
          .split('/')
          .slice(0, short(cf.url).startsWith('nm:@') ? 2 : 1)
          .join('/')
      : short(cf.url)
    : `(${cf.functionName})`;
const self = new Map();
const incl = new Map();
const files = new Map();
let total = 0;
for (let i = 0; i < prof.samples.length; i++) {
  const dt = prof.timeDeltas[i] ?? 0;
  total += dt;
  const node = byId.get(prof.samples[i]);
  const cf = node.callFrame;
  self.set(keyOf(cf), (self.get(keyOf(cf)) ?? 0) + dt);
  files.set(fileOf(cf), (files.get(fileOf(cf)) ?? 0) + dt);
  const seen = new Set();
  for (let id = node.id; id !== undefined; id = parent.get(id)) {
    const k2 = keyOf(byId.get(id).callFrame);
    if (!seen.has(k2)) {
      seen.add(k2);
      incl.set(k2, (incl.get(k2) ?? 0) + dt);
    }
  }
}
const idle = self.get('(idle) :0') ?? 0;
const busy = total - idle;
const pct = (v) => `${((100 * v) / busy).toFixed(1).padStart(5)}%`;
const show = (title, m) => {
  console.log(`\n${title} (% of busy CPU; busy ${(busy / 1e6).toFixed(2)} s of ${(total / 1e6).toFixed(2)} s profiled)`);
  for (const [k2, v] of [...m]
    .filter(([k2]) => !k2.startsWith('(idle)') && !k2.startsWith('(root)') && !k2.startsWith('(program)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    console.log(`${pct(v)}  ${k2}`);
};
show('self time by function', self);
show('inclusive time by function', incl);
show('inclusive time, sitefleet code only (dist/)', new Map([...incl].filter(([k2]) => k2.includes(' dist/'))));
show('self time by file / package', new Map([...files].filter(([k2]) => k2 !== '((idle))')));
console.log(`\n(program) ${pct(self.get('(program) :0') ?? 0)}  (garbage collector) ${pct(self.get('(garbage collector) :0') ?? 0)}`);
if (values.keep) console.log(`profile kept: ${join(profDir, file)}`);
else removeDir(dir);
