// Parts of a record that many records hold the same of: a site's tags (a fleet has few combinations of them) and its
// stats (four small figures). A record parsed from a file or a row has its own copy of each, and so has one a write
// builds: at 100,000 sites, 11 MB of small arrays and objects of their own. Every record of these collections that
// enters a process's memory (loaded, taken from another process, written) is given instead the one frozen copy that
// the records with that part share. Records are never changed in place (a change is a new record), so a shared part
// is never written through.
import { INTERN_VALUES_MAX } from '../core/intern.js';
import type { CollectionName, Rec } from './engine.js';

/** The parts shared, by collection. */
const SHARED: Partial<Record<CollectionName, readonly string[]>> = { sites: ['tag_ids', 'stats'] };

/**
 * The pooled parts as a tree: from a root per field and kind (array or object), each array item, or each field name
 * and then its value, leads one step down; the part is at the node its last step reaches. Steps are numbers,
 * booleans, null and field names, whose hashes are at hand, so finding a part makes no string (a key made by
 * JSON.stringify took three times as long: 150 ms for 100,000 sites at a start).
 */
interface Node {
  next?: Map<unknown, Node>;
  part?: object;
}
let roots = new Map<string, { array: Node; object: Node }>();
/** Parts the tree holds; past INTERN_VALUES_MAX it starts again (what was shared stays so). */
let held = 0;

const step = (node: Node, key: unknown): Node => {
  const next = (node.next ??= new Map());
  let child = next.get(key);
  if (!child) next.set(key, (child = {}));
  return child;
};
const flat = (x: unknown) => typeof x === 'number' || typeof x === 'boolean' || x === null;

/** The pooled copy of a part equal to `v` in JSON (the same items, or the same fields in the same order), or `v`. */
function pooled(field: string, v: object): object {
  const array = Array.isArray(v);
  let root = roots.get(field);
  if (!root) roots.set(field, (root = { array: {}, object: {} }));
  let node = array ? root.array : root.object;
  if (array) {
    for (const x of v) {
      if (!flat(x)) return v;
      node = step(node, x);
    }
  } else {
    for (const k in v) {
      const x = (v as Record<string, unknown>)[k];
      if (!flat(x)) return v;
      node = step(step(node, k), x);
    }
  }
  if (node.part) return node.part;
  if (held >= INTERN_VALUES_MAX) {
    roots = new Map();
    held = 0;
    return Object.freeze(v);
  }
  held++;
  return (node.part = Object.freeze(v));
}

/**
 * Gives `rec`'s shared parts their pooled copy, in place. A part that is not a plain array or object, or holds
 * anything but numbers, booleans and null, is left as it is. Returns `rec`.
 */
export function shareParts<R extends Rec>(col: CollectionName, rec: R): R {
  const fields = SHARED[col];
  if (!fields) return rec;
  const r = rec as Record<string, unknown>;
  for (const f of fields) {
    const v = r[f];
    if (v === null || typeof v !== 'object' || Object.isFrozen(v)) continue;
    if (!Array.isArray(v) && Object.getPrototypeOf(v) !== Object.prototype) continue;
    r[f] = pooled(f, v);
  }
  return rec;
}
