// Group commit, shared by both store engines: writes queued while a commit is under way run together in the next
// one, so that many concurrent writers cost one fsync (lowdb) or one transaction (PostgreSQL), not one each.
// The engine says how a commit is made (`commit`); this file owns the queue, the loop and what callers are told,
// and the record half of a write's Tx over the tables both engines hold in memory.
import { ServiceError } from '../core/errors.js';
import { findTextFault } from '../core/storable-text.js';
import { log } from '../log.js';
import type { CollectionName, Rec, Tx } from './engine.js';
import { shareParts } from './shared-parts.js';

/** What became of one queued write. */
export type Outcome = { ok: true; value: unknown; then?: Array<() => void> } | { ok: false; error: unknown };

/** A queued write and its caller's promise. */
export interface Pending<T> {
  fn: (tx: T) => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  /** WriteOptions.skipLocked, for an engine that honours it: such a write is committed in a batch of its own. */
  skipLocked?: boolean;
}

/** One commit, made by the engine: `take()` hands it every write queued so far (call it when the batch may close). */
export type Commit<T> = (take: () => Pending<T>[]) => Promise<{
  batch: Pending<T>[];
  outcomes: Outcome[];
  /** Runs after the callers have been told (lowdb releases its file lock there). */
  after?: () => Promise<void>;
  /**
   * Set when nothing was committed because of a value in the batch (the database refused it, or it could not be
   * serialised), not because the disk or the server failed: the batch is then committed again in halves, so that the
   * write that holds the value fails alone and the others are acknowledged.
   */
  refused?: boolean;
}>;

/** What the caller of a write the engine refused for a value in it is told (a batch of one: the write is the cause). */
export function valueRefused(why: string): ServiceError {
  return new ServiceError('svc_invalid_input', `The change was not saved because ${why}; nothing was changed.`, 400);
}

/**
 * Refuses a record or blob that holds text no engine may keep (a NUL character, an unpaired surrogate: PostgreSQL's
 * jsonb refuses both). Both engines check every record and blob a write puts, so that they store the same things, and
 * the write that holds such text fails alone, before any commit.
 */
export function assertStorable(what: string, value: unknown): void {
  const f = findTextFault(value);
  if (f) throw valueRefused(`${what}${f.path.length ? `, field ${f.path.join('.')},` : ''} ${f.fault}`);
}

export class GroupCommit<T> {
  private queue: Pending<T>[] = [];
  private flushing: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly commit: Commit<T>) {}

  /** Whether a commit is under way or about to start. */
  get busy(): boolean {
    return this.flushing !== null;
  }

  /** Callbacks waiting for the commit under way (or about to start) to end: see `settled`. */
  private waiting: Array<() => void> = [];

  /**
   * Calls `fn` at once when no commit is under way or about to start; else as soon as the one under way (or the next
   * to begin) has ended, before another begins. In `fn`, memory is not in the middle of a commit, and it holds what
   * that commit caught up with under the engine's lock: every commit another process acknowledged before the call.
   */
  settled(fn: () => void): void {
    if (!this.flushing) return fn();
    this.waiting.push(fn);
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const fn of waiting) fn();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  write<R>(fn: (tx: T) => R, skipLocked = false): Promise<R> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject, ...(skipLocked ? { skipLocked } : {}) });
      this.kick();
    });
  }

  /** Waits for every queued write (and the ones their callers queue on hearing back), then refuses new ones. */
  async close(): Promise<void> {
    while (this.flushing) await this.flushing;
    this.closed = true;
  }

  private kick(): void {
    if (this.flushing || !this.queue.length) return;
    // Callers resolved by the last commit may queue more before this loop has ended: look again after it.
    this.flushing = this.loop().finally(() => {
      this.flushing = null;
      this.wake();
      this.kick();
    });
  }

  private async loop(): Promise<void> {
    await Promise.resolve(); // let writes issued in the same tick join this commit
    while (this.queue.length) {
      try {
        await this.commitSome(() => this.take());
      } finally {
        this.wake();
      }
    }
  }

  /** The queued writes up to the first skipLocked one, or that one alone (it may be skipped as a whole). */
  private take(): Pending<T>[] {
    const at = this.queue.findIndex((p) => p.skipLocked);
    return this.queue.splice(0, at < 0 ? this.queue.length : Math.max(at, 1));
  }

  /**
   * One commit, and its callers told. A batch refused for a value in it is committed again in halves (each write runs
   * anew, memory having been put back): one bad write among n costs about 2·log2(n) more commits, and fails alone.
   */
  private async commitSome(take: () => Pending<T>[]): Promise<void> {
    const { batch, outcomes, after, refused } = await this.commit(take);
    if (refused && batch.length > 1) {
      if (after) await after().catch(() => {});
      const half = Math.ceil(batch.length / 2);
      await this.commitSome(() => batch.slice(0, half));
      await this.commitSome(() => batch.slice(half));
      return;
    }
    batch.forEach((p, i) => {
      const o = outcomes[i]!;
      if (o.ok) p.resolve(o.value);
      else p.reject(o.error);
    });
    // What the committed writes asked to run once committed (Tx.afterCommit): a failing one is logged, not thrown.
    for (const o of outcomes)
      if (o.ok && o.then)
        for (const fn of o.then)
          try {
            fn();
          } catch (e) {
            log('error', 'an after-commit step failed', { err: String(e) });
          }
    if (after) await after().catch(() => {});
  }
}

