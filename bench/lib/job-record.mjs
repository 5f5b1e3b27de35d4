// bench/lib/job-record.mjs — what recording a job's sites costs as the job grows (issue 34): a job over `sites` sites
// on the default engine, every site recorded as a runner does (one recordSite per site, `perCommit` per commit), timed;
// the same over a 1,000-site job, whose per-site cost a large job should stay close to; and, for comparison, a job
// as made before chunks (its progress on its own record, rewritten whole at every commit), stopped after `capS`.
import { loadConfig } from '../../dist/config.js';
import { closeServices, openServices } from '../../dist/domain/index.js';
import { recordSite } from '../../dist/domain/job-chunks.js';
import { removeDir, tempDir } from './proc.mjs';
import { round } from './sys.mjs';

async function recordAll(n, { legacy = false, perCommit = 8, capS = Infinity } = {}) {
  const dataDir = tempDir('jobrec');
  const s = await openServices(loadConfig({ dataDir }, {}));
  try {
    await s.jobs.stop(); // nothing claims the job: this measures the recording alone
    const sites = Array.from({ length: n }, (_, i) => i + 1);
    const job = legacy
      ? await s.store.write((tx) =>
          tx.insert('jobs', {
            job_id: 'sync_bench',
            type: 'sync',
            status: 'processing',
            sites,
            done: [],
            succeeded: 0,
            errors: [],
            created_at: new Date().toISOString(),
            started_at: new Date().toISOString(),
            completed_at: null,
            owner: null,
            lease_until: 0,
            attempts: 1,
            failure: null,
          }),
        )
      : await s.jobs.enqueue('sync', sites);
    const t0 = performance.now();
    let done = 0;
    while (done < n && performance.now() - t0 < capS * 1000) {
      const batch = sites.slice(done, done + perCommit);
      await s.store.write((tx) => {
        for (const id of batch) recordSite(tx, tx.get('jobs', job.id), id, null);
      });
      done += batch.length;
    }
    const seconds = (performance.now() - t0) / 1000;
    return { sites: n, recorded: done, seconds: round(seconds, 1), ms_per_site: round((seconds * 1000) / done, 3) };
  } finally {
    await closeServices(s);
    removeDir(dataDir);
  }
}

export async function jobRecord({ sites, capS }, log) {
  const small = await recordAll(1000);
  const large = await recordAll(sites);
  log(
    `  chunked: 1,000 sites ${small.ms_per_site} ms/site; ${sites.toLocaleString('en')} sites ${large.seconds} s, ${large.ms_per_site} ms/site`,
  );
  const before = await recordAll(sites, { legacy: true, capS });
  log(
    `  as before chunks: ${before.recorded.toLocaleString('en')} of ${sites.toLocaleString('en')} sites in ${before.seconds} s, ${before.ms_per_site} ms/site`,
  );
  return { small, large, before, growth: round(large.ms_per_site / small.ms_per_site, 2) };
}
