// The store: lowdb JSON files under the data dir, held in memory, written by group commit.
//
// Layout: meta.json (format version, generation, id counters, which generation last wrote each file),
// one file per collection shard (sites.0.json holds site ids 0..249, ...), site-data/<id>.json for the
// heavy per-site data a sync brings (plugin and theme lists, findings, change log) and secrets/<id>.json
// (mode 0600) for child private keys. A tag edit therefore rewrites tags.json and meta.json only.
//
// Writes: callers pass a synchronous function that mutates through a Tx. Functions queued while a
// commit is on disk run together in the next commit (grouping); each runs under an undo log, so one that
// throws leaves no trace. A commit holds a lock file shared with other sitefleet processes on the same
// data dir (`serve` and `mcp` side by side), reloads what they changed first, and resolves its callers
// only after every file is fsynced and renamed into place.
//
// Journal (issue 34): a commit that changes records only (no blob) appends one line to journal.log — the records it
// changed, whole, and the id counters it moved — and fdatasyncs it: one write and one flush, no rename, no directory
// fsync, and bytes in proportion to what changed rather than to the shards it falls in. The shards take the journal
// in (compaction) when it passes JOURNAL_MAX bytes, with any commit that writes a blob, and on open and close; a reader
// (this process at start, another one on its next look) replays the entries newer than meta.json's generation.
import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  statSync,
  existsSync,
  chmodSync,
} from 'node:fs';
import { open as openFile, readFile, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Low } from 'lowdb';
import lockfile from 'proper-lockfile';
import {
  DurableJSONFile,
  StoreCorruptError,
  collectionFiles,
  parseJson,
  stageDurably,
  syncDir,
  writeDurably,
  type ShardFile,
  type StagedFile,
} from './durable-file.js';
import { ServiceError } from '../core/errors.js';
import { CURRENT_FORMAT, migrate } from './migrations.js';
import { PATCHED, applyPatch, diffRecord, isPatch, type RecPatch } from './journal-patch.js';
import { log } from '../log.js';
import {
  BLOB_KINDS,
  COLD_BLOBS,
  COLD_COLLECTIONS,
  COLLECTIONS,
  checkQuery,
  coldRefused,
  passes,
  type Blob,
  type CollectionName,
  type FieldTest,
  type Rec,
  type RecordQuery,
  SKIPPED,
  type Skipped,
  type Store as StoreEngine,
  type StoreMemory,
  type Tx,
  type WriteOptions,
} from './engine.js';
import { ColdCache, tooManyBlobs } from './cold-cache.js';
import { ChangeLog } from './change-log.js';
import { shareParts } from './shared-parts.js';
import {
  GroupCommit,
  applyBatch,
  assertStorable,
  tableTx,
  valueRefused,
  type Commit,
  type Outcome,
  type Pending,
  type Tables,
} from './group-commit.js';

export { COLLECTIONS, SKIPPED, type CollectionName, type Tx, type Blob };

/** A record a commit changed, and what it was when the commit found it (undefined: new). */
type Touched = [CollectionName, number, Rec | undefined];

export interface Meta {
  format: number;
  generation: number;
  counters: Partial<Record<CollectionName, number>>;
  files: Record<string, number>;
}

/** The journal of commits not yet in the shards (see the head of this file). */
export const JOURNAL = 'journal.log';
/**
 * When the next commit takes the journal into the shards: once it is JOURNAL_MAX long, or, when the shards it changed
 * are larger than that, once it is as long as they are (so rewriting them costs at most the bytes the journal saved:
 * a monitor's heartbeats touch every monitor shard), but never past JOURNAL_CAP (bounds start time and replay memory).
 */
export const JOURNAL_MAX = 4 * 1024 * 1024;
export const JOURNAL_CAP = 64 * 1024 * 1024;
/** Writes to the journal are durable when they return where the platform offers O_DSYNC (Linux, macOS); else fdatasync. */
const O_DSYNC = constants.O_DSYNC ?? 0;
/** How long the lock is kept after a commit for the next one, and for how long in a row at most. */
const LOCK_LINGER_MS = 10;
const LOCK_HOLD_MS = 50;

/**
 * One commit in the journal: its generation, the id counters it moved, and each record it changed — whole, absent when
 * deleted, or as a patch of the record before it (`0` then the patch: journal-patch.ts).
 */
export interface JournalEntry {
  g: number;
  c: Partial<Record<CollectionName, number>>;
  w: Array<JournalWrite>;
}
export type JournalWrite = [CollectionName, number, Rec?] | [CollectionName, number, 0, RecPatch];

/** The record a journal write leaves, given the one before it (`prev`); null when it deletes. A bad patch is corruption. */
export function journalRecord(file: string, w: JournalWrite, prev: Rec | undefined): Rec | null {
  if (w.length === 4) {
    const [col, id, , patch] = w;
    if (!prev || !isPatch(patch)) throw new StoreCorruptError(file, `a patch of ${col} ${id} that has no record to apply to`);
    try {
      return applyPatch(prev, patch);
    } catch (e) {
      throw new StoreCorruptError(file, `a patch of ${col} ${id} does not fit its record (${(e as Error).message})`);
    }
  }
  const rec = w[2];
  if (rec !== undefined && (!rec || typeof rec !== 'object' || rec.id !== w[1]))
    throw new StoreCorruptError(file, 'not a sitefleet journal');
  return rec ?? null;
}

