// The PostgreSQL store engine: PostgreSQL is the durable truth, shared by every sitefleet process that points at it;
// each process keeps the same in-memory working set as the lowdb engine, so reads stay synchronous.
//
// Tables (schema created and migrated by `open`, versioned by sitefleet_meta.format):
//   sitefleet_rows(kind, id, seq, data)  every record and blob: kind is a collection name ('sites', 'tags', ...) or a
//                                        blob kind ('site-data', 'secrets'); data NULL marks a deleted row (kept, so a
//                                        process that missed the delete learns of it); seq is the commit that last
//                                        wrote the row.
//   sitefleet_meta(key, value)           'format' and 'counters' (last id handed out per collection; ids are never
//                                        reused, as in the lowdb engine).
//
// Writes: queued functions run together (group commit) in one PostgreSQL transaction that first takes a transaction
// advisory lock shared by every process, then reads what other processes committed since this one last looked
// (rows with a higher seq), applies it to memory, runs the functions against memory under undo logs, writes the
// changed rows with seq = last seq + 1 and NOTIFYs it. Callers are resolved only after COMMIT. Because commits are
// serial across processes and each starts from the latest committed state, a uniqueness rule checked in a write
// (tag names, client emails) or a read-modify-write (a job claim, a counter) holds across processes exactly as it
// does within one: no duplicate, no lost update. Commit order equals seq order, so "rows with seq > last" never
// misses a commit.
//
// Cold blobs (engine.ts COLD_BLOBS: each site's sync data and secrets, the vulnerability feed's index and buckets) are the
// exception: no process holds them in memory. A catch-up does not even fetch their data (it only drops them from the
// cache); readBlob runs a SELECT for the one asked, through a cache bounded by COLD_CACHE_BYTES, and readBlobs one
// SELECT for up to BLOB_READ_BATCH of them.
//
// Reads: other processes' commits reach memory when their NOTIFY arrives (LISTEN on a second connection), and a
// poll every POLL_MS is the safety net should that connection drop. Between a commit elsewhere and the NOTIFY's
// arrival (about a millisecond on one host; bench/pg.mjs measures it) a read may be that far behind; a write never
// is, since it catches up under the lock first.
import pg from 'pg';
import { ServiceError } from '../core/errors.js';
import { log } from '../log.js';
import { GroupCommit, applyBatch, assertStorable, tableTx, valueRefused, type Commit, type Pending, type Tables } from './group-commit.js';
import {
  BLOB_KINDS,
  COLD_BLOBS,
  COLLECTION_NAMES,
  COLLECTIONS,
  type Blob,
  type CollectionName,
  type Rec,
  type Store,
  type StoreMemory,
  type Tx,
} from './engine.js';
import { ColdCache, tooManyBlobs } from './cold-cache.js';

/** Version of the PostgreSQL schema and of the records in it (records are those of the lowdb data format 2). */
export const PG_FORMAT = 1;
const LOCK_KEY = 0x5f1ee7; // pg_advisory_xact_lock key every sitefleet process uses for commits and migrations
const CHANNEL = 'sitefleet_commits';
const POLL_MS = 1000;

/** Schema steps: PG_MIGRATIONS[n] turns format n into n + 1 (0 is an empty database). */
const PG_MIGRATIONS: Record<number, string> = {
  0: `
    CREATE TABLE IF NOT EXISTS sitefleet_meta (key text PRIMARY KEY, value jsonb NOT NULL);
    CREATE TABLE IF NOT EXISTS sitefleet_rows (
      kind text NOT NULL, id integer NOT NULL, seq bigint NOT NULL, data jsonb,
      PRIMARY KEY (kind, id)
    );
    CREATE INDEX IF NOT EXISTS sitefleet_rows_seq ON sitefleet_rows (seq);`,
};

type Kind = CollectionName | Blob;
interface Row {
  kind: string;
  id: number;
  seq: string;
  data: unknown;
}

/** A redacted form of the URL for messages: never print a password. */
export const redactUrl = (url: string): string => url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

