// The PostgreSQL engine keeps every acknowledged write, rolls back a write that throws, groups concurrent writes,
// lets stores (in this process and others) see each other's commits, keeps uniqueness and counters under concurrent
// writers, refuses a newer schema, and keeps every acknowledged write through SIGKILL.
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { PG_FORMAT, PgStore } from '../../src/store/pg-store.js';
import type { Tx } from '../../src/store/engine.js';
import type { TagRecord } from '../../src/store/records.js';
import { freshDatabase, testPgUrl } from '../support/postgres.js';
import { acknowledgedBeforeKill } from '../support/sigkill.js';
import { until as waitFor } from '../support/wait.js';
import { storeLocation } from '../../src/store/open.js';
import { loadConfig } from '../../src/config.js';

const PG_STORE_JS = fileURLToPath(new URL('../../dist/store/pg-store.js', import.meta.url));
const server = testPgUrl()!;
const opened: PgStore[] = [];
afterAll(async () => {
  for (const s of opened) await s.close().catch(() => {});
});

async function open(url: string): Promise<PgStore> {
  const s = await PgStore.open(url);
  opened.push(s);
  return s;
}
const tag = (name: string) => ({ name, color: null, created_at: '', updated_at: '' });
async function query(url: string, sql: string, params: unknown[] = []) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows;
  } finally {
    await c.end();
  }
}
async function until(ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('PostgreSQL store engine', () => {
  it('keeps records across a reopen and never reuses an id', async () => {
    const url = await freshDatabase(server);
    const s = await PgStore.open(url);
    const a = await s.write((tx) => tx.insert<TagRecord>('tags', tag('a')));
    const b = await s.write((tx) => tx.insert<TagRecord>('tags', tag('b')));
    await s.write((tx) => tx.delete('tags', b.id));
    await s.write((tx) => tx.putBlob('secrets', a.id, { private_key_pem: 'k' }));
    await s.close();
    const s2 = await open(url);
    expect(s2.get<TagRecord>('tags', a.id)?.name).toBe('a');
    expect(s2.get('tags', b.id)).toBeUndefined();
    expect(await s2.readBlob('secrets', a.id)).toEqual({ private_key_pem: 'k' });
    const c = await s2.write((tx) => tx.insert<TagRecord>('tags', tag('c')));
    expect(c.id).toBe(b.id + 1);
    await expect(s.write((tx) => tx.insert('tags', tag('late')))).rejects.toThrow(/closed/);
  });

  it('rolls back a write that throws and keeps the others of its group, in memory and in the database', async () => {
    const url = await freshDatabase(server);
    const s = await open(url);
    const results = await Promise.allSettled([
      s.write((tx) => tx.insert<TagRecord>('tags', tag('ok1'))),
      s.write((tx) => {
        tx.insert('tags', tag('doomed'));
        tx.putBlob('site-data', 9, { x: 1 });
        throw new Error('no');
      }),
      s.write((tx) => tx.insert<TagRecord>('tags', tag('ok2'))),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect([...s.all<TagRecord>('tags')].map((t) => t.name)).toEqual(['ok1', 'ok2']);
    expect(await s.readBlob('site-data', 9)).toBeNull();
    const rows = await query(url, `SELECT data->>'name' AS name FROM sitefleet_rows WHERE kind = 'tags' AND data IS NOT NULL ORDER BY id`);
    expect(rows.map((r) => r.name)).toEqual(['ok1', 'ok2']);
  });

  it('groups concurrent writes into few commits', async () => {
    const url = await freshDatabase(server);
    const s = await open(url);
    const before = s.commits;
    await Promise.all(Array.from({ length: 200 }, (_, i) => s.write((tx) => tx.insert<TagRecord>('tags', tag(`t${i}`)))));
    expect(s.count('tags')).toBe(200);
    expect(s.commits - before).toBeLessThan(20);
  });

  it('lets another store on the database see a commit on its next reads, deletes included', async () => {
    const url = await freshDatabase(server);
    const a = await open(url);
    const b = await open(url);
    await a.write((tx) => {
      for (let i = 0; i < 300; i++) tx.insert('sites', { url: `https://s${i}.test/`, name: `s${i}` });
    });
    await until(() => b.count('sites') === 300);
    const v = b.version('sites');
    await a.write((tx) => {
      tx.delete('sites', 260);
      tx.put('sites', { id: 5, url: 'https://s4.test/', name: 'renamed' });
    });
    await until(() => b.count('sites') === 299);
    expect(b.get<{ id: number; name: string }>('sites', 5)?.name).toBe('renamed');
    expect(b.version('sites')).toBeGreaterThan(v);
    const c = await b.write((tx) => tx.insert<{ id: number }>('sites', { url: 'https://new.test/' }));
    expect(c.id).toBe(301);
    await until(() => a.get('sites', 301) !== undefined);
  });

  it('opens onto every live record (id 0 included), cold records by presence, ids above deleted ones, then catches up', async () => {
    const url = await freshDatabase(server);
    const a = await open(url);
    const n = 1001;
    await a.write((tx) => {
      for (let i = 0; i < n; i++) tx.insert<TagRecord>('tags', tag(`t${i}`));
      tx.put('monitors', { id: 0, interval: 300 }); // a singleton at id 0, as the fleet's monitor settings are
      for (let i = 0; i < 3; i++) tx.insert('audit', { at: i });
      tx.putBlob('secrets', 1, { private_key_pem: 'k' });
    });
    await a.write((tx) => {
      tx.delete('tags', n); // the highest id: deleted rows are not read on opening, their ids are still taken
      tx.delete('audit', 2);
    });
    const b = await open(url);
    expect(b.count('tags')).toBe(n - 1);
    expect(b.get<TagRecord>('tags', 1)?.name).toBe('t0');
    expect(b.get<TagRecord>('tags', 500)?.name).toBe('t499');
    expect(b.get<TagRecord>('tags', n - 1)?.name).toBe(`t${n - 2}`);
    expect(b.get('tags', n)).toBeUndefined();
    expect(b.get('monitors', 0)).toEqual({ id: 0, interval: 300 });
    expect(b.count('audit')).toBe(2);
    expect(await b.readBlob('secrets', 1)).toEqual({ private_key_pem: 'k' });
    expect((await b.write((tx) => tx.insert<TagRecord>('tags', tag('next')))).id).toBe(n + 1);
    // What another store commits after the opening still reaches it, an edit of a blob it read included.
    await a.write((tx) => {
      tx.put('tags', { ...tag('renamed'), id: 1 });
      tx.putBlob('secrets', 1, { private_key_pem: 'k2' });
    });
    await until(() => b.get<TagRecord>('tags', 1)?.name === 'renamed');
    expect(await b.readBlob('secrets', 1)).toEqual({ private_key_pem: 'k2' });
  });

  it('a write starts from the latest commit of any store: no lost update, no duplicate, ids unique', async () => {
    const url = await freshDatabase(server);
    const stores = [await open(url), await open(url), await open(url)];
    await stores[0]!.write((tx) => tx.put('settings', { id: 1, counter: 0 }));
    // Each write is a read-modify-write of one counter and a "create a tag unless the name exists" rule.
    const bump = (tx: Tx) => {
      const cur = tx.get<{ id: number; counter: number }>('settings', 1)!;
      tx.put('settings', { ...cur, counter: cur.counter + 1 });
    };
    const createOnce = (name: string) => (tx: Tx) => {
      for (const t of tx.all<TagRecord>('tags')) if (t.name === name) throw new Error('exists');
      return tx.insert<TagRecord>('tags', tag(name));
    };
    const jobs: Array<Promise<unknown>> = [];
    for (let i = 0; i < 60; i++)
      for (const s of stores)
        jobs.push(
          s.write(bump),
          s.write(createOnce(`n${i % 10}`)).catch(() => null),
          s.write((tx) => tx.insert('costs', { name: `c${i}` })),
        );
    await Promise.all(jobs);
    const fresh = await open(url);
    expect(fresh.get<{ id: number; counter: number }>('settings', 1)!.counter).toBe(180);
    expect([...fresh.all<TagRecord>('tags')].map((t) => t.name).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `n${i}`).sort());
    const ids = [...fresh.all('costs')].map((c) => c.id);
    expect(ids).toHaveLength(180);
    expect(new Set(ids).size).toBe(180);
  });

  it("refuses a write whose value the database cannot hold with a 400 that blames the value, and memory keeps the database's truth", async () => {
    const url = await freshDatabase(server);
    const s = await open(url);
    await s.write((tx) => tx.insert<TagRecord>('tags', tag('kept')));
    // A NUL character cannot be stored in jsonb: the engine refuses it before the commit (as the lowdb engine does).
    const bad = s.write((tx) => {
      tx.put('tags', { ...tx.get<TagRecord>('tags', 1)!, name: 'changed' });
      tx.insert<TagRecord>('tags', tag('a\u0000b'));
    });
    await expect(bad).rejects.toMatchObject({ code: 'svc_invalid_input', status: 400, message: expect.stringMatching(/NUL character/) });
    // A value the database itself refuses (a constraint sitefleet does not know about) is the value's fault too.
    await query(url, `ALTER TABLE sitefleet_rows ADD CONSTRAINT no_poison CHECK (data IS NULL OR strpos(data::text, 'poison') = 0)`);
    const refused = s.write((tx) => {
      tx.put('tags', { ...tx.get<TagRecord>('tags', 1)!, name: 'changed' });
      tx.insert<TagRecord>('tags', tag('poison'));
    });
    await expect(refused).rejects.toMatchObject({
      code: 'svc_invalid_input',
      status: 400,
      message: expect.stringMatching(/database refused a value/),
    });
    expect([...s.all<TagRecord>('tags')].map((t) => t.name)).toEqual(['kept']);
    // The refused commit drew id 2 from the tags' sequence (format 3): it is never handed out again.
    const next = await s.write((tx) => tx.insert<TagRecord>('tags', tag('next')));
    expect(next.id).toBe(3);
  });

  it('stores any text exactly: quotes, backslashes, newlines, dollar signs, non-ASCII', async () => {
    const url = await freshDatabase(server);
    const s = await open(url);
    const name = `it's "quoted" \\ back\\slash\n'; DROP TABLE sitefleet_rows; -- $1 $$ \${x} ☃ 😀 \u2028 E'\\x'`;
    const rec = await s.write((tx) => tx.insert<TagRecord>('tags', { ...tag(name), color: '\\' }));
    await s.write((tx) => tx.putBlob('site-data', rec.id, { note: name, nested: [{ q: "'" }] }));
    const again = await open(url);
    expect(again.get<TagRecord>('tags', rec.id)).toEqual(rec);
    expect(await again.readBlob('site-data', rec.id)).toEqual({ note: name, nested: [{ q: "'" }] });
  });

  it('answers 503 while its connection is gone and works again on the next write', async () => {
    const url = await freshDatabase(server);
    const s = await open(url);
    await s.write((tx) => tx.insert<TagRecord>('tags', tag('before')));
    // A read, so that a reader's connection is open (idle) when the server ends it.
    expect(await s.readBlob('site-data', 1, { cache: false })).toBeNull();
    // The server ends every connection of this database (a restart or failover looks the same to the client).
    const db = new URL(url).pathname.slice(1);
    await query(server, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [db]);
    // Until they are gone: a backend tells its client it was terminated before it leaves pg_stat_activity.
    await waitFor(
      async () => (await query(server, `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1`, [db]))[0].n,
      (n) => n === 0,
    );
    await expect(s.write((tx) => tx.insert<TagRecord>('tags', tag('lost')))).rejects.toMatchObject({
      code: 'svc_store_unavailable',
      status: 503,
    });
    expect(s.count('tags')).toBe(1);
    const after = await s.write((tx) => tx.insert<TagRecord>('tags', tag('after')));
    expect(after.id).toBe(2);
    // The readers' pool dropped its ended connection (the process goes on) and reads on a new one.
    await s.write((tx) => tx.putBlob('site-data', 1, { note: 'after' }));
    expect(await s.readBlob('site-data', 1, { cache: false })).toEqual({ note: 'after' });
    expect(await s.readBlobs('site-data', [1, 2])).toEqual(
      new Map([
        [1, { note: 'after' }],
        [2, null],
      ]),
    );
    await s.sync();
    const other = await open(url);
    expect([...other.all<TagRecord>('tags')].map((t) => t.name)).toEqual(['before', 'after']);
  });

  it('never shows the database password, and takes the URL from SITEFLEET_DATABASE_URL', () => {
    const cfg = loadConfig({}, { SITEFLEET_DATABASE_URL: 'postgres://fleet:s3cr%40t@db.internal:5432/sitefleet' });
    expect(cfg.databaseUrl).toBe('postgres://fleet:s3cr%40t@db.internal:5432/sitefleet');
    expect(storeLocation(cfg)).toBe('postgres://fleet:***@db.internal:5432/sitefleet');
    expect(loadConfig({}, {}).databaseUrl).toBeNull();
    expect(() => loadConfig({ databaseUrl: 'mysql://x/y' }, {})).toThrow(/--database-url must be a postgres:\/\/ or postgresql:\/\/ URL/);
  });

  it('creates the schema at the current format and refuses one written by a newer sitefleet', async () => {
    const url = await freshDatabase(server);
    await (await PgStore.open(url)).close();
    expect((await query(url, `SELECT value FROM sitefleet_meta WHERE key = 'format'`))[0].value).toBe(PG_FORMAT);
    await query(url, `UPDATE sitefleet_meta SET value = '99' WHERE key = 'format'`);
    await expect(PgStore.open(url)).rejects.toThrow(/format 99, written by a newer sitefleet/);
    await expect(PgStore.open('postgres://nobody@127.0.0.1:1/none')).rejects.toThrow(
      /Cannot reach the database at postgres:\/\/nobody@127\.0\.0\.1:1\/none/,
    );
  });

  it('keeps every acknowledged write when the process is killed with SIGKILL', async () => {
    for (let round = 0; round < 2; round++) {
      const url = await freshDatabase(server);
      const acked = await acknowledgedBeforeKill(
        `(await import(${JSON.stringify(PG_STORE_JS)})).PgStore.open(${JSON.stringify(url)})`,
        30 + round * 40,
      );
      const s = await open(url);
      const names = new Set([...s.all<{ id: number; name: string }>('tags')].map((t) => t.name));
      for (const n of acked) expect(names.has(n), `${n} was acknowledged`).toBe(true);
    }
  });
});
