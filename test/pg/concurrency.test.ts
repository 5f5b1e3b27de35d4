// Issue 34: commits lock what they touch, not everything. Two stores on one database (two connections each, as two
// processes have) commit writes to different records side by side; conflicting read-modify-writes lose no update;
// concurrent creates of one name leave exactly one; a commit that ends late with a lower seq is not missed by a store
// catching up; a database made at format 1 opens at format 2 with every record; a batch past MAX_LOCKS commits serially.
// A raw connection holding the advisory lock a commit would take stands in for "a commit held open", so that the tests
// wait for events (a backend waiting on a lock, as pg_locks shows it), never for time.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_LOCKS, PG_FORMAT, PgStore, collectionKey, recordKey } from '../../src/store/pg-store.js';
import type { TagRecord } from '../../src/store/records.js';
import type { Tx } from '../../src/store/engine.js';
import { freshDatabase, testPgUrl } from '../support/postgres.js';
import { until } from '../support/wait.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { closeServices, openServices } from '../../src/domain/index.js';
import { VULN_LOG_MAX } from '../../src/domain/reports/service.js';
import { TagService } from '../../src/domain/tags.js';
import { AuditService } from '../../src/domain/audit.js';

const server = testPgUrl()!;
const opened: PgStore[] = [];
const clients: pg.Client[] = [];
afterAll(async () => {
  for (const s of opened) await s.close().catch(() => {});
  for (const c of clients) await c.end().catch(() => {});
});

async function open(url: string): Promise<PgStore> {
  const s = await PgStore.open(url);
  opened.push(s);
  return s;
}
async function client(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  clients.push(c);
  return c;
}
/** How many sitefleet connections on this database wait for an advisory lock (a commit blocked by a held one). */
async function waiting(c: pg.Client): Promise<number> {
  const r = await c.query(
    `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND NOT l.granted AND a.application_name = 'sitefleet' AND a.datname = current_database()`,
  );
  return r.rows[0].n as number;
}
/** Holds an advisory lock in an open transaction, as a commit in another process would, until released. */
async function hold(url: string, key: bigint): Promise<{ release: () => Promise<void> }> {
  const c = await client(url);
  await c.query('BEGIN');
  await c.query('SELECT pg_advisory_xact_lock($1::bigint)', [String(key)]);
  return { release: async () => void (await c.query('COMMIT')) };
}
const tag = (name: string) => ({ name, color: null, created_at: '', updated_at: '' });
/** Creates a tag unless one has the name (the uniqueness check the tag service makes, by enumerating tags). */
function createUnique(tx: Tx, name: string): TagRecord {
  for (const t of tx.all<TagRecord>('tags')) if (t.name === name) throw new Error(`taken: ${name}`);
  return tx.insert<TagRecord>('tags', tag(name));
}
interface Counter {
  id: number;
  n: number;
}
const increment = (tx: Tx) => {
  const c = tx.get<Counter>('settings', 1)!;
  return tx.put<Counter>('settings', { ...c, n: c.n + 1 }).n;
};