/** Creates or migrates the schema under the shared lock; returns the format it found. Refuses a newer one. */
export async function migrateSchema(client: pg.ClientBase): Promise<{ from: number; to: number }> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    const exists = (await client.query(`SELECT to_regclass('sitefleet_meta') AS t`)).rows[0].t !== null;
    const from = exists ? Number((await client.query(`SELECT value FROM sitefleet_meta WHERE key = 'format'`)).rows[0]?.value ?? 0) : 0;
    if (from > PG_FORMAT) {
      throw new Error(
        `The database holds sitefleet schema format ${from}, written by a newer sitefleet (this one reads ${PG_FORMAT}). Nothing was changed.`,
      );
    }
    for (let f = from; f < PG_FORMAT; f++) await client.query(PG_MIGRATIONS[f]!);
    await client.query(
      `INSERT INTO sitefleet_meta (key, value) VALUES ('format', $1::jsonb) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [JSON.stringify(PG_FORMAT)],
    );
    await client.query(`INSERT INTO sitefleet_meta (key, value) VALUES ('counters', '{}'::jsonb) ON CONFLICT (key) DO NOTHING`);
    await client.query('COMMIT');
    return { from, to: PG_FORMAT };
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  }
}

/**
 * Whether a failed commit was refused for a value it carried rather than for the server's state: PostgreSQL's data
 * exceptions (class 22: a text jsonb cannot hold, a number out of range), integrity violations (23: a constraint) and
 * program limits (54: a value too large), or a value JSON cannot serialise (a BigInt, a cycle, a string too long).
 */
export function refusedForValue(e: unknown): boolean {
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return /^(22|23|54)/.test(code);
  return e instanceof TypeError || e instanceof RangeError;
}

export class PgStore implements Store {
  readonly engine = 'postgres' as const;
  private data = new Map<CollectionName, Map<number, Rec>>();
  private blobs = new Map<Blob, Map<number, unknown>>();
  private versions = new Map<CollectionName, number>();
  private counters: Partial<Record<CollectionName, number>> = {};
  /** The highest commit seq applied to memory. */
  private seq = 0;
  private writes = new GroupCommit<Tx>((take) => this.serial(() => this.commit(take)));
  /** Catch-ups and commits touch memory one at a time: this chain orders them. */
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;
  private writer!: pg.Client;
  private listener: pg.Client | null = null;
  private poll: NodeJS.Timeout | null = null;
  private catchingUp = false;
  /** Times (ms) from a NOTIFY's arrival to its rows being in memory; the bench reads them. */
  readonly notifyLagMs: number[] = [];
  /** Cold blobs read (COLD_BLOBS), bounded by bytes. */
  private coldCache = new ColdCache();
  /**
   * The cold blobs of the commit under way: readers see them as they see its other changes (memory holds those from
   * the moment the write runs), so that no reader finds a feed state that names an index not yet committed.
   */
  private pendingCold: Map<string, unknown> | null = null;

  private constructor(readonly url: string) {}

  static async open(url: string): Promise<PgStore> {
    const s = new PgStore(url);
    await s.init();
    return s;
  }

  private writerBroken = false;

  private newClient(): pg.Client {
    const c = new pg.Client({ connectionString: this.url, application_name: 'sitefleet' });
    c.on('error', (e) => {
      log('error', 'postgres connection error', { err: e.message });
      if (c === this.writer) this.writerBroken = true;
    });
    c.on('end', () => {
      if (c === this.writer && !this.closed) this.writerBroken = true;
    });
    return c;
  }

  private async init(): Promise<void> {
    this.writer = this.newClient();
    await this.writer.connect().catch((e: Error) => {
      throw new Error(`Cannot reach the database at ${redactUrl(this.url)}: ${e.message}`);
    });
    try {
      await migrateSchema(this.writer);
      for (const col of COLLECTION_NAMES) {
        this.data.set(col, new Map());
        this.bump(col);
      }
      for (const kind of BLOB_KINDS) this.blobs.set(kind, new Map());
      await this.listen();
      await this.catchUp(this.writer);
    } catch (e) {
      await this.writer.end().catch(() => {});
      await this.listener?.end().catch(() => {});
      throw e;
    }
    this.poll = setInterval(() => {
      void this.backgroundCatchUp();
    }, POLL_MS);
    this.poll.unref();
  }

  private async listen(): Promise<void> {
    const l = this.newClient();
    try {
      await l.connect();
    } catch (e) {
      await l.end().catch(() => {});
      throw e;
    }
    l.on('notification', (n) => {
      if (n.channel !== CHANNEL || Number(n.payload) <= this.seq) return;
      const t = performance.now();
      void this.backgroundCatchUp().then(() => {
        if (this.notifyLagMs.length < 10_000) this.notifyLagMs.push(performance.now() - t);
      });
    });
    const lost = () => {
      // The poll keeps this process current meanwhile; try to listen again shortly.
      if (this.listener !== l) return;
      this.listener = null;
      this.relisten();
    };
    l.on('error', lost);
    l.on('end', lost);
    this.listener = l;
    await l.query(`LISTEN ${CHANNEL}`);
  }

  /** Listens again after a lost connection, every 500 ms until it works (the poll covers the gap). */
  private relisten(): void {
    if (this.closed) return;
    setTimeout(() => {
      if (this.closed || this.listener) return;
      this.listen().catch(() => this.relisten());
    }, 500).unref();
  }

  /** Runs `fn` after every catch-up and commit queued before it. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.chain.then(fn, fn);
    this.chain = p.catch(() => {});
    return p;
  }

  private backgroundCatchUp(): Promise<void> {
    // A commit under way catches up first anyway (under the lock): no need to queue another round trip before it.
    if (this.closed || this.catchingUp || this.writes.busy) return Promise.resolve();
    this.catchingUp = true;
    return this.serial(() => this.catchUp(this.writer))
      .catch((e: Error) => log('warn', 'postgres catch-up failed', { err: e.message }))
      .finally(() => {
        this.catchingUp = false;
      });
  }

  /** The rows committed after `this.seq` (by any process) and the id counters: one statement (seq is our own integer). */
  private catchUpSql(): string {
    // Cold blobs' data stays in the database: their rows come without it (they only leave the cache).
    const cold = [...COLD_BLOBS].map((k) => `'${k}'`).join(', ');
    return `SELECT kind, id, seq, CASE WHEN kind IN (${cold}) THEN NULL ELSE data END AS data
            FROM sitefleet_rows WHERE seq > ${Math.trunc(this.seq)}
            UNION ALL SELECT '#counters', 0, 0, value FROM sitefleet_meta WHERE key = 'counters'
            ORDER BY seq`;
  }

  /** Applies every row committed after `this.seq` (by any process), and the id counters, to memory: one round trip. */
  private async catchUp(client: pg.ClientBase): Promise<void> {
    this.applyCatchUp((await client.query<Row>(this.catchUpSql())).rows);
  }

  private applyCatchUp(rows: Row[]): void {
    const counters = rows.find((r) => r.kind === '#counters')?.data as Record<string, number> | undefined;
    this.apply(rows.filter((r) => r.kind !== '#counters'));
    for (const col of COLLECTION_NAMES) this.counters[col] = Math.max(this.counters[col] ?? 0, counters?.[col] ?? 0);
  }

  private apply(rows: Row[]): void {
    const touched = new Set<CollectionName>();
    for (const r of rows) {
      const seq = Number(r.seq);
      if (seq > this.seq) this.seq = seq;
      if (r.kind in COLLECTIONS) {
        const col = r.kind as CollectionName;
        const map = this.data.get(col)!;
        if (r.data === null) map.delete(r.id);
        else map.set(r.id, r.data as Rec);
        if (r.id > (this.counters[col] ?? 0)) this.counters[col] = r.id;
        touched.add(col);
      } else if (COLD_BLOBS.has(r.kind as Blob)) {
        this.coldCache.invalidate(`${r.kind}/${r.id}`);
      } else if ((BLOB_KINDS as string[]).includes(r.kind)) {
        const map = this.blobs.get(r.kind as Blob)!;
        if (r.data === null) map.delete(r.id);
        else map.set(r.id, r.data);
      }
    }
    for (const col of touched) this.bump(col);
  }

  private bump(col: CollectionName): void {
    this.versions.set(col, (this.versions.get(col) ?? 0) + 1);
    this.changeCount++;
  }
  private changeCount = 0;

  changes(): number {
    return this.changeCount;
  }

  version(col: CollectionName): number {
    return this.versions.get(col) ?? 0;
  }

  get<T extends Rec>(col: CollectionName, id: number): T | undefined {
    return this.data.get(col)!.get(id) as T | undefined;
  }

  all<T extends Rec>(col: CollectionName): IterableIterator<T> {
    return this.data.get(col)!.values() as IterableIterator<T>;
  }

  count(col: CollectionName): number {
    return this.data.get(col)!.size;
  }

  getBlob<T>(kind: Blob, id: number): T | null {
    if (COLD_BLOBS.has(kind)) throw new Error(`${kind} blobs are read with readBlob`);
    return (this.blobs.get(kind)!.get(id) as T | undefined) ?? null;
  }

  /** A cold blob by one SELECT (through the bounded cache); any other from memory. */
  readBlob<T>(kind: Blob, id: number, opts: { cache?: boolean } = {}): Promise<T | null> {
    if (!COLD_BLOBS.has(kind)) return Promise.resolve(this.getBlob<T>(kind, id));
    if (this.closed) return Promise.reject(new Error('store is closed'));
    const key = `${kind}/${id}`;
    if (this.pendingCold?.has(key)) return Promise.resolve((this.pendingCold.get(key) ?? null) as T | null);
    return this.coldCache.read<T>(
      key,
      async () => {
        let text: string | null;
        try {
          // The listener's connection, as sync() does: the writer's holds commits (and the shared lock) in between.
          const c = this.listener ?? this.writer;
          const r = await c.query<{ t: string | null }>('SELECT data::text AS t FROM sitefleet_rows WHERE kind = $1 AND id = $2', [
            kind,
            id,
          ]);
          text = r.rows[0]?.t ?? null;
        } catch (e) {
          log('error', 'postgres blob read failed', { err: String((e as Error).message ?? e), kind, id });
          throw new ServiceError('svc_store_unavailable', 'The database could not be reached; try again later.', 503);
        }
        return text === null ? { value: null, bytes: 0 } : { value: JSON.parse(text) as T, bytes: text.length };
      },
      opts.cache !== false,
    );
  }

  /** Blobs by id: cold ones by one SELECT (no cache), any other from memory. */
  async readBlobs<T>(kind: Blob, ids: readonly number[]): Promise<Map<number, T | null>> {
    tooManyBlobs(ids);
    const out = new Map<number, T | null>();
    if (!COLD_BLOBS.has(kind)) {
      for (const id of ids) out.set(id, this.getBlob<T>(kind, id));
      return out;
    }
    if (this.closed) throw new Error('store is closed');
    const ask: number[] = [];
    for (const id of ids) {
      const key = `${kind}/${id}`;
      if (this.pendingCold?.has(key)) out.set(id, (this.pendingCold.get(key) ?? null) as T | null);
      else {
        out.set(id, null);
        ask.push(id);
      }
    }
    if (!ask.length) return out;
    try {
      const c = this.listener ?? this.writer;
      const r = await c.query<{ id: number; data: T | null }>(
        'SELECT id, data FROM sitefleet_rows WHERE kind = $1 AND id = ANY($2::int[])',
        [kind, ask],
      );
      for (const row of r.rows) out.set(row.id, row.data ?? null);
    } catch (e) {
      log('error', 'postgres blob read failed', { err: String((e as Error).message ?? e), kind, ids: ask.length });
      throw new ServiceError('svc_store_unavailable', 'The database could not be reached; try again later.', 503);
    }
    return out;
  }

  memory(): StoreMemory {
    const blobs = Object.fromEntries(BLOB_KINDS.map((k) => [k, this.blobs.get(k)!.size])) as Record<Blob, number>;
    return { blobs, cold_cache: this.coldCache.stats() };
  }

  private checking: Promise<void> | null = null;
  private nextCheck: Promise<void> | null = null;

  /**
   * One `SELECT max(seq)` (an index lookup) tells whether another process committed something this one has not
   * applied yet; if so, catch up. Calls that arrive while a check runs share the next one (a check that started
   * before a call cannot vouch for it), so there is at most one check in flight and one waiting, whatever the rate.
   */
  sync(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (!this.checking) {
      this.checking = this.check().finally(() => {
        this.checking = null;
      });
      return this.checking;
    }
    this.nextCheck ??= this.checking
      .catch(() => {})
      .then(() => {
        this.nextCheck = null;
        return this.sync();
      });
    return this.nextCheck;
  }

  private async check(): Promise<void> {
    try {
      const c = this.listener ?? this.writer;
      const head = Number((await c.query('SELECT coalesce(max(seq), 0) AS s FROM sitefleet_rows')).rows[0].s);
      while (this.seq < head && !this.closed) await this.serial(() => this.catchUp(this.writer));
    } catch (e) {
      log('error', 'postgres sync failed', { err: String((e as Error).message ?? e) });
      throw new ServiceError('svc_store_unavailable', 'The database could not be reached; try again later.', 503);
    }
  }

  /** The last commit seq this process has applied (tests and the bench compare processes by it). */
  get appliedSeq(): number {
    return this.seq;
  }

  write<R>(fn: (tx: Tx) => R): Promise<R> {
    return this.writes.write(fn);
  }

  /**
   * Commits the writes queued by the time this process holds the shared lock: writes that arrive while another
   * process holds it join this commit, so that waiting for the lock makes commits bigger rather than more.
   */
  private async commit(take: () => Pending<Tx>[]): ReturnType<Commit<Tx>> {
    let batch: Pending<Tx>[] = [];
    const undoAll: Array<() => void> = [];
    const c = this.writer;
    let began = false;
    /** Set once the batch's rows are being serialised and written: a failure from there on may be a value's fault. */
    let writing = false;
    try {
      // Two round trips a commit, to keep the shared lock short: (begin, lock, catch up) and (write, notify, commit).
      // Both are simple-protocol multi-statement queries, so values are inlined: integers we own, and JSON through
      // escapeLiteral. An error in any statement skips the rest, COMMIT included.
      began = true;
      const opened = (await c.query(
        `BEGIN; SELECT pg_advisory_xact_lock(${LOCK_KEY}); ${this.catchUpSql()}`,
      )) as unknown as pg.QueryResult<Row>[];
      this.applyCatchUp(opened[2]!.rows);
      batch = take();
      const dirty = new Map<string, { kind: Kind; id: number }>();
      const cold = new Map<string, unknown>();
      const countersBefore = { ...this.counters };
      const outcomes = applyBatch(batch, (undo) => this.tx(undo, dirty, cold), undoAll);
      this.pendingCold = cold;
      // A cold blob put and then undone (its write threw) is not written at all.
      for (const [k, { kind }] of dirty) if (COLD_BLOBS.has(kind as Blob) && !cold.has(k)) dirty.delete(k);
      if (dirty.size) {
        const seq = this.seq + 1;
        const rows = [...dirty.entries()].map(([k, { kind, id }]) => ({
          kind,
          id,
          data:
            kind in COLLECTIONS
              ? (this.data.get(kind as CollectionName)!.get(id) ?? null)
              : COLD_BLOBS.has(kind as Blob)
                ? (cold.get(k) ?? null)
                : (this.blobs.get(kind as Blob)!.get(id) ?? null),
        }));
        const countersChanged = COLLECTION_NAMES.some((col) => this.counters[col] !== countersBefore[col]);
        const lit = (v: unknown) => c.escapeLiteral(JSON.stringify(v));
        writing = true;
        await c.query(
          `INSERT INTO sitefleet_rows (kind, id, seq, data)
             SELECT x.kind, x.id, ${seq}, x.data FROM jsonb_to_recordset(${lit(rows)}::jsonb) AS x(kind text, id integer, data jsonb)
           ON CONFLICT (kind, id) DO UPDATE SET seq = excluded.seq, data = excluded.data;
           ${countersChanged ? `UPDATE sitefleet_meta SET value = ${lit(this.counters)}::jsonb WHERE key = 'counters';` : ''}
           SELECT pg_notify('${CHANNEL}', '${seq}');
           COMMIT`,
        );
        began = false;
        this.seq = seq;
        for (const k of cold.keys()) this.coldCache.invalidate(k);
      } else {
        await c.query('COMMIT');
        began = false;
      }
      return { batch, outcomes };
    } catch (e) {
      // Nothing of this batch was committed: memory goes back to what it was, and every caller is told.
      if (began) await c.query('ROLLBACK').catch(() => {});
      for (const u of undoAll.reverse()) u();
      this.pendingCold = null;
      const refused = writing && !this.writerBroken && refusedForValue(e);
      log(refused ? 'warn' : 'error', 'store commit failed', {
        err: String((e as Error).message ?? e),
        writes: batch.length,
        ...(refused && batch.length > 1 ? { then: 'committing the writes in smaller groups to find the one that holds the value' } : {}),
      });
      const error = refused
        ? valueRefused('the database refused a value in it (the server log says which)')
        : new ServiceError(
            'svc_store_unavailable',
            'The change was not saved because the database could not be reached or refused it; nothing was changed. Try again later.',
            503,
          );
      if (this.writerBroken) await this.reconnect();
      // Writes not yet taken into this batch (the lock or catch-up failed) are failed with it: nothing was changed.
      if (!batch.length) batch = take();
      return { batch, outcomes: batch.map(() => ({ ok: false as const, error })), refused };
    } finally {
      this.pendingCold = null;
    }
  }

  private async reconnect(): Promise<void> {
    await this.writer.end().catch(() => {});
    this.writer = this.newClient();
    this.writerBroken = false;
    await this.writer.connect().catch((e: Error) => log('error', 'postgres reconnect failed', { err: e.message }));
  }

  private tx(undo: Array<() => void>, dirty: Map<string, { kind: Kind; id: number }>, cold: Map<string, unknown>): Tx {
    const mark = (kind: Kind, id: number) => dirty.set(`${kind}/${id}`, { kind, id });
    const tables: Tables = {
      data: this.data,
      counters: this.counters,
      bump: (col) => this.bump(col),
      get: (col, id) => this.get(col, id),
      all: (col) => this.all(col),
    };
    return {
      ...tableTx(tables, undo, mark),
      putBlob: (kind, id, value) => {
        if (value !== null) assertStorable(`the ${kind} of ${id}`, value);
        if (COLD_BLOBS.has(kind)) {
          // Only in this commit's rows, not in memory.
          const key = `${kind}/${id}`;
          const had = cold.has(key);
          const prev = cold.get(key);
          cold.set(key, value);
          undo.push(() => {
            if (had) cold.set(key, prev);
            else cold.delete(key);
          });
          mark(kind, id);
          return;
        }
        const map = this.blobs.get(kind)!;
        const had = map.has(id);
        const prev = map.get(id);
        if (value === null) map.delete(id);
        else map.set(id, value);
        undo.push(() => {
          if (had) map.set(id, prev);
          else map.delete(id);
        });
        mark(kind, id);
      },
    };
  }

  /** Waits for queued writes, then refuses new ones and closes both connections. */
  async close(): Promise<void> {
    await this.writes.close();
    this.closed = true;
    if (this.poll) clearInterval(this.poll);
    await this.chain;
    await Promise.all([this.writer.end().catch(() => {}), this.listener?.end().catch(() => {})]);
  }
}
