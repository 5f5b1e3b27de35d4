// The PostgreSQL store engine: PostgreSQL is the durable truth, shared by every sitefleet process that points at it;
// each process keeps the same in-memory working set as the lowdb engine, so reads stay synchronous.
//
// Tables and functions (schema created and migrated by `open`, versioned by sitefleet_meta.format):
//   sitefleet_rows(kind, id, seq, data, xid)  every record and blob: kind is a collection name ('sites', 'tags', ...)
//                                        or a blob kind ('site-data', 'secrets'); data NULL marks a deleted row (kept,
//                                        so a process that missed the delete learns of it and an id is never reused);
//                                        seq is the row's version (from sitefleet_seq, one value per commit); xid is
//                                        the transaction that last wrote the row (set by a trigger, whoever writes).
//   sitefleet_meta(key, value)           'format' and 'counters' (a floor for ids, from an import or restore; ids
//                                        otherwise follow the highest id of any row, deleted ones included).
//   sitefleet_lock(keys, exclusive)      takes transaction advisory locks in the order given.
//
// Writes lock what they touch, not everything. Queued functions run together (group commit), first as a dry run
// against memory, undone in the same tick (so no reader sees it), that records what they read: each record or blob
// looked up (get, getBlob: present or absent) and each collection enumerated or counted (all, count, version). The
// commit transaction then, in one round trip, takes an advisory lock for each of those (exclusive), for each record
// written (exclusive) and each collection written (shared; exclusive if written without reading what it writes, as
// an insert or an append does: a collection held exclusive covers its records; see lockSet), all in
// one sorted order so that two commits never deadlock, and reads what other processes committed since memory last
// looked (below). Memory takes that in; it is now current for everything the locks cover, and nobody can change that
// until they are released. The functions run for real on it; if they touched only what the locks cover (the usual
// case) the rows are written with a new seq, NOTIFYed and committed. If on the newer records they read or wrote
// something else (the next audit entry after a newer head, another id), the run is undone, the further locks are
// tried without waiting, and it runs again; should a lock be taken, the transaction rolls back and starts over. After
// OPTIMISTIC_TRIES such starts, or when a batch would need more than MAX_LOCKS locks, it commits the serial way: one
// lock every commit takes shared, taken exclusive, then catch up, then run (what every commit did before format 2).
// So a uniqueness rule checked in a write (it enumerates the collection: tag names, client emails) or a
// read-modify-write (a job claim, a counter, the audit chain's head) holds across processes exactly as within one:
// no duplicate, no lost update. Two writes that share nothing (two sites' notes) commit side by side. Readers in the
// process see a batch's changes only from its final run to its COMMIT (one round trip), as before.
//
// Claims skip what another process holds (WriteOptions.skipLocked: job claims, the sync schedule's slot): such a
// write commits alone and takes its record and collection locks with pg_try_advisory_xact_lock instead of waiting;
// should one be held elsewhere, it rolls back at once and resolves SKIPPED (the caller moves on to the next job).
// That is SELECT ... FOR UPDATE SKIP LOCKED on the advisory locks that are our row locks (the rows themselves are
// only ever written under them). Not a PostgreSQL job library (pg-boss, graphile-worker): a job here is a record of
// this store, read by the same abilities, claimed in the same transaction that writes its state, and kept alike by
// the lowdb engine; a library would keep a second queue in its own tables, to be kept in step with ours.
//
// Catching up without a global commit order: seqs are handed out before commit and transactions commit in any order,
// so "rows with seq > the last seen" could miss a row committed late with a lower seq. Instead each read returns the
// rows written by transactions at or above a horizon, plus the horizon for next time: the xmin of the same statement's
// snapshot (every transaction below it had ended, and was seen, when the statement ran). A row whose seq memory
// already holds is skipped, so re-reading the window costs a little and changes nothing. The window grows while some
// transaction on the server stays open (any database's): a long one costs reads, never a missed commit.
//
// Cold blobs (engine.ts COLD_BLOBS: each site's sync data and secrets, the vulnerability feed's index and buckets) are the
// exception: no process holds them in memory. A catch-up does not even fetch their data (it only drops them from the
// cache); readBlob runs a SELECT for the one asked, through a cache bounded by COLD_CACHE_BYTES, and readBlobs one
// SELECT for up to BLOB_READ_BATCH of them.
//
// Cold collections (engine.ts COLD_COLLECTIONS: the audit log, the monitors' history) are not held either: memory keeps
// which ids are there (8 bytes an id, so `count` stays synchronous), a catch-up brings only that, a write's records of
// theirs go only into its rows (as cold blobs do), and readRecords / countRecords run a SELECT with the field tests in
// SQL (whereSql).
//
// Reads: other processes' commits reach memory when their NOTIFY arrives (LISTEN on a second connection), and a
// poll every POLL_MS is the safety net should that connection drop. Between a commit elsewhere and the NOTIFY's
// arrival (about a millisecond on one host; bench/pg.mjs measures it) a read may be that far behind; a write never
// is, since its commit catches up under its locks before its functions run for real. sync() reads the window and
// catches up if any row in it differs from memory. All processes on one database must run format 4 (PG_FORMAT): stop
// the old ones before upgrading (an older process still running would write rows without their unique keys).
import pg from 'pg';
import { redactUrl } from './database-url.js';
import { ServiceError } from '../core/errors.js';
import { log } from '../log.js';
import {
  GroupCommit,
  applyBatch,
  assertStorable,
  tableTx,
  valueRefused,
  type Commit,
  type Outcome,
  type Pending,
  type Tables,
} from './group-commit.js';
import {
  BLOB_KINDS,
  COLD_BLOBS,
  COLD_COLLECTIONS,
  COLLECTION_NAMES,
  COLLECTIONS,
  checkQuery,
  coldRefused,
  type Blob,
  type CollectionName,
  type FieldTest,
  type Rec,
  type RecordQuery,
  SKIPPED,
  type Skipped,
  type Store,
  type StoreMemory,
  type Tx,
  UNIQUE_KEYS,
  type WriteOptions,
} from './engine.js';
import { ColdCache, tooManyBlobs } from './cold-cache.js';
import { ChangeLog } from './change-log.js';
import { IdNumbers } from './id-numbers.js';
import { shareParts } from './shared-parts.js';

/** Version of the PostgreSQL schema and of the records in it (records are those of the lowdb data format 3). */
export const PG_FORMAT = 4;
/** Advisory lock key every commit takes shared and a serial commit, a migration, an import or a restore exclusive. */
const LOCK_KEY = 0x5f1ee7;
const CHANNEL = 'sitefleet_commits';
const POLL_MS = 1000;
/** Connections a process reads on beside its writer and its listener (opened when needed, closed after 10 s idle). */
export const READERS = 4;
/** Conflicting rounds a batch may run optimistically before it commits the serial way. */
export const OPTIMISTIC_TRIES = 2;
/** Locks one commit takes at most (PostgreSQL's lock table is shared and finite); a bigger batch commits serially. */
export const MAX_LOCKS = 256;
/** Set in tests: every batch runs once more and must do the same (PgStore.replay). */
const CHECK_REPLAY = process.env.SITEFLEET_CHECK_REPLAY === '1';
/** What the callers of a batch that failed the replay check are told (it names the difference). */
export class ReplayMismatch extends Error {}
/** Runs again within one transaction (after a conflict, under the locks held) before it rolls back and starts over. */
const MAX_STEPS = 4;

