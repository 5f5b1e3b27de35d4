// How far a long-running process (serve, stdio mcp) lets its heap grow before a full collection. V8 sizes the next
// limit from what survived the last full collection, times a factor it picks from how cheap collecting was: for a busy
// server, about 4. At 100,000 sites that made 250 MB of live records and indexes 1.0–1.4 GB of RSS; at 1.5, 490–560 MB,
// with the same requests per second (issue 34; README "Running more than one process"). The factor is V8's
// --heap-growing-percent, read at each full collection, so it can be set once the process runs; NODE_OPTIONS cannot
// carry it. It is no limit: a heap that needs more still gets it (unlike --max-old-space-size, past which a process ends).
import { setFlagsFromString } from 'node:v8';
import type { Config } from '../config.js';

/** Sets the heap's growth for this process (0: V8's own choice, left alone). */
export function applyHeapGrowth(config: Pick<Config, 'heapGrowthPercent'>): void {
  if (config.heapGrowthPercent > 0) setFlagsFromString(`--heap-growing-percent=${config.heapGrowthPercent}`);
}
