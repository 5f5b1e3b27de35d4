// The store engine interface: what the services use, whichever engine keeps the records. Two engines implement it:
// the lowdb engine (store.ts: JSON files under the data dir, the default) and the PostgreSQL engine (pg-store.ts,
// chosen by a database URL). Both keep the working set in memory so reads stay synchronous; a write runs a
// synchronous function against that memory copy and resolves only once its changes are durable.
import { ServiceError } from '../core/errors.js';

export const COLLECTIONS = {
  sites: 250,
  tags: 0,
  clients: 0,
  costs: 0,
  users: 0,
  keys: 0,
  jobs: 0,
  /** A job's progress, JOB_CHUNK sites per record (domain/job-chunks.ts): a step rewrites its chunk, not the job. */
  job_chunks: 100,
  settings: 0,
  client_fields: 0,
  /** One record per client that has custom field values, with the client's id. */
  client_field_values: 0,
  ignores: 0,
  // Uptime monitoring (monitor-records.ts): a monitor per site (id = site id, 0 = fleet defaults), incidents,
  // webhooks and their delivery log, and leases (who runs which checks, across processes).
  monitors: 250,
  /** A monitor's history (id = site id): its last beats and its hourly and daily buckets. Cold: see COLD_COLLECTIONS. */
  monitor_history: 250,
  incidents: 500,
  webhooks: 0,
  deliveries: 500,
  leases: 0,
  /** Web console logins (a hash of each session token, never the token), shared by every process. */
  console_sessions: 500,
  /** "Open WP Admin" links waiting for their one use (a hash of each token; at most MAX_OPEN_LINKS, seconds-lived). */
  admin_logins: 0,
  /** The audit log (domain/audit.ts): entries by their place in the hash chain, and the chain's head. */
  audit: 1000,
  audit_head: 0,
  // Site health and update history (health-records.ts): a record per site (id = site id), and one per update attempt
  // (ids only grow, so a new entry rewrites only the newest shard; trimming empties the oldest).
  site_health: 100,
  update_history: 500,
  // Notifications (notification-records.ts): channels (with their secret), rules, and the delivery log.
  notification_channels: 0,
  notification_rules: 0,
  notification_deliveries: 500,
  // Update policies (policy-records.ts): the policies, one record per (policy, window) run, and when each pending
  // update was first seen (id = site id).
  update_policies: 0,
  policy_runs: 500,
  pending_seen: 100,
  // Client reports (report-records.ts): report settings (id = client id, 0 = the agency's), the archive of generated
  // reports, and the vulnerability log the reports read (found / fixed, with when).
  report_settings: 0,
  client_reports: 50,
  vulnerability_log: 500,
} as const;
export type CollectionName = keyof typeof COLLECTIONS;
export const COLLECTION_NAMES = Object.keys(COLLECTIONS) as CollectionName[];

export type Rec = { id: number };

/**
 * Collections no engine lets a caller read from memory, and the PostgreSQL engine does not hold at all (issue 34): the
 * audit log, up to 100,000 entries of about 1.2 KB each in memory, which every process held whole and nothing reads
 * but its own list, its check and the client reports. Read them with `readRecords` (a page by id, filtered) and
 * `countRecords`; `get` and `all` refuse them on both engines, so that code that works on one works on the other. A
 * write may insert, put and delete them (a put or delete of one locks that record, not the collection) but not read
 * them. `count` and `version` answer from memory (the PostgreSQL engine keeps which ids are present: 8 bytes an id).
 * The monitors' history is one too: at 100,000 sites it was 164 MB after an hour of checks, and 1.4 GB once a month
 * of buckets was kept, in every process.
 */
export const COLD_COLLECTIONS: ReadonlySet<CollectionName> = new Set<CollectionName>(['audit', 'monitor_history']);
/** The most records one `readRecords` call answers. */
export const RECORD_READ_BATCH = 1000;

/**
 * A test on one top-level field of a record (a missing field is null): equal or not equal to a JSON value, equal to a
 * text ignoring letter case, or text at or above / below a bound (compared by code unit: ISO times).
 */
