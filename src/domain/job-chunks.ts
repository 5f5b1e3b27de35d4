// A job's progress, kept in chunks (issue 34). A job record holds its site list, written once; what each site gave —
// done, succeeded, its error, its item rows — goes to the chunk record of the JOB_CHUNK sites it belongs to. Recording
// a site rewrites that chunk only (at most JOB_CHUNK ids and their rows), never the job's whole site list, so each step
// of a job over 100,000 sites writes and copies a bounded amount, and the whole job a linear one.
//
// A job made before chunks (no `chunks` field) keeps its progress on its own record, as it always did, until it ends.
import type { JobChunkRecord, JobRecord, JobState } from '../store/records.js';
import type { Tx } from '../store/store.js';

/** Sites per chunk record: what one site's step writes at most, besides that site's own result. */
export const JOB_CHUNK = 500;

type JobError = JobRecord['errors'][number];
/** What progress is read from: a write's Tx or the store (both look records up by id). */
export interface ChunkReader {
  get<T extends { id: number }>(col: 'job_chunks', id: number): T | undefined;
}

/** The chunk records of a new job over `sites` (its progress all empty); their ids, in site-list order. */
export function newChunks(tx: Tx, jobId: number, sites: readonly number[]): number[] {
  const ids: number[] = [];
  for (let from = 0; from < sites.length; from += JOB_CHUNK)
    ids.push(tx.insert<JobChunkRecord>('job_chunks', { job: jobId, from, done: [], succeeded: 0, errors: [], items: [] }).id);
  return ids;
}

// A site's place in a job's list, per list: the list never changes after the job is made, so the map is built once
// per process and job, not per step.
const places = new WeakMap<readonly number[], Map<number, number>>();
function placeOf(sites: readonly number[], siteId: number): number | undefined {
  let m = places.get(sites);
  if (!m) {
    m = new Map();
    for (let i = 0; i < sites.length; i++) if (!m.has(sites[i]!)) m.set(sites[i]!, i);
    places.set(sites, m);
  }
  return m.get(siteId);
}

/** The chunk a site of the job is recorded in, or undefined (a job made before chunks, or a site not in the job). */
function chunkOf(r: ChunkReader, job: JobRecord, siteId: number): JobChunkRecord | undefined {
  if (!job.chunks) return undefined;
  const at = placeOf(job.sites, siteId);
  if (at === undefined) return undefined;
  const id = job.chunks[Math.floor(at / JOB_CHUNK)];
  return id === undefined ? undefined : r.get<JobChunkRecord>('job_chunks', id);
}

/** The job's chunks, in site-list order (missing ones, which a damaged store could lack, left out). */
function chunksOf(r: ChunkReader, job: JobRecord): JobChunkRecord[] {
  const out: JobChunkRecord[] = [];
  for (const id of job.chunks ?? []) {
    const c = r.get<JobChunkRecord>('job_chunks', id);
    if (c) out.push(c);
  }
  return out;
}

/** How many of the job's sites are recorded: one look per chunk. */
export function doneCount(r: ChunkReader, job: JobRecord): number {
  if (!job.chunks) return job.done?.length ?? 0;
  let n = 0;
  for (const c of chunksOf(r, job)) n += c.done.length;
  return n;
}

/** The site ids recorded so far. */
export function doneSet(r: ChunkReader, job: JobRecord): Set<number> {
  if (!job.chunks) return new Set(job.done ?? []);
  const s = new Set<number>();
  for (const c of chunksOf(r, job)) for (const id of c.done) s.add(id);
  return s;
}

