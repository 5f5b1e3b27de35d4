// The audit log (issue 32): one entry per call that may change something, recorded by the registry whatever the
// outcome; secrets redacted; a hash chain that verify() checks, naming the first bad entry; bounded retention that
// keeps the chain verifiable; list-audit-log-v1 with filters and paging.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AUDIT_LANES,
  AuditService,
  entryHash,
  summarise,
  type AuditHeadRecord,
  type AuditRecord,
  type AuditTrimRecord,
} from '../../src/domain/audit.js';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';

let h: AbilityHarness;
beforeAll(async () => {
  h = await openAbilities({ config: { allowPrivateSites: true } });
});
afterAll(() => h?.close());

const last = async () => (await h.services.audit.list({}, 1, 1)).items[0]!;
const count = async () => (await h.services.audit.list({}, 1, 1)).total;
/** An entry as the store holds it (the log is read from the store, not memory). */
const entry = async (id: number) =>
  (await h.services.store.readRecords<AuditRecord>('audit', { order: 'oldest', above: id - 1, below: id + 1, limit: 1 }))[0];
/** Edits (or, with null, removes) an entry behind the log's back. */
const edit = async (fn: (e: AuditRecord) => AuditRecord | null, id: number) => {
  const e = (await entry(id))!;
  const next = fn(e);
  await h.services.store.write((tx) => (next ? tx.put('audit', next) : tx.delete('audit', id)));
  return e;
};

describe('what is recorded', () => {
  it('records a change once with who, door, action, input and outcome; a read records nothing', async () => {
    const before = await count();
    await h.call('list-tags-v1', {});
    await h.call('list-audit-log-v1', {});
    expect(await count()).toBe(before);
    const tag = await h.call('add-tag-v1', { name: 'audited' });
    expect(await count()).toBe(before + 1);
    expect(await last()).toMatchObject({
      who_kind: 'user',
      who_id: h.as.admin.kind === 'user' ? h.as.admin.id : -1,
      who_name: 'admin',
      door: 'cli', // a call without an HTTP request behind it: the local process's door
      address: null,
      action: 'add-tag-v1',
      input: { name: 'audited' },
      outcome: 'ok',
      status: null,
    });
    await h.call('delete-tag-v1', { tag_id: tag.id, confirm: true });
    expect(await last()).toMatchObject({ action: 'delete-tag-v1', outcome: 'ok' });
  });

  it('records a read-only ability whose input asks it to write (a refresh), and not the same read without it', async () => {
    const n = await count();
    await h.call('list-updates-v1', {});
    expect(await count()).toBe(n);
    await h.call('list-updates-v1', { refresh: true });
    expect(await count()).toBe(n + 1);
    expect(await last()).toMatchObject({ action: 'list-updates-v1', input: { refresh: true }, outcome: 'ok' });
    await h.fails('list-updates-v1', { refresh: true }, h.as.viewer);
    expect(await count()).toBe(n + 1); // a viewer's refused refresh writes nothing (test/abilities/updates.test.ts)
  });

  it('records refusals and failures with their code: permission, validation, not found', async () => {
    await h.fails('add-api-key-v1', { name: 'not an admin' }, h.as.writeKey);
    expect(await last()).toMatchObject({ who_kind: 'key', action: 'add-api-key-v1', outcome: 'svc_permission_denied', status: 403 });
    await h.fails('add-tag-v1', { name: 7 });
    expect(await last()).toMatchObject({ outcome: 'ability_invalid_input', status: 400 });
    await h.fails('delete-tag-v1', { tag_id: 999999, confirm: true });
    expect(await last()).toMatchObject({ outcome: 'svc_tag_not_found', status: 404 });
    // Text the store cannot keep (a NUL in a field's name or value, an unpaired surrogate) is refused with 400 — and
    // the refusal is still recorded, the odd characters spelled \uXXXX (the fuzz lane lost such entries before).
    const before = await count();
    await h.fails('add-tag-v1', { name: 'nul\u0000name', ['k\u0000ey']: 'v\ud800' } as never);
    expect(await count()).toBe(before + 1);
    expect(await last()).toMatchObject({ action: 'add-tag-v1', status: 400, input: { name: 'nul\\u0000name', 'k\\u0000ey': 'v\\ud800' } });
    // A caller who may not write (a read-only process, a viewer, a read key) causes no write, not even this record.
    const n = await count();
    await h.fails('add-tag-v1', { name: 'read-only' }, h.as.readOnlyLocal);
    await h.fails('add-tag-v1', { name: 'viewer tag' }, h.as.viewer);
    await h.fails('add-tag-v1', { name: 'read key tag' }, h.as.readKey);
    expect(await count()).toBe(n);
  });

  it('redacts secrets at any depth, and a webhook URL', async () => {
    expect(
      summarise({
        name: 'x',
        admin_password: 'hunter2',
        adminpassword: 'hunter2',
        nested: { api_key: 'k', token: 't', list: [{ secret: 's' }] },
        url: 'https://example.org/',
      }),
    ).toEqual({
      name: 'x',
      admin_password: '[redacted]',
      adminpassword: '[redacted]',
      nested: { api_key: '[redacted]', token: '[redacted]', list: [{ secret: '[redacted]' }] },
      url: 'https://example.org/',
    });
    await h.call('add-webhook-v1', { url: 'https://hooks.example.org/T0KEN-in-the-path' } as never);
    const e = await last();
    expect(e.action).toBe('add-webhook-v1');
    expect(JSON.stringify(e)).not.toContain('T0KEN');
    // The secret the answer carried is nowhere in the log.
    const made = await h.call('add-dashboard-user-v1', { name: 'pat' });
    expect(JSON.stringify((await h.services.audit.list({}, 1, 200)).items)).not.toContain(made.password.replace(/ /g, '').slice(0, 12));
  });

  it('bounds an input summary: long strings, long lists, the whole', () => {
    const s = summarise({ a: 'x'.repeat(500), b: Array.from({ length: 50 }, (_, i) => i) }) as { a: string; b: unknown[] };
    expect(s.a.length).toBeLessThan(240);
    expect(s.b).toHaveLength(21);
    expect(s.b[20]).toBe('… 30 more');
    const big = summarise({ list: Array.from({ length: 20 }, () => 'y'.repeat(200)) }) as { characters: number };
    expect(big.characters).toBeGreaterThan(2000);
  });
});