export type FieldTest =
  | { field: string; eq: string | number | null }
  | { field: string; ne: string | number | null }
  | { field: string; ieq: string }
  | { field: string; gte: string }
  | { field: string; lt: string };

/** Which records `readRecords` answers, in id order (newest first: highest ids first). */
export interface RecordQuery {
  order: 'newest' | 'oldest';
  /** Only ids strictly below / above these. */
  below?: number;
  above?: number;
  /** Only these ids (at most RECORD_READ_BATCH). */
  ids?: readonly number[];
  where?: readonly FieldTest[];
  /** Matching records skipped first. */
  offset?: number;
  /** At most RECORD_READ_BATCH. */
  limit: number;
}

/** Whether a field's value passes its test: the tests' one meaning, for an engine that filters in memory. */
function fieldPasses(v: unknown, t: FieldTest): boolean {
  if ('eq' in t) return v === t.eq;
  if ('ne' in t) return v !== t.ne;
  if (typeof v !== 'string') return false;
  if ('ieq' in t) return v.toLowerCase() === t.ieq.toLowerCase();
  return 'gte' in t ? v >= t.gte : v < t.lt;
}

/** Whether a record passes every test (PostgreSQL's SQL for them says the same: pg-store.ts whereSql). */
export function passes(rec: Rec, where: readonly FieldTest[] | undefined): boolean {
  return !where || where.every((t) => fieldPasses((rec as unknown as Record<string, unknown>)[t.field] ?? null, t));
}

/** A query's bounds checked, for both engines: a caller's mistake is refused, not run. */
export function checkQuery(col: CollectionName, q: RecordQuery): void {
  if (!COLD_COLLECTIONS.has(col)) throw new Error(`readRecords reads cold collections only (${col} is read with get and all)`);
  if (!Number.isInteger(q.limit) || q.limit < 0 || q.limit > RECORD_READ_BATCH)
    throw new Error(`readRecords reads at most ${RECORD_READ_BATCH} records at once (${q.limit} asked)`);
  for (const t of q.where ?? []) if (!/^[a-z_]{1,40}$/.test(t.field)) throw new Error(`bad field name ${JSON.stringify(t.field)}`);
  if (q.ids && (q.ids.length > RECORD_READ_BATCH || !q.ids.every((id) => Number.isInteger(id) && id >= 0 && id <= 0x7fffffff)))
    throw new Error(`readRecords reads at most ${RECORD_READ_BATCH} ids at once, each a non-negative integer`);
}

/** What `get`, `all` and a write's `get` and `all` throw for a cold collection. */
export function coldRefused(col: CollectionName): Error {
  return new Error(`${col} records are not held in memory: read them with readRecords`);
}

/**
 * Keys no two records of a collection share (issue 34): a tag's name and a client's e-mail, in any letter case. The
 * services check them in memory first (the fast path, with their own clear error, inside `tx.unlocked`); the
 * PostgreSQL engine also keeps each record's key in a unique index, so that a concurrent duplicate from another
 * process fails its commit instead of taking a lock on the whole collection: the commit then runs again on the newer
 * records (where the service's check now refuses it), and `error` is what its caller is told should it still fail.
 * The lowdb engine has one writer at a time, so the in-memory check is exact there.
 */
export const UNIQUE_KEYS: Partial<Record<CollectionName, { key: (rec: Rec) => string | null; error: (key: string) => ServiceError }>> = {
  tags: {
    key: (r) => (r as unknown as { name: string }).name.toLowerCase(),
    error: (k) => new ServiceError('svc_tag_exists', `A tag with name "${k}" already exists.`, 409),
  },
  clients: {
    key: (r) => (r as unknown as { email: string }).email.toLowerCase() || null,
    error: (k) => new ServiceError('svc_client_exists', `A client with e-mail "${k}" already exists.`, 409),
  },
};

