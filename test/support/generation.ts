// "A rejection changes nothing": the newest generation that wrote any of the fleet's data files, or any of its records
// through the journal (journal.log: one line per records-only commit, `{g, c, w: [[collection, id, …], …]}`). The audit
// log's files and entries are left out: it records refused calls too (a refused call changes no fleet data, and the log
// says it was tried). The journal is read from where the last call stopped (a fuzz run asks thousands of times).
import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';

const journals = new Map<string, { offset: number; newest: number }>();

export function fleetGeneration(dataDir: string): number {
  const meta = JSON.parse(readFileSync(join(dataDir, 'meta.json'), 'utf8')) as { files: Record<string, number> };
  const files = Math.max(
    0,
    ...Object.entries(meta.files)
      .filter(([file]) => !file.startsWith('audit'))
      .map(([, generation]) => generation),
  );
  return Math.max(files, journalled(join(dataDir, 'journal.log')));
}

/** The newest journal entry that changed a record outside the audit log (entries only grow until a compaction cuts the file). */
function journalled(path: string): number {
  const seen = journals.get(path) ?? { offset: 0, newest: 0 };
  journals.set(path, seen);
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    return seen.newest;
  }
  if (size < seen.offset) seen.offset = 0; // compacted: what it held is in the shards (meta.json) now
  if (size === seen.offset) return seen.newest;
  const buf = Buffer.alloc(size - seen.offset);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buf, 0, buf.length, seen.offset);
  } finally {
    closeSync(fd);
  }
  const text = buf.toString('utf8');
  const end = text.lastIndexOf('\n') + 1; // a line still being written is read next time
  for (const line of text.slice(0, end).split('\n')) {
    if (!line) continue;
    const entry = JSON.parse(line) as { g: number; w: Array<[string, number, ...unknown[]]> };
    if (entry.w.some(([col]) => !col.startsWith('audit'))) seen.newest = Math.max(seen.newest, entry.g);
  }
  seen.offset += Buffer.byteLength(text.slice(0, end));
  return seen.newest;
}
