// The monitors' history in a collection of its own (issue 34): `monitor_history`, cold (not held in memory on
// PostgreSQL), beside the monitor record that keeps the state scheduling reads. On whichever engine the lane runs:
// where it lives, an older sitefleet's history (in the monitor record) read and moved without loss, two processes
// writing one site's history without losing a beat, and a flush of more sites than one commit takes.
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { closeServices, openServices, type Services } from '../src/domain/index.js';
import { HISTORY_BATCH, addBeat, foldHistory } from '../src/domain/monitors.js';
import type { Beat, Bucket, MonitorHistoryRecord, MonitorRecord } from '../src/store/monitor-records.js';
import type { SiteRecord } from '../src/store/records.js';
import { testFleetStore } from './support/server.js';

/** The scheduler's queue of beats not written yet (filled here instead of running checks). */
type Insides = { pending: Map<number, Array<{ beat: Beat; message: string | null }>> };

const open: Services[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => closeServices(s)));
});

async function fleet() {
  const f = await testFleetStore();
  const services = async () => {
    const s = await openServices(loadConfig({ dataDir: f.dataDir, databaseUrl: f.databaseUrl }, {}));
    open.push(s);
    return s;
  };
  return { services };
}

const T0 = 1_795_000_000;
const up = (t: number, ms = 100): Beat => [t, 1, ms, 200, -1];

async function addSites(s: Services, n: number): Promise<number[]> {
  return s.store.write((tx) => Array.from({ length: n }, (_, i) => s.sites.insert(tx, { url: `https://h${i}.example.com/` }).id));
}

/** Queues beats for a site as a check would, and writes them. */
async function check(s: Services, id: number, ...beats: Beat[]): Promise<void> {
  const q = (s.monitors as unknown as Insides).pending;
  q.set(id, [...(q.get(id) ?? []), ...beats.map((beat) => ({ beat, message: null }))]);
  await s.monitors.flush();
}

