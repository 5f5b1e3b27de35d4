// bench/reports.mjs — a monthly client report of a client with 500 sites and a year of history, rendered (the
// model, the HTML e-mail, its text and the printable page) through preview-client-report-v1. Prints the seed sizes,
// each run's time and whether the worst run met the target (≤ 2 s). Services and registry run in this process.
// Run after `npx tsc`: node bench/reports.mjs [--sites 500] [--runs 5]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildRegistry } from '../dist/abilities/index.js';
import { loadConfig } from '../dist/config.js';
import { closeServices, openServices } from '../dist/domain/index.js';

const { values } = parseArgs({ options: { sites: { type: 'string' }, runs: { type: 'string' } } });
const SITES = Number(values.sites ?? 500);
const RUNS = Number(values.runs ?? 5);
const TARGET_MS = 2000;
process.env.SITEFLEET_LOG ??= 'warn';

const DAY = 86_400_000;
const now = Date.now();
const yearAgo = now - 365 * DAY;
const at = (i, n) => new Date(yearAgo + Math.floor((i / n) * 365 * DAY)).toISOString().replace(/\.\d{3}Z$/, 'Z');
const dir = mkdtempSync(join(tmpdir(), 'sitefleet-bench-reports-'));
const services = await openServices(loadConfig({ dataDir: join(dir, 'data') }, {}));
const registry = buildRegistry(services);
const s = services;

// The fleet: SITES sites of one client, and as many of nobody's (the report must pick its own out of the history).
const client = await s.clients.add({ name: 'Bench client', email: 'bench@client.example' });
const ids = [];
await s.store.write((tx) => {
  for (let i = 0; i < SITES * 2; i++) {
    const rec = s.sites.insert(tx, {
      url: `https://site${i + 1}.example.com/`,
      name: `Site ${i + 1}`,
      admin_username: 'admin',
      wp_version: '6.8',
      php_version: '8.3',
      child_version: '6.1',
      client_id: i < SITES ? client.id : null,
    });
    if (i < SITES) ids.push(rec.id);
  }
});
const all = SITES * 2;
const siteOf = (i) => 1 + (i % all);
// A year of history at the bounds the services keep: 50,000 update attempts, 10,000 incidents, 20,000 vulnerability
// log entries, 100,000 audit entries, 31 daily check counts per site, 200 costs.
const N = { updates: 50_000, incidents: 10_000, vulns: 20_000, audit: 100_000, costs: 200 };
const OUTCOMES = ['updated', 'updated', 'updated', 'updated', 'failed', 'rolled_back', 'skipped'];
/** Writes rows in commits of 10,000 (one commit of everything would hold an undo log too long to spread). */
async function chunked(n, put) {
  for (let start = 0; start < n; start += 10_000)
    await s.store.write((tx) => {
      for (let i = start; i < Math.min(n, start + 10_000); i++) put(tx, i);
    });
}
await chunked(N.updates, (tx, i) =>
  tx.insert('update_history', {
    site_id: siteOf(i * 7),
    site_url: `https://site${siteOf(i * 7)}.example.com/`,
    type: 'plugin',
    slug: `plugin-${i % 300}/plugin-${i % 300}.php`,
    name: `Plugin ${i % 300}`,
    from: `1.${i % 10}.0`,
    to: `1.${(i % 10) + 1}.0`,
    outcome: OUTCOMES[i % OUTCOMES.length],
    reason: i % 7 === 5 ? 'home fatal_error (HTTP 500)' : '',
    code: '',
    actor: { kind: 'local', id: null, name: 'policy' },
    at: at(i, N.updates),
    duration_ms: 900,
    safe: true,
    probe: null,
  }),
);
await chunked(N.incidents, (tx, i) => {
  const start = Date.parse(at(i, N.incidents));
  tx.insert('incidents', {
    site_id: siteOf(i * 13),
    started_at: new Date(start).toISOString(),
    ended_at: new Date(start + 600_000).toISOString(),
    cause: 'http_status',
    message: 'HTTP 503',
    http_code: 503,
    down_count: 3,
  });
});
await chunked(N.vulns, (tx, i) =>
  tx.insert('vulnerability_log', {
    at: at(i, N.vulns),
    event: i % 3 ? 'found' : 'fixed',
    site_id: siteOf(i * 11),
    site_url: '',
    key: `wf:${i % 900}`,
    title: `Plugin ${i % 300} <= 1.${i % 10}.0 - Cross-Site Scripting`,
    severity: 'medium',
    type: 'plugin',
    slug: `plugin-${i % 300}`,
    version: `1.${i % 10}.0`,
    fixed_in: `1.${(i % 10) + 1}.0`,
  }),
);
const hashOf = (i) => String(i).padStart(64, '0');
await chunked(N.audit, (tx, k) => {
  const i = k + 1;
  const hash = hashOf(i);
  tx.put('audit', {
    id: i,
    at: at(i, N.audit),
    who_kind: 'user',
    who_id: 1,
    who_name: 'admin',
    door: 'rest',
    address: '127.0.0.1',
    action: 'update-site-v1',
    input: { site_id_or_domain: siteOf(i * 3), notes: `note ${i}` },
    outcome: 'ok',
    status: null,
    prev_hash: hashOf(i - 1),
    hash,
  });
});
await s.store.write((tx) => {
  tx.put('audit_head', { id: 1, last_seq: N.audit, last_hash: hashOf(N.audit), anchor_seq: 0, anchor_hash: hashOf(0) });
  const today = Math.floor(now / DAY) * DAY;
  for (const id of ids) {
    tx.put('monitors', { id, settings: {}, status: 'up', last_check: null, down_since: null, open_incident: null, history_n: 1 });
    tx.put('monitor_history', {
      id,
      n: 1,
      recent: [],
      hours: [],
      days: Array.from({ length: 31 }, (_, d) => [
        (today - (30 - d) * DAY) / 1000,
        1438,
        id % 5 === 0 ? 2 : 0,
        0,
        -1,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
      ]),
    });
  }
});
for (let c = 0; c < N.costs; c++)
  await s.costs.add({
    name: `Licence ${c}`,
    price: 10 + c,
    payment_type: 'subscription',
    product_type: 'plugin',
    license_type: c % 2 ? 'multi_site' : 'single_site',
    renewal_type: 'yearly',
    sites: ids.filter((_, k) => k % N.costs === c),
  });

const principal = { kind: 'local', name: 'bench' };
const times = [];
let last;
for (let r = 0; r < RUNS; r++) {
  const t0 = performance.now();
  last = await registry.call('preview-client-report-v1', { client_id: client.id, period: 'last_month' }, { principal, coerce: false });
  times.push(performance.now() - t0);
}
const worst = Math.max(...times);
const out = {
  sites_in_report: SITES,
  sites_in_fleet: all,
  history: N,
  period: last.period,
  summary: last.summary,
  bytes: { html: last.html.length, text: last.text.length, page: last.page.length },
  runs_ms: times.map((t) => Math.round(t)),
  first_ms: Math.round(times[0]),
  worst_ms: Math.round(worst),
  target_ms: TARGET_MS,
  met: worst <= TARGET_MS,
};
process.stdout.write(JSON.stringify(out, null, 2) + '\n');
await closeServices(services);
rmSync(dir, { recursive: true, force: true });
process.exit(0);