/**
 * Tag membership moves from the tags' `site_ids` to the sites' `tag_ids` (ascending), as lowdb data format 3 does
 * (store/migrations.ts): format 4 here, and a restore of a data-format-2 backup. Ids of sites that no longer exist are
 * dropped with the tags' lists (every tag read passed them over); a list that is not one of integers is read as empty.
 * The rows get a new seq (one for all: one commit).
 */
export const TAGS_ONTO_SITES_SQL = `
    SELECT nextval('sitefleet_seq');
    WITH m AS (
      SELECT (e::text)::integer AS site, jsonb_agg(DISTINCT t.id ORDER BY t.id) AS tag_ids
        FROM sitefleet_rows t,
             jsonb_array_elements(CASE WHEN jsonb_typeof(t.data->'site_ids') = 'array' THEN t.data->'site_ids' ELSE '[]'::jsonb END) AS e
       WHERE t.kind = 'tags' AND t.data IS NOT NULL AND jsonb_typeof(e) = 'number' AND e::text ~ '^[0-9]{1,9}$'
       GROUP BY 1)
    UPDATE sitefleet_rows s SET data = jsonb_set(s.data, '{tag_ids}', m.tag_ids), seq = currval('sitefleet_seq')
      FROM m WHERE s.kind = 'sites' AND s.id = m.site AND s.data IS NOT NULL;
    UPDATE sitefleet_rows SET data = data - 'site_ids', seq = currval('sitefleet_seq') WHERE kind = 'tags' AND data ? 'site_ids';`;

/** Schema steps: PG_MIGRATIONS[n] turns format n into n + 1 (0 is an empty database). */
const PG_MIGRATIONS: Record<number, string> = {
  0: `
    CREATE TABLE IF NOT EXISTS sitefleet_meta (key text PRIMARY KEY, value jsonb NOT NULL);
    CREATE TABLE IF NOT EXISTS sitefleet_rows (
      kind text NOT NULL, id integer NOT NULL, seq bigint NOT NULL, data jsonb,
      PRIMARY KEY (kind, id)
    );
    CREATE INDEX IF NOT EXISTS sitefleet_rows_seq ON sitefleet_rows (seq);`,
  // Format 2: commits lock what they touch. Rows carry the writing transaction (for catching up by snapshot horizon),
  // seqs come from a sequence, and the lock function takes many advisory locks in one call, in the order given.
  1: `
    ALTER TABLE sitefleet_rows ADD COLUMN IF NOT EXISTS xid xid8 NOT NULL DEFAULT '0';
    CREATE OR REPLACE FUNCTION sitefleet_rows_xid() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN NEW.xid := pg_current_xact_id(); RETURN NEW; END $$;
    DROP TRIGGER IF EXISTS sitefleet_rows_xid ON sitefleet_rows;
    CREATE TRIGGER sitefleet_rows_xid BEFORE INSERT OR UPDATE ON sitefleet_rows FOR EACH ROW EXECUTE FUNCTION sitefleet_rows_xid();
    CREATE INDEX IF NOT EXISTS sitefleet_rows_xid ON sitefleet_rows (xid);
    DROP INDEX IF EXISTS sitefleet_rows_seq;
    CREATE SEQUENCE IF NOT EXISTS sitefleet_seq;
    SELECT setval('sitefleet_seq', (SELECT coalesce(max(seq), 0) + 1 FROM sitefleet_rows), false);
    CREATE OR REPLACE FUNCTION sitefleet_lock(keys bigint[], exclusive boolean[]) RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
          IF exclusive[i] THEN PERFORM pg_advisory_xact_lock(keys[i]); ELSE PERFORM pg_advisory_xact_lock_shared(keys[i]); END IF;
        END LOOP;
      END $$;`,
  // Format 3: inserts take ids from a sequence per collection (sitefleet_id_<collection>, made and raised by
  // syncIdSequences) instead of locking the collection, and unique keys (engine.ts UNIQUE_KEYS) are a constraint
  // (the key column is filled by fillUniqueKeys, then indexed).
  2: `ALTER TABLE sitefleet_rows ADD COLUMN IF NOT EXISTS ukey text;`,
  // Format 4: tag membership on the sites (TAGS_ONTO_SITES_SQL).
  3: TAGS_ONTO_SITES_SQL,
};
/** The index that keeps UNIQUE_KEYS unique; a commit that breaks it runs again on the newer records. */
const UKEY_INDEX = 'sitefleet_rows_ukey';

const idSeq = (col: CollectionName): string => {
  if (!/^[a-z_]+$/.test(col)) throw new Error(`bad collection name ${col}`);
  return `sitefleet_id_${col}`;
};

/**
 * Makes each collection's id sequence and raises it above every id in use: its rows' (deleted ones included) and the
 * counters' floors (an import or a restore). Run with LOCK_KEY held exclusive (no commit is drawing ids meanwhile):
 * by migrateSchema at every open, and by an import or restore after writing rows. A sequence only ever goes up.
 */
export async function syncIdSequences(client: pg.ClientBase): Promise<void> {
  const floors = ((await client.query(`SELECT value FROM sitefleet_meta WHERE key = 'counters'`)).rows[0]?.value ?? {}) as Record<
    string,
    number
  >;
  const sql = COLLECTION_NAMES.map((col) => {
    const seq = idSeq(col);
    const floor = Math.max(0, Math.trunc(Number(floors[col] ?? 0)) || 0);
    return `CREATE SEQUENCE IF NOT EXISTS ${seq};
      SELECT CASE WHEN v > 0 THEN setval('${seq}', v, true) ELSE setval('${seq}', 1, false) END
        FROM (SELECT greatest((SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM ${seq}),
          (SELECT coalesce(max(id), 0) FROM sitefleet_rows WHERE kind = '${col}'), ${floor}) AS v) AS t;`;
  }).join('\n');
  await client.query(sql);
}

/**
 * Fills the unique-key column of the rows that lack it (after a migration, an import or a restore), then makes sure
 * the unique index exists. Should old data hold two records with one key, the lowest id keeps it and the others are
 * left without (a warning says which): opening never fails for it, and the services' own check still applies.
 */
export async function fillUniqueKeys(client: pg.ClientBase): Promise<void> {
  const kinds = Object.keys(UNIQUE_KEYS) as CollectionName[];
  const r = await client.query<{ kind: CollectionName; id: number; data: Rec; ukey: string | null }>(
    `SELECT kind, id, data, ukey FROM sitefleet_rows WHERE kind = ANY($1) AND data IS NOT NULL ORDER BY kind, ukey IS NULL, id`,
    [kinds],
  );
  const taken = new Set<string>();
  const set: Array<{ kind: string; id: number; ukey: string }> = [];
  for (const row of r.rows) {
    const key = row.ukey ?? UNIQUE_KEYS[row.kind]!.key(row.data);
    if (key === null) continue;
    if (taken.has(`${row.kind}/${key}`)) {
      if (row.ukey === null)
        log('warn', 'two records share a unique key; the later one is left unconstrained', { kind: row.kind, id: row.id });
      continue;
    }
    taken.add(`${row.kind}/${key}`);
    if (row.ukey === null) set.push({ kind: row.kind, id: row.id, ukey: key });
  }
  if (set.length) {
    await client.query(
      `UPDATE sitefleet_rows r SET ukey = x.ukey FROM jsonb_to_recordset($1::jsonb) AS x(kind text, id integer, ukey text)
        WHERE r.kind = x.kind AND r.id = x.id`,
      [JSON.stringify(set)],
    );
  }
  await client.query(`CREATE UNIQUE INDEX IF NOT EXISTS ${UKEY_INDEX} ON sitefleet_rows (kind, ukey) WHERE ukey IS NOT NULL`);
}