/**
 * The complete entries of the journal from byte `from` on, and the byte where the last complete one ends. A line cut
 * short by a crash (no newline yet) was never acknowledged and is left out; a complete line that is not an entry is
 * corruption, said plainly.
 */
export function readJournal(file: string, from = 0): { entries: JournalEntry[]; end: number; size: number } {
  // Only the bytes past `from` are read: another process looking again reads what was appended since, not the journal.
  let buf: Buffer;
  let size: number;
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    size = fstatSync(fd).size;
    buf = Buffer.alloc(Math.max(0, size - from));
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, from + got);
      if (n === 0) break;
      got += n;
    }
    buf = buf.subarray(0, got);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], end: 0, size: 0 };
    throw new StoreCorruptError(file, (e as Error).message);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  if (size < from) return { entries: [], end: from, size };
  const end = from + buf.lastIndexOf(0x0a) + 1;
  if (end <= from) return { entries: [], end: from, size };
  const entries: JournalEntry[] = [];
  const text = buf.subarray(0, end - from).toString('utf8');
  for (const line of text.split('\n')) {
    if (!line) continue;
    const e = parseJson<JournalEntry>(file, line);
    if (!e || typeof e.g !== 'number' || !Array.isArray(e.w) || typeof e.c !== 'object')
      throw new StoreCorruptError(file, 'not a sitefleet journal');
    entries.push(e);
  }
  return { entries, end, size };
}

/**
 * The data dir's cross-process lock, which every commit holds: what is on disk while it is held is one consistent fleet
 * (backups take it to snapshot the files).
 */
export async function lockDataDir(dir: string): Promise<() => Promise<void>> {
  const release = await lockfile.lock(dir, {
    lockfilePath: join(dir, '.lock'),
    realpath: false,
    // A holder refreshes the lock every second; one not refreshed for 5 s belongs to a dead process
    // (kill -9) and is taken over. Waiting is bounded at about 10 s, longer than that staleness.
    stale: 5_000,
    update: 1_000,
    retries: { retries: 400, factor: 1, minTimeout: 25, maxTimeout: 25 },
    onCompromised: (err) => log('error', 'store lock compromised', { err: err.message }),
  });
  // The lock directory is made with the umask's mode; like everything in the data dir it is the owner's alone.
  try {
    chmodSync(join(dir, '.lock'), 0o700);
  } catch {
    /* gone already or not ours: nothing to protect */
  }
  return release;
}

/** The file that holds record `id` of `col`: `sites.0.json` (ids 0–249), …, or `tags.json` for an unsharded collection. */
export const fileOf = (col: CollectionName, id: number): string =>
  COLLECTIONS[col] ? `${col}.${Math.floor(id / COLLECTIONS[col])}.json` : `${col}.json`;

/**
 * What the journal `file` holds past meta.json's generation `gen`, for a reader of the files at rest (a backup, the
 * lease check): each changed record by collection and id (null = deleted), and the id counters it moved. `base` gives
 * a record as the shards hold it, for a patch to apply to; `only` limits the records to those collections.
 */
export function journalOverlay(
  file: string,
  gen: number,
  base: (col: CollectionName, id: number) => Rec | undefined,
  only?: ReadonlySet<CollectionName>,
): { recs: Map<CollectionName, Map<number, Rec | null>>; counters: Partial<Record<CollectionName, number>> } {
  const recs = new Map<CollectionName, Map<number, Rec | null>>();
  const counters: Partial<Record<CollectionName, number>> = {};
  for (const e of readJournal(file).entries) {
    if (e.g <= gen) continue;
    for (const w of e.w) {
      const [col, id] = w;
      if (only && !only.has(col)) continue;
      if (!recs.has(col)) recs.set(col, new Map());
      const m = recs.get(col)!;
      const prev = m.has(id) ? (m.get(id) ?? undefined) : base(col, id);
      m.set(id, journalRecord(file, w, prev));
    }
    for (const [col, n] of Object.entries(e.c) as Array<[CollectionName, number]>) counters[col] = Math.max(counters[col] ?? 0, n);
  }
  return { recs, counters };
}

