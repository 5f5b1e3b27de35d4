// Parts of a record that many records hold the same of: a site's tags (a fleet has few combinations of them) and its
// stats (four small figures). A record parsed from a file or a row has its own copy of each, and so has one a write
// builds: at 100,000 sites, 11 MB of small arrays and objects of their own. Every record of these collections that
// enters a process's memory (loaded, taken from another process, written) is given instead the one frozen copy that
// the records with that part share. Records are never changed in place (a change is a new record), so a shared part
// is never written through.
import { INTERN_VALUES_MAX, ValuePool } from '../core/intern.js';
import type { CollectionName, Rec } from './engine.js';

/** The parts shared, by collection. */
const SHARED: Partial<Record<CollectionName, readonly string[]>> = { sites: ['tag_ids', 'stats'] };

/** At most this many distinct parts are pooled (when full, it starts again: what was shared stays so). */
const parts = new ValuePool(INTERN_VALUES_MAX);

/**
 * Gives `rec`'s shared parts their pooled copy, in place (a part equal to it in JSON: the same fields in the same
 * order). A part that is not a plain array or object is left as it is. Returns `rec`.
 */
export function shareParts<R extends Rec>(col: CollectionName, rec: R): R {
  const fields = SHARED[col];
  if (!fields) return rec;
  const r = rec as Record<string, unknown>;
  for (const f of fields) {
    const v = r[f];
    if (v === null || typeof v !== 'object' || Object.isFrozen(v)) continue;
    if (!Array.isArray(v) && Object.getPrototypeOf(v) !== Object.prototype) continue;
    r[f] = parts.get(`${f}:${JSON.stringify(v)}`, () => v);
  }
  return rec;
}
