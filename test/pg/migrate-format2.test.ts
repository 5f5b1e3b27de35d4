// `sitefleet migrate` on a fleet the format-2 engine wrote (test/fixtures/pg-format2, by the code of 249b365) and on
// one the format-1 engine wrote (test/fixtures/pg-format1, by 32a88e9: main's engine until format 3 was merged; format
// 2 lived on a branch). Both were made by test/fixtures/pg-format2/make.mjs through the old code's own services, REST
// door and CLI. The schema goes to the current format and nothing is lost: every row as it was, every record and blob
// read back by today's engine, unique keys filled, new ids above every old one, the audit chain whole, and a serve on
// it answering the old credentials. For each fixture the tests run in order on one database: the second migrates it,
// the others look at what it became.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BLOB_KINDS,
  COLD_COLLECTIONS,
  COLLECTION_NAMES,
  RECORD_READ_BATCH,
  type Blob,
  type CollectionName,
  type Rec,
} from '../../src/store/engine.js';
import { PG_FORMAT, PgStore } from '../../src/store/pg-store.js';
import { cli, serveProcess, type Proc } from '../support/process.js';
import { freshDatabase, loadSql, testPgUrl } from '../support/postgres.js';
import { startServer, tempDir } from '../support/server.js';
import { until } from '../support/wait.js';

const server = testPgUrl()!;

interface Row {
  kind: string;
  id: number;
  seq: string;
  data: unknown;
}

interface Creds {
  read_write_key: string;
  read_key: string;
  cli_write_key: string;
  admin: { name: string; password: string };
  jobs: { completed: string; queued: string };
}

/**
 * The rows as format 4 keeps them: each tag's site_ids moved onto its sites as tag_ids (ascending), with a new seq;
 * every other row as it was. Worked out here from the old rows, not by the migration's code.
 */
function moved(rows: Row[]): Row[] {
  const tagsOf = new Map<number, number[]>();
  for (const r of rows) {
    if (r.kind !== 'tags' || r.data === null) continue;
    for (const site of (r.data as { site_ids?: number[] }).site_ids ?? []) tagsOf.set(site, [...(tagsOf.get(site) ?? []), r.id]);
  }
  return rows.map((r) => {
    if (r.data === null) return r;
    if (r.kind === 'tags') {
      const { site_ids: _, ...rest } = r.data as { site_ids?: number[] };
      return { ...r, seq: expect.any(String) as string, data: rest };
    }
    const tag_ids = r.kind === 'sites' ? tagsOf.get(r.id) : undefined;
    if (!tag_ids) return r;
    return { ...r, seq: expect.any(String) as string, data: { ...(r.data as object), tag_ids: tag_ids.sort((a, b) => a - b) } };
  });
}

