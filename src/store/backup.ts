// `sitefleet backup` / `sitefleet restore`: a whole fleet in one file, the same format for both engines, so a backup of a
// data dir can be restored into PostgreSQL and back. The file is JSON lines: a header (format of the records, id
// counters), one line per record or blob ({kind, id, data}), and an end line with the number of rows — a cut-off file
// is refused before anything is replaced. It holds the fleet's secrets (child keys, hashes): written with mode 0600.
//
// Consistency while `serve` runs: a data dir is snapshotted under its commit lock (the lock every group commit holds,
// so no commit is half on disk) by hard-linking its files, which commits replace by rename and never rewrite in place;
// the lock is held only for the links. PostgreSQL is read in one REPEATABLE READ transaction (one snapshot, no lock).
import {
  createReadStream,
  createWriteStream,
  existsSync,
  linkSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  rmdirSync,
  statSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { once } from 'node:events';
import { basename, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import type { Config } from '../config.js';
import { BLOB_KINDS, COLLECTION_NAMES, COLLECTIONS, type CollectionName, type Rec } from './engine.js';
import { parseJson, syncDir, writeDurably } from './durable-file.js';
import { CURRENT_FORMAT } from './migrations.js';
import type { LeaseRecord } from './monitor-records.js';
import { TAGS_ONTO_SITES_SQL, fillUniqueKeys, migrateSchema, syncIdSequences } from './pg-store.js';
import { redactUrl } from './database-url.js';
import { JOURNAL, fileOf, journalOverlay, lockDataDir, type Meta } from './store.js';

/** Version of the backup file's own layout (not of the records in it: that is the header's data_format). */
export const BACKUP_VERSION = 1;
/** Rows per INSERT when restoring into PostgreSQL and per page when reading from it: bounds memory per round. */
const CHUNK = 1000;
/** The same lock key every sitefleet process takes for a commit (pg-store.ts). */
const PG_LOCK_KEY = 0x5f1ee7;

export type Fleet = Pick<Config, 'dataDir' | 'databaseUrl'>;

interface Header {
  sitefleet_backup: number;
  /** The data format of the records (store/migrations.ts): a restore into a data dir migrates older ones at start. */
  data_format: number;
  engine: 'lowdb' | 'postgres';
  created_at: string;
  counters: Record<string, number>;
}
interface Row {
  kind: string;
  id: number;
  data: unknown;
}

export interface BackupSummary {
  rows: number;
  counts: Record<string, number>;
  dataFormat: number;
}

/** A refusal that changed nothing: not a fleet, a non-empty target without --force, a damaged backup file. */
export class BackupRefused extends Error {}

/**
 * Leases say which process runs what now, not what the fleet is: they are left out (a restored fleet starts unclaimed);
 * so are "Open WP Admin" links, which live 30 s.
 */
const BACKED_UP = COLLECTION_NAMES.filter((c) => c !== 'leases' && c !== 'admin_logins');
const KINDS = new Set<string>([...BACKED_UP, ...BLOB_KINDS]);

// ---------------------------------------------------------------------------------------------------------------- backup

/** Writes the fleet to `file` (via `file.partial`, renamed into place once complete and fsynced). */
export async function writeBackup(source: Fleet, file: string): Promise<BackupSummary> {
  const partial = `${file}.partial`;
  const fh = await open(partial, 'w', 0o600);
  const out = createWriteStream('', { fd: fh.fd, autoClose: false });
  const counts: Record<string, number> = {};
  let rows = 0;
  const put = async (value: unknown) => {
    if (!out.write(`${JSON.stringify(value)}\n`)) await once(out, 'drain');
  };
  let dataFormat = 0;
  try {
    const emit = async (header: Header, each: (row: (r: Row) => Promise<void>) => Promise<void>) => {
      dataFormat = header.data_format;
      await put(header);
      await each(async (r) => {
        counts[r.kind] = (counts[r.kind] ?? 0) + 1;
        rows++;
        await put(r);
      });
      await put({ end: true, rows });
    };
    if (source.databaseUrl) await readPg(source.databaseUrl, emit);
    else await readDataDir(source.dataDir, emit);
    await new Promise<void>((res, rej) => out.end((e?: Error | null) => (e ? rej(e) : res())));
    await fh.sync();
  } catch (e) {
    out.destroy();
    await fh.close().catch(() => {});
    rmSync(partial, { force: true });
    throw e;
  }
  await fh.close();
  renameSync(partial, file);
  await syncDir(dirname(file));
  return { rows, counts, dataFormat };
}

type Emit = (header: Header, each: (row: (r: Row) => Promise<void>) => Promise<void>) => Promise<void>;

/** The data dir's files that hold records: meta.json, `col.json` and `col.N.json` shards. */
const isRecordFile = (name: string) => name === 'meta.json' || /^[a-z_]+(\.\d+)?\.json$/.test(name);

async function readDataDir(dir: string, emit: Emit): Promise<void> {
  if (!existsSync(join(dir, 'meta.json'))) throw new BackupRefused(`${dir} is not a sitefleet data dir (no meta.json).`);
  const snap = mkdtempSync(join(dir, '.backup-'));
  try {
    const release = await lockDataDir(dir);
    try {
      const take = (from: string, to: string) => {
        try {
          linkSync(from, to);
        } catch {
          copyFileSync(from, to); // a file system without hard links: a copy, still under the lock
        }
      };
      for (const f of readdirSync(dir)) if (isRecordFile(f)) take(join(dir, f), join(snap, f));
      // The journal is appended to in place (shards are replaced by rename): a copy, never a link.
      if (existsSync(join(dir, JOURNAL))) copyFileSync(join(dir, JOURNAL), join(snap, JOURNAL));
      for (const kind of BLOB_KINDS) {
        mkdirSync(join(snap, kind));
        if (!existsSync(join(dir, kind))) continue;
        for (const f of readdirSync(join(dir, kind))) if (/^\d+\.json$/.test(f)) take(join(dir, kind, f), join(snap, kind, f));
      }
    } finally {
      await release();
    }
    const read = <T>(file: string): T => parseJson<T>(file, readFileSync(file, 'utf8'));
    const meta = read<Meta>(join(snap, 'meta.json'));
    const names = readdirSync(snap);
    const files = (col: string) => names.filter((n) => n === `${col}.json` || new RegExp(`^${col}\\.\\d+\\.json$`).test(n));
    // Commits still in the journal win over the shards they change (a patch applies to the record the shard holds).
    const shards = new Map<string, Map<number, Rec>>();
    const atRest = (col: CollectionName, id: number): Rec | undefined => {
      const f = fileOf(col, id);
      let recs = shards.get(f);
      if (!recs) {
        recs = new Map();
        if (existsSync(join(snap, f))) for (const r of read<{ records: Rec[] }>(join(snap, f)).records) recs.set(r.id, r);
        shards.set(f, recs);
      }
      return recs.get(id);
    };
    const journal = journalOverlay(join(snap, JOURNAL), meta.generation, atRest);
    shards.clear();
    const counters: Record<string, number> = {};
    for (const col of COLLECTION_NAMES) {
      let max = Math.max(meta.counters?.[col] ?? 0, journal.counters[col] ?? 0);
      for (const f of files(col)) for (const r of read<{ records: Rec[] }>(join(snap, f)).records) max = Math.max(max, r.id);
      for (const [id, r] of journal.recs.get(col) ?? []) if (r) max = Math.max(max, id);
      counters[col] = max;
    }
    await emit(
      { sitefleet_backup: BACKUP_VERSION, data_format: meta.format, engine: 'lowdb', created_at: new Date().toISOString(), counters },
      async (row) => {
        for (const col of BACKED_UP) {
          const newer = journal.recs.get(col);
          for (const f of files(col))
            for (const r of read<{ records: Rec[] }>(join(snap, f)).records)
              if (!newer?.has(r.id)) await row({ kind: col, id: r.id, data: r });
          for (const [id, r] of newer ?? []) if (r) await row({ kind: col, id, data: r });
        }
        for (const kind of BLOB_KINDS) {
          for (const f of readdirSync(join(snap, kind))) await row({ kind, id: Number(f.slice(0, -5)), data: read(join(snap, kind, f)) });
        }
      },
    );
  } finally {
    rmSync(snap, { recursive: true, force: true });
  }
}

async function connect(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url, application_name: 'sitefleet-backup' });
  await c.connect().catch((e: Error) => {
    throw new BackupRefused(`Cannot reach the database at ${redactUrl(url)}: ${e.message}`);
  });
  return c;
}

