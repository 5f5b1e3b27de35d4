// Tags (site groups): names unique regardless of case, #RRGGBB colours. Membership is kept on the sites
// (SiteRecord.tag_ids), not on the tag: giving a site a tag writes that one site, whatever the tag's size (a list on
// the tag was copied and written whole at each assignment, and locked every tag: 35 % of a busy serve's allocation at
// 100,000 sites, issue 34). A tag's sites are an index of this process, kept up to the sites and the tags.
import { callScope } from '../core/scope.js';
import { SiteAccess } from './access.js';
import { ServiceError, errors } from '../core/errors.js';
import type { Store, Tx } from '../store/store.js';
import { IdSlots } from '../store/id-numbers.js';
import { byName, firstPlace } from '../core/collate.js';
import type { SiteRecord, TagRecord } from '../store/records.js';
import { Cascade } from './cascade.js';
import { ValuePool } from '../core/intern.js';

export interface TagFilter {
  search?: string;
  include?: number[];
  exclude?: number[];
}

/** A tag as the service answers it: the stored record and its sites, ascending (those of the call's scope). */
export type TagWithSites = TagRecord & { readonly site_ids: readonly number[] };

/** Tag names are plain text: markup is dropped and white space trimmed. */
export function cleanTagName(name: string): string {
  return name.replace(/<[^>]*>/g, '').trim();
}

/** Tags changed since an index was built beyond which it is built again from every tag rather than patched. */
const PATCH_MAX = 64;
/** Sites changed since the index was built beyond which it is built again (a pass over every site) rather than patched. */
const SITES_PATCH_MAX = 4096;
/**
 * Distinct lists of tag ids the sites' lists are pooled from at most. Most sites share their list with many (a fleet
 * has few combinations of tags): one frozen array per combination, not one per site. Built by push, each site's array
 * had room for 17 ids: 235 bytes a site, 23 MB at 100,000 sites (a heap snapshot, issue 34).
 */
export const TAG_LISTS_MAX = 10_000;

const NONE: readonly number[] = Object.freeze([]);

/** The tags' order: by name (as people read names), then id; a total order, so a tag has one place in it. */
const ORDER = byName<TagRecord>((t) => t.name);

/** Where `t` is, or would go, in `sorted` (in ORDER): a binary search. */
function place(sorted: readonly TagRecord[], t: TagRecord): number {
  return firstPlace(sorted.length, (i) => ORDER(sorted[i]!, t) < 0);
}

/** The sites in either of two ascending site lists, ascending (one of them when the other is empty). */
function union(a: readonly number[], b: readonly number[]): readonly number[] {
  if (!a.length) return b;
  if (!b.length) return a;
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]! < b[j]!)) out.push(a[i++]!);
    else if (i >= a.length || b[j]! < a[i]!) out.push(b[j++]!);
    else {
      out.push(a[i++]!);
      j++;
    }
  }
  return out;
}

/** Whether two lists hold the same ids (each list without repeats). */
function sameIds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((id) => b.includes(id));
}

/**
 * One tag's sites: an ascending list as of the last read, and the sites that joined or left since. A read after a
 * change merges them into a new list (one array of the tag's size, no sort); the list is then shared until the next
 * change. (Made from a set at each read, the arrays grown one site at a time were the largest allocation left at
 * 100,000 sites: 0.8 GB in 40 s of the bench's mix, where each list by tag followed an assignment.)
 */
class Members {
  private list: readonly number[];
  /** Made at the tag's first change since the last read: most tags have none (a fleet's tags number thousands). */
  private joined: Set<number> | null = null;
  private left: Set<number> | null = null;
  constructor(ascending: readonly number[] = NONE) {
    this.list = Object.freeze(ascending);
  }
  private inList(site: number): boolean {
    const at = firstPlace(this.list.length, (i) => this.list[i]! < site);
    return this.list[at] === site;
  }
  add(site: number): void {
    if (this.left?.delete(site)) return;
    if (!this.inList(site)) (this.joined ??= new Set()).add(site);
  }
  delete(site: number): void {
    if (this.joined?.delete(site)) return;
    if (this.inList(site)) (this.left ??= new Set()).add(site);
  }
  ascending(): readonly number[] {
    const { list, left } = this;
    const joined = this.joined ? [...this.joined].sort((a, b) => a - b) : NONE;
    this.joined = this.left = null;
    if (!joined.length && !left?.size) return list;
    const out = new Array<number>(list.length - (left?.size ?? 0) + joined.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < list.length || j < joined.length) {
      if (j >= joined.length || (i < list.length && list[i]! < joined[j]!)) {
        const site = list[i++]!;
        if (!left?.has(site)) out[k++] = site;
      } else out[k++] = joined[j++]!;
    }
    return (this.list = Object.freeze(out));
  }
}

