// Each collection's version, and which records moved it: what lets an index derived from a collection redo only the
// records that changed (site-data-index.ts) instead of a pass over all of them. Bounded: a collection keeps the ids of
// its last CHANGE_LOG_MAX changes; asked from further back, or from before a change whose ids are not known (a whole
// collection read again from disk), `since` answers null and the caller does the whole pass, as it would without it.
import { firstPlace } from '../core/collate.js';
import type { CollectionName } from './engine.js';

/** Changes of one collection whose ids are kept (an entry is two numbers; 4,096 of them, about 64 KB at most). */
export const CHANGE_LOG_MAX = 4096;

interface Log {
  /** Every change with a version above this one has its id below. */
  floor: number;
  ids: number[];
  /** The version each id's change gave the collection (ascending). */
  at: number[];
}

export class ChangeLog {
  private readonly versions = new Map<CollectionName, number>();
  private readonly logs = new Map<CollectionName, Log>();
  /** Moves with every collection's version (Store.changes). */
  total = 0;

  version(col: CollectionName): number {
    return this.versions.get(col) ?? 0;
  }

  /** The collection changed: record `id` (put, insert, delete, or undone), or, without one, an unknown set of records. */
  bump(col: CollectionName, id?: number): void {
    const v = this.version(col) + 1;
    this.versions.set(col, v);
    this.total++;
    let log = this.logs.get(col);
    if (!log) this.logs.set(col, (log = { floor: 0, ids: [], at: [] }));
    if (id === undefined) {
      log.floor = v;
      log.ids = [];
      log.at = [];
      return;
    }
    log.ids.push(id);
    log.at.push(v);
    // Trimmed in halves, so that the cost of dropping the oldest is spread over CHANGE_LOG_MAX changes.
    if (log.ids.length >= 2 * CHANGE_LOG_MAX) {
      const drop = log.ids.length - CHANGE_LOG_MAX;
      log.floor = log.at[drop - 1]!;
      log.ids = log.ids.slice(drop);
      log.at = log.at.slice(drop);
    }
  }

  /**
   * The ids of the records of `col` changed after it was at `version` (each once, in the order of their first change
   * since), or null when that is not known any more: then every record may have changed.
   */
  since(col: CollectionName, version: number): number[] | null {
    if (version >= this.version(col)) return [];
    const log = this.logs.get(col);
    if (!log || version < log.floor) return null;
    return [...new Set(log.ids.slice(firstPlace(log.at.length, (i) => log.at[i]! <= version)))];
  }
}
