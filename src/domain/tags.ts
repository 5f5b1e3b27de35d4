// Tags (site groups): names unique regardless of case, #RRGGBB colours, membership kept on the tag.
import { callScope } from '../core/scope.js';
import { SiteAccess } from './access.js';
import { ServiceError, errors } from '../core/errors.js';
import type { Store, Tx } from '../store/store.js';
import { IdSlots } from '../store/id-numbers.js';
import { byName, firstPlace } from '../core/collate.js';
import type { TagRecord } from '../store/records.js';
import { Cascade } from './cascade.js';
import { ValuePool } from '../core/intern.js';

export interface TagFilter {
  search?: string;
  include?: number[];
  exclude?: number[];
}

/** Tag names are plain text: markup is dropped and white space trimmed. */
export function cleanTagName(name: string): string {
  return name.replace(/<[^>]*>/g, '').trim();
}

/** Tags changed since an index was built beyond which it is built again from every tag rather than patched. */
const PATCH_MAX = 64;
/**
 * Distinct lists of tag ids the sites' lists are pooled from at most. Most sites share their list with many (a fleet
 * has few combinations of tags): one frozen array per combination, not one per site. Built by push, each site's array
 * had room for 17 ids: 235 bytes a site, 23 MB at 100,000 sites (a heap snapshot, issue 34).
 */
export const TAG_LISTS_MAX = 10_000;

/** The tags' order: by name (as people read names), then id; a total order, so a tag has one place in it. */
const ORDER = byName<TagRecord>((t) => t.name);

/** Where `t` is, or would go, in `sorted` (in ORDER): a binary search. */
function place(sorted: readonly TagRecord[], t: TagRecord): number {
  return firstPlace(sorted.length, (i) => ORDER(sorted[i]!, t) < 0);
}

/** Whether a tag's site list is in ascending order without repeats, as every write here keeps it. */
function ascending(ids: readonly number[]): boolean {
  for (let i = 1; i < ids.length; i++) if (ids[i - 1]! >= ids[i]!) return false;
  return true;
}

/** A tag's site list in ascending order without repeats: the list itself, or (written otherwise: by hand, an older version) a sorted copy. */
function ascendingIds(ids: readonly number[]): readonly number[] {
  return ascending(ids) ? ids : [...new Set(ids)].sort((a, b) => a - b);
}

/** Where `site` is, or would go, in an ascending site list: a binary search. */
function placeIn(ids: readonly number[], site: number): number {
  return firstPlace(ids.length, (i) => ids[i]! < site);
}

/** A tag's site list with one site more, in ascending order (put in its place, no sort). */
function withSite(ids: readonly number[], site: number): number[] {
  const out = ascendingIds(ids).slice();
  out.splice(placeIn(out, site), 0, site);
  return out;
}

/** Walks two ascending site lists together, in ascending order: each site once, with whether it is in `a` and in `b`. */
function merge(a: readonly number[], b: readonly number[], visit: (site: number, inA: boolean, inB: boolean) => void): void {
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]! < b[j]!)) visit(a[i++]!, true, false);
    else if (i >= a.length || b[j]! < a[i]!) visit(b[j++]!, false, true);
    else {
      visit(a[i++]!, true, true);
      j++;
    }
  }
}

/**
 * Adds to `out` the sites in one of two ascending site lists and not in the other: a merge. Two Sets of a 5,000-site tag
 * at each change of one of its sites were 14 % of serve's CPU in the 100,000-site hour.
 */
function addDifference(a: readonly number[], b: readonly number[], out: Set<number>): void {
  merge(a, b, (site, inA, inB) => {
    if (inA !== inB) out.add(site);
  });
}

/** The sites in either of two ascending site lists, ascending (one of them when the other is empty). */
function union(a: readonly number[], b: readonly number[]): readonly number[] {
  if (!a.length) return b;
  if (!b.length) return a;
  const out: number[] = [];
  merge(a, b, (site) => out.push(site));
  return out;
}