export class LowdbStore implements StoreEngine {
  readonly engine = 'lowdb' as const;
  private data = new Map<CollectionName, Map<number, Rec>>();
  /** Each collection's version, and which records moved it. */
  private readonly changeLog = new ChangeLog();
  private meta!: Meta;
  private metaStat = '';
  private writes = new GroupCommit<Tx>((take) => this.commit(take));
  private blobCache = new Map<string, unknown>();
  /** Cold blobs (COLD_BLOBS) read from their files: bounded by bytes, never the whole kind. */
  private coldCache = new ColdCache();
  /**
   * The cold blobs of the commit under way: readers see them as they see its other changes (memory holds those from
   * the moment the write runs), so that no reader finds a feed state that names an index not yet on disk.
   */
  private pendingCold: Map<string, unknown> | null = null;
  private lastLook = -Infinity;
  /** Whether this synchronous run has looked for other processes' commits (see refreshIfStale). */
  private looked = false;
  private readonly lookDone = (): void => {
    this.looked = false;
  };
  /** meta.json's generation as last read or written (the journal's entries above it are not in the shards yet). */
  private diskGen = 0;
  /** Bytes of the journal taken in so far (up to the end of its last complete entry), and its size at the last look. */
  private journalEnd = 0;
  private journalSize = 0;
  /** Shard files whose records the journal changed since the last compaction. */
  private journalDirty = new Set<string>();
  /** The size of each shard file as last read or written, and the sum of those in journalDirty. */
  private shardBytes = new Map<string, number>();
  private journalDirtyBytes = 0;
  private journalFh: FileHandle | null = null;
  /** JOURNAL_MAX for this store (tests lower it to see compactions without writing megabytes). */
  journalMax = JOURNAL_MAX;
  /** The lock, kept for LOCK_LINGER_MS after a commit so that the next one (an ability's audit entry) needs no mkdir. */
  private held: { release: () => Promise<void>; timer: NodeJS.Timeout; since: number } | null = null;
  /** A lingering lock being let go: the next commit waits for it rather than find the lock taken (a 25 ms retry). */
  private releasing: Promise<void> | null = null;

  private constructor(readonly dir: string) {}

  static async open(dir: string): Promise<LowdbStore> {
    const s = new LowdbStore(dir);
    await s.init();
    return s;
  }

  private async init(): Promise<void> {
    makeDataDir(this.dir);
    try {
      chmodSync(this.dir, 0o700);
      chmodSync(join(this.dir, 'secrets'), 0o700);
    } catch {
      /* not ours to fix */
    }
    const metaFile = join(this.dir, 'meta.json');
    const release = await this.lock();
    try {
      if (!existsSync(metaFile)) {
        const strays = readdirSync(this.dir).filter((f) => f.endsWith('.json') || f === JOURNAL);
        if (strays.length) throw new StoreCorruptError(metaFile, `missing while ${strays[0]} exists`);
        await new Low<Meta>(new DurableJSONFile(metaFile), this.emptyMeta()).write();
        await syncDir(this.dir);
      }
      const meta = this.readMeta();
      if (meta.format > CURRENT_FORMAT) {
        throw new StoreCorruptError(metaFile, `format ${meta.format} was written by a newer sitefleet (this one reads ${CURRENT_FORMAT})`);
      }
      if (meta.format < CURRENT_FORMAT) {
        // The steps rewrite the files at rest: what a journal holds (data format 2 has one) goes into them first.
        if (existsSync(this.journalFile) && statSync(this.journalFile).size > 0) {
          this.loadAll();
          await this.persist(new Set(), new Map(), true);
        }
        await migrate(this.dir, meta.format);
        await writeDurably(metaFile, JSON.stringify({ ...this.readMeta(), format: CURRENT_FORMAT }));
        await syncDir(this.dir);
      }
      if (!existsSync(this.journalFile)) {
        await writeDurably(this.journalFile, '');
        await syncDir(this.dir);
      }
      this.loadAll();
      // What the journal holds goes into the shards now: the files at rest are the fleet (backups, tools, downgrades).
      if (this.journalEnd > 0) await this.persist(new Set(), new Map(), true);
    } finally {
      await release();
    }
  }

  private get journalFile(): string {
    return join(this.dir, JOURNAL);
  }

  private emptyMeta(): Meta {
    return { format: CURRENT_FORMAT, generation: 0, counters: {}, files: {} };
  }

  private readMeta(): Meta {
    const file = join(this.dir, 'meta.json');
    const m = parseJson<Meta>(file, readFileSync(file, 'utf8'));
    if (!m || typeof m !== 'object' || typeof m.format !== 'number' || typeof m.generation !== 'number' || typeof m.files !== 'object') {
      throw new StoreCorruptError(file, 'not a sitefleet meta file');
    }
    m.counters ??= {};
    return m;
  }

  /** Changes whenever meta.json or the journal does. Also notes the journal's size (a crashed writer's cut-off tail). */
  private statKey(): string {
    const st = statSync(join(this.dir, 'meta.json'), { bigint: true });
    let j = '';
    try {
      const js = statSync(this.journalFile, { bigint: true });
      this.journalSize = Number(js.size);
      j = `${js.ino}:${js.mtimeNs}:${js.size}`;
    } catch {
      this.journalSize = 0;
    }
    return `${st.ino}:${st.mtimeNs}:${st.size}/${j}`;
  }

  private readShard(name: string): Rec[] {
    const file = join(this.dir, name);
    if (!existsSync(file)) return [];
    const text = readFileSync(file, 'utf8');
    this.shardBytes.set(name, text.length);
    const body = parseJson<ShardFile<Rec>>(file, text);
    if (!body || !Array.isArray(body.records) || body.records.some((r) => !r || typeof r.id !== 'number')) {
      throw new StoreCorruptError(file, 'not a sitefleet collection file');
    }
    return body.records;
  }