export class TagService {
  private tagsVersion = -1;
  private sitesVersion = -1;
  private sorted: TagRecord[] = [];
  /** The tags the index was built from, by id (records are replaced, never changed, so these are as they were). */
  private byId = new Map<number, TagRecord>();
  /** The sites of each live tag that has or had some since the index was built (a tag without sites has none here). */
  private members = new Map<number, Members>();
  /** Each site's live tag ids in the tags' order, by site id in pages (a Map was 3.5 MB at 100,000 sites). */
  private bySite = new IdSlots<readonly number[]>();
  /** The frozen lists bySite shares (see TAG_LISTS_MAX). */
  private readonly lists = new ValuePool(TAG_LISTS_MAX);
  private pooled(list: number[]): readonly number[] {
    return this.lists.get(list.join(','), () => Object.freeze(list));
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
    this.access = new SiteAccess(store, (id) => this.sitesOf(id));
  }

  /** A tag's sites, ascending, whatever the call's scope (the index's list: not a copy). */
  private sitesOf(id: number): readonly number[] {
    this.index();
    return this.members.get(id)?.ascending() ?? NONE;
  }

  /** A stored tag with its sites, cut to the call's scope. */
  private view(t: TagRecord): TagWithSites {
    const ids = this.sitesOf(t.id);
    return { ...t, site_ids: callScope() ? this.access.only(ids) : ids };
  }

  /** A tag as the running call sees it: absent when outside its scope, carrying only the sites in it. */
  private seen(t: TagRecord | undefined): TagWithSites | undefined {
    if (!t || (callScope() && !this.access.seesTag(t.id))) return undefined;
    return this.view(t);
  }

  /** Brings the index up to the store's tags and sites: patched for what changed, built again past the bounds. */
  private index(): void {
    const tv = this.store.version('tags');
    const sv = this.store.version('sites');
    if (tv === this.tagsVersion && sv === this.sitesVersion) return;
    const tags = this.tagsVersion < 0 ? null : this.store.changedSince('tags', this.tagsVersion);
    const sites = this.sitesVersion < 0 ? null : this.store.changedSince('sites', this.sitesVersion);
    if (!tags || !sites || tags.length > PATCH_MAX || sites.length > SITES_PATCH_MAX || !this.patch(tags, sites)) this.rebuild();
    this.tagsVersion = tv;
    this.sitesVersion = sv;
  }

  /** Every tag sorted by name, and the tags of every site, and the sites of every tag (one pass over the sites). */
  private rebuild(): void {
    this.sorted = [...this.store.all<TagRecord>('tags')].sort(ORDER);
    this.byId = new Map(this.sorted.map((t) => [t.id, t]));
    const sitesOf = new Map<number, number[]>(this.sorted.map((t) => [t.id, []]));
    this.bySite = new IdSlots();
    for (const s of this.store.all<SiteRecord>('sites')) {
      if (!s.tag_ids?.length) continue;
      const list = this.liveTags(s.tag_ids, sitesOf);
      if (!list.length) continue;
      for (const t of list) sitesOf.get(t)!.push(s.id);
      this.bySite.set(s.id, this.pooled(list));
    }
    this.members = new Map();
    // Pushed in the order the store holds the sites (ascending when they came in order: a sort in one pass then).
    for (const [t, ids] of sitesOf) if (ids.length) this.members.set(t, new Members(ids.sort((a, b) => a - b)));
  }

  /** Of the tag ids a site's record names, those of live tags (`live`: by tag id), once each, in the tags' order. */
  private liveTags(tagIds: readonly number[], live: ReadonlyMap<number, unknown>): number[] {
    if (tagIds.length === 1) return live.has(tagIds[0]!) ? [tagIds[0]!] : [];
    const list = [...new Set(tagIds)].filter((t) => live.has(t));
    return list.sort((a, b) => ORDER(this.byId.get(a)!, this.byId.get(b)!));
  }

  /**
   * The tags changed since the index was built, each taken out of the sorted list where it was and put back where it
   * now goes (a binary search each: sorting every tag again with the collator took 10 ms at 10,000 tags, on the first
   * read after each tag change), in a new list (a caller may hold the old one). Then the sites that changed, and those
   * of a tag renamed (their lists are in name order) or deleted, get their lists again. False when the index is not what
   * it was built as (a tag not where it should be): it is built again.
   */
  private patch(tagIds: readonly number[], siteIds: readonly number[]): boolean {
    // A change of sites alone (most changes) leaves the tags' list as it is: no copy of it.
    const sorted = tagIds.length ? this.sorted.slice() : this.sorted;
    const again = new Set(siteIds);
    for (const id of tagIds) {
      const was = this.byId.get(id);
      const cur = this.store.get<TagRecord>('tags', id);
      if (was) {
        const at = place(sorted, was);
        if (sorted[at] !== was) return false;
        sorted.splice(at, 1);
      }
      if (cur) {
        sorted.splice(place(sorted, cur), 0, cur);
        this.byId.set(id, cur);
      } else this.byId.delete(id);
      if (was && (!cur || was.name !== cur.name)) for (const s of this.members.get(id)?.ascending() ?? NONE) again.add(s);
      if (!cur) this.members.delete(id);
    }
    this.sorted = sorted;
    for (const s of again) this.placeSite(s, this.store.get<SiteRecord>('sites', s)?.tag_ids ?? NONE);
    return true;
  }