export class TagService {
  private cacheVersion = -1;
  private sorted: TagRecord[] = [];
  /** The tags the index was built from, by id (records are replaced, never changed, so these are as they were). */
  private byId = new Map<number, TagRecord>();
  /** Each site's tag ids, by site id in pages (a Map was 3.5 MB at 100,000 sites). */
  private bySite = new IdSlots<readonly number[]>();
  /** The frozen lists bySite shares (see TAG_LISTS_MAX). */
  private readonly lists = new ValuePool(TAG_LISTS_MAX);
  private pooled(list: number[]): readonly number[] {
    return this.lists.get(list.join(','), () => list);
  }
  /**
   * Tag ids by lower-case name, and each id's name, for the store's tags at `version` (names are unique regardless of
   * case): patched for the tags changed since (Store.changedSince), built again from every tag past PATCH_MAX.
   */
  private names = { version: -1, ids: new Map<string, number>(), nameOf: new Map<number, string>() };

  /** Who else forgets a deleted tag (costs). */
  readonly onRemove = new Cascade();

  /** The clock of created_at / updated_at (tests set it; no real sleeps). */
  now: () => number = Date.now;
  private stamp(): string {
    return new Date(this.now()).toISOString();
  }

  /** What the running call may see (its scope): tags outside it are answered as missing, their site lists cut to it. */
  readonly access: SiteAccess;

  constructor(private readonly store: Store) {
    this.access = new SiteAccess(store);
  }

  /** A tag as the running call sees it: absent when outside its scope, carrying only the sites in it. */
  private seen(t: TagRecord | undefined): TagRecord | undefined {
    if (!t || !callScope()) return t;
    return this.access.seesTag(t) ? { ...t, site_ids: this.access.only(t.site_ids) } : undefined;
  }

  private indexes(): { sorted: TagRecord[]; bySite: IdSlots<readonly number[]> } {
    const v = this.store.version('tags');
    if (v !== this.cacheVersion) {
      const ids = this.cacheVersion < 0 ? null : this.store.changedSince('tags', this.cacheVersion);
      if (!ids || ids.length > PATCH_MAX) this.rebuild();
      else this.patch(ids);
      this.cacheVersion = v;
    }
    return { sorted: this.sorted, bySite: this.bySite };
  }

  /** Every tag sorted by name, and each site's tag ids in that order. */
  private rebuild(): void {
    this.sorted = [...this.store.all<TagRecord>('tags')].sort(ORDER);
    this.byId = new Map(this.sorted.map((t) => [t.id, t]));
    const bySite = new Map<number, number[]>();
    for (const t of this.sorted) {
      for (const s of t.site_ids) {
        const list = bySite.get(s);
        if (list) list.push(t.id);
        else bySite.set(s, [t.id]);
      }
    }
    this.bySite = new IdSlots();
    for (const [s, list] of bySite) this.bySite.set(s, this.pooled(list));
  }