  private loadAll(): void {
    this.metaStat = this.statKey();
    this.meta = this.readMeta();
    this.diskGen = this.meta.generation;
    const names = readdirSync(this.dir).filter((f) => f.endsWith('.json') && f !== 'meta.json');
    for (const col of Object.keys(COLLECTIONS) as CollectionName[]) {
      const map = new Map<number, Rec>();
      for (const f of collectionFiles(names, col)) {
        for (const r of this.readShard(f)) map.set(r.id, shareParts(col, r));
      }
      this.data.set(col, map);
      this.bump(col);
      // A commit that died between its data files and meta.json must not make us reuse an id.
      let max = this.meta.counters[col] ?? 0;
      for (const id of map.keys()) if (id > max) max = id;
      this.meta.counters[col] = max;
    }
    this.journalEnd = 0;
    this.clearJournalled();
    this.replayJournal();
  }

  /** Notes that the journal changed records of shard `file` (it is rewritten at the next compaction). */
  private markJournalled(file: string): void {
    if (this.journalDirty.has(file)) return;
    this.journalDirty.add(file);
    this.journalDirtyBytes += this.shardBytes.get(file) ?? 0;
  }

  private clearJournalled(): void {
    this.journalDirty.clear();
    this.journalDirtyBytes = 0;
  }

  /** Whether the journal is long enough to be taken into the shards (see JOURNAL_MAX). */
  private journalFull(): boolean {
    return this.journalEnd >= Math.min(JOURNAL_CAP, Math.max(this.journalMax, this.journalDirtyBytes));
  }

  /** Takes in the journal's complete entries past what was taken so far; those the shards already hold are skipped. */
  private replayJournal(): void {
    const { entries, end } = readJournal(this.journalFile, this.journalEnd);
    this.journalEnd = end;
    for (const e of entries) {
      if (e.g <= this.meta.generation) continue;
      for (const w of e.w) {
        const [col, id] = w;
        const map = this.data.get(col);
        if (!map) continue;
        const rec = journalRecord(this.journalFile, w, map.get(id));
        if (rec) map.set(id, shareParts(col, rec));
        else map.delete(id);
        this.bump(col, id);
        this.markJournalled(fileOf(col, id));
      }
      for (const [col, n] of Object.entries(e.c) as Array<[CollectionName, number]>) {
        this.meta.counters[col] = Math.max(this.meta.counters[col] ?? 0, n);
      }
      this.meta.generation = e.g;
    }
  }

  /**
   * Every read first takes in what another process committed, so no caller has to remember to; a write does the same
   * under the lock. Cheap when nothing changed (a stat of meta.json and of the journal), and at most once a millisecond
   * and once per synchronous run: the reads of one run (a loop over every site) see one state, never a reload half-way
   * through. So a read may miss a commit made in the last millisecond; `sync()` looks at once (the HTTP doors call it
   * at the start of each request, so a request sees every commit acknowledged before it).
   */
  private refreshIfStale(force = false, between = false): void {
    // While this process still holds the lock from its last commit, no other process can have committed since. In the
    // middle of a commit memory holds what is not yet durable: a look then waits (`sync`), a read goes without.
    if ((this.writes.busy && !between) || this.writes.isClosed || this.held) return;
    const t = performance.now();
    if (!force && (this.looked || t - this.lastLook < 1)) return;
    this.lastLook = t;
    if (!this.looked) {
      this.looked = true;
      queueMicrotask(this.lookDone);
    }
    let key: string;
    try {
      key = this.statKey();
    } catch {
      return;
    }
    if (key !== this.metaStat) this.reloadChanged();
  }

  private reloadChanged(): void {
    const key = this.statKey();
    const meta = this.readMeta();
    if (meta.generation === this.diskGen) {
      // Only the journal grew: take in its new entries. Shorter than what we took means a compaction we missed.
      if (this.journalSize >= this.journalEnd) {
        this.replayJournal();
        this.metaStat = key;
        return;
      }
    }
    for (const [file, gen] of Object.entries(meta.files)) {
      if (this.meta.files[file] === gen) continue;
      const col = file.split('.')[0] as CollectionName;
      if (!(col in COLLECTIONS)) continue;
      const map = this.data.get(col)!;
      const shard = COLLECTIONS[col];
      const lo = shard ? Number(file.split('.')[1]) * shard : -Infinity;
      const hi = shard ? lo + shard : Infinity;
      if (shard) for (let id = lo; id < hi; id++) map.delete(id);
      else map.clear();
      for (const r of this.readShard(file)) map.set(r.id, shareParts(col, r));
      this.bump(col);
    }
    this.blobCache.clear();
    this.coldCache.clear();
    for (const col of Object.keys(COLLECTIONS) as CollectionName[]) {
      this.meta.counters[col] = Math.max(this.meta.counters[col] ?? 0, meta.counters[col] ?? 0);
    }
    this.meta = { ...meta, counters: { ...this.meta.counters } };
    this.diskGen = meta.generation;
    // The shards now hold every entry up to meta's generation (the compaction wrote all the journal had touched).
    this.journalEnd = 0;
    this.clearJournalled();
    this.replayJournal();
    this.metaStat = key;
  }

  private tables(): Tables {
    return {
      data: this.data,
      counters: this.meta.counters,
      bump: (col, id) => this.changeLog.bump(col, id),
      get: (col, id) => this.get(col, id),
      all: (col) => this.all(col),
    };
  }

  private bump(col: CollectionName, id?: number): void {
    this.changeLog.bump(col, id);
  }

  changes(): number {
    this.refreshIfStale();
    return this.changeLog.total;
  }

