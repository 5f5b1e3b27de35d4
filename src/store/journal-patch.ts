// Record patches for the journal (issue 34): a commit that changes a monitor record writes what changed — the fields
// set anew, and for a list the run of its old items it kept and the items added — instead of the whole record, so a
// heartbeat costs the journal about what it adds rather than the site's whole history.
//
// The diff is by reference: an item of a list that is the same object as in the old list was kept. That holds only for
// records that are never changed in place (a new object, new lists for what changed), which is why patching is limited
// to the collections in PATCHED, whose code keeps that rule (domain/monitors.ts).
import type { CollectionName, Rec } from './engine.js';

/** Collections whose records are replaced, never changed in place, and may be journalled as patches. */
export const PATCHED: ReadonlySet<CollectionName> = new Set<CollectionName>(['monitors', 'monitor_history']);

/**
 * What a commit changed in a record: `s` fields set whole, `d` fields removed, `a` lists as
 * [from, keep, added]: the new list is old.slice(from, from + keep) followed by `added`.
 */
export interface RecPatch {
  s?: Record<string, unknown>;
  d?: string[];
  a?: Record<string, [from: number, keep: number, added: unknown[]]>;
}

/** The patch from `old` to `now`, or null when nothing of `old` is kept (the whole record is then shorter). */
export function diffRecord(old: Rec, now: Rec): RecPatch | null {
  if (old === now) return null; // changed in place: only the whole record is safe
  const p: RecPatch = {};
  let kept = false;
  const o = old as unknown as Record<string, unknown>;
  const n = now as unknown as Record<string, unknown>;
  for (const k of Object.keys(n)) {
    const a = o[k];
    const b = n[k];
    if (a === b) {
      kept = true;
      continue;
    }
    if (Array.isArray(a) && Array.isArray(b) && b.length) {
      const from = a.indexOf(b[0]);
      if (from >= 0) {
        let keep = 1;
        while (keep < b.length && from + keep < a.length && a[from + keep] === b[keep]) keep++;
        (p.a ??= {})[k] = [from, keep, b.slice(keep)];
        kept = true;
        continue;
      }
    }
    (p.s ??= {})[k] = b;
  }
  for (const k of Object.keys(o)) if (!(k in n)) (p.d ??= []).push(k);
  return kept ? p : null;
}

/** `old` with `p` applied (a new object; `old` is not changed). Throws on a patch that does not fit `old`. */
export function applyPatch(old: Rec, p: RecPatch): Rec {
  const out: Record<string, unknown> = { ...(old as unknown as Record<string, unknown>) };
  for (const k of p.d ?? []) delete out[k];
  for (const [k, v] of Object.entries(p.s ?? {})) out[k] = v;
  for (const [k, [from, keep, added]] of Object.entries(p.a ?? {})) {
    const list = out[k];
    if (!Array.isArray(list) || from + keep > list.length || !Array.isArray(added)) throw new Error(`patch of ${k} does not fit`);
    out[k] = [...list.slice(from, from + keep), ...added];
  }
  if (out.id !== old.id) throw new Error('patch changes the id');
  return out as unknown as Rec;
}

/** Whether `x` is a well-formed patch (a damaged journal is refused, never half applied). */
export function isPatch(x: unknown): x is RecPatch {
  if (!x || typeof x !== 'object' || Array.isArray(x)) return false;
  const p = x as RecPatch;
  if (p.s !== undefined && (typeof p.s !== 'object' || p.s === null || Array.isArray(p.s))) return false;
  if (p.d !== undefined && (!Array.isArray(p.d) || p.d.some((k) => typeof k !== 'string'))) return false;
  if (p.a !== undefined) {
    if (typeof p.a !== 'object' || p.a === null) return false;
    for (const v of Object.values(p.a)) {
      if (!Array.isArray(v) || v.length !== 3 || !Number.isInteger(v[0]) || !Number.isInteger(v[1]) || v[0] < 0 || v[1] < 0) return false;
      if (!Array.isArray(v[2])) return false;
    }
  }
  return true;
}
