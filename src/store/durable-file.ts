// A lowdb adapter whose writes are durable: temp file, fsync, rename. lowdb's own JSONFile (steno)
// renames atomically but never fsyncs, so an acknowledged write could vanish on power loss.
import { open, readFile, rename, unlink } from 'node:fs/promises';
import type { Adapter } from 'lowdb';

export class StoreCorruptError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`Data file ${file} is unreadable (${reason}). sitefleet stopped without touching it: restore it from a backup or move it away.`);
    this.name = 'StoreCorruptError';
  }
}

export class DurableJSONFile<T> implements Adapter<T> {
  constructor(readonly file: string) {}

  async read(): Promise<T | null> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new StoreCorruptError(this.file, (e as Error).message);
    }
    return parseJson<T>(this.file, text);
  }

  /** Writes and fsyncs the file; the caller fsyncs the directory once for a whole commit. */
  async write(data: T): Promise<void> {
    await writeDurably(this.file, JSON.stringify(data));
  }
}

export function parseJson<T>(file: string, text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new StoreCorruptError(file, `invalid JSON: ${(e as Error).message}`);
  }
}

/**
 * A file written beside its final name and fsynced, not yet in place: `commit()` renames it over the file,
 * `discard()` removes it. A commit that touches several files stages them all first, so that a full disk or
 * any other write failure leaves every file as it was.
 */
export interface StagedFile {
  file: string;
  commit(): Promise<void>;
  discard(): Promise<void>;
}

/** The temp name of `file` for this process: one writer per file per process at a time (commits are serial). */
export const tempName = (file: string): string => `${file}.${process.pid}.tmp`;

export async function stageDurably(file: string, text: string): Promise<StagedFile> {
  const tmp = tempName(file);
  const fh = await open(tmp, 'w', 0o600);
  try {
    await fh.writeFile(text);
    await fh.sync();
  } catch (e) {
    await fh.close().catch(() => {});
    await unlink(tmp).catch(() => {});
    throw e;
  }
  await fh.close();
  return { file, commit: () => rename(tmp, file), discard: () => unlink(tmp).catch(() => {}) };
}

export async function writeDurably(file: string, text: string): Promise<void> {
  await (await stageDurably(file, text)).commit();
}

export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** A data dir's collection file: `tags.json`, or a shard of a sharded collection (`sites.0.json` holds ids 0–249, …). */
export interface ShardFile<T> {
  collection: string;
  records: T[];
}

/** Of a data dir's file names, those that hold records of `col`: `col.json`, or its shards `col.N.json`. */
export function collectionFiles(names: readonly string[], col: string): string[] {
  return names.filter((n) => n === `${col}.json` || (n.startsWith(`${col}.`) && /^\w+\.\d+\.json$/.test(n)));
}
