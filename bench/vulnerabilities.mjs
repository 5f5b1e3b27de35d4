// bench/vulnerabilities.mjs — known vulnerabilities (issue 30): matching a fleet against a feed, and streaming a large
// Wordfence feed. Prints figures against the issue's targets; never fails on them.
// Run after `npx tsc`: node bench/vulnerabilities.mjs [--sites 20000] [--items 30] [--records 40000] [--feed-mb 150] [--skip-import]
//                     [--view-sites 5000] [--skip-view] [--only matching|streaming|view]
//   matching   20,000 simulated sites × ~30 items against a generated 40,000-record feed (target ≤ 5 s, ≤ 300 MB RSS)
//   streaming  a generated ~150 MB feed decoded record by record (target: RSS growth ≤ 100 MB), then the same file
//              imported into a lowdb store through FeedStore (buckets written as it streams, swapped in at the end)
//   view       GET /vulnerabilities (REST, first page of 20) on `sitefleet serve` over 5,000 sites × 20 plugins matched
//              against a 10,000-record feed, 16 connections (target ≥ 1,000 req/s); then the same with If-None-Match
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { FeedIndex } from '../dist/domain/vulnerabilities/matching.js';
import { normaliseWordfence, streamWordfenceFeed } from '../dist/domain/vulnerabilities/records.js';
import { FeedStore } from '../dist/domain/vulnerabilities/feed-store.js';
import { LowdbStore } from '../dist/store/store.js';
import { cannon } from './lib/load.mjs';
import { cleanupAll, removeDir, startServe, tempDir } from './lib/proc.mjs';
import { call, REST } from './lib/scenarios.mjs';
import { withStore } from './lib/seed.mjs';

const { values } = parseArgs({
  options: {
    sites: { type: 'string' },
    items: { type: 'string' },
    records: { type: 'string' },
    'feed-mb': { type: 'string' },
    'skip-import': { type: 'boolean' },
    'view-sites': { type: 'string' },
    'skip-view': { type: 'boolean' },
    only: { type: 'string' },
  },
});
const SITES = Number(values.sites ?? 20_000);
const ITEMS = Number(values.items ?? 30);
const RECORDS = Number(values.records ?? 40_000);
const FEED_MB = Number(values['feed-mb'] ?? 150);
const VIEW_SITES = Number(values['view-sites'] ?? 5_000);
const part = (name) => !values.only || values.only === name;
process.env.SITEFLEET_LOG ??= 'warn';
// Figures depend on what else the machine runs: say how loaded it was.
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);

const mb = (b) => `${(b / 1024 / 1024).toFixed(1)} MB`;
const rss = () => process.memoryUsage().rss;
// A small deterministic generator, so that two runs compare.
let seed = 42;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const pick = (n) => Math.floor(rand() * n);
const version = () => `${pick(12)}.${pick(20)}.${pick(10)}`;

/** One Wordfence-shaped record (production fields, two ranges on some). */
function record(i, slug, type) {
  const id = `00000000-bench-4000-8000-${String(i).padStart(12, '0')}`;
  const to = version();
  const ranges = { [`* - ${to}`]: { from_version: '*', from_inclusive: true, to_version: to, to_inclusive: i % 2 === 0 } };
  if (i % 5 === 0)
    ranges[`[20.0, 20.${pick(9)})`] = { from_version: '20.0', from_inclusive: true, to_version: `20.${1 + pick(8)}`, to_inclusive: false };
  return {
    id,
    title: `BENCH ${slug} <= ${to} - Cross-Site Scripting via a shortcode attribute in a generated record number ${i}`,
    software: [
      {
        type,
        name: slug,
        slug,
        affected_versions: ranges,
        patched: true,
        patched_versions: [`${to}.1`],
        remediation: 'Update to the patched version or a newer one. '.repeat(3),
      },
    ],
    informational: false,
    description: 'A generated description of a generated vulnerability, long enough to look like a real one. '.repeat(12),
    references: [`https://www.wordfence.com/threat-intel/vulnerabilities/id/${id}`, `https://example.com/advisory/${i}`],
    cwe: { id: 79, name: 'Cross-site Scripting', description: 'Improper neutralization of input during web page generation.' },
    cvss: { vector: 'CVSS:3.1/AV:N/AC:L/PR:L/UI:N/S:C/C:L/I:L/A:N', score: 1 + pick(90) / 10, rating: 'Medium' },
    cve: `CVE-2099-${10000 + i}`,
    cve_link: `https://www.cve.org/CVERecord?id=CVE-2099-${10000 + i}`,
    researchers: ['Bench Researcher'],
    published: '2026-01-01 00:00:00',
    updated: '2026-01-02 00:00:00',
    copyrights: {
      message: 'This record contains material that is subject to copyright',
      defiant: {
        notice: 'Copyright 2012-2026 Defiant Inc.',
        license: 'Defiant hereby grants you a perpetual licence (bench text).'.repeat(4),
        license_url: 'https://www.wordfence.com/wordfence-intelligence-terms-and-conditions/',
      },
      mitre: {
        notice: 'Copyright 1999-2026 The MITRE Corporation',
        license: 'CVE Usage: MITRE hereby grants you a licence (bench text).'.repeat(4),
        license_url: 'https://www.cve.org/Legal/TermsOfUse',
      },
    },
  };
}

