// Updates across the fleet (issue 15; updates reference): what is pending on each site (stored from its sync, filtered
// by ignore rules), the ignore rules themselves, and applying updates through the child. The child is the authority:
// an item counts as updated only when the child's own fresh data shows the new version (its updated_data, read from
// disk after the upgrade, or a sync block / a sync right after the call) — never because the request was sent.
// One update run per site at a time; many sites run as a persisted job that never updates an item twice.
import { unscoped } from '../core/scope.js';
import type { ChildConnector, SiteCredentials, UpgradeResult } from '../child/connector.js';
import { ChildError } from '../child/child-error.js';
import { isNewer, type PendingItem, type SitePending, type SiteSnapshot } from '../child/snapshot.js';
import type { CallContext, ProgressReport } from '../core/ability.js';
import { ServiceError, errors } from '../core/errors.js';
import type { IgnoreRecord, JobRecord, SiteData, SiteRecord } from '../store/records.js';
import { addItems, itemsOfSite } from './job-chunks.js';
import { eachSiteData } from '../store/blob-batches.js';
import type { Store, Tx } from '../store/store.js';
import { childFailure, type ChildSiteService, type Outcome } from './child-sites.js';
import { SiteDataIndex, type SiteDataScan } from './site-data-index.js';
import {
  NO_ITEMS,
  PendingList,
  countOf,
  pack,
  packedWhere,
  viewAt,
  viewsOf,
  type Group,
  type ItemType,
  type Packed,
  type PackedItem,
  type PendingView,
  type Summary,
  type Where,
} from './pending-list.js';
import { intern } from '../core/intern.js';
import { siteStatus, type SiteService } from './sites.js';
import { EntryGroup } from './grouped-list.js';
import type { TagService } from './tags.js';
import { eachSite, type JobService } from './jobs.js';
import type { Config } from '../config.js';
import type { Principal } from '../core/principal.js';
import type { UpdateActor } from '../store/health-records.js';
import { SAFE_SITES_FACTOR, isRegression, type HealthService } from './health.js';
import type { UpdateRollback, RollbackView } from './safe-updates.js';
import type { HealthReport } from '../store/health-records.js';
import { actorOf, type HistoryEntry, type UpdateHistoryService } from './update-history.js';

export const TYPES = ['core', 'plugins', 'themes', 'translations'] as const;
export type TypeName = (typeof TYPES)[number];
export { summarise, type ItemType, type PendingView, type Summary } from './pending-list.js';
export const SINGULAR: Record<TypeName, ItemType> = { core: 'core', plugins: 'plugin', themes: 'theme', translations: 'translation' };

export interface UpdatedView extends Where {
  type: ItemType;
  slug: string;
  name: string;
  old_version: string | null;
  new_version: string;
  language?: string;
}
export interface ErrorView extends Where {
  type: ItemType | 'site';
  slug: string;
  code: string;
  message: string;
}
export type SkipReason = 'ignored' | 'not_pending' | 'site_suspended' | 'site_disconnected' | 'cancelled' | 'site_unhealthy';
export interface SkippedView extends Where {
  type: ItemType | 'site';
  slug: string;
  reason: SkipReason;
  message: string;
}
export interface IgnoredView extends Where {
  type: 'core' | 'plugin' | 'theme';
  slug: string;
  name: string;
  ignored_version: string;
  scope: 'site' | 'fleet';
}

export interface SiteRun {
  updated: UpdatedView[];
  errors: ErrorView[];
  skipped: SkippedView[];
  /** Safe mode: items whose update broke the site, and what was done about it (each is in errors too). */
  rolled_back?: RollbackView[];
}
/** Selection of sites for fleet-wide listing and applying: the union of the selectors; none = every site. */
export interface Selector {
  sites?: ReadonlyArray<number | string>;
  tags?: ReadonlyArray<number | string>;
  clients?: readonly number[];
}

/** What one run updates: the types (in the fixed order core → plugins → themes → translations) and, optionally, only these slugs. */
export interface Plan {
  types: readonly TypeName[];
  only?: readonly string[];
  /** Only these items, as `type:slug:language` (update policies pick items one by one). */
  items?: readonly string[];
  /** Who started the run, for the update history (kept in a queued job's params). */
  actor?: UpdateActor;
  /**
   * Safe mode: probe the site first (an unhealthy site is skipped unless `force`), apply its items one at a time with a
   * probe after each, and roll back an item whose update made a healthy site unhealthy.
   */
  safe?: boolean;
  force?: boolean;
}

/** update-all-v1 becomes a job above this many sites with something pending ("more than a few sites"). */
export const UPDATE_ALL_QUEUE_OVER = 5;
/** A list-updates refresh syncs at most this many sites first (more: use sync-sites-v1, which queues). */
export const MAX_REFRESH_SITES = 200;
/** Entries of would_update and of skipped a fleet-wide answer lists at most; the counts cover every item. */
export const MAX_LISTED = 1000;
const cap = <T>(list: T[]) => list.slice(0, MAX_LISTED);

/** What an update run over one or many sites answers (RunOutput of abilities/updates.ts). */
export interface RunAnswer extends SiteRun {
  dry_run?: true;
  would_update?: PendingView[];
  would_update_total?: number;
  sites_to_update?: number;
  truncated?: boolean;
  queued?: true;
  job_id?: string;
  updates_queued?: number;
  sites_queued?: number;
  summary: { total_updated: number; total_errors: number; total_skipped: number; sites_updated?: number; total_rolled_back?: number };
  not_processed?: number[];
  /** Whether the run was in safe mode. */
  safe?: boolean;
}

const runSummary = (r: SiteRun, sites = false) => ({
  total_updated: r.updated.length,
  total_errors: r.errors.length,
  total_skipped: r.skipped.length,
  ...(sites ? { sites_updated: new Set(r.updated.map((u) => u.site_id)).size } : {}),
  ...(r.rolled_back ? { total_rolled_back: r.rolled_back.filter((x) => x.outcome === 'rolled_back').length } : {}),
});

type Call = Pick<CallContext, 'signal' | 'progress'> & { principal?: Principal };

const where = (s: SiteRecord): Where => ({ site_id: s.id, site_url: s.url, site_name: s.name });
const ALL_TYPES: ReadonlySet<TypeName> = new Set(TYPES);
const EMPTY: SitePending = { core: null, plugins: [], themes: [], translations: [] };
const ALL_VERSIONS = '*';

/** The pending updates stored for a site; data stored before updates were kept falls back on the plugin/theme lists. */
export function storedPending(data: SiteData | null): SitePending {
  if (!data) return EMPTY;
  if (data.updates) return data.updates;
  const from = (list: SiteData['plugins'] | SiteData['themes']): PendingItem[] =>
    list
      .filter((i) => i.update_version && isNewer(i.update_version, i.version))
      .map((i) => ({ slug: i.slug, name: i.name || i.slug, current_version: i.version, new_version: i.update_version! }));
  return { core: null, plugins: from(data.plugins), themes: from(data.themes), translations: [] };
}