describe.each([2, 1])('sitefleet migrate on a fleet written by the format-%i engine', (old) => {
  const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/pg-format${old}/${name}`, import.meta.url));
  let creds: Creds;
  let url: string;
  let db: pg.Client;
  /** Every row of the fixture as the old format left it (deleted ones included), by kind and id. */
  let before: Row[];
  let floors: Record<string, number>;
  const rowsOf = async (): Promise<Row[]> => (await db.query<Row>('SELECT kind, id, seq, data FROM sitefleet_rows ORDER BY kind, id')).rows;
  const live = (kind: string) => before.filter((r) => r.kind === kind && r.data !== null);
  const dataOf = (kind: string, id: number) => before.find((r) => r.kind === kind && r.id === id)!.data;
  /** The highest id a collection has used: its rows' (deleted ones included) and the id floor format 1 kept. */
  const topId = (kind: string) => Math.max(floors[kind] ?? 0, ...before.filter((r) => r.kind === kind).map((r) => r.id));
  /** A REST call, with the fixture's read_write key unless another is given. */
  const api = (p: Proc & { url: string }, path: string, init: { method?: string; json?: unknown; token?: string; auth?: string } = {}) =>
    request(p, path, { ...init, token: init.token ?? creds.read_write_key });
  const format = async () => (await db.query(`SELECT value FROM sitefleet_meta WHERE key = 'format'`)).rows[0].value as number;

  beforeAll(async () => {
    creds = JSON.parse(readFileSync(fixture('credentials.json'), 'utf8')) as Creds;
    url = await freshDatabase(server);
    loadSql(url, fixture('fleet.sql'));
    db = new pg.Client({ connectionString: url });
    await db.connect();
    // The fixture's finished job is dated the day the fixture was made, and serve forgets a finished job a day after
    // it ended (jobs.ts, KEEP_MS). So that the serve below shows it whatever today's date, it is dated now, before
    // the test reads what the fixture holds: the migration's checks compare against this row as it is.
    const now = new Date().toISOString();
    await db.query(
      `UPDATE sitefleet_rows SET data = data || jsonb_build_object('created_at', $1::text, 'started_at', $1::text, 'completed_at', $1::text)
        WHERE kind = 'jobs' AND data->>'job_id' = $2`,
      [now, creds.jobs.completed],
    );
    before = await rowsOf();
    floors = (await db.query(`SELECT value FROM sitefleet_meta WHERE key = 'counters'`)).rows[0]?.value ?? {};
  });

  afterAll(async () => {
    await db?.end();
  });

  it(`holds what format ${old} wrote (the fixture is what the test says it is)`, async () => {
    expect(await format()).toBe(old);
    expect(live('sites')).toHaveLength(17);
    expect(before.filter((r) => r.data === null).map((r) => `${r.kind}/${r.id}`)).toEqual(
      expect.arrayContaining(['clients/5', 'sites/18', 'tags/6', 'secrets/18', 'site-data/18']),
    );
    for (const kind of ['site-data', 'secrets', 'vulnerability-feed', 'vulnerability-matches', 'audit', 'jobs', 'keys', 'users'])
      expect(live(kind).length, kind).toBeGreaterThan(0);
    // Tag membership on the tags, as formats before 4 kept it.
    expect(live('tags').filter((r) => (r.data as { site_ids: number[] }).site_ids.length).length).toBeGreaterThan(2);
    // No format-3 parts yet: no key column, no id sequences.
    const cols = await db.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'sitefleet_rows'`);
    expect(cols.rows.map((r) => r.column_name).sort()).toEqual(
      old === 1 ? ['data', 'id', 'kind', 'seq'] : ['data', 'id', 'kind', 'seq', 'xid'],
    );
    expect((await db.query(`SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE 'sitefleet_id_%'`)).rows[0].n).toBe(0);
  });

  it(`moves it to format ${PG_FORMAT} with every row as it was; a second run does nothing`, async () => {
    const run = await cli(['migrate', '--database-url', url]);
    expect(run).toEqual({ code: 0, stdout: `Schema migrated from format ${old} to ${PG_FORMAT}.\n`, stderr: '' });
    expect(await format()).toBe(PG_FORMAT);
    const after = await rowsOf();
    expect(after).toEqual(moved(before));
    const audit = live('audit').map((r) => r.id);
    expect(await cli(['audit', 'verify', '--database-url', url])).toMatchObject({
      code: 0,
      stdout: `Audit log whole: ${audit.length} entries, ${Math.min(...audit)} to ${Math.max(...audit)}.\n`,
    });

    const again = await cli(['migrate', '--database-url', url]);
    expect(again).toEqual({ code: 0, stdout: `Schema is at format ${PG_FORMAT}; nothing to do.\n`, stderr: '' });
    expect(await rowsOf()).toEqual(after);
  });

  it("keys the tag names and client e-mails, and every collection's sequence starts above its old ids", async () => {
    const keys = await db.query(`SELECT kind, id, ukey FROM sitefleet_rows WHERE kind IN ('tags', 'clients') ORDER BY kind, id`);
    const expected = before
      .filter((r) => r.kind === 'tags' || r.kind === 'clients')
      .map((r) => {
        const d = r.data as { name?: string; email?: string } | null;
        const key = d === null ? null : r.kind === 'tags' ? d.name!.toLowerCase() : d.email!.toLowerCase() || null;
        return { kind: r.kind, id: r.id, ukey: key };
      });
    expect(keys.rows).toEqual(expected);
    // Spelled out, so that a wrong rule in both places still fails: case folded, an empty e-mail unkeyed, deleted rows unkeyed.
    expect(keys.rows.filter((r) => r.ukey !== null).map((r) => r.ukey)).toEqual([
      'ops@acme.test',
      'web@globex.test',
      'it@initech.test',
      'production',
      'staging',
      'agency',
      'ecommerce',
      'legacy',
    ]);
    // The index backs them: a row that repeats a key is refused by PostgreSQL itself.
    await expect(
      db.query(`INSERT INTO sitefleet_rows (kind, id, seq, data, ukey) VALUES ('tags', 999, 0, '{}', 'production')`),
    ).rejects.toMatchObject({ code: '23505', constraint: 'sitefleet_rows_ukey' });
    for (const col of COLLECTION_NAMES) {
      const s = (await db.query(`SELECT last_value, is_called FROM sitefleet_id_${col}`)).rows[0];
      const next = s.is_called ? Number(s.last_value) + 1 : Number(s.last_value);
      expect(next, col).toBe(topId(col) + 1);
    }
  });

  it(`today's engine reads every record and blob format ${old} wrote`, async () => {
    const store = await PgStore.open(url);
    try {
      for (const col of COLLECTION_NAMES) {
        const want = moved(before)
          .filter((r) => r.kind === col && r.data !== null)
          .map((r) => r.data);
        expect(store.count(col), col).toBe(want.length);
        // A cold collection (the audit log) is read from the database, not memory.
        const held = COLD_COLLECTIONS.has(col)
          ? await store.readRecords<Rec>(col, { order: 'oldest', limit: RECORD_READ_BATCH })
          : [...store.all<Rec>(col)].sort((a, b) => a.id - b.id);
        expect(held, col).toEqual(want);
      }
      // Blobs, the cold ones (site data, secrets, the feed) read from the database one by one.
      for (const kind of BLOB_KINDS) {
        for (const r of live(kind)) expect(await store.readBlob(kind, r.id, { cache: false }), `${kind}/${r.id}`).toEqual(r.data);
        expect(await store.readBlob(kind as Blob, 18), `${kind}/18`).toBeNull();
      }
      // A site behind HTTP Basic kept its password with its key pair.
      expect(await store.readBlob('secrets', 1)).toMatchObject({
        http_pass: 'basic-1',
        private_key_pem: expect.stringMatching(/PRIVATE KEY/),
      });
    } finally {
      await store.close();
    }
  });

  it('a serve on the migrated database answers the old keys and user, refuses a duplicate, and hands out new ids', async () => {
    const p = await serveProcess(['--database-url', url, '--data-dir', tempDir()]);
    try {
      const sites = await api(p, '/sites?per_page=100', { token: creds.read_key });
      expect(sites.status).toBe(200);
      const oldSites = live('sites').map((r) => r.data as { id: number; url: string; name: string });
      expect(sites.body.data.map((s: { id: number; url: string; name: string }) => ({ id: s.id, url: s.url, name: s.name }))).toEqual(
        oldSites.map((s) => ({ id: s.id, url: s.url, name: s.name })),
      );
      const basic = `Basic ${Buffer.from(`${creds.admin.name}:${creds.admin.password}`).toString('base64')}`;
      const counted = await fetch(`${p.url}/wp-json/wp-abilities/v1/abilities/svc/count-sites-v1/run`, {
        headers: { authorization: basic },
      });
      expect(counted.status).toBe(200);
      expect(await counted.json()).toMatchObject({ total: oldSites.length });
      // Every tag has the sites it listed.
      for (const t of live('tags')) {
        const tag = await api(p, `/tags/${t.id}`, { token: creds.read_key });
        expect(tag.body.data.sites_ids, `tag ${t.id}`).toEqual((t.data as { site_ids: number[] }).site_ids);
      }
      // What a read key may not do, it still may not.
      expect((await api(p, '/tags/add', { method: 'POST', json: { name: 'x' }, token: creds.read_key })).status).toBe(403);
      // A site's synced data (a cold blob now) answers its plugins.
      const plugins = await api(p, '/sites/5/plugins');
      expect(plugins.status).toBe(200);
      const synced = dataOf('site-data', 5) as { plugins: Array<{ slug: string }> };
      expect(plugins.body.data.map((x: { slug: string }) => x.slug).sort()).toEqual(synced.plugins.map((x) => x.slug).sort());
      // Site 1's uptime history, kept in its monitor record by the old engine: answered, and moved out of the record
      // (to monitor_history, not held in memory) when monitoring starts, the same.
      const legacy = dataOf('monitors', 1) as { recent: Array<[number, number]>; days: unknown[] };
      expect(legacy.recent.length).toBeGreaterThan(0);
      const beats = await fetch(
        `${p.url}/wp-json/wp-abilities/v1/abilities/svc/list-heartbeats-v1/run?input[site_id_or_domain]=1&input[per_page]=100`,
        { headers: { authorization: `Bearer ${creds.read_key}` } },
      );
      const shown = (await beats.json()) as { total: number };
      expect(shown.total).toBe(legacy.recent.length);
      const moved = await until(
        async () =>
          (
            await db.query<{ data: { recent: unknown[]; days: unknown[] } }>(
              `SELECT data FROM sitefleet_rows WHERE kind = 'monitor_history' AND id = 1`,
            )
          ).rows[0],
        (r) => r !== undefined,
      );
      expect(moved.data).toMatchObject({ recent: legacy.recent, days: legacy.days });
      const record = (await db.query<{ data: object }>(`SELECT data FROM sitefleet_rows WHERE kind = 'monitors' AND id = 1`)).rows[0]!.data;
      expect(Object.keys(record)).not.toContain('recent');
      // Jobs: the finished one as it was; the queued one is run by today's runner (format 2's was made before job chunks).
      expect((await api(p, `/jobs/${creds.jobs.completed}`)).body.data).toMatchObject({ status: 'completed', succeeded: 3 });
      const ended = await until(
        () => api(p, `/jobs/${creds.jobs.queued}`),
        (r) => r.body.data?.status === 'completed' || r.body.data?.status === 'failed',
      );
      // Not run against the sites: this serve was not started with --allow-private-sites, and they are on loopback.
      expect(ended.body.data).toMatchObject({ status: 'completed', total: 2, processed: 2, failed: 2 });
      const errors = ended.body.data.errors as Array<{ site_id: number; code: string }>;
      expect(errors.map((e) => [e.site_id, e.code]).sort()).toEqual([
        [4, 'svc_address_not_allowed'],
        [5, 'svc_address_not_allowed'],
      ]);

      // Unique keys through the service: an old name in another case is refused, the deleted tag's name is free again.
      const dup = await api(p, '/tags/add', { method: 'POST', json: { name: 'PRODUCTION' } });
      expect(dup).toMatchObject({ status: 409, body: { code: 'svc_tag_exists' } });
      const dupClient = await api(p, '/clients/add', { method: 'POST', json: { name: 'Again', email: 'web@GLOBEX.test' } });
      expect(dupClient).toMatchObject({ status: 409, body: { code: 'svc_client_exists' } });
      // The write key the old CLI made still writes.
      const tagIds = [];
      for (const name of ['Retired', 'Fresh']) {
        const r = await api(p, '/tags/add', { method: 'POST', json: { name }, token: creds.cli_write_key });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        tagIds.push(r.body.data.id as number);
      }
      expect(Math.min(...tagIds)).toBeGreaterThan(topId('tags'));
      const client = await api(p, '/clients/add', { method: 'POST', json: { name: 'New Co', email: 'new@co.test' } });
      expect(client.status).toBe(200);
      expect(client.body.data.id).toBeGreaterThan(topId('clients'));
    } finally {
      await p.stop();
    }
  });

  it(`format ${old}'s one chain goes on as lane 0, beside the other lanes, and the log still verifies`, async () => {
    const top = Math.max(...live('audit').map((r) => r.id));

    // The one chain of the old format is lane 0's now: an append there follows its last entry; another lane starts afresh.
    const s = await startServer({ databaseUrl: url });
    try {
      for (const [lane, name] of [
        [0, 'On lane 0'],
        [5, 'On lane 5'],
      ] as const) {
        s.services.audit.lane = lane;
        expect((await s.rest('/tags/add', { method: 'POST', json: { name }, token: creds.read_write_key })).status).toBe(200);
      }
    } finally {
      await s.close();
    }
    const added = (await db.query(`SELECT data FROM sitefleet_rows WHERE kind = 'audit' AND id > $1 ORDER BY id`, [top])).rows.map(
      (r) => r.data as { id: number; lane: number; prev: number; action: string; input: unknown },
    );
    const ours = added.filter((e) => e.action === 'add-tag-v1' && /On lane/.test(JSON.stringify(e.input)));
    expect(ours.map((e) => e.lane)).toEqual([0, 5]);
    // Each follows the entry before it on its lane: the last one the serve above appended there, if its lane was the
    // same, else on lane 0 the old format's last entry, and on lane 5 none.
    for (const e of ours) expect(e.prev).toBe(added.filter((x) => x.lane === e.lane && x.id < e.id).at(-1)?.id ?? (e.lane === 0 ? top : 0));
    const again = await cli(['audit', 'verify', '--database-url', url]);
    const entries = live('audit').length + added.length;
    expect(again).toMatchObject({ code: 0, stdout: `Audit log whole: ${entries} entries, 1 to ${added.at(-1)!.id}.\n` });
  });

  it('a new record of every collection gets an id above every old one (deleted ones included)', async () => {
    const store = await PgStore.open(url);
    try {
      for (const col of COLLECTION_NAMES) {
        const made = await store.write((tx) =>
          tx.insert<Rec & { name: string; email: string }>(col as CollectionName, { name: `new ${col}`, email: '' }),
        );
        expect(made.id, col).toBeGreaterThan(topId(col));
      }
    } finally {
      await store.close();
    }
  });
});

/** A REST call to the serve `p` with the Bearer key `token`, or with `auth` as the authorization header. */
async function request(
  p: Proc & { url: string },
  path: string,
  init: { method?: string; json?: unknown; token: string; auth?: string },
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: init.auth ?? `Bearer ${init.token}` };
  if (init.json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${p.url}/wp-json/svc/v2${path}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  });
  return { status: res.status, body: await res.json() };
}