async function readPg(url: string, emit: Emit): Promise<void> {
  const c = await connect(url);
  try {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    if ((await c.query(`SELECT to_regclass('sitefleet_meta') AS t`)).rows[0].t === null) {
      throw new BackupRefused(`The database at ${redactUrl(url)} holds no sitefleet fleet (run "sitefleet migrate" to create one).`);
    }
    const counters = ((await c.query(`SELECT value FROM sitefleet_meta WHERE key = 'counters'`)).rows[0]?.value ?? {}) as Record<
      string,
      number
    >;
    // The PostgreSQL engine holds records of the current data format (pg-store.ts).
    await emit(
      { sitefleet_backup: BACKUP_VERSION, data_format: CURRENT_FORMAT, engine: 'postgres', created_at: new Date().toISOString(), counters },
      async (row) => {
        let after: [string, number] = ['', -1];
        for (;;) {
          const page = await c.query<Row>(
            `SELECT kind, id, data FROM sitefleet_rows WHERE data IS NOT NULL AND kind <> 'leases' AND (kind, id) > ($1, $2)
             ORDER BY kind, id LIMIT ${CHUNK}`,
            after,
          );
          for (const r of page.rows) await row({ kind: r.kind, id: r.id, data: r.data });
          if (page.rows.length < CHUNK) break;
          const last = page.rows[page.rows.length - 1]!;
          after = [last.kind, last.id];
        }
      },
    );
    await c.query('COMMIT');
  } finally {
    await c.end();
  }
}

