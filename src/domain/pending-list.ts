// The fleet's pending updates as the index keeps them: each site's items an array of shared item tuples, and the
// fleet-wide lists as two typed arrays that point into them (grouped-list.ts). An answer's objects are made for the page it answers
// only. At 100,000 sites the index holds about a million items: as one object each (site fields, item fields, the
// list slots pointing at it) that was ≈ 120 bytes an item; as six slots of a site's array, 48 bytes; as one slot
// pointing at a tuple the sites that have the same item share (a plugin at a version, offered the same update),
// 8 bytes, and 8 in each list.
import { INTERN_VALUES_MAX, ValuePool, keyOfPooled } from '../core/intern.js';
import type { SiteRecord } from '../store/records.js';
import { GroupedList, type SiteGroup } from './grouped-list.js';

export type ItemType = 'core' | 'plugin' | 'theme' | 'translation';

/** The site an item of an answer belongs to. */
export interface Where {
  site_id: number;
  site_url: string;
  site_name: string;
}
/** A pending item as an answer shows it: the item and its site. */
export interface PendingView extends Where, PackedItem {}
export interface Summary {
  core: number;
  plugins: number;
  themes: number;
  translations: number;
  total: number;
}

/** One item: type, slug, name, current_version, new_version, language (null but for a translation). Frozen, shared. */
export type ItemTuple = readonly [ItemType, string, string, string | null, string, string | null];
/** A site's items. Exactly as long as its items: never grown after it is made. */
export type Packed = readonly ItemTuple[];
/** A site with nothing pending: one shared array, not a new one per site. */
export const NO_ITEMS: Packed = Object.freeze([]);

/** A pending item without its site: what a site's packed items hold. */
export interface PackedItem {
  type: ItemType;
  slug: string;
  name: string;
  current_version: string | null;
  new_version: string;
  language?: string;
}

/**
 * The item tuples, one per distinct item, at most ITEMS_MAX (about 130 bytes each with its key: 6.5 MB at most); past
 * it the pool starts again and sites made since share among themselves.
 */
export const ITEMS_MAX = 5 * INTERN_VALUES_MAX;
const items = new ValuePool(ITEMS_MAX);

/**
 * Whole lists, at most LISTS_MAX: sites that run the same plugins at the same versions are offered the same updates, so
 * their lists are the same; one frozen array for them all (8 bytes an item and 32 a list, once, instead of per site).
 */
export const LISTS_MAX = INTERN_VALUES_MAX;
const lists = new ValuePool(LISTS_MAX);

/** Packs items (their strings as given: the caller pools them); an item the pool has already is that tuple, a list too. */
export function pack(list: readonly PackedItem[]): Packed {
  if (!list.length) return NO_ITEMS;
  const out = list.map((i) => {
    const t: ItemTuple = [i.type, i.slug, i.name, i.current_version, i.new_version, i.language ?? null];
    return items.get(JSON.stringify(t), () => t);
  });
  return lists.get(keyOfPooled(out), () => out);
}

/** How many item tuples the pool holds now (tests). */
export const pooledItems = (): number => items.size;
/** How many whole lists the pool holds now (tests). */
export const pooledLists = (): number => lists.size;

export const countOf = (p: Packed): number => p.length;
export const typeAt = (p: Packed, k: number): ItemType => p[k]![0];

/** Item k of a site's packed items, as an answer shows it. */
export function viewAt(site: SiteRecord, p: Packed, k: number): PendingView {
  const [type, slug, name, current_version, new_version, language] = p[k]!;
  const v: PendingView = { site_id: site.id, site_url: site.url, site_name: site.name, type, slug, name, current_version, new_version };
  if (language !== null) v.language = language;
  return v;
}

/** Every item of a site's packed items, as answers show them. */
export function viewsOf(site: SiteRecord, p: Packed): PendingView[] {
  const out: PendingView[] = [];
  for (let k = 0; k < countOf(p); k++) out.push(viewAt(site, p, k));
  return out;
}

/** The items of `p` for which `keep` holds, packed (`p` itself when it keeps them all). */
export function packedWhere(p: Packed, keep: (k: number) => boolean): Packed {
  const kept = p.filter((_, k) => keep(k));
  return kept.length === p.length ? p : kept.length ? kept : NO_ITEMS;
}

/**
 * One site's part of a list: its record and its items. The pending index's entry (site-data-index.ts, Entry<Packed>)
 * is one as it is: a site that no rule cuts down is its entry in the fleet's list, not an object more per site.
 */
export interface Group extends SiteGroup {
  readonly value: Packed;
}

const COUNT_KEY: Record<ItemType, keyof Summary> = { core: 'core', plugin: 'plugins', theme: 'themes', translation: 'translations' };

/** The counts by type of some items, and the total. */
export function summarise(items: readonly { type: ItemType }[]): Summary {
  const s: Summary = { core: 0, plugins: 0, themes: 0, translations: 0, total: items.length };
  for (const i of items) s[COUNT_KEY[i.type]]++;
  return s;
}

/** A list of pending items across sites (grouped-list.ts), in order. */
export class PendingList {
  private constructor(private readonly list: GroupedList<Group>) {}

  /** Every item of the groups, in their order. */
  static of(groups: readonly Group[]): PendingList {
    return new PendingList(GroupedList.of(groups, (g) => countOf(g.value)));
  }

  get length(): number {
    return this.list.length;
  }

  /** The items for which `keep(site_id, type)` holds, in the same order. */
  filter(keep: (siteId: number, type: ItemType) => boolean): PendingList {
    const kept = this.list.filter((g, k) => keep(g.site.id, typeAt(g.value, k)));
    return kept === this.list ? this : new PendingList(kept);
  }

  /** The counts by type, and the total. */
  summary(): Summary {
    const s: Summary = { core: 0, plugins: 0, themes: 0, translations: 0, total: this.length };
    this.list.forEach((g, k) => s[COUNT_KEY[typeAt(g.value, k)]]++);
    return s;
  }

  /** A page of the list (1-based; past the end: empty), as answers show it: the only items made into objects. */
  page(page: number, perPage: number): PendingView[] {
    return this.list.page(page, perPage, (g, k) => viewAt(g.site, g.value, k));
  }
}