/** A site's pending items of the given types, packed (pending-list.ts); strings pooled. */
function packed(p: SitePending, types: ReadonlySet<TypeName>): Packed {
  // Pooled: the same plugin's slug, name and versions repeat on every site that has it (core/intern.ts).
  const item = (type: ItemType, slug: string, name: string, current_version: string | null, new_version: string): PackedItem => ({
    type,
    slug: intern(slug),
    name: intern(name),
    current_version: current_version === null ? null : intern(current_version),
    new_version: intern(new_version),
  });
  const out: PackedItem[] = [];
  if (types.has('core') && p.core) out.push(item('core', 'wordpress', 'WordPress', p.core.current_version, p.core.new_version));
  const add = (t: TypeName, list: PendingItem[]) => {
    if (!types.has(t)) return;
    for (const i of list) {
      const v = item(SINGULAR[t], i.slug, i.name, i.current_version, i.new_version);
      if (t === 'translations') v.language = intern(i.language ?? '');
      out.push(v);
    }
  };
  add('plugins', p.plugins);
  add('themes', p.themes);
  add('translations', p.translations);
  return pack(out);
}

const ruleMatches = (r: IgnoreRecord, i: { type: string; slug: string; new_version: string }) =>
  r.type === i.type &&
  (r.slug === ALL_VERSIONS || r.slug === i.slug) &&
  (r.versions.includes(ALL_VERSIONS) || r.versions.includes(i.new_version));

/**
 * In-memory view of the fleet's pending updates: each site's items, packed (pending-list.ts; site-data-index.ts: read
 * again, in batches, only for sites whose record changed; every sync patches it), then the ignore rules applied.
 */
class PendingIndex {
  private readonly index: SiteDataIndex<Packed>;
  /** The index's contents the lists below were built from (SiteDataIndex.contents). */
  private entriesAt = -1;
  private rulesVersion = -1;
  private rules = new Map<number, IgnoreRecord[]>();
  /** Every site's pending items after ignores, in site-list order. */
  private flat = PendingList.of([]);

  constructor(
    private readonly store: Store,
    sites: SiteService,
    scan: SiteDataScan,
  ) {
    this.index = new SiteDataIndex(
      scan,
      (site) => `${site.last_sync}|${site.updated_at}|${site.url}|${site.name}`,
      (_site, data) => packed(storedPending(data), ALL_TYPES),
      // The fleet's index, kept for every caller: built outside the caller's scope (list() cuts it to the scope).
      () => unscoped(() => sites.filter({}, () => [])),
      undefined,
      // In the site list's order: a site given another URL moves it.
      () => sites.order(),
    );
  }

  private loadedRules = -1;

  /** The rules alone (what planning one site needs): no pass over the fleet. */
  private refreshRules(): void {
    const rv = this.store.version('ignores');
    if (rv === this.loadedRules) return;
    this.rules = new Map();
    for (const r of this.store.all<IgnoreRecord>('ignores')) {
      const list = this.rules.get(r.site_id) ?? [];
      list.push(r);
      this.rules.set(r.site_id, list);
    }
    this.loadedRules = rv;
  }

  private async refresh(): Promise<void> {
    await this.index.refresh();
    const sv = this.index.contents;
    const rv = this.store.version('ignores');
    if (sv === this.entriesAt && rv === this.rulesVersion) return;
    this.refreshRules();
    const groups: Group[] = [];
    // The record each entry was derived for (its URL and name are part of the stamp, so they are the ones shown), as
    // the entry follows it: the list holds no record an edit replaced.
    for (const e of this.index.allEntries()) {
      const kept = this.kept(e.site, e.value);
      if (kept !== NO_ITEMS) groups.push(kept === e.value ? e : new EntryGroup(e, kept));
    }
    this.flat = PendingList.of(groups);
    this.entriesAt = sv;
    this.rulesVersion = rv;
    this.byTypes.clear();
  }

  /** A site's items the rules leave; a site no rule names keeps its items as they are (not a copy per site). */
  private kept(site: SiteRecord, all: Packed): Packed {
    if (!this.rules.has(0) && !this.rules.has(site.id)) return all;
    return packedWhere(all, (k) => !this.ignoredBy(site.id, viewAt(site, all, k)));
  }

  rulesOf(siteId: number): IgnoreRecord[] {
    this.refreshRules();
    return [...(this.rules.get(siteId) ?? []), ...(this.rules.get(0) ?? [])];
  }

  /** The rule that hides an item on a site (the site's own first, then the fleet's), or null. */
  ignoredBy(siteId: number, i: { type: string; slug: string; new_version: string }): IgnoreRecord | null {
    if (i.type === 'translation') return null;
    for (const id of [siteId, 0]) for (const r of this.rules.get(id) ?? []) if (ruleMatches(r, i)) return r;
    return null;
  }

  /** ignoredBy with the rules brought up to date first. */
  ignoredNow(siteId: number, i: { type: string; slug: string; new_version: string }): IgnoreRecord | null {
    this.refreshRules();
    return this.ignoredBy(siteId, i);
  }

  /** The fleet's items, after ignores. */
  async all(): Promise<PendingList> {
    await this.refresh();
    return this.flat;
  }

  private readonly byTypes = new Map<string, { items: PendingList; summary: Summary }>();

  /** The fleet's items of some types and their summary, computed once per change of sites or rules. */
  async allOf(types: ReadonlySet<TypeName>): Promise<{ items: PendingList; summary: Summary }> {
    await this.refresh();
    const key = [...types].sort().join(',');
    let hit = this.byTypes.get(key);
    if (!hit) {
      const items = types.size === TYPES.length ? this.flat : this.flat.filter((_, type) => types.has(TYPE_NAME[type]));
      hit = { items, summary: items.summary() };
      this.byTypes.set(key, hit);
    }
    return hit;
  }

  /** Some sites' items after ignores, in the order given. */
  async ofSites(sites: readonly SiteRecord[]): Promise<PendingList> {
    await this.refresh();
    const groups: Group[] = [];
    for (const site of sites) {
      // After the refresh, the site's entry was derived for a record with its URL and name.
      const kept = this.kept(site, this.index.get(site.id) ?? NO_ITEMS);
      if (countOf(kept)) groups.push({ site, value: kept });
    }
    return PendingList.of(groups);
  }
}

const siteError = (ref: number | string, e: ServiceError): ErrorView => ({
  site_id: 0,
  site_url: String(ref),
  site_name: '',
  type: 'site',
  slug: '',
  code: e.code,
  message: e.message,
});

