// What sitefleet knows about each site from its child (site-data/<id>.json: the last sync, or the sync block
// of the last plugin/theme action): plugin and theme lists and their filters, the change log, and the
// fleet-wide abandoned lists, served from an in-memory index so that a request never reads every site's file.
import type { SiteAccess } from './access.js';
import { z } from 'zod';
import { SYNC_OUTDATED_DAYS, type SiteChange, type SiteTheme } from '../child/snapshot.js';
import { paginate } from '../core/paging.js';
import type { Config } from '../config.js';
import type { SiteData, SiteRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { ChildSiteService } from './child-sites.js';
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

  constructor(
    private readonly store: Store,
    private readonly read: (id: number) => SiteData | null,
    private readonly access: SiteAccess,
  ) {}

  private entry(site: SiteRecord): SiteEntry {
    const data = this.read(site.id);
    const items = (list: readonly SiteTheme[]) =>
      list
        .filter((i) => i.last_updated)
        .map((i) => ({
          site_id: site.id,
          site_url: site.url,
          slug: i.slug,
          name: i.name || i.slug,
          version: i.version,
          last_updated: i.last_updated!,
        }))
        .sort(byId);
    return {
      stamp: `${site.last_sync}|${site.updated_at}`,
      url: site.url,
      plugins: items(data?.plugins ?? []),
      themes: items(data?.themes ?? []),
    };
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
    const all = siteId === undefined ? this.flat[kind] : (this.sites.get(siteId)?.[kind] ?? []);
    // The index is the fleet's; each call sees the sites of its scope (domain/access.ts).
    const visible = this.access.visible();
    return all.filter((i) => i.last_updated <= cutoff && (!visible || visible.has(i.site_id)));
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

  constructor(
    private readonly config: Config,
    private readonly sites: SiteService,
    private readonly children: ChildSiteService,
    store: Store,
  ) {
    this.abandonedIndex = new AbandonedIndex(store, (id) => children.siteData(id), sites.access);
  }

  /** The stored data of a site; a site never synced (or seeded without a child) has empty lists. */
  of(site: SiteRecord): SiteData {
    return this.children.siteData(site.id) ?? { ...EMPTY, synced_at: site.last_sync ?? '' };
  }

  /** A site's plugins or themes as of its last sync, filtered; `data` is the whole stored data (synced_at, the other list). */
  items<K extends ItemKind>(ref: number | string, kind: K, f: ItemFilter): { site: SiteRecord; data: SiteData; items: SiteData[K] } {
    const site = this.sites.resolve(ref);
    const data = this.of(site);
    return { site, data, items: filterItems(data[kind] as SiteTheme[], f) as SiteData[K] };
  }

  /** A site's change log as of its last sync, filtered. */
  changes(ref: number | string, f: ChangeFilter): { site: SiteRecord; changes: SiteChange[] } {
    const site = this.sites.resolve(ref);
    return { site, changes: filterChanges(this.of(site).changes, f) };
  }

  /** The security issues a site reported at its last sync, and its TLS certificate now (one handshake). */
  async security(ref: number | string): Promise<{ site: SiteRecord; data: SiteData; ssl_status: TlsStatus }> {
    const site = this.sites.resolve(ref);
    const data = this.of(site);
    const ssl_status = await certificateStatus(site.url, { allowPrivate: this.config.allowPrivateSites });
    return { site, data, ssl_status };
  }

  /** One page of the fleet's (or one site's) abandoned plugins or themes, by site id then slug. */
  abandoned(kind: ItemKind, q: AbandonedQuery): { items: AbandonedItem[]; total: number; site?: SiteRecord } {
    const site = q.site === undefined ? undefined : this.sites.resolve(q.site);
    let all = this.abandonedIndex.list(kind, site?.id);
    const search = q.search?.trim().toLowerCase();
    if (search) all = all.filter((i) => i.slug.toLowerCase().includes(search) || i.name.toLowerCase().includes(search));
    return { items: paginate(all, q.page, q.per_page), total: all.length, site };
  }
}
