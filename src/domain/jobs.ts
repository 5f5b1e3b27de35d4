// Batches over many sites. Up to the queue threshold a batch runs while the caller waits (`jobs.batch`);
// above it, it becomes a persisted job that a runner in any sitefleet process on the data dir claims,
// works through and records site by site, in the same commit as the site's own result, so that a job
// resumed after a crash skips what was done. A claim is a lease: a dead owner's job is taken over.
import { unscoped } from '../core/scope.js';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ServiceError, errors, toServiceError } from '../core/errors.js';
import type { CallContext } from '../core/ability.js';
import { log } from '../log.js';
import type { JobRecord, JobState, JobType, SiteRecord } from '../store/records.js';
import { SKIPPED, type Store, type Tx } from '../store/store.js';
import { childFailure, type Outcome } from './child-sites.js';
import { deleteChunks, doneCount, doneSet, jobState, newChunks, recordSite } from './job-chunks.js';
import type { SiteService } from './sites.js';
import type { Config } from '../config.js';

/** One site's work in a job; `job` carries the job's params and what earlier attempts recorded (update jobs). */
export type SiteStep = (site: SiteRecord, job?: JobRecord) => Promise<Outcome<unknown>>;

/** One site's result in a fan-out: its value, or the error that site gave. */
export type SiteResult<T> = { site: SiteRecord; ok: true; value: T } | { site: SiteRecord; ok: false; error: ServiceError };
/** What a fan-out needs of a call: the concurrency setting, and the call's signal and progress. */
export type FanOutCtx = { config: Config } & Omit<CallContext, 'principal'>;

const LEASE_MS = 30_000;
const KEEP_MS = 24 * 3600_000;
const TIMEOUT_MS = 4 * 3600_000;
const MAX_ATTEMPTS = 5;
// pid-random@host: a process on this host is known dead when its pid is gone; one on another host (several machines on
// one PostgreSQL database) only when its lease runs out.
const HOST = hostname();
const OWNER = `${process.pid}-${randomUUID().slice(0, 8)}@${HOST}`;

/** Runs `limit` promises at a time; stops starting new ones once `signal` aborts. */
async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  signal: AbortSignal | undefined,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !signal?.aborted) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * Runs `step` on every site, at most `childConcurrency` at once (the connector bounds calls in flight as
 * well). A failing site is one error result, never a failed fan-out. Stops starting sites once ctx.signal
 * aborts; those come back in notDone. Results keep the sites' order; progress is reported per site.
 */
export async function eachSite<T>(
  ctx: FanOutCtx,
  sites: readonly SiteRecord[],
  label: string,
  step: (site: SiteRecord) => Promise<T>,
): Promise<{ results: SiteResult<T>[]; notDone: SiteRecord[] }> {
  const results = new Array<SiteResult<T> | undefined>(sites.length);
  let done = 0;
  await eachLimited(
    sites.map((site, i) => [site, i] as const),
    ctx.config.childConcurrency,
    ctx.signal,
    async ([site, i]) => {
      let r: SiteResult<T>;
      try {
        r = { site, ok: true, value: await step(site) };
      } catch (e) {
        r = { site, ok: false, error: e instanceof ServiceError ? e : childFailure(e, site) };
      }
      results[i] = r;
      await ctx.progress?.({ done: ++done, total: sites.length, message: `${label} ${site.url}: ${r.ok ? 'ok' : r.error.code}` });
    },
  );
  return {
    results: results.filter((r): r is SiteResult<T> => r !== undefined),
    notDone: sites.filter((_, i) => results[i] === undefined),
  };
}

/** eachSite over remote steps that return outcomes: each outcome is recorded as it completes (grouped by the store). */
function runBatch<T>(
  ctx: FanOutCtx & { store: Store },
  sites: readonly SiteRecord[],
  label: string,
  step: (site: SiteRecord) => Promise<Outcome<T>>,
) {
  return eachSite(ctx, sites, label, async (site) => {
    const o = await step(site);
    if (o.ok) return ctx.store.write(o.commit);
    if (o.commit) await ctx.store.write(o.commit);
    throw o.error;
  });
}