  /** Changes whenever the collection changes (here or in another process): a key for derived caches. */
  version(col: CollectionName): number {
    this.refreshIfStale();
    return this.changeLog.version(col);
  }

  changedSince(col: CollectionName, version: number): number[] | null {
    this.refreshIfStale();
    return this.changeLog.since(col, version);
  }

  get<T extends Rec>(col: CollectionName, id: number): T | undefined {
    if (COLD_COLLECTIONS.has(col)) throw coldRefused(col);
    this.refreshIfStale();
    return this.data.get(col)!.get(id) as T | undefined;
  }

  all<T extends Rec>(col: CollectionName): IterableIterator<T> {
    if (COLD_COLLECTIONS.has(col)) throw coldRefused(col);
    this.refreshIfStale();
    return this.data.get(col)!.values() as IterableIterator<T>;
  }

  /**
   * A cold collection's records, from memory (this engine holds its files' contents): a walk down or up the ids from
   * the bound (ids here have no gaps but failed writes'), or over the sorted ids when they are much sparser than the
   * range.
   */
  async readRecords<T extends Rec>(col: CollectionName, q: RecordQuery): Promise<T[]> {
    checkQuery(col, q);
    this.refreshIfStale();
    const map = this.data.get(col)!;
    const lo = Math.max(q.above ?? 0, 0) + 1;
    const out: T[] = [];
    let skip = q.offset ?? 0;
    const take = (r: Rec | undefined): boolean => {
      if (!r || !passes(r, q.where)) return true;
      if (skip > 0) skip--;
      else out.push(r as T);
      return out.length < q.limit;
    };
    if (q.ids) {
      if (q.limit === 0) return out;
      const ids = [...new Set(q.ids)]
        .filter((id) => id >= lo && id < (q.below ?? Infinity))
        .sort((a, b) => (q.order === 'newest' ? b - a : a - b));
      for (const id of ids) if (!take(map.get(id))) break;
      return out;
    }
    // The top: the counter, or a record put with a higher id (a test's, a restore's); looked for only without `below`.
    let top = this.meta.counters[col] ?? 0;
    if (q.below === undefined) for (const id of map.keys()) if (id > top) top = id;
    const hi = Math.min(q.below ?? Infinity, top + 1) - 1;
    if (q.limit === 0 || hi < lo) return out;
    if (hi - lo > 4 * map.size + 1024) {
      const ids = [...map.keys()].filter((id) => id >= lo && id <= hi).sort((a, b) => (q.order === 'newest' ? b - a : a - b));
      for (const id of ids) if (!take(map.get(id))) break;
    } else if (q.order === 'newest') {
      for (let id = hi; id >= lo; id--) if (!take(map.get(id))) break;
    } else for (let id = lo; id <= hi; id++) if (!take(map.get(id))) break;
    return out;
  }

  async countRecords(col: CollectionName, where?: readonly FieldTest[]): Promise<number> {
    checkQuery(col, { order: 'newest', limit: 0, where });
    this.refreshIfStale();
    let n = 0;
    for (const r of this.data.get(col)!.values()) if (passes(r, where)) n++;
    return n;
  }

  count(col: CollectionName): number {
    this.refreshIfStale();
    return this.data.get(col)!.size;
  }

  /** Heavy per-site data or a site's secrets; read lazily, cached. */
  getBlob<T>(kind: Blob, id: number): T | null {
    if (COLD_BLOBS.has(kind)) throw new Error(`${kind} blobs are read with readBlob`);
    this.refreshIfStale();
    const key = `${kind}/${id}`;
    if (this.blobCache.has(key)) return this.blobCache.get(key) as T | null;
    const file = join(this.dir, kind, `${id}.json`);
    let value: T | null = null;
    if (existsSync(file)) value = parseJson<T>(file, readFileSync(file, 'utf8'));
    if (this.blobCache.size > 2000) this.blobCache.clear();
    this.blobCache.set(key, value);
    return value;
  }

  /** A cold blob from its file (through the bounded cache); any other from memory. */
  readBlob<T>(kind: Blob, id: number, opts: { cache?: boolean } = {}): Promise<T | null> {
    if (!COLD_BLOBS.has(kind)) return Promise.resolve(this.getBlob<T>(kind, id));
    this.refreshIfStale();
    const key = `${kind}/${id}`;
    if (this.pendingCold?.has(key)) return Promise.resolve((this.pendingCold.get(key) ?? null) as T | null);
    const file = join(this.dir, kind, `${id}.json`);
    return this.coldCache.read<T>(
      key,
      async () => {
        let text: string;
        try {
          text = await readFile(file, 'utf8');
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { value: null, bytes: 0 };
          throw e;
        }
        return { value: parseJson<T>(file, text), bytes: text.length };
      },
      opts.cache !== false,
    );
  }

  /** Blobs by id: cold ones from their files (all at once, no cache), any other from memory. */
  async readBlobs<T>(kind: Blob, ids: readonly number[]): Promise<Map<number, T | null>> {
    tooManyBlobs(ids);
    const out = new Map<number, T | null>();
    if (!COLD_BLOBS.has(kind)) {
      for (const id of ids) out.set(id, this.getBlob<T>(kind, id));
      return out;
    }
    this.refreshIfStale();
    const pending = this.pendingCold;
    const read = async (id: number): Promise<T | null> => {
      const key = `${kind}/${id}`;
      if (pending?.has(key)) return (pending.get(key) ?? null) as T | null;
      const file = join(this.dir, kind, `${id}.json`);
      try {
        return parseJson<T>(file, await readFile(file, 'utf8'));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw e;
      }
    };
    const values = await Promise.all(ids.map(read));
    ids.forEach((id, i) => out.set(id, values[i]!));
    return out;
  }

