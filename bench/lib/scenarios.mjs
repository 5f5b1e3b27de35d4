// bench/lib/scenarios.mjs — the scenarios of issue 7, each over real processes on a temp data dir.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'undici';
import { Store } from '../../dist/store/store.js';
import { cannon, concurrentWriters, sequential, assertLoopback } from './load.mjs';
import { besideFloor, sameBytes } from './calibrate.mjs';
import { mcpHttp, mcpStdio } from './mcp.mjs';
import { removeDir, startServe, tempDir } from './proc.mjs';
import { seedFleet, seedPreconnected } from './seed.mjs';
import { cpuAccount, percentiles, procMem, round } from './sys.mjs';

export const REST = '/wp-json/svc/v2';
export const ABILITIES = '/wp-json/wp-abilities/v1';
const LIST_PATH = `${REST}/sites?per_page=100`;
const ABILITY_LIST_PATH = `${ABILITIES}/abilities/svc/list-sites-v1/run?input[per_page]=100`;

/** One request with undici (used for checks, cold start and job polling). */
export async function call(url, token, method, path, body, reuse = null) {
  const u = assertLoopback(url);
  const client = reuse ?? new Client(u.origin);
  try {
    const res = await client.request({
      method,
      path,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.statusCode, json, text };
  } finally {
    if (!reuse) await client.close();
  }
}

function expect(cond, what) {
  if (!cond) throw new Error(`sanity check failed: ${what}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Every read and write scenario at one fleet size: seed with the store API (no server running), cold
 * start, reads (autocannon, MCP stdio and HTTP), sequential durable writes, 50 concurrent writers, then
 * SIGKILL and count on disk what was acknowledged. `only` limits the scenarios (the quick 20,000 round).
 */
export async function fleetRound(n, d, log, only = null) {
  const want = (k) => !only || only.includes(k);
  const out = { sites: n };
  const dir = tempDir(`fleet${n}`);
  try {
    let t = performance.now();
    const { token, domains } = await seedFleet(dir, n);
    out.seed_ms = round(performance.now() - t, 0);
    log(`  seeded ${n} sites in ${out.seed_ms} ms`);

    // Cold start: spawn → the first answer of a list (which builds the sorted index) and of a domain lookup.
    const serve = await startServe(dir);
    const first = await call(serve.url, token, 'GET', LIST_PATH);
    const firstAnswer = performance.now() - serve.t0;
    expect(first.status === 200 && first.json?.total === n, `GET /sites total ${first.json?.total} (status ${first.status}) ≠ ${n}`);
    t = performance.now();
    const look = await call(serve.url, token, 'GET', `${REST}/sites/${domains[n - 1]}`);
    expect(look.status === 200 && look.json?.data?.id === n, `GET /sites/${domains[n - 1]} → ${look.status}`);
    out.cold_start = {
      listen_ms: round(serve.listenMs, 0),
      first_answer_ms: round(firstAnswer, 0),
      first_lookup_ms: round(performance.now() - t, 1),
      rss_mb: procMem(serve.pid)?.rss_mb,
    };
    log(`  cold start: listening ${out.cold_start.listen_ms} ms, first answer ${out.cold_start.first_answer_ms} ms`);

    const ab = await call(serve.url, token, 'GET', ABILITY_LIST_PATH);
    expect(
      ab.status === 200 && ab.json?.total === n && ab.json.items.length === Math.min(100, n),
      `abilities list-sites-v1 → ${ab.status}`,
    );

    const ac = { token, connections: 16, duration: d.readSeconds, warmup: d.warmupSeconds, pid: serve.pid };
    if (want('rest_list')) {
      out.rest_list = await cannon(serve.url, { ...ac, path: LIST_PATH });
      log(
        `  REST list: ${out.rest_list.rps} req/s p50 ${out.rest_list.p50} p99 ${out.rest_list.p99} ms (serve ${out.rest_list.cpu.serve_cores} cores)`,
      );
    }
    if (want('abilities_list')) {
      out.abilities_list = await cannon(serve.url, { ...ac, path: ABILITY_LIST_PATH });
      log(`  abilities list: ${out.abilities_list.rps} req/s p50 ${out.abilities_list.p50} p99 ${out.abilities_list.p99} ms`);
    }
    // Issue 19: the same answers from a bare node:http server (the machine's limit for those bytes), and 304s.
    if (want('rest_list')) {
      const etag = (await fetch(serve.url + LIST_PATH, { headers: { authorization: `Bearer ${token}` } })).headers.get('etag');
      expect(etag, 'GET /sites sends an ETag');
      const inm = { 'if-none-match': etag };
      out.not_modified = await cannon(serve.url, { ...ac, path: LIST_PATH, extraHeaders: inm });
      log(
        `  REST list, If-None-Match → 304: ${out.not_modified.rps} req/s (${out.not_modified.status_3xx} 3xx of ${out.not_modified.requests})`,
      );
      out.limit_rest_list = await sameBytes(serve.url, token, LIST_PATH, {}, d);
      log(`  bare node:http, the same ${out.limit_rest_list.bytes} bytes: ${out.limit_rest_list.rps} req/s`);
      out.limit_not_modified = await sameBytes(serve.url, token, LIST_PATH, inm, d);
      log(`  bare node:http, the same 304: ${out.limit_not_modified.rps} req/s`);
    }
    if (want('abilities_list')) {
      out.limit_abilities_list = await sameBytes(serve.url, token, ABILITY_LIST_PATH, {}, d);
      log(`  bare node:http, the same ${out.limit_abilities_list.bytes} bytes (abilities): ${out.limit_abilities_list.rps} req/s`);
    }
    if (want('get_domain')) {
      let k = 0;
      // A fixed stride through the fleet: every request names another domain (a lookup, never a cache of one).
      out.get_domain = await cannon(serve.url, { ...ac, paths: () => `${REST}/sites/${domains[(k = (k + 7919) % n)]}` });
      log(`  REST get by domain: ${out.get_domain.rps} req/s p50 ${out.get_domain.p50} p99 ${out.get_domain.p99} ms`);
    }
    if (want('mcp')) {
      out.mcp_stdio = await mcpStdio(dir, { seconds: d.mcpSeconds, maxCount: d.maxSequential, expectTotal: n });
      log(`  MCP stdio: p50 ${out.mcp_stdio.p50} p99 ${out.mcp_stdio.p99} ms (${out.mcp_stdio.per_s}/s)`);
      out.mcp_http = await mcpHttp(serve.url, token, { seconds: d.mcpSeconds, maxCount: d.maxSequential, pid: serve.pid, expectTotal: n });
      log(`  MCP HTTP: p50 ${out.mcp_http.p50} p99 ${out.mcp_http.p99} ms (${out.mcp_http.per_s}/s)`);
    }
    out.rss_after_reads = procMem(serve.pid);

    if (want('writes')) {
      const seq = { token, seconds: d.writeSeconds, maxCount: d.maxSequential, pid: serve.pid };
      out.tag_add = await sequential(serve.url, { ...seq, make: (i) => ({ path: `${REST}/tags/add`, body: { name: `seq-${i}` } }) });
      log(`  POST /tags/add: p50 ${out.tag_add.p50} p99 ${out.tag_add.p99} ms (${out.tag_add.per_s}/s, ${out.tag_add.failures} failed)`);
      // The same requests in turns with the floor's durable write, for a ratio both sides of which saw the same load.
      out.tag_add_beside_floor = await sequential(serve.url, {
        ...seq,
        make: (i) => ({ path: `${REST}/tags/add`, body: { name: `fl-${i}` } }),
        calls: (one, o) => besideFloor(one, o),
      });
      const bf = out.tag_add_beside_floor;
      log(
        `  POST /tags/add in turns with the durable write: p50 ${bf.p50} vs ${bf.floor_p50} ms (${round(bf.ratio, 2)}×, ${bf.pairs} pairs)`,
      );
      out.site_edit = await sequential(serve.url, {
        ...seq,
        make: (i) => ({ path: `${REST}/sites/${1 + ((i * 7919) % n)}/edit`, body: { notes: `edit ${i}` } }),
      });
      log(
        `  POST /sites/{id}/edit: p50 ${out.site_edit.p50} p99 ${out.site_edit.p99} ms (${out.site_edit.per_s}/s, ${out.site_edit.failures} failed)`,
      );

      const w = await concurrentWriters(serve.url, { token, writers: 50, seconds: d.writersSeconds, pid: serve.pid });
      // Acknowledged means fsynced: kill -9 and read the data dir back.
      await serve.stop('SIGKILL');
      const store = await Store.open(dir);
      let storedTags = 0;
      let lostTags = 0;
      const names = new Set();
      for (const tag of store.all('tags'))
        if (tag.name.startsWith('cw-')) {
          storedTags++;
          names.add(tag.name);
        }
      for (const name of w.ackedTags) if (!names.has(name)) lostTags++;
      let lostEdits = 0;
      for (const [id, note] of w.lastNote) if (store.get('sites', id)?.notes !== note) lostEdits++;
      await store.close();
      const { ackedTags, lastNote, ...rest } = w;
      out.writers = {
        ...rest,
        acked_tags: ackedTags.size,
        stored_tags: storedTags,
        stored_but_unacked_tags: storedTags - (ackedTags.size - lostTags),
        lost_tags: lostTags,
        edited_sites: lastNote.size,
        lost_edits: lostEdits,
        lost_updates: lostTags + lostEdits,
        verified: 'after SIGKILL, from disk',
      };
      log(`  50 writers: ${w.writes_per_s} writes/s, acked ${w.acked}, lost ${lostTags + lostEdits}, failed ${w.failures}`);
    } else {
      await serve.stop();
    }
    return out;
  } finally {
    removeDir(dir);
  }
}

/** Polls /jobs/<id> until the job ends; bounded in time and in polls. */
async function waitJob(url, token, jobId, { timeoutMs, everyMs = 20 }) {
  const end = performance.now() + timeoutMs;
  let last = null;
  const client = new Client(assertLoopback(url).origin); // one keep-alive connection for all polls
  try {
    for (let polls = 0; polls < timeoutMs / everyMs + 10 && performance.now() < end; polls++) {
      const r = await call(url, token, 'GET', `${REST}/jobs/${jobId}`, undefined, client);
      last = r.json?.data ?? r.text;
      if (last?.status === 'completed' || last?.status === 'failed') return { done: true, job: last };
      await sleep(everyMs);
    }
    return { done: false, job: last };
  } finally {
    await client.close();
  }
}

function dirBytes(dir) {
  let total = 0;
  let files = 0;
  try {
    for (const f of readdirSync(dir)) {
      total += statSync(join(dir, f)).size;
      files++;
    }
  } catch {
    /* none */
  }
  return { mb: round(total / 1048576, 1), files };
}

/**
 * Sync of n preconnected simulated sites (simulator in this process, `latencyMs` on every child request):
 * POST /sites/sync queues a job (n > threshold 200), timed from the request to the job's completion
 * seen on /jobs/<id>. Then, on a restart with SITEFLEET_QUEUE_THRESHOLD=100000, check-sites-v1 over the
 * same sites runs while the caller waits and is timed end to end.
 */
export async function syncAndCheck(n, latencyMs, d, log) {
  const dir = tempDir(`sync${n}`);
  const { token, sim } = await seedPreconnected(dir, n, latencyMs);
  const out = { sites: n, child_latency_ms: latencyMs, child_concurrency: 32 };
  try {
    let serve = await startServe(dir, { args: ['--allow-private-sites'] });
    let acct = cpuAccount([serve.pid]);
    let t0 = performance.now();
    const q = await call(serve.url, token, 'POST', `${REST}/sites/sync`);
    expect(q.status === 200 && q.json?.job_id, `POST /sites/sync → ${q.status} ${q.text.slice(0, 200)}`);
    const queuedMs = performance.now() - t0;
    const w = await waitJob(serve.url, token, q.json.job_id, { timeoutMs: d.jobTimeoutMs });
    const ms = performance.now() - t0;
    const cpu = acct.stop();
    out.sync = {
      mode: 'queued job (threshold 200), timed to completion on /jobs/<id>',
      seconds: round(ms / 1000, 2),
      queued_answer_ms: round(queuedMs, 0),
      completed: w.done && w.job.status === 'completed',
      processed: w.job?.processed,
      succeeded: w.job?.succeeded,
      failed: w.job?.failed,
      first_error: w.job?.errors?.[0] ?? null,
      sim_peak_in_flight: sim.peakInFlight(),
      cpu: { serve_cores: cpu.measured_cores[0], bench_and_sim_cores: cpu.bench_cores, others_cores: cpu.others_cores },
      floor_s: round((n * latencyMs) / 32 / 1000, 2),
      // Child calls in flight on average (Little's law: rate × latency), out of the 32 the connector allows.
      avg_child_calls_in_flight: round((n / (ms / 1000)) * (latencyMs / 1000), 1),
      serve_cpu_ms_per_site: round((cpu.measured_cpu_s[0] * 1000) / n, 2),
    };
    log(
      `  sync ${n}: ${out.sync.seconds} s, ${out.sync.succeeded} ok / ${out.sync.failed} failed (serve ${cpu.measured_cores[0]} cores, sim+bench ${cpu.bench_cores})`,
    );
    await serve.stop();

    serve = await startServe(dir, { args: ['--allow-private-sites'], env: { SITEFLEET_QUEUE_THRESHOLD: '100000' } });
    acct = cpuAccount([serve.pid]);
    t0 = performance.now();
    const c = await call(serve.url, token, 'POST', `${ABILITIES}/abilities/svc/check-sites-v1/run`, { input: {} });
    const cms = performance.now() - t0;
    const ccpu = acct.stop();
    expect(c.status === 200 && c.json?.queued === false, `check-sites-v1 → ${c.status} ${c.text.slice(0, 200)}`);
    out.check = {
      mode: 'immediate (SITEFLEET_QUEUE_THRESHOLD=100000), one request timed end to end',
      seconds: round(cms / 1000, 2),
      serve_cpu_ms_per_site: round((ccpu.measured_cpu_s[0] * 1000) / n, 2),
      checked: c.json.summary.total_checked,
      reachable: c.json.summary.reachable,
      errors: c.json.errors.length,
      cpu: { serve_cores: ccpu.measured_cores[0], bench_and_sim_cores: ccpu.bench_cores, others_cores: ccpu.others_cores },
    };
    log(`  check-sites-v1 ${n}: ${out.check.seconds} s, ${out.check.reachable}/${out.check.checked} reachable`);
    await serve.stop();
    return out;
  } finally {
    await sim.close();
    removeDir(dir);
  }
}

/** RSS of serve before and after a full sync of n simulated sites (≈25 plugins each), from /proc/<pid>/status. */
export async function rssAfterSync(n, latencyMs, d, log) {
  const dir = tempDir(`rss${n}`);
  const { token, sim } = await seedPreconnected(dir, n, latencyMs);
  try {
    const plugins = [];
    for (let i = 1; i <= n; i++) plugins.push(sim.state(i).plugins.length);
    const serve = await startServe(dir, { args: ['--allow-private-sites'] });
    await call(serve.url, token, 'GET', LIST_PATH);
    const before = procMem(serve.pid);
    const acct = cpuAccount([serve.pid]);
    const t0 = performance.now();
    const q = await call(serve.url, token, 'POST', `${REST}/sites/sync`);
    expect(q.status === 200 && q.json?.job_id, `POST /sites/sync → ${q.status}`);
    const w = await waitJob(serve.url, token, q.json.job_id, { timeoutMs: d.rssJobTimeoutMs, everyMs: 100 });
    const secs = (performance.now() - t0) / 1000;
    const cpu = acct.stop();
    const after = procMem(serve.pid);
    // One full-list read after the sync (what a dashboard does next), then memory again.
    await call(serve.url, token, 'GET', `${REST}/sites?per_page=100&full_data=1`);
    await sleep(1000);
    const settled = procMem(serve.pid);
    const out = {
      sites: n,
      child_latency_ms: latencyMs,
      plugins_per_site: percentiles(plugins),
      completed: w.done && w.job?.status === 'completed',
      succeeded: w.job?.succeeded,
      failed: w.job?.failed,
      sync_seconds: round(secs, 1),
      serve_cpu_ms_per_site: round((cpu.measured_cpu_s[0] * 1000) / n, 2),
      rss_before_mb: before?.rss_mb,
      rss_after_mb: after?.rss_mb,
      rss_settled_mb: settled?.rss_mb,
      hwm_mb: settled?.hwm_mb,
      site_data_on_disk: dirBytes(join(dir, 'site-data')),
      cpu: { serve_cores: cpu.measured_cores[0], bench_and_sim_cores: cpu.bench_cores, others_cores: cpu.others_cores },
    };
    log(
      `  RSS ${n}: before ${out.rss_before_mb} MB, after sync ${out.rss_after_mb} MB, HWM ${out.hwm_mb} MB (sync ${out.sync_seconds} s, ${out.succeeded} ok)`,
    );
    await serve.stop();
    return out;
  } finally {
    await sim.close();
    removeDir(dir);
  }
}

/** Issue 35 finding 1: 25,000 `a[]=` fields (125 KB), urlencoded — once quadratic to decode, and decoded on GET too. */
const FORM_ATTACK_BODY = Array.from({ length: 25_000 }, () => 'a[]=').join('&');

/** One read key sending FORM_ATTACK_BODY one request after another, on GET /sites and POST /tags/add, while `on()`. */
async function formAttack(base, token, on) {
  const c = new Client(base);
  const statuses = {};
  let requests = 0;
  try {
    while (on()) {
      for (const [method, path] of [
        ['GET', LIST_PATH],
        ['POST', `${REST}/tags/add`],
      ]) {
        const r = await c.request({
          method,
          path,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' },
          body: FORM_ATTACK_BODY,
        });
        await r.body.dump();
        statuses[`${method} ${r.statusCode}`] = (statuses[`${method} ${r.statusCode}`] ?? 0) + 1;
        requests++;
      }
    }
  } finally {
    await c.close();
  }
  return { requests, statuses };
}

/**
 * Issue 18's load test: the worst CSV upload (20 MB, 10 million one-field rows) and a hostile child (a 14 MB error
 * text on every sync) at once, while another client keeps reading GET /sites?per_page=100 one request after another.
 * Issue 35 adds a third attacker at the same time: a read key sending the 25,000-field form body, one request after
 * another, alternately on GET /sites (a body never read) and POST /tags/add (refused past 1,000 fields).
 * The reader's latencies are the figure (target p99 ≤ 100 ms); serve's memory high-water mark is printed beside.
 */
export async function underAttack(d, log) {
  const dir = tempDir('attack');
  const { token, sim } = await seedPreconnected(dir, 20, 0);
  try {
    const serve = await startServe(dir, { args: ['--allow-private-sites'] });
    const base = assertLoopback(serve.url).origin;
    sim.setFault(1, { type: 'long_error', bytes: 14 * 1024 * 1024 });
    await call(serve.url, token, 'GET', LIST_PATH);
    const before = procMem(serve.pid);
    let attacking = true;
    const form = new FormData();
    form.append('csv_file', new Blob([Buffer.alloc(10_000_000 * 2, 'a\n')], { type: 'text/csv' }), 'worst.csv');
    const t0 = performance.now();
    const csv = fetch(`${base}${REST}/users/import`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form }).then(
      async (r) => ({ status: r.status, bytes: (await r.arrayBuffer()).byteLength, ms: performance.now() - t0 }),
    );
    const hostile = (async () => {
      let n = 0;
      while (attacking) {
        await call(serve.url, token, 'POST', `${ABILITIES}/abilities/svc/sync-sites-v1/run`, { input: { site_ids_or_domains: [1] } });
        n++;
      }
      return n;
    })();
    const forms = formAttack(base, token, () => attacking);
    const samples = [];
    const reader = new Client(base);
    const until = performance.now() + d.readSeconds * 1000;
    let csvDone = null;
    void csv.then((r) => {
      csvDone = r;
    });
    while (performance.now() < until || !csvDone) {
      const t = performance.now();
      const r = await call(serve.url, token, 'GET', LIST_PATH, undefined, reader);
      samples.push(performance.now() - t);
      expect(r.status === 200, `GET /sites under attack → ${r.status}`);
    }
    attacking = false;
    const syncs = await hostile;
    const formsBeside = await forms;
    // Then the form attack alone, with the same reader: its own figure.
    let alone = true;
    const formsAlone = formAttack(base, token, () => alone);
    const aloneSamples = [];
    const aloneUntil = performance.now() + d.readSeconds * 1000;
    while (performance.now() < aloneUntil) {
      const t = performance.now();
      const r = await call(serve.url, token, 'GET', LIST_PATH, undefined, reader);
      aloneSamples.push(performance.now() - t);
      expect(r.status === 200, `GET /sites under the form attack → ${r.status}`);
    }
    alone = false;
    const formsOnly = await formsAlone;
    const pa = percentiles(aloneSamples);
    const up = await csv;
    await reader.close();
    const after = procMem(serve.pid);
    await serve.stop();
    const p = percentiles(samples);
    const out = {
      reads: samples.length,
      p50: round(p.p50, 2),
      p99: round(p.p99, 2),
      max: round(p.max, 1),
      csv: { status: up.status, answer_bytes: up.bytes, seconds: round(up.ms / 1000, 2) },
      hostile_syncs: syncs,
      form_attack: {
        fields: 25_000,
        body_bytes: FORM_ATTACK_BODY.length,
        beside_the_others: formsBeside,
        alone: { ...formsOnly, reads: aloneSamples.length, p50: round(pa.p50, 2), p99: round(pa.p99, 2), max: round(pa.max, 1) },
      },
      rss_before_mb: before?.rss_mb,
      rss_after_mb: after?.rss_mb,
      hwm_mb: after?.hwm_mb,
    };
    log(
      `  under attack: ${out.reads} reads, p50 ${out.p50} / p99 ${out.p99} / max ${out.max} ms; CSV ${up.status} in ${out.csv.seconds} s (${up.bytes} B); ${syncs} hostile syncs; ${formsBeside.requests} 25,000-field forms; HWM ${out.hwm_mb} MB`,
    );
    const fa = out.form_attack.alone;
    log(
      `  under the form attack alone: ${fa.reads} reads, p50 ${fa.p50} / p99 ${fa.p99} / max ${fa.max} ms; ${fa.requests} forms (${Object.entries(
        fa.statuses,
      )
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ')})`,
    );
    return out;
  } finally {
    await sim.close();
    removeDir(dir);
  }
}
