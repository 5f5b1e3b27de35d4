// What sitefleet knows about each site from its child (site-data/<id>.json: the last sync, or the sync block
// of the last plugin/theme action): plugin and theme lists and their filters, the change log, and the
// fleet-wide abandoned lists, served from an in-memory index so that a request never reads every site's file.
import { z } from 'zod';
import { SYNC_OUTDATED_DAYS, type SiteChange, type SiteTheme } from '../child/snapshot.js';
import { paginate } from '../core/paging.js';
import type { SiteData, SiteRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { Services } from './index.js';

type Ctx = Pick<Services, 'store' | 'children'>;

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

/** The stored data of a site; a site never synced (or seeded without a child) has empty lists. */
export function siteData(ctx: Ctx, site: SiteRecord): SiteData {
  return ctx.children.siteData(site.id) ?? { ...EMPTY, synced_at: site.last_sync ?? '' };
}

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
  return items.filter((i) =>
    (!f.status || f.status === 'all' || i.active === (f.status === 'active')) &&
    (!f.has_update || i.update_version !== null) &&
    (!search || i.slug.toLowerCase().includes(search) || i.name.toLowerCase().includes(search)) &&
    (f.must_use === undefined || (i.must_use ?? false) === f.must_use));
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

interface SiteEntry {
  /** What the entry was derived from: a sync or an action rewrites last_sync, every record change updated_at. */
  stamp: string;
  url: string;
  plugins: AbandonedItem[];
  themes: AbandonedItem[];
}

const byId = (a: { site_id: number; slug: string }, b: { site_id: number; slug: string }) =>
  a.site_id - b.site_id || (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0);

/**
 * Per-site abandoned items, derived from the site-data files and kept in memory. Keyed on the sites
 * collection's version: when a site record changes (every stored snapshot patches it), only the sites whose
 * stamp moved are read again. The first request reads each site's file once.
 */
class AbandonedIndex {
  private version = -1;
  private sites = new Map<number, SiteEntry>();
  private flat: Record<ItemKind, AbandonedItem[]> = { plugins: [], themes: [] };

  constructor(private readonly store: Store, private readonly read: (id: number) => SiteData | null) {}

  private entry(site: SiteRecord): SiteEntry {
    const data = this.read(site.id);
    const items = (list: readonly SiteTheme[]) => list
      .filter((i) => i.last_updated)
      .map((i) => ({ site_id: site.id, site_url: site.url, slug: i.slug, name: i.name || i.slug, version: i.version, last_updated: i.last_updated! }))
      .sort(byId);
    return { stamp: `${site.last_sync}|${site.updated_at}`, url: site.url, plugins: items(data?.plugins ?? []), themes: items(data?.themes ?? []) };
  }

  private refresh(): void {
    const v = this.store.version('sites');
    if (v === this.version) return;
    const next = new Map<number, SiteEntry>();
    for (const site of this.store.all<SiteRecord>('sites')) {
      const cur = this.sites.get(site.id);
      next.set(site.id, cur && cur.stamp === `${site.last_sync}|${site.updated_at}` && cur.url === site.url ? cur : this.entry(site));
    }
    this.sites = next;
    const ids = [...next.keys()].sort((a, b) => a - b);
    this.flat = {
      plugins: ids.flatMap((id) => next.get(id)!.plugins),
      themes: ids.flatMap((id) => next.get(id)!.themes),
    };
    this.version = v;
  }

  /** Every abandoned item of the fleet (or of one site), ordered by site id then slug. */
  list(kind: ItemKind, siteId?: number, now = Date.now()): AbandonedItem[] {
    this.refresh();
    const cutoff = abandonedCutoff(now);
    const all = siteId === undefined ? this.flat[kind] : this.sites.get(siteId)?.[kind] ?? [];
    return all.filter((i) => i.last_updated <= cutoff);
  }
}

const indexes = new WeakMap<Store, AbandonedIndex>();

export function abandonedIndex(ctx: Ctx): AbandonedIndex {
  let index = indexes.get(ctx.store);
  if (!index) indexes.set(ctx.store, (index = new AbandonedIndex(ctx.store, (id) => ctx.children.siteData(id))));
  return index;
}

export interface AbandonedQuery {
  site?: SiteRecord;
  search?: string;
  page: number;
  per_page: number;
}

export function abandonedPage(ctx: Ctx, kind: ItemKind, q: AbandonedQuery): { items: AbandonedItem[]; total: number } {
  let all = abandonedIndex(ctx).list(kind, q.site?.id);
  const search = q.search?.trim().toLowerCase();
  if (search) all = all.filter((i) => i.slug.toLowerCase().includes(search) || i.name.toLowerCase().includes(search));
  return { items: paginate(all, q.page, q.per_page), total: all.length };
}