  memory(): StoreMemory {
    const blobs = Object.fromEntries(BLOB_KINDS.map((k) => [k, 0])) as Record<Blob, number>;
    for (const [key, v] of this.blobCache) if (v !== null) blobs[key.split('/')[0] as Blob]++;
    const records = Object.fromEntries([...this.data].map(([c, m]) => [c, m.size])) as Record<CollectionName, number>;
    return { records, blobs, cold_cache: this.coldCache.stats() };
  }

  /**
   * Reads take in other processes' commits at most once a millisecond (refreshIfStale); a request looks once more as
   * it arrives (one stat), so a commit acknowledged elsewhere just before it (a console logout) is never missed. With
   * a commit of this process under way (it may be waiting for the lock another process's commit holds), it looks once
   * that commit has ended, before the next begins.
   */
  sync(): Promise<void> {
    if (!this.writes.busy) {
      this.refreshIfStale(true);
      return Promise.resolve();
    }
    return new Promise((resolve) =>
      this.writes.settled(() => {
        this.refreshIfStale(true, true);
        resolve();
      }),
    );
  }

  write<R>(fn: (tx: Tx) => R): Promise<R>;
  write<R>(fn: (tx: Tx) => R, opts: WriteOptions): Promise<R | Skipped>;
  /** `skipLocked` changes nothing here: one writer at a time under the file lock, so there is no lock to skip. */
  write<R>(fn: (tx: Tx) => R, _opts?: WriteOptions): Promise<R | Skipped> {
    return this.writes.write(fn);
  }

  private lock(): Promise<() => Promise<void>> {
    return lockDataDir(this.dir);
  }

  /** The lock this process still holds from its last commit, or a fresh one. */
  private takeLock(): { since: number; release: Promise<() => Promise<void>> } {
    const h = this.held;
    if (!h) {
      const gone = this.releasing;
      return { since: performance.now(), release: gone ? gone.then(() => this.lock()) : this.lock() };
    }
    clearTimeout(h.timer);
    this.held = null;
    return { since: h.since, release: Promise.resolve(h.release) };
  }

  /**
   * After a commit the lock is let go LOCK_LINGER_MS later, unless another commit takes it first: a request's second
   * write (its audit entry) then costs no lock round trip. Held at most LOCK_HOLD_MS in a row, so another process
   * waiting for it (it retries every 25 ms) gets its turn.
   */
  private linger(release: () => Promise<void>, since: number): Promise<void> {
    if (this.writes.isClosed || performance.now() - since > LOCK_HOLD_MS) return release();
    const timer = setTimeout(() => {
      if (this.held?.timer !== timer) return;
      this.held = null;
      const gone: Promise<void> = release()
        .catch(() => {})
        .finally(() => {
          if (this.releasing === gone) this.releasing = null;
        });
      this.releasing = gone;
    }, LOCK_LINGER_MS);
    this.held = { release, timer, since };
    return Promise.resolve();
  }

  private async dropLock(): Promise<void> {
    await this.releasing;
    const h = this.held;
    if (!h) return;
    clearTimeout(h.timer);
    this.held = null;
    await h.release().catch(() => {});
  }

  /** One commit of every write queued so far, under the cross-process lock; callers hear of it while the lock goes. */
  private async commit(take: () => Pending<Tx>[]): ReturnType<Commit<Tx>> {
    const batch = take();
    let release: (() => Promise<void>) | undefined;
    let outcomes: Outcome[];
    const undoAll: Array<() => void> = [];
    const lingering = this.held !== null;
    const taken = this.takeLock();
    const after = () => (release ? this.linger(release, taken.since) : Promise.resolve());
    try {
      release = await taken.release;
      // Held since our last commit: memory is what is on disk (no other process can have committed meanwhile).
      if (!lingering && this.statKey() !== this.metaStat) this.reloadChanged();
      const dirty = new Set<string>();
      const touched = new Map<string, Touched>();
      const blobs = new Map<string, unknown>();
      outcomes = applyBatch(batch, (undo, then) => this.tx(undo, then, dirty, touched, blobs), undoAll);
      this.pendingCold = blobs;
      if (blobs.size || (dirty.size && this.journalFull())) await this.persist(dirty, blobs, true);
      else if (dirty.size) await this.append(touched);
      // Cold blobs (a vulnerability feed's buckets, written as the feed streams in) are never kept in memory once on
      // disk: a reader takes the few it needs from their files.
      for (const k of blobs.keys()) if (COLD_BLOBS.has(k.split('/')[0] as Blob)) this.coldCache.invalidate(k);
    } catch (e) {
      if (e instanceof Unserialisable) {
        // A value JSON cannot hold (a BigInt, a cycle): nothing reached the disk; memory goes back by the undo logs, and
        // the batch is committed again in halves until the write that holds it fails alone.
        for (const u of undoAll.reverse()) u();
        log('warn', 'store commit failed', { err: String(e.cause), writes: batch.length });
        const error = valueRefused(`a value in it cannot be stored (${String(e.cause)})`);
        return { batch, outcomes: batch.map(() => ({ ok: false, error })), after, refused: true };
      }
      // Disk or lock failure: nothing in this batch is acknowledged, and memory goes back to the disk's truth.
      log('error', 'store commit failed', { err: String((e as Error).message ?? e) });
      const error = storeFailure(e);
      outcomes = batch.map(() => ({ ok: false, error }));
      try {
        this.loadAll();
        this.blobCache.clear();
        this.coldCache.clear();
      } catch {
        /* keep serving what we have */
      }
    } finally {
      this.pendingCold = null;
    }
    // The commit is durable (or failed and was rolled back) when callers are told, before the lock goes (issue 19:
    // one file-system round trip less on every acknowledged write); the next commit still waits for the release.
    return { batch, outcomes, after };
  }

