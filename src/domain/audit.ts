// The audit log (issue 32): every call that changes something, through every door (recorded once, in the registry's
// run path), what the schedulers start, and logins and failed logins. Each entry is chained to the one before by a
// SHA-256 hash: hash = sha256(prev_hash + canonical JSON of the entry without its hash), so that an edited entry, a
// removed one or one slipped in is found by verify(), which names the first bad entry.
//
// Appends that do not serialise writers (issue 34). The log is AUDIT_LANES chains ("lanes") side by side, each with its
// own head record (audit_head id lane + 1); a process appends to its lane (process id modulo AUDIT_LANES; lowdb has one
// writer at a time anyway). An entry's id comes from the store's insert (on PostgreSQL a sequence, so taking one locks
// nothing), and it names the entry before it in its lane (prev, with that entry's hash in prev_hash). So an append
// reads and writes one head — its lane's — and two processes on different lanes never wait for each other, where one
// head for everything made every write in every process wait for the one before it. The chain is no weaker: every
// entry is linked to the one before it in its lane, each lane's head names its last entry, so an entry edited, removed
// (from the middle, the start above the trim line, or the end) or slipped in is still found. Ids still follow the
// order appends were committed in (closely: ids are drawn as a commit starts), so lists walk them newest first.
// Why not one chain with its position from a sequence, linked later? An entry not yet linked could be removed unseen,
// and the linking itself would again be one writer at a time. Entries written before lanes (no `lane`, no `prev`) are
// lane 0's, each following the id just below it.
//
// Retention: at most MAX_ENTRIES entries and none older than MAX_AGE_DAYS. Trimming drops the oldest entries (lowest
// ids) and raises the trim line (audit_head id 0: every entry at or below it is gone, and a lane's walk stops there).
// Whether to trim is decided before the write from what memory holds, and a trim takes a few dozen at a time below
// the bound (TRIM_SLACK), so that only one append in many writes the trim line: it is the one record all lanes share.
import { printable } from '../core/storable-text.js';
import { createHash } from 'node:crypto';
import type { Ability } from '../core/ability.js';
import { ServiceError } from '../core/errors.js';
import { mayWrite, type CallOrigin, type Principal } from '../core/principal.js';
import type { AuditSink, RunOptions } from '../core/registry.js';
import type { FieldTest } from '../store/engine.js';
import type { Store, Tx } from '../store/store.js';

export const MAX_ENTRIES = 100_000;
export const MAX_AGE_DAYS = 365;
/** Entries one append drops at most. */
const TRIM_PER_APPEND = 50;
/** How far below the entry bound a trim goes (a hundredth of the bound, at most this), and how much past the age bound. */
const TRIM_SLACK = 49;
const TRIM_AGE_SLACK_MS = 3_600_000;
/** Chains side by side: appends from processes on different lanes share no record. */
export const AUDIT_LANES = 16;
/** Failed logins recorded per minute per process at most; past it they are counted into the next one recorded. */
export const FAILED_LOGINS_PER_MINUTE = 60;
/** Bounds of an input summary: characters of a string, items of a list, depth, characters of the whole summary. */
const MAX_STRING = 200;
const MAX_ITEMS = 20;
const MAX_DEPTH = 4;
const MAX_SUMMARY = 2_000;

const GENESIS = '0'.repeat(64);

export type AuditDoor = CallOrigin['door'] | 'scheduler';

/** One entry. `id` is its place in the chain (1, 2, 3, …; never reused). */
export interface AuditRecord {
  id: number;
  at: string;
  who_kind: 'user' | 'key' | 'oauth' | 'local' | 'system';
  who_id: number | null;
  who_name: string;
  door: AuditDoor;
  address: string | null;
  /** The ability's name, or login / login-failed, or what a scheduler did. */
  action: string;
  /** The input, summarised, with secrets redacted. */
  input: unknown;
  /** ok, or the error code. */
  outcome: string;
  status: number | null;
  /** Its lane (absent: written before lanes, lane 0). */
  lane?: number;
  /** The id of the entry before it in its lane, 0 for the first (absent: written before lanes, id - 1). */
  prev?: number;
  prev_hash: string;
  hash: string;
}

/**
 * A lane's head (id lane + 1): its last entry. anchor_seq and anchor_hash are kept from before lanes (lane 0's head
 * was the one chain's, and its anchor_seq the trim line until a trim record is written).
 */
export interface AuditHeadRecord {
  id: number;
  last_seq: number;
  last_hash: string;
  anchor_seq: number;
  anchor_hash: string;
}