export interface JobView {
  job_id: string;
  type: JobType;
  status: JobRecord['status'];
  progress: number;
  processed: number;
  total: number;
  succeeded: number;
  failed: number;
  started_at: string | null;
  completed_at: string | null;
  errors: JobRecord['errors'];
  job_timed_out: boolean;
  failure?: string;
  /** Update jobs: the per-item results recorded so far (the first MAX_JOB_ITEMS_VIEW), and how many there are. */
  items?: unknown[];
  items_total?: number;
}

/** Per-item results a job status shows at most (the rest are counted in items_total). */
export const MAX_JOB_ITEMS_VIEW = 500;
/** Per-site errors a job status shows at most (all are counted in failed): a status stays small on any fleet. */
export const MAX_JOB_ERRORS_VIEW = 500;

const iso = (s: string | null) => (s ? s.replace(/\.\d{3}Z$/, 'Z') : null);

export function jobView(j: JobState): JobView {
  const processed = j.done.length;
  const total = j.sites.length;
  const view: JobView = {
    job_id: j.job_id,
    type: j.type,
    status: j.status,
    progress: total ? Math.min(100, Math.round((100 * processed) / total)) : 100,
    processed,
    total,
    succeeded: j.succeeded,
    failed: j.errors.length,
    started_at: iso(j.started_at),
    completed_at: iso(j.completed_at),
    errors: j.errors.length > MAX_JOB_ERRORS_VIEW ? j.errors.slice(0, MAX_JOB_ERRORS_VIEW) : j.errors,
    job_timed_out: j.failure === 'timeout',
  };
  if (j.failure) view.failure = j.failure;
  if (j.items.length) {
    view.items = j.items.slice(0, MAX_JOB_ITEMS_VIEW);
    view.items_total = j.items.length;
  }
  return view;
}

export class JobService {
  private steps = new Map<JobType, SiteStep>();
  private timer: NodeJS.Timeout | null = null;
  private running = new Map<string, Promise<void>>();
  private aborts = new Set<AbortController>();
  /** Running jobs of this process by id, so that a cancel here stops them at once (another process's runner polls). */
  private cancels = new Map<string, AbortController>();
  private stopping = false;
  private ticking = false;
  private limits = new Map<JobType, (job?: JobRecord) => number>();
  /** Per type: the item rows of the sites a cancelled job never started (a policy run's items, skipped with why). */
  private cancelRows = new Map<JobType, (job: JobRecord, notStarted: number[]) => unknown[]>();
  private hooks: Array<() => Promise<void>> = [];
  /** Hear of jobs ending (completed, failed, cancelled), once the write that ends them has been made. */
  readonly finishedListeners = new Set<(job: JobState) => void>();
  /** The queue threshold in force (the dashboard setting, issue 21; the configured one by default). */
  threshold: () => number = () => this.config.queueThreshold;

  constructor(
    private readonly store: Store,
    private readonly sites: SiteService,
    private readonly config: Config,
  ) {}

  /**
   * The queue rule: more sites than the threshold → a persisted job, answered with its id. Where to follow it is
   * each door's to say (REST: a status_url; MCP: the sitefleet://jobs/{job_id} resource), never a service's.
   */
  async queueIfOver(
    type: JobType,
    sites: readonly SiteRecord[],
    params?: Record<string, unknown>,
    threshold = this.threshold(),
  ): Promise<{ queued: true; job_id: string } | null> {
    if (sites.length <= threshold) return null;
    const job = await this.enqueue(
      type,
      sites.map((s) => s.id),
      params,
    );
    return { queued: true, job_id: job.job_id };
  }

