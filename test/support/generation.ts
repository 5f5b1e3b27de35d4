// "A rejection changes nothing": the newest generation that wrote any of the fleet's data files. The audit log's
// files are left out: it records refused calls too (a refused call changes no fleet data, and the log says it was tried).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export function fleetGeneration(dataDir: string): number {
  const meta = JSON.parse(readFileSync(join(dataDir, 'meta.json'), 'utf8')) as { files: Record<string, number> };
  return Math.max(
    0,
    ...Object.entries(meta.files)
      .filter(([file]) => !file.startsWith('audit'))
      .map(([, generation]) => generation),
  );
}