  /**
   * The tags changed since the index was built, each taken out of the sorted list where it was and put back where it
   * now goes (a binary search each: sorting every tag again with the collator took 10 ms at 10,000 tags, on the first
   * read after each tag change), in a new list (a caller may hold the old one). Then the sites whose tags changed get a
   * new list, not every site: a tag given or taken from one site touched 100,000 sites' lists when the index was built
   * again (and a tag renamed, all of its sites, since the order is by name).
   */
  private patch(ids: readonly number[]): void {
    const sorted = this.sorted.slice();
    const sites = new Set<number>();
    /** Each changed tag's sites now, ascending (membership by binary search). */
    const membersOf = new Map<number, readonly number[]>();
    for (const id of ids) {
      const was = this.byId.get(id);
      const cur = this.store.get<TagRecord>('tags', id);
      if (was) {
        const at = place(sorted, was);
        // Not where it should be: the index is not what it was built as; build it again.
        if (sorted[at] !== was) return this.rebuild();
        sorted.splice(at, 1);
      }
      if (cur) sorted.splice(place(sorted, cur), 0, cur);
      if (cur) this.byId.set(id, cur);
      else this.byId.delete(id);
      const members = ascendingIds(cur?.site_ids ?? []);
      membersOf.set(id, members);
      if (was && cur && was.name === cur.name) {
        // The same place in the order: only the sites that joined or left.
        addDifference(ascendingIds(was.site_ids), members, sites);
      } else {
        for (const s of was?.site_ids ?? []) sites.add(s);
        for (const s of members) sites.add(s);
      }
    }
    this.sorted = sorted;
    for (const s of sites) {
      const list = (this.bySite.get(s) ?? []).filter((t) => !membersOf.has(t));
      for (const [id, members] of membersOf) if (members[placeIn(members, s)] === s) list.push(id);
      list.sort((a, b) => ORDER(this.byId.get(a)!, this.byId.get(b)!));
      if (list.length) this.bySite.set(s, this.pooled(list));
      else this.bySite.delete(s);
    }
  }

  get(id: number): TagRecord | undefined {
    return this.seen(this.store.get<TagRecord>('tags', id));
  }

  resolve(id: number): TagRecord {
    const t = this.get(id);
    if (!t) throw errors.tagNotFound(id);
    return t;
  }

  findByName(name: string): TagRecord | undefined {
    const n = cleanTagName(name).toLowerCase();
    return this.seen(this.indexes().sorted.find((t) => t.name.toLowerCase() === n));
  }

  list(f: TagFilter): TagRecord[] {
    const search = f.search?.trim().toLowerCase();
    const include = f.include?.length ? new Set(f.include) : null;
    const exclude = f.exclude?.length ? new Set(f.exclude) : null;
    const all = this.indexes().sorted.filter(
      (t) =>
        (!search || t.name.toLowerCase().includes(search) || String(t.id).includes(search)) &&
        (!include || include.has(t.id)) &&
        (!exclude || !exclude.has(t.id)),
    );
    return callScope() ? all.map((t) => this.seen(t)).filter((t): t is TagRecord => !!t) : all;
  }

  /** Tag ids of a site, by tag name order. */
  tagsOfSite(siteId: number): readonly number[] {
    const ids = this.indexes().bySite.get(siteId) ?? [];
    return this.access.seesSite(siteId) ? ids : [];
  }

  /** Sites carrying any of these tags, ascending without repeats (one tag: its own list, not a copy). */
  sitesInTags(tagIds: readonly number[]): readonly number[] {
    let out: readonly number[] = [];
    for (const id of tagIds) {
      const t = this.get(id);
      if (t) out = union(out, ascendingIds(t.site_ids));
    }
    return out;
  }

  /**
   * Refuses a name another tag has: a look-up in the names index, brought up to the tags changed since it was last
   * (a scan of every tag per create made adding tags quadratic).
   */
  private assertNameFree(tx: Tx, name: string, selfId?: number): void {
    // Unlocked: the name is a unique key (store engine.ts UNIQUE_KEYS), so on PostgreSQL a concurrent create of it in
    // another process fails its commit, which runs again and is refused here, instead of every create locking the tags.
    const id = tx.unlocked(() => {
      const v = this.store.version('tags');
      const n = this.names;
      if (n.version !== v) {
        const changed = n.version < 0 ? null : this.store.changedSince('tags', n.version);
        if (!changed || changed.length > PATCH_MAX) {
          n.ids.clear();
          n.nameOf.clear();
          for (const t of tx.all<TagRecord>('tags')) this.nameTag(t.id, t.name);
        } else
          for (const tagId of changed) {
            const was = n.nameOf.get(tagId);
            if (was !== undefined && n.ids.get(was) === tagId) n.ids.delete(was);
            n.nameOf.delete(tagId);
            const t = tx.get<TagRecord>('tags', tagId);
            if (t) this.nameTag(t.id, t.name);
          }
        n.version = v;
      }
      return n.ids.get(name.toLowerCase());
    });
    if (id !== undefined && id !== selfId) throw new ServiceError('svc_tag_exists', `A tag with name "${name}" already exists.`, 409);
  }

