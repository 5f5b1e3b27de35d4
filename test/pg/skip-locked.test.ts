// Issue 34: claims skip what another process holds instead of queueing behind it (SQL's SKIP LOCKED, on the advisory
// locks that are the PostgreSQL engine's row locks). A raw connection holds the lock of one record in an open
// transaction, as another process's commit would; a claim must move on at once. "At once" is shown by order, never by
// time: the claim resolves while the lock is still held, and no sitefleet connection ever queues for that lock (a
// claim that waited would show in pg_locks as a lock not granted; the test then releases it and fails).
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { closeServices, openServices, type Services } from '../../src/domain/index.js';
import { SKIPPED } from '../../src/store/engine.js';
import { PgStore, recordKey } from '../../src/store/pg-store.js';
import type { JobRecord } from '../../src/store/records.js';
import { freshDatabase, testPgUrl } from '../support/postgres.js';
import { tempDir } from '../support/server.js';
import { until } from '../support/wait.js';

const server = testPgUrl()!;
const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

/** Holds the advisory lock `key` in an open transaction on a raw connection, as a commit in another process would. */
async function hold(url: string, key: bigint): Promise<{ c: pg.Client; release: () => Promise<void> }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  cleanup.push(() => c.end());
  await c.query('BEGIN');
  await c.query('SELECT pg_advisory_xact_lock($1::bigint)', [String(key)]);
  return { c, release: async () => void (await c.query('COMMIT')) };
}

/** Whether a sitefleet connection waits for the advisory lock `key` (pg_locks: classid = high half, objid = low half). */
async function queuedFor(c: pg.Client, key: bigint): Promise<boolean> {
  const r = await c.query(
    `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND NOT l.granted AND a.application_name = 'sitefleet' AND a.datname = current_database()
        AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid AND l.objsubid = 1`,
    [String(key >> 32n), String(key & 0xffffffffn)],
  );
  return (r.rows[0].n as number) > 0;
}

/**
 * Which comes first: `work` resolving, or a sitefleet connection queueing for `key` held on `c`. Should it queue, the
 * lock is released so that `work` can end (the test then fails on the answer, instead of hanging).
 */
async function firstOf(work: Promise<unknown>, c: pg.Client, key: bigint, release: () => Promise<void>): Promise<'resolved' | 'queued'> {
  let done = false;
  const queued = until(
    async () => done || (await queuedFor(c, key)),
    (v) => v,
    600_000,
  ).then(() => 'queued' as const);
  const first = await Promise.race([work.then(() => 'resolved' as const), queued]);
  done = true;
  await queued;
  if (first === 'queued') {
    await release();
    await work;
  }
  return first;
}

async function services(url: string): Promise<Services> {
  const s = await openServices(loadConfig({ dataDir: tempDir(), databaseUrl: url }, {}));
  cleanup.push(() => closeServices(s));
  return s;
}

describe('PostgreSQL engine: a write with skipLocked skips what another transaction holds', () => {
  it('resolves SKIPPED at once while a record it needs is locked elsewhere, writes nothing, and commits once it is free', async () => {
    const url = await freshDatabase(server);
    const store = await PgStore.open(url);
    cleanup.push(() => store.close());
    const counter = await store.write((tx) => tx.insert<{ id: number; n: number }>('settings', { n: 0 }));
    const other = await store.write((tx) => tx.insert<{ id: number; n: number }>('settings', { n: 0 }));
    const bump = (id: number) => (tx: Parameters<Parameters<typeof store.write>[0]>[0]) => {
      const c = tx.get<{ id: number; n: number }>('settings', id)!;
      return tx.put('settings', { ...c, n: c.n + 1 }).n;
    };
    const key = recordKey('settings', counter.id);
    const held = await hold(url, key);
    // In one tick: an ordinary write before and after the claim (group commit would batch them together): they commit,
    // whatever becomes of the claim, which commits alone.
    const before = store.write(bump(other.id));
    const claim = store.write(bump(counter.id), { skipLocked: true });
    const after = store.write(bump(other.id));
    expect(await firstOf(claim, held.c, key, held.release)).toBe('resolved');
    expect(await claim).toBe(SKIPPED);
    expect([await before, await after]).toEqual([1, 2]);
    expect(store.get<{ id: number; n: number }>('settings', counter.id)!.n).toBe(0);
    expect(store.conflicts.skipped).toBe(1);
    const row = await held.c.query(`SELECT data FROM sitefleet_rows WHERE kind = 'settings' AND id = $1`, [counter.id]);
    expect(row.rows[0].data.n).toBe(0);
    await held.release();
    expect(await store.write(bump(counter.id), { skipLocked: true })).toBe(1);
    expect(store.conflicts.skipped).toBe(1);
  });

  it('lets a job runner skip a job whose record another process holds, claim the next, and claim the held one once free', async () => {
    const url = await freshDatabase(server);
    const s = await services(url);
    // The jobs come from another process whose runner is stopped (an enqueue kicks the enqueuer's own runner), so that
    // only this runner's tick claims them. Jobs over sites that do not exist: each ends at once once claimed.
    const other = await services(url);
    await other.jobs.stop();
    const x = await other.jobs.enqueue('sync', [9001]);
    const y = await other.jobs.enqueue('sync', [9002]);
    await s.store.sync();
    const job = (id: number) => s.store.get<JobRecord>('jobs', id)!;
    expect([job(x.id).status, job(y.id).status]).toEqual(['queued', 'queued']);
    const key = recordKey('jobs', x.id);
    const held = await hold(url, key);
    const tick = s.jobs.tick();
    expect(await firstOf(tick, held.c, key, held.release)).toBe('resolved');
    // Resolved while the lock is still held: X untouched, Y claimed by this process.
    expect(job(x.id)).toMatchObject({ status: 'queued', attempts: 0, started_at: null });
    expect(job(y.id).attempts).toBe(1);
    expect(job(y.id).started_at).not.toBeNull();
    expect((s.store as PgStore).conflicts.skipped).toBeGreaterThanOrEqual(1);
    await held.release();
    await s.jobs.tick();
    expect(job(x.id).attempts).toBe(1);
    expect(job(x.id).started_at).not.toBeNull();
    await until(
      () => [job(x.id).status, job(y.id).status],
      (v) => v.every((st) => st === 'completed' || st === 'failed'),
    );
  });
});