describe('the hash chain', () => {
  it('verifies whole, names the first edited entry, then the first removed one', async () => {
    for (let i = 0; i < 5; i++) await h.call('add-tag-v1', { name: `chain ${i}` });
    const ok = await h.services.audit.verify();
    expect(ok).toMatchObject({ ok: true });
    const top = (await last()).id;
    const victim = top - 2;
    const original = await edit((e) => ({ ...e, outcome: 'ok', who_name: 'someone else' }), victim);
    expect(await h.services.audit.verify()).toMatchObject({ ok: false, bad: { id: victim, reason: expect.stringMatching(/edited/) } });
    // An edit that recomputes its own hash still breaks the link to the next entry.
    const { entryHash } = await import('../../src/domain/audit.js');
    await edit((e) => {
      const { hash: _h, ...body } = e;
      return { ...body, hash: entryHash(body) };
    }, victim);
    expect(await h.services.audit.verify()).toMatchObject({ ok: false, bad: { id: victim + 1 } });
    await edit(() => original, victim);
    expect(await h.services.audit.verify()).toMatchObject({ ok: true });
    await edit(() => null, victim);
    expect(await h.services.audit.verify()).toMatchObject({ ok: false, bad: { id: victim, reason: expect.stringMatching(/removed/) } });
    await edit(() => original, victim);
    // The last entry removed: the head no longer matches.
    const tail = await edit(() => null, top);
    expect(await h.services.audit.verify()).toMatchObject({ ok: false, bad: { id: top } });
    await edit(() => tail, top);
    expect(await h.services.audit.verify()).toMatchObject({ ok: true });
  });

  it('trims past the entry bound and the age bound, and stays verifiable from its trim line', async () => {
    const audit = h.services.audit;
    const line = () => h.services.store.get<AuditTrimRecord>('audit_head', 0)!.through;
    audit.maxEntries = 5;
    try {
      for (let i = 0; i < 3; i++) await h.call('add-tag-v1', { name: `trim ${i}` });
      expect(h.services.store.count('audit')).toBe(5);
      expect(await audit.verify()).toMatchObject({ ok: true, entries: 5, first: line() + 1 });
      audit.maxEntries = 1000;
      const t0 = Date.now();
      audit.now = () => t0 + 366 * 86_400_000;
      await h.call('add-tag-v1', { name: 'a year later' });
      expect(h.services.store.count('audit')).toBe(1);
      expect(await audit.verify()).toMatchObject({ ok: true, entries: 1 });
    } finally {
      audit.maxEntries = 100_000;
      audit.now = Date.now;
    }
  });
});

