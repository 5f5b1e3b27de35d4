// A number per record id (the row version each record was last seen at), for ids that come from a sequence: dense,
// small, whole. Kept in pages of PAGE_IDS doubles, not a Map entry each: 8 bytes an id instead of about 44 (at
// 100,000 sites, three such tables were 15 MB as Maps). An id that is not a whole number from 0 to 2^32 - 1 is kept
// in a Map beside.
const PAGE_BITS = 10;
/** Ids a page holds (8 KB of doubles). */
export const PAGE_IDS = 1 << PAGE_BITS;
const MAX_PAGED_ID = 2 ** 32 - 1;

export class IdNumbers {
  private readonly pages = new Map<number, Float64Array>();
  private readonly other = new Map<number, number>();

  get(id: number): number | undefined {
    if (!isPaged(id)) return this.other.get(id);
    const v = this.pages.get(Math.floor(id / PAGE_IDS))?.[id % PAGE_IDS];
    return v === undefined || Number.isNaN(v) ? undefined : v;
  }

  /** Sets the number of `id` (NaN cannot be kept: it reads as none). */
  set(id: number, value: number): void {
    if (!isPaged(id)) this.other.set(id, value);
    else pageFor(this.pages, id, () => new Float64Array(PAGE_IDS).fill(NaN))[id % PAGE_IDS] = value;
  }

  /** Forgets the number of `id` (its page stays). */
  delete(id: number): void {
    if (!isPaged(id)) this.other.delete(id);
    else {
      const page = this.pages.get(Math.floor(id / PAGE_IDS));
      if (page) page[id % PAGE_IDS] = NaN;
    }
  }

  clear(): void {
    this.pages.clear();
    this.other.clear();
  }

  /**
   * Calls `fn` with each number and its id (pages in the order they were made, ids ascending within a page; `fn` may
   * delete the id it is given), as Map's forEach: no pair made per id (a scan of 100,000 ids made 3 MB of them).
   */
  forEach(fn: (value: number, id: number) => void): void {
    for (const [key, page] of this.pages)
      for (let i = 0; i < PAGE_IDS; i++) {
        const v = page[i]!;
        if (!Number.isNaN(v)) fn(v, key * PAGE_IDS + i);
      }
    this.other.forEach(fn);
  }

  /** Pages allocated (tests). */
  get pageCount(): number {
    return this.pages.size;
  }
}

/**
 * A value per record id, in pages of PAGE_IDS slots: 8 bytes an id where a Map entry is about 36 (at 100,000 sites, a
 * Map by site id was 3.5 MB). An id that is not a whole number from 0 to 2^32 - 1 is kept in a Map beside, as in
 * IdNumbers. Holds no order: what needs one keeps its ids in a list of its own.
 */
export class IdSlots<T> {
  private readonly pages = new Map<number, Array<T | undefined>>();
  private readonly other = new Map<number, T>();

  get(id: number): T | undefined {
    if (!isPaged(id)) return this.other.get(id);
    return this.pages.get(Math.floor(id / PAGE_IDS))?.[id % PAGE_IDS];
  }

  /** Sets the value of `id` (undefined cannot be kept: it reads as none). */
  set(id: number, value: T): void {
    if (!isPaged(id)) this.other.set(id, value);
    else pageFor(this.pages, id, () => new Array<T | undefined>(PAGE_IDS).fill(undefined))[id % PAGE_IDS] = value;
  }

  delete(id: number): void {
    if (!isPaged(id)) this.other.delete(id);
    else {
      const page = this.pages.get(Math.floor(id / PAGE_IDS));
      if (page) page[id % PAGE_IDS] = undefined;
    }
  }
}

/** The page that holds a paged id, made by `make` when there is none yet. */
function pageFor<P>(pages: Map<number, P>, id: number, make: () => P): P {
  const key = Math.floor(id / PAGE_IDS);
  let page = pages.get(key);
  if (page === undefined) pages.set(key, (page = make()));
  return page;
}

const isPaged = (id: number) => Number.isInteger(id) && id >= 0 && id <= MAX_PAGED_ID;
