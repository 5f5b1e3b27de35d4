// bench/lib/fleet.mjs — the 100,000-site rows of issue 34 for bench/pg.mjs (`--only fleet`): one fleet of N simulated
// sites on PostgreSQL, seeded through the store, then one real `serve --database-url` process measured for start to
// first answer, a filtered site list (search and tag), RSS through a mixed read/write run, and a full sync of the fleet
// against a simulator in a process of its own (bench/lib/sim-proc.mjs).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client, Pool } from 'undici';
import { loadConfig } from '../../dist/config.js';
import { closeServices, openServices } from '../../dist/domain/index.js';
import { newKeyPair } from '../../dist/child/keys.js';
import { DEFAULT_SETTINGS } from '../../dist/domain/monitors.js';
import pg from 'pg';
import { sequential } from './load.mjs';
import { removeDir, startServe, tempDir, track } from './proc.mjs';
import { cpuAccount, percentiles, procMem, round, rssParts } from './sys.mjs';

const REST = '/wp-json/svc/v2';
const ABILITIES = '/wp-json/wp-abilities/v1/abilities/svc';
/** Site i is named "<Word> i": 13 words and 20 tags (i mod 20), so a word and a tag together select one site in 260. */
const WORDS = [
  'Bakery',
  'Studio',
  'Garden',
  'Clinic',
  'Harbor',
  'Museum',
  'Orchard',
  'Theatre',
  'Atelier',
  'Brewery',
  'Gallery',
  'Library',
  'Dental',
];
const TAGS = 20;
const WP = ['6.5.5', '6.6.2', '6.7.1', '6.8.2'];
const PHP = ['7.4.33', '8.1.31', '8.2.28', '8.3.14'];
/** Synced sites whose data (plugins, themes, users, security...) the other sites' data is made from, each a little varied. */
const SAMPLES = 8;
const SECRET_FREE = new Set(['id', 'url', 'name', 'created_at', 'updated_at', 'notes', 'client_id']);

const nameOf = (i) => `${WORDS[i % WORDS.length]} ${i}`;
const tagOf = (i) => i % TAGS;
/** The query the target names: a search (one word of the names) and a tag, a page of 100. */
const QUERY = { word: 3, tag: 7 };

