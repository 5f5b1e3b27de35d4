// The update history's bounds on the store (both engines: the pg lane runs this file too): at most
// HISTORY_MAX_ENTRIES entries (one more trims the oldest, in the same write) and HISTORY_MAX_DAYS days (older ones go
// at the next write), and the query stays on what is kept.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { HISTORY_MAX_DAYS, HISTORY_MAX_ENTRIES, UpdateHistoryService, type HistoryEntry } from '../../src/domain/update-history.js';

let h: AbilityHarness;
const DAY = 86_400_000;
let now = Date.parse('2026-11-26T10:00:00Z');

const entry = (n: number, at: number): HistoryEntry => ({
  site_id: 1 + (n % 7),
  site_url: `https://s${n % 7}.test/`,
  type: 'plugin',
  slug: `p${n % 13}/p.php`,
  name: `P ${n % 13}`,
  from: '1.0',
  to: '1.1',
  outcome: n % 5 === 0 ? 'failed' : 'updated',
  reason: '',
  code: '',
  actor: { kind: 'user', id: 1, name: 'admin' },
  at: new Date(at).toISOString(),
  duration_ms: 5,
  safe: false,
  probe: null,
});

beforeAll(async () => {
  h = await openAbilities();
});
afterAll(() => h.close());

describe('update history bounds', () => {
  it(`keeps at most ${HISTORY_MAX_ENTRIES} entries: one more trims the oldest in the same write`, async () => {
    const history = new UpdateHistoryService(h.services.store, h.services.tags.access, () => now);
    const t0 = now - 10 * DAY;
    await history.add(Array.from({ length: HISTORY_MAX_ENTRIES }, (_, n) => entry(n, t0 + n)));
    expect(h.services.store.count('update_history')).toBe(HISTORY_MAX_ENTRIES);
    const oldest = history.list({}, Math.ceil(HISTORY_MAX_ENTRIES / 100), 100).entries.at(-1)!;
    await history.add([entry(HISTORY_MAX_ENTRIES, now)]);
    expect(h.services.store.count('update_history')).toBe(HISTORY_MAX_ENTRIES);
    expect(h.services.store.get('update_history', oldest.id)).toBeUndefined();
    const r = history.list({ site_id: 1 + (HISTORY_MAX_ENTRIES % 7) }, 1, 1);
    expect(r.entries[0]!.at).toBe(new Date(now).toISOString());
  });

  it(`drops entries older than ${HISTORY_MAX_DAYS} days at the next write`, async () => {
    // The store holds entries from 10 days ago; 171 days on, the oldest are 181 days old and go at the next write.
    now += (HISTORY_MAX_DAYS - 9) * DAY;
    const history = new UpdateHistoryService(h.services.store, h.services.tags.access, () => now);
    const before = h.services.store.count('update_history');
    await history.add([entry(1, now)]);
    const after = h.services.store.count('update_history');
    expect(after).toBeLessThan(before);
    const kept = history.list({}, 1, 100).total;
    expect(kept).toBe(after);
    const cutoff = now - HISTORY_MAX_DAYS * DAY;
    const oldestKept = [...h.services.store.all<{ id: number; at: string }>('update_history')].reduce((a, b) => (a.id < b.id ? a : b));
    expect(Date.parse(oldestKept.at)).toBeGreaterThanOrEqual(cutoff);
  });
});