describe('monitor history', () => {
  it('lives in monitor_history, not in the monitor record (on PostgreSQL: not in memory), and answers the summary and heartbeats', async () => {
    const s = await (await fleet()).services();
    const [a] = await addSites(s, 1);
    await check(s, a!, up(T0), up(T0 + 60, 300));
    await check(s, a!, up(T0 + 120, 200));
    const m = s.store.get<MonitorRecord>('monitors', a!)!;
    expect(Object.keys(m).sort()).toEqual(['down_since', 'history_n', 'id', 'last_check', 'open_incident', 'settings', 'status']);
    expect(m).toMatchObject({ status: 'up', last_check: up(T0 + 120, 200), history_n: 2 });
    const h = (await s.monitors.history(a!))!;
    expect(h).toMatchObject({ id: a, n: 2, recent: [up(T0), up(T0 + 60, 300), up(T0 + 120, 200)] });
    expect(h.hours.map((b) => b.slice(0, 3))).toEqual([[Math.floor(T0 / 3600) * 3600, 3, 0]]);
    expect(s.store.memory().records.monitor_history).toBe(s.store.engine === 'postgres' ? 0 : 1);
    expect(() => s.store.get('monitor_history', a!)).toThrow(/readRecords/);
    expect((await s.monitors.heartbeats(a!)).map((b) => b[0])).toEqual([T0 + 120, T0 + 60, T0]);
    // A removed site's history goes with it.
    await s.sites.remove(a!);
    expect(await s.monitors.history(a!)).toBeNull();
    expect(s.store.count('monitor_history')).toBe(0);
  });

  it("reads an older sitefleet's history from the monitor record, and moves it out with nothing lost: by the next write, or by the move at start", async () => {
    const s = await (await fleet()).services();
    const [a, b, c] = await addSites(s, 3);
    let hours: Bucket[] = [];
    let days: Bucket[] = [];
    const recent = [up(T0 - 120), up(T0 - 60)];
    for (const beat of recent) {
      hours = addBeat(hours, 3600, 25, beat);
      days = addBeat(days, 86_400, 31, beat);
    }
    const legacy = (id: number): MonitorRecord => ({
      id,
      settings: { interval_s: 120 },
      status: 'up',
      last_check: recent[1]!,
      down_since: null,
      open_incident: null,
      recent,
      hours,
      days,
    });
    await s.store.write((tx) => [a, b, c].forEach((id) => tx.put('monitors', legacy(id!))));
    // Read where it is.
    expect((await s.monitors.heartbeats(a!)).map((x) => x[0])).toEqual([T0 - 60, T0 - 120]);
    expect((await s.monitors.summary(s.sites.get(a!)!)).interval_s).toBe(120);
    // A new beat: the history moves out with it, the old beats kept, the settings too.
    await check(s, a!, up(T0));
    expect(await s.monitors.history(a!)).toEqual(foldHistory({ id: a!, n: 0, recent, hours, days }, [up(T0)], 1));
    expect(s.store.get<MonitorRecord>('monitors', a!)).toEqual({
      ...legacy(a!),
      recent: undefined,
      hours: undefined,
      days: undefined,
      last_check: up(T0),
      history_n: 1,
    });
    expect(Object.keys(s.store.get<MonitorRecord>('monitors', a!)!)).not.toContain('recent');
    // The move at start takes the others; again, nothing is left to move.
    expect(await s.monitors.moveHistory()).toBe(2);
    expect(await s.monitors.moveHistory()).toBe(0);
    for (const id of [b!, c!]) {
      expect(await s.monitors.history(id)).toEqual({ id, n: 1, recent, hours, days });
      expect(s.store.get<MonitorRecord>('monitors', id)).toEqual({
        ...legacy(id),
        recent: undefined,
        hours: undefined,
        days: undefined,
        history_n: 1,
      });
    }
  });

  it('goes on from a history whose monitor record is missing (a restore of part of a fleet), instead of waiting for ever', async () => {
    const s = await (await fleet()).services();
    const [a] = await addSites(s, 1);
    await s.store.write((tx) => tx.put<MonitorHistoryRecord>('monitor_history', { id: a!, n: 3, recent: [up(T0)], hours: [], days: [] }));
    await check(s, a!, up(T0 + 60));
    expect((await s.monitors.history(a!))!).toMatchObject({ n: 4, recent: [up(T0), up(T0 + 60)] });
    expect(s.store.get<MonitorRecord>('monitors', a!)!.history_n).toBe(4);
  });

  it('loses no beat when another process writes the history between a read and the write: the later write waits for the next flush', async () => {
    const f = await fleet();
    const one = await f.services();
    const two = await f.services();
    const [a] = await addSites(one, 1);
    await two.store.sync();
    await check(one, a!, up(T0));
    await two.store.sync();
    // One reads the history to fold T0 + 120 into; meanwhile two writes T0 + 60 (it checked the site too, a partition
    // given over).
    const read = one.store.readRecords.bind(one.store);
    let between: Promise<void> | null = null;
    one.store.readRecords = (async (...args: Parameters<typeof read>) => {
      const out = await read(...args);
      if (!between) {
        between = check(two, a!, up(T0 + 60));
        await between;
        await one.store.sync();
      }
      return out;
    }) as typeof read;
    await check(one, a!, up(T0 + 120));
    expect(between).not.toBeNull();
    // The state is written; the history has two's beat only: one's waits.
    expect(one.store.get<MonitorRecord>('monitors', a!)!.last_check).toEqual(up(T0 + 120));
    expect((await one.monitors.history(a!))!.recent).toEqual([up(T0), up(T0 + 60)]);
    await one.monitors.flush();
    const h = (await one.monitors.history(a!))!;
    expect(h.recent).toEqual([up(T0), up(T0 + 60), up(T0 + 120)]);
    expect(h.hours.reduce((n, b) => n + b[1]!, 0)).toBe(3);
    expect(h.n).toBe(3);
    expect(one.store.get<MonitorRecord>('monitors', a!)!.history_n).toBe(3);
  });

  it(`writes the history of more sites than one commit takes (${HISTORY_BATCH}) in several, every site's once`, async () => {
    const s = await (await fleet()).services();
    const ids = await addSites(s, HISTORY_BATCH * 2 + 7);
    const q = (s.monitors as unknown as Insides).pending;
    for (const id of ids) q.set(id, [{ beat: up(T0 + id), message: null }]);
    const before = s.store.version('monitor_history');
    await s.monitors.flush();
    expect(s.store.count('monitor_history')).toBe(ids.length);
    const read = await s.store.readRecords<MonitorHistoryRecord>('monitor_history', {
      order: 'oldest',
      limit: 1000,
      ids: ids.slice(0, 1000),
    });
    expect(read.map((h) => [h.id, h.n, h.recent])).toEqual(ids.slice(0, 1000).map((id) => [id, 1, [up(T0 + id)]]));
    expect(s.store.version('monitor_history')).toBeGreaterThan(before);
    expect([...s.store.all<SiteRecord>('sites')].every((x) => s.store.get<MonitorRecord>('monitors', x.id)?.history_n === 1)).toBe(true);
  });
});