const SLUGS = 8_000;
const slugOf = (n) => `bench-plugin-${n}`;

// ---- matching ----
if (part('matching')) {
  const before = rss();
  const t0 = performance.now();
  const index = new FeedIndex();
  for (let i = 0; i < RECORDS; i++) {
    const type = i % 20 === 0 ? 'theme' : 'plugin';
    const r = normaliseWordfence(record(i, slugOf(pick(SLUGS)), type));
    if (typeof r !== 'string') index.add(r, 1 + Math.floor(i / 200));
  }
  const built = performance.now() - t0;
  let hits = 0;
  let items = 0;
  let matchMs = 0;
  let matchCpu = 0;
  const t1 = performance.now();
  for (let s = 0; s < SITES; s++) {
    const list = [
      { type: 'core', slug: 'wordpress', ref: 'wordpress', name: 'WordPress', version: `6.${pick(9)}.${pick(4)}`, offered: null },
    ];
    for (let k = 1; k < ITEMS; k++) {
      // Half the items are popular slugs that have records, half have none.
      const slug = k % 2 ? slugOf(pick(SLUGS)) : `unknown-${pick(100_000)}`;
      list.push({
        type: k % 10 === 0 ? 'theme' : 'plugin',
        slug,
        ref: `${slug}/${slug}.php`,
        name: slug,
        version: version(),
        offered: version(),
      });
    }
    // Only the matching is timed, not making the simulated site's list.
    const t = performance.now();
    const c = process.cpuUsage();
    for (const it of list) hits += index.match(it).length;
    matchMs += performance.now() - t;
    const d = process.cpuUsage(c);
    matchCpu += (d.user + d.system) / 1000;
    items += list.length;
  }
  const total = performance.now() - t1;
  const peak = rss();
  console.log(`matching: ${RECORDS.toLocaleString()} records indexed in ${(built / 1000).toFixed(2)} s`);
  console.log(
    `matching: ${SITES.toLocaleString()} sites × ${ITEMS} items (${items.toLocaleString()} lookups) in ${(matchMs / 1000).toFixed(2)} s ` +
      `(CPU ${(matchCpu / 1000).toFixed(2)} s) ` +
      `(${(total / 1000).toFixed(2)} s with generating the sites) ` +
      `[target ≤ 5 s], ${hits.toLocaleString()} hits; RSS ${mb(peak)} (+${mb(peak - before)}) [target ≤ 300 MB]`,
  );
  // After the figures above (it builds a second index): the index, the part of the feed every process holds (the
  // records stay in the store), as stored (the 'vulnerability-feed' blob it is built from once per feed) and in memory
  // (exact with node --expose-gc).
  {
    const entries = [...index.entries()];
    const json = JSON.stringify(entries).length;
    const n = entries.reduce((k, [, l]) => k + l.length, 0);
    const gc = () => [1, 2, 3].forEach(() => globalThis.gc?.());
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const again = new FeedIndex();
    for (const [typeSlug, list] of JSON.parse(JSON.stringify(entries))) for (const e of list) again.addEntry(typeSlug, e);
    gc();
    const heap = process.memoryUsage().heapUsed - heapBefore;
    const keys = [...again.entries()].length;
    void index.size; // the first index stays alive until here, so its freeing is not counted against the second
    console.log(
      `matching: the index of ${RECORDS.toLocaleString()} records: ${keys.toLocaleString()} type:slug keys, ${n.toLocaleString()} entries; ` +
        `stored ${mb(json)}, in memory ${globalThis.gc ? '' : '~'}${mb(heap)}`,
    );
  }
}