  /** Sets a site's place in the index from the tag ids its record names (those of deleted tags are passed over). */
  private placeSite(site: number, tagIds: readonly number[]): void {
    const list = this.liveTags(tagIds, this.byId);
    for (const t of this.bySite.get(site) ?? NONE) if (!list.includes(t)) this.members.get(t)?.delete(site);
    for (const t of list) {
      let m = this.members.get(t);
      if (!m) this.members.set(t, (m = new Members()));
      m.add(site);
    }
    if (list.length) this.bySite.set(site, this.pooled(list));
    else this.bySite.delete(site);
  }

  get(id: number): TagWithSites | undefined {
    return this.seen(this.store.get<TagRecord>('tags', id));
  }

  resolve(id: number): TagWithSites {
    const t = this.get(id);
    if (!t) throw errors.tagNotFound(id);
    return t;
  }

  /** A tag's name (undefined when there is none), without building its view. */
  nameOf(id: number): string | undefined {
    return this.store.get<TagRecord>('tags', id)?.name;
  }

  findByName(name: string): TagWithSites | undefined {
    const n = cleanTagName(name).toLowerCase();
    this.index();
    return this.seen(this.sorted.find((t) => t.name.toLowerCase() === n));
  }

  list(f: TagFilter): TagWithSites[] {
    const search = f.search?.trim().toLowerCase();
    const include = f.include?.length ? new Set(f.include) : null;
    const exclude = f.exclude?.length ? new Set(f.exclude) : null;
    this.index();
    const out: TagWithSites[] = [];
    for (const t of this.sorted) {
      if (search && !t.name.toLowerCase().includes(search) && !String(t.id).includes(search)) continue;
      if ((include && !include.has(t.id)) || exclude?.has(t.id)) continue;
      const seen = this.seen(t);
      if (seen) out.push(seen);
    }
    return out;
  }

  /** Tag ids of a site, by tag name order. */
  tagsOfSite(siteId: number): readonly number[] {
    this.index();
    const ids = this.bySite.get(siteId) ?? NONE;
    return this.access.seesSite(siteId) ? ids : NONE;
  }

  /** Sites carrying any of these tags, ascending without repeats (one tag: its own list, not a copy). */
  sitesInTags(tagIds: readonly number[]): readonly number[] {
    let out: readonly number[] = NONE;
    for (const id of tagIds) {
      const t = this.get(id);
      if (t) out = union(out, t.site_ids);
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
  async add(input: { name: string; color?: string | null }): Promise<TagWithSites> {
    return this.view(await this.store.write((tx) => this.create(tx, input)));
  }

  /** Renames or recolours a tag in one durable write. */
  async edit(id: number, input: { name?: string; color?: string | null }): Promise<TagWithSites> {
    return this.view(await this.store.write((tx) => this.update(tx, id, input)));
  }

  create(tx: Tx, input: { name: string; color?: string | null }): TagRecord {
    const name = cleanTagName(input.name);
    if (!name) throw new ServiceError('svc_invalid_input', 'Tag name must not be empty.', 400);
    this.assertNameFree(tx, name);
    const t = this.stamp();
    return tx.insert<TagRecord>('tags', { name, color: input.color ?? null, created_at: t, updated_at: t });
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

  /**
   * Deletes a tag (its sites stay, without it) and every reference to it, in one durable write. The sites that carry it
   * are found by a pass over every site in the write (on PostgreSQL that holds the sites whole for the commit: no site
   * can be given the tag meanwhile), and each is written without it.
   */
  remove(id: number): Promise<TagRecord> {
    return this.store.write((tx) => {
      const cur = tx.get<TagRecord>('tags', id);
      if (!cur) throw errors.tagNotFound(id);
      this.onRemove.run(tx, id);
      for (const s of [...tx.all<SiteRecord>('sites')]) {
        if (s.tag_ids?.includes(id)) tx.put<SiteRecord>('sites', { ...s, tag_ids: s.tag_ids.filter((t) => t !== id) });
      }
      tx.delete('tags', id);
      return cur;
    });
  }

  /**
   * Makes `tagIds` exactly the tags of a site: one write of the site record (its tag_ids, ascending), none when they
   * are already its tags. Unknown tag ids → 404 before anything changes. The tags are looked up in the write (on
   * PostgreSQL each is then held for the commit: it cannot be deleted meanwhile).
   */
  setSiteTags(tx: Tx, siteId: number, tagIds: readonly number[]): void {
    const want = [...new Set(tagIds)].sort((a, b) => a - b);
    for (const id of want) if (!tx.get('tags', id)) throw errors.tagNotFound(id);
    const site = tx.get<SiteRecord>('sites', siteId);
    if (!site) throw errors.siteNotFound(siteId);
    if (sameIds(site.tag_ids ?? NONE, want)) return;
    tx.put<SiteRecord>('sites', { ...site, tag_ids: want });
  }
}
