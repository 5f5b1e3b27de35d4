// The site registry: lookup by id or domain, status, filtered and paged lists, edits.
import { errors } from '../core/errors.js';
import { firstPlace, naturalKey } from '../core/collate.js';
import { asSiteId, siteKey } from '../core/site-lookup.js';
import { IdNumbers } from '../store/id-numbers.js';
import type { Store, Tx } from '../store/store.js';
import type { SiteRecord, SiteSecret, TagRecord } from '../store/records.js';
import { Cascade } from './cascade.js';
import type { SiteAccess } from './access.js';
import type { TagService } from './tags.js';
import type { ItemError } from '../core/results.js';

export const SITE_STATUSES = ['connected', 'disconnected', 'suspended'] as const;
export type SiteStatus = (typeof SITE_STATUSES)[number];
export type StatusFilter = SiteStatus | 'any' | 'available_update';

export interface SiteFilter {
  status?: StatusFilter;
  search?: string;
  client_id?: number;
  tag_ids?: number[];
  include?: number[];
  exclude?: number[];
}

export function siteStatus(s: SiteRecord): SiteStatus {
  if (s.suspended) return 'suspended';
  return s.disconnected || s.sync_error ? 'disconnected' : 'connected';
}

export function hasUpdates(s: SiteRecord): boolean {
  return s.stats.plugin_updates > 0 || s.stats.theme_updates > 0 || s.stats.wp_update_available;
}

const now = () => new Date().toISOString();

/** Between the parts of a search text: no site's name or URL holds it (records refuse NUL). */
const SEP = '\u0000';
/**
 * What a search of the sites looks in: the id, the name and the URL, lower-cased, in one string. Lower-cased whole, so
 * it is one flat string: a concatenation kept as is holds its parts and a node of its own (3 MB at 100,000 sites).
 */
const searchText = (s: SiteRecord): string => `${s.id}${SEP}${s.name}${SEP}${s.url}`.toLowerCase();
/** The sites' order: by URL naturally (scheme and www. ignored; site2 before site10), then by id. */
const sortKey = (s: SiteRecord): string => naturalKey(siteKey(s.url));
/** Sites added, removed or moved at most, in one change, that the sorted list takes in place (more: it is sorted again). */
const PATCH_MOVES = 64;

/** What a filter by tags is given: the sites carrying any of the tags, ascending without repeats (TagService.sitesInTags). */
export type TagSites = (tagIds: number[]) => readonly number[];