  private tx(
    undo: Array<() => void>,
    then: Array<() => void>,
    dirty: Set<string>,
    touched: Map<string, Touched>,
    blobs: Map<string, unknown>,
  ): Tx {
    return {
      ...tableTx(
        this.tables(),
        undo,
        (col, id, prev) => {
          dirty.add(fileOf(col, id));
          const key = `${col}/${id}`;
          // The record as this commit found it: what a patch is taken against.
          if (!touched.has(key)) touched.set(key, [col, id, prev]);
        },
        then,
      ),
      putBlob: (kind, id, value) => {
        if (value !== null) assertStorable(`the ${kind} of ${id}`, value);
        const key = `${kind}/${id}`;
        if (COLD_BLOBS.has(kind)) {
          // Only in this commit's files, not in memory.
          const had = blobs.has(key);
          const prev = blobs.get(key);
          blobs.set(key, value);
          undo.push(() => {
            if (had) blobs.set(key, prev);
            else blobs.delete(key);
          });
          return;
        }
        const had = this.blobCache.has(key);
        const prev = this.blobCache.get(key);
        this.blobCache.set(key, value);
        blobs.set(key, value);
        undo.push(() => {
          if (had) this.blobCache.set(key, prev);
          else this.blobCache.delete(key);
          blobs.delete(key);
        });
      },
    };
  }

  /**
   * All or nothing across every file a commit touches: each new file (shards, site data, secrets, meta.json) is
   * written and fsynced beside its final name first; only when all of them are on disk are they renamed into place
   * and deleted blobs removed. A full disk fails the staging, and then no file has changed.
   */
  /**
   * A commit of records only: one journal entry with each changed record as it now is, written at the end of the
   * journal's last complete entry (over a tail a crashed writer left) and fdatasynced before anyone is told.
   */
  private async append(touched: Map<string, Touched>): Promise<void> {
    const g = this.meta.generation + 1;
    const c: JournalEntry['c'] = {};
    const w: JournalEntry['w'] = [];
    for (const [col, id, prev] of touched.values()) {
      const r = this.data.get(col)!.get(id);
      const patch = r && prev && PATCHED.has(col) ? diffRecord(prev, r) : null;
      w.push(!r ? [col, id] : patch ? [col, id, 0, patch] : [col, id, r]);
      if (this.meta.counters[col] !== undefined) c[col] = this.meta.counters[col];
    }
    const line = Buffer.from(serialise({ g, c, w } satisfies JournalEntry) + '\n');
    const fh = await this.journalHandle();
    try {
      if (this.journalSize !== this.journalEnd) await fh.truncate(this.journalEnd);
      // Opened O_DSYNC where the platform has it: the write returns once its bytes are on disk (one round trip to the
      // thread pool instead of a write and then an fdatasync).
      await fh.write(line, 0, line.length, this.journalEnd);
      if (!O_DSYNC) await fh.datasync();
    } catch (e) {
      // Not acknowledged, so not left for a reader to take: cut the journal back to its last complete entry.
      await fh.truncate(this.journalEnd).catch(() => {});
      throw e;
    }
    this.journalEnd += line.length;
    this.meta.generation = g;
    for (const [col, id] of touched.values()) this.markJournalled(fileOf(col, id));
    this.metaStat = this.statKey();
  }

  /**
   * Writes the shards (those this commit changed and every one the journal changed), blobs and meta.json the
   * all-or-nothing way below, then empties the journal: an entry left by a crash before that is at or below meta's
   * generation and skipped.
   */
  private async persist(changed: Set<string>, blobs: Map<string, unknown>, compact: boolean): Promise<void> {
    const dirty = compact ? new Set([...changed, ...this.journalDirty]) : changed;
    await this.writeFiles(dirty, blobs);
    if (!compact) return;
    this.clearJournalled();
    try {
      const fh = await this.journalHandle();
      await fh.truncate(0);
      await fh.datasync();
      this.journalEnd = 0;
    } catch (e) {
      // The commit is in the shards already; the journal's entries are below meta's generation and skipped.
      log('warn', 'store journal not emptied', { err: String((e as Error).message ?? e) });
    }
    this.metaStat = this.statKey();
  }

