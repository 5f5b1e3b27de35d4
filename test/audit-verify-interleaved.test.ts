// The audit log's check reads the log in batches (issue 34: it is not held in memory on PostgreSQL), so appends and
// trims of other processes land between its reads. Interleaved here on purpose, between the first batch and the next,
// on whichever engine the lane runs: they are not taken for tampering, and tampering is still found beside them.
import { afterEach, describe, expect, it } from 'vitest';
import { AUDIT_LANES, AuditService, type AuditRecord } from '../src/domain/audit.js';
import type { Store } from '../src/store/engine.js';
import { testFleetStore } from './support/server.js';

const stores: Store[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

/** A log of `n` entries from two lanes, read by `mine`, appended to meanwhile by `other` (another process's lane). */
async function log(n: number) {
  const f = await testFleetStore();
  const store = await f.open();
  stores.push(store);
  const mine = new AuditService(store);
  const other = new AuditService(store);
  mine.lane = 1;
  other.lane = (1 + 5) % AUDIT_LANES;
  for (let i = 0; i < n; i++) await (i % 3 ? mine : other).system('fill', { i });
  return { store, mine, other };
}

/** Runs `between` once, after the first batch of the log was read and before the next is. */
function interleave(store: Store, between: () => Promise<void>): { ran: () => boolean } {
  const read = store.readRecords.bind(store);
  let ran = false;
  store.readRecords = (async (...args: Parameters<typeof read>) => {
    const out = await read(...args);
    if (!ran && args[0] === 'audit' && args[1].limit > 1) {
      ran = true;
      await between();
    }
    return out;
  }) as typeof read;
  return { ran: () => ran };
}

describe('verify, with appends and trims between its reads', () => {
  it('finds the log intact when another lane appended and trimmed the oldest entries while it read', async () => {
    const { store, mine, other } = await log(700);
    const first = (await store.readRecords<AuditRecord>('audit', { order: 'oldest', limit: 1 }))[0]!.id;
    // The bound just below the log: each append past it trims the oldest few (the line rises under the reader).
    other.maxEntries = 690;
    const seen = interleave(store, async () => {
      for (let i = 0; i < 25; i++) await other.system('meanwhile', { i });
    });
    expect(await mine.verify()).toMatchObject({ ok: true });
    expect(seen.ran()).toBe(true);
    // It did trim (from the oldest), and append, while the log was read.
    expect((await store.readRecords<AuditRecord>('audit', { order: 'oldest', limit: 1 }))[0]!.id).toBeGreaterThan(first);
    expect(store.count('audit')).toBeLessThanOrEqual(690);
    expect(await mine.verify()).toMatchObject({ ok: true });
  });

  it('still names an entry edited before the read, with the same appends and trims between its reads', async () => {
    const { store, mine, other } = await log(700);
    other.maxEntries = 690;
    // An entry well above what the trims take, below the first batch (read newest first: in the second).
    const victim = (await store.readRecords<AuditRecord>('audit', { order: 'oldest', offset: 100, limit: 1 }))[0]!;
    await store.write((tx) => tx.put('audit', { ...victim, who_name: 'someone else' }));
    const seen = interleave(store, async () => {
      for (let i = 0; i < 25; i++) await other.system('meanwhile', { i });
    });
    expect(await mine.verify()).toMatchObject({ ok: false, bad: { id: victim.id, reason: expect.stringMatching(/edited/) } });
    expect(seen.ran()).toBe(true);
  });
});