export class UpdateService {
  private readonly index: PendingIndex;
  /** Sites with an update run in this process: one run per site at a time. */
  private readonly busy = new Map<number, Promise<void>>();

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly sites: SiteService,
    private readonly tags: TagService,
    private readonly children: ChildSiteService,
    private readonly jobs: JobService,
    readonly health: HealthService,
    private readonly history: UpdateHistoryService,
    private readonly rollbacks: UpdateRollback,
    scan: SiteDataScan,
  ) {
    this.index = new PendingIndex(store, sites, scan);
  }
  /** A removed site's ignore rules go with it (wired as a cascade of sites.remove in domain/index.ts). */
  forgetSite(tx: Tx, siteId: number): void {
    for (const r of [...tx.all<IgnoreRecord>('ignores')]) if (r.site_id === siteId) tx.delete('ignores', r.id);
  }

  /** Sites a run of this plan works on at once. */
  siteConcurrency(plan: Pick<Plan, 'safe'> | undefined): number {
    return plan?.safe ? SAFE_SITES_FACTOR * this.config.childConcurrency : this.config.childConcurrency;
  }

  // ---- selection ----

  /** Sites named by the selectors (deduplicated, site-list order), and one error item per value that names nothing. */
  select(sel: Selector): { sites: SiteRecord[]; errors: ErrorView[]; all: boolean } {
    const refs = sel.sites ?? [];
    const tags = sel.tags ?? [];
    const clients = sel.clients ?? [];
    const ordered = this.sites.filter({}, () => []);
    if (!refs.length && !tags.length && !clients.length) return { sites: ordered, errors: [], all: true };
    const ids = new Set<number>();
    const errors: ErrorView[] = [];
    for (const ref of refs) {
      try {
        ids.add(this.sites.resolve(ref).id);
      } catch (e) {
        errors.push(siteError(ref, e as ServiceError));
      }
    }
    for (const ref of tags) {
      const asId = typeof ref === 'number' ? ref : /^\s*\d+\s*$/.test(ref) ? Number(ref) : null;
      const tag = (asId !== null ? this.tags.get(asId) : undefined) ?? this.tags.findByName(String(ref));
      if (!tag) errors.push(siteError(ref, new ServiceError('svc_tag_not_found', `No tag found with ID or name "${ref}".`, 404)));
      else for (const id of tag.site_ids) ids.add(id);
    }
    for (const id of clients) {
      const mine = ordered.filter((s) => s.client_id === id);
      if (!mine.length) errors.push(siteError(id, new ServiceError('svc_client_not_found', `No client with ID ${id} has sites.`, 404)));
      for (const s of mine) ids.add(s.id);
    }
    return { sites: ordered.filter((s) => ids.has(s.id)), errors, all: false };
  }

  // ---- pending ----

  /** A site's pending items after ignore rules, of the given types (no child call). */
  async pending(site: SiteRecord, types: readonly TypeName[] = TYPES): Promise<PendingView[]> {
    // One site's own data and the rules: no pass over the fleet.
    const data = await this.children.siteData(site.id);
    return viewsOf(site, packed(storedPending(data), new Set(types))).filter((i) => !this.index.ignoredNow(site.id, i));
  }

  /** The fleet's pending items (or the selected sites'), paged; summary counts every item. */
  async list(sel: Selector, types: readonly TypeName[], page: number, perPage: number) {
    const t = new Set(types.length ? types : TYPES);
    const visible = this.sites.access.visible();
    const answer = (items: PendingList, summary: Summary, errors: ErrorView[]) => ({
      updates: items.page(page, perPage),
      summary,
      page,
      per_page: perPage,
      total: items.length,
      errors,
    });
    if (!sel.sites?.length && !sel.tags?.length && !sel.clients?.length) {
      // The whole fleet: served from the index (the busy case — an assistant asking "what needs updating?").
      const fleet = await this.index.allOf(t);
      if (!visible) return answer(fleet.items, fleet.summary, []);
      const mine = fleet.items.filter((siteId) => visible.has(siteId));
      return answer(mine, mine.summary(), []);
    }
    const { sites, errors, all } = this.select(sel);
    const items = (all ? await this.index.all() : await this.index.ofSites(sites)).filter(
      (siteId, type) => (!visible || visible.has(siteId)) && t.has(TYPE_NAME[type]),
    );
    return answer(items, items.summary(), errors);
  }

  /** Syncs the selected sites first (connected ones, at most MAX_REFRESH_SITES), so that a listing is not stale. */
  async refresh(call: Call, sites: readonly SiteRecord[]): Promise<ErrorView[]> {
    const live = sites.filter((s) => siteStatus(s) !== 'suspended' && !s.disconnected);
    if (live.length > MAX_REFRESH_SITES) {
      throw new ServiceError(
        'svc_refresh_too_many',
        `refresh syncs at most ${MAX_REFRESH_SITES} sites (${live.length} selected); run sync-sites-v1 first, or select fewer sites.`,
        400,
      );
    }
    const fan = { config: this.config, signal: call.signal };
    const { results } = await eachSite(fan, live, 'sync', async (s) => this.children.apply(await this.children.fetchSync(s)));
    return results.flatMap((r) =>
      r.ok
        ? []
        : [
            {
              site_id: r.site.id,
              site_url: r.site.url,
              site_name: r.site.name,
              type: 'site' as const,
              slug: '',
              code: r.error.code,
              message: r.error.message,
            },
          ],
    );
  }

  // ---- ignore rules ----

  private findRule(siteId: number, type: IgnoreRecord['type'], slug: string): IgnoreRecord | undefined {
    return [...this.store.all<IgnoreRecord>('ignores')].find((r) => r.site_id === siteId && r.type === type && r.slug === slug);
  }

  /** The display name of an item on a site: pending data first, then the installed lists (never just the slug, D10). */
  private async nameOf(site: SiteRecord, type: IgnoreRecord['type'], slug: string): Promise<string> {
    if (type === 'core') return 'WordPress';
    if (slug === ALL_VERSIONS) return type === 'plugin' ? 'All plugins' : 'All themes';
    const data = await this.children.siteData(site.id);
    const p = storedPending(data);
    const hit =
      (type === 'plugin' ? p.plugins : p.themes).find((i) => i.slug === slug) ??
      (type === 'plugin' ? data?.plugins : data?.themes)?.find((i) => i.slug === slug);
    return hit?.name || slug;
  }

  /** Ignores (every version) or unignores one item on a site; true when a rule was added or removed. */
  async setIgnored(site: SiteRecord, type: IgnoreRecord['type'], slug: string, ignore: boolean): Promise<boolean> {
    const key = type === 'core' ? 'wordpress' : slug.trim();
    if (!key || key.length > 500) throw new ServiceError('svc_invalid_slug', `"${slug}" is not a ${type} slug.`, 400);
    const name = await this.nameOf(site, type, key);
    return this.store.write((tx) => {
      if (!tx.get('sites', site.id)) throw errors.siteNotFound(site.id);
      const cur = this.findRule(site.id, type, key);
      if (ignore) {
        if (cur && cur.versions.includes(ALL_VERSIONS)) return false;
        if (cur) tx.put<IgnoreRecord>('ignores', { ...cur, versions: [ALL_VERSIONS], name });
        else
          tx.insert<IgnoreRecord>('ignores', {
            site_id: site.id,
            type,
            slug: key,
            name,
            versions: [ALL_VERSIONS],
            created_at: new Date().toISOString(),
          });
        return true;
      }
      if (!cur) return false;
      tx.delete('ignores', cur.id);
      return true;
    });
  }

  /** Ignore rules that apply to the selected sites (a fleet rule is shown on every site, marked scope "fleet"). */
  ignored(sites: readonly SiteRecord[], types: readonly ('core' | 'plugins' | 'themes')[]): IgnoredView[] {
    const t = new Set(types.map((x) => SINGULAR[x]));
    const out: IgnoredView[] = [];
    const order = { core: 0, plugin: 1, theme: 2 } as const;
    for (const site of sites) {
      const rules = this.index
        .rulesOf(site.id)
        .filter((r) => t.has(r.type))
        .sort((a, b) => order[a.type] - order[b.type] || (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
      for (const r of rules) {
        out.push({
          ...where(site),
          type: r.type,
          slug: r.slug,
          name: r.name,
          ignored_version: r.versions.includes(ALL_VERSIONS) ? 'all_versions' : r.versions.join(', '),
          scope: r.site_id === 0 ? 'fleet' : 'site',
        });
      }
    }
    return out;
  }

  // ---- applying ----

  /**
   * What a run would do on one site: the pending items it would update, and what it skips (ignored, not pending,
   * site suspended or disconnected). `only` slugs are matched against every type.
   */
  async planSite(site: SiteRecord, plan: Plan): Promise<{ todo: PendingView[]; skipped: SkippedView[] }> {
    return this.planWith(site, await this.children.siteData(site.id), plan);
  }

  /** planSite for many sites, their data read a batch at a time (eachSiteData: one read per batch, not per site). */
  async planSites(
    sites: readonly SiteRecord[],
    plan: Plan,
  ): Promise<Array<{ site: SiteRecord; todo: PendingView[]; skipped: SkippedView[] }>> {
    const out: Array<{ site: SiteRecord; todo: PendingView[]; skipped: SkippedView[] }> = [];
    await eachSiteData(this.store, sites, (site, data) => out.push({ site, ...this.planWith(site, data, plan) }));
    return out;
  }

  private planWith(site: SiteRecord, data: SiteData | null, plan: Plan): { todo: PendingView[]; skipped: SkippedView[] } {
    const types = new Set(plan.types);
    const w = where(site);
    const only = plan.only?.length ? new Set(plan.only) : null;
    const all = viewsOf(site, packed(storedPending(data), types));
    const todo: PendingView[] = [];
    const skipped: SkippedView[] = [];
    const status = site.suspended ? 'site_suspended' : site.disconnected ? 'site_disconnected' : null;
    const picked = plan.items ? new Set(plan.items) : null;
    for (const i of all) {
      if (only && !only.has(i.slug)) continue;
      if (picked && !picked.has(`${i.type}:${i.slug}:${i.language ?? ''}`)) continue;
      const rule = this.index.ignoredNow(site.id, i);
      if (rule) {
        skipped.push({
          ...w,
          type: i.type,
          slug: i.slug,
          reason: 'ignored',
          message: `${i.name} ${i.new_version} is ignored ${rule.site_id ? 'on this site' : 'on every site'}.`,
        });
      } else if (status) {
        skipped.push({
          ...w,
          type: i.type,
          slug: i.slug,
          reason: status,
          message:
            status === 'site_suspended'
              ? `Site ${site.id} is suspended; unsuspend it to update it.`
              : `Site ${site.id} is disconnected; reconnect it to update it.`,
        });
      } else todo.push(i);
    }
    if (only) {
      for (const slug of only) {
        if (!all.some((i) => i.slug === slug)) {
          skipped.push({
            ...w,
            type: 'site',
            slug,
            reason: 'not_pending',
            message: `No ${[...types].join('/')} update of "${slug}" is pending on ${site.url} (as of its last sync).`,
          });
        }
      }
    }
    return { todo, skipped };
  }

  /** Runs `fn` holding the site's update lock; a second run on the same site waits (wait) or is refused (409). */
  async withSiteLock<T>(site: SiteRecord, wait: boolean, fn: () => Promise<T>): Promise<T> {
    while (this.busy.has(site.id)) {
      if (!wait)
        throw new ServiceError(
          'svc_update_in_progress',
          `An update run is already in progress on site ${site.id} (${site.url}); try again when it ends.`,
          409,
          { site_id: site.id },
        );
      await this.busy.get(site.id);
    }
    let release!: () => void;
    this.busy.set(
      site.id,
      new Promise<void>((r) => {
        release = r;
      }),
    );
    try {
      return await fn();
    } finally {
      this.busy.delete(site.id);
      release();
    }
  }

  /**
   * Updates one site: one child call per type, in the order core → plugins → themes → translations, then one store
   * write with what the child reported. Every planned item ends in exactly one of updated / errors (D1).
   */
  async runSite(
    site: SiteRecord,
    plan: Plan,
    opts: {
      wait?: boolean;
      progress?: (p: { item: string; ok: boolean }) => void;
      extraCommit?: (tx: Tx, r: SiteRun) => void;
      resumed?: boolean;
    } = {},
  ): Promise<SiteRun> {
    return this.withSiteLock(site, opts.wait ?? false, async () => {
      let verified: UpdatedView[] = [];
      if (opts.resumed) verified = await this.verifyAfterResume(site, plan);
      const fresh = this.sites.get(site.id) ?? site;
      const { todo, skipped } = await this.planSite(fresh, plan);
      const run: SiteRun = { updated: [...verified], errors: [], skipped };
      const found = foundOnResume(fresh, verified, plan);
      if (!todo.length) {
        if (opts.extraCommit || found.length)
          await this.store.write((tx) => {
            this.history.record(tx, found);
            opts.extraCommit?.(tx, run);
          });
        return run;
      }
      if (plan.safe) return this.runSafely(fresh, plan, todo, run, { ...opts, history: found });
      const connector = await this.children.connector();
      const creds = await this.children.credentials(fresh);
      let snapshot: SiteSnapshot | null = null;
      let snapshotAt = -1;
      const byType = (t: ItemType) => todo.filter((i) => i.type === t);
      const order: ItemType[] = ['core', 'plugin', 'theme', 'translation'];
      const history: HistoryEntry[] = [...found];
      for (const [n, type] of order.entries()) {
        const items = byType(type);
        if (!items.length) continue;
        const at = new Date().toISOString();
        const t0 = performance.now();
        const r =
          type === 'core'
            ? await this.callCore(connector, creds, fresh, items[0]!)
            : await this.callItems(connector, creds, fresh, type, items);
        // One child call updates the items of a type together: each is recorded with that call's time.
        const took = Math.round(performance.now() - t0);
        history.push(...historyOf(fresh, items, r, { at, duration_ms: took, actor: plan.actor, safe: false, probe: null }));
        run.updated.push(...r.updated);
        run.errors.push(...r.errors);
        if (r.snapshot) {
          snapshot = r.snapshot;
          snapshotAt = n;
        }
        for (const u of r.updated) opts.progress?.({ item: `${u.type} ${u.slug}`, ok: true });
        for (const e of r.errors) opts.progress?.({ item: `${e.type} ${e.slug}`, ok: false });
      }
      const prev = await this.children.siteData(fresh.id);
      await this.store.write((tx) => {
        this.commitSite(tx, fresh, snapshot, snapshotAt, run, todo, prev);
        this.history.record(tx, history);
        opts.extraCommit?.(tx, run);
      });
      return run;
    });
  }

  /**
   * Safe mode on one site (under its lock): a probe first — an unhealthy site is skipped (site_unhealthy) unless the
   * plan insists (force) —, then each item alone, in the order core → plugins → themes → translations, each followed
   * by a probe; an item whose update turned a well site unhealthy is rolled back (safe-updates.ts) and ends in errors
   * (svc_update_rolled_back / svc_rollback_failed) and rolled_back with the evidence. After a rollback the site is
   * synced, so that what is stored is what is on disk. Every item goes to the history with the probes' verdicts.
   */
  private async runSafely(
    site: SiteRecord,
    plan: Plan,
    todo: PendingView[],
    run: SiteRun,
    opts: {
      progress?: (p: { item: string; ok: boolean }) => void;
      extraCommit?: (tx: Tx, r: SiteRun) => void;
      history?: HistoryEntry[];
    },
  ): Promise<SiteRun> {
    run.rolled_back = [];
    const w = where(site);
    const history: HistoryEntry[] = [...(opts.history ?? [])];
    const how = (at: string, t0: number, before: HealthReport, after: HealthReport | null, note = '') => ({
      at,
      duration_ms: Math.round(performance.now() - t0),
      actor: plan.actor,
      safe: true,
      probe: { before: before.status, after: after?.status ?? null, summary: (after ?? before).summary + note },
    });
    const startedAt = new Date().toISOString();
    const t0 = performance.now();
    const before = await this.health.probe(site);
    if (before.status === 'unhealthy' && !plan.force) {
      const message = `Not updated: the site was unhealthy before the update (${before.summary}); pass force: true to update it anyway.`;
      for (const i of todo) {
        run.skipped.push({ ...w, type: i.type, slug: i.slug, reason: 'site_unhealthy', message });
        history.push({
          ...historyOf(site, [i], { updated: [], errors: [] }, how(startedAt, t0, before, null))[0]!,
          to: i.new_version,
          outcome: 'skipped',
          reason: message,
          code: 'svc_site_unhealthy',
        });
        opts.progress?.({ item: `${i.type} ${i.slug}`, ok: false });
      }
      await this.store.write((tx) => {
        this.history.record(tx, history);
        opts.extraCommit?.(tx, run);
      });
      return run;
    }
    const connector = await this.children.connector();
    const creds = await this.children.credentials(site);
    const order: ItemType[] = ['core', 'plugin', 'theme', 'translation'];
    let snapshot: SiteSnapshot | null = null;
    let snapshotAt = -1;
    let current = before;
    let rolledBack = false;
    /** An item whose regression could not be undone: the site's other items are left alone, as for a site unhealthy before. */
    let leftBroken: string | null = null;
    for (const i of [...todo].sort((a, b) => order.indexOf(a.type) - order.indexOf(b.type))) {
      const at = new Date().toISOString();
      const t1 = performance.now();
      if (leftBroken && !plan.force) {
        const message = `Not updated: ${leftBroken}; pass force: true to update it anyway.`;
        run.skipped.push({ ...w, type: i.type, slug: i.slug, reason: 'site_unhealthy', message });
        history.push({
          ...historyOf(site, [i], { updated: [], errors: [] }, how(at, t1, current, null))[0]!,
          to: i.new_version,
          outcome: 'skipped',
          reason: message,
          code: 'svc_site_unhealthy',
        });
        opts.progress?.({ item: `${i.type} ${i.slug}`, ok: false });
        continue;
      }
      const r =
        i.type === 'core' ? await this.callCore(connector, creds, site, i) : await this.callItems(connector, creds, site, i.type, [i]);
      if (r.snapshot) {
        snapshot = r.snapshot;
        snapshotAt = order.indexOf(i.type);
      }
      if (!r.updated.length) {
        run.errors.push(...r.errors);
        history.push(...historyOf(site, [i], r, how(at, t1, current, null)));
        opts.progress?.({ item: `${i.type} ${i.slug}`, ok: false });
        continue;
      }
      const after = await this.health.probe(site);
      if (!isRegression(current.status, after.status)) {
        run.updated.push(...r.updated);
        history.push(...historyOf(site, [i], r, how(at, t1, current, after)));
        current = after;
        opts.progress?.({ item: `${i.type} ${i.slug}`, ok: true });
        continue;
      }
      rolledBack = true;
      const rb = await this.rollbacks.rollback(connector, creds, site, i, current, after);
      run.rolled_back.push(rb.view);
      const code = rb.view.outcome === 'rolled_back' ? 'svc_update_rolled_back' : 'svc_rollback_failed';
      run.errors.push({ ...w, type: i.type, slug: i.slug, code, message: rb.view.reason });
      history.push({
        ...historyOf(site, [i], r, how(at, t1, current, after, rb.after ? `; after the rollback: ${rb.after.summary}` : ''))[0]!,
        outcome: rb.view.outcome,
        reason: rb.view.reason,
        code,
      });
      // Nothing done (core, a translation, no package): the site is as the probe after the update found it.
      current = rb.after ?? after;
      if (rb.view.outcome === 'rollback_failed')
        leftBroken = `${i.name} ${i.new_version} left the site unhealthy and could not be put back (${current.summary})`;
      opts.progress?.({ item: `${i.type} ${i.slug}`, ok: false });
    }
    if (rolledBack) {
      // What is on disk now: the old version reinstalled, or the plugin deactivated.
      try {
        snapshot = await connector.sync(creds);
        snapshotAt = order.length;
      } catch {
        /* keep what the calls reported; the next sync corrects it */
      }
    }
    const prev = await this.children.siteData(site.id);
    await this.store.write((tx) => {
      this.commitSite(tx, site, snapshot, snapshotAt, run, todo, prev);
      this.history.record(tx, history);
      opts.extraCommit?.(tx, run);
    });
    return run;
  }

  /** A job resumed after a crash: the site may have been updated before the crash was recorded. Re-read it first. */
  private async verifyAfterResume(site: SiteRecord, plan: Plan): Promise<UpdatedView[]> {
    const before = (await this.planSite(site, plan)).todo;
    const o = await this.children.fetchSync(site);
    if (!o.ok) return [];
    await this.store.write(o.commit);
    const now = (await this.planSite(this.sites.get(site.id) ?? site, plan)).todo;
    const data = await this.children.siteData(site.id);
    const installed = (i: PendingView): string | null =>
      i.type === 'core'
        ? (this.sites.get(site.id)?.wp_version ?? null)
        : i.type === 'plugin'
          ? (data?.plugins.find((p) => p.slug === i.slug)?.version ?? null)
          : i.type === 'theme'
            ? (data?.themes.find((t) => t.slug === i.slug)?.version ?? null)
            : null;
    return before
      .filter((b) => !now.some((x) => x.type === b.type && x.slug === b.slug && x.language === b.language))
      .flatMap((b): UpdatedView[] => {
        // A language pack has no version on disk to read: no longer offered is what says it was installed, as for a
        // translation call (callItems). Left out, it would be neither redone nor reported: one item lost (the SIGKILL test).
        if (b.type === 'translation')
          return [
            {
              ...where(site),
              type: b.type,
              slug: b.slug,
              name: b.name,
              old_version: null,
              new_version: b.new_version,
              language: b.language ?? '',
            },
          ];
        const v = installed(b);
        return v && b.current_version && isNewer(v, b.current_version)
          ? [{ ...where(site), type: b.type, slug: b.slug, name: b.name, old_version: b.current_version, new_version: v }]
          : [];
      });
  }

  private failed(site: SiteRecord, items: readonly PendingView[], e: unknown): ErrorView[] {
    // A top-level `error` from the child is its refusal of the update (requirements, "Invalid request!", the core lock).
    const err =
      e instanceof ChildError && e.kind === 'child_error'
        ? new ServiceError('svc_update_failed', `${site.url} refused the update: ${e.message.replace(/^ERROR: /, '')}`, 502)
        : childFailure(e, site);
    return items.map((i) => ({ ...where(site), type: i.type, slug: i.slug, code: err.code, message: err.message }));
  }

  private async callItems(
    connector: ChildConnector,
    creds: SiteCredentials,
    site: SiteRecord,
    type: 'plugin' | 'theme' | 'translation',
    items: PendingView[],
  ) {
    const updated: UpdatedView[] = [];
    const errors: ErrorView[] = [];
    let r: UpgradeResult;
    try {
      r = await connector.upgrade(creds, type, [...new Set(items.map((i) => i.slug))]);
    } catch (e) {
      return { updated, errors: this.failed(site, items, e), snapshot: null };
    }
    const w = where(site);
    for (const i of items) {
      const got = r.items[i.slug];
      const fail = (code: string, message: string) => errors.push({ ...w, type: i.type, slug: i.slug, code, message });
      if (!got) {
        fail('svc_update_failed', `${site.url} did not report on ${i.slug}.`);
        continue;
      }
      if (got.error) {
        fail('svc_update_failed', got.error);
        continue;
      }
      if (type === 'translation') {
        const still = r.snapshot?.updates.translations.some((t) => t.slug === i.slug && t.language === i.language);
        if (got.success && !still)
          updated.push({
            ...w,
            type: i.type,
            slug: i.slug,
            name: i.name,
            old_version: null,
            new_version: i.new_version,
            language: i.language ?? '',
          });
        else
          fail(
            got.success ? 'svc_update_not_applied' : 'svc_update_failed',
            got.success
              ? `${site.url} reported the ${i.language} translation of ${i.slug} as updated, but still offers it.`
              : `${site.url} did not install the ${i.language} translation of ${i.slug} (no reason given).`,
          );
        continue;
      }
      // Success is the child's version on disk, newer than what was installed (D2): not its success flag alone.
      if (got.success && got.version && i.current_version && isNewer(got.version, i.current_version)) {
        updated.push({ ...w, type: i.type, slug: i.slug, name: i.name, old_version: i.current_version, new_version: got.version });
      } else if (got.success) {
        fail(
          'svc_update_not_applied',
          `${site.url} reported ${i.slug} as updated, but its version on disk is ${got.version ?? 'unknown'} (was ${i.current_version}, offered ${i.new_version}).`,
        );
      } else {
        fail('svc_update_failed', `${site.url} did not update ${i.slug} (no reason given).`);
      }
    }
    return { updated, errors, snapshot: r.snapshot };
  }

  /** Core: the child reports the offered version, not the one on disk; a sync right after the call tells the truth. */
  private async callCore(connector: ChildConnector, creds: SiteCredentials, site: SiteRecord, item: PendingView) {
    const w = where(site);
    const err = (code: string, message: string) => ({
      updated: [],
      errors: [{ ...w, type: 'core' as const, slug: 'wordpress', code, message }],
      snapshot: null,
    });
    let status: string;
    try {
      const r = await connector.upgradeCore(creds);
      status = r.status;
      if (r.status !== 'SUCCESS') {
        const why =
          {
            WPERROR: 'WordPress could not install the update',
            NORESPONSE: 'WordPress has no core update on offer',
            LOCALIZATION: "no update found for the site's locale",
          }[r.status] ?? 'unexpected answer';
        return err(
          'svc_update_failed',
          `${site.url} did not update WordPress: ${r.status} (${why})${r.error_codes.length ? `: ${r.error_codes.join(', ')}` : ''}.`,
        );
      }
    } catch (e) {
      return { updated: [], errors: this.failed(site, [item], e), snapshot: null };
    }
    let snap: SiteSnapshot;
    try {
      snap = await connector.sync(creds);
    } catch (e) {
      return err(
        'svc_update_unverified',
        `${site.url} answered ${status} but could not be synced to check the version: ${childFailure(e, site).message}`,
      );
    }
    if (item.current_version && isNewer(snap.wp_version, item.current_version)) {
      return {
        updated: [
          {
            ...w,
            type: 'core' as const,
            slug: 'wordpress',
            name: 'WordPress',
            old_version: item.current_version,
            new_version: snap.wp_version,
          },
        ],
        errors: [],
        snapshot: snap,
      };
    }
    return {
      updated: [],
      errors: [
        {
          ...w,
          type: 'core' as const,
          slug: 'wordpress',
          code: 'svc_update_not_applied',
          message: `${site.url} answered ${status}, but WordPress is still ${snap.wp_version}.`,
        },
      ],
      snapshot: snap,
    };
  }

  /**
   * Stores what the child reported: its latest sync block, then the items updated after it, with the stored versions
   * moved on. A failed item whose offer vanished from the child's data stays pending (D17: unknown is not done).
   */
  private commitSite(
    tx: Tx,
    site: SiteRecord,
    snapshot: SiteSnapshot | null,
    snapshotAt: number,
    run: SiteRun,
    todo: PendingView[],
    prev: SiteData | null,
  ): void {
    if (!tx.get('sites', site.id)) return;
    // `prev`: the stored data as read before this write (a write function cannot read it). The site's update lock
    // keeps this process's runs apart; a sync stored in between is overwritten (child-sites.ts recordSnapshot: why that
    // heals on the next sync).
    const data = snapshot ? this.children.storeSnapshot(tx, site.id, snapshot, prev).data : prev;
    if (!data) return;
    const order: Record<ItemType, number> = { core: 0, plugin: 1, theme: 2, translation: 3 };
    const p = storedPending(data);
    const next: SitePending = { core: p.core, plugins: [...p.plugins], themes: [...p.themes], translations: [...p.translations] };
    let plugins = data.plugins;
    let themes = data.themes;
    let wp: string | undefined;
    for (const u of run.updated) {
      if (order[u.type] <= snapshotAt) continue; // the sync block already shows it
      if (u.type === 'core') {
        next.core = null;
        wp = u.new_version;
      }
      if (u.type === 'plugin') {
        next.plugins = next.plugins.filter((i) => i.slug !== u.slug);
        plugins = plugins.map((i) => (i.slug === u.slug ? { ...i, version: u.new_version, update_version: null } : i));
      }
      if (u.type === 'theme') {
        next.themes = next.themes.filter((i) => i.slug !== u.slug);
        themes = themes.map((i) => (i.slug === u.slug ? { ...i, version: u.new_version, update_version: null } : i));
      }
      if (u.type === 'translation') next.translations = next.translations.filter((i) => !(i.slug === u.slug && i.language === u.language));
    }
    for (const e of run.errors) {
      const was = todo.find((i) => i.type === e.type && i.slug === e.slug);
      if (!was) continue;
      const item: PendingItem = {
        slug: was.slug,
        name: was.name,
        current_version: was.current_version,
        new_version: was.new_version,
        ...(was.language !== undefined ? { language: was.language } : {}),
      };
      if (was.type === 'core' && !next.core && was.current_version)
        next.core = { current_version: was.current_version, new_version: was.new_version };
      const key = ({ plugin: 'plugins', theme: 'themes', translation: 'translations' } as const)[was.type as 'plugin'];
      if (key && !next[key].some((i) => i.slug === was.slug && i.language === was.language)) next[key] = [...next[key], item];
    }
    tx.putBlob('site-data', site.id, { ...data, plugins, themes, updates: next });
    const cur = tx.get<SiteRecord>('sites', site.id)!;
    this.sites.patch(tx, site.id, {
      ...(wp ? { wp_version: wp } : {}),
      stats: {
        ...cur.stats,
        plugin_updates: next.plugins.length,
        theme_updates: next.themes.length,
        wp_update_available: next.core !== null,
      },
    });
  }

  // ---- jobs ----

  /**
   * One site's pending updates of these types and the ignored ones (skipped as "ignored"); `refresh` syncs the site
   * first (409 when it is suspended or disconnected).
   */
  async ofSite(
    ref: number | string,
    types: readonly TypeName[],
    refresh: boolean,
  ): Promise<{ site: SiteRecord; updates: PendingView[]; ignored: SkippedView[] }> {
    let site = this.sites.resolve(ref);
    if (refresh) {
      this.children.assertReachable(site);
      site = await this.children.apply(await this.children.fetchSync(site));
    }
    const updates = await this.pending(site, types);
    const plan = await this.planSite(site, { types });
    return { site, updates, ignored: plan.skipped.filter((s) => s.reason === 'ignored') };
  }

  /** Ignores (or unignores) each distinct slug in turn; how many rules really changed. */
  async setIgnoredMany(site: SiteRecord, type: IgnoreRecord['type'], slugs: readonly string[], ignore: boolean): Promise<number> {
    let n = 0;
    for (const slug of new Set(slugs)) if (await this.setIgnored(site, type, slug, ignore)) n++;
    return n;
  }

  /**
   * WordPress core on one site: 404 svc_no_updates when its last sync offered none (not even an ignored one), else
   * the run of runOne; a failed core update fails the call (504 on a child timeout, else 502).
   */
  async runCore(call: Call, ref: number | string, dryRun: boolean, mode: Pick<Plan, 'safe' | 'force'> = {}): Promise<RunAnswer> {
    const site = this.sites.resolve(ref);
    const plan: Plan = { types: ['core'], ...mode };
    const p = await this.planSite(site, plan);
    if (!p.todo.length && !p.skipped.length)
      throw new ServiceError('svc_no_updates', 'No core updates available for this site (as of its last sync).', 404, { site_id: site.id });
    const r = await this.runOne(call, site.id, plan, dryRun);
    const failure = r.errors[0];
    if (failure)
      throw new ServiceError(failure.code, failure.message, failure.code === 'svc_child_timeout' ? 504 : 502, { site_id: site.id });
    return r;
  }

  /** One site: dry run, or the run (409 when the site is suspended, disconnected or already updating). */
  async runOne(call: Call, ref: number | string, plan: Plan, dryRun: boolean): Promise<RunAnswer> {
    const site = this.sites.resolve(ref);
    this.children.assertReachable(site);
    if (dryRun) {
      const p = await this.planSite(site, plan);
      return {
        dry_run: true,
        would_update: p.todo,
        updated: [],
        errors: [],
        skipped: p.skipped,
        summary: { total_updated: 0, total_errors: 0, total_skipped: p.skipped.length },
      };
    }
    const total = (await this.planSite(site, plan)).todo.length;
    const tick = itemProgress(total, call.progress);
    const r = await this.runSite(site, { ...plan, actor: plan.actor ?? actorOf(call.principal) }, { progress: (p) => tick(p, site) });
    return {
      updated: r.updated,
      errors: r.errors,
      skipped: r.skipped,
      ...(r.rolled_back ? { rolled_back: r.rolled_back } : {}),
      summary: runSummary(r),
      safe: plan.safe === true,
    };
  }

  /**
   * Many sites: dry run (the exact list), a job when more sites than `queueOver` have something to update (only those
   * sites are queued), else every site in turn, one child call per type, with per-item progress and cancellation.
   */
  async runMany(call: Call, sel: Selector, asked: Plan, dryRun: boolean, queueOver: number): Promise<RunAnswer> {
    const plan: Plan = { ...asked, actor: asked.actor ?? actorOf(call.principal) };
    const { sites, errors } = this.select(sel);
    const plans = await this.planSites(sites, plan);
    const skipped: SkippedView[] = plans.flatMap((p) => p.skipped);
    const work = plans.filter((p) => p.todo.length);
    const todo = work.flatMap((p) => p.todo);
    const truncated = todo.length > MAX_LISTED || skipped.length > MAX_LISTED;
    const empty = {
      updated: [],
      skipped: cap(skipped),
      errors,
      ...(truncated ? { truncated } : {}),
      summary: { total_updated: 0, total_errors: errors.length, total_skipped: skipped.length, sites_updated: 0 },
    };
    // Counts first: a preview shown to a person may be cut after some thousands of characters.
    if (dryRun) {
      const { summary: sum, ...rest } = empty;
      return {
        dry_run: true,
        would_update_total: todo.length,
        sites_to_update: work.length,
        summary: sum,
        ...rest,
        would_update: cap(todo),
      };
    }
    const queued = await this.jobs.queueIfOver(
      'update',
      work.map((p) => p.site),
      plan as unknown as Record<string, unknown>,
      queueOver,
    );
    if (queued)
      return {
        ...queued,
        updates_queued: work.reduce((n, p) => n + p.todo.length, 0),
        sites_queued: work.length,
        ...empty,
        safe: plan.safe === true,
      };
    const tick = itemProgress(
      work.reduce((n, p) => n + p.todo.length, 0),
      call.progress,
    );
    const { results, notDone } = await eachSite(
      { config: { ...this.config, childConcurrency: this.siteConcurrency(plan) }, signal: call.signal },
      work.map((p) => p.site),
      'update',
      (site) => this.runSite(site, plan, { progress: (p) => tick(p, site) }),
    );
    // Sites that run re-plan under their lock and report their own skipped items; the others' are reported from here.
    const run: SiteRun = {
      updated: [] as UpdatedView[],
      errors: [...errors],
      skipped: plans.filter((p) => !p.todo.length).flatMap((p) => p.skipped),
      ...(plan.safe ? { rolled_back: [] } : {}),
    };
    for (const r of results) {
      if (r.ok) {
        run.updated.push(...r.value.updated);
        run.errors.push(...r.value.errors);
        run.skipped.push(...r.value.skipped);
        if (r.value.rolled_back) run.rolled_back?.push(...r.value.rolled_back);
        continue;
      }
      // A site-level failure (locked, no keys): one error per item it was to update.
      const todo: PendingView[] = work.find((p) => p.site.id === r.site.id)?.todo ?? [];
      for (const t of todo)
        run.errors.push({
          site_id: t.site_id,
          site_url: t.site_url,
          site_name: t.site_name,
          type: t.type,
          slug: t.slug,
          code: r.error.code,
          message: r.error.message,
        });
    }
    for (const s of notDone) {
      for (const t of work.find((p) => p.site.id === s.id)?.todo ?? []) {
        run.skipped.push({
          site_id: t.site_id,
          site_url: t.site_url,
          site_name: t.site_name,
          type: t.type,
          slug: t.slug,
          reason: 'cancelled',
          message: 'Not started: the run was cancelled.',
        });
      }
    }
    return {
      ...run,
      skipped: cap(run.skipped),
      ...(run.skipped.length > MAX_LISTED ? { truncated: true } : {}),
      summary: runSummary(run, true),
      ...(notDone.length ? { not_processed: notDone.map((s) => s.id) } : {}),
      safe: plan.safe === true,
    };
  }

  /** The job step: one site of an update job, recorded with its items in the same write as its data; a resumed job re-reads first. */
  async jobStep(site: SiteRecord, job: JobRecord): Promise<Outcome<unknown>> {
    if (itemsOfSite(this.store, job, site.id).length) return { ok: true, commit: () => null }; // recorded before a crash
    const plan = job.params as unknown as Plan;
    // A job claimed before (its process died or stopped) may have updated this site without recording it: every site
    // it has not recorded is re-read from its child first. (No per-site "started" write: resuming is rare, the extra
    // write on every site of every job is not.)
    const resumed = job.attempts > 1;
    const record = (tx: Tx, r: SiteRun) => {
      const cur = tx.get<JobRecord>('jobs', job.id);
      if (!cur) return;
      const rows = [
        ...r.updated.map((u) => ({ ...u, status: 'updated' })),
        ...r.errors.map((e) => ({
          ...e,
          status: e.code === 'svc_update_rolled_back' ? 'rolled_back' : e.code === 'svc_rollback_failed' ? 'rollback_failed' : 'failed',
        })),
        ...r.skipped.map((s) => ({ ...s, status: 'skipped' })),
      ];
      // A site with nothing to report still gets a row: it is how a resumed job knows the site was done.
      addItems(tx, cur, site.id, rows.length ? rows : [{ ...where(site), type: 'site', slug: '', status: 'nothing_pending' }]);
    };
    const r = await this.runSite(site, plan, { wait: true, resumed, extraCommit: record });
    if (r.errors.length) {
      return {
        ok: false,
        error: new ServiceError(
          'svc_update_failed',
          `${r.errors.length} update(s) failed on ${site.url}: ${r.errors
            .map((e) => `${e.slug}: ${e.message}`)
            .join('; ')
            .slice(0, 500)}`,
          502,
        ),
      };
    }
    return { ok: true, commit: () => r };
  }
}

const TYPE_NAME: Record<ItemType, TypeName> = { core: 'core', plugin: 'plugins', theme: 'themes', translation: 'translations' };

/**
 * The history entries of items a resumed job found already updated: the process that updated them stopped before
 * recording anything, so this is their only entry (no child call of this run, no probe of it).
 */
function foundOnResume(site: SiteRecord, verified: readonly UpdatedView[], plan: Plan): HistoryEntry[] {
  const at = new Date().toISOString();
  return verified.map((u) => ({
    site_id: site.id,
    site_url: site.url,
    type: u.type,
    slug: u.slug,
    name: u.language ? `${u.name} (${u.language})` : u.name,
    from: u.old_version,
    to: u.new_version,
    outcome: 'updated' as const,
    reason: 'Found updated when the interrupted job resumed: the process that applied it stopped before recording it.',
    code: '',
    actor: plan.actor ?? actorOf(undefined),
    at,
    duration_ms: 0,
    safe: plan.safe === true,
    probe: null,
  }));
}

/** The history entries of one child call's items: each planned item ends updated or failed. */
function historyOf(
  site: SiteRecord,
  items: readonly PendingView[],
  r: { updated: UpdatedView[]; errors: ErrorView[] },
  how: Pick<HistoryEntry, 'at' | 'duration_ms' | 'safe' | 'probe'> & { actor?: UpdateActor },
): HistoryEntry[] {
  const same = (a: { type: string; slug: string; language?: string }, b: PendingView) =>
    a.type === b.type && a.slug === b.slug && (a.language ?? '') === (b.language ?? '');
  return items.map((i) => {
    const u = r.updated.find((x) => same(x, i));
    const e = u ? undefined : r.errors.find((x) => x.type === i.type && x.slug === i.slug);
    return {
      site_id: site.id,
      site_url: site.url,
      type: i.type,
      slug: i.slug,
      name: i.language ? `${i.name} (${i.language})` : i.name,
      from: i.current_version,
      to: u?.new_version ?? i.new_version,
      outcome: u ? 'updated' : 'failed',
      reason: u ? '' : (e?.message ?? 'The child did not report on it.'),
      code: u ? '' : (e?.code ?? 'svc_update_failed'),
      actor: how.actor ?? actorOf(undefined),
      at: how.at,
      duration_ms: how.duration_ms,
      safe: how.safe,
      probe: how.probe,
    };
  });
}

/** Per-item progress over a whole run: `done` of `total` items, for MCP progress notifications. */
export function itemProgress(total: number, report?: (p: ProgressReport) => void | Promise<void>) {
  let done = 0;
  return (p: { item: string; ok: boolean }, site: SiteRecord) => {
    done++;
    void report?.({ done, total, message: `${site.url} ${p.item}: ${p.ok ? 'ok' : 'failed'}` });
  };
}
