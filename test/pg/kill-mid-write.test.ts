// Issue 34: a `serve` process killed with SIGKILL in the middle of its writes, on the row-locking PostgreSQL layout. Two
// processes on one database edit sites (each its own) and create tags with unique names, concurrently, over HTTP. One
// is frozen (SIGSTOP) at a moment PostgreSQL shows its commit open and holding the row lock of one of its sites, and
// killed there. The survivor's write to that very site waits for the lock while the dead one is frozen and completes
// once it is killed (PostgreSQL ends a dead client's transaction and releases its locks); its other writes go on.
// Then, from the database itself: every write either process acknowledged is there, no id was handed out twice, no tag
// name is there twice, and each write the killed one left unacknowledged is there whole or not at all.
// Every wait is for an event (a response, a lock in pg_locks, a process state), never for time to pass.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { closeServices, openServices } from '../../src/domain/index.js';
import { recordKey } from '../../src/store/pg-store.js';
import type { TagRecord } from '../../src/store/records.js';
import { cli, lastLine, serveProcess } from '../support/process.js';
import { seedSites, testFleetStore } from '../support/server.js';
import { until } from '../support/wait.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
});

const SITES = 12; // sites 1-6 are A's to edit, 7-12 B's

type Call = (path: string, init?: { method?: string; json?: unknown }) => Promise<{ status: number; body: any }>;
function client(base: string, token: string): Call {
  return async (path, init = {}) => {
    const res = await fetch(`${base}/wp-json/svc/v2${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
}

/**
 * Writes through one process until stopped: site edits (name and notes set together to `${side}${site}-${k}`, one at a
 * time per site) and tag creates with unique names. Records what was sent and what was acknowledged (answered 200);
 * a request that fails ends its worker and is kept in `failures`.
 */
function load(side: 'a' | 'b', call: Call, sites: number[]) {
  const s = {
    stopped: false,
    sent: new Map<number, number>(),
    acked: new Map<number, number>(),
    tagsSent: new Set<string>(),
    tags: new Map<string, number>(),
    acks: 0,
    failures: [] as string[],
    done: Promise.resolve() as Promise<unknown>,
  };
  const fail = (what: string, e: unknown) => void s.failures.push(`${what}: ${String((e as Error).message ?? e)}`);
  const siteWorker = async (mine: number[]) => {
    for (let k = 1; !s.stopped; k++) {
      for (const id of mine) {
        if (s.stopped) return;
        const v = `${side}${id}-${k}`;
        s.sent.set(id, k);
        try {
          const r = await call(`/sites/${id}/edit`, { method: 'PUT', json: { name: v, notes: v } });
          if (r.status !== 200) return fail(`site ${id} edit ${k}`, `${r.status} ${JSON.stringify(r.body)}`);
          s.acked.set(id, k);
          s.acks++;
        } catch (e) {
          return fail(`site ${id} edit ${k}`, e);
        }
      }
    }
  };
  const tagWorker = async (w: number) => {
    for (let n = 1; !s.stopped; n++) {
      const name = `${side}-${w}-${n}`;
      s.tagsSent.add(name);
      try {
        const r = await call('/tags/add', { method: 'POST', json: { name } });
        if (r.status !== 200) return fail(`tag ${name}`, `${r.status} ${JSON.stringify(r.body)}`);
        s.tags.set(name, r.body.data.id as number);
        s.acks++;
      } catch (e) {
        return fail(`tag ${name}`, e);
      }
    }
  };
  s.done = Promise.all([
    siteWorker(sites.filter((_, i) => i % 2 === 0)),
    siteWorker(sites.filter((_, i) => i % 2 === 1)),
    tagWorker(1),
    tagWorker(2),
  ]);
  return s;
}

/** The advisory lock as pg_locks shows it (classid: high half, objid: low half, objsubid 1 for a bigint key). */
const lockOf = (row: { hi: string; lo: string }) => (BigInt(row.hi) << 32n) | BigInt(row.lo);

/** Sitefleet backends holding a granted advisory lock in an open transaction that waits for its client. */
async function idleHolders(c: pg.Client): Promise<Array<{ pid: number; key: bigint }>> {
  const r = await c.query<{ pid: number; hi: string; lo: string }>(
    `SELECT l.pid, l.classid::bigint::text AS hi, l.objid::bigint::text AS lo FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.mode = 'ExclusiveLock'
        AND a.state = 'idle in transaction' AND a.application_name = 'sitefleet' AND a.datname = current_database()`,
  );
  return r.rows.map((row) => ({ pid: row.pid, key: lockOf(row) }));
}

/** Whether a sitefleet backend other than `pid` waits for an advisory lock. */
async function othersWait(c: pg.Client, pid: number): Promise<boolean> {
  const r = await c.query(
    `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND NOT l.granted AND l.pid <> $1 AND a.application_name = 'sitefleet'
        AND a.datname = current_database()`,
    [pid],
  );
  return (r.rows[0].n as number) > 0;
}

/** A process's state letter from /proc (T: stopped). */
const procState = (pid: number) => /^\d+ \(.*\) (\S)/s.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))![1]!;

describe('a serve process killed with SIGKILL while its commit holds row locks (PostgreSQL, two processes)', () => {
  it('lets the survivor write the same site at once, keeps every acknowledged write, no id or tag name twice, no half write', async () => {
    const fleet = await testFleetStore();
    const seed = await openServices(loadConfig({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl }, {}));
    await seedSites(seed, SITES);
    await closeServices(seed);
    const token = lastLine((await cli(['keys', 'create', '--name', 'k', ...fleet.args])).stdout);
    const [a, b] = await Promise.all([
      serveProcess([...fleet.args, '--allow-private-sites']),
      serveProcess([...fleet.args, '--allow-private-sites']),
    ]);
    closers.push(
      () => a.stop('SIGKILL'),
      () => b.stop(),
    );
    const db = new pg.Client({ connectionString: fleet.databaseUrl });
    await db.connect();
    closers.push(() => db.end());
    const A = client(a.url, token);
    const B = client(b.url, token);
    const aSites = Array.from({ length: SITES / 2 }, (_, i) => i + 1);
    const bSites = aSites.map((i) => i + SITES / 2);
    // A tag of B's that the survivor's write to A's site adds (made before the load: its own write, acknowledged).
    const mark = (await B('/tags/add', { method: 'POST', json: { name: 'survivor' } })).body.data as TagRecord;

    const la = load('a', A, aSites);
    const lb = load('b', B, bSites);
    await until(
      () => la.acks + lb.acks,
      (n) => n >= 40,
    );

    // Freeze A at a moment its commit is open and holds the lock of one of its sites (only A writes those): seen in
    // pg_locks, A stopped, then seen again (the transaction cannot move while its client is stopped).
    const aKeys = new Map(aSites.map((id) => [recordKey('sites', id), id]));
    const pid = a.child.pid!;
    let frozen: { pid: number; site: number } | null = null;
    let tries = 0;
    for (; !frozen; tries++) {
      if (tries >= 200) throw new Error('never saw A mid-commit holding a site lock');
      const seen = (
        await until(
          () => idleHolders(db),
          (h) => h.some((x) => aKeys.has(x.key)),
        )
      ).find((x) => aKeys.has(x.key))!;
      process.kill(pid, 'SIGSTOP');
      await until(
        () => procState(pid),
        (st) => st === 'T',
      );
      if ((await idleHolders(db)).some((x) => x.pid === seen.pid && x.key === seen.key))
        frozen = { pid: seen.pid, site: aKeys.get(seen.key)! };
      else process.kill(pid, 'SIGCONT');
    }
    expect(la.failures).toEqual([]);

    // The survivor writes the site whose lock the frozen commit holds: it waits for it (pg_locks shows it queued) ...
    let answered = false;
    const survivor = B(`/sites/${frozen.site}/edit`, { method: 'PUT', json: { tags: [mark.id] } }).finally(() => (answered = true));
    await until(
      () => othersWait(db, frozen.pid),
      (w) => w,
    );
    expect(answered).toBe(false);
    // ... and gets it once A is killed: PostgreSQL ends the dead client's transaction and releases its locks.
    await a.stop('SIGKILL');
    const done = await survivor;
    expect(done.status).toBe(200);
    // The survivor's own load goes on: 20 more acknowledged writes after the kill.
    const after = lb.acks;
    await until(
      () => lb.acks,
      (n) => n >= after + 20,
    );
    lb.stopped = true;
    la.stopped = true;
    await Promise.all([la.done, lb.done]);
    expect(lb.failures).toEqual([]);
    // A's workers ended on the kill (each request in flight failed), not before it.
    expect(la.failures.length).toBeGreaterThan(0);
    for (const f of la.failures) expect(f).not.toMatch(/: \d{3} /);

    // The tag names A sent but never heard back about: the survivor creates each; it is there exactly once after.
    const unacked = [...la.tagsSent].filter((n) => !la.tags.has(n));
    for (const name of unacked) {
      const r = await B('/tags/add', { method: 'POST', json: { name } });
      if (r.status === 200) lb.tags.set(name, r.body.data.id as number);
      else expect(r.body.code).toBe('svc_tag_exists');
    }

    // What the database holds.
    const rows = (
      await db.query<{ kind: string; id: number; data: any }>(
        `SELECT kind, id, data FROM sitefleet_rows WHERE kind IN ('tags', 'sites') AND data IS NOT NULL`,
      )
    ).rows;
    const tags = rows.filter((r) => r.kind === 'tags');
    const sites = new Map(rows.filter((r) => r.kind === 'sites').map((r) => [r.id, r.data]));
    // No tag name twice (in any letter case), and every acknowledged create there under the id it was answered with.
    const names = tags.map((t) => String(t.data.name).toLowerCase());
    expect(new Set(names).size).toBe(names.length);
    const byId = new Map(tags.map((t) => [t.id, t.data.name as string]));
    const ackedIds = [...la.tags.values(), ...lb.tags.values(), mark.id];
    expect(new Set(ackedIds).size).toBe(ackedIds.length);
    for (const [name, id] of [...la.tags, ...lb.tags]) expect(byId.get(id), `tag ${name} (id ${id})`).toBe(name);
    // A's unacknowledged creates: each there once, whole (its record as any tag's).
    for (const name of unacked) {
      const found = tags.filter((t) => t.data.name === name);
      expect(found, name).toHaveLength(1);
      expect(found[0]!.data).toMatchObject({ name, color: null, created_at: expect.any(String) });
    }
    // Sites: name and notes come from one edit (all or nothing), at least the last one acknowledged and at most the
    // last one sent; B's are all its own last edit. The survivor's write is on the frozen one's site.
    for (const [side, l, ids] of [
      ['a', la, aSites],
      ['b', lb, bSites],
    ] as const) {
      for (const id of ids) {
        const s = sites.get(id);
        const last = l.acked.get(id) ?? 0;
        if (last === 0 && s.name === `Site ${id}`) {
          expect(s.notes ?? '').toBe('');
          continue;
        }
        expect(s.notes, `site ${id}: name and notes from one edit`).toBe(s.name);
        const k = Number(new RegExp(`^${side}${id}-(\\d+)$`).exec(s.name)?.[1]);
        expect(k, `site ${id}`).toBeGreaterThanOrEqual(last);
        expect(k, `site ${id}`).toBeLessThanOrEqual(l.sent.get(id)!);
        if (side === 'b') expect(k, `site ${id}`).toBe(last);
      }
    }
    expect(sites.get(frozen.site).tag_ids).toEqual([mark.id]);
    process.stdout.write(
      `kill mid-commit: A acknowledged ${la.acks} writes (${unacked.length} tag creates unanswered), B ${lb.acks}; A frozen holding site ${frozen.site} (after ${tries} look(s))\n`,
    );
  }, 180_000);
});
