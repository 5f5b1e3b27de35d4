// The lowdb engine and WriteOptions.skipLocked: one writer at a time under the data dir's file lock, so there is never
// another transaction's lock to skip; the option makes an ordinary write (it never resolves SKIPPED). The PostgreSQL
// engine's skipping is in test/pg/skip-locked.test.ts.
import { describe, expect, it } from 'vitest';
import { SKIPPED, Store } from '../src/store/store.js';
import { tempDir } from './support/server.js';

interface Counter {
  id: number;
  n: number;
}

describe('lowdb engine: a write with skipLocked', () => {
  it('is an ordinary write: its value, durable, in order with the writes around it', async () => {
    const dir = tempDir();
    const s = await Store.open(dir);
    const c = await s.write((tx) => tx.insert<Counter>('settings', { n: 0 }));
    const bump = (tx: Parameters<Parameters<typeof s.write>[0]>[0]) => {
      const cur = tx.get<Counter>('settings', c.id)!;
      return tx.put<Counter>('settings', { ...cur, n: cur.n + 1 }).n;
    };
    const results = await Promise.all([s.write(bump), s.write(bump, { skipLocked: true }), s.write(bump)]);
    expect(results).toEqual([1, 2, 3]);
    expect(results).not.toContain(SKIPPED);
    // A write that throws rejects as ever (skipLocked does not turn a failure into a skip).
    await expect(
      s.write(
        () => {
          throw new Error('no');
        },
        { skipLocked: true },
      ),
    ).rejects.toThrow('no');
    await s.close();
    const again = await Store.open(dir);
    expect(again.get<Counter>('settings', c.id)!.n).toBe(3);
    await again.close();
  });
});