// --------------------------------------------------------------------------------------------------------------- restore

/** Reads a backup file line by line: the header first, then rows; rejects a malformed or cut-off file. */
async function* readBackup(file: string): AsyncGenerator<Header | Row> {
  if (!existsSync(file)) throw new BackupRefused(`${file} does not exist.`);
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  let n = 0;
  let rows = 0;
  let ended = false;
  const bad = (why: string) => new BackupRefused(`${file} is not a complete sitefleet backup (line ${n}: ${why}); nothing was restored.`);
  for await (const line of lines) {
    n++;
    if (ended) throw bad('text after the end line');
    let v: Record<string, unknown>;
    try {
      v = JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw bad('not JSON');
    }
    if (n === 1) {
      if (v.sitefleet_backup !== BACKUP_VERSION || typeof v.data_format !== 'number' || typeof v.counters !== 'object') {
        throw bad('not a sitefleet backup header');
      }
      if (v.data_format > CURRENT_FORMAT) {
        throw new BackupRefused(
          `${file} holds data format ${v.data_format}, written by a newer sitefleet (this one reads ${CURRENT_FORMAT}).`,
        );
      }
      yield v as unknown as Header;
      continue;
    }
    if (v.end === true) {
      if (v.rows !== rows) throw bad(`the end line counts ${String(v.rows)} rows, the file holds ${rows}`);
      ended = true;
      continue;
    }
    const { kind, id, data } = v;
    if (typeof kind !== 'string' || !KINDS.has(kind) || !Number.isInteger(id) || (id as number) < 0 || typeof data !== 'object' || !data) {
      throw bad('not a record');
    }
    if (kind in COLLECTIONS && (data as Rec).id !== id) throw bad('a record whose id differs from its row');
    rows++;
    yield { kind, id: id as number, data };
  }
  if (n === 0) throw bad('empty');
  if (!ended) throw bad('cut off before its end line');
}

