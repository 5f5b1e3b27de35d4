// A partition of uptime checks handed to another process has its state flushed in the write that releases it (its
// history follows with the next flush). On PostgreSQL that
// write's function runs more than once (a dry run finds its locks, then it runs for real): the beats it folds must be
// written once and leave the process's queue only when the release has committed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { closeServices, openServices } from '../../src/domain/index.js';
import { PARTITIONS, type MonitorEvent } from '../../src/domain/monitors.js';
import type { Beat, MonitorRecord } from '../../src/store/monitor-records.js';
import { PgStore } from '../../src/store/pg-store.js';
import { freshDatabase, testPgUrl } from '../support/postgres.js';

/** The scheduler's insides this test drives: one lease round at a time, without the timer firing on its own. */
interface Insides {
  pending: Map<number, Array<{ beat: Beat; message: string | null }>>;
  timer: NodeJS.Timeout | null;
  nextRound: number;
  tick(): Promise<void>;
}

describe('monitor partitions and settings on PostgreSQL', () => {
  it('writes the beats of a released partition once, and takes them off the queue once committed', async () => {
    const url = await freshDatabase(testPgUrl()!);
    const dataDir = mkdtempSync(join(tmpdir(), 'sitefleet-pgconc-'));
    const s = await openServices(loadConfig({ dataDir, databaseUrl: url }, {}));
    const m = s.monitors as unknown as Insides;
    m.timer = setInterval(() => {}, 2 ** 30);
    try {
      const site = PARTITIONS - 1; // in the highest partition: the first given back
      await s.store.write((tx) => tx.put('sites', { id: site, url: 'https://one.test/', name: 'one', suspended: true }));
      const events: MonitorEvent[] = [];
      s.monitors.onEvent((e) => events.push(e));
      await m.tick(); // alone: holds every partition
      const beat: Beat = [Date.now(), 0, 120, 500, 0];
      m.pending.set(site, [{ beat, message: 'down' }]);
      // A second member appears: the next round gives back the upper half, flushing their beats in the same write.
      await s.store.write((tx) => tx.insert('leases', { name: 'monitor-member:other', owner: 'other', until: Date.now() + 60_000 }));
      m.nextRound = 0;
      await m.tick();
      expect(m.pending.has(site)).toBe(false);
      expect(s.store.get<MonitorRecord>('monitors', site)?.last_check?.[0]).toBe(beat[0]);
      const other = await PgStore.open(url);
      expect(other.get<MonitorRecord>('monitors', site)?.last_check?.[0]).toBe(beat[0]);
      await other.close();
      // Announced once, after the commit (the first beat of a site opens no incident by itself, or opens one once).
      expect(events.length).toBeLessThanOrEqual(1);
      // Its history (a cold record, read before it is written) follows with the next flush: the beat once.
      expect(await s.monitors.history(site)).toBeNull();
      await s.monitors.flush();
      expect((await s.monitors.history(site))?.recent).toEqual([beat]);
      await s.monitors.flush();
      expect((await s.monitors.history(site))?.recent).toEqual([beat]);
    } finally {
      clearInterval(m.timer!);
      m.timer = null;
      await closeServices(s);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("scans every site again when another process changes a monitor's settings, not when it writes a monitor's state", async () => {
    const url = await freshDatabase(testPgUrl()!);
    const dataDir = mkdtempSync(join(tmpdir(), 'sitefleet-pgconc-'));
    const s = await openServices(loadConfig({ dataDir, databaseUrl: url }, {}));
    const m = s.monitors as unknown as Insides;
    m.timer = setInterval(() => {}, 2 ** 30);
    const other = await PgStore.open(url);
    try {
      await s.store.write((tx) => {
        for (const id of [1, 2]) tx.put('sites', { id, url: `https://s${id}.test/`, name: `s${id}` });
        for (const id of [1, 2])
          tx.put<MonitorRecord>('monitors', { id, settings: {}, status: 'up', last_check: null, down_since: null, open_incident: null });
      });
      await m.tick();
      const scans = () => s.monitors.schedulerStats().scans;
      const first = scans();
      const fromOther = async (id: number, change: (r: MonitorRecord) => MonitorRecord) => {
        await other.sync();
        await other.write((tx) => void tx.put<MonitorRecord>('monitors', change(tx.get<MonitorRecord>('monitors', id)!)));
        await s.store.sync();
        expect(s.store.get<MonitorRecord>('monitors', id)).toEqual(other.get<MonitorRecord>('monitors', id));
        await m.tick();
      };
      await fromOther(2, (r) => ({ ...r, status: 'down', down_since: 1 }));
      expect(scans()).toBe(first);
      await fromOther(1, (r) => ({ ...r, settings: { interval_s: 600 } }));
      expect(scans()).toBe(first + 1);
      await fromOther(1, (r) => ({ ...r, status: 'down' }));
      expect(scans()).toBe(first + 1);
      await fromOther(0, () => ({
        id: 0,
        settings: { active: false },
        status: 'pending',
        last_check: null,
        down_since: null,
        open_incident: null,
      }));
      expect(scans()).toBe(first + 2);
    } finally {
      clearInterval(m.timer!);
      m.timer = null;
      await other.close();
      await closeServices(s);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