describe('PostgreSQL engine: commits lock what they touch', () => {
  it('commits a write to one site while another store’s commit on another site is held open', async () => {
    const url = await freshDatabase(server);
    const a = await open(url);
    const b = await open(url);
    await a.write((tx) => {
      tx.insert('sites', { url: 'https://one.test/', name: 'one', notes: '' });
      tx.insert('sites', { url: 'https://two.test/', name: 'two', notes: '' });
    });
    await b.sync();
    const watch = await client(url);
    const held = await hold(url, recordKey('sites', 1));
    // a's commit on site 1 opens its transaction and waits there.
    let aDone = false;
    const aWrite = a
      .write((tx) => tx.put('sites', { ...tx.get<{ id: number; notes: string }>('sites', 1)!, notes: 'from a' }))
      .then(() => (aDone = true));
    await until(
      () => waiting(watch),
      (n) => n === 1,
    );
    // b's commit on site 2 needs nothing a holds: it commits meanwhile.
    await b.write((tx) => tx.put('sites', { ...tx.get<{ id: number; notes: string }>('sites', 2)!, notes: 'from b' }));
    expect(aDone).toBe(false);
    expect(await waiting(watch)).toBe(1);
    await held.release();
    await aWrite;
    const rows = await watch.query(`SELECT id, data->>'notes' AS notes FROM sitefleet_rows WHERE kind = 'sites' ORDER BY id`);
    expect(rows.rows).toEqual([
      { id: 1, notes: 'from a' },
      { id: 2, notes: 'from b' },
    ]);
  });

  it('loses no increment of one counter from two stores: a commit reads the newest value under its lock, 2N end at 2N', async () => {
    const url = await freshDatabase(server);
    const a = await open(url);
    const b = await open(url);
    await a.write((tx) => tx.put<Counter>('settings', { id: 1, n: 0 }));
    await b.sync();
    // Both have n = 0 in memory when they queue, and wait for the record's lock; the second to get it reads n = 1.
    const watch = await client(url);
    const held = await hold(url, recordKey('settings', 1));
    const first = [a.write(increment), b.write(increment)];
    await until(
      () => waiting(watch),
      (n) => n === 2,
    );
    expect([a.get<Counter>('settings', 1)!.n, b.get<Counter>('settings', 1)!.n]).toEqual([0, 0]);
    await held.release();
    expect((await Promise.all(first)).sort()).toEqual([1, 2]);
    // Then N from each, all at once.
    const N = 150;
    await Promise.all(Array.from({ length: N }, () => [a.write(increment), b.write(increment)]).flat());
    await a.sync();
    await b.sync();
    expect(a.get<Counter>('settings', 1)!.n).toBe(2 * N + 2);
    expect(b.get<Counter>('settings', 1)!.n).toBe(2 * N + 2);
    const row = await watch.query(`SELECT (data->>'n')::int AS n FROM sitefleet_rows WHERE kind = 'settings' AND id = 1`);
    expect(row.rows[0].n).toBe(2 * N + 2);
  });

  it('creates a name once when two stores create it at once, by enumeration, and never reuses an id', async () => {
    const url = await freshDatabase(server);
    const a = await open(url);
    const b = await open(url);
    const watch = await client(url);
    // Both enumerate the tags (no "x"), then wait for the collection's lock; the second finds "x" there and refuses.
    const held = await hold(url, collectionKey('tags'));
    const both = Promise.allSettled([a.write((tx) => createUnique(tx, 'x')), b.write((tx) => createUnique(tx, 'x'))]);
    await until(
      () => waiting(watch),
      (n) => n === 2,
    );
    await held.release();
    const r = await both;
    expect(r.map((x) => x.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(String((r.find((x) => x.status === 'rejected') as PromiseRejectedResult).reason)).toMatch(/taken: x/);
    // Then 40 names, each created by both stores at once.
    const names = Array.from({ length: 40 }, (_, i) => `n${i}`);
    const results = await Promise.allSettled(
      names.flatMap((n) => [a.write((tx) => createUnique(tx, n)), b.write((tx) => createUnique(tx, n))]),
    );
    expect(results.filter((x) => x.status === 'fulfilled')).toHaveLength(40);
    const rows = await watch.query(`SELECT id, data->>'name' AS name FROM sitefleet_rows WHERE kind = 'tags' AND data IS NOT NULL`);
    const byName = new Map<string, number>();
    for (const row of rows.rows as Array<{ name: string }>) byName.set(row.name, (byName.get(row.name) ?? 0) + 1);
    expect(byName.size).toBe(41);
    expect([...byName.values()].every((n) => n === 1)).toBe(true);
    expect(new Set(rows.rows.map((row: { id: number }) => row.id)).size).toBe(41);
    await a.sync();
    await b.sync();
    expect(a.count('tags')).toBe(41);
    expect(b.count('tags')).toBe(41);
  });

  it('does not miss a commit that ends after a later one: catch-up reads by snapshot horizon, not by seq', async () => {
    const url = await freshDatabase(server);
    const a = await open(url);
    const observer = await open(url);
    // Another process's commit draws its seq first and ends last.
    const late = await client(url);
    await late.query('BEGIN');
    await late.query(
      `INSERT INTO sitefleet_rows (kind, id, seq, data) VALUES ('tags', 100, nextval('sitefleet_seq'), '{"id":100,"name":"late","color":null,"created_at":"","updated_at":""}');
       SELECT setval('sitefleet_id_tags', 100)`,
    );
    await a.write((tx) => tx.insert<TagRecord>('tags', tag('early')));
    await observer.sync();
    expect([...observer.all<TagRecord>('tags')].map((t) => t.name)).toEqual(['early']);
    await late.query('COMMIT');
    await observer.sync();
    expect([...observer.all<TagRecord>('tags')].map((t) => t.name).sort()).toEqual(['early', 'late']);
    // Ids go on from the tags' sequence, which the late commit drew to 100 ('early' took 101).
    await a.sync();
    expect((await a.write((tx) => tx.insert<TagRecord>('tags', tag('next')))).id).toBe(102);
  });

  it(`commits a batch that would take more than ${MAX_LOCKS} locks the serial way, and one of just ${MAX_LOCKS} optimistically`, async () => {
    const url = await freshDatabase(server);
    const a = await open(url);
    // LOCK_KEY, the tags (inserted into: the whole collection) and one lock a site looked up.
    const lookUp = (sites: number, name: string) => (tx: Tx) => {
      for (let i = 1; i <= sites; i++) tx.get('sites', i);
      return tx.insert<TagRecord>('tags', tag(name));
    };
    await a.write(lookUp(MAX_LOCKS - 2, 'under'));
    expect(a.conflicts.serial).toBe(0);
    await a.write(lookUp(MAX_LOCKS - 1, 'past'));
    expect(a.conflicts.serial).toBe(1);
    const other = await open(url);
    expect([...other.all<TagRecord>('tags')].map((t) => t.name)).toEqual(['under', 'past']);
  });

  it('runs a write function more than once (a dry run finds its locks) without a trace of the first run: the vulnerability log trims its oldest entry', async () => {
    const url = await freshDatabase(server);
    const dataDir = mkdtempSync(join(tmpdir(), 'sitefleet-pgconc-'));
    const s = await openServices(loadConfig({ dataDir, databaseUrl: url }, {}));
    try {
      await s.store.write((tx) => {
        for (let i = 0; i < VULN_LOG_MAX; i++) tx.insert('vulnerability_log', { at: '2026-01-01T00:00:00.000Z', site_id: 1 });
      });
      const install = { site: { id: 1, url: 'https://one.test/' }, type: 'plugin', slug: 'p', version: '1.0', fixed_in: '1.1' };
      await s.reports.logVulnerability({ event: 'vulnerability.found', data: { vulnerability: { key: 'K' }, installs: [install] } });
      // The oldest went, nothing else did.
      expect(s.store.get('vulnerability_log', 1)).toBeUndefined();
      expect(s.store.get('vulnerability_log', 2)).toBeDefined();
      expect(s.store.count('vulnerability_log')).toBe(VULN_LOG_MAX);
      await s.reports.logVulnerability({ event: 'vulnerability.found', data: { vulnerability: { key: 'K' }, installs: [install] } });
      expect(s.store.get('vulnerability_log', 2)).toBeUndefined();
      expect(s.store.get('vulnerability_log', 3)).toBeDefined();
    } finally {
      await closeServices(s);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('opens a database made at format 1 at the current format with every record, deleted ids not reused', async () => {
    const url = await freshDatabase(server);
    const c = await client(url);
    // What the format-1 engine created and wrote: its schema, rows by seq, a deleted row, the counters.
    await c.query(`
      CREATE TABLE sitefleet_meta (key text PRIMARY KEY, value jsonb NOT NULL);
      CREATE TABLE sitefleet_rows (kind text NOT NULL, id integer NOT NULL, seq bigint NOT NULL, data jsonb, PRIMARY KEY (kind, id));
      CREATE INDEX sitefleet_rows_seq ON sitefleet_rows (seq);
      INSERT INTO sitefleet_meta VALUES ('format', '1'), ('counters', '{"tags": 7, "sites": 2}');
      INSERT INTO sitefleet_rows VALUES
        ('sites', 1, 1, '{"id":1,"url":"https://one.test/","name":"one"}'),
        ('sites', 2, 2, '{"id":2,"url":"https://two.test/","name":"two"}'),
        ('tags', 1, 3, '{"id":1,"name":"kept","color":null,"site_ids":[1,2],"created_at":"","updated_at":""}'),
        ('tags', 2, 4, NULL),
        ('tags', 3, 6, '{"id":3,"name":"KEPT","color":null,"created_at":"","updated_at":""}'),
        ('secrets', 1, 5, '{"private_key_pem":"k"}');`);
    const a = await open(url);
    expect((await c.query(`SELECT value FROM sitefleet_meta WHERE key = 'format'`)).rows[0].value).toBe(PG_FORMAT);
    expect([...a.all<{ id: number; name: string }>('sites')].map((s) => s.name)).toEqual(['one', 'two']);
    // Format 4 keeps tag membership on the sites.
    expect([...a.all<{ id: number; tag_ids?: number[] }>('sites')].map((s) => s.tag_ids)).toEqual([[1], [1]]);
    expect(a.get<TagRecord>('tags', 1)).not.toHaveProperty('site_ids');
    expect(a.get('tags', 2)).toBeUndefined();
    // Format 3 keys the names: the lowest id keeps a key old data holds twice (opening does not fail for it).
    const keys = await c.query(`SELECT id, ukey FROM sitefleet_rows WHERE kind = 'tags' AND data IS NOT NULL ORDER BY id`);
    expect(keys.rows).toEqual([
      { id: 1, ukey: 'kept' },
      { id: 3, ukey: null },
    ]);
    expect(await a.readBlob('secrets', 1)).toEqual({ private_key_pem: 'k' });
    expect((await a.write((tx) => tx.insert<TagRecord>('tags', tag('new')))).id).toBe(8);
    // A second store reads the migrated rows and the new one alike, and both keep committing.
    const b = await open(url);
    expect([...b.all<TagRecord>('tags')].map((t) => t.name).sort()).toEqual(['KEPT', 'kept', 'new']);
    await Promise.all([a.write(increment0), b.write((tx) => tx.insert('sites', { url: 'https://three.test/', name: 'three' }))]);
    await a.sync();
    expect(a.count('sites')).toBe(3);
  });
});

const increment0 = (tx: Tx) => tx.put<Counter>('settings', { id: 1, n: (tx.get<Counter>('settings', 1)?.n ?? 0) + 1 });

describe('PostgreSQL engine: unique keys are a constraint, inserts take ids from a sequence (format 3)', () => {
  it('creates tags with unique names from two stores while the tags collection is held shared: no create locks it whole', async () => {
    const url = await freshDatabase(server);
    const a = await open(url);
    const b = await open(url);
    const [ta, tb] = [new TagService(a), new TagService(b)];
    // Another writer of the tags holds their collection lock shared: a create that enumerated the tags (or inserted
    // blind) would need it exclusive and wait; these commit meanwhile.
    const c = await client(url);
    await c.query('BEGIN');
    await c.query('SELECT pg_advisory_xact_lock_shared($1::bigint)', [String(collectionKey('tags'))]);
    const made = await Promise.all(Array.from({ length: 20 }, (_, i) => [ta.add({ name: `a-${i}` }), tb.add({ name: `b-${i}` })]).flat());
    await c.query('COMMIT');
    expect(new Set(made.map((t) => t.id)).size).toBe(40);
    expect(a.conflicts.serial + b.conflicts.serial).toBe(0);
    await a.sync();
    expect(a.count('tags')).toBe(40);
  });

  it('refuses a name another process is committing: the insert meets the unique index, runs again, and the service says svc_tag_exists', async () => {
    const url = await freshDatabase(server);
    const a = await open(url);
    const tags = new TagService(a);
    // Another process's commit of "Dup" is under way: not yet visible, so the service's in-memory check passes.
    const other = await client(url);
    await other.query('BEGIN');
    await other.query(
      `INSERT INTO sitefleet_rows (kind, id, seq, data, ukey) VALUES ('tags', nextval('sitefleet_id_tags'), nextval('sitefleet_seq'),
         '{"id":0,"name":"Dup","color":null,"created_at":"","updated_at":""}', 'dup')`,
    );
    const watch = await client(url);
    const create = tags.add({ name: 'dUP' });
    // Heard from now on: its refusal may come while the COMMIT below is answered, before the assertion awaits it (a
    // rejection with no handler yet, which the lane once reported as unhandled).
    create.catch(() => {});
    // The commit waits on the index entry of the uncommitted row (a transaction lock, not an advisory one).
    await until(
      async () =>
        (
          await watch.query(
            `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid
              WHERE NOT l.granted AND s.application_name = 'sitefleet' AND s.datname = current_database()`,
          )
        ).rows[0].n as number,
      (n) => n === 1,
    );
    await other.query('COMMIT');
    await expect(create).rejects.toMatchObject({ code: 'svc_tag_exists', status: 409 });
    expect(a.conflicts.retried).toBeGreaterThan(0);
    expect([...a.all<TagRecord>('tags')].map((t) => t.name)).toEqual(['Dup']);
    // Had it rolled back, the create would have gone through: a name is free again once nobody commits it.
    await other.query('BEGIN');
    await other.query(
      `INSERT INTO sitefleet_rows (kind, id, seq, data, ukey) VALUES ('tags', nextval('sitefleet_id_tags'), nextval('sitefleet_seq'),
         '{"id":0,"name":"Gone","color":null,"created_at":"","updated_at":""}', 'gone')`,
    );
    const second = tags.add({ name: 'gone' });
    await until(
      async () => (await watch.query(`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted`)).rows[0].n as number,
      (n) => n === 1,
    );
    await other.query('ROLLBACK');
    expect((await second).name).toBe('gone');
  });

  it('two stores create the same names at once through the tag service: exactly one of each, the other caller gets svc_tag_exists', async () => {
    const url = await freshDatabase(server);
    const a = await open(url);
    const b = await open(url);
    const [ta, tb] = [new TagService(a), new TagService(b)];
    const names = Array.from({ length: 30 }, (_, i) => `same-${i}`);
    const results = await Promise.allSettled(names.flatMap((n) => [ta.add({ name: n }), tb.add({ name: n.toUpperCase() })]));
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(rejected).toHaveLength(30);
    for (const r of rejected) expect(r.reason).toMatchObject({ code: 'svc_tag_exists', status: 409 });
    const c = await client(url);
    const rows = await c.query(
      `SELECT lower(data->>'name') AS n, count(*)::int AS k FROM sitefleet_rows WHERE kind = 'tags' AND data IS NOT NULL GROUP BY 1`,
    );
    expect(rows.rows).toHaveLength(30);
    expect(rows.rows.every((r: { k: number }) => r.k === 1)).toBe(true);
  });

  it('a write that skips the service check still cannot duplicate a key: its caller gets the key’s error (tags and client e-mails)', async () => {
    const url = await freshDatabase(server);
    const a = await open(url);
    await a.write((tx) => tx.insert<TagRecord>('tags', tag('Only')));
    await expect(a.write((tx) => tx.insert<TagRecord>('tags', tag('ONLY')))).rejects.toMatchObject({ code: 'svc_tag_exists', status: 409 });
    await a.write((tx) => tx.insert('clients', { name: 'c1', email: 'Ann@Example.test' }));
    await expect(a.write((tx) => tx.insert('clients', { name: 'c2', email: 'ann@example.TEST' }))).rejects.toMatchObject({
      code: 'svc_client_exists',
    });
    // Empty e-mails are not a key: any number of clients may have none.
    await a.write((tx) => [tx.insert('clients', { name: 'c3', email: '' }), tx.insert('clients', { name: 'c4', email: '' })]);
    // In a group with other writes, only the write that breaks the key fails.
    const group = await Promise.allSettled([
      a.write((tx) => tx.insert<TagRecord>('tags', tag('fine-1'))),
      a.write((tx) => tx.insert<TagRecord>('tags', tag('only'))),
      a.write((tx) => tx.insert<TagRecord>('tags', tag('fine-2'))),
    ]);
    expect(group.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(a.count('tags')).toBe(3);
  });

  it('an inserted id already in use (a sequence behind rows written by hand) fails no write: the sequence is raised and the commit runs again', async () => {
    const url = await freshDatabase(server);
    const a = await open(url);
    for (let i = 0; i < 3; i++) await a.write((tx) => tx.insert<TagRecord>('tags', tag(`t${i}`)));
    const c = await client(url);
    await c.query(`SELECT setval('sitefleet_id_tags', 1)`);
    const rec = await a.write((tx) => tx.insert<TagRecord>('tags', tag('after')));
    expect(rec.id).toBe(4);
    expect([...a.all<TagRecord>('tags')].map((t) => t.name)).toEqual(['t0', 't1', 't2', 'after']);
  });
});

describe('PostgreSQL engine: audit appends from two processes on different lanes share no lock', () => {
  it('appends on one lane while a commit holding the other lane’s head is open; the chain verifies from a third store', async () => {
    const url = await freshDatabase(server);
    const [a, b] = [await open(url), await open(url)];
    const [la, lb] = [new AuditService(a), new AuditService(b)];
    la.lane = 1;
    lb.lane = 2;
    await la.system('first', null);
    await lb.system('first', null);
    const watch = await client(url);
    const held = await hold(url, recordKey('audit_head', la.lane + 1));
    let aDone = false;
    const aWrite = la.system('waits for its head', null).then(() => (aDone = true));
    await until(
      () => waiting(watch),
      (n) => n === 1,
    );
    // b's appends need nothing a's lane holds: not its head, not the entries' collection whole, not an id lock.
    for (let i = 0; i < 5; i++) await lb.system('meanwhile', { i });
    expect(aDone).toBe(false);
    await held.release();
    await aWrite;
    await Promise.all(Array.from({ length: 20 }, (_, i) => [la.system('both', { i }), lb.system('both', { i })]).flat());
    const c = await open(url);
    const v = await new AuditService(c).verify();
    expect(v).toMatchObject({ ok: true, entries: 48 });
  });
});

describe('the rule that a write function may run more than once, checked (SITEFLEET_CHECK_REPLAY, set in this lane)', () => {
  it('fails a write whose function changes something outside its Tx and depends on it, and writes nothing of it', async () => {
    expect(process.env.SITEFLEET_CHECK_REPLAY).toBe('1');
    const url = await freshDatabase(server);
    const a = await open(url);
    let calls = 0;
    const bad = a.write((tx) => tx.put<Counter>('settings', { id: 1, n: ++calls }));
    await expect(bad).rejects.toThrow(/did not do the same when run again \(write 0\)/);
    expect(a.get('settings', 1)).toBeUndefined();
    // Times a moment apart are the same time; a function that only reads its Tx passes.
    await a.write((tx) => tx.put('settings', { id: 2, at: new Date().toISOString(), ms: Date.now() }));
    expect(a.get('settings', 2)).toBeDefined();
  });
});
