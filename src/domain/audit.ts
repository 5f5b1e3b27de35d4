// The audit log (issue 32): every call that changes something, through every door (recorded once, in the registry's
// run path), what the schedulers start, and logins and failed logins. Each entry is chained to the one before by a
// SHA-256 hash: hash = sha256(prev_hash + canonical JSON of the entry without its hash), so that an edited entry, a
// removed one or one slipped in is found by verify(), which names the first bad entry.
//
// One chain whatever the number of processes: an entry is appended inside a store write, which reads the chain's
// head (the audit_head record) and writes the entry and the new head together. Both engines keep a read-modify-write
// exact across processes (lowdb: the data dir's lock file, reloading first; PostgreSQL: the head record's lock, taken
// at commit, and an append that read an older head runs again), so two processes never append after the same head.
//
// Retention: at most MAX_ENTRIES entries and none older than MAX_AGE_DAYS; each append trims up to TRIM_PER_APPEND of
// the oldest past either bound. The hash and sequence number of the last trimmed entry stay in the head as the anchor
// the verified chain starts from, so trimming never breaks verification.
import { printable } from '../core/storable-text.js';
import { createHash } from 'node:crypto';
import type { Ability } from '../core/ability.js';
import { ServiceError } from '../core/errors.js';
import { mayWrite, type CallOrigin, type Principal } from '../core/principal.js';
import type { AuditSink, RunOptions } from '../core/registry.js';
import type { Store, Tx } from '../store/store.js';

export const MAX_ENTRIES = 100_000;
export const MAX_AGE_DAYS = 365;
const TRIM_PER_APPEND = 50;
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
  prev_hash: string;
  hash: string;
}

/** The chain's head: its last entry, and the anchor (the last trimmed entry) the chain starts after. */
export interface AuditHeadRecord {
  id: 1;
  last_seq: number;
  last_hash: string;
  anchor_seq: number;
  anchor_hash: string;
}

export interface AuditFilter {
  who?: string;
  action?: string;
  outcome?: string;
  door?: string;
  since?: string;
  until?: string;
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

  private head(tx: Pick<Tx, 'get'>): AuditHeadRecord {
    return tx.get<AuditHeadRecord>('audit_head', 1) ?? { id: 1, last_seq: 0, last_hash: GENESIS, anchor_seq: 0, anchor_hash: GENESIS };
  }

  /** Appends one entry after the chain's head, in one durable write with the new head; trims past the bounds. */
  async append(e: Omit<AuditRecord, 'id' | 'at' | 'prev_hash' | 'hash'>, redactUrl = false): Promise<AuditRecord> {
    const at = new Date(this.now()).toISOString();
    const input = summarise(e.input, { redactUrl });
    return this.store.write((tx) => {
      const head = this.head(tx);
      const body: Omit<AuditRecord, 'hash'> = { ...e, input, id: head.last_seq + 1, at, prev_hash: head.last_hash };
      const rec: AuditRecord = { ...body, hash: entryHash(body) };
      tx.put<AuditRecord>('audit', rec);
      const next: AuditHeadRecord = { ...head, last_seq: rec.id, last_hash: rec.hash };
      this.trim(tx, next);
      tx.put<AuditHeadRecord>('audit_head', next);
      return rec;
    });
  }

  /** Drops up to TRIM_PER_APPEND oldest entries past MAX_ENTRIES or MAX_AGE_DAYS; the last dropped becomes the anchor. */
  private trim(tx: Tx, head: AuditHeadRecord): void {
    const oldest = new Date(this.now() - this.maxAgeDays * 86_400_000).toISOString();
    for (let i = 0; i < TRIM_PER_APPEND; i++) {
      const seq = head.anchor_seq + 1;
      if (seq >= head.last_seq) return; // the newest entry always stays
      const e = tx.get<AuditRecord>('audit', seq);
      if (!e) return; // a gap is verify's to report, not trim's to paper over
      if (head.last_seq - head.anchor_seq <= this.maxEntries && e.at >= oldest) return;
      tx.delete('audit', seq);
      head.anchor_seq = seq;
      head.anchor_hash = e.hash;
    }
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
  async system(action: string, input: unknown, outcome = 'ok'): Promise<void> {
    await this.append({ ...who('system'), door: 'scheduler', address: null, action, input, outcome, status: null });
  }

  /** Entries newest first, filtered: who (a name, or user:ID / key:ID), action, outcome, door, since/until (ISO). */
  list(f: AuditFilter, page: number, perPage: number): { items: AuditRecord[]; total: number } {
    const whoId = f.who ? /^(user|key):(\d+)$/.exec(f.who) : null;
    const match = (e: AuditRecord) =>
      (!f.who || (whoId ? e.who_kind === whoId[1] && e.who_id === Number(whoId[2]) : e.who_name.toLowerCase() === f.who.toLowerCase())) &&
      (!f.action || e.action === f.action) &&
      (!f.outcome || (f.outcome === 'error' ? e.outcome !== 'ok' : e.outcome === f.outcome)) &&
      (!f.door || e.door === f.door) &&
      (!f.since || e.at >= f.since) &&
      (!f.until || e.at < f.until);
    const head = this.head(this.store);
    const items: AuditRecord[] = [];
    let total = 0;
    const skip = (page - 1) * perPage;
    // Newest first by walking the chain down from its head: no sort of up to MAX_ENTRIES entries per request.
    for (let seq = head.last_seq; seq > head.anchor_seq; seq--) {
      const e = this.store.get<AuditRecord>('audit', seq);
      if (!e || !match(e)) continue;
      if (total >= skip && items.length < perPage) items.push(e);
      total++;
    }
    return { items, total };
  }

  /** Walks the chain from its anchor to its head; names the first entry that was edited, removed or slipped in. */
  verify(): VerifyResult {
    const head = this.head(this.store);
    let prev = head.anchor_hash;
    let n = 0;
    for (let seq = head.anchor_seq + 1; seq <= head.last_seq; seq++) {
      const e = this.store.get<AuditRecord>('audit', seq);
      if (!e) return { ok: false, entries: n, bad: { id: seq, reason: 'missing: the entry was removed' } };
      if (e.prev_hash !== prev)
        return {
          ok: false,
          entries: n,
          bad: { id: seq, reason: 'does not follow the entry before it (this one or that one was changed)' },
        };
      if (entryHash(e) !== e.hash)
        return { ok: false, entries: n, bad: { id: seq, reason: 'edited: its content does not match its hash' } };
      prev = e.hash;
      n++;
    }
    if (prev !== head.last_hash)
      return { ok: false, entries: n, bad: { id: head.last_seq, reason: "the chain's head does not match its last entry" } };
    for (const e of this.store.all<AuditRecord>('audit')) {
      if (e.id <= head.anchor_seq || e.id > head.last_seq) return { ok: false, entries: n, bad: { id: e.id, reason: 'not in the chain' } };
    }
    return { ok: true, entries: n, first: n ? head.anchor_seq + 1 : null, last: n ? head.last_seq : null };
  }
}