  /**
   * A batch over sites, as the batch abilities run one: above the queue threshold a persisted job (answered with its
   * id), else `step` (the type's own by default) on each site now, at most the type's limit at once, with the call's
   * signal and progress; each outcome is recorded as it completes.
   */
  async batch<T = unknown>(
    call: Omit<CallContext, 'principal'>,
    type: JobType,
    sites: readonly SiteRecord[],
    step: (site: SiteRecord) => Promise<Outcome<T>> = this.stepOf(type) as (site: SiteRecord) => Promise<Outcome<T>>,
  ): Promise<{ queued: true; job_id: string } | { queued: false; results: SiteResult<T>[]; notDone: SiteRecord[] }> {
    const queued = await this.queueIfOver(type, sites);
    if (queued) return queued;
    const config = { ...this.config, childConcurrency: this.limits.get(type)?.() ?? this.config.childConcurrency };
    const { results, notDone } = await runBatch(
      { signal: call.signal, progress: call.progress, config, store: this.store },
      sites,
      type,
      step,
    );
    return { queued: false, results, notDone };
  }

  /**
   * `limit`: sites of such a job worked on at once (read when a job starts, with the job; the child concurrency by
   * default). A limit above the child concurrency is the type's to justify: child calls stay bounded by the connector.
   */
  define(
    type: JobType,
    step: SiteStep,
    limit?: (job?: JobRecord) => number,
    onCancelled?: (job: JobRecord, notStarted: number[]) => unknown[],
  ): void {
    this.steps.set(type, step);
    if (limit) this.limits.set(type, limit);
    if (onCancelled) this.cancelRows.set(type, onCancelled);
  }

  /** The step a job type runs on each site: also what the same batch runs inline under the queue threshold. */
  stepOf(type: JobType): SiteStep {
    const step = this.steps.get(type);
    if (!step) throw new Error(`no step defined for ${type} jobs`);
    return step;
  }

  /** Work every runner does on each tick besides jobs (the sync schedule); it must be cheap when there is nothing to do. */
  onTick(hook: () => Promise<void>): void {
    this.hooks.push(hook);
  }

  async enqueue(type: JobType, siteIds: number[], params?: Record<string, unknown>): Promise<JobRecord> {
    return this.store.write((tx) => this.enqueueIn(tx, type, siteIds, params));
  }

  /** enqueue inside a caller's write, so that the job exists exactly when what it is for does (a policy's run). */
  enqueueIn(tx: Tx, type: JobType, siteIds: number[], params?: Record<string, unknown>): JobRecord {
    const job = tx.insert<JobRecord>('jobs', {
      ...(params ? { params } : {}),
      job_id: `${type}_${randomUUID()}`,
      type,
      status: 'queued',
      sites: siteIds,
      errors: [],
      created_at: new Date().toISOString(),
      started_at: null,
      completed_at: null,
      owner: null,
      lease_until: 0,
      attempts: 0,
      failure: null,
    });
    tx.put<JobRecord>('jobs', { ...job, chunks: newChunks(tx, job.id, siteIds) });
    // The runner takes every queued job, not only this caller's: it must not run inside the caller's scope.
    unscoped(() => setImmediate(() => void this.tick()));
    return tx.get<JobRecord>('jobs', job.id)!;
  }

  /** The job as stored (its progress in its chunks), whoever asks: the runner's look at a job it works. */
  private header(jobId: string): JobRecord | undefined {
    for (const j of this.store.all<JobRecord>('jobs')) if (j.job_id === jobId) return j;
    return undefined;
  }

  /**
   * A job with its progress (gathered from its chunks: one look per JOB_CHUNK sites). A job whose sites are not all in
   * the running call's scope is answered as missing (domain/access.ts).
   */
  find(jobId: string): JobState | undefined {
    const j = this.header(jobId);
    return j && this.sites.access.seesAll(j.sites) ? jobState(this.store, j) : undefined;
  }

