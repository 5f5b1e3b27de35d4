// bench/lib/updates.mjs — the two figures of issue 15: list-updates-v1 over 5,000 synced sites, and run-updates-v1 over
// 1,000 simulated sites (one plugin each, 50 ms child latency) to job completion.
import { cannon } from './load.mjs';
import { removeDir, startServe, tempDir } from './proc.mjs';
import { seedPreconnected, withStore } from './seed.mjs';
import { ABILITIES, REST, call } from './scenarios.mjs';
import { cpuAccount, round } from './sys.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const LIST = `${ABILITIES}/abilities/svc/list-updates-v1/run?input[per_page]=100`;

function check(cond, what) {
  if (!cond) throw new Error(`sanity check failed: ${what}`);
}

async function waitJob(url, token, jobId, timeoutMs) {
  const end = performance.now() + timeoutMs;
  let last = null;
  while (performance.now() < end) {
    const r = await call(url, token, 'GET', `${REST}/jobs/${jobId}`);
    last = r.json?.data;
    if (last?.status === 'completed' || last?.status === 'failed') return last;
    await sleep(20);
  }
  return last;
}

/**
 * n sites whose stored data is a synced child's (plugins, themes, pending updates: 3 plugin updates, 1 theme, core on
 * every other site), written through the store API; then list-updates-v1 (one page of 100) under autocannon.
 */
export async function listUpdatesBench(n, d, log) {
  const dir = tempDir(`updates${n}`);
  try {
    const token = await withStore(dir, async (s) => {
      const { token } = await s.auth.createKey('bench', 'read_write');
      const now = new Date().toISOString();
      for (let start = 0; start < n; start += 1000) {
        await s.store.write((tx) => {
          for (let i = start; i < Math.min(n, start + 1000); i++) {
            const site = s.sites.insert(tx, {
              url: `https://u${i + 1}.example.com/`,
              name: `Site ${i + 1}`,
              admin_username: 'admin',
              wp_version: '6.7.2',
              last_sync: now,
            });
            const plugins = Array.from({ length: 20 }, (_, k) => ({
              slug: `p${k}/p${k}.php`,
              name: `Plugin ${k}`,
              version: '1.0.0',
              active: k % 2 === 0,
              update_version: k < 3 ? '1.1.0' : null,
              last_updated: null,
              must_use: false,
            }));
            tx.putBlob('site-data', site.id, {
              plugins,
              themes: [
                {
                  slug: 'twentytwentyfive',
                  name: 'Twenty Twenty-Five',
                  version: '1.0',
                  active: true,
                  update_version: '1.1',
                  last_updated: null,
                },
              ],
              security: [],
              changes: [],
              users: [],
              synced_at: now,
              updates: {
                core: i % 2 ? { current_version: '6.7.2', new_version: '6.8.2' } : null,
                plugins: plugins
                  .filter((p) => p.update_version)
                  .map((p) => ({ slug: p.slug, name: p.name, current_version: p.version, new_version: p.update_version })),
                themes: [{ slug: 'twentytwentyfive', name: 'Twenty Twenty-Five', current_version: '1.0', new_version: '1.1' }],
                translations: [],
              },
            });
          }
        });
      }
      return token;
    });
    const serve = await startServe(dir);
    try {
      const first = await call(serve.url, token, 'GET', LIST);
      check(
        first.status === 200 && first.json?.updates?.length === 100 && first.json.total === n * 4 + Math.floor(n / 2),
        `list-updates-v1 → ${first.status}, total ${first.json?.total}`,
      );
      const r = await cannon(serve.url, { path: LIST, token, duration: d.readSeconds, warmup: d.warmupSeconds, pid: serve.pid });
      log(`  list-updates-v1 over ${n} sites: ${r.rps} req/s, p50 ${r.p50} / p99 ${r.p99} ms`);
      return { sites: n, pending_items: first.json.total, ...r };
    } finally {
      await serve.stop();
    }
  } finally {
    removeDir(dir);
  }
}

/**
 * n preconnected simulated sites with exactly `items` plugin updates each (and nothing else pending), synced, then
 * run-updates-v1 (a job: n > 200) timed from the request to the job's completion on /jobs/<id>. `safe`: safe mode
 * (issue 28: a probe of each site first and after each item, items one at a time), else the plain run.
 */
export async function runUpdatesBench(n, latencyMs, d, log, { safe = false, items = 1, ability = 'run-updates-v1' } = {}) {
  const dir = tempDir(`run-updates${n}`);
  const { token, sim } = await seedPreconnected(dir, n, latencyMs);
  try {
    for (let i = 1; i <= n; i++) {
      const st = sim.state(i);
      st.plugins.forEach((p, k) => {
        p.updateVersion = k >= 1 && k <= items ? '99.0.0' : null;
      });
      st.themes.forEach((t) => {
        t.updateVersion = null;
      });
      st.wpUpdate = null;
      st.translations = [];
      st.rev++;
    }
    const serve = await startServe(dir, { args: ['--allow-private-sites'] });
    try {
      const q = await call(serve.url, token, 'POST', `${REST}/sites/sync`);
      check(q.json?.job_id, `POST /sites/sync → ${q.status}`);
      const synced = await waitJob(serve.url, token, q.json.job_id, d.jobTimeoutMs);
      check(synced?.status === 'completed', `sync job ${JSON.stringify(synced)?.slice(0, 200)}`);
      const acct = cpuAccount([serve.pid]);
      const t0 = performance.now();
      // Only plugin updates are pending: update-all-v1 (every type) updates the same items.
      const input = ability === 'update-all-v1' ? { confirm: true, safe } : { types: ['plugins'], safe };
      const r = await call(serve.url, token, 'POST', `${ABILITIES}/abilities/svc/${ability}/run`, { input });
      check(r.status === 200 && r.json?.job_id, `${ability} → ${r.status} ${r.text.slice(0, 200)}`);
      const job = await waitJob(serve.url, token, r.json.job_id, d.jobTimeoutMs);
      const ms = performance.now() - t0;
      const cpu = acct.stop();
      let upgrades = 0;
      for (let i = 1; i <= n; i++) upgrades += sim.state(i).upgradeLog.length;
      const out = {
        ability,
        sites: n,
        items_per_site: items,
        safe,
        child_latency_ms: latencyMs,
        seconds: round(ms / 1000, 2),
        completed: job?.status === 'completed',
        updates_queued: r.json.updates_queued,
        succeeded: job?.succeeded,
        failed: job?.failed,
        child_upgrades: upgrades,
        // Each site costs two writes (its start, then its items with its data) and one 50 ms child call.
        floor_s: round((n * latencyMs) / 32 / 1000, 2),
        serve_cpu_ms_per_site: round((cpu.measured_cpu_s[0] * 1000) / n, 2),
        cpu: { serve_cores: cpu.measured_cores[0], bench_and_sim_cores: cpu.bench_cores, others_cores: cpu.others_cores },
      };
      log(
        `  ${ability}${safe ? ' (safe)' : ' (safe: false)'} over ${n} sites × ${items}: ${out.seconds} s, ${out.succeeded} ok / ${out.failed} failed, ${upgrades} child upgrades`,
      );
      return out;
    } finally {
      await serve.stop();
    }
  } finally {
    await sim.close();
    removeDir(dir);
  }
}
