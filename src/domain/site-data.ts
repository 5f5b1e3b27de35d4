// What sitefleet knows about each site from its child (the site-data blob: the last sync, or the sync block of the
// last plugin/theme action): plugin and theme lists and their filters, the change log, and the fleet-wide abandoned
// lists, served from an in-memory index of what is derived, so that a request never reads every site's data.
import type { SiteAccess } from './access.js';
import { z } from 'zod';
import { SYNC_OUTDATED_DAYS, type SiteChange, type SiteTheme } from '../child/snapshot.js';
import { INTERN_VALUES_MAX, ValuePool, intern, internValue, keyOfPooled } from '../core/intern.js';
import type { Config } from '../config.js';
import type { SiteData, SiteRecord } from '../store/records.js';
import type { ChildSiteService } from './child-sites.js';
import { EntryGroup, GroupedList, type SiteGroup } from './grouped-list.js';
import { SiteDataIndex, type SiteDataScan } from './site-data-index.js';
import type { SiteService } from './sites.js';
import { certificateStatus, type TlsStatus } from './tls.js';

/** An installed item that has had no release for two years or more, with the site it is on. */
export const AbandonedItem = z.object({
  site_id: z.number().int(),
  site_url: z.string(),
  slug: z.string(),
  name: z.string(),
  version: z.string(),
  /** YYYY-MM-DD of the item's last release, as the child reported it. */
  last_updated: z.string(),
});
export type AbandonedItem = z.infer<typeof AbandonedItem>;
export type ItemKind = 'plugins' | 'themes';

const EMPTY: Omit<SiteData, 'synced_at'> = { plugins: [], themes: [], security: [], changes: [], users: [] };

export interface ItemFilter {
  status?: 'all' | 'active' | 'inactive';
  /** Only true filters (upstream: false means "no filter"). */
  has_update?: boolean;
  /** Case-insensitive substring of the slug or the name. */
  search?: string;
  /** true: must-use plugins only; false: regular plugins only; absent: both. */
  must_use?: boolean;
}

export function filterItems<T extends SiteTheme & { must_use?: boolean }>(items: readonly T[], f: ItemFilter): T[] {
  const search = f.search?.trim().toLowerCase();
  return items.filter(
    (i) =>
      (!f.status || f.status === 'all' || i.active === (f.status === 'active')) &&
      (!f.has_update || i.update_version !== null) &&
      (!search || i.slug.toLowerCase().includes(search) || i.name.toLowerCase().includes(search)) &&
      (f.must_use === undefined || (i.must_use ?? false) === f.must_use),
  );
}

/** The active theme is the first one flagged active (abilities reference §3.5). */
export function activeTheme(themes: readonly SiteTheme[]): string {
  return themes.find((t) => t.active)?.slug ?? '';
}

export interface ChangeFilter {
  /** wpadmin: changes made on the site itself (all the child reports); dashboard: none are stored; all. */
  source?: 'wpadmin' | 'dashboard' | 'all';
  /** Contexts (plugin, theme, user, post, ...); "allevents" or empty means every context. */
  contexts?: string[];
  actions?: string[];
}

export function filterChanges(changes: readonly SiteChange[], f: ChangeFilter): SiteChange[] {
  if (f.source === 'dashboard') return [];
  const lower = (l?: string[]) => (l?.length && !l.includes('allevents') ? new Set(l.map((x) => x.toLowerCase())) : null);
  const contexts = lower(f.contexts);
  const actions = lower(f.actions);
  return changes.filter((c) => (!contexts || contexts.has(c.type.toLowerCase())) && (!actions || actions.has(c.action.toLowerCase())));
}

// ---- abandoned lists ----

const DAY_MS = 86_400_000;

/**
 * Abandoned = last release on or before this day (YYYY-MM-DD, UTC). Two years is counted as the 730 days the
 * child is asked to report at sync (SYNC_OUTDATED_DAYS), so every item a child reports qualifies the same day.
 */
export function abandonedCutoff(now = Date.now()): string {
  return new Date(now - SYNC_OUTDATED_DAYS * DAY_MS).toISOString().slice(0, 10);
}

/**
 * The abandoned index keeps a site's items from HORIZON_DAYS before they turn abandoned, not every dated item: it is
 * derived again, from every site's data, once a period of that many days has passed (SiteDataIndex's `period`).
 */
export const HORIZON_DAYS = 30;

/** The period `now` falls in: how many HORIZON_DAYS from the epoch to its cutoff day's moment. */
function periodOf(now: number): string {
  return String(Math.floor((now - SYNC_OUTDATED_DAYS * DAY_MS) / (HORIZON_DAYS * DAY_MS)));
}

