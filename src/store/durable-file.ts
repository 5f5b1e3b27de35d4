// A lowdb adapter whose writes are durable: temp file, fsync, rename. lowdb's own JSONFile (steno)
// renames atomically but never fsyncs, so an acknowledged write could vanish on power loss.
import { open, readFile, rename, unlink } from 'node:fs/promises';
import type { Adapter } from 'lowdb';

let seq = 0;

export class StoreCorruptError extends Error {
  constructor(readonly file: string, reason: string) {
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

export async function writeDurably(file: string, text: string): Promise<void> {
  const tmp = `${file}.${process.pid}.${++seq}.tmp`;
  const fh = await open(tmp, 'w', 0o600);
  try {
    await fh.writeFile(text);
    await fh.sync();
  } catch (e) {
    await fh.close();
    await unlink(tmp).catch(() => {});
    throw e;
  }
  await fh.close();
  await rename(tmp, file);
}

export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