/** The job with its progress gathered from its chunks: what views, events and policies read. */
export function jobState(r: ChunkReader, job: JobRecord): JobState {
  if (!job.chunks) return { ...job, done: job.done ?? [], succeeded: job.succeeded ?? 0, items: job.items ?? [] };
  const done: number[] = [];
  const errors: JobError[] = [];
  const items: unknown[] = [];
  let succeeded = 0;
  for (const c of chunksOf(r, job)) {
    done.push(...c.done);
    errors.push(...c.errors);
    items.push(...c.items);
    succeeded += c.succeeded;
  }
  // The job's own errors and items are what its end added (a cancel's note, the rows of sites never started).
  return { ...job, done, succeeded, errors: [...errors, ...job.errors], items: [...items, ...(job.items ?? [])] };
}

// Per row test, per chunk record: how many of its rows pass. A chunk is replaced on every write, never changed in
// place, so a count found for a chunk object holds for as long as that object is the chunk.
const counts = new WeakMap<(row: unknown) => boolean, WeakMap<JobChunkRecord, number>>();

/**
 * How many of the job's item rows `pass` (the job's own rows, from its end, included): counts only the chunks written
 * since the last count with the same test, so asking after every site (a policy's stop rule) costs one look per chunk,
 * not a gathering of every row of the run.
 */
export function countItems(r: ChunkReader, job: JobRecord, pass: (row: unknown) => boolean): number {
  let n = 0;
  for (const i of job.items ?? []) if (pass(i)) n++;
  if (!job.chunks) return n;
  let known = counts.get(pass);
  if (!known) counts.set(pass, (known = new WeakMap()));
  for (const c of chunksOf(r, job)) {
    let k = known.get(c);
    if (k === undefined) {
      k = 0;
      for (const i of c.items) if (pass(i)) k++;
      known.set(c, k);
    }
    n += k;
  }
  return n;
}

/** The item rows recorded so far for one site of the job (a resumed update job skips what they show done). */
export function itemsOfSite(r: ChunkReader, job: JobRecord, siteId: number): unknown[] {
  const all = job.chunks ? (chunkOf(r, job, siteId)?.items ?? []) : (job.items ?? []);
  return all.filter((i) => (i as { site_id?: unknown }).site_id === siteId);
}

/** Appends item rows for a site of the job (an update's per-item results) in the same write as the site's result. */
export function addItems(tx: Tx, job: JobRecord, siteId: number, rows: readonly unknown[]): void {
  if (!rows.length) return;
  const cur = tx.get<JobRecord>('jobs', job.id);
  if (!cur) return;
  const c = chunkOf(tx, cur, siteId);
  if (c) tx.put<JobChunkRecord>('job_chunks', { ...c, items: [...c.items, ...rows] });
  else if (!cur.chunks) tx.put<JobRecord>('jobs', { ...cur, items: [...(cur.items ?? []), ...rows] });
  else throw new Error(`site ${siteId} is not in job ${cur.job_id}`);
}

/**
 * Records a site's result on the job: false when it was recorded already (a site is never counted twice). Writes the
 * site's chunk only; a job made before chunks is written whole, as before.
 */
export function recordSite(tx: Tx, job: JobRecord, siteId: number, error: JobError | null): boolean {
  const c = chunkOf(tx, job, siteId);
  if (c) {
    if (c.done.includes(siteId)) return false;
    tx.put<JobChunkRecord>('job_chunks', {
      ...c,
      done: [...c.done, siteId],
      succeeded: c.succeeded + (error ? 0 : 1),
      errors: error ? [...c.errors, error] : c.errors,
    });
    return true;
  }
  if (job.chunks) throw new Error(`site ${siteId} is not in job ${job.job_id}`);
  const done = job.done ?? [];
  if (done.includes(siteId)) return false;
  tx.put<JobRecord>('jobs', {
    ...job,
    done: [...done, siteId],
    succeeded: (job.succeeded ?? 0) + (error ? 0 : 1),
    errors: error ? [...job.errors, error] : job.errors,
  });
  return true;
}

/** Removes the job's chunks (with the job, when it has been kept long enough). */
export function deleteChunks(tx: Tx, job: JobRecord): void {
  for (const id of job.chunks ?? []) tx.delete('job_chunks', id);
}