/** The last cutoff day of a period: an item last updated after it does not turn abandoned before the period ends. */
function horizonOf(period: string): string {
  return new Date((Number(period) + 1) * HORIZON_DAYS * DAY_MS - 1).toISOString().slice(0, 10);
}

/** An abandoned item as the index keeps it: without its site, frozen, one copy for every site that has the same. */
type Kept = Readonly<Omit<AbandonedItem, 'site_id' | 'site_url'>>;

interface SiteEntry {
  plugins: readonly Kept[];
  themes: readonly Kept[];
}

/** A site's part of a fleet-wide list (grouped-list.ts): its record and its items (`value`), by slug. */
interface Group extends SiteGroup {
  readonly value: readonly Kept[];
}

/** The list of a site with none (most sites, most of the time): one shared array, not two new ones per site. */
const NONE: readonly Kept[] = Object.freeze([]);

/** The entry of a site with no abandoned item (most sites): one frozen object, not one per site. */
const NO_ENTRY: SiteEntry = Object.freeze({ plugins: NONE, themes: NONE });
/**
 * Entries, at most ENTRIES_MAX, shared by the sites that have the same abandoned items (the same plugins and themes at
 * the same versions): keyed by the numbers of their pooled items.
 */
export const ENTRIES_MAX = INTERN_VALUES_MAX;
const entries = new ValuePool(ENTRIES_MAX);

/** What the abandoned items' index keeps of a site (exported for tests). */
export function abandonedEntry(_site: SiteRecord, data: SiteData | null, period: string): SiteEntry {
  const horizon = horizonOf(period);
  const items = (list: readonly SiteTheme[]) => {
    const near = list.filter((i) => i.last_updated && i.last_updated <= horizon);
    return near.length ? itemsOf(near) : NONE;
  };
  const plugins = items(data?.plugins ?? []);
  const themes = items(data?.themes ?? []);
  if (plugins === NONE && themes === NONE) return NO_ENTRY;
  return entries.get(`${keyOfPooled(plugins)}|${keyOfPooled(themes)}`, () => ({
    plugins: Object.freeze(plugins),
    themes: Object.freeze(themes),
  }));
}

function itemsOf(list: readonly SiteTheme[]): Kept[] {
  return list
    .map((i) => {
      const name = i.name || i.slug;
      // Pooled: the same item at the same version repeats on every site that has it (core/intern.ts).
      return internValue(`abandoned:${i.slug}\u0000${name}\u0000${i.version}\u0000${i.last_updated!}`, () => ({
        slug: intern(i.slug),
        name: intern(name),
        version: intern(i.version),
        last_updated: intern(i.last_updated!),
      }));
    })
    .sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
}

/** Item k of a group, as an answer shows it. */
const show = (g: Group, k: number): AbandonedItem => {
  const i = g.value[k]!;
  return { site_id: g.site.id, site_url: g.site.url, slug: i.slug, name: i.name, version: i.version, last_updated: i.last_updated };
};
const countOf = (g: Group) => g.value.length;

/**
 * Per-site abandoned items, derived from the sites' stored data and kept in memory (site-data-index.ts): when a site
 * record changes (every stored snapshot patches it), only the sites whose stamp moved are read again, in batches.
 */
class AbandonedIndex {
  private readonly index: SiteDataIndex<SiteEntry>;
  private flatAt = -1;
  private flat: Record<ItemKind, GroupedList<Group>> = { plugins: GroupedList.of([], countOf), themes: GroupedList.of([], countOf) };
  /** The cutoff day the fleet lists below were cut at, and those lists (unscoped calls). */
  private cutoff = '';
  private fleet = new Map<ItemKind, GroupedList<Group>>();
  /** The moment of the last list asked for: its period is the one the entries are derived in. */
  private now = Date.now();

  constructor(
    scan: SiteDataScan,
    private readonly access: SiteAccess,
  ) {
    // A sync or an action rewrites last_sync, every record change updated_at.
    this.index = new SiteDataIndex(
      scan,
      (site) => `${site.last_sync}|${site.updated_at}|${site.url}`,
      abandonedEntry,
      () => scan.store.all<SiteRecord>('sites'),
      () => periodOf(this.now),
    );
  }