/** The leases recorded in a fleet (who is running on it), read without opening it: none when there is no fleet. */
export async function readLeases(fleet: Fleet): Promise<LeaseRecord[]> {
  if (fleet.databaseUrl) {
    const c = await connect(fleet.databaseUrl);
    try {
      if ((await c.query(`SELECT to_regclass('sitefleet_rows') AS t`)).rows[0].t === null) return [];
      return (await c.query(`SELECT data FROM sitefleet_rows WHERE kind = 'leases' AND data IS NOT NULL`)).rows.map(
        (r) => r.data as LeaseRecord,
      );
    } finally {
      await c.end();
    }
  }
  const file = join(fleet.dataDir, 'leases.json');
  const byId = new Map<number, LeaseRecord>();
  if (existsSync(file)) for (const r of parseJson<{ records: LeaseRecord[] }>(file, readFileSync(file, 'utf8')).records) byId.set(r.id, r);
  // A serve's lease renewals are journal entries until the next compaction: they win over leases.json.
  const metaFile = join(fleet.dataDir, 'meta.json');
  const gen = existsSync(metaFile) ? (parseJson<Meta>(metaFile, readFileSync(metaFile, 'utf8')).generation ?? 0) : 0;
  for (const [id, r] of journalOverlay(join(fleet.dataDir, JOURNAL), gen, (_col, id) => byId.get(id), new Set(['leases'])).recs.get(
    'leases',
  ) ?? []) {
    if (r) byId.set(id, r as LeaseRecord);
    else byId.delete(id);
  }
  return [...byId.values()];
}

export interface RestoreSummary extends BackupSummary {
  /** Where the fleet it replaced was moved (a data dir restored with force); null when there was none. */
  replacedTo: string | null;
}

/** Restores `file` into a data dir or a database. A target holding a fleet is refused unless `force`. */
export async function restoreBackup(file: string, target: Fleet, force: boolean): Promise<RestoreSummary> {
  return target.databaseUrl ? restorePg(file, target.databaseUrl, force) : restoreDataDir(file, target.dataDir, force);
}

/**
 * Into a data dir: the files are written in a new folder beside the target, then swapped in by rename; with `force` the
 * old data dir is moved aside (never deleted), without it a non-empty target is refused.
 */