/**
 * Heavy per-site data (site-data) and a site's private key and passwords (secrets), kept apart from the records; the
 * vulnerability feed's state (vulnerabilities), its index and records in buckets (vulnerability-feed) and each site's
 * matches (vulnerability-matches, one blob per 250 sites): domain/vulnerabilities/.
 */
export type Blob = 'site-data' | 'secrets' | 'vulnerabilities' | 'vulnerability-matches' | 'vulnerability-feed';
export const BLOB_KINDS: readonly Blob[] = ['site-data', 'secrets', 'vulnerabilities', 'vulnerability-matches', 'vulnerability-feed'];

/**
 * Blob kinds no engine holds in memory: large, or one per site (a 150 MB vulnerability feed; each site's sync lists,
 * about 9 KB a site, 900 MB for 100,000 sites; each site's child key and passwords). They are read with `readBlob` (asynchronous: lowdb reads the file,
 * PostgreSQL runs a SELECT) through a cache of at most COLD_CACHE_BYTES of their JSON text per process, or many at once
 * with `readBlobs` (no cache: the fleet-wide indexes read the changed sites' data that way); `getBlob` refuses them.
 * Writes go through `putBlob` as for any blob.
 */
export const COLD_BLOBS: ReadonlySet<Blob> = new Set<Blob>(['vulnerability-feed', 'site-data', 'secrets']);
/**
 * The most blobs one `readBlobs` call reads (one SELECT on PostgreSQL, as many file reads at once on lowdb): what a
 * fleet-wide index holds of the sites' data while it rebuilds (≈ 0.9 MB of JSON for 100 sites of 9 KB, two batches at
 * once). A batch's parsed data should die young: at 500, two batches' objects outgrew the young generation, were
 * promoted, and the first fleet view after a start at 100,000 sites spent 3.9 s of its 11.7–12.9 s collecting the old
 * one; at 100, 1.6 s of 9.4–11.1 s (more, smaller SELECTs cost less than that).
 */
export const BLOB_READ_BATCH = 100;
/** The bound of each process's cache of cold blobs read, in bytes of their JSON text (a larger blob is not kept). */
export const COLD_CACHE_BYTES = 8 * 1024 * 1024;

/**
 * What an engine holds in memory: records per collection (a cold collection's: 0 on PostgreSQL), blobs per kind (cold
 * kinds: 0), and its cache of cold blobs read.
 */
export interface StoreMemory {
  records: Record<CollectionName, number>;
  blobs: Record<Blob, number>;
  cold_cache: { entries: number; bytes: number; max_bytes: number };
}

export interface Tx {
  get<T extends Rec>(col: CollectionName, id: number): T | undefined;
  all<T extends Rec>(col: CollectionName): Iterable<T>;
  /** Inserts with the next id of the collection; returns the stored record. */
  insert<T extends Rec>(col: CollectionName, rec: Omit<T, 'id'>): T;
  put<T extends Rec>(col: CollectionName, rec: T): T;
  delete(col: CollectionName, id: number): boolean;
  putBlob(kind: Blob, id: number, value: unknown | null): void;
  /**
   * Runs `fn`, whose reads take no lock on PostgreSQL: only for a check that a UNIQUE_KEYS constraint backs (a name
   * is free), never for anything the write's outcome depends on otherwise. On lowdb it just runs `fn`.
   */
  unlocked<T>(fn: () => T): T;
  /**
   * Runs `fn` once this write is committed (in the turn its caller hears back, before the caller goes on), and never
   * if it is not. A write function may run more than once (PostgreSQL: a dry run finds its locks; a batch refused for
   * one value runs again in halves): what it announces to the world goes here, not in a timer it starts itself.
   */
  afterCommit(fn: () => void): void;
}

/**
 * What `store.write(fn, { skipLocked: true })` resolves with when the write was not made because another transaction
 * (another process) holds a lock it needs: `fn` did not run for real and nothing was written.
 */
export const SKIPPED: unique symbol = Symbol('sitefleet.write.skipped');
export type Skipped = typeof SKIPPED;