describe('lanes: appends from processes on different lanes share no record (issue 34)', () => {
  it('keeps interleaved appends of two lanes verifiable, and finds an entry of either lane edited, removed or slipped in', async () => {
    const mine = h.services.audit;
    // Another process, on another lane, appending to the same store.
    const other = new AuditService(h.services.store);
    other.lane = (mine.lane + 5) % AUDIT_LANES;
    const made: AuditRecord[] = [];
    for (let i = 0; i < 4; i++) {
      made.push(await other.system('lane test', { i }));
      await h.call('add-tag-v1', { name: `lanes ${i}` });
    }
    await Promise.all(Array.from({ length: 6 }, (_, i) => [other.system('lane burst', { i }), mine.system('lane burst', { i })]).flat());
    expect(await mine.verify()).toMatchObject({ ok: true });
    // The other lane's entries each follow the one before in that lane, not the one just below in id.
    expect(made[1]!.prev).toBe(made[0]!.id);
    expect(made[1]!.prev_hash).toBe(made[0]!.hash);
    expect(made[1]!.id - made[0]!.id).toBeGreaterThan(1);
    const head = h.services.store.get<AuditHeadRecord>('audit_head', other.lane + 1)!;
    const victim = made[2]!.id;
    const original = await edit((e) => ({ ...e, who_name: 'someone else' }), victim);
    expect(await mine.verify()).toMatchObject({ ok: false, bad: { id: victim, reason: expect.stringMatching(/edited/) } });
    await edit((e) => {
      const { hash: _h, ...body } = { ...e, who_name: 'someone else' };
      return { ...body, hash: entryHash(body) };
    }, victim);
    expect(await mine.verify()).toMatchObject({ ok: false, bad: { id: made[3]!.id, reason: expect.stringMatching(/does not follow/) } });
    await edit(() => null, victim);
    expect(await mine.verify()).toMatchObject({ ok: false, bad: { id: victim, reason: expect.stringMatching(/removed/) } });
    await edit(() => original, victim);
    expect(await mine.verify()).toMatchObject({ ok: true });
    // The lane's last entry removed: its head names an entry that is gone.
    const tail = await edit(() => null, head.last_seq);
    expect(await mine.verify()).toMatchObject({ ok: false, bad: { id: head.last_seq } });
    await edit(() => tail, head.last_seq);
    // An entry slipped in with a hash of its own, following an entry of the lane, is in no lane's walk.
    const fake = { ...made[0]!, id: made[0]!.id + 100_000, action: 'slipped in' };
    const { hash: _f, ...fakeBody } = fake;
    await h.services.store.write((tx) => tx.put('audit', { ...fakeBody, hash: entryHash(fakeBody) }));
    expect(await mine.verify()).toMatchObject({ ok: false, bad: { id: fake.id, reason: 'not in the chain' } });
    await h.services.store.write((tx) => tx.delete('audit', fake.id));
    expect(await mine.verify()).toMatchObject({ ok: true });
    // Lists stay newest first across lanes.
    const listed = (await mine.list({ action: 'lane burst' }, 1, 50)).items.map((e) => e.id);
    expect(listed).toEqual([...listed].sort((a, b) => b - a));
    expect(listed).toHaveLength(12);
  });

  it('continues a chain written before lanes (entries without lane or prev, one head with its anchor): lane 0 follows on', async () => {
    const h2 = await openAbilities({});
    try {
      const store = h2.services.store;
      const t = new Date().toISOString();
      // The one chain as it was: three entries with consecutive ids (the ones before them trimmed: the anchor), each
      // following the id below it. Inserted first so that the store's ids move past them, as a restart would.
      const ids = await store.write((tx) => [0, 1, 2].map(() => tx.insert<AuditRecord>('audit', {} as AuditRecord).id));
      const [first, , lastId] = ids as [number, number, number];
      const old: AuditRecord[] = [];
      let prevHash = 'a'.repeat(64);
      for (const id of ids) {
        const body = { id, at: t, who_kind: 'system' as const, who_id: null, who_name: 'system', door: 'scheduler' as const };
        const full = { ...body, address: null, action: 'old', input: null, outcome: 'ok', status: null, prev_hash: prevHash };
        old.push({ ...full, hash: entryHash(full) });
        prevHash = old.at(-1)!.hash;
      }
      await store.write((tx) => {
        for (const e of old) tx.put('audit', e);
        tx.put<AuditHeadRecord>('audit_head', {
          id: 1,
          last_seq: lastId,
          last_hash: prevHash,
          anchor_seq: first - 1,
          anchor_hash: 'a'.repeat(64),
        });
      });
      const audit = h2.services.audit;
      expect(await audit.verify()).toMatchObject({ ok: true, entries: 3, first, last: lastId });
      audit.lane = 0;
      const next = await audit.system('after lanes', null);
      expect(next).toMatchObject({ lane: 0, prev: lastId, prev_hash: prevHash });
      const other = new AuditService(store);
      other.lane = 7;
      await other.system('another lane', null);
      expect(await audit.verify()).toMatchObject({ ok: true, entries: 5 });
      await store.write((tx) => tx.delete('audit', first + 1));
      expect(await audit.verify()).toMatchObject({ ok: false, bad: { id: first + 1, reason: expect.stringMatching(/removed/) } });
      await store.write((tx) => tx.put('audit', { ...old[1]!, who_name: 'x' }));
      expect(await audit.verify()).toMatchObject({ ok: false, bad: { id: first + 1, reason: expect.stringMatching(/edited/) } });
      await store.write((tx) => tx.put('audit', old[1]!));
      // The old anchor still pins where the old chain starts.
      await store.write((tx) =>
        tx.put('audit', { ...old[0]!, prev_hash: 'b'.repeat(64), hash: entryHash({ ...old[0]!, prev_hash: 'b'.repeat(64) }) }),
      );
      expect(await audit.verify()).toMatchObject({ ok: false });
    } finally {
      await h2.close();
    }
  });
});

