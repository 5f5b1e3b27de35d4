// One bad value fails alone (issue 35, finding 4): jsonb refuses a NUL character and an unpaired surrogate, and a
// value written beside 200 good writes in the same group commit must not take them down with it. The bad values are
// sent at the domain and the store directly, past the door's own check, to prove the engine isolates them.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError } from '../../src/core/errors.js';
import { PgStore } from '../../src/store/pg-store.js';
import type { TagRecord } from '../../src/store/records.js';
import { freshDatabase, testPgUrl } from '../support/postgres.js';
import { startServer, type TestServer } from '../support/server.js';
import { expectBadTextCleaned, registerSites, startFleet } from '../support/fleet.js';

async function query(url: string, sql: string): Promise<Array<Record<string, unknown>>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}

const storedTagNames = async (url: string) =>
  new Set(
    (await query(url, `SELECT data->>'name' AS name FROM sitefleet_rows WHERE kind = 'tags' AND data IS NOT NULL`)).map((r) =>
      String(r.name),
    ),
  );

/** A promise's outcome, observed at once (so that a rejection is never "unhandled" while the test waits). */
const settled = (p: Promise<unknown>): Promise<PromiseSettledResult<unknown>> =>
  p.then(
    (value) => ({ status: 'fulfilled' as const, value }),
    (reason: unknown) => ({ status: 'rejected' as const, reason }),
  );

const BAD_NAMES = ['nul\u0000inside', '\u0000', 'lone high \ud800', 'lone low \udc00 here', 'reversed \udc00\ud800'];

describe('a bad value in a group commit (PostgreSQL)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
    expect(s.databaseUrl).toBeTruthy();
  });
  afterAll(async () => {
    await s.close();
  });

  it('200 concurrent tag writes from one key all succeed and are durable while another writer sends NUL and lone surrogates', async () => {
    const good = Array.from({ length: 200 }, (_, i) => `good-${i}`);
    // Past the door, interleaved with them: each good answer sends one bad write (the domain call, or a raw store
    // write of a blob or of a record key), which joins the next group commit with the good writes still queued.
    const badWrites: Array<Promise<PromiseSettledResult<unknown>>> = [];
    const sendBad = (i: number): Promise<unknown> => {
      const k = i % (BAD_NAMES.length + 2);
      if (k === BAD_NAMES.length)
        return s.services.store.write((tx) => tx.putBlob('site-data', 900 + i, { plugins: [{ name: 'evil\u0000' }] }));
      if (k === BAD_NAMES.length + 1) return s.services.store.write((tx) => tx.insert('tags', { ['key\u0000']: 1, name: `bad key ${i}` }));
      return s.services.tags.add({ name: `${BAD_NAMES[k]} ${i}` });
    };
    let answered = 0;
    const goodWrites = good.map((name) =>
      s.rest('/tags/add', { method: 'POST', json: { name } }).then((a) => {
        if (answered++ < 60) badWrites.push(settled(sendBad(answered)));
        return a;
      }),
    );
    const answers = await Promise.all(goodWrites);
    const bad = await Promise.all(badWrites);
    expect(bad).toHaveLength(60);

    expect(answers.filter((a) => a.status !== 200).map((a) => [a.status, a.body])).toEqual([]);
    for (const b of bad) {
      expect(b.status).toBe('rejected');
      const err = (b as PromiseRejectedResult).reason as ServiceError;
      expect(err).toBeInstanceOf(ServiceError);
      expect(err.code).toBe('svc_invalid_input');
      expect(err.status).toBe(400);
      expect(err.message).toMatch(/NUL character|unpaired surrogate/);
    }
    // Durable: in the database itself, and in a store that opens it afresh.
    const names = await storedTagNames(s.databaseUrl!);
    for (const n of good) expect(names.has(n)).toBe(true);
    expect([...names].filter((n) => !n.startsWith('good-'))).toEqual([]);
    const fresh = await PgStore.open(s.databaseUrl!);
    try {
      expect([...fresh.all<TagRecord>('tags')].map((t) => t.name).sort()).toEqual([...good].sort());
      for (let i = 1; i <= 60; i++) expect(await fresh.readBlob('site-data', 900 + i)).toBeNull();
    } finally {
      await fresh.close();
    }
  });

  it('a value the database refuses for a reason of its own fails alone: the group is split until the one write is found', async () => {
    const url = await freshDatabase(testPgUrl()!);
    const store = await PgStore.open(url);
    try {
      // The database, not sitefleet, refuses this value (a constraint sitefleet does not know about).
      await query(url, `ALTER TABLE sitefleet_rows ADD CONSTRAINT no_poison CHECK (data IS NULL OR strpos(data::text, 'poison') = 0)`);
      const before = store.commits;
      const tag = (name: string) => ({ name, color: null, created_at: '', updated_at: '' });
      const writes = Array.from({ length: 200 }, (_, i) =>
        store.write((tx) => tx.insert<TagRecord>('tags', tag(i === 117 ? 'poison' : `ok-${i}`))),
      );
      const results = await Promise.allSettled(writes);
      const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [i] : []));
      expect(failed).toEqual([117]);
      const err = (results[117] as PromiseRejectedResult).reason as ServiceError;
      expect(err.code).toBe('svc_invalid_input');
      expect(err.status).toBe(400);
      expect(err.message).toMatch(/refused a value/);
      // Memory agrees with the database: the refused write left no trace, the 199 others are there.
      expect(store.count('tags')).toBe(199);
      const names = await storedTagNames(url);
      expect(names.size).toBe(199);
      expect(names.has('poison')).toBe(false);
      // Bisection, not one transaction per write.
      expect(store.commits - before).toBeLessThan(60);
      // And the engine goes on grouping: the next writes commit normally.
      await Promise.all([store.write((tx) => tx.insert('tags', tag('after-1'))), store.write((tx) => tx.insert('tags', tag('after-2')))]);
      expect((await storedTagNames(url)).has('after-2')).toBe(true);
    } finally {
      await store.close();
    }
  });
});

describe('a hostile child on the PostgreSQL engine', () => {
  it('a child reporting NUL and lone surrogates in its names syncs cleaned, and the three healthy sites beside it sync too', async () => {
    const f = await startFleet({ sim: { sites: 4 } });
    try {
      expect(f.s.databaseUrl).toBeTruthy();
      await registerSites(f, 4);
      await expectBadTextCleaned(f, [2], [1, 3, 4]);
    } finally {
      await f.close();
    }
  });
});