// ---- streaming ----
if (part('streaming')) {
  const dir = mkdtempSync(join(tmpdir(), 'sitefleet-bench-vulns-'));
  try {
    const file = join(dir, 'production.json');
    const out = createWriteStream(file);
    let written = 0;
    let n = 0;
    out.write('{');
    while (written < FEED_MB * 1024 * 1024) {
      const text = `${n ? ',' : ''}"${n}":${JSON.stringify(record(n, slugOf(n % SLUGS), 'plugin'))}`;
      if (!out.write(text)) await new Promise((r) => out.once('drain', r));
      written += text.length;
      n++;
    }
    out.end('}');
    await finished(out);
    const size = statSync(file).size;
    globalThis.gc?.();
    const base = rss();
    let peak = base;
    const t0 = performance.now();
    const stats = await streamWordfenceFeed(
      createReadStream(file, { highWaterMark: 64 * 1024 }),
      (r) => {
        if (r && n % 1000 === 0) peak = Math.max(peak, rss());
      },
      2 * 1024 ** 3,
    );
    peak = Math.max(peak, rss());
    console.log(
      `streaming: ${mb(size)} feed, ${stats.records.toLocaleString()} records decoded in ${((performance.now() - t0) / 1000).toFixed(1)} s; ` +
        `RSS ${mb(base)} → peak ${mb(peak)} (growth ${mb(peak - base)}) [target ≤ 100 MB]`,
    );
    if (!values['skip-import']) {
      const store = await LowdbStore.open(join(dir, 'data'));
      const feed = new FeedStore(store);
      const before = rss();
      let ipeak = before;
      const timer = setInterval(() => (ipeak = Math.max(ipeak, rss())), 50);
      const t1 = performance.now();
      const state = await feed.replace('wordfence', 'file:production.json', (add) =>
        streamWordfenceFeed(createReadStream(file, { highWaterMark: 64 * 1024 }), add, 2 * 1024 ** 3),
      );
      clearInterval(timer);
      ipeak = Math.max(ipeak, rss());
      console.log(
        `import: ${state.records.toLocaleString()} records in ${state.buckets} buckets stored in ${((performance.now() - t1) / 1000).toFixed(1)} s; ` +
          `RSS ${mb(before)} → peak ${mb(ipeak)} (growth ${mb(ipeak - before)})`,
      );
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- the fleet view over HTTP ----
if (part('view') && !values['skip-view']) {
  const dir = tempDir('vulns-view');
  process.on('exit', cleanupAll);
  try {
    const feed = join(tmpdir(), `sitefleet-bench-view-feed-${process.pid}.json`);
    const out = createWriteStream(feed);
    out.write('{');
    for (let i = 0; i < 10_000; i++) {
      const text = `${i ? ',' : ''}"${i}":${JSON.stringify(record(i, `view-plugin-${i % 2000}`, 'plugin'))}`;
      if (!out.write(text)) await new Promise((r) => out.once('drain', r));
    }
    out.end('}');
    await finished(out);
    const t0 = performance.now();
    const { token, installs } = await withStore(dir, async (s) => {
      const { token } = await s.auth.createKey('bench', 'read_write');
      const now = new Date().toISOString();
      for (let start = 0; start < VIEW_SITES; start += 1000) {
        await s.store.write((tx) => {
          for (let i = start; i < Math.min(VIEW_SITES, start + 1000); i++) {
            const site = s.sites.insert(tx, {
              url: `https://v${i + 1}.example.com/`,
              name: `Site ${i + 1}`,
              admin_username: 'admin',
              wp_version: `6.${pick(9)}.${pick(4)}`,
              last_sync: now,
            });
            const plugins = Array.from({ length: 20 }, (_, k) => {
              const slug = k % 2 ? `view-plugin-${pick(2000)}` : `own-${k}`;
              return {
                slug: `${slug}/${slug}.php`,
                name: slug,
                version: version(),
                active: true,
                update_version: null,
                last_updated: null,
                must_use: false,
              };
            });
            tx.putBlob('site-data', site.id, { plugins, themes: [], security: [], changes: [], users: [], synced_at: now, updates: null });
          }
        });
      }
      await s.vulnerabilities.importFile(feed, 'wordfence');
      return { token, installs: (await s.vulnerabilities.counts()).installs };
    });
    console.log(
      `view: ${VIEW_SITES.toLocaleString()} sites seeded, 10,000 records imported and matched (${installs.toLocaleString()} vulnerable installs) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    const serve = await startServe(dir);
    try {
      const path = `${REST}/vulnerabilities`;
      const c0 = performance.now();
      const first = await call(serve.url, token, 'GET', path);
      const firstMs = performance.now() - c0;
      if (first.status !== 200 || !first.json?.data?.length) throw new Error(`GET ${path} → ${first.status} ${first.text.slice(0, 200)}`);
      const r = await cannon(serve.url, { path, token, duration: 5, warmup: 1, pid: serve.pid });
      console.log(
        `view: GET /vulnerabilities at ${VIEW_SITES.toLocaleString()} sites: first answer ${firstMs.toFixed(0)} ms (${(first.text.length / 1024).toFixed(0)} KB), ` +
          `then ${r.rps.toLocaleString()} req/s, p50 ${r.p50} / p99 ${r.p99} ms, serve CPU ${r.serve_us_per_req} µs/req, ${r.non2xx} non-2xx [target ≥ 1,000 req/s]`,
      );
      const etag = (await fetch(`${serve.url}${path}`, { headers: { authorization: `Bearer ${token}` } })).headers.get('etag');
      const nm = await cannon(serve.url, { path, token, duration: 3, warmup: 1, pid: serve.pid, extraHeaders: { 'if-none-match': etag } });
      console.log(`view: the same with If-None-Match → 304: ${nm.rps.toLocaleString()} req/s, p50 ${nm.p50} ms`);
    } finally {
      await serve.stop();
    }
  } finally {
    removeDir(dir);
    rmSync(join(tmpdir(), `sitefleet-bench-view-feed-${process.pid}.json`), { force: true });
  }
}