/** A 31-bit FNV-1a hash of a kind, never 0: the high half of its lock keys (LOCK_KEY's high half is 0). */
function kindHash(kind: string): bigint {
  let h = 0x811c9dc5;
  for (let i = 0; i < kind.length; i++) h = Math.imul(h ^ kind.charCodeAt(i), 0x01000193);
  return BigInt(((h >>> 0) % 0x7ffffffe) + 1);
}
/** The advisory lock key of one record or blob, and of a collection as a whole (exported for the tests). */
export const recordKey = (kind: string, id: number): bigint => (kindHash(kind) << 32n) | BigInt(id >>> 0);
export const collectionKey = (kind: string): bigint => kindHash(`#${kind}`) << 32n;

/** Sorted lock keys and modes as the two array literals sitefleet_lock and unnest take (our own integers: inlined). */
const keysLiteral = (keys: Array<[bigint, boolean]>): string =>
  `'{${keys.map(([k]) => k).join(',')}}'::bigint[], '{${keys.map(([, x]) => (x ? 't' : 'f')).join(',')}}'::boolean[]`;

/** What a batch's functions read: records and blobs looked up (present or absent), collections enumerated. */
interface ReadSet {
  keys: Map<string, { kind: Kind; id: number }>;
  cols: Set<CollectionName>;
}

/** One run of a batch's functions: what they read, what they wrote, and what each returned. */
interface Ran {
  reads: ReadSet;
  dirty: Map<string, { kind: Kind; id: number }>;
  /** Cold blobs and cold collections' records put (COLD_BLOBS, COLD_COLLECTIONS: only in the commit's rows, never in memory; null: deleted). */
  cold: Map<string, unknown>;
  /** Records inserted (keys): their ids come from the collection's sequence, so no other commit can touch them. */
  fresh: Set<string>;
  /** Inserts per collection that found no reserved id (a dry run's, or more than the dry run made): to reserve. */
  short: Map<CollectionName, number>;
  /** Reserved ids of each collection this run has taken (the next insert takes the next). */
  taken: Map<CollectionName, number>;
  outcomes: Outcome[];
}

/**
 * The locks a run needs (key: exclusive?): LOCK_KEY shared; each record or blob read or written, exclusive; each
 * collection written, shared (so that it waits for, and is waited for by, whoever enumerates it). A collection
 * enumerated, or written without reading what it writes (a put whose id comes from another record), exclusive: then
 * it covers its records (whoever writes one holds the collection shared), so a run on newer records that picks another
 * id needs no further lock. A record inserted takes no lock of its own (format 3): its id came from the collection's
 * sequence, so it is nobody else's; the collection is held shared as for any write. Reads done in `tx.unlocked` are
 * not recorded at all (a UNIQUE_KEYS constraint backs them).
 */
function lockSet(ran: Ran): Map<bigint, boolean> {
  const whole = new Set<string>(ran.reads.cols);
  for (const [key, { kind }] of ran.dirty) if (kind in COLLECTIONS && !ran.reads.keys.has(key) && !ran.fresh.has(key)) whole.add(kind);
  const keys = new Map<bigint, boolean>([[BigInt(LOCK_KEY), false]]);
  for (const col of whole) keys.set(collectionKey(col), true);
  for (const [key, { kind, id }] of [...ran.reads.keys, ...ran.dirty]) {
    if (!whole.has(kind) && !ran.fresh.has(key)) keys.set(recordKey(kind, id), true);
  }
  for (const { kind } of ran.dirty.values()) if (!keys.has(collectionKey(kind))) keys.set(collectionKey(kind), false);
  return keys;
}

/**
 * The statement that tries the locks given without waiting (each, even after one failed: those taken are held to the
 * transaction's end), answering `ok`: whether it holds them all.
 */
function tryLocksSql(keys: Array<[bigint, boolean]>): string {
  if (!keys.length) return 'SELECT true AS ok';
  return `SELECT bool_and(CASE WHEN t.x THEN pg_try_advisory_xact_lock(t.k) ELSE pg_try_advisory_xact_lock_shared(t.k) END) AS ok
            FROM unnest(${keysLiteral(keys)}) AS t(k, x)`;
}

/**
 * `text` as an SQL string literal, exactly as pg's `escapeLiteral` makes it (quotes doubled; when it holds a backslash,
 * every backslash doubled and the E'' form), by two native replaces instead of its loop over each character. A commit's
 * rows go to the server as one such literal: at 100,000 sites that loop was about 3 % of a busy serve's CPU, 15 times
 * what this takes.
 */
export function sqlLiteral(text: string): string {
  const quoted = text.replaceAll("'", "''");
  return text.includes('\\') ? ` E'${quoted.replaceAll('\\', '\\\\')}'` : `'${quoted}'`;
}

/** The statement that reserves `n` ids of each collection short of them (one row per id; none when nothing is short). */
function reserveSql(short: Map<CollectionName, number>): string {
  const parts = [...short].map(
    ([col, n]) => `SELECT '${col}' AS col, nextval('${idSeq(col)}') AS id FROM generate_series(1, ${Math.trunc(n)})`,
  );
  return parts.length ? parts.join(' UNION ALL ') : 'SELECT NULL::text AS col, NULL::bigint AS id WHERE false';
}

/** A commit refused by the unique-key index: the collection and the key, from the server's message. */
function uniqueBroken(e: unknown): { kind: CollectionName | null; key: string } | null {
  const err = e as { code?: string; constraint?: string; detail?: string };
  if (err.code !== '23505' || err.constraint !== UKEY_INDEX) return null;
  const m = /^Key \(kind, ukey\)=\(([a-z_]+), (.*)\) already exists\.$/s.exec(err.detail ?? '');
  return { kind: m && m[1]! in UNIQUE_KEYS ? (m[1] as CollectionName) : null, key: m?.[2] ?? '' };
}

