// bench/lib/history.mjs — the update-history figure of issue 28: one site's history (REST GET /updates/{id}/history,
// newest first, one page of 50) while the store holds 100,000 entries of 1,000 sites, one request at a time (p50).
// The store keeps at most 50,000 entries (trimmed on its next write): the 100,000 are written here straight into the
// table, so that the query runs over the figure, twice what a fleet ever keeps.
import { cannon } from './load.mjs';
import { removeDir, startServe, tempDir } from './proc.mjs';
import { seedFleet, withStore } from './seed.mjs';
import { REST, call } from './scenarios.mjs';

const OUTCOMES = ['updated', 'updated', 'updated', 'failed', 'skipped', 'rolled_back', 'rollback_failed'];

export async function historyBench({ entries = 100_000, sites = 1_000 } = {}, d, log) {
  const dir = tempDir(`history${entries}`);
  try {
    const { token } = await seedFleet(dir, sites);
    const t0 = Date.parse('2026-11-01T00:00:00Z');
    await withStore(dir, async (s) => {
      for (let start = 0; start < entries; start += 10_000) {
        await s.store.write((tx) => {
          for (let i = start; i < Math.min(entries, start + 10_000); i++) {
            const site = (i % sites) + 1;
            tx.insert('update_history', {
              site_id: site,
              site_url: `https://site${site}.example.com/`,
              type: 'plugin',
              slug: `plugin-${i % 40}/plugin-${i % 40}.php`,
              name: `Plugin ${i % 40}`,
              from: '1.0.0',
              to: '1.1.0',
              outcome: OUTCOMES[i % OUTCOMES.length],
              reason: '',
              code: '',
              actor: { kind: 'policy', id: 1, name: 'Nightly' },
              at: new Date(t0 + i * 20_000).toISOString(),
              duration_ms: 700,
              safe: true,
              probe: { before: 'healthy', after: 'healthy', summary: 'healthy' },
            });
          }
        });
      }
    });
    const serve = await startServe(dir, { args: [] });
    try {
      const path = `${REST}/updates/7/history?per_page=50`;
      const first = await call(serve.url, token, 'GET', path);
      const total = first.json?.total;
      if (first.status !== 200 || total !== entries / sites) throw new Error(`history sanity: ${first.status} total ${total}`);
      const r = await cannon(serve.url, { path, token, connections: 1, duration: d.readSeconds, warmup: d.warmupSeconds, pid: serve.pid });
      const out = { entries, sites, site_entries: total, p50_ms: r.p50, p99_ms: r.p99, rps: r.rps, requests: r.requests, non2xx: r.non2xx };
      log(`  one site's history over ${entries} entries: p50 ${r.p50} ms, p99 ${r.p99} ms (${r.requests} requests, one at a time)`);
      return out;
    } finally {
      await serve.stop();
    }
  } finally {
    removeDir(dir);
  }
}