async function restoreDataDir(file: string, dir: string, force: boolean): Promise<RestoreSummary> {
  const exists = existsSync(dir);
  if (exists && !statSync(dir).isDirectory()) throw new BackupRefused(`${dir} is a file, not a directory.`);
  const occupied = exists && readdirSync(dir).length > 0;
  if (occupied && !force) {
    throw new BackupRefused(`${dir} is not empty; nothing was restored. Add --force to replace it (the old one is kept beside it).`);
  }
  mkdirSync(dirname(dir), { recursive: true });
  const stage = mkdtempSync(join(dirname(dir), `.${basename(dir)}.restore-`));
  try {
    for (const kind of BLOB_KINDS) mkdirSync(join(stage, kind), { mode: 0o700 });
    const shards = new Map<string, Rec[]>();
    let header: Header | undefined;
    const counts: Record<string, number> = {};
    let rows = 0;
    for await (const item of readBackup(file)) {
      if ('sitefleet_backup' in item) {
        header = item;
        continue;
      }
      counts[item.kind] = (counts[item.kind] ?? 0) + 1;
      rows++;
      if (item.kind in COLLECTIONS) {
        const f = fileOf(item.kind as CollectionName, item.id);
        if (!shards.has(f)) shards.set(f, []);
        shards.get(f)!.push(item.data as Rec);
      } else {
        await writeDurably(join(stage, item.kind, `${item.id}.json`), JSON.stringify(item.data));
      }
    }
    const files: Record<string, number> = {};
    for (const [f, records] of shards) {
      await writeDurably(join(stage, f), JSON.stringify({ collection: f.split('.')[0], records }));
      files[f] = 1;
    }
    const meta: Meta = { format: header!.data_format, generation: 1, counters: header!.counters, files };
    await writeDurably(join(stage, 'meta.json'), JSON.stringify(meta));
    for (const kind of BLOB_KINDS) await syncDir(join(stage, kind));
    await syncDir(stage);
    let replacedTo: string | null = null;
    if (occupied) {
      replacedTo = `${dir}.replaced-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      renameSync(dir, replacedTo);
    } else if (exists) rmdirSync(dir);
    renameSync(stage, dir);
    await syncDir(dirname(dir));
    return { rows, counts, dataFormat: header!.data_format, replacedTo };
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    throw e;
  }
}

/**
 * Into PostgreSQL, in one transaction under the commit lock every sitefleet process takes: a database holding a fleet is
 * refused unless `force` (which replaces it); a cut-off file rolls everything back. Records of data format 2 have their
 * tag membership moved onto the sites in the same transaction; older ones are refused (restore them into a data dir,
 * which migrates them at start, then `migrate --from`).
 */
async function restorePg(file: string, url: string, force: boolean): Promise<RestoreSummary> {
  const c = await connect(url);
  try {
    await migrateSchema(c);
    await c.query('BEGIN');
    try {
      await c.query('SELECT pg_advisory_xact_lock($1)', [PG_LOCK_KEY]);
      const held = Number((await c.query('SELECT count(*) AS n FROM sitefleet_rows WHERE data IS NOT NULL')).rows[0].n);
      if (held && !force) {
        throw new BackupRefused(
          `The database at ${redactUrl(url)} already holds a fleet (${held} rows); nothing was restored. Add --force to replace it.`,
        );
      }
      // A seq from the sequence every commit draws from: a version no process holds yet (format 2).
      const seq = Number((await c.query(`SELECT nextval('sitefleet_seq') AS s`)).rows[0].s);
      if (held) await c.query('UPDATE sitefleet_rows SET data = NULL, seq = $1, ukey = NULL WHERE data IS NOT NULL', [seq]);
      let header: Header | undefined;
      const counts: Record<string, number> = {};
      let rows = 0;
      let chunk: Row[] = [];
      const flush = async () => {
        if (!chunk.length) return;
        await c.query(
          `INSERT INTO sitefleet_rows (kind, id, seq, data)
             SELECT x.kind, x.id, $2, x.data FROM jsonb_to_recordset($1::jsonb) AS x(kind text, id integer, data jsonb)
           ON CONFLICT (kind, id) DO UPDATE SET seq = excluded.seq, data = excluded.data, ukey = NULL`,
          [JSON.stringify(chunk), seq],
        );
        chunk = [];
      };
      for await (const item of readBackup(file)) {
        if ('sitefleet_backup' in item) {
          header = item;
          if (header.data_format !== CURRENT_FORMAT && header.data_format !== 2) {
            throw new BackupRefused(
              `${file} holds data format ${header.data_format}; PostgreSQL takes formats 2 and ${CURRENT_FORMAT} only. Restore it into a data dir (sitefleet migrates it at start), then "sitefleet migrate --from DIR --to URL".`,
            );
          }
          continue;
        }
        counts[item.kind] = (counts[item.kind] ?? 0) + 1;
        rows++;
        chunk.push(item);
        if (chunk.length >= CHUNK) await flush();
      }
      await flush();
      // Data format 2 kept tag membership on the tags: it moves onto the sites as the schema's format 4 step moves it.
      if (header?.data_format === 2) await c.query(TAGS_ONTO_SITES_SQL);
      const prev = ((await c.query(`SELECT value FROM sitefleet_meta WHERE key = 'counters'`)).rows[0]?.value ?? {}) as Record<
        string,
        number
      >;
      const counters: Record<string, number> = {};
      for (const col of COLLECTION_NAMES) counters[col] = Math.max(header!.counters[col] ?? 0, prev[col] ?? 0);
      await c.query(`UPDATE sitefleet_meta SET value = $1::jsonb WHERE key = 'counters'`, [JSON.stringify(counters)]);
      // Format 3: the restored records' unique keys, and ids drawn above every restored one.
      await fillUniqueKeys(c);
      await syncIdSequences(c);
      await c.query('SELECT pg_notify($1, $2)', ['sitefleet_commits', String(seq)]);
      await c.query('COMMIT');
      return { rows, counts, dataFormat: header!.data_format, replacedTo: null };
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      throw e;
    }
  } finally {
    await c.end();
  }
}
