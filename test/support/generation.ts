// "A rejection changes nothing": a number that moves whenever a commit changes any of the fleet's records — the sum of
// the store's collection versions (`store.version`, bumped by every write that touches a collection). The audit log is
// left out: it records refused calls too (a refused call changes no fleet data, and the log says it was tried). Read
// from the store rather than the data dir's files, which also move when the journal is folded into the shards.
import { COLLECTION_NAMES } from '../../src/store/engine.js';
import type { Store } from '../../src/store/engine.js';

export function fleetGeneration(store: Store): number {
  let sum = 0;
  for (const col of COLLECTION_NAMES) if (!col.startsWith('audit')) sum += store.version(col);
  return sum;
}
