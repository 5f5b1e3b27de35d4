// Cold collections (store/engine.ts COLD_COLLECTIONS: the audit log) on whichever engine the lane runs (lowdb here,
// PostgreSQL in the pg lane): written by a write's insert, put and delete; read only with readRecords and countRecords
// (get and all refuse them, in a write too); not held in memory on PostgreSQL; another process sees what one wrote.
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { RECORD_READ_BATCH, type FieldTest, type Rec, type Store } from '../src/store/engine.js';
import { testFleetStore } from './support/server.js';

interface Entry extends Rec {
  at: string;
  action: string;
  who_name: string;
  n?: number | null;
}

const stores: Store[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

async function fleet() {
  const f = await testFleetStore();
  const open = async () => {
    const s = await f.open();
    stores.push(s);
    return s;
  };
  return { open };
}

/** Five entries: ids 1-5, a minute apart, two actions, names in two letter cases, `n` missing on the fourth. */
async function fill(s: Store): Promise<Entry[]> {
  return s.write((tx) =>
    [0, 1, 2, 3, 4].map((i) =>
      tx.insert<Entry>('audit', {
        at: `2026-11-27T10:0${i}:00.000Z`,
        action: i % 2 ? 'odd' : 'even',
        who_name: i < 2 ? 'Alice' : 'alice',
        ...(i === 3 ? {} : { n: i }),
      }),
    ),
  );
}

const ids = (rs: Rec[]) => rs.map((r) => r.id);

describe('cold collections', () => {
  it('are written by a write, read by readRecords, counted from memory, not held on PostgreSQL, and refused by get and all', async () => {
    const s = await (await fleet()).open();
    const made = await fill(s);
    expect(ids(made)).toEqual([1, 2, 3, 4, 5]);
    expect(s.count('audit')).toBe(5);
    expect(s.memory().records.audit).toBe(s.engine === 'postgres' ? 0 : 5);
    expect(() => s.get('audit', 1)).toThrow(/readRecords/);
    expect(() => s.all('audit')).toThrow(/readRecords/);
    await expect(s.write((tx) => tx.get('audit', 1))).rejects.toThrow(/readRecords/);
    await expect(s.write((tx) => [...tx.all('audit')])).rejects.toThrow(/readRecords/);
    expect(await s.readRecords<Entry>('audit', { order: 'oldest', limit: 10 })).toEqual(made);
    // A put replaces, a delete removes and says whether there was a record.
    await s.write((tx) => tx.put<Entry>('audit', { ...made[1]!, action: 'edited' }));
    expect(await s.write((tx) => [tx.delete('audit', 3), tx.delete('audit', 3), tx.delete('audit', 99)])).toEqual([true, false, false]);
    expect(s.count('audit')).toBe(4);
    expect(await s.readRecords<Entry>('audit', { order: 'newest', limit: 10 })).toEqual([
      made[4],
      made[3],
      { ...made[1], action: 'edited' },
      made[0],
    ]);
    // A write that throws leaves nothing of its cold records.
    await expect(
      s.write((tx) => {
        tx.insert<Entry>('audit', { at: 'x', action: 'doomed', who_name: 'x' });
        tx.delete('audit', 1);
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    expect(s.count('audit')).toBe(4);
    expect(await s.countRecords('audit', [{ field: 'action', eq: 'doomed' }])).toBe(0);
    expect(ids(await s.readRecords('audit', { order: 'oldest', limit: 10 }))).toEqual([1, 2, 4, 5]);
  });

  it('answers pages by id bounds, order, offset and limit, and each field test, the same on both engines', async () => {
    const s = await (await fleet()).open();
    await fill(s);
    const read = async (q: {
      order?: 'newest' | 'oldest';
      below?: number;
      above?: number;
      offset?: number;
      limit?: number;
      where?: FieldTest[];
      ids?: number[];
    }) => ids(await s.readRecords('audit', { order: 'newest', limit: 10, ...q }));
    expect(await read({})).toEqual([5, 4, 3, 2, 1]);
    expect(await read({ order: 'oldest' })).toEqual([1, 2, 3, 4, 5]);
    expect(await read({ below: 4 })).toEqual([3, 2, 1]);
    expect(await read({ above: 1, below: 5, order: 'oldest' })).toEqual([2, 3, 4]);
    expect(await read({ offset: 1, limit: 2 })).toEqual([4, 3]);
    expect(await read({ offset: 9 })).toEqual([]);
    expect(await read({ limit: 0 })).toEqual([]);
    // A list of ids: those there, once each, in order, within the bounds and tests.
    expect(await read({ ids: [4, 99, 2, 4, 0] })).toEqual([4, 2]);
    expect(await read({ ids: [4, 1, 2], order: 'oldest', limit: 2 })).toEqual([1, 2]);
    expect(await read({ ids: [1, 2, 3, 4], above: 1, where: [{ field: 'action', eq: 'even' }] })).toEqual([3]);
    expect(await read({ ids: [] })).toEqual([]);
    const where = async (...w: FieldTest[]) => [await read({ where: w }), await s.countRecords('audit', w)];
    expect(await where({ field: 'action', eq: 'odd' })).toEqual([[4, 2], 2]);
    expect(await where({ field: 'action', ne: 'odd' })).toEqual([[5, 3, 1], 3]);
    expect(await where({ field: 'n', eq: 2 })).toEqual([[3], 1]);
    expect(await where({ field: 'n', eq: null })).toEqual([[4], 1]); // a missing field is null
    expect(await where({ field: 'n', ne: null })).toEqual([[5, 3, 2, 1], 4]);
    expect(await where({ field: 'who_name', eq: 'alice' })).toEqual([[5, 4, 3], 3]);
    expect(await where({ field: 'who_name', ieq: 'ALICE' })).toEqual([[5, 4, 3, 2, 1], 5]);
    expect(await where({ field: 'n', ieq: '2' })).toEqual([[], 0]); // text tests match text only
    expect(await where({ field: 'at', gte: '2026-11-27T10:03:00.000Z' })).toEqual([[5, 4], 2]);
    expect(await where({ field: 'at', lt: '2026-11-27T10:01:00.000Z' })).toEqual([[1], 1]);
    expect(
      await where(
        { field: 'at', gte: '2026-11-27T10:01:00.000Z' },
        { field: 'at', lt: '2026-11-27T10:03:00.000Z' },
        { field: 'action', eq: 'even' },
      ),
    ).toEqual([[3], 1]);
    expect(await where({ field: 'nowhere', eq: 'x' })).toEqual([[], 0]);
    expect(await s.countRecords('audit')).toBe(5);
  });

  it('refuses a query past its bounds: more than RECORD_READ_BATCH records, a bad field name, a collection held in memory', async () => {
    const s = await (await fleet()).open();
    await expect(s.readRecords('audit', { order: 'newest', limit: RECORD_READ_BATCH + 1 })).rejects.toThrow(/at most 1000/);
    await expect(s.readRecords('audit', { order: 'newest', limit: RECORD_READ_BATCH })).resolves.toEqual([]);
    const many = Array.from({ length: RECORD_READ_BATCH + 1 }, (_, i) => i + 1);
    await expect(s.readRecords('audit', { order: 'newest', limit: 1, ids: many })).rejects.toThrow(/at most 1000 ids/);
    await expect(s.readRecords('audit', { order: 'newest', limit: 1, ids: [1, -2] })).rejects.toThrow(/non-negative integer/);
    await expect(s.readRecords('audit', { order: 'newest', limit: 1, ids: [1.5] })).rejects.toThrow(/non-negative integer/);
    await expect(s.readRecords('audit', { order: 'newest', limit: 1, where: [{ field: "x' OR 1=1 --", eq: 1 }] })).rejects.toThrow(
      /bad field name/,
    );
    await expect(s.countRecords('tags')).rejects.toThrow(/cold collections only/);
    await expect(s.readRecords('sites', { order: 'newest', limit: 1 })).rejects.toThrow(/cold collections only/);
  });

  it("another process sees one's inserts, edits and deletes: in its count, and in what it reads", async () => {
    const f = await fleet();
    const a = await f.open();
    const b = await f.open();
    await fill(a);
    await b.sync();
    expect(b.count('audit')).toBe(5);
    expect(b.memory().records.audit).toBe(b.engine === 'postgres' ? 0 : 5);
    await a.write((tx) => {
      tx.delete('audit', 2);
      tx.put<Entry>('audit', { id: 5, at: 'late', action: 'edited', who_name: 'b' });
    });
    await b.sync();
    expect(b.count('audit')).toBe(4);
    expect(await b.readRecords<Entry>('audit', { order: 'newest', limit: 1 })).toEqual([
      { id: 5, at: 'late', action: 'edited', who_name: 'b' },
    ]);
    // b's own insert takes the next id, past a's.
    const [mine] = await b.write((tx) => [tx.insert<Entry>('audit', { at: 'b', action: 'b', who_name: 'b' })]);
    expect(mine!.id).toBe(6);
    await a.sync();
    expect(a.count('audit')).toBe(5);
    expect(ids(await a.readRecords('audit', { order: 'newest', limit: 2 }))).toEqual([6, 5]);
  });

  it('reads beside commits run on connections of their own: none is queued behind another query on one connection', async () => {
    const s = await (await fleet()).open();
    await fill(s);
    // pg's own test for the queueing it deprecates (client.js: a query while `_queryQueue` is not empty), watched, not
    // changed, while reads, counts, syncs and writes run together as concurrent requests make them.
    const queued: string[] = [];
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client & { _queryQueue: unknown[] }, ...args: unknown[]) {
      if (this._queryQueue.length > 0)
        queued.push(String(typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string })?.text).slice(0, 60));
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    try {
      const rounds = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          Promise.all([
            s.readRecords<Entry>('audit', { order: 'newest', limit: 2, where: [{ field: 'action', eq: 'even' }] }),
            s.countRecords('audit', [{ field: 'who_name', ieq: 'ALICE' }]),
            s.sync(),
            s.readBlob('site-data', 1),
            i % 4 === 0
              ? s.write((tx) => tx.insert<Entry>('audit', { at: `2026-11-27T11:0${i}:00.000Z`, action: 'x', who_name: 'y' }))
              : null,
          ]),
        ),
      );
      for (const [page, n] of rounds) {
        expect(ids(page)).toEqual([5, 3]);
        expect(n).toBe(5);
      }
    } finally {
      pg.Client.prototype.query = query;
    }
    expect(queued).toEqual([]);
    expect(s.count('audit')).toBe(7);
  });
});
