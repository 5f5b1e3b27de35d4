// A fleet-wide list kept as what each site has (a group: the site and its items, kept once per site by an index) and
// where each group's items begin among them all: 4 bytes a group (a list of every item), or 4 an item kept (a list
// filtered from it), instead of an object an item. An item's group is found by a binary search over the beginnings.
// An answer's objects are made for the page it answers only (pending-list.ts, site-data.ts).
import type { SiteRecord } from '../store/records.js';

export interface SiteGroup {
  readonly site: SiteRecord;
}

/**
 * A group whose site is its index entry's record as it is now (site-data-index.ts, Entry): a list built from the
 * entries stands while their values do, and must not hold the records edits have replaced since. Its `value` is the
 * items it lists: a part of the entry's value (one kind of them), or what ignore rules left of it. A list of a whole
 * value needs no such group: the entry is one (pending-list.ts, Group).
 */
export class EntryGroup<I> implements SiteGroup {
  constructor(
    private readonly entry: { readonly site: SiteRecord },
    readonly value: I,
  ) {}

  get site(): SiteRecord {
    return this.entry.site;
  }
}

export class GroupedList<G extends SiteGroup> {
  private constructor(
    private readonly groups: readonly G[],
    /** Where each group's items begin among all the groups' items; one more at the end, the count of them all. */
    private readonly starts: Uint32Array,
    /** The items this list keeps, by their place among all the groups' items, ascending; null: every item. */
    private readonly picked: Uint32Array | null,
  ) {}

  /** Every item of the groups (`count(g)` each), in their order. */
  static of<G extends SiteGroup>(groups: readonly G[], count: (g: G) => number): GroupedList<G> {
    const starts = new Uint32Array(groups.length + 1);
    for (let gi = 0; gi < groups.length; gi++) starts[gi + 1] = starts[gi]! + count(groups[gi]!);
    return new GroupedList(groups, starts, null);
  }

  get length(): number {
    return this.picked ? this.picked.length : this.starts[this.groups.length]!;
  }

  /**
   * Calls `fn` with each item's group, its place in the group and its place among all the groups' items, in order: one
   * walk, the group moving on as the places pass its end.
   */
  private walk(fn: (g: G, k: number, place: number) => void): void {
    const { groups, starts, picked } = this;
    let gi = 0;
    for (let i = 0; i < this.length; i++) {
      const place = picked ? picked[i]! : i;
      while (starts[gi + 1]! <= place) gi++;
      fn(groups[gi]!, place - starts[gi]!, place);
    }
  }

  /** Calls `fn` with each item's group and its place in the group, in order. */
  forEach(fn: (g: G, k: number) => void): void {
    this.walk(fn);
  }

  /** The items for which `keep` holds, in the same order (this list when it keeps them all). */
  filter(keep: (g: G, k: number) => boolean): GroupedList<G> {
    const pick = new Uint32Array(this.length);
    let n = 0;
    this.walk((g, k, place) => {
      if (keep(g, k)) pick[n++] = place;
    });
    if (n === this.length) return this;
    return new GroupedList(this.groups, this.starts, pick.slice(0, n));
  }

  /** A page of the list (1-based; past the end: empty), each item shown by `show`: the only objects made. */
  page<V>(page: number, perPage: number, show: (g: G, k: number) => V): V[] {
    const start = (page - 1) * perPage;
    const out: V[] = [];
    for (let i = start; i < Math.min(this.length, start + perPage); i++) {
      const place = this.picked ? this.picked[i]! : i;
      const gi = this.groupAt(place);
      out.push(show(this.groups[gi]!, place - this.starts[gi]!));
    }
    return out;
  }

  /** The group that holds the item at `place`: the last whose items begin at or before it (a group of none is passed). */
  private groupAt(place: number): number {
    let lo = 0;
    let hi = this.groups.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.starts[mid]! <= place) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}
