// Tx.afterCommit: what a write announces runs once that write is committed, after its caller is told, and never for a
// write that fails. On PostgreSQL a write function runs more than once (a dry run finds its locks, and the PG lane runs
// every batch once more to check it), so a step started from inside the function itself would run each time.
import { describe, expect, it } from 'vitest';
import type { TagRecord } from '../src/store/records.js';
import { testFleetStore } from './support/server.js';

const tag = (name: string) => ({ name, color: null, created_at: '', updated_at: '' });

describe('Tx.afterCommit', () => {
  it('runs once per committed write, after its caller is told; never for a write that throws or holds a value no engine keeps', async () => {
    const store = await (await testFleetStore()).open();
    try {
      const heard: string[] = [];
      const write = (name: string, bad?: 'throw' | 'nul') =>
        store
          .write((tx) => {
            const t = tx.insert<TagRecord>('tags', tag(bad === 'nul' ? `${name}\u0000` : name));
            tx.afterCommit(() => heard.push(`committed ${name} ${store.get<TagRecord>('tags', t.id)?.name}`));
            if (bad === 'throw') throw new Error('no');
            return t;
          })
          .then(
            () => heard.push(`told ${name}`),
            () => heard.push(`refused ${name}`),
          );
      // One batch: two good writes, one that throws and one the engines refuse for its text (the batch runs again in
      // halves on both engines, the bad write alone fails).
      await Promise.all([write('a'), write('b', 'throw'), write('c', 'nul'), write('d')]);
      expect(heard.filter((h) => h.startsWith('committed')).sort()).toEqual(['committed a a', 'committed d d']);
      expect(heard.filter((h) => !h.startsWith('committed')).sort()).toEqual(['refused b', 'refused c', 'told a', 'told d']);
      // Each step runs in the turn its write is acknowledged in, before the caller's own continuation.
      expect(heard.indexOf('committed a a')).toBeLessThan(heard.indexOf('told a'));
    } finally {
      await store.close();
    }
  });
});