  private nameTag(id: number, name: string): void {
    const key = name.toLowerCase();
    this.names.ids.set(key, id);
    this.names.nameOf.set(id, key);
  }

  /** Creates a tag in one durable write (409 when the name is taken). */
  add(input: { name: string; color?: string | null }): Promise<TagRecord> {
    return this.store.write((tx) => this.create(tx, input));
  }

  /** Renames or recolours a tag in one durable write. */
  edit(id: number, input: { name?: string; color?: string | null }): Promise<TagRecord> {
    return this.store.write((tx) => this.update(tx, id, input));
  }

  create(tx: Tx, input: { name: string; color?: string | null }): TagRecord {
    const name = cleanTagName(input.name);
    if (!name) throw new ServiceError('svc_invalid_input', 'Tag name must not be empty.', 400);
    this.assertNameFree(tx, name);
    const t = this.stamp();
    return tx.insert<TagRecord>('tags', { name, color: input.color ?? null, site_ids: [], created_at: t, updated_at: t });
  }

  update(tx: Tx, id: number, input: { name?: string; color?: string | null }): TagRecord {
    const cur = tx.get<TagRecord>('tags', id);
    if (!cur) throw errors.tagNotFound(id);
    const name = input.name === undefined ? cur.name : cleanTagName(input.name);
    if (!name) throw new ServiceError('svc_invalid_input', 'Tag name must not be empty.', 400);
    if (name !== cur.name) this.assertNameFree(tx, name, id);
    return tx.put<TagRecord>('tags', {
      ...cur,
      name,
      color: input.color === undefined ? cur.color : input.color,
      updated_at: this.stamp(),
    });
  }

  /** Deletes a tag (its sites stay) and every reference to it, in one durable write. */
  remove(id: number): Promise<TagRecord> {
    return this.store.write((tx) => {
      const cur = tx.get<TagRecord>('tags', id);
      if (!cur) throw errors.tagNotFound(id);
      this.onRemove.run(tx, id);
      tx.delete('tags', id);
      return cur;
    });
  }

  /** Make `tagIds` exactly the tags of a site. Unknown tag ids → 404 before anything changes. */
  setSiteTags(tx: Tx, siteId: number, tagIds: number[]): void {
    const want = new Set(tagIds);
    for (const id of want) {
      if (!tx.get('tags', id)) throw errors.tagNotFound(id);
    }
    // The tags the site has now come from the index (built from the store's memory as it is in this write), not from a
    // pass over every tag: the mixed bench run creates thousands. The collection is still read as a whole (on
    // PostgreSQL it is then locked whole, and memory is current for all of it), since which tags hold the site is
    // what this write depends on.
    tx.all<TagRecord>('tags');
    const has = new Set(this.indexes().bySite.get(siteId) ?? []);
    for (const id of new Set([...has, ...want])) {
      if (has.has(id) === want.has(id)) continue;
      const t = tx.get<TagRecord>('tags', id)!;
      const site_ids = has.has(id) ? t.site_ids.filter((s) => s !== siteId) : withSite(t.site_ids, siteId);
      tx.put<TagRecord>('tags', { ...t, site_ids, updated_at: this.stamp() });
    }
  }

  /** Drop a deleted site from every tag. */
  forgetSite(tx: Tx, siteId: number): void {
    for (const t of [...tx.all<TagRecord>('tags')]) {
      if (t.site_ids.includes(siteId)) tx.put<TagRecord>('tags', { ...t, site_ids: t.site_ids.filter((s) => s !== siteId) });
    }
  }
}
