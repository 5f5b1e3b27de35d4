// A fleet-wide list kept as what each site has (a group: the site and its items, kept once per site by an index) and
// two typed arrays that say, item after item, which group's which item it is: 8 bytes an item, instead of an object an
// item. An answer's objects are made for the page it answers only (pending-list.ts, site-data.ts).
import type { SiteRecord } from '../store/records.js';

export interface SiteGroup {
  readonly site: SiteRecord;
}

/**
 * A group whose site is its index entry's record as it is now (site-data-index.ts, Entry): a list built from the
 * entries stands while their values do, and must not hold the records edits have replaced since.
 */
export class EntryGroup<I> implements SiteGroup {
  constructor(
    private readonly entry: { readonly site: SiteRecord },
    readonly items: I,
  ) {}

  get site(): SiteRecord {
    return this.entry.site;
  }
}

export class GroupedList<G extends SiteGroup> {
  private constructor(
    private readonly groups: readonly G[],
    private readonly group: Uint32Array,
    private readonly slot: Uint32Array,
  ) {}

  /** Every item of the groups (`count(g)` each), in their order. */
  static of<G extends SiteGroup>(groups: readonly G[], count: (g: G) => number): GroupedList<G> {
    let n = 0;
    for (const g of groups) n += count(g);
    const group = new Uint32Array(n);
    const slot = new Uint32Array(n);
    let i = 0;
    for (let gi = 0; gi < groups.length; gi++) {
      const c = count(groups[gi]!);
      for (let k = 0; k < c; k++, i++) {
        group[i] = gi;
        slot[i] = k;
      }
    }
    return new GroupedList(groups, group, slot);
  }

  get length(): number {
    return this.group.length;
  }

  /** Calls `fn` with each item's group and its place in the group, in order. */
  forEach(fn: (g: G, k: number) => void): void {
    for (let i = 0; i < this.length; i++) fn(this.groups[this.group[i]!]!, this.slot[i]!);
  }

  /** The items for which `keep` holds, in the same order (this list when it keeps them all). */
  filter(keep: (g: G, k: number) => boolean): GroupedList<G> {
    const pick = new Uint32Array(this.length);
    let n = 0;
    for (let i = 0; i < this.length; i++) if (keep(this.groups[this.group[i]!]!, this.slot[i]!)) pick[n++] = i;
    if (n === this.length) return this;
    const group = new Uint32Array(n);
    const slot = new Uint32Array(n);
    for (let j = 0; j < n; j++) {
      group[j] = this.group[pick[j]!]!;
      slot[j] = this.slot[pick[j]!]!;
    }
    return new GroupedList(this.groups, group, slot);
  }

  /** A page of the list (1-based; past the end: empty), each item shown by `show`: the only objects made. */
  page<V>(page: number, perPage: number, show: (g: G, k: number) => V): V[] {
    const start = (page - 1) * perPage;
    const out: V[] = [];
    for (let i = start; i < Math.min(this.length, start + perPage); i++) out.push(show(this.groups[this.group[i]!]!, this.slot[i]!));
    return out;
  }
}