  /** Up to `limit` job ids starting with `prefix`, newest first (jobs are kept a day, so they are few). */
  idsStartingWith(prefix: string, limit: number): string[] {
    const found = [...this.store.all<JobRecord>('jobs')].filter((j) => j.job_id.startsWith(prefix) && this.sites.access.seesAll(j.sites));
    found.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0));
    return found.slice(0, limit).map((j) => j.job_id);
  }

  get(jobId: string): JobState {
    const j = this.find(jobId);
    if (!j) throw errors.jobNotFound(jobId);
    return j;
  }

  /**
   * Asks a queued or running job to stop: no site starts after this (sites in flight finish and are recorded). A queued
   * job ends at once; a running one when its runner sees the request, in this or another process. Idempotent.
   */
  async cancel(jobId: string, reason?: string): Promise<JobState> {
    const j = this.get(jobId);
    try {
      await this.store.write((tx) => this.cancelIn(tx, j.job_id, reason));
    } finally {
      this.afterCancelIn(jobId);
    }
    return this.get(jobId);
  }

  /**
   * cancel() inside another write (a policy deleted and its run's job cancelled at once). `params` are merged into
   * the job's (what its type's cancel rows read). The write's caller then calls afterCancelIn (whether it committed or
   * not): it stops the runner in this process. A job it ends is announced once the write is committed (finish).
   */
  cancelIn(tx: Tx, jobId: string, reason?: string, params?: Record<string, unknown>): void {
    const cur = [...tx.all<JobRecord>('jobs')].find((x) => x.job_id === jobId);
    if (!cur || cur.status === 'completed' || cur.status === 'failed') return;
    const next: JobRecord = {
      ...cur,
      ...(reason ? { cancel_reason: reason } : {}),
      ...(params ? { params: { ...cur.params, ...params } } : {}),
    };
    if (cur.status === 'queued') {
      tx.put<JobRecord>('jobs', next);
      this.finish(tx, cur.id, 'cancelled', this.cancelNote(tx, next));
    } else tx.put<JobRecord>('jobs', { ...next, cancel_requested: true });
  }

  /** After cancelIn's write: stops this process's runner of the job at once. */
  afterCancelIn(jobId: string): void {
    this.cancels.get(jobId)?.abort();
  }

  /** Once the write that ended job `id` is committed (finish): its listeners hear of it, from what is stored. */
  private announceEnded(id: number): void {
    const j = this.store.get<JobRecord>('jobs', id);
    if (!j || (j.status !== 'completed' && j.status !== 'failed') || !this.finishedListeners.size) return;
    const ended = jobState(this.store, j);
    for (const l of this.finishedListeners) {
      try {
        l(ended);
      } catch (e) {
        // The job did end; a listener's failure is its own, not the write's caller's.
        log('error', 'a job end listener failed', { job: j.job_id, err: String(e) });
      }
    }
  }

  private cancelNote(tx: Tx, j: JobRecord): JobRecord['errors'][number] {
    const done = doneSet(tx, j);
    const left = j.sites.filter((id) => !done.has(id));
    return {
      site_id: 0,
      code: 'cancelled',
      message: `Cancelled${j.cancel_reason ? ` (${j.cancel_reason})` : ''}: ${left.length} site(s) not started${left.length ? ` (ids ${left.slice(0, 50).join(', ')}${left.length > 50 ? ', …' : ''})` : ''}.`,
    };
  }

  /** Start claiming and working jobs (every sitefleet process on the data dir does). */
  start(intervalMs = 1000): void {
    if (this.timer) return;
    this.stopping = false;
    this.timer = setInterval(() => void this.tick(), intervalMs);
    this.timer.unref();
    setImmediate(() => void this.tick());
  }

  /** Stop claiming; jobs in hand stop after their current sites and stay resumable. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const a of this.aborts) a.abort();
    await Promise.allSettled([...this.running.values()]);
  }

  private ownerAlive(owner: string | null): boolean {
    const pid = Number(owner?.split('-')[0]);
    if (!owner || !Number.isInteger(pid)) return false;
    if (owner === OWNER) return true;
    const at = owner.indexOf('@');
    if (at >= 0 && owner.slice(at + 1) !== HOST) return true;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }

  async tick(): Promise<void> {
    // One tick at a time: two overlapping ticks would both see a queued job and both claim it.
    if (this.stopping || this.ticking) return;
    this.ticking = true;
    try {
      // A hook under way when the runner stops (the store closing under it) failing is the stop, not an error.
      for (const h of this.hooks)
        await h().catch((e: unknown) => {
          if (!this.stopping) log('error', 'job runner hook failed', { err: String(e) });
        });
      await this.claimAndWork();
    } finally {
      this.ticking = false;
    }
  }

  private async claimAndWork(): Promise<void> {
    const now = Date.now();
    // A job this process owns but no longer runs (its last writes failed, e.g. on a full disk) is ours to resume:
    // nothing else will, since its owner looks alive to every other process.
    const candidates = [...this.store.all<JobRecord>('jobs')].filter(
      (j) =>
        !this.running.has(j.job_id) &&
        (j.status === 'queued' || (j.status === 'processing' && (j.owner === OWNER || j.lease_until < now || !this.ownerAlive(j.owner)))),
    );
    const expired = [...this.store.all<JobRecord>('jobs')].filter(
      (j) => (j.status === 'completed' || j.status === 'failed') && Date.parse(j.completed_at ?? j.created_at) < now - KEEP_MS,
    );
    if (expired.length)
      await this.store
        .write((tx) => {
          for (const j of expired) {
            deleteChunks(tx, j);
            tx.delete('jobs', j.id);
          }
        })
        .catch(() => {});
    // A claim skips a job whose record another process holds locked (claiming it, or writing its progress) instead of
    // waiting behind it: it moves on to the next candidate, and the held one is looked at again next tick.
    for (const j of candidates) {
      const claimed = await this.store
        .write(
          (tx) => {
            const cur = tx.get<JobRecord>('jobs', j.id);
            if (!cur || cur.status === 'completed' || cur.status === 'failed' || this.running.has(cur.job_id)) return null;
            if (cur.status === 'processing' && cur.owner !== OWNER && cur.lease_until >= Date.now() && this.ownerAlive(cur.owner))
              return null;
            return tx.put<JobRecord>('jobs', {
              ...cur,
              status: 'processing',
              owner: OWNER,
              lease_until: Date.now() + LEASE_MS,
              started_at: cur.started_at ?? new Date().toISOString(),
              attempts: cur.attempts + 1,
            });
          },
          { skipLocked: true },
        )
        .catch(() => null);
      if (!claimed || claimed === SKIPPED) continue;
      const p = this.work(claimed)
        .catch(async (e) => {
          log('error', 'job failed', { job: claimed.job_id, err: String(e) });
          // Hand it back so that it is retried (and counted as an attempt) rather than held by us forever.
          await this.store
            .write((tx) => {
              const cur = tx.get<JobRecord>('jobs', claimed.id);
              if (cur?.owner === OWNER && cur.status === 'processing') tx.put<JobRecord>('jobs', { ...cur, owner: null, lease_until: 0 });
            })
            .catch(() => {});
        })
        .finally(() => this.running.delete(claimed.job_id));
      this.running.set(claimed.job_id, p);
    }
  }

  private finish(tx: Tx, id: number, failure: string | null, extraError?: JobRecord['errors'][number]): void {
    const cur = tx.get<JobRecord>('jobs', id)!;
    const rows = failure === 'cancelled' ? this.cancelRows.get(cur.type) : undefined;
    let skipped: unknown[] = [];
    if (rows) {
      const done = doneSet(tx, cur);
      skipped = rows(
        jobState(tx, cur),
        cur.sites.filter((s) => !done.has(s)),
      );
    }
    tx.put<JobRecord>('jobs', {
      ...cur,
      ...(skipped.length ? { items: [...(cur.items ?? []), ...skipped] } : {}),
      status: failure ? 'failed' : 'completed',
      completed_at: new Date().toISOString(),
      owner: null,
      failure,
      errors: extraError ? [...cur.errors, extraError] : cur.errors,
    });
    // Heard once the write is committed, never from a run of it that is not (PostgreSQL runs a write more than once).
    tx.afterCommit(() => this.announceEnded(id));
  }

  private async work(job: JobRecord): Promise<void> {
    const step = this.steps.get(job.type);
    if (!step) return void (await this.store.write((tx) => this.finish(tx, job.id, `no handler for ${job.type} jobs`)));
    if (job.attempts > MAX_ATTEMPTS) {
      return void (await this.store.write((tx) =>
        this.finish(tx, job.id, `interrupted ${MAX_ATTEMPTS} times`, {
          site_id: 0,
          code: 'interrupted',
          message: `The job was interrupted ${MAX_ATTEMPTS} times and was given up.`,
        }),
      ));
    }
    const started = Date.parse(job.started_at ?? new Date().toISOString());
    const done = doneSet(this.store, job);
    const todo = job.sites.filter((id) => !done.has(id));
    const abort = new AbortController();
    this.aborts.add(abort);
    this.cancels.set(job.job_id, abort);
    let cancelled = job.cancel_requested === true;
    if (cancelled) abort.abort();
    const pending = new Set<Promise<void>>();
    const heartbeat = setInterval(() => {
      if (Date.now() - started > TIMEOUT_MS) abort.abort();
      if (this.header(job.job_id)?.cancel_requested) {
        cancelled = true;
        abort.abort();
      }
      void this.store
        .write((tx) => {
          const cur = tx.get<JobRecord>('jobs', job.id);
          if (cur && cur.owner === OWNER) tx.put<JobRecord>('jobs', { ...cur, lease_until: Date.now() + LEASE_MS });
        })
        .catch(() => {});
    }, LEASE_MS / 3);
    heartbeat.unref();
    try {
      const limit = Math.max(1, this.limits.get(job.type)?.(job) ?? this.config.childConcurrency);
      await eachLimited(todo, limit, abort.signal, async (siteId) => {
        // A cancel made in another process is seen here, before the next site starts.
        if (this.header(job.job_id)?.cancel_requested) {
          cancelled = true;
          abort.abort();
          return;
        }
        const site = this.sites.get(siteId);
        let o: Outcome<unknown>;
        if (!site) o = { ok: false, error: errors.siteNotFound(siteId) };
        else {
          try {
            o = await step(site, this.header(job.job_id) ?? job);
          } catch (e) {
            if (!(e instanceof ServiceError))
              log('error', 'job step threw', { job: job.job_id, site: siteId, err: (e as Error).stack ?? String(e) });
            o = { ok: false, error: toServiceError(e) };
          }
        }
        // The worker moves on to its next site while this one's result is committed (grouped with others);
        // a bound on commits in flight keeps memory and the store queue in check.
        const p = this.store
          .write((tx) => {
            const cur = tx.get<JobRecord>('jobs', job.id);
            if (!cur || cur.owner !== OWNER) return; // taken over; the new owner redoes this site
            // Recorded already: never count a site twice (nor commit its result again).
            if (!recordSite(tx, cur, siteId, o.ok ? null : { site_id: siteId, code: o.error.code, message: o.error.message })) return;
            if (o.ok) o.commit(tx);
            else o.commit?.(tx);
          })
          .catch((e: unknown) => log('error', 'job step not recorded', { job: job.job_id, site: siteId, err: String(e) }));
        pending.add(p);
        void p.finally(() => pending.delete(p));
        if (pending.size >= this.config.childConcurrency * 2) await Promise.race(pending);
      });
    } finally {
      await Promise.all(pending);
      clearInterval(heartbeat);
      this.aborts.delete(abort);
      this.cancels.delete(job.job_id);
    }
    await this.store.write((tx) => {
      const cur = tx.get<JobRecord>('jobs', job.id);
      if (!cur || cur.owner !== OWNER) return;
      if (doneCount(tx, cur) >= cur.sites.length) this.finish(tx, job.id, null);
      else if (cancelled || cur.cancel_requested) this.finish(tx, job.id, 'cancelled', this.cancelNote(tx, cur));
      else if (Date.now() - started > TIMEOUT_MS) {
        this.finish(tx, job.id, 'timeout', { site_id: 0, code: 'timeout', message: 'Job timed out after 4 hours.' });
      } else {
        // Stopping: hand it back so that the next start (or another process) resumes it.
        tx.put<JobRecord>('jobs', { ...cur, owner: null, lease_until: 0 });
      }
    });
  }
}
