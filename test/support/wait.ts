// Test support: waiting for something that happens in the background (a job, a monitor, another process).
import type { Services } from '../../src/domain/index.js';
import type { JobState } from '../../src/store/records.js';

/** Polls `fn` every 50 ms until `ok` holds for its value, which it answers; fails after `ms` naming the last value. */
export async function until<T>(fn: () => Promise<T> | T, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The job as it ended, heard from the job service's own event (no polling): resolves at once when it has ended already.
 */
export function jobEnded(jobs: Services['jobs'], jobId: string): Promise<JobState> {
  return new Promise((resolve) => {
    const heard = (job: JobState) => {
      if (job.job_id !== jobId) return;
      jobs.finishedListeners.delete(heard);
      resolve(job);
    };
    jobs.finishedListeners.add(heard);
    const now = jobs.get(jobId);
    if (now.status === 'completed' || now.status === 'failed') heard(now);
  });
}