export interface WriteOptions {
  /**
   * Skip, don't wait (SQL's SKIP LOCKED, for claims: a job, a slot): should any lock the write needs be held by
   * another transaction, the write gives up at once and resolves SKIPPED instead of queueing behind it. PostgreSQL: the
   * write commits alone and takes its record locks with pg_try_advisory_xact_lock (the global commit lock is still
   * awaited shared, as by every commit); a write that commits the serial way (more than MAX_LOCKS locks, or after
   * repeated conflicts) waits as any write does. lowdb: one writer at a time under the data dir's file lock, so there
   * is never another transaction's lock to skip; the write is an ordinary write and never resolves SKIPPED.
   */
  skipLocked?: boolean;
}

export interface Store {
  /** Which engine this is, for logs and the startup line. */
  readonly engine: 'lowdb' | 'postgres';
  /** Changes whenever the collection changes (here or in another process): a key for derived caches. */
  version(col: CollectionName): number;
  /** Changes whenever any collection's version changes: one look instead of one per collection (fingerprints). */
  changes(): number;
  /**
   * The ids of the records of `col` changed (put, inserted, deleted, here or by another process) since the collection
   * was at `version`, each once; null when that is no longer known (change-log.ts keeps the last CHANGE_LOG_MAX): the
   * caller then takes every record as changed. What lets an index derived from a collection redo only what moved.
   */
  changedSince(col: CollectionName, version: number): number[] | null;
  get<T extends Rec>(col: CollectionName, id: number): T | undefined;
  all<T extends Rec>(col: CollectionName): IterableIterator<T>;
  count(col: CollectionName): number;
  /** A blob of a kind held in memory (not a COLD_BLOBS kind: those are read with readBlob). */
  getBlob<T>(kind: Blob, id: number): T | null;
  /**
   * Any blob, read from the engine's durable storage for a COLD_BLOBS kind (through the bounded cache; concurrent reads
   * of one blob share a read), from memory otherwise. A cold blob written after the read began is never cached stale.
   * `cache: false` leaves it out of the cache (a caller that keeps what it builds from it, or reads every blob once).
   */
  readBlob<T>(kind: Blob, id: number, opts?: { cache?: boolean }): Promise<T | null>;
  /**
   * Blobs of one kind by id (at most BLOB_READ_BATCH ids; more is refused): every id asked is answered, null when
   * absent. Cold kinds are read from durable storage in one go and bypass the cache (a fleet-wide index reads each
   * changed site once and keeps only what it derives); what a commit under way wrote is seen as readBlob sees it.
   */
  readBlobs<T>(kind: Blob, ids: readonly number[]): Promise<Map<number, T | null>>;
  /**
   * Records of a COLD_COLLECTIONS collection, from the engine's durable storage (lowdb: memory, which holds the files'
   * contents; PostgreSQL: one SELECT): those matching `where`, in id order, `offset` skipped, at most `limit`
   * (≤ RECORD_READ_BATCH). Every write acknowledged before the call is seen.
   */
  readRecords<T extends Rec>(col: CollectionName, q: RecordQuery): Promise<T[]>;
  /** How many records of a cold collection match `where` (one SELECT count on PostgreSQL). */
  countRecords(col: CollectionName, where?: readonly FieldTest[]): Promise<number>;
  /** What this process holds in memory (tests and the bench read it). */
  memory(): StoreMemory;
  /**
   * Runs `fn` (synchronous) against the store and resolves with its result once its changes are durable. A function
   * that throws leaves no trace and rejects; concurrent writes may be grouped into one commit.
   */
  write<R>(fn: (tx: Tx) => R): Promise<R>;
  /** The same, with options: `skipLocked` may resolve SKIPPED instead (WriteOptions). */
  write<R>(fn: (tx: Tx) => R, opts: WriteOptions): Promise<R | Skipped>;
  /**
   * Resolves once memory holds every commit acknowledged, by any process, before the call. The HTTP doors await it as
   * a request arrives, so a request sees every write acknowledged before it (read-your-writes across processes).
   */
  sync(): Promise<void>;
  /** Waits for queued writes, then refuses new ones. */
  close(): Promise<void>;
}