type Kind = CollectionName | Blob;
/** A kind whose rows no process holds in memory: a cold blob or a cold collection's record. */
const isCold = (kind: string): boolean => COLD_BLOBS.has(kind as Blob) || COLD_COLLECTIONS.has(kind as CollectionName);
interface Row {
  kind: string;
  id: number;
  seq: string;
  data: unknown;
}

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
    if (from < 3) await fillUniqueKeys(client);
    await client.query(
      `INSERT INTO sitefleet_meta (key, value) VALUES ('format', $1::jsonb) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [JSON.stringify(PG_FORMAT)],
    );
    await client.query(`INSERT INTO sitefleet_meta (key, value) VALUES ('counters', '{}'::jsonb) ON CONFLICT (key) DO NOTHING`);
    await syncIdSequences(client);
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
  /** Each collection's version, and which records moved it. */
  private readonly changeLog = new ChangeLog();
  private counters: Partial<Record<CollectionName, number>> = {};
  /** The version (seq) of each row as memory holds it, deleted rows included. */
  private rowSeqs = new Map<string, IdNumbers>();
  /** Cold collections (COLD_COLLECTIONS): which ids are present (1) or deleted (0), and how many are present. */
  private coldIds = new Map<CollectionName, { present: IdNumbers; count: number }>();
  /** Every transaction with an xid below this had ended when memory last caught up (xid8, as text). */
  private horizon = '0';
  /** What the functions of the batch being run read (set only while they run: they are synchronous). */
  private reads: ReadSet | null = null;
  /** Commits this process made (tests count them). */
  commits = 0;
  /** Commits this process made that ran again after a conflict, and that fell back to the serial way. */
  readonly conflicts = { retried: 0, serial: 0, skipped: 0 };
  /** Seqs of this process's own recent commits, so that their NOTIFY is not read as news. */
  private ownSeqs = new Set<string>();
  private writes = new GroupCommit<Tx>((take) => this.serial(() => this.commit(take)));
  /** Catch-ups and commits touch memory one at a time: this chain orders them. */
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;
  private writer!: pg.Client;
  private listener: pg.Client | null = null;
  /**
   * Reads beside commits (the window checks of sync(), cold blobs and records), at most READERS connections: the
   * writer's connection holds commits, and the listener's only listens, so a slow read holds up no sync behind it.
   */
  private readers!: pg.Pool;
  private poll: NodeJS.Timeout | null = null;
  private catchingUp: Promise<void> | null = null;
  private catchUpAgain = false;
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
    this.readers = new pg.Pool({
      connectionString: this.url,
      application_name: 'sitefleet-read',
      max: READERS,
      idleTimeoutMillis: 10_000,
    });
    // An idle reader that loses its connection is dropped by the pool; the next read opens another.
    this.readers.on('error', (e) => log('warn', 'postgres reader connection lost', { err: e.message }));
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
      await this.serial(() => this.load(this.writer)); // a NOTIFY meanwhile catches up after it, not inside its snapshot
    } catch (e) {
      await this.writer.end().catch(() => {});
      await this.listener?.end().catch(() => {});
      await this.readers.end().catch(() => {});
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
      if (n.channel !== CHANNEL) return;
      if (n.payload !== undefined && this.ownSeqs.delete(n.payload)) return;
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

  /**
   * Catches up in the background (a NOTIFY, the poll). One at a time; a call that arrives while one runs makes it run
   * once more after (the running one may have read before the commit that called), so a NOTIFY is never dropped.
   */
  private backgroundCatchUp(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.catchingUp) {
      this.catchUpAgain = true;
      return this.catchingUp;
    }
    this.catchingUp = this.serial(() => this.catchUp(this.writer))
      .catch((e: Error) => log('warn', 'postgres catch-up failed', { err: e.message }))
      .finally(() => {
        this.catchingUp = null;
        if (this.catchUpAgain) {
          this.catchUpAgain = false;
          void this.backgroundCatchUp();
        }
      });
    return this.catchingUp;
  }

  /**
   * The rows written by transactions at or above the horizon (some memory may hold already), the id floors, and the
   * next horizon: the xmin of this statement's own snapshot. One statement, so one snapshot; the horizon is ours.
   * Cold blobs' data stays in the database: their rows come without it (they only leave the cache); a cold
   * collection's rows say only whether the record is there.
   */
  private windowSql(): string {
    if (!/^\d+$/.test(this.horizon)) throw new Error(`bad horizon ${this.horizon}`);
    const cold = [...COLD_BLOBS].map((k) => `'${k}'`).join(', ');
    const coldRecords = [...COLD_COLLECTIONS].map((k) => `'${k}'`).join(', ');
    return `SELECT kind, id, seq,
                   CASE WHEN kind IN (${cold}) THEN NULL
                        WHEN kind IN (${coldRecords}) THEN CASE WHEN data IS NULL THEN NULL ELSE 'true'::jsonb END
                        ELSE data END AS data
            FROM sitefleet_rows WHERE xid >= '${this.horizon}'::xid8
            UNION ALL SELECT '#counters', 0, 0, value FROM sitefleet_meta WHERE key = 'counters'
            UNION ALL SELECT '#horizon', 0, 0, to_jsonb(pg_snapshot_xmin(pg_current_snapshot())::text)`;
  }

  /**
   * The first read, on opening: what a catch-up from horizon 0 would bring, without what memory would only skip. One
   * snapshot (a REPEATABLE READ transaction), whose xmin is the horizon, as a window's is. Each kind's rows stream in
   * as arrays and each is applied as it is parsed (a pg Query with a row listener keeps no rows), so what a row costs
   * besides its record dies young: the catch-up's one statement had kept half a million row objects at 100,000
   * sites, each with its kind and seq as strings, through every scavenge until the last row came. PostgreSQL sends
   * while this process parses, as before. Left out: deleted rows (a later window naming one is news and deletes
   * nothing) and cold blobs (memory holds nothing of theirs but a seq; a later window naming one drops it from a
   * cache that is empty). The id counters come from each collection's highest id, deleted rows included. No version
   * moves here: init bumped every collection (an unknown set of records) before, and nothing reads one until open ends.
   */
  private async load(client: pg.ClientBase): Promise<void> {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    try {
      const head = (
        await client.query<{ floors: Record<string, number> | null; horizon: string }>(
          `SELECT (SELECT value FROM sitefleet_meta WHERE key = 'counters') AS floors,
                  pg_snapshot_xmin(pg_current_snapshot())::text AS horizon`,
        )
      ).rows[0]!;
      const tops = (
        await client.query<{ col: CollectionName; top: number | null }>(
          COLLECTION_NAMES.map((c) => `SELECT '${c}' AS col, (SELECT max(id) FROM sitefleet_rows WHERE kind = '${c}') AS top`).join(
            ' UNION ALL ',
          ),
        )
      ).rows;
      for (const { col, top } of tops) this.counters[col] = Math.max(top ?? 0, head.floors?.[col] ?? 0);
      for (const kind of [...COLLECTION_NAMES, ...BLOB_KINDS.filter((k) => !COLD_BLOBS.has(k))]) {
        const cold = COLD_COLLECTIONS.has(kind as CollectionName);
        const seqs = this.rowSeqs.get(kind) ?? new IdNumbers();
        this.rowSeqs.set(kind, seqs);
        const map: Map<number, unknown> | undefined = this.data.get(kind as CollectionName) ?? this.blobs.get(kind as Blob);
        const config: pg.QueryArrayConfig<string[]> = {
          text: `SELECT id, seq::float8, ${cold ? 'NULL' : 'data'} FROM sitefleet_rows WHERE kind = $1 AND data IS NOT NULL`,
          values: [kind],
          rowMode: 'array',
        };
        const rows = new pg.Query(config);
        rows.on('row', ([id, seq, data]: [number, number, unknown]) => {
          seqs.set(id, seq);
          if (cold) this.setPresent(kind as CollectionName, id, true);
          else map!.set(id, kind in COLLECTIONS ? shareParts(kind as CollectionName, data as Rec) : data);
        });
        await new Promise<void>((resolve, reject) => {
          rows.on('end', () => resolve());
          rows.on('error', reject);
          void client.query(rows);
        });
      }
      await client.query('COMMIT');
      this.horizon = head.horizon;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => {});
      throw e;
    }
  }

  /** Applies the window to memory: one round trip. */
  private async catchUp(client: pg.ClientBase): Promise<void> {
    this.applyWindow((await client.query<Row>(this.windowSql())).rows);
  }

  private applyWindow(rows: Row[]): void {
    let counters: Record<string, number> | undefined;
    let horizon: string | undefined;
    const records: Row[] = [];
    for (const r of rows) {
      if (r.kind === '#counters') counters = r.data as Record<string, number>;
      else if (r.kind === '#horizon') horizon = r.data as string;
      else records.push(r);
    }
    this.apply(records);
    for (const col of COLLECTION_NAMES) this.counters[col] = Math.max(this.counters[col] ?? 0, counters?.[col] ?? 0);
    if (horizon !== undefined) this.horizon = horizon;
  }

  private seqOf(kind: string, id: number): number | undefined {
    return this.rowSeqs.get(kind)?.get(id);
  }

  private setSeq(kind: string, id: number, seq: number): void {
    let m = this.rowSeqs.get(kind);
    if (!m) this.rowSeqs.set(kind, (m = new IdNumbers()));
    m.set(id, seq);
  }

  /** Whether a row of the window differs from what memory holds. */
  private isNews(r: Row): boolean {
    return this.seqOf(r.kind, r.id) !== Number(r.seq);
  }

  private apply(rows: Row[]): void {
    for (const r of rows) {
      if (!this.isNews(r)) continue;
      this.setSeq(r.kind, r.id, Number(r.seq));
      if (COLD_COLLECTIONS.has(r.kind as CollectionName)) {
        const col = r.kind as CollectionName;
        this.setPresent(col, r.id, r.data !== null);
        if (r.id > (this.counters[col] ?? 0)) this.counters[col] = r.id;
        this.bump(col, r.id);
      } else if (r.kind in COLLECTIONS) {
        const col = r.kind as CollectionName;
        const map = this.data.get(col)!;
        if (r.data === null) map.delete(r.id);
        else map.set(r.id, shareParts(col, r.data as Rec));
        if (r.id > (this.counters[col] ?? 0)) this.counters[col] = r.id;
        this.bump(col, r.id);
      } else if (COLD_BLOBS.has(r.kind as Blob)) {
        this.coldCache.invalidate(`${r.kind}/${r.id}`);
      } else if ((BLOB_KINDS as string[]).includes(r.kind)) {
        const map = this.blobs.get(r.kind as Blob)!;
        if (r.data === null) map.delete(r.id);
        else map.set(r.id, r.data);
      }
    }
  }

  private bump(col: CollectionName, id?: number): void {
    this.changeLog.bump(col, id);
  }

  /** Whether a cold collection's record is there, as memory last learned. */
  private isPresent(col: CollectionName, id: number): boolean {
    return this.coldIds.get(col)?.present.get(id) === 1;
  }

  private setPresent(col: CollectionName, id: number, present: boolean): void {
    let c = this.coldIds.get(col);
    if (!c) this.coldIds.set(col, (c = { present: new IdNumbers(), count: 0 }));
    if ((c.present.get(id) === 1) !== present) c.count += present ? 1 : -1;
    c.present.set(id, present ? 1 : 0);
  }

  changes(): number {
    return this.changeLog.total;
  }

  private readKey(kind: Kind, id: number): void {
    this.reads!.keys.set(`${kind}/${id}`, { kind, id });
  }

  version(col: CollectionName): number {
    if (this.reads) this.reads.cols.add(col);
    return this.changeLog.version(col);
  }

  changedSince(col: CollectionName, version: number): number[] | null {
    if (this.reads) this.reads.cols.add(col);
    return this.changeLog.since(col, version);
  }

  get<T extends Rec>(col: CollectionName, id: number): T | undefined {
    if (COLD_COLLECTIONS.has(col)) throw coldRefused(col);
    if (this.reads) this.readKey(col, id);
    return this.data.get(col)!.get(id) as T | undefined;
  }

  all<T extends Rec>(col: CollectionName): IterableIterator<T> {
    if (COLD_COLLECTIONS.has(col)) throw coldRefused(col);
    if (this.reads) this.reads.cols.add(col);
    return this.data.get(col)!.values() as IterableIterator<T>;
  }

  count(col: CollectionName): number {
    if (this.reads) this.reads.cols.add(col);
    if (COLD_COLLECTIONS.has(col)) return this.coldIds.get(col)?.count ?? 0;
    return this.data.get(col)!.size;
  }

  /** A cold collection's records: one SELECT (on a reader's connection, beside commits). */
  async readRecords<T extends Rec>(col: CollectionName, q: RecordQuery): Promise<T[]> {
    checkQuery(col, q);
    if (q.limit === 0) return [];
    const params: unknown[] = [col];
    const cond = this.whereSql(q.where, params);
    if (q.below !== undefined) cond.push(`id < $${params.push(q.below)}`);
    if (q.above !== undefined) cond.push(`id > $${params.push(q.above)}`);
    if (q.ids) cond.push(`id = ANY($${params.push(q.ids)}::int[])`);
    const sql = `SELECT data FROM sitefleet_rows WHERE ${cond.join(' AND ')}
                 ORDER BY id ${q.order === 'newest' ? 'DESC' : 'ASC'} OFFSET $${params.push(q.offset ?? 0)} LIMIT $${params.push(q.limit)}`;
    return (await this.select<{ data: T }>(sql, params, col)).map((r) => r.data);
  }

  async countRecords(col: CollectionName, where?: readonly FieldTest[]): Promise<number> {
    checkQuery(col, { order: 'newest', limit: 0, where });
    const params: unknown[] = [col];
    const cond = this.whereSql(where, params);
    return Number(
      (await this.select<{ n: string }>(`SELECT count(*) AS n FROM sitefleet_rows WHERE ${cond.join(' AND ')}`, params, col))[0]!.n,
    );
  }

  /**
   * The SQL of field tests (engine.ts `passes` says the same in memory): a missing field is JSON null; text bounds
   * compare by byte (COLLATE "C", as JavaScript compares ISO times). Field names were checked (checkQuery) and are
   * parameters anyway; the kind is $1.
   */
  private whereSql(where: readonly FieldTest[] | undefined, params: unknown[]): string[] {
    const cond = ['kind = $1', 'data IS NOT NULL'];
    for (const t of where ?? []) {
      const f = `$${params.push(t.field)}`;
      const json = `coalesce(data -> ${f}, 'null'::jsonb)`;
      const text = `(CASE WHEN jsonb_typeof(data -> ${f}) = 'string' THEN data ->> ${f} END)`;
      if ('eq' in t) cond.push(`${json} = $${params.push(JSON.stringify(t.eq))}::jsonb`);
      else if ('ne' in t) cond.push(`${json} <> $${params.push(JSON.stringify(t.ne))}::jsonb`);
      else if ('ieq' in t) cond.push(`lower(${text}) = lower($${params.push(t.ieq)}::text)`);
      else if ('gte' in t) cond.push(`${text} COLLATE "C" >= $${params.push(t.gte)}::text`);
      else cond.push(`${text} COLLATE "C" < $${params.push(t.lt)}::text`);
    }
    return cond;
  }

  /**
   * A read of what is committed, beside commits: on a reader's connection (the writer's holds commits). A failure is
   * logged with `what` was read and answered as 503.
   */
  private async select<R extends pg.QueryResultRow>(sql: string, params: unknown[], what: string): Promise<R[]> {
    if (this.closed) throw new Error('store is closed');
    try {
      return (await this.readers.query<R>(sql, params)).rows;
    } catch (e) {
      log('error', 'postgres read failed', { err: String((e as Error).message ?? e), kind: what });
      throw new ServiceError('svc_store_unavailable', 'The database could not be reached; try again later.', 503);
    }
  }

  getBlob<T>(kind: Blob, id: number): T | null {
    if (COLD_BLOBS.has(kind)) throw new Error(`${kind} blobs are read with readBlob`);
    if (this.reads) this.readKey(kind, id);
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
        const rows = await this.select<{ t: string | null }>(
          'SELECT data::text AS t FROM sitefleet_rows WHERE kind = $1 AND id = $2',
          [kind, id],
          `${kind}/${id}`,
        );
        const text = rows[0]?.t ?? null;
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
    const rows = await this.select<{ id: number; data: T | null }>(
      'SELECT id, data FROM sitefleet_rows WHERE kind = $1 AND id = ANY($2::int[])',
      [kind, ask],
      `${kind} (${ask.length})`,
    );
    for (const row of rows) out.set(row.id, row.data ?? null);
    return out;
  }

  memory(): StoreMemory {
    const records = Object.fromEntries(COLLECTION_NAMES.map((c) => [c, this.data.get(c)!.size])) as Record<CollectionName, number>;
    const blobs = Object.fromEntries(BLOB_KINDS.map((k) => [k, this.blobs.get(k)!.size])) as Record<Blob, number>;
    return { records, blobs, cold_cache: this.coldCache.stats() };
  }

  private checking: Promise<void> | null = null;
  private nextCheck: Promise<void> | null = null;

  /**
   * Reads the window (on a reader's connection, beside commits) and catches up if any row in it is news to
   * memory. Calls that arrive while a check runs share the next one (a check that started before a call cannot vouch
   * for it), so there is at most one check in flight and one waiting, whatever the rate.
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
      const rows = (await this.readers.query<Row>(this.windowSql())).rows;
      if (!rows.some((r) => r.kind[0] !== '#' && this.isNews(r))) return;
      if (!this.closed) await this.serial(() => this.catchUp(this.writer));
    } catch (e) {
      log('error', 'postgres sync failed', { err: String((e as Error).message ?? e) });
      throw new ServiceError('svc_store_unavailable', 'The database could not be reached; try again later.', 503);
    }
  }

  write<R>(fn: (tx: Tx) => R): Promise<R>;
  write<R>(fn: (tx: Tx) => R, opts: WriteOptions): Promise<R | Skipped>;
  write<R>(fn: (tx: Tx) => R, opts: WriteOptions = {}): Promise<R | Skipped> {
    return this.writes.write<R | Skipped>(fn, opts.skipLocked === true);
  }

  /**
   * Commits the writes queued so far: optimistically (dry run, lock what it touched, catch up, run, write) up to
   * OPTIMISTIC_TRIES times, then the serial way. Writes that arrive meanwhile wait for the next commit. Ids for inserts
   * are reserved from the collections' sequences in the same round trip as the locks (as many as the dry run made).
   */
  private async commit(take: () => Pending<Tx>[]): ReturnType<Commit<Tx>> {
    const batch = take();
    // A skipLocked write comes alone (GroupCommit.take): its locks are tried, not awaited, and it is skipped whole.
    const skip = batch.length === 1 && batch[0]!.skipLocked === true;
    const skipped = () => {
      this.conflicts.skipped++;
      return { batch, outcomes: [{ ok: true as const, value: SKIPPED }] };
    };
    const c = this.writer;
    let began = false;
    const undoAll: Array<() => void> = [];
    /** Set once the batch's rows are being serialised and written: a failure from there on may be a value's fault. */
    let writing = false;
    try {
      for (let round = 0; ; round++) {
        const serial = round >= OPTIMISTIC_TRIES;
        if (round > 0) this.conflicts.retried++;
        if (serial) this.conflicts.serial++;
        if (round > OPTIMISTIC_TRIES + 2) throw new Error('the commit kept conflicting after its serial rounds');
        this.idPool.clear();
        let seq: number;
        let ran: Ran;
        if (serial) {
          // Alone: every other commit holds LOCK_KEY shared until it ends. Catch up first, then run.
          began = true;
          const opened = (await c.query(
            `BEGIN; SELECT pg_advisory_xact_lock(${LOCK_KEY}); ${this.windowSql()}; SELECT nextval('sitefleet_seq') AS seq`,
          )) as unknown as pg.QueryResult<Row & { seq: string }>[];
          this.applyWindow(opened[2]!.rows);
          seq = Number(opened[3]!.rows[0]!.seq);
          ran = this.run(batch, undoAll);
          for (let step = 0; ran.short.size && step < MAX_STEPS; step++) {
            const need = new Map(ran.short); // undoing a run also takes back its count of inserts short of an id
            this.undo(undoAll);
            this.takeIds((await c.query<{ col: CollectionName; id: string }>(reserveSql(need))).rows);
            ran = this.run(batch, undoAll);
          }
          if (ran.short.size) throw new Error('the batch kept needing more ids');
        } else {
          // A dry run, undone in the same tick (no reader sees it), tells which locks and how many ids the batch needs.
          const dry = this.run(batch, undoAll);
          const held = lockSet(dry);
          const need = new Map(dry.short); // undoing a run also takes back its count of inserts short of an id
          this.undo(undoAll);
          if (held.size > MAX_LOCKS) {
            round = OPTIMISTIC_TRIES - 1;
            continue;
          }
          const sorted = [...held].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
          began = true;
          // Skipping: the commit lock shared is awaited (a serial commit, a restore: not a claim), every other is tried.
          const lockSql = skip
            ? `SELECT pg_advisory_xact_lock_shared(${LOCK_KEY}); ${tryLocksSql(sorted.filter(([k]) => k !== BigInt(LOCK_KEY)))}`
            : `SELECT sitefleet_lock(${keysLiteral(sorted)})`;
          const opened = (await c.query(
            `BEGIN; ${lockSql}; ${this.windowSql()}; SELECT nextval('sitefleet_seq') AS seq; ${reserveSql(need)}`,
          )) as unknown as pg.QueryResult<Row & { ok: boolean; seq: string; col: CollectionName; id: string }>[];
          const at = skip ? 3 : 2;
          // Memory takes in what others committed: it is now current for everything the locks cover, and nobody can
          // change that until they are released. The batch runs for real on it.
          this.applyWindow(opened[at]!.rows);
          if (skip && opened[2]!.rows[0]!.ok !== true) {
            // A lock is held elsewhere: the ones taken go with the rollback (the ids reserved are left unused).
            await c.query('ROLLBACK');
            began = false;
            return skipped();
          }
          seq = Number(opened[at + 1]!.rows[0]!.seq);
          this.takeIds(opened[at + 2]!.rows);
          ran = this.run(batch, undoAll);
          let covered = false;
          let lockedOut = false;
          for (let step = 0; step < MAX_STEPS; step++) {
            const missing = [...lockSet(ran)].filter(([k, x]) => !(held.get(k) === true || (held.has(k) && !x)));
            if (!missing.length && !ran.short.size) {
              covered = true;
              break;
            }
            // On the newer records the batch read or wrote something else (another head, another id) or inserted more:
            // undo, try those locks without waiting (waiting while holding locks out of order could deadlock), reserve
            // the ids, catch up, run again.
            const short = new Map(ran.short);
            this.undo(undoAll);
            this.conflicts.retried++;
            if (held.size + missing.length > MAX_LOCKS) break;
            const more = (await c.query(`${tryLocksSql(missing)}; ${reserveSql(short)}; ${this.windowSql()}`)) as unknown as pg.QueryResult<
              Row & { ok: boolean; col: CollectionName; id: string }
            >[];
            if (more[0]!.rows[0]!.ok !== true) {
              lockedOut = true;
              break;
            }
            for (const [k, x] of missing) held.set(k, x || held.get(k) === true);
            this.takeIds(more[1]!.rows);
            this.applyWindow(more[2]!.rows);
            ran = this.run(batch, undoAll);
          }
          if (!covered) {
            this.undo(undoAll);
            await c.query('ROLLBACK');
            began = false;
            if (skip && lockedOut) return skipped();
            continue;
          }
        }
        if (CHECK_REPLAY) ran = this.replay(batch, undoAll, ran);
        const { dirty, outcomes, cold, fresh } = ran;
        this.pendingCold = cold;
        // A cold blob or record put and then undone (its write threw) is not written at all.
        for (const [k, { kind }] of dirty) if (isCold(kind) && !cold.has(k)) dirty.delete(k);
        if (dirty.size) {
          const rows = [...dirty.entries()].map(([k, { kind, id }]) => {
            const data = this.written(kind, id, k, cold);
            const unique = UNIQUE_KEYS[kind as CollectionName];
            return { kind, id, data, ukey: unique && data !== null ? unique.key(data as Rec) : null, fresh: fresh.has(k) };
          });
          const lit = (v: unknown) => sqlLiteral(JSON.stringify(v));
          const values = (fresh: boolean) =>
            `SELECT x.kind, x.id, ${seq}, x.data, x.ukey FROM jsonb_to_recordset(${lit(rows.filter((r) => r.fresh === fresh))}::jsonb)
               AS x(kind text, id integer, data jsonb, ukey text)`;
          writing = true;
          if (this.ownSeqs.size > 1000) this.ownSeqs.clear();
          this.ownSeqs.add(String(seq));
          try {
            // Records inserted are inserted (an id in use, should a sequence lag, fails the commit instead of
            // overwriting); the others are upserted. Unique keys first: their index refuses a duplicate.
            await c.query(
              `INSERT INTO sitefleet_rows (kind, id, seq, data, ukey) ${values(false)}
                 ON CONFLICT (kind, id) DO UPDATE SET seq = excluded.seq, data = excluded.data, ukey = excluded.ukey;
               INSERT INTO sitefleet_rows (kind, id, seq, data, ukey) ${values(true)};
               SELECT pg_notify('${CHANNEL}', '${seq}');
               COMMIT`,
            );
          } catch (e) {
            const clash = this.clash(e, batch.length, serial);
            if (!clash) throw e;
            this.undo(undoAll);
            await c.query('ROLLBACK').catch(() => {});
            began = false;
            writing = false;
            if (clash === 'ids') await this.raiseIdSequences();
            if (typeof clash === 'object') {
              // Serial and alone, the write still breaks a unique key (a service that did not check it): its error.
              if (batch.length === 1) return { batch, outcomes: [{ ok: false, error: clash.error }] };
              return { batch, outcomes: batch.map(() => ({ ok: false as const, error: clash.error })), refused: true };
            }
            continue;
          }
          began = false;
          for (const [key, { kind, id }] of dirty) {
            this.setSeq(kind, id, seq);
            if (COLD_COLLECTIONS.has(kind as CollectionName)) {
              this.setPresent(kind as CollectionName, id, cold.get(key) !== null);
              this.bump(kind as CollectionName, id);
            }
            if (fresh.has(key) && id > (this.counters[kind as CollectionName] ?? 0)) this.counters[kind as CollectionName] = id;
          }
          for (const k of cold.keys()) this.coldCache.invalidate(k);
          this.commits++;
        } else {
          await c.query('COMMIT');
          began = false;
        }
        return { batch, outcomes };
      }
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
      const error =
        e instanceof ReplayMismatch
          ? e
          : refused
            ? valueRefused('the database refused a value in it (the server log says which)')
            : new ServiceError(
                'svc_store_unavailable',
                'The change was not saved because the database could not be reached or refused it; nothing was changed. Try again later.',
                503,
              );
      if (this.writerBroken) await this.reconnect();
      return { batch, outcomes: batch.map(() => ({ ok: false as const, error })), refused };
    } finally {
      this.pendingCold = null;
    }
  }

  /**
   * What a failed row write means: 'again' (another process committed a record with one of the batch's unique keys:
   * the next round catches up, and the service's own check refuses the write that repeats it), 'ids' (an inserted id
   * was in use: a sequence lags, as after rows written by hand), the unique key's error (the serial round broke it
   * too), or null (any other failure).
   */
  private clash(e: unknown, writes: number, serial: boolean): 'again' | 'ids' | { error: ServiceError } | null {
    const err = e as { code?: string; constraint?: string };
    if (err.code === '23505' && err.constraint === 'sitefleet_rows_pkey') return 'ids';
    const u = uniqueBroken(e);
    if (!u) return null;
    if (!serial) return 'again';
    log('warn', 'a write broke a unique key its service did not check', { kind: u.kind, writes });
    return { error: u.kind ? UNIQUE_KEYS[u.kind]!.error(u.key) : valueRefused('a record has a key another one has') };
  }

  /** Raises the id sequences above the ids in use, alone (LOCK_KEY exclusive), so that no draw meanwhile is undone. */
  private async raiseIdSequences(): Promise<void> {
    const c = this.writer;
    await c.query(`BEGIN; SELECT pg_advisory_xact_lock(${LOCK_KEY})`);
    try {
      await syncIdSequences(c);
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      throw e;
    }
  }

  /**
   * SITEFLEET_CHECK_REPLAY=1 (the PostgreSQL test lane sets it): the rule that a write function may run more than
   * once, checked on every batch. The batch runs once more on the same memory, under the same locks, with the same
   * ids; what it returned and every row it would write must come out the same. A function that changes something
   * outside its Tx (a cache, a queue, a hint another write reads) and depends on it shows up here as a difference,
   * and the batch fails with an error naming it. Times are not compared (an ISO time or a millisecond epoch in a value
   * is taken as a time: two runs a moment apart may stamp different ones), and a random UUID only by its shape
   * (one drawn in the function is new each run, and only the last run's is kept).
   */
  private replay(batch: readonly Pending<Tx>[], undoAll: Array<() => void>, ran: Ran): Ran {
    const before = this.fingerprint(ran);
    this.undo(undoAll);
    const again = this.run(batch, undoAll);
    const after = this.fingerprint(again);
    for (const [k, v] of before) {
      if (after.get(k) !== v) {
        const b = String(after.get(k));
        let at = 0;
        while (at < v.length && v[at] === b[at]) at++;
        const near = (x: string) => x.slice(Math.max(0, at - 120), at + 120);
        log('error', 'a write function did not do the same when run again', { what: k, first: near(v), again: near(b) });
        throw new ReplayMismatch(`a write function did not do the same when run again (${k}): it changed something outside its Tx`);
      }
    }
    for (const k of after.keys())
      if (!before.has(k)) throw new Error(`a write function did not do the same when run again (${k} only the second time)`);
    return again;
  }

  private fingerprint(ran: Ran): Map<string, string> {
    const text = (v: unknown): string => {
      try {
        return (
          JSON.stringify(v, (_k, x: unknown) =>
            typeof x === 'string'
              ? x
                  .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, 'time')
                  .replace(/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/g, 'uuid')
              : typeof x === 'number' && x > 1e12 && x < 1e13
                ? 'time'
                : x,
          ) ?? 'undefined'
        );
      } catch {
        return String(v);
      }
    };
    const out = new Map<string, string>();
    ran.outcomes.forEach((o, i) => out.set(`write ${i}`, o.ok ? `ok ${text(o.value)}` : `error ${String(o.error)}`));
    for (const [k, { kind, id }] of ran.dirty) out.set(`row ${k}`, text(this.written(kind, id, k, ran.cold)));
    return out;
  }

  /** What a row of the batch holds: a cold one's value from the run's own (never memory), any other from memory. */
  private written(kind: Kind, id: number, key: string, cold: Map<string, unknown>): unknown {
    if (isCold(kind)) return cold.get(key) ?? null;
    if (kind in COLLECTIONS) return this.data.get(kind as CollectionName)!.get(id) ?? null;
    return this.blobs.get(kind as Blob)!.get(id) ?? null;
  }

  /** Ids reserved for the batch being committed, by collection, in the order drawn. */
  private idPool = new Map<CollectionName, number[]>();

  private takeIds(rows: Array<{ col: CollectionName; id: string }>): void {
    for (const r of rows) {
      let ids = this.idPool.get(r.col);
      if (!ids) this.idPool.set(r.col, (ids = []));
      ids.push(Number(r.id));
    }
  }

  /** Undoes the batch's changes to memory (newest first) and empties the log. */
  private undo(undoAll: Array<() => void>): void {
    for (const u of undoAll.reverse()) u();
    undoAll.length = 0;
  }

  /** Runs the batch's functions against memory, recording what they read and wrote. */
  private run(batch: readonly Pending<Tx>[], undoAll: Array<() => void>): Ran {
    undoAll.length = 0;
    const ran: Ran = {
      reads: { keys: new Map(), cols: new Set() },
      dirty: new Map(),
      cold: new Map(),
      fresh: new Set(),
      short: new Map(),
      taken: new Map(),
      outcomes: [],
    };
    this.reads = ran.reads;
    try {
      ran.outcomes = applyBatch(batch, (undo, then) => this.tx(undo, then, ran), undoAll);
      return ran;
    } finally {
      this.reads = null;
    }
  }

  private async reconnect(): Promise<void> {
    await this.writer.end().catch(() => {});
    this.writer = this.newClient();
    this.writerBroken = false;
    await this.writer.connect().catch((e: Error) => log('error', 'postgres reconnect failed', { err: e.message }));
  }

  private tx(undo: Array<() => void>, then: Array<() => void>, ran: Ran): Tx {
    const { dirty, cold, fresh, short, taken } = ran;
    const mark = (kind: Kind, id: number) => dirty.set(`${kind}/${id}`, { kind, id });
    const tables: Tables = {
      data: this.data,
      counters: this.counters,
      bump: (col, id) => this.changeLog.bump(col, id),
      get: (col, id) => this.get(col, id),
      all: (col) => this.all(col),
    };
    const base = tableTx(tables, undo, mark, then);
    // A cold blob or a cold collection's record written (COLD_BLOBS, COLD_COLLECTIONS): only in this commit's rows,
    // never in memory. A cold record's lock is taken (as if read) unless it was inserted here (coldLock): a put or
    // delete of one entry does not hold the collection.
    const coldWrite = (kind: Kind, id: number, value: unknown) => {
      const key = `${kind}/${id}`;
      const had = cold.has(key);
      const prev = cold.get(key);
      cold.set(key, value);
      undo.push(() => {
        if (had) cold.set(key, prev);
        else cold.delete(key);
      });
      mark(kind, id);
    };
    const coldLock = (col: CollectionName, id: number) => {
      if (this.reads && !fresh.has(`${col}/${id}`)) this.readKey(col, id);
    };
    return {
      ...base,
      put: <T extends Rec>(col: CollectionName, rec: T): T => {
        if (!COLD_COLLECTIONS.has(col)) return base.put(col, rec);
        assertStorable(`the ${col} record ${rec.id}`, rec);
        coldLock(col, rec.id);
        coldWrite(col, rec.id, rec);
        return rec;
      },
      delete: (col, id) => {
        if (!COLD_COLLECTIONS.has(col)) return base.delete(col, id);
        coldLock(col, id);
        const key = `${col}/${id}`;
        if (!(cold.has(key) ? cold.get(key) !== null : this.isPresent(col, id))) return false;
        coldWrite(col, id, null);
        return true;
      },
      // The next id reserved for the collection; without one (a dry run, or more inserts than it made), an id above any
      // memory holds, for this run only: the commit reserves what was short and runs again before writing anything.
      insert: <T extends Rec>(col: CollectionName, rec: Omit<T, 'id'>): T => {
        const pool = this.idPool.get(col) ?? [];
        const n = taken.get(col) ?? 0;
        taken.set(col, n + 1);
        undo.push(() => taken.set(col, n));
        let id = pool[n];
        if (id === undefined) {
          short.set(col, (short.get(col) ?? 0) + 1);
          undo.push(() => {
            const k = short.get(col)! - 1;
            if (k > 0) short.set(col, k);
            else short.delete(col);
          });
          id = Math.max(this.counters[col] ?? 0, pool[pool.length - 1] ?? 0) + 1 + (n - pool.length);
        }
        fresh.add(`${col}/${id}`);
        const full = { id, ...rec } as unknown as T;
        if (!COLD_COLLECTIONS.has(col)) return base.put<T>(col, full);
        assertStorable(`the ${col} record ${id}`, full);
        coldWrite(col, id, full);
        return full;
      },
      unlocked: <T>(fn: () => T): T => {
        const reads = this.reads;
        this.reads = null;
        try {
          return fn();
        } finally {
          this.reads = reads;
        }
      },
      putBlob: (kind, id, value) => {
        if (value !== null) assertStorable(`the ${kind} of ${id}`, value);
        if (COLD_BLOBS.has(kind)) return coldWrite(kind, id, value);
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
    await Promise.all([this.writer.end().catch(() => {}), this.listener?.end().catch(() => {}), this.readers.end().catch(() => {})]);
  }
}