describe('list-audit-log-v1', () => {
  it('filters by who, action, outcome, door and time, pages newest first; administrators only', async () => {
    const t = new Date().toISOString();
    const u = new Date(Date.now() + 3_600_000).toISOString(); // the trim test left an entry a year ahead
    await h.call('add-tag-v1', { name: 'filter me' });
    await h.fails('add-tag-v1', { name: 7 }, h.as.writeKey); // a caller who may write: its failure is recorded
    const mine = await h.call('list-audit-log-v1', { action: 'add-tag-v1', since: t, until: u });
    expect(mine.items.map((e) => e.outcome)).toEqual(['ability_invalid_input', 'ok']);
    expect((await h.call('list-audit-log-v1', { who: 'write', since: t, until: u })).total).toBe(1);
    const keyId = h.as.writeKey.kind === 'key' ? h.as.writeKey.id : 0;
    expect((await h.call('list-audit-log-v1', { who: `key:${keyId}`, since: t, until: u })).total).toBe(1);
    expect((await h.call('list-audit-log-v1', { who: `user:${keyId}`, since: t, until: u })).total).toBe(0);
    expect((await h.call('list-audit-log-v1', { outcome: 'error', since: t, until: u })).total).toBe(1);
    expect((await h.call('list-audit-log-v1', { outcome: 'ok', since: t, until: u })).items[0]!.input).toEqual({ name: 'filter me' });
    expect((await h.call('list-audit-log-v1', { until: t, door: 'console' })).total).toBe(0);
    const p1 = await h.call('list-audit-log-v1', { per_page: 2 });
    const p2 = await h.call('list-audit-log-v1', { per_page: 2, page: 2 });
    expect(p1.items[0]!.id).toBeGreaterThan(p1.items[1]!.id);
    expect(p2.items[0]!.id).toBeLessThan(p1.items[1]!.id);
    expect(p1.total).toBe(p2.total);
    expect(await h.fails('list-audit-log-v1', {}, h.as.viewer)).toMatchObject({ code: 'svc_permission_denied' });
    expect(await h.fails('list-audit-log-v1', { since: 'yesterday' })).toMatchObject({ status: 400 });
    expect(await h.fails('list-audit-log-v1', { per_page: 201 })).toMatchObject({ status: 400 });
  });
});