  /** Every abandoned item of the fleet (or of one site), ordered by site id then slug. */
  async list(kind: ItemKind, site?: SiteRecord, now = Date.now()): Promise<GroupedList<Group>> {
    this.now = now;
    await this.index.refresh();
    const cutoff = abandonedCutoff(now);
    if (this.flatAt !== this.index.contents || this.cutoff !== cutoff) {
      // The record each entry was derived for (its URL is part of the stamp, so it is the one shown), as the entry
      // follows it: the lists hold no record an edit replaced.
      const all = [...this.index.allEntries()].sort((a, b) => a.site.id - b.site.id);
      const groups = (k: ItemKind) => all.flatMap((e) => (e.value[k].length ? [new EntryGroup(e, e.value[k])] : []));
      this.flat = { plugins: GroupedList.of(groups('plugins'), countOf), themes: GroupedList.of(groups('themes'), countOf) };
      this.flatAt = this.index.contents;
      this.cutoff = cutoff;
      this.fleet.clear();
    }
    // The index is the fleet's; each call sees the sites of its scope (domain/access.ts).
    const visible = this.access.visible();
    const old = (g: Group, k: number) => g.value[k]!.last_updated <= cutoff && (!visible || visible.has(g.site.id));
    if (site !== undefined) return GroupedList.of([{ site, value: this.index.get(site.id)?.[kind] ?? NONE }], countOf).filter(old);
    if (visible) return this.flat[kind].filter(old);
    // The whole fleet's list, kept until the entries or the day change: not a pass over every item per request.
    let list = this.fleet.get(kind);
    if (!list) this.fleet.set(kind, (list = this.flat[kind].filter(old)));
    return list;
  }
}

export interface AbandonedQuery {
  /** Only this site (id or domain; 404 when it names none). */
  site?: number | string;
  search?: string;
  page: number;
  per_page: number;
}

/**
 * A site's stored data and what is derived from it: its lists, filtered; its change log; its security snapshot with
 * a live TLS check; and the fleet's abandoned items, from an index this instance keeps (one per process and store).
 */
export class SiteDataService {
  private readonly abandonedIndex: AbandonedIndex;
  /** The clock the two-year cutoff is taken from (tests move it). */
  now: () => number = Date.now;

  constructor(
    private readonly config: Config,
    private readonly sites: SiteService,
    private readonly children: ChildSiteService,
    scan: SiteDataScan,
  ) {
    this.abandonedIndex = new AbandonedIndex(scan, sites.access);
  }

  /** The stored data of a site; a site never synced (or seeded without a child) has empty lists. */
  async of(site: SiteRecord): Promise<SiteData> {
    return (await this.children.siteData(site.id)) ?? this.empty(site);
  }

  /** What `of` answers for a site with no stored data. */
  empty(site: SiteRecord): SiteData {
    return { ...EMPTY, synced_at: site.last_sync ?? '' };
  }

  /** A site's plugins or themes as of its last sync, filtered; `data` is the whole stored data (synced_at, the other list). */
  async items<K extends ItemKind>(
    ref: number | string,
    kind: K,
    f: ItemFilter,
  ): Promise<{ site: SiteRecord; data: SiteData; items: SiteData[K] }> {
    const site = this.sites.resolve(ref);
    const data = await this.of(site);
    return { site, data, items: filterItems(data[kind] as SiteTheme[], f) as SiteData[K] };
  }

  /** A site's change log as of its last sync, filtered. */
  async changes(ref: number | string, f: ChangeFilter): Promise<{ site: SiteRecord; changes: SiteChange[] }> {
    const site = this.sites.resolve(ref);
    return { site, changes: filterChanges((await this.of(site)).changes, f) };
  }

  /** The security issues a site reported at its last sync, and its TLS certificate now (one handshake). */
  async security(ref: number | string): Promise<{ site: SiteRecord; data: SiteData; ssl_status: TlsStatus }> {
    const site = this.sites.resolve(ref);
    const data = await this.of(site);
    const ssl_status = await certificateStatus(site.url, { allowPrivate: this.config.allowPrivateSites });
    return { site, data, ssl_status };
  }

  /** One page of the fleet's (or one site's) abandoned plugins or themes, by site id then slug. */
  async abandoned(kind: ItemKind, q: AbandonedQuery): Promise<{ items: AbandonedItem[]; total: number; site?: SiteRecord }> {
    const site = q.site === undefined ? undefined : this.sites.resolve(q.site);
    let all = await this.abandonedIndex.list(kind, site, this.now());
    const search = q.search?.trim().toLowerCase();
    if (search) {
      all = all.filter((g, k) => {
        const i = g.value[k]!;
        return i.slug.toLowerCase().includes(search) || i.name.toLowerCase().includes(search);
      });
    }
    return { items: all.page(q.page, q.per_page, show), total: all.length, site };
  }
}
