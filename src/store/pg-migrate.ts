// `sitefleet migrate`: create or migrate the PostgreSQL schema, and move a lowdb fleet (a data dir) into an empty
// PostgreSQL database with every count checked.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { BLOB_KINDS, COLD_COLLECTIONS, COLLECTION_NAMES, RECORD_READ_BATCH, type CollectionName, type Rec } from './engine.js';
import { PgStore, fillUniqueKeys, migrateSchema, syncIdSequences } from './pg-store.js';
import { redactUrl } from './database-url.js';
import { LowdbStore } from './store.js';

/** Rows sent to PostgreSQL per INSERT statement while copying: bounds the statement size (and memory) per round. */
export const COPY_CHUNK = 1000;

/** A refusal that changed nothing (unreachable database, non-empty target, not a data dir). */
export class MigrateRefused extends Error {}

/** Every record of a collection of the source, a cold one (not readable from memory) read in pages by id. */
async function recordsOf(src: LowdbStore, col: CollectionName): Promise<Rec[]> {
  if (!COLD_COLLECTIONS.has(col)) return [...src.all(col)];
  const out: Rec[] = [];
  for (let above = 0; ;) {
    const page = await src.readRecords(col, { order: 'oldest', above, limit: RECORD_READ_BATCH });
    for (const r of page) out.push(r);
    if (page.length < RECORD_READ_BATCH) return out;
    above = page[page.length - 1]!.id;
  }
}

async function connect(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url, application_name: 'sitefleet-migrate' });
  await c.connect().catch((e: Error) => {
    throw new MigrateRefused(`Cannot reach the database at ${redactUrl(url)}: ${e.message}`);
  });
  return c;
}

/** Creates the schema or brings it to this sitefleet's format. */
export async function migratePg(url: string): Promise<{ from: number; to: number }> {
  const c = await connect(url);
  try {
    return await migrateSchema(c);
  } finally {
    await c.end();
  }
}

export interface CopyReport {
  kind: string;
  source: number;
  target: number;
}

/**
 * Copies every record, blob and id counter of the data dir `from` into the database `to`, in one transaction, then
 * reopens the target and compares counts kind by kind. A target that holds any sitefleet row is refused unless
 * `force` (which then replaces its contents).
 */
export async function copyLowdbToPg(from: string, to: string, force: boolean): Promise<CopyReport[]> {
  if (!existsSync(join(from, 'meta.json'))) throw new MigrateRefused(`${from} is not a sitefleet data dir (no meta.json).`);
  const src = await LowdbStore.open(from); // runs the data dir's own format migrations first, under its lock
  const c = await connect(to);
  try {
    await migrateSchema(c);
    const source: Record<string, number> = {};
    const rows: Array<{ kind: string; id: number; data: unknown }> = [];
    const maxId: Record<string, number> = {};
    for (const col of COLLECTION_NAMES) {
      const recs = await recordsOf(src, col);
      source[col] = recs.length;
      maxId[col] = 0;
      for (const r of recs) {
        rows.push({ kind: col, id: r.id, data: r });
        if (r.id > maxId[col]) maxId[col] = r.id;
      }
    }
    for (const kind of BLOB_KINDS) {
      const ids = readdirSync(join(from, kind)).flatMap((f) => (/^\d+\.json$/.test(f) ? [Number(f.slice(0, -5))] : []));
      let n = 0;
      for (const id of ids) {
        const v = await src.readBlob(kind, id, { cache: false });
        if (v !== null) {
          rows.push({ kind, id, data: v });
          n++;
        }
      }
      source[kind] = n;
    }
    const meta = JSON.parse(readFileSync(join(from, 'meta.json'), 'utf8')) as { counters?: Record<string, number> };
    const counters: Record<string, number> = {};
    for (const col of COLLECTION_NAMES) {
      counters[col] = Math.max(meta.counters?.[col] ?? 0, maxId[col]!);
    }
    await c.query('BEGIN');
    try {
      await c.query('SELECT pg_advisory_xact_lock($1)', [0x5f1ee7]);
      const held = Number((await c.query('SELECT count(*) AS n FROM sitefleet_rows WHERE data IS NOT NULL')).rows[0].n);
      if (held && !force) {
        throw new MigrateRefused(
          `The database at ${redactUrl(to)} already holds ${held} sitefleet rows; nothing was copied. Add --force to replace them.`,
        );
      }
      // A seq from the sequence every commit draws from: a version no process holds yet (format 2).
      const seq = Number((await c.query(`SELECT nextval('sitefleet_seq') AS s`)).rows[0].s);
      if (force) await c.query('UPDATE sitefleet_rows SET data = NULL, seq = $1, ukey = NULL WHERE data IS NOT NULL', [seq]);
      for (let i = 0; i < rows.length; i += COPY_CHUNK) {
        await c.query(
          `INSERT INTO sitefleet_rows (kind, id, seq, data)
             SELECT x.kind, x.id, $2, x.data FROM jsonb_to_recordset($1::jsonb) AS x(kind text, id integer, data jsonb)
           ON CONFLICT (kind, id) DO UPDATE SET seq = excluded.seq, data = excluded.data, ukey = NULL`,
          [JSON.stringify(rows.slice(i, i + COPY_CHUNK)), seq],
        );
      }
      const prev = ((await c.query(`SELECT value FROM sitefleet_meta WHERE key = 'counters'`)).rows[0]?.value ?? {}) as Record<
        string,
        number
      >;
      for (const col of COLLECTION_NAMES) counters[col] = Math.max(counters[col]!, prev[col] ?? 0);
      await c.query(`UPDATE sitefleet_meta SET value = $1::jsonb WHERE key = 'counters'`, [JSON.stringify(counters)]);
      // Format 3: the restored records' unique keys, and ids drawn above every restored one.
      await fillUniqueKeys(c);
      await syncIdSequences(c);
      await c.query('SELECT pg_notify($1, $2)', ['sitefleet_commits', String(seq)]);
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      throw e;
    }
    // Counts checked through the engine itself, as a serving process would load them.
    const target = await PgStore.open(to);
    try {
      const report: CopyReport[] = [];
      for (const col of COLLECTION_NAMES) report.push({ kind: col, source: source[col]!, target: target.count(col) });
      for (const kind of BLOB_KINDS) {
        const n = Number(
          (await c.query('SELECT count(*) AS n FROM sitefleet_rows WHERE kind = $1 AND data IS NOT NULL', [kind])).rows[0].n,
        );
        report.push({ kind, source: source[kind]!, target: n });
      }
      const off = report.filter((r) => r.source !== r.target);
      if (off.length) throw new Error(`Counts differ after the copy: ${off.map((r) => `${r.kind} ${r.source} → ${r.target}`).join(', ')}.`);
      return report;
    } finally {
      await target.close();
    }
  } finally {
    await c.end();
    await src.close();
  }
}