  private async journalHandle(): Promise<FileHandle> {
    this.journalFh ??= await openFile(this.journalFile, O_DSYNC ? constants.O_RDWR | O_DSYNC : 'r+');
    return this.journalFh;
  }

  private async writeFiles(dirty: Set<string>, blobs: Map<string, unknown>): Promise<void> {
    const generation = this.meta.generation + 1;
    const texts = new Map<string, string>();
    const sizes = new Map<string, number>();
    const removals: string[] = [];
    for (const file of dirty) {
      const col = file.split('.')[0] as CollectionName;
      const shard = COLLECTIONS[col];
      const lo = shard ? Number(file.split('.')[1]) * shard : -Infinity;
      const hi = shard ? lo + shard : Infinity;
      const map = this.data.get(col)!;
      const records: Rec[] = [];
      // A shard is a range of ids: look them up (250 gets) rather than scan the whole fleet per edit.
      if (shard)
        for (let id = lo; id < hi; id++) {
          const r = map.get(id);
          if (r) records.push(r);
        }
      else records.push(...map.values());
      const text = serialise({ collection: col, records } satisfies ShardFile<Rec>);
      texts.set(join(this.dir, file), text);
      sizes.set(file, text.length);
    }
    for (const [key, value] of blobs) {
      const file = join(this.dir, `${key}.json`);
      if (value === null) removals.push(file);
      else texts.set(file, serialise(value));
    }
    const files = { ...this.meta.files };
    for (const f of dirty) files[f] = generation;
    const meta: Meta = { ...this.meta, generation, files };
    texts.set(join(this.dir, 'meta.json'), JSON.stringify(meta));

    const staged = await Promise.allSettled([...texts].map(([file, text]) => stageDurably(file, text)));
    const ready = staged.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = staged.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await Promise.all(ready.map((f) => f.discard()));
      throw failed.reason;
    }
    const metaFile = ready.find((f) => f.file === join(this.dir, 'meta.json')) as StagedFile;
    await Promise.all(ready.filter((f) => f !== metaFile).map((f) => f.commit()));
    await Promise.all(removals.map((f) => unlink(f).catch(() => {})));
    if (blobs.size) {
      await Promise.all([...new Set([...blobs.keys()].map((k) => k.split('/')[0]!))].map((d) => syncDir(join(this.dir, d))));
    }
    await metaFile.commit();
    await syncDir(this.dir);
    for (const [f, n] of sizes) this.shardBytes.set(f, n);
    this.meta = meta;
    this.diskGen = generation;
    this.metaStat = this.statKey();
  }

  /** Waits for queued writes, then refuses new ones; what the journal holds goes into the shards. */
  async close(): Promise<void> {
    await this.writes.close();
    await this.dropLock();
    try {
      if (this.journalEnd > 0 || this.journalSize > 0) {
        const release = await this.lock();
        try {
          if (this.statKey() !== this.metaStat) this.reloadChanged();
          if (this.journalEnd > 0) await this.persist(new Set(), new Map(), true);
        } finally {
          await release();
        }
      }
    } catch (e) {
      // The journal keeps every acknowledged commit: the next open takes it in.
      log('warn', 'store journal not compacted at close', { err: String((e as Error).message ?? e) });
    } finally {
      await this.journalFh?.close().catch(() => {});
      this.journalFh = null;
    }
  }
}

/** A value of a commit that JSON cannot hold: the value's fault, not the disk's. */
class Unserialisable extends Error {
  constructor(override readonly cause: unknown) {
    super('unserialisable value');
  }
}

function serialise(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (e) {
    throw new Unserialisable(e instanceof Error ? e.message : e);
  }
}

/** A data dir that cannot be used (a file in its place, no permission, a read-only disk): said plainly, nothing changed. */
export class DataDirError extends Error {}

function makeDataDir(dir: string): void {
  const why = (e: unknown): string => {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR' || code === 'EEXIST') return 'a file stands where a directory is needed';
    if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
    if (code === 'EROFS') return 'the file system is read-only';
    return (e as Error).message;
  };
  if (existsSync(dir) && !statSync(dir).isDirectory()) {
    throw new DataDirError(`Cannot use ${dir} as the data dir: it is a file, not a directory. Give --data-dir a directory.`);
  }
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const sub of BLOB_KINDS) mkdirSync(join(dir, sub), { recursive: true, mode: 0o700 });
    accessSync(dir, constants.W_OK);
  } catch (e) {
    throw new DataDirError(`Cannot use ${dir} as the data dir: ${why(e)}. Give --data-dir a directory this user can write.`);
  }
}

/** What a caller is told when a commit could not reach the disk: nothing of it was kept. */
function storeFailure(e: unknown): ServiceError {
  const code = (e as NodeJS.ErrnoException).code;
  const why = code === 'ENOSPC' ? 'the disk is full' : code ? `the disk refused it (${code})` : 'the data files could not be written';
  return new ServiceError('svc_store_unavailable', `The change was not saved because ${why}; nothing was changed. Try again later.`, 503);
}

export { StoreCorruptError };

/**
 * `Store` the type is the engine interface the services use (engine.ts); `Store` the value opens the lowdb engine on a
 * data dir (`Store.open(dir)`), as the tools and tests that work on a data dir directly always have.
 */
export type Store = StoreEngine;
export const Store = LowdbStore;