/** The trim line (audit_head id 0): every entry with an id at or below `through` was trimmed. */
export interface AuditTrimRecord {
  id: 0;
  through: number;
}

/** The trim line: the trim record's, else the one chain's anchor from before lanes. */
function trimLine(tx: Pick<Tx, 'get'>): number {
  return tx.get<AuditTrimRecord>('audit_head', 0)?.through ?? tx.get<AuditHeadRecord>('audit_head', 1)?.anchor_seq ?? 0;
}

/** Entries one read of the log takes (a page of the walk newest first, of verify's pass). */
const READ_BATCH = 500;

/**
 * The entries newest first (by id, down to the trim line, or to `floor`), read from the store a batch at a time (the
 * log is a cold collection: no process holds it): the client reports' changes, verify.
 */
export async function* newestFirst(store: Pick<Store, 'get' | 'readRecords'>, floor = trimLine(store)): AsyncGenerator<AuditRecord> {
  let below: number | undefined;
  for (;;) {
    const page = await store.readRecords<AuditRecord>('audit', { order: 'newest', above: floor, below, limit: READ_BATCH });
    for (const e of page) yield e;
    if (page.length < READ_BATCH) return;
    below = page[page.length - 1]!.id;
  }
}

export interface AuditFilter {
  who?: string;
  action?: string;
  outcome?: string;
  door?: string;
  since?: string;
  until?: string;
}

/** What verify keeps of an entry: its links, and whether its content matches its hash. */
interface Link {
  id: number;
  lane?: number;
  prev?: number;
  prev_hash: string;
  hash: string;
  intact: boolean;
}

export type VerifyResult =
  | { ok: true; entries: number; first: number | null; last: number | null }
  | { ok: false; entries: number; bad: { id: number; reason: string } };

/** Keys whose values are never written to the log. */
const SECRET_KEY = /pass|secret|token|api_?key|private|authorization|cookie|signature|credential|salt|hash|regverify|hook_?url/i;