/** Forks the simulator process; resolves once every site is built, with its base URL. */
async function startSimProc(opts) {
  const child = fork(fileURLToPath(new URL('./sim-proc.mjs', import.meta.url)), [], {
    execArgv: ['--max-old-space-size=8192'],
    env: { ...process.env, SITEFLEET_BENCH_SIM: JSON.stringify(opts) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  track(child);
  const first = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the simulator process exited (${code}) before it was ready`)));
  });
  const ask = () =>
    new Promise((resolve) => {
      const on = (m) => {
        if (m?.stats) {
          child.off('message', on);
          resolve(m.stats);
        }
      };
      child.on('message', on);
      child.send('stats');
    });
  return {
    ...first,
    pid: child.pid,
    stats: ask,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', resolve);
        child.send('stop');
      }),
  };
}

/** Another site's copy of a sample's site data: the same shape, two plugin versions and the sync time its own. */
function vary(data, i) {
  const n = data.plugins.length;
  const bump = (p) => ({ ...p, version: `${p.version}.${i % 97}` });
  const plugins = data.plugins.map((p, j) => (j === i % n || j === (i * 7) % n ? bump(p) : p));
  return { ...data, plugins, synced_at: new Date(Date.parse(data.synced_at) - (i % 86_400) * 1000).toISOString() };
}

/**
 * N sites in a fresh database, each one a site of the simulator (preconnected: it trusts one key pair, stored as every
 * site's secret). The first SAMPLES are synced from the simulator for real; every other site gets a sample's synced
 * fields and site data (≈ 9 KB of JSON), varied by vary(). Tag t holds the sites i with i mod 20 = t.
 */
async function seedFleet(pgServer, dbName, n, log) {
  const dataDir = tempDir('pg-fleet');
  const databaseUrl = await pgServer.database(dbName);
  const env = { SITEFLEET_ALLOW_PRIVATE_SITES: '1' };
  const s = await openServices(loadConfig({ dataDir, databaseUrl }, env));
  let sim = null;
  try {
    const pair = await newKeyPair();
    const server = await s.settings.installationUrl();
    let t = performance.now();
    sim = await startSimProc({ sites: n, publicKeyPem: pair.publicKeyPem, server, latencyMs: 0 });
    const simStartMs = performance.now() - t;
    log(`fleet: simulator process (${n.toLocaleString('en')} sites) ready in ${round(simStartMs / 1000, 1)} s, ${sim.rss_mb} MB RSS`);
    t = performance.now();
    const { token } = await s.auth.createKey('bench', 'read_write');
    const secret = { private_key_pem: pair.privateKeyPem, http_pass: null, regverify: null };
    const ids = new Int32Array(n + 1);
    // A write function may run more than once (PostgreSQL runs it again after a conflict): it only notes each site's
    // id, and the tags' members are gathered once every site is written (they were pushed in it, each site 2-3 times).
    const site = (tx, i) => {
      const rec = s.sites.insert(tx, { url: `${sim.baseUrl}/s/${i}/`, name: nameOf(i), admin_username: 'admin' }, secret);
      ids[i] = rec.id;
      return rec;
    };
    const k = Math.min(SAMPLES, n);
    const samples = [];
    await s.store.write((tx) => {
      for (let i = 1; i <= k; i++) site(tx, i);
    });
    for (let i = 1; i <= k; i++) {
      const out = await s.children.fetchSync(s.sites.get(ids[i]));
      if (!out.ok) throw new Error(`the sample sync of simulated site ${i} failed: ${JSON.stringify(out.error)}`);
      await s.store.write((tx) => out.commit(tx));
      const rec = s.sites.get(ids[i]);
      const synced = Object.fromEntries(Object.entries(rec).filter(([key]) => !SECRET_FREE.has(key)));
      samples.push({ synced, data: await s.children.siteData(ids[i]) });
    }
    for (let start = k + 1; start <= n; start += 2000) {
      await s.store.write((tx) => {
        for (let i = start; i < Math.min(n + 1, start + 2000); i++) {
          const sample = samples[i % k];
          const rec = site(tx, i);
          s.sites.patch(tx, rec.id, { ...sample.synced, wp_version: WP[i % WP.length], php_version: PHP[(i >> 2) % PHP.length] });
          tx.putBlob('site-data', rec.id, vary(sample.data, i));
        }
      });
    }
    const tagIds = await s.store.write((tx) => Array.from({ length: TAGS }, (_, tg) => s.tags.create(tx, { name: `Tag ${tg}` }).id));
    // Membership is kept on the sites (domain/tags.ts): each site is written with its tag.
    for (let start = 1; start <= n; start += 2000) {
      await s.store.write((tx) => {
        for (let i = start; i < Math.min(n + 1, start + 2000); i++) s.tags.setSiteTags(tx, ids[i], [tagIds[tagOf(i)]]);
      });
    }
    const seedMs = performance.now() - t;
    const dataBytes = JSON.stringify(samples[0].data).length;
    log(
      `fleet: seeded ${n.toLocaleString('en')} sites in ${round(seedMs / 1000, 1)} s (site data ≈ ${round(dataBytes / 1024, 1)} KB each)`,
    );
    return {
      dataDir,
      databaseUrl,
      env,
      token,
      sim,
      ids,
      tagIds,
      seed: {
        seed_ms: round(seedMs, 0),
        sim_start_ms: round(simStartMs, 0),
        sim_rss_mb: sim.rss_mb,
        site_data_bytes: dataBytes,
        samples: k,
      },
    };
  } catch (err) {
    await sim?.stop();
    throw err;
  } finally {
    await closeServices(s);
  }
}

/** RSS of a process sampled every `everyMs` until stop(): peak, first and last (MB). */
function rssSampler(pid, everyMs = 1000) {
  const samples = [];
  const take = () => {
    const m = procMem(pid);
    if (m) samples.push(m.rss_mb);
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return {
        start_mb: samples[0],
        peak_mb: Math.max(...samples),
        end_mb: samples[samples.length - 1],
        samples: samples.length,
        // The RSS at the start of each minute: whether it levels off or keeps growing through an hour.
        per_minute_mb: samples.filter((_, i) => i % Math.round(60_000 / everyMs) === 0),
      };
    },
  };
}

async function getJson(url, path, token) {
  const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, json, text };
}

const listPath = (search, tagId, page = 1) =>
  `${ABILITIES}/list-sites-v1/run?input[per_page]=100&input[page]=${page}&input[search]=${search}&input[tag_id]=${tagId}`;

/**
 * The search + tag list timed on distinct URLs: every (word, tag) pair once, so that no answer comes from the door's
 * answer cache (it keys on the URL and the store's state), after 20 unrecorded ones (page 2 of other pairs). Each
 * answer is checked: 200, `total` = the seeded sites that match (the filter's own rule: the id, name or URL contains
 * the search, and the tag holds the site), a page of min(100, total), every item one of them. Throws otherwise.
 */
async function distinctQueries(serve, f, n) {
  const client = new Client(serve.url, { pipelining: 1, keepAliveTimeout: 60_000 });
  const headers = { authorization: `Bearer ${f.token}` };
  const get = async (path) => {
    const t = performance.now();
    const res = await client.request({ method: 'GET', path, headers });
    const text = await res.body.text();
    return { ms: performance.now() - t, status: res.statusCode, text };
  };
  const samples = [];
  const totals = [];
  const pages = [];
  try {
    for (let w = 0; w < 20; w++) await get(listPath(WORDS[w % WORDS.length].toLowerCase(), f.tagIds[(w + 1) % TAGS], 2));
    for (let w = 0; w < WORDS.length; w++) {
      const search = WORDS[w].toLowerCase();
      const matching = [];
      for (let i = 1; i <= n; i++) {
        const id = f.ids[i];
        if (String(id).includes(search) || nameOf(i).toLowerCase().includes(search) || `${f.sim.baseUrl}/s/${i}/`.includes(search))
          matching.push(i);
      }
      for (let t = 0; t < TAGS; t++) {
        const want = new Set(matching.filter((i) => tagOf(i) === t).map((i) => f.ids[i]));
        const path = listPath(search, f.tagIds[t]);
        const r = await get(path);
        samples.push(r.ms);
        const json = r.status === 200 ? JSON.parse(r.text) : null;
        const items = json?.items ?? [];
        const wrong = items.filter((s) => !want.has(s.id)).length;
        if (!json || json.total !== want.size || items.length !== Math.min(100, want.size) || wrong) {
          throw new Error(
            `the filtered list is wrong: ${path} answered ${r.status}, total ${json?.total} (expected ${want.size}), ${items.length} items, ${wrong} not matching: ${r.text.slice(0, 200)}`,
          );
        }
        totals.push(want.size);
        pages.push(items.length);
      }
    }
  } finally {
    await client.close();
  }
  if (Math.max(...totals) === 0) throw new Error('no search + tag query matched a site: the fleet is too small for the check');
  const p = percentiles(samples);
  return {
    example: listPath(WORDS[QUERY.word].toLowerCase(), f.tagIds[QUERY.tag]),
    n: p.n,
    p50: p.p50,
    p99: p.p99,
    max: p.max,
    matching_min: Math.min(...totals),
    matching_max: Math.max(...totals),
    page_min: Math.min(...pages),
    page_max: Math.max(...pages),
  };
}

/**
 * A few sequential clients for `seconds`, each picking its next request by weight: reads (the filtered list, a REST
 * list with a status and a search, a site's plugins, pending updates, fleet security issues) and writes (a site's
 * notes, a new tag, a site's tags replaced). Latency per kind, failures, and serve's RSS every second.
 */
async function mixedRun(url, token, pid, { seconds, clients, n, ids, tagIds }) {
  const pool = new Pool(url, { connections: clients, pipelining: 1, keepAliveTimeout: 60_000 });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const site = (r) => ids[1 + Math.floor(r() * n)];
  const kinds = [
    [
      'list: search + tag (abilities)',
      20,
      (r) => [
        'GET',
        `${ABILITIES}/list-sites-v1/run?input[per_page]=100&input[search]=${WORDS[Math.floor(r() * WORDS.length)].toLowerCase()}&input[tag_id]=${tagIds[Math.floor(r() * TAGS)]}`,
      ],
    ],
    ['list: status + search (REST)', 10, (r) => ['GET', `${REST}/sites?per_page=100&status=connected&search=${Math.floor(r() * 100)}`]],
    ['site plugins', 20, (r) => ['GET', `${REST}/sites/${site(r)}/plugins`]],
    ['pending updates', 8, (r) => ['GET', `${REST}/updates?per_page=100&page=${1 + Math.floor(r() * 5)}`]],
    ['fleet security', 7, () => ['GET', `${ABILITIES}/get-security-issues-v1/run?input[per_page]=20`]],
    ['site edit (notes)', 20, (r, c, seq) => ['POST', `${REST}/sites/${site(r)}/edit`, { notes: `mixed ${c}-${seq}` }]],
    ['tag add', 5, (r, c, seq) => ['POST', `${REST}/tags/add`, { name: `mixed-${c}-${seq}` }]],
    [
      'tags assigned (site edit)',
      10,
      (r) => ['POST', `${REST}/sites/${site(r)}/edit`, { tags: [tagIds[Math.floor(r() * TAGS)], tagIds[Math.floor(r() * TAGS)]] }],
    ],
  ];
  const total = kinds.reduce((a, k) => a + k[1], 0);
  const samples = kinds.map(() => []);
  let failures = 0;
  let firstFailure = null;
  /** Requests answered in each minute of the run: whether the rate holds as the fleet's data grows. */
  const perMinute = [];
  const rss = rssSampler(pid);
  const acct = cpuAccount([pid]);
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      let x = 0x9e3779b9 ^ (c + 1);
      const r = () => {
        x = (x + 0x6d2b79f5) | 0;
        let t = Math.imul(x ^ (x >>> 15), 1 | x);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
      };
      for (let seq = 0; performance.now() < end; seq++) {
        let pick = r() * total;
        let k = 0;
        while (pick >= kinds[k][1]) pick -= kinds[k++][1];
        const [method, path, body] = kinds[k][2](r, c, seq);
        const t = performance.now();
        const res = await pool.request({ method, path, headers, body: body === undefined ? undefined : JSON.stringify(body) });
        const text = await res.body.text();
        const minute = Math.floor((performance.now() - t0) / 60_000);
        perMinute[minute] = (perMinute[minute] ?? 0) + 1;
        if (res.statusCode >= 300) {
          failures++;
          firstFailure ??= `${kinds[k][0]}: ${res.statusCode} ${text.slice(0, 200)}`;
        } else samples[k].push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = acct.stop();
  await pool.close();
  const mem = rss.stop();
  const requests = samples.reduce((a, s) => a + s.length, 0) + failures;
  return {
    seconds: round(elapsed, 1),
    clients,
    requests,
    per_s: round(requests / elapsed, 0),
    failures,
    first_failure: firstFailure,
    per_minute: Array.from(perMinute, (x) => x ?? 0),
    kinds: Object.fromEntries(
      kinds.map(([label], k) => [label, (({ n: count, p50, p99 }) => ({ n: count, p50, p99 }))(percentiles(samples[k]))]),
    ),
    rss: mem,
    cpu: { serve_cores: cpu.measured_cores[0], bench_cores: cpu.bench_cores, others_cores: cpu.others_cores, loadavg_1m: cpu.loadavg_1m },
  };
}

/** POST /sites/sync (a job), polled on /jobs/<id> every second until it ends; serve's RSS sampled meanwhile. */
async function fullSync(serve, token, sim, n) {
  const before = procMem(serve.pid);
  const rss = rssSampler(serve.pid);
  const acct = cpuAccount([serve.pid, sim.pid]);
  const t0 = performance.now();
  const res = await fetch(`${serve.url}${REST}/sites/sync`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  const q = await res.json().catch(() => null);
  if (res.status !== 200 || !q?.job_id) throw new Error(`POST /sites/sync answered ${res.status} ${JSON.stringify(q).slice(0, 200)}`);
  // Bounded: at least 10 minutes, and 20 sites a second at worst beyond that.
  const timeoutMs = Math.max(600_000, (n / 20) * 1000);
  let job = null;
  let exited = null;
  while (performance.now() - t0 < timeoutMs) {
    await new Promise((r) => setTimeout(r, 1000));
    // A serve process that dies (out of memory) ends the row: its last known job state is reported with the exit.
    if (serve.child.exitCode !== null || serve.child.signalCode !== null) {
      exited = serve.child.exitCode ?? serve.child.signalCode;
      break;
    }
    const r = await getJson(serve.url, `${REST}/jobs/${q.job_id}`, token).catch(() => null);
    job = r?.json?.data ?? job;
    if (job?.status === 'completed' || job?.status === 'failed') break;
  }
  const ms = performance.now() - t0;
  const cpu = acct.stop();
  const mem = rss.stop();
  const simStats = await sim.stats();
  return {
    sites: n,
    seconds: round(ms / 1000, 1),
    sites_per_s: round((job?.processed ?? 0) / (ms / 1000), 0),
    status: exited !== null ? `serve exited (${exited})` : (job?.status ?? 'unknown'),
    timed_out: exited === null && !(job?.status === 'completed' || job?.status === 'failed'),
    serve_log_tail: exited !== null ? serve.log().slice(-600) : undefined,
    processed: job?.processed ?? null,
    succeeded: job?.succeeded ?? null,
    failed: job?.failed ?? null,
    first_error: job?.errors?.[0] ?? null,
    rss_before_mb: before?.rss_mb ?? null,
    rss_peak_mb: mem.peak_mb,
    rss_end_mb: mem.end_mb,
    sim: simStats,
    cpu: {
      serve_cores: cpu.measured_cores[0],
      sim_cores: cpu.measured_cores[1],
      others_cores: cpu.others_cores,
      loadavg_1m: cpu.loadavg_1m,
    },
  };
}

/**
 * Whether uptime monitoring kept up with the fleet (serve checks every site once an interval, DEFAULT_SETTINGS): the
 * monitors whose last check, as written to the database, is within an interval and its flush of now, and those ever checked.
 */
async function uptimeCoverage(databaseUrl, n) {
  const interval_s = DEFAULT_SETTINGS.interval_s;
  const window_s = interval_s + 60;
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const r = await db.query(
      `SELECT count(*) FILTER (WHERE (data->'last_check'->>0)::bigint >= extract(epoch FROM now()) - $1) AS recent, count(*) AS ever
       FROM sitefleet_rows WHERE kind = 'monitors' AND id > 0 AND data->'last_check' IS NOT NULL AND data->'last_check' <> 'null'::jsonb`,
      [window_s],
    );
    return { sites: n, interval_s, window_s, recent: Number(r.rows[0].recent), ever: Number(r.rows[0].ever) };
  } finally {
    await db.end();
  }
}

/**
 * The fleet rows: seeds, starts serve, measures. `n` sites, `mixedSeconds` of mixed load, `querySeconds` of the
 * filtered list. Returns the figures (JSON-ready); asserts only that the filtered list returned what it must.
 */
export async function fleetRows(
  pgServer,
  dbName,
  { n, mixedSeconds, querySeconds, clients, skipSync, serveHeapMb = null, serveHeapGrowth = null, log },
) {
  const f = await seedFleet(pgServer, dbName, n, log);
  const out = { sites: n, ...f.seed };
  let serve = null;
  try {
    // node's GC trace: the heap that survived each full collection (what is live), beside the RSS (which V8 lets grow
    // to a few times that before collecting again).
    // And the pause of every collection, to tell how much of a run's time went to collecting.
    const gc = { liveMb: null, heapMb: null, pauseMs: 0 };
    serve = await startServe(f.dataDir, {
      args: ['--database-url', f.databaseUrl],
      env: serveHeapGrowth === null ? f.env : { ...f.env, SITEFLEET_HEAP_GROWTH_PERCENT: String(serveHeapGrowth) },
      timeoutMs: 600_000,
      // SITEFLEET_BENCH_SERVE_NODE_ARGS: more node flags for this serve (a profile: --cpu-prof --cpu-prof-dir=DIR).
      nodeArgs: [
        '--trace-gc',
        ...(serveHeapMb ? [`--max-old-space-size=${serveHeapMb}`] : []),
        ...(process.env.SITEFLEET_BENCH_SERVE_NODE_ARGS ?? '').split(' ').filter(Boolean),
      ],
      onLine: (line) => {
        const m = /Mark-Compact [\d.]+ \([\d.]+\) -> ([\d.]+) \(([\d.]+)\)/.exec(line);
        if (m) [gc.liveMb, gc.heapMb] = [Number(m[1]), Number(m[2])];
        const p = / MB, ([\d.]+) \/ [\d.]+ ms/.exec(line);
        if (p) gc.pauseMs += Number(p[1]);
      },
    });
    let first;
    for (let tries = 0; ; tries++) {
      first = await getJson(serve.url, `${REST}/sites?per_page=1`, f.token);
      if (first.status === 200 || tries >= 100) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (first.status !== 200) throw new Error(`the first authenticated GET answered ${first.status}: ${first.text.slice(0, 200)}`);
    out.start = {
      first_answer_ms: round(performance.now() - serve.t0, 0),
      listen_ms: round(serve.listenMs, 0),
      rss_mb: procMem(serve.pid)?.rss_mb,
    };
    if (first.json?.total !== n) throw new Error(`the fleet lists ${first.json?.total} sites, not ${n}`);
    log(
      `fleet: serve answered ${out.start.first_answer_ms} ms after spawn (listening at ${out.start.listen_ms} ms), RSS ${out.start.rss_mb} MB`,
    );

    out.query = await distinctQueries(serve, f, n);
    const search = WORDS[QUERY.word].toLowerCase();
    const path = listPath(search, f.tagIds[QUERY.tag]);
    const repeat = async (p) =>
      sequential(serve.url, {
        token: f.token,
        seconds: querySeconds,
        maxCount: 5000,
        warmupCount: 20,
        make: () => ({ method: 'GET', path: p }),
      });
    const q = await repeat(path);
    out.query_repeated = { path, p50: q.p50, p99: q.p99, n: q.n, failures: q.failures };
    const restPath = `${REST}/sites?per_page=100&search=${search}`;
    const rest = await repeat(restPath);
    out.query_rest_search = { path: restPath, p50: rest.p50, p99: rest.p99, n: rest.n, failures: rest.failures };
    const d = out.query;
    log(
      `fleet: search + tag list, ${d.n} distinct queries: p50 ${d.p50} ms, p99 ${d.p99} ms (${d.matching_min}-${d.matching_max} matching, pages of ${d.page_min}-${d.page_max}); one query repeated (answer cache) p50 ${q.p50} ms; REST search only, repeated, p50 ${rest.p50} ms`,
    );
    const pausedBefore = gc.pauseMs;
    out.mixed = await mixedRun(serve.url, f.token, serve.pid, { seconds: mixedSeconds, clients, n, ids: f.ids, tagIds: f.tagIds });
    out.mixed.live_heap_mb = gc.liveMb;
    // Where the RSS is at the end: V8's heap as its last full collection left it committed, beside the mappings.
    out.mixed.heap_committed_mb = gc.heapMb;
    out.mixed.rss_parts_mb = rssParts(serve.pid);
    out.mixed.gc_pause_s = round((gc.pauseMs - pausedBefore) / 1000, 1);
    log(
      `fleet: mixed run ${out.mixed.seconds} s, ${out.mixed.requests} requests (${out.mixed.per_s}/s), ${out.mixed.failures} failed; RSS ${out.mixed.rss.start_mb} -> peak ${out.mixed.rss.peak_mb}, end ${out.mixed.rss.end_mb} MB; live after the last full GC ${out.mixed.live_heap_mb} MB (V8's heap ${out.mixed.heap_committed_mb} MB); RSS at the end by mapping ${JSON.stringify(out.mixed.rss_parts_mb)} MB; GC pauses ${out.mixed.gc_pause_s} s; requests a minute ${out.mixed.per_minute.join(' ')}; RSS at each minute's start ${out.mixed.rss.per_minute_mb.join(' ')} MB${out.mixed.first_failure ? `; first failure ${out.mixed.first_failure}` : ''}`,
    );

    out.uptime = await uptimeCoverage(f.databaseUrl, n);
    log(
      `fleet: uptime at the end of the mixed run: ${out.uptime.recent.toLocaleString('en')} of ${n.toLocaleString('en')} sites checked in the last ${out.uptime.window_s} s (the interval is ${out.uptime.interval_s} s), ${out.uptime.ever.toLocaleString('en')} ever`,
    );

    if (skipSync) {
      log('fleet: full sync skipped (--skip-sync)');
      return out;
    }
    out.sync = await fullSync(serve, f.token, f.sim, n);
    out.sync.live_heap_mb = gc.liveMb;
    log(
      `fleet: full sync of ${n.toLocaleString('en')} sites ${out.sync.status} in ${out.sync.seconds} s (${out.sync.sites_per_s} sites/s, ${out.sync.succeeded} ok, ${out.sync.failed} failed); serve RSS ${out.sync.rss_before_mb} -> peak ${out.sync.rss_peak_mb} MB, live after the last full GC ${out.sync.live_heap_mb} MB; simulator ${out.sync.sim.rss_mb} MB`,
    );
  } finally {
    await serve?.stop();
    await f.sim.stop();
    removeDir(f.dataDir);
  }
  return out;
}