/**
 * Runs each write of a batch against a transaction with its own undo log: a write that throws is undone and fails
 * alone; the others stay applied (in memory, for the engine to persist). `kept` collects the undo steps of the writes
 * that succeeded, for an engine that must roll the whole batch back when persisting fails.
 */
export function applyBatch<T>(
  batch: readonly Pending<T>[],
  txOf: (undo: Array<() => void>, then: Array<() => void>) => T,
  kept?: Array<() => void>,
): Outcome[] {
  return batch.map((p): Outcome => {
    const undo: Array<() => void> = [];
    // The write's afterCommit steps: kept with its outcome only when it succeeds (a run that throws drops them).
    const then: Array<() => void> = [];
    try {
      const value = p.fn(txOf(undo, then));
      if (kept) for (const u of undo) kept.push(u); // not push(...undo): a write of 50,000 inserts overflows the stack
      return then.length ? { ok: true, value, then } : { ok: true, value };
    } catch (error) {
      for (const u of undo.reverse()) u();
      return { ok: false, error };
    }
  });
}

/** A store's records in memory: one map a collection, its id counters, and a version bump for derived caches. */
export interface Tables {
  data: Map<CollectionName, Map<number, Rec>>;
  counters: Partial<Record<CollectionName, number>>;
  /** The collection changed, by a change of record `id` (change-log.ts). */
  bump(col: CollectionName, id: number): void;
  get: Tx['get'];
  all: Tx['all'];
}

/**
 * The record operations of a write's Tx over the tables in memory: every change is logged in `undo` and reported to
 * `touched` (which file or row the engine must persist, and the record as it was before this change); its afterCommit
 * steps go to `then` (applyBatch keeps them with the write's outcome). Blobs are the engine's own (`putBlob`).
 */
export function tableTx(
  t: Tables,
  undo: Array<() => void>,
  touched: (col: CollectionName, id: number, prev: Rec | undefined) => void,
  then: Array<() => void>,
): Omit<Tx, 'putBlob'> {
  const set = (col: CollectionName, rec: Rec) => {
    assertStorable(`the ${col} record ${rec.id}`, rec);
    shareParts(col, rec);
    const map = t.data.get(col)!;
    const prev = map.get(rec.id);
    map.set(rec.id, rec);
    undo.push(() => {
      if (prev) map.set(rec.id, prev);
      else map.delete(rec.id);
      t.bump(col, rec.id);
    });
    touched(col, rec.id, prev);
    t.bump(col, rec.id);
  };
  return {
    get: t.get,
    all: t.all,
    unlocked: (fn) => fn(),
    afterCommit: (fn) => {
      then.push(fn);
    },
    insert: <T extends Rec>(col: CollectionName, rec: Omit<T, 'id'>): T => {
      const prevCounter = t.counters[col];
      const id = (prevCounter ?? 0) + 1;
      t.counters[col] = id;
      undo.push(() => {
        t.counters[col] = prevCounter;
      });
      const full = { id, ...rec } as unknown as T;
      set(col, full);
      return full;
    },
    put: (col, rec) => {
      set(col, rec);
      return rec;
    },
    delete: (col, id) => {
      const map = t.data.get(col)!;
      const prev = map.get(id);
      if (!prev) return false;
      map.delete(id);
      undo.push(() => {
        map.set(id, prev);
        t.bump(col, id);
      });
      touched(col, id, prev);
      t.bump(col, id);
      return true;
    },
  };
}