export function newSiteRecord(fields: Partial<SiteRecord> & Pick<SiteRecord, 'url'>): Omit<SiteRecord, 'id'> {
  const t = now();
  return {
    name: fields.url.replace(/^https?:\/\//, '').replace(/\/$/, ''),
    admin_username: '',
    client_id: null,
    notes: '',
    suspended: false,
    disconnected: false,
    sync_error: '',
    wp_version: '',
    php_version: '',
    child_version: '',
    last_sync: null,
    stats: { plugin_updates: 0, theme_updates: 0, wp_update_available: false, health_score: null },
    ssl_verify: true,
    http_user: null,
    sign_algo: 7,
    last_check: null,
    created_at: t,
    updated_at: t,
    ...fields,
  };
}

export class SiteService {
  private cacheVersion = -1;
  private sorted: SiteRecord[] = [];
  /** What a search looks in, for each site of `sorted` at its place (searchText). */
  private texts: string[] = [];
  /** Whether `sorted` itself was answered since it was last changed (a caller may hold it: the next change copies). */
  private handedOut = false;

  /** Who else forgets a removed site (tags, costs). */
  readonly onRemove = new Cascade();
  /** The running call's scope: a site outside it is answered exactly as a site that does not exist. */
  readonly access: SiteAccess;

  constructor(
    private readonly store: Store,
    private readonly tags: TagService,
  ) {
    this.access = tags.access;
  }

  /**
   * Changes a site's name, notes, client (null unassigns; an unknown one is 404) and tags (the list replaces them;
   * an unknown tag is 404), in one durable write: all or nothing.
   */
  edit(id: number, input: { name?: string; notes?: string; client_id?: number | null; tags?: number[] }): Promise<SiteRecord> {
    return this.store.write((tx) => {
      if (input.client_id && !tx.get('clients', input.client_id)) throw errors.clientNotFound(input.client_id);
      if (input.tags) this.tags.setSiteTags(tx, id, input.tags);
      const changes: Partial<SiteRecord> = {};
      if (input.name !== undefined) changes.name = input.name.replace(/https?:\/\//g, '');
      if (input.notes !== undefined) changes.notes = input.notes;
      if (input.client_id !== undefined) changes.client_id = input.client_id;
      return this.patch(tx, id, changes);
    });
  }

  /** Sites sorted by URL naturally (scheme and www. ignored; site2 before site10) and their search texts, kept up to the sites. */
  private indexes(): { sorted: SiteRecord[]; texts: string[] } {
    const v = this.store.version('sites');
    if (v !== this.cacheVersion) {
      if (this.cacheVersion < 0 || !this.patchIndexes()) this.rebuildIndexes();
      this.cacheVersion = v;
    }
    return { sorted: this.sorted, texts: this.texts };
  }

  private rebuildIndexes(): void {
    const all = [...this.store.all<SiteRecord>('sites')];
    // The keys live only while the fleet is sorted: kept per record they were 18 MB at 100,000 sites.
    const keyed = all.map((s) => [sortKey(s), s] as const);
    keyed.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1].id - b[1].id));
    this.sorted = keyed.map(([, s]) => s);
    this.texts = this.sorted.map(searchText);
    this.handedOut = false;
    this.places = null;
    this.rebuilds++;
    this.sorts++;
  }
  /** How many times the sites in the sorted list, or their order, changed (see `order`). */
  private rebuilds = 0;
  /** How many times the fleet was sorted whole (tests read it: a change within PATCH_MOVES sorts nothing). */
  sorts = 0;

  /**
   * A key that moves whenever the order or the set of the sorted sites may have moved (a site added, removed or given
   * another URL), but not when sites were only changed in place: what an index kept in the list's order watches.
   */
  order(): number {
    this.indexes();
    return this.rebuilds;
  }

  /**
   * Brings the indexes up to the sites from the records the store's change log names, instead of sorting the fleet
   * again (100,000 sites: a list after an edit took 72 ms, after an add 90 ms). A changed record is swapped in at its
   * place (an edit, a sync: the usual change); a site added, removed or given another URL is taken out of the list
   * and put in at its place by a binary search, up to PATCH_MOVES of them. False when it cannot (a rebuild follows).
   */
  private patchIndexes(): boolean {
    const ids = this.store.changedSince('sites', this.cacheVersion);
    if (!ids) return false;
    // The sorted list holds the record each place was given for; the place map finds it by id.
    const at = this.placeOf(this.sorted);
    const changed: Array<[number, SiteRecord]> = [];
    const out: number[] = [];
    const into: SiteRecord[] = [];
    let renamed = false;
    for (const id of ids) {
      const s = this.store.get<SiteRecord>('sites', id);
      const p = at.get(id);
      const old = p === undefined ? undefined : this.sorted[p];
      if (old === s) continue; // the same record, or a site added and removed since
      if (old && s && old.url === s.url) {
        changed.push([p!, s]);
        if (old.name !== s.name) renamed = true;
        continue;
      }
      if (old) out.push(p!);
      if (s) into.push(s);
    }
    if (out.length + into.length > PATCH_MOVES) return false;
    if (!changed.length && !out.length && !into.length) return true;
    // A caller may still hold the list answered before (an unfiltered list is the list itself): then a new array, else
    // this one changed in place (a copy per edit was 800 KB at 100,000 sites, each a large object for the collector).
    const next = this.handedOut ? this.sorted.slice() : this.sorted;
    this.handedOut = false;
    for (const [p, s] of changed) next[p] = s;
    // A site's search text changes only with its name (its URL did not move): an edit of its notes keeps the old one.
    // The texts are never handed out.
    if (renamed) for (const [p, s] of changed) this.texts[p] = searchText(s);
    this.sorted = next;
    if (!out.length && !into.length) {
      // Places did not move: their map carries over.
      this.places = { sorted: next, at };
      return true;
    }
    // From the last place down, so that the places still to go stay where they were.
    for (const p of out.sort((a, b) => b - a)) this.takeOut(p);
    for (const s of into) this.putIn(s);
    this.places = null;
    this.rebuilds++;
    return true;
  }

  /** Takes the site at place p out of the list. */
  private takeOut(p: number): void {
    this.sorted.splice(p, 1);
    this.texts.splice(p, 1);
  }

  /** Puts a site in the list at its place (by key, then id). */
  private putIn(s: SiteRecord): void {
    const key = sortKey(s);
    const at = firstPlace(this.sorted.length, (i) => {
      const m = this.sorted[i]!;
      const mk = sortKey(m);
      return mk < key || (mk === key && m.id < s.id);
    });
    this.sorted.splice(at, 0, s);
    this.texts.splice(at, 0, searchText(s));
  }

  /**
   * The site of a domain (siteKey; the lowest id when several share it), by a binary search of the sorted list: sites of
   * one domain share a sort key (made from it; site01 and site1 share one too) and sort by id within it. A Map of the
   * domains was 6.5 MB at 100,000 sites, for a look-up a request makes at most a few times.
   */
  private siteOfDomain(k: string): SiteRecord | undefined {
    const sorted = this.indexes().sorted;
    const key = naturalKey(k);
    for (let q = firstPlace(sorted.length, (i) => sortKey(sorted[i]!) < key); q < sorted.length; q++) {
      const s = sorted[q]!;
      if (sortKey(s) !== key) return undefined;
      if (siteKey(s.url) === k) return s;
    }
    return undefined;
  }

  /**
   * Each site's place in the sorted list (built when a filter names sites, for the sites version in force), in pages by
   * id (IdNumbers: ids come from a sequence): a Map was about 5 MB at 100,000 sites and a hash per look-up.
   */
  private placeOf(sorted: SiteRecord[]): IdNumbers {
    if (this.places?.sorted !== sorted) {
      const at = new IdNumbers();
      for (let i = 0; i < sorted.length; i++) at.set(sorted[i]!.id, i);
      this.places = { sorted, at };
    }
    return this.places.at;
  }
  private places: { sorted: SiteRecord[]; at: IdNumbers } | null = null;

  get(id: number): SiteRecord | undefined {
    const s = this.store.get<SiteRecord>('sites', id);
    return s && this.access.seesSite(id) ? s : undefined;
  }

  /** Resolve a site id or domain; a lookup, never a scan. Throws 404 svc_site_not_found. */
  resolve(ref: number | string): SiteRecord {
    const site = this.find(ref);
    if (!site) throw errors.siteNotFound(ref);
    return site;
  }

  find(ref: number | string): SiteRecord | undefined {
    const id = asSiteId(ref);
    if (id !== null) return id > 0 ? this.get(id) : undefined;
    const key = siteKey(String(ref));
    if (!key) return undefined;
    const found = this.siteOfDomain(key);
    return found && this.get(found.id);
  }

  /** A tag (404 when none) and the sites carrying it, by domain then id. */
  inTag(tagId: number): { tag: TagRecord; sites: SiteRecord[] } {
    const tag = this.tags.resolve(tagId);
    const sites = tag.site_ids
      .map((id) => this.get(id))
      .filter((s): s is SiteRecord => !!s)
      .map((s) => [sortKey(s), s] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1].id - b[1].id))
      .map(([, s]) => s);
    return { tag, sites };
  }

  findByUrl(url: string): SiteRecord | undefined {
    const found = this.siteOfDomain(siteKey(url));
    return found && this.get(found.id);
  }

  /** The sites of the caller's scope that the filter keeps, in list order. */
  filter(f: SiteFilter, tagSites: TagSites): SiteRecord[] {
    const { items } = this.select(f, tagSites, 0, Infinity);
    // The list itself leaves the service (no filter): its next change copies it.
    if (items === this.sorted) this.handedOut = true;
    return items;
  }

  /**
   * `count` of filter's sites from place `from` on, and how many it keeps in all, without an array of them all: a
   * list by status at 100,000 sites made one of up to 100,000 records a request to answer a page of 100.
   */
  page(f: SiteFilter, tagSites: TagSites, from: number, count: number): { items: SiteRecord[]; total: number } {
    return this.select(f, tagSites, from, from + count);
  }

  /** The sites the filter keeps that the caller may see, those from place `from` to `to` (exclusive) of them, and their count. */
  private select(f: SiteFilter, tagSites: TagSites, from: number, to: number): { items: SiteRecord[]; total: number } {
    const { sorted, texts } = this.indexes();
    const visible = this.access.visible();
    const search = f.search?.trim().toLowerCase();
    const include = f.include?.length ? new Set(f.include) : null;
    const exclude = f.exclude?.length ? new Set(f.exclude) : null;
    const inTags = f.tag_ids?.length ? tagSites(f.tag_ids) : null;
    const status = f.status && f.status !== 'any' ? f.status : null;
    if (!visible && !search && !include && !exclude && !inTags && !status && f.client_id === undefined)
      return { items: from === 0 && to === Infinity ? sorted : sorted.slice(from, to), total: sorted.length };
    // A tag filter or an include list names the candidates: when they are a small part of the fleet, only they are
    // looked at (in list order), not every site (a tag of 5,000 sites in a fleet of 100,000: a twentieth of the work).
    // Lists walked by index: a for-of over a value that is an array here and a Set there made an iterator result per
    // site (0.7 GB in 40 s of the bench's mix at 100,000 sites, the largest allocation left).
    const listed = include && [...include]; // each site once
    const named = inTags && listed ? (inTags.length < listed.length ? inTags : listed) : (inTags ?? listed);
    let places: Int32Array | null = null;
    if (named && named.length * 4 < sorted.length) {
      const at = this.placeOf(sorted);
      const found = new Int32Array(named.length);
      let n = 0;
      for (let i = 0; i < named.length; i++) {
        const p = at.get(named[i]!);
        if (p !== undefined) found[n++] = p;
      }
      places = found.subarray(0, n).sort();
    }
    // The places of the tags' sites when the candidates are not them already (marks, not a Set of the tags' sites).
    let tagged: Uint8Array | null = null;
    if (inTags && !(places && named === inTags)) {
      const at = this.placeOf(sorted);
      tagged = new Uint8Array(sorted.length);
      for (let i = 0; i < inTags.length; i++) {
        const p = at.get(inTags[i]!);
        if (p !== undefined) tagged[p] = 1;
      }
    }
    // The search looks in each site's search text (one string, made when the site was indexed), not in its name and
    // URL lower-cased per site per request: at 20,000 sites, 8 ms a list once the sites had been edited (their strings
    // spread over the heap), 0.5 ms this way. A search holding the separator takes the fields one by one.
    // The text is looked at first, before the record: edited records lie all over the heap, and reading a field of
    // each (its status) for every site made a list by status and search at 20,000 sites go from 0.5 ms to 2.2 ms
    // after 20,000 edits.
    const byText = search !== undefined && search !== '' && !search.includes(SEP);
    const byField = search !== undefined && search !== '' && !byText;
    const out: SiteRecord[] = [];
    let total = 0;
    const count = places ? places.length : sorted.length;
    for (let k = 0; k < count; k++) {
      const p = places ? places[k]! : k;
      if (byText && !texts[p]!.includes(search)) continue;
      const s = sorted[p]!;
      if (
        (!tagged || tagged[p] === 1) &&
        (!include || include.has(s.id)) &&
        (!exclude || !exclude.has(s.id)) &&
        (!status || (status === 'available_update' ? hasUpdates(s) : siteStatus(s) === status)) &&
        (f.client_id === undefined || s.client_id === f.client_id) &&
        (!byField || String(s.id).includes(search) || s.name.toLowerCase().includes(search) || s.url.toLowerCase().includes(search)) &&
        (!visible || visible.has(s.id))
      ) {
        if (total >= from && total < to) out.push(s);
        total++;
      }
    }
    return { items: out, total };
  }

  count(): number {
    return this.access.visible()?.size ?? this.store.count('sites');
  }

  /** Adds a site record (the registration handshake lives in the child-sites service). */
  insert(tx: Tx, fields: Partial<SiteRecord> & Pick<SiteRecord, 'url'>, secret?: SiteSecret): SiteRecord {
    const rec = tx.insert<SiteRecord>('sites', newSiteRecord(fields));
    if (secret) tx.putBlob('secrets', rec.id, secret);
    return rec;
  }

  patch(tx: Tx, id: number, changes: Partial<Omit<SiteRecord, 'id'>>): SiteRecord {
    const cur = tx.get<SiteRecord>('sites', id);
    if (!cur) throw errors.siteNotFound(id);
    return tx.put<SiteRecord>('sites', { ...cur, ...changes, updated_at: now() });
  }

  /**
   * Suspends sites (left out of syncs and updates) or lifts it, in one durable write; lifting also clears the last
   * sync error, so the site is judged afresh.
   */
  setSuspended(ids: readonly number[], suspended: boolean): Promise<SiteRecord[]> {
    return this.store.write((tx) => ids.map((id) => this.patch(tx, id, suspended ? { suspended } : { suspended, sync_error: '' })));
  }

  /** Unassigns every site of a client (kept, with no client). */
  unassignClient(tx: Tx, clientId: number): void {
    for (const s of [...tx.all<SiteRecord>('sites')]) if (s.client_id === clientId) this.patch(tx, s.id, { client_id: null });
  }

  /** Removes a site, its data and keys, and every reference to it, in one durable write. */
  remove(id: number): Promise<void> {
    return this.store.write((tx) => {
      if (!tx.get('sites', id)) throw errors.siteNotFound(id);
      this.onRemove.run(tx, id);
      tx.delete('sites', id);
      tx.putBlob('site-data', id, null);
      tx.putBlob('secrets', id, null);
    });
  }

  /**
   * Which sites a batch covers: the named ones (unknown ones as per-item errors), or, for an empty list, every site
   * `byDefault` keeps; either way minus `exclude`.
   */
  forBatch(
    refs: Array<number | string>,
    exclude: readonly number[] | undefined,
    byDefault: (s: SiteRecord) => boolean,
  ): { found: SiteRecord[]; errors: ItemError[] } {
    const out = refs.length ? this.resolveMany(refs) : { found: this.filter({}, () => []).filter(byDefault), errors: [] as ItemError[] };
    const ex = new Set(exclude ?? []);
    return { found: out.found.filter((s) => !ex.has(s.id)), errors: out.errors };
  }

  /** Resolves every identifier; the unknown ones become per-item errors that keep the identifier as given. */
  resolveMany(refs: Array<number | string>): { found: SiteRecord[]; errors: ItemError[] } {
    const found: SiteRecord[] = [];
    const seen = new Set<number>();
    const unknown: ItemError[] = [];
    for (const ref of refs) {
      const s = this.find(ref);
      if (!s) {
        const e = errors.siteNotFound(ref);
        unknown.push({ identifier: ref, code: e.code, message: e.message, status: e.status });
      } else if (!seen.has(s.id)) {
        seen.add(s.id);
        found.push(s);
      }
    }
    return { found, errors: unknown };
  }

  /** A site's child key and passwords (a cold blob: read from the store through its bounded cache). */
  secret(id: number): Promise<SiteSecret | null> {
    return this.store.readBlob<SiteSecret>('secrets', id);
  }

  /**
   * Up to `limit` sites whose domain or name starts with `text` (letter case, scheme and www. ignored; a number also
   * names its id), by domain; and whether more match. Two binary searches over prefix indexes rebuilt only when a
   * site is added, removed, renamed or given another URL (an edit or a sync keeps them: 100,000 sites, a completion
   * after an edit took about 100 ms to sort them again), so a completion costs O(log n + limit) at any fleet size.
   */
  suggest(text: string, limit: number): { sites: SiteRecord[]; more: boolean } {
    const v = this.store.version('sites');
    if (v !== this.prefixVersion) {
      if (!this.prefixesStand(this.store.changedSince('sites', this.prefixVersion))) {
        const keyed = (key: (s: SiteRecord) => string) =>
          [...this.store.all<SiteRecord>('sites')]
            .map((s) => [key(s), s.id] as const)
            .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
        this.prefixes = [keyed(domainKey), keyed(nameKey)];
        this.prefixBuilds++;
      }
      this.prefixVersion = v;
    }
    const out = new Map<number, SiteRecord>();
    const id = asSiteId(text);
    const exact = id !== null && id > 0 ? this.get(id) : undefined;
    if (exact) out.set(exact.id, exact);
    let more = false;
    const want = siteKey(text);
    for (const [i, index] of this.prefixes.entries()) {
      const p = i === 0 ? want : text.trim().toLowerCase();
      for (let j = firstPlace(index.length, (k) => index[k]![0] < p); j < index.length && index[j]![0].startsWith(p); j++) {
        if (out.has(index[j]![1])) continue;
        const s = this.get(index[j]![1]); // undefined when outside the call's scope: neither suggested nor counted as more
        if (!s) continue;
        if (out.size >= limit) {
          more = true;
          break;
        }
        out.set(s.id, s);
      }
    }
    return { sites: [...out.values()], more };
  }
  private prefixVersion = -1;
  private prefixes: Array<ReadonlyArray<readonly [string, number]>> = [[], []];
  /** How many times the prefix indexes were built (tests read it: an edit builds none). */
  prefixBuilds = 0;

  /** Whether every site changed (`ids`, from the store's change log; null: unknown) is in both indexes as it is now. */
  private prefixesStand(ids: readonly number[] | null): boolean {
    if (!ids || this.prefixVersion < 0) return false;
    const holds = (index: ReadonlyArray<readonly [string, number]>, key: string, id: number) => {
      const at = index[firstPlace(index.length, (j) => index[j]![0] < key || (index[j]![0] === key && index[j]![1] < id))];
      return at?.[0] === key && at[1] === id;
    };
    return ids.every((id) => {
      const s = this.store.get<SiteRecord>('sites', id);
      return s !== undefined && holds(this.prefixes[0]!, domainKey(s), id) && holds(this.prefixes[1]!, nameKey(s), id);
    });
  }
}

const domainKey = (s: SiteRecord): string => siteKey(s.url);
const nameKey = (s: SiteRecord): string => s.name.toLowerCase();