/** JSON with object keys sorted at every level: the same entry always hashes the same. */
export function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(',')}}`;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export function entryHash(e: Omit<AuditRecord, 'hash'> | AuditRecord): string {
  const { hash: _drop, ...body } = e as AuditRecord;
  return sha256(body.prev_hash + canonical(body));
}

/**
 * An input as the log keeps it: secrets (passwords, keys, tokens, hook URLs — by field name, at any depth) replaced by
 * "[redacted]", long strings cut, long lists cut with a count, deep objects cut; at most MAX_SUMMARY characters.
 * A webhook ability's `url` is its secret (it may carry a token), so an ability about webhooks has it redacted too.
 */
export function summarise(input: unknown, opts: { redactUrl?: boolean } = {}): unknown {
  // NULs and unpaired surrogates (which the store refuses) spelled \uXXXX: a refused call's odd input is still logged.
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return printable(v.length > MAX_STRING ? `${v.slice(0, MAX_STRING)}… (${v.length} characters)` : v);
    if (v === null || typeof v !== 'object') return v;
    if (depth >= MAX_DEPTH) return '…';
    if (Array.isArray(v)) {
      const head = v.slice(0, MAX_ITEMS).map((x) => walk(x, depth + 1));
      return v.length > MAX_ITEMS ? [...head, `… ${v.length - MAX_ITEMS} more`] : head;
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>).slice(0, 50)) {
      const secret = SECRET_KEY.test(k) || (opts.redactUrl === true && /url/i.test(k));
      out[printable(k)] = secret && x !== undefined && x !== null && x !== '' ? '[redacted]' : walk(x, depth + 1);
    }
    return out;
  };
  const s = walk(input ?? null, 0);
  const text = canonical(s);
  return text.length > MAX_SUMMARY ? { summary: `${text.slice(0, MAX_SUMMARY)}…`, characters: text.length } : s;
}

function who(p: Principal | 'system'): Pick<AuditRecord, 'who_kind' | 'who_id' | 'who_name'> {
  if (p === 'system') return { who_kind: 'system', who_id: null, who_name: 'system' };
  if (p.kind === 'local') return { who_kind: 'local', who_id: null, who_name: p.name };
  if (p.kind === 'oauth') return { who_kind: 'oauth', who_id: null, who_name: p.name };
  return { who_kind: p.kind, who_id: p.id, who_name: p.name };
}

/** The door a call came through: its principal's request's, or the local process's own (stdio MCP or the CLI). */
function doorOf(opts: RunOptions): CallOrigin {
  const p = opts.principal;
  if (p.origin) return p.origin;
  return { door: p.kind === 'local' && p.name === 'stdio' ? 'mcp' : 'cli', address: null };
}

export class AuditService implements AuditSink {
  /** The clock entries are stamped and aged by (tests move it). */
  now: () => number = Date.now;
  /** The retention bounds (MAX_ENTRIES, MAX_AGE_DAYS); tests lower them. */
  maxEntries = MAX_ENTRIES;
  maxAgeDays = MAX_AGE_DAYS;
  private failedWindow = { start: 0, count: 0, suppressed: 0 };

  constructor(private readonly store: Store) {}

  /** The lane this process appends to (tests set it to stand for another process). */
  lane = process.pid % AUDIT_LANES;

  private head(tx: Pick<Tx, 'get'>, lane: number): AuditHeadRecord {
    return (
      tx.get<AuditHeadRecord>('audit_head', lane + 1) ?? {
        id: lane + 1,
        last_seq: 0,
        last_hash: GENESIS,
        anchor_seq: 0,
        anchor_hash: GENESIS,
      }
    );
  }

  /** Appends one entry after its lane's head, in one durable write with the new head; trims past the bounds. */
  async append(e: Omit<AuditRecord, 'id' | 'at' | 'prev_hash' | 'hash'>, redactUrl = false): Promise<AuditRecord> {
    const at = new Date(this.now()).toISOString();
    const input = summarise(e.input, { redactUrl });
    const lane = this.lane;
    const trim = await this.trimPlan();
    return this.store.write((tx) => {
      const head = this.head(tx, lane);
      // The id is the insert's; the hash covers it, so the entry is inserted, then put with its hash.
      const draft = tx.insert<AuditRecord>('audit', { ...e, input, at, lane, prev: head.last_seq, prev_hash: head.last_hash, hash: '' });
      const { hash: _none, ...body } = draft;
      const rec: AuditRecord = { ...body, hash: entryHash(body) };
      tx.put<AuditRecord>('audit', rec);
      tx.put<AuditHeadRecord>('audit_head', { ...head, last_seq: rec.id, last_hash: rec.hash });
      if (trim) this.trim(tx, trim);
      return rec;
    });
  }

  /** The oldest entry's time, with the trim line it was read at (it changes only when the line moves). */
  private oldestSeen: { floor: number; at: string } | null = null;

  /**
   * Whether this append trims, and what: more than maxEntries entries (then down to a little below), or an entry older
   * than maxAgeDays (then those a little younger too). Null most of the time, decided from memory (the count, the trim
   * line, the oldest entry's time as last read); a trim reads the oldest entries (at most TRIM_PER_APPEND) and names
   * the ones it drops. Read before the write: a write cannot read the log (it is not in memory).
   */
  private async trimPlan(): Promise<{ ids: number[]; through: number } | null> {
    const count = this.store.count('audit') + 1;
    const slack = Math.min(TRIM_SLACK, Math.floor(this.maxEntries / 100));
    const drop = count > this.maxEntries ? count - Math.max(1, this.maxEntries - slack) : 0;
    const cutoff = this.now() - this.maxAgeDays * 86_400_000;
    const floor = trimLine(this.store);
    if (this.oldestSeen?.floor !== floor) {
      const [first] = await this.store.readRecords<AuditRecord>('audit', { order: 'oldest', above: floor, limit: 1 });
      this.oldestSeen = first ? { floor, at: first.at } : null;
    }
    if (!drop && !(this.oldestSeen && this.oldestSeen.at < new Date(cutoff).toISOString())) return null;
    const before = new Date(cutoff + TRIM_AGE_SLACK_MS).toISOString();
    const oldest = await this.store.readRecords<AuditRecord>('audit', { order: 'oldest', above: floor, limit: TRIM_PER_APPEND });
    const ids: number[] = [];
    for (const e of oldest) {
      if (ids.length >= drop && e.at >= before) break;
      ids.push(e.id);
    }
    return ids.length ? { ids, through: ids[ids.length - 1]! } : null;
  }

  /**
   * Drops the entries the plan names (the oldest, read before the write) and raises the trim line past them; an id
   * between them that no commit used is stepped over. Another process that trimmed meanwhile (the line is past them)
   * leaves nothing to do.
   */
  private trim(tx: Tx, plan: { ids: number[]; through: number }): void {
    const line = trimLine(tx);
    if (line >= plan.through) return;
    for (const id of plan.ids) if (id > line) tx.delete('audit', id);
    tx.put<AuditTrimRecord>('audit_head', { id: 0, through: plan.through });
  }

  /** The registry's hook: one entry per call of an ability that is not read-only, whatever its outcome. */
  async called(a: Ability, input: unknown, opts: RunOptions, error: ServiceError | null): Promise<void> {
    // A caller who may not write (a viewer, a read key, a read-only process) causes no write, not even the record of its
    // refused call: read-only means no write. A refusal of a caller who may write (an administrators-only ability
    // asked for by a write key, a bad input) is recorded.
    if (!mayWrite(opts.principal)) return;
    const origin = doorOf(opts);
    await this.append(
      {
        ...who(opts.principal),
        door: origin.door,
        address: origin.address ?? null,
        action: a.name,
        input,
        outcome: error ? error.code : 'ok',
        status: error ? error.status : null,
      },
      /webhook/.test(a.name),
    );
  }

  /**
   * A console login, or a login that failed on any door. `account` is the credential's name before it was checked
   * ("user:NAME" or "key:KEY-ID"). Failures are bounded per minute per process: past the bound they are counted
   * into the next one recorded (a scanner cannot turn the log into a write per request).
   */
  async login(p: { door: AuditDoor; address: string | null; account: string | null; ok: boolean; code?: string; principal?: Principal }) {
    let suppressed = 0;
    if (!p.ok) {
      const now = this.now();
      const w = this.failedWindow;
      if (now - w.start >= 60_000) Object.assign(w, { start: now, count: 0 });
      if (++w.count > FAILED_LOGINS_PER_MINUTE) {
        w.suppressed++;
        return;
      }
      suppressed = w.suppressed;
      w.suppressed = 0;
    }
    const m = /^(user|key):(.*)$/s.exec(p.account ?? '');
    const claimed = { who_kind: (m?.[1] ?? 'user') as 'user' | 'key', who_id: null, who_name: (m?.[2] ?? '').slice(0, 200) };
    await this.append({
      ...(p.principal ? who(p.principal) : claimed),
      door: p.door,
      address: p.address,
      action: p.ok ? 'login' : 'login-failed',
      input: suppressed ? { suppressed_failures: suppressed } : null,
      outcome: p.ok ? 'ok' : (p.code ?? 'svc_rest_authentication_error'),
      status: p.ok ? null : 401,
    });
  }

  /** What the command line changed directly (keys, users, modules), as the local "cli". */
  async cli(action: string, input: unknown): Promise<void> {
    await this.append({ ...who({ kind: 'local', name: 'cli' }), door: 'cli', address: null, action, input, outcome: 'ok', status: null });
  }

  /** What a scheduler started (the sync schedule, …), as "system". */
  async system(action: string, input: unknown, outcome = 'ok'): Promise<AuditRecord> {
    return this.append({ ...who('system'), door: 'scheduler', address: null, action, input, outcome, status: null });
  }

  /**
   * Entries newest first, filtered: who (a name, or user:ID / key:ID), action, outcome, door, since/until (ISO). The
   * store filters, pages and counts (two reads; on PostgreSQL two SELECTs, not the log brought into the process).
   */
  async list(f: AuditFilter, page: number, perPage: number): Promise<{ items: AuditRecord[]; total: number }> {
    const where: FieldTest[] = [];
    const whoId = f.who ? /^(user|key):(\d+)$/.exec(f.who) : null;
    if (whoId) where.push({ field: 'who_kind', eq: whoId[1]! }, { field: 'who_id', eq: Number(whoId[2]) });
    else if (f.who) where.push({ field: 'who_name', ieq: f.who });
    if (f.action) where.push({ field: 'action', eq: f.action });
    if (f.outcome) where.push(f.outcome === 'error' ? { field: 'outcome', ne: 'ok' } : { field: 'outcome', eq: f.outcome });
    if (f.door) where.push({ field: 'door', eq: f.door });
    if (f.since) where.push({ field: 'at', gte: f.since });
    if (f.until) where.push({ field: 'at', lt: f.until });
    const above = trimLine(this.store);
    const [items, total] = await Promise.all([
      this.store.readRecords<AuditRecord>('audit', { order: 'newest', above, where, offset: (page - 1) * perPage, limit: perPage }),
      this.store.countRecords('audit', where),
    ]);
    return { items, total };
  }

  /**
   * Walks each lane from its head down to the trim line; names the entry that was edited, removed or slipped in (the
   * lowest such id when there are several). The log is read from the store newest first, a batch at a time, and what
   * the walk needs of each entry is kept (its links and whether its content matches its hash: about 270 bytes an
   * entry measured, 27 MB at MAX_ENTRIES). Appends and trims may go on meanwhile: the heads are taken before the read
   * (an entry above its lane's head then is a newer one, unless that head has not moved since), the trim line after
   * (an entry read between the line before and after was trimmed meanwhile).
   */
  async verify(): Promise<VerifyResult> {
    const heads = new Map<number, AuditHeadRecord>();
    for (let lane = 0; lane < AUDIT_LANES; lane++) {
      const head = this.store.get<AuditHeadRecord>('audit_head', lane + 1);
      if (head) heads.set(lane, head);
    }
    const top = Math.max(0, ...[...heads.values()].map((h) => h.last_seq));
    const floorBefore = trimLine(this.store);
    const entries = new Map<number, Link>();
    let newer = false; // an entry above the heads taken: read on, to find any slipped in there
    // Every entry, below the trim line too: one slipped in there is not in the chain either.
    for await (const e of newestFirst(this.store, 0)) {
      if (e.id > top) newer = true;
      entries.set(e.id, { id: e.id, lane: e.lane, prev: e.prev, prev_hash: e.prev_hash, hash: e.hash, intact: entryHash(e) === e.hash });
    }
    const floor = trimLine(this.store);
    /** Lanes whose head moved while the log was read: an entry of theirs above the head taken is a newer append. */
    const moved = new Set<number>();
    if (newer)
      for (let lane = 0; lane < AUDIT_LANES; lane++)
        if (this.store.get<AuditHeadRecord>('audit_head', lane + 1)?.last_seq !== heads.get(lane)?.last_seq) moved.add(lane);
    const seen = new Set<number>();
    let bad: { id: number; reason: string } | null = null;
    const fail = (id: number, reason: string) => {
      if (!bad || id < bad.id) bad = { id, reason };
    };
    for (let lane = 0; lane < AUDIT_LANES; lane++) {
      const head = heads.get(lane);
      if (!head || head.last_seq <= Math.max(floor, head.anchor_seq)) continue;
      // A walk ends at the trim line, or at the lane's own anchor (lane 0's, from before lanes: checked by its hash).
      const stop = Math.max(floor, head.anchor_seq);
      let id = head.last_seq;
      let want = head.last_hash;
      let next: Link | null = null; // the entry that named this one as its prev
      // Entry `at` is not the one its successor `after` (or, with none, the lane's head) names.
      const brokenLink = (at: number, after: Link | null) =>
        fail(
          after ? after.id : at,
          after
            ? 'does not follow the entry before it (this one or that one was changed)'
            : "the chain's head does not match its last entry",
        );
      while (id > stop) {
        const e = entries.get(id);
        if (!e) {
          fail(id, 'missing: the entry was removed');
          break;
        }
        if ((e.lane ?? 0) !== lane) {
          brokenLink(id, next);
          break;
        }
        if (!e.intact) {
          fail(id, 'edited: its content does not match its hash');
          break;
        }
        if (e.hash !== want) {
          brokenLink(id, next);
          break;
        }
        seen.add(id);
        const prev = e.prev ?? e.id - 1;
        if (prev >= id) {
          fail(id, 'does not follow the entry before it (this one or that one was changed)');
          break;
        }
        // The walk's last entry follows the lane's anchor (GENESIS for a lane begun afresh), unless trimmed past it.
        if (prev === head.anchor_seq && prev >= floor && e.prev_hash !== head.anchor_hash)
          fail(id, 'does not follow the entry before it (this one or that one was changed)');
        next = e;
        want = e.prev_hash;
        id = prev;
      }
    }
    // An entry no walk reached was slipped in (or is below a break already named).
    if (!bad)
      for (const e of entries.values()) {
        const lane = e.lane ?? 0;
        if (seen.has(e.id) || (moved.has(lane) && e.id > (heads.get(lane)?.last_seq ?? 0))) continue;
        if (e.id > floorBefore && e.id <= floor) continue; // trimmed while the log was read
        fail(e.id, 'not in the chain');
      }
    if (bad) return { ok: false, entries: seen.size, bad };
    let first: number | null = null;
    let last: number | null = null;
    for (const id of seen) {
      if (first === null || id < first) first = id;
      if (last === null || id > last) last = id;
    }
    return { ok: true, entries: seen.size, first, last };
  }
}
