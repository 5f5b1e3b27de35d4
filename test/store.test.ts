// The store keeps every acknowledged write, groups concurrent writes, refuses a corrupt data dir
// without touching it, and lets two processes share one data dir.
import { execFileSync } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { JOURNAL, JOURNAL_MAX, Store } from '../src/store/store.js';
import { restoreBackup, writeBackup } from '../src/store/backup.js';
import { addBeat } from '../src/domain/monitors.js';
import type { Beat, MonitorRecord } from '../src/store/monitor-records.js';
import type { TagRecord } from '../src/store/records.js';
import { cli } from './support/process.js';
import { tempDir as tmp } from './support/server.js';
import { acknowledgedBeforeKill } from './support/sigkill.js';

const STORE_JS = fileURLToPath(new URL('../dist/store/store.js', import.meta.url));

describe('store', () => {
  it('keeps records across a reopen and never reuses an id', async () => {
    const dir = tmp();
    const s = await Store.open(dir);
    const a = await s.write((tx) => tx.insert<TagRecord>('tags', { name: 'a', color: null, created_at: '', updated_at: '' }));
    const b = await s.write((tx) => tx.insert<TagRecord>('tags', { name: 'b', color: null, created_at: '', updated_at: '' }));
    await s.write((tx) => tx.delete('tags', b.id));
    await s.close();
    const s2 = await Store.open(dir);
    expect(s2.get<TagRecord>('tags', a.id)?.name).toBe('a');
    const c = await s2.write((tx) => tx.insert<TagRecord>('tags', { name: 'c', color: null, created_at: '', updated_at: '' }));
    expect(c.id).toBe(b.id + 1);
  });

  it('rolls back a write that throws and keeps the others of its group', async () => {
    const s = await Store.open(tmp());
    const results = await Promise.allSettled([
      s.write((tx) => tx.insert<TagRecord>('tags', { name: 'ok1', color: null, created_at: '', updated_at: '' })),
      s.write((tx) => {
        tx.insert('tags', { name: 'doomed' });
        throw new Error('no');
      }),
      s.write((tx) => tx.insert<TagRecord>('tags', { name: 'ok2', color: null, created_at: '', updated_at: '' })),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect([...s.all<TagRecord>('tags')].map((t) => t.name)).toEqual(['ok1', 'ok2']);
    await s.close(); // the shards at rest take in the journal
    const onDisk = JSON.parse(readFileSync(join(s.dir, 'tags.json'), 'utf8')).records.map((t: TagRecord) => t.name);
    expect(onDisk).toEqual(['ok1', 'ok2']);
  });

  it('refuses a NUL character or an unpaired surrogate in a record, a key or a blob, as the PostgreSQL engine does: that write alone', async () => {
    const s = await Store.open(tmp());
    const tag = (name: string) => ({ name, color: null, created_at: '', updated_at: '' });
    const results = await Promise.allSettled([
      s.write((tx) => tx.insert<TagRecord>('tags', tag('ok1'))),
      s.write((tx) => tx.insert<TagRecord>('tags', tag('a\u0000b'))),
      s.write((tx) => tx.insert<TagRecord>('tags', tag('lone \ud800'))),
      s.write((tx) => tx.insert('tags', { ...tag('bad key'), ['k\u0000']: 1 })),
      s.write((tx) => tx.putBlob('site-data', 7, { plugins: [{ name: 'x\udc00' }] })),
      s.write((tx) => tx.insert<TagRecord>('tags', tag('paired 😀 is fine'))),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'rejected', 'rejected', 'fulfilled']);
    const reasons = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
    for (const e of reasons) expect(e).toMatchObject({ code: 'svc_invalid_input', status: 400 });
    expect(reasons.map((e) => e.message)).toEqual([
      'The change was not saved because the tags record 2, field name, holds a NUL character (U+0000), which text may not contain; nothing was changed.',
      'The change was not saved because the tags record 2, field name, holds an unpaired surrogate (U+D800), which is not valid Unicode text; nothing was changed.',
      'The change was not saved because the tags record 2 has a key "k\\u0000" that holds a NUL character (U+0000), which text may not contain; nothing was changed.',
      'The change was not saved because the site-data of 7, field plugins.0.name, holds an unpaired surrogate (U+DC00), which is not valid Unicode text; nothing was changed.',
    ]);
    expect([...s.all<TagRecord>('tags')].map((t) => t.name)).toEqual(['ok1', 'paired 😀 is fine']);
    expect(await s.readBlob('site-data', 7)).toBeNull();
    await s.close(); // the shards at rest take in the journal
    const onDisk = JSON.parse(readFileSync(join(s.dir, 'tags.json'), 'utf8')).records.map((t: TagRecord) => t.name);
    expect(onDisk).toEqual(['ok1', 'paired 😀 is fine']);
  });

  it('fails alone a write whose value JSON cannot hold: its group is committed again in halves, the others are acknowledged', async () => {
    const s = await Store.open(tmp());
    const tag = (name: string) => ({ name, color: null, created_at: '', updated_at: '' });
    const before = JSON.parse(readFileSync(join(s.dir, 'meta.json'), 'utf8')).generation;
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) => s.write((tx) => tx.insert('tags', i === 41 ? { ...tag('big'), size: 10n } : tag(`t${i}`)))),
    );
    expect(results.flatMap((r, i) => (r.status === 'rejected' ? [i] : []))).toEqual([41]);
    expect((results[41] as PromiseRejectedResult).reason).toMatchObject({
      code: 'svc_invalid_input',
      status: 400,
      message: expect.stringMatching(/cannot be stored \(Do not know how to serialize a BigInt\)/),
    });
    expect(s.count('tags')).toBe(99);
    const reopened = await Store.open(s.dir);
    expect([...reopened.all<TagRecord>('tags')].map((t) => t.name).sort()).toEqual(
      Array.from({ length: 100 }, (_, i) => `t${i}`)
        .filter((n) => n !== 't41')
        .sort(),
    );
    const after = JSON.parse(readFileSync(join(s.dir, 'meta.json'), 'utf8')).generation;
    expect(after - before).toBeLessThan(20);
  });

  it('groups concurrent writes into few commits', async () => {
    const s = await Store.open(tmp());
    const before = JSON.parse(readFileSync(join(s.dir, 'meta.json'), 'utf8')).generation;
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        s.write((tx) => tx.insert<TagRecord>('tags', { name: `t${i}`, color: null, created_at: '', updated_at: '' })),
      ),
    );
    const after = JSON.parse(readFileSync(join(s.dir, 'meta.json'), 'utf8')).generation;
    expect(s.count('tags')).toBe(200);
    expect(after - before).toBeLessThan(20);
  });

  it('commits the writes queued before close, and refuses one after it with nothing written', async () => {
    const s = await Store.open(tmp());
    const queued = Array.from({ length: 5 }, (_, i) =>
      s.write((tx) => tx.insert<TagRecord>('tags', { name: `q${i}`, color: null, created_at: '', updated_at: '' })),
    );
    await s.close();
    await Promise.all(queued);
    await expect(s.write((tx) => tx.insert('tags', { name: 'late' }))).rejects.toThrow('store is closed');
    const s2 = await Store.open(s.dir);
    expect([...s2.all<TagRecord>('tags')].map((t) => t.name)).toEqual(['q0', 'q1', 'q2', 'q3', 'q4']);
  });

  it('writes sites into shards so that one edit does not rewrite the fleet', async () => {
    const s = await Store.open(tmp());
    await s.write((tx) => {
      for (let i = 0; i < 600; i++) tx.insert('sites', { url: `https://s${i}.test/` });
    });
    await s.close(); // the shards at rest take in the journal
    expect(
      readdirSync(s.dir)
        .filter((f) => f.startsWith('sites.'))
        .sort(),
    ).toEqual(['sites.0.json', 'sites.1.json', 'sites.2.json']);
  });

  it("lets a second store on the same dir see the first one's edits on its next read, shard by shard", async () => {
    const dir = tmp();
    const a = await Store.open(dir);
    const b = await Store.open(dir);
    await a.write((tx) => {
      for (let i = 0; i < 300; i++) tx.insert('sites', { url: `https://s${i}.test/`, name: `s${i}` });
    });
    // A read looks for other processes' commits at most once a millisecond; sync() looks at once (as a request does).
    await b.sync();
    expect(b.count('sites')).toBe(300);
    await a.write((tx) => {
      tx.delete('sites', 260);
      tx.put('sites', { id: 5, url: 'https://s4.test/', name: 'renamed' });
    });
    await b.sync();
    expect(b.count('sites')).toBe(299);
    expect(b.get<{ id: number; name: string }>('sites', 5)?.name).toBe('renamed');
    expect(b.get('sites', 260)).toBeUndefined();
    const c = await b.write((tx) => tx.insert<{ id: number }>('sites', { url: 'https://new.test/' }));
    expect(c.id).toBe(301);
    await a.close();
    await b.close();
  });

  it('refuses to start on a corrupt data file and leaves it untouched', async () => {
    const dir = tmp();
    const s = await Store.open(dir);
    await s.write((tx) => tx.insert('tags', { name: 'x' }));
    await s.close();
    const file = join(dir, 'tags.json');
    writeFileSync(file, '{"collection":"tags","records":[{"id":1,"name":"x"}');
    const before = readFileSync(file);
    await expect(Store.open(dir)).rejects.toThrow(/tags\.json is unreadable \(invalid JSON/);
    const r = await cli(['keys', 'list', '--data-dir', dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/tags\.json is unreadable.*stopped without touching it/);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('refuses a data dir written by a newer format', async () => {
    const dir = tmp();
    await (await Store.open(dir)).close();
    const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8'));
    writeFileSync(join(dir, 'meta.json'), JSON.stringify({ ...meta, format: 99 }));
    await expect(Store.open(dir)).rejects.toThrow(/format 99 was written by a newer sitefleet/);
  });

  it('keeps every acknowledged write when the process is killed with SIGKILL', async () => {
    // Three kills at different points, side by side: reopening each waits out its dead holder's lock (5 s stale).
    await Promise.all(
      [0, 1, 2].map(async (round) => {
        const dir = tmp();
        const acked = await acknowledgedBeforeKill(
          `(await import(${JSON.stringify(STORE_JS)})).Store.open(${JSON.stringify(dir)})`,
          30 + round * 40,
        );
        const s = await Store.open(dir);
        const names = new Set([...s.all<{ id: number; name: string }>('tags')].map((t) => t.name));
        for (const n of acked) expect(names.has(n), `${n} was acknowledged`).toBe(true);
        await s.close();
      }),
    );
  });
  it("reads of one synchronous run see one state; a later run sees another process's finished commit", async () => {
    const dir = tmp();
    const w = await Store.open(dir);
    const t = await w.write((tx) => tx.insert<TagRecord>('tags', { name: 'before', color: null, created_at: '', updated_at: '' }));
    await w.close();
    const s = await Store.open(dir);
    // Another process renames the tag and exits, all inside this synchronous run (execFileSync blocks it).
    const rename = `const s = await (await import(${JSON.stringify(pathToFileURL(STORE_JS).href)})).Store.open(${JSON.stringify(dir)});
      await s.write((tx) => tx.put('tags', { ...tx.get('tags', ${t.id}), name: 'after' })); await s.close();`;
    expect(s.get<TagRecord>('tags', t.id)?.name).toBe('before');
    execFileSync(process.execPath, ['--input-type=module', '-e', rename]);
    expect(s.get<TagRecord>('tags', t.id)?.name).toBe('before');
    // The next run (the child took well over the millisecond a look is good for) looks again.
    await Promise.resolve();
    expect(s.get<TagRecord>('tags', t.id)?.name).toBe('after');
    await s.close();
  });
});

describe('sync() while a commit of this process waits for the lock', () => {
  it('looks once that commit has ended: a commit another process acknowledged meanwhile is seen', async () => {
    const dir = tmp();
    const a = await Store.open(dir);
    const b = await Store.open(dir);
    try {
      const tag = (name: string) => ({ name, color: null, created_at: '', updated_at: '' });
      // A commits and keeps the lock a moment (LOCK_LINGER_MS); B's commit waits for it; A commits again, at once.
      await a.write((tx) => tx.insert<TagRecord>('tags', tag('first')));
      const queued = b.write((tx) => tx.insert<TagRecord>('tags', tag('from b')));
      const second = await a.write((tx) => tx.insert<TagRecord>('tags', tag('second')));
      // B's request begins: it must see A's acknowledged commit, though B was in the middle of its own.
      await b.sync();
      expect(b.get<TagRecord>('tags', second.id)?.name).toBe('second');
      await queued;
    } finally {
      await b.close();
      await a.close();
    }
  });
});

describe('store journal (issue 34)', () => {
  const tag = (name: string, notes = '') => ({ name, color: null, created_at: '', updated_at: '', notes });
  const stamp = (file: string) => {
    const st = statSync(file, { bigint: true });
    return `${st.ino}:${st.mtimeNs}:${st.size}`;
  };

  it('commits a records-only write as one journal entry: no shard and no meta.json rewritten, bytes in proportion to the records', async () => {
    const dir = tmp();
    const s0 = await Store.open(dir);
    await s0.write((tx) => {
      for (let i = 0; i < 600; i++) tx.insert('sites', { url: `https://s${i}.test/`, notes: '' });
    });
    await s0.close();
    const s = await Store.open(dir);
    const atRest = ['meta.json', 'sites.0.json', 'sites.1.json', 'sites.2.json'].map((f) => stamp(join(dir, f)));
    const record = JSON.stringify(s.get('sites', 300)).length;
    for (let i = 0; i < 50; i++) await s.write((tx) => tx.put('sites', { ...tx.get('sites', 300)!, notes: `edit ${i}` }));
    expect(['meta.json', 'sites.0.json', 'sites.1.json', 'sites.2.json'].map((f) => stamp(join(dir, f)))).toEqual(atRest);
    const journal = statSync(join(dir, JOURNAL)).size;
    expect(journal).toBeGreaterThan(50 * record);
    expect(journal).toBeLessThanOrEqual(50 * (record + 100));
    // Another process (a second store on the dir) takes the entries in on its next read, and a reopen replays them.
    const other = await Store.open(dir);
    expect(other.get<{ id: number; notes: string }>('sites', 300)?.notes).toBe('edit 49');
    await s.write((tx) => tx.put('sites', { ...tx.get('sites', 301)!, notes: 'seen elsewhere' }));
    // A read looks again at most once a millisecond; sync() (what each HTTP request does first) looks at once.
    await other.sync();
    expect(other.get<{ id: number; notes: string }>('sites', 301)?.notes).toBe('seen elsewhere');
    await other.close();
    await s.close();
    // At rest (after close) the shards hold everything and the journal is empty.
    expect(statSync(join(dir, JOURNAL)).size).toBe(0);
    const shard = JSON.parse(readFileSync(join(dir, 'sites.1.json'), 'utf8')).records as Array<{ id: number; notes: string }>;
    expect(shard.find((r) => r.id === 300)?.notes).toBe('edit 49');
  });

  it('leaves out an entry a crashed writer cut off, and writes the next one over it; an acknowledged one is kept', async () => {
    const dir = tmp();
    const s1 = await Store.open(dir);
    await s1.write((tx) => tx.insert<TagRecord>('tags', tag('acked')));
    // s1 is abandoned unclosed (as if killed); a writer died halfway through its entry.
    appendFileSync(join(dir, JOURNAL), '{"g":99,"c":{"tags":7},"w":[["tags",7,{"id":7,"na');
    const s2 = await Store.open(dir);
    expect([...s2.all<TagRecord>('tags')].map((t) => t.name)).toEqual(['acked']);
    await s2.write((tx) => tx.insert<TagRecord>('tags', tag('next')));
    const s3 = await Store.open(dir);
    expect([...s3.all<TagRecord>('tags')].map((t) => t.name)).toEqual(['acked', 'next']);
    await s3.close();
    await s2.close();
  });

  it('takes the journal into the shards once it passes JOURNAL_MAX bytes', async () => {
    const dir = tmp();
    const s = await Store.open(dir);
    const big = 'x'.repeat(256 * 1024);
    const writes = Math.ceil(JOURNAL_MAX / big.length) + 1;
    for (let i = 0; i < writes; i++) await s.write((tx) => tx.insert('tags', tag(`t${i}`, big)));
    expect(statSync(join(dir, JOURNAL)).size).toBeLessThan(2 * big.length);
    expect(JSON.parse(readFileSync(join(dir, 'tags.json'), 'utf8')).records.length).toBeGreaterThanOrEqual(writes - 1);
    await s.close();
  });

  // A monitor record with a month of history (as sitefleet kept it there before monitor_history), and one more
  // heartbeat folded in the way domain/monitors.ts did it: the journal's patches, on a PATCHED collection.
  const monitor = (id: number, t: number): MonitorRecord => {
    let m: MonitorRecord = {
      id,
      settings: {},
      status: 'up',
      last_check: null,
      down_since: null,
      open_incident: null,
      recent: [],
      hours: [],
      days: [],
    };
    for (let i = 0; i < 31 * 24; i++) m = beat(m, t - (31 * 24 - i) * 3600);
    return m;
  };
  const beat = (m: MonitorRecord, t: number): MonitorRecord => {
    const b: Beat = [t, 1, 20 + (t % 50), 200, -1];
    return {
      ...m,
      last_check: b,
      recent: [...m.recent!, b].slice(-60),
      hours: addBeat(m.hours!, 3600, 25, b),
      days: addBeat(m.days!, 86_400, 31, b),
    };
  };

  it('journals a monitor heartbeat as what changed, and a reopen, another process and a backup read the same record', async () => {
    const dir = tmp();
    const t0 = 1_790_000_000;
    const s0 = await Store.open(dir);
    await s0.write((tx) => {
      for (let id = 1; id <= 300; id++) tx.put('monitors', monitor(id, t0));
    });
    await s0.close();
    const s = await Store.open(dir);
    const whole = JSON.stringify(s.get('monitors', 1)).length;
    const before = statSync(join(dir, JOURNAL)).size;
    for (let k = 1; k <= 3; k++)
      await s.write((tx) => {
        for (let id = 1; id <= 300; id++) tx.put('monitors', beat(tx.get<MonitorRecord>('monitors', id)!, t0 + k * 60));
      });
    // Three heartbeats of 300 sites: far less than their whole records (each over 4 KB), a few hundred bytes a beat.
    const perBeat = (statSync(join(dir, JOURNAL)).size - before) / 900;
    expect(whole).toBeGreaterThan(4000);
    expect(perBeat).toBeLessThan(400);
    const want = [...s.all<MonitorRecord>('monitors')];
    const other = await Store.open(dir); // replays the patches on the shards
    expect([...other.all<MonitorRecord>('monitors')]).toEqual(want);
    const file = join(tmp(), 'fleet.backup');
    await writeBackup({ dataDir: dir, databaseUrl: null }, file);
    const restored = join(tmp(), 'restored');
    await restoreBackup(file, { dataDir: restored, databaseUrl: null }, false);
    const r = await Store.open(restored);
    expect([...r.all<MonitorRecord>('monitors')]).toEqual(want);
    await r.close();
    await other.close();
    await s.close();
    const atRest = await Store.open(dir);
    expect([...atRest.all<MonitorRecord>('monitors')]).toEqual(want);
    await atRest.close();
  });

  it('lets the journal grow as long as the shards it changed before taking it in', async () => {
    const dir = tmp();
    const s0 = await Store.open(dir);
    await s0.write((tx) => {
      for (let id = 1; id <= 300; id++) tx.put('monitors', monitor(id, 1_790_000_000));
    });
    await s0.close();
    const s = (await Store.open(dir)) as Store & { journalMax: number };
    s.journalMax = 64 * 1024;
    const shards = readdirSync(dir)
      .filter((f) => f.startsWith('monitors.'))
      .reduce((n, f) => n + statSync(join(dir, f)).size, 0);
    let t = 1_790_000_000;
    let compactedAt = 0;
    for (let k = 0; k < 40 && !compactedAt; k++) {
      const was = statSync(join(dir, JOURNAL)).size;
      await s.write((tx) => {
        t += 60;
        for (let id = 1; id <= 300; id++) tx.put('monitors', beat(tx.get<MonitorRecord>('monitors', id)!, t));
      });
      if (statSync(join(dir, JOURNAL)).size < was) compactedAt = was;
    }
    // Not at journalMax (64 KB): once the journal is about as long as the monitor shards it rewrites.
    expect(compactedAt).toBeGreaterThanOrEqual(shards * 0.9);
    expect(compactedAt).toBeLessThan(shards * 1.5);
    await s.close();
  });

  it('refuses to start on a journal with a damaged complete entry and leaves it untouched', async () => {
    const dir = tmp();
    const s = await Store.open(dir);
    await s.write((tx) => tx.insert<TagRecord>('tags', tag('a')));
    appendFileSync(join(dir, JOURNAL), 'not json\n');
    const before = readFileSync(join(dir, JOURNAL), 'utf8');
    await expect(Store.open(dir)).rejects.toThrow(/journal\.log is unreadable \(invalid JSON/);
    expect(readFileSync(join(dir, JOURNAL), 'utf8')).toBe(before);
  });
});
