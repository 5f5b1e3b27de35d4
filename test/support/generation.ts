// "A rejection changes nothing": the newest generation that wrote any of the fleet's data files, or any of its records
// through the journal (journal.log: one line per records-only commit, `{g, c, w: [[collection, id, …], …]}`). The audit
// log's files and entries are left out: it records refused calls too (a refused call changes no fleet data, and the log
// says it was tried).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export function fleetGeneration(dataDir: string): number {
  const meta = JSON.parse(readFileSync(join(dataDir, 'meta.json'), 'utf8')) as { files: Record<string, number> };
  let newest = Math.max(
    0,
    ...Object.entries(meta.files)
      .filter(([file]) => !file.startsWith('audit'))
      .map(([, generation]) => generation),
  );
  const journal = join(dataDir, 'journal.log');
  if (existsSync(journal)) {
    for (const line of readFileSync(journal, 'utf8').split('\n')) {
      if (!line) continue;
      const entry = JSON.parse(line) as { g: number; w: Array<[string, number, ...unknown[]]> };
      if (entry.w.some(([col]) => !col.startsWith('audit'))) newest = Math.max(newest, entry.g);
    }
  }
  return newest;
}
