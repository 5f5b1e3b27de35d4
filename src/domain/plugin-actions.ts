// Plugin and theme actions on a child site (activate, deactivate, delete; theme activate and delete). The
// child is the authority: every requested slug is sent, and the outcome of each is read from the sync block
// the child sends back, which is stored at once (so every door sees the new state without a full sync).
// Unknown slugs, the active theme and refusals are per-item errors; only a site-level failure fails the call.
import { z } from 'zod';
import type { PluginAction, ThemeAction } from '../child/connector.js';
import type { SitePlugin, SiteSnapshot, SiteTheme } from '../child/snapshot.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { ItemError } from '../core/results.js';
import type { SiteData, SiteRecord } from '../store/records.js';
import type { Store, Tx } from '../store/store.js';
import { childFailure, type ChildSiteService } from './child-sites.js';
import { activeTheme, type ItemKind, type SiteDataService } from './site-data.js';
import type { SiteService } from './sites.js';

/** A per-slug failure; `identifier` is the slug as given (the shape of every batch's errors[]). */
export const SlugError = ItemError.extend({ slug: z.string() });
export type SlugError = z.infer<typeof SlugError>;

const WORD = { plugins: 'Plugin', themes: 'Theme' } as const;
const FAILED = { activate: 'svc_activation_failed', deactivate: 'svc_deactivation_failed', delete: 'svc_deletion_failed' } as const;

function slugError(slug: string, code: string, message: string, status: number): SlugError {
  return { identifier: slug, slug, code, message, status };
}

const notInstalled = (kind: ItemKind, slug: string, site: SiteRecord, asOf?: string) =>
  slugError(
    slug,
    kind === 'plugins' ? 'svc_plugin_not_found' : 'svc_theme_not_found',
    `${WORD[kind]} "${slug}" is not installed on ${site.url}${asOf ? ` (as of the last sync, ${asOf})` : ''}.`,
    404,
  );

/** Distinct slugs; one the wire cannot carry ("||" joins slugs) is an error of its own. */
function splitSlugs(slugs: readonly string[]): { valid: string[]; errors: SlugError[] } {
  const valid: string[] = [];
  const errors: SlugError[] = [];
  for (const raw of slugs) {
    const slug = raw.trim();
    if (!slug || slug.includes('||')) errors.push(slugError(raw, 'svc_invalid_slug', `"${raw}" is not a plugin or theme slug.`, 400));
    else if (!valid.includes(slug)) valid.push(slug);
  }
  return { valid, errors };
}

/** The lists after an action when the child sent no sync block: the stored lists with the change applied. */
function applied<T extends SiteTheme>(list: readonly T[], action: PluginAction | ThemeAction, affected: Set<string>, kind: ItemKind): T[] {
  if (action === 'delete') return list.filter((i) => !affected.has(i.slug));
  if (kind === 'themes') return list.map((i) => ({ ...i, active: affected.size ? affected.has(i.slug) : i.active }));
  return list.map((i) => (affected.has(i.slug) ? { ...i, active: action === 'activate' } : i));
}

/**
 * The sync block of a delete reply, without what was deleted: the real child builds it from WordPress's plugin and
 * theme caches, which are not cleared within the request, so it still lists the items it has just removed.
 */
function withoutDeleted(snapshot: SiteSnapshot | null, kind: ItemKind, deleted: Set<string>): SiteSnapshot | null {
  if (!snapshot || !deleted.size) return snapshot;
  return kind === 'plugins'
    ? { ...snapshot, plugins: snapshot.plugins.filter((p) => !deleted.has(p.slug)) }
    : { ...snapshot, themes: snapshot.themes.filter((t) => !deleted.has(t.slug)) };
}

export interface ActionResult<T> {
  done: T[];
  errors: SlugError[];
}

/** A delete as the abilities answer it: the preview of a dry run, or what the child did. */
export type DeleteOutcome =
  | { dry_run: true; site: SiteRecord; items: SiteTheme[]; warnings: string[]; errors: SlugError[] }
  | { dry_run: false; site: SiteRecord; done: SiteTheme[]; errors: SlugError[] };

/** Plugin and theme actions on one child site; what the child reports back is stored at once. */
export class PluginActionService {
  constructor(
    private readonly store: Store,
    private readonly sites: SiteService,
    private readonly children: ChildSiteService,
    private readonly siteData: SiteDataService,
  ) {}

  /**
   * Records what the child reported: its sync block when there is one, else the stored lists with the change
   * applied. A site removed meanwhile is left alone.
   */
  private async commitAfter(site: SiteRecord, kind: ItemKind, snapshot: SiteSnapshot | null, after: SiteTheme[], changed: boolean) {
    // The stored data, read once the child has answered (a write function cannot read a cold blob): a snapshot stored
    // between this read and the write is overwritten by the lists changed here (child-sites.ts recordSnapshot says
    // why that heals on the next sync).
    const prev = snapshot || changed ? await this.children.siteData(site.id) : null;
    return (tx: Tx): void => {
      if (!tx.get('sites', site.id)) return;
      if (snapshot) {
        this.children.recordSnapshot(tx, site.id, snapshot, prev);
        return;
      }
      if (!changed) return;
      const data = prev ?? this.siteData.empty(site);
      const next: SiteData = { ...data, [kind]: after };
      tx.putBlob('site-data', site.id, next);
      const cur = tx.get<SiteRecord>('sites', site.id)!;
      const updates = after.filter((i) => i.update_version).length;
      this.sites.patch(tx, site.id, { stats: { ...cur.stats, [kind === 'plugins' ? 'plugin_updates' : 'theme_updates']: updates } });
    };
  }

  /** Suspended or disconnected sites and sites without keys are refused before any child traffic. */
  private async connect(site: SiteRecord) {
    this.children.assertReachable(site);
    const creds = await this.children.credentials(site);
    return { creds, connector: await this.children.connector() };
  }

  async pluginAction(site: SiteRecord, action: PluginAction, slugs: readonly string[]): Promise<ActionResult<SitePlugin>> {
    const { valid, errors } = splitSlugs(slugs);
    if (!valid.length) return { done: [], errors };
    const { creds, connector } = await this.connect(site);
    const before = (await this.siteData.of(site)).plugins;
    let r: Awaited<ReturnType<typeof connector.pluginAction>>;
    try {
      r = await connector.pluginAction(creds, action, valid);
    } catch (e) {
      throw childFailure(e, site);
    }
    const affected = new Set(r.affected);
    const snapshot = action === 'delete' ? withoutDeleted(r.snapshot, 'plugins', affected) : r.snapshot;
    const after = snapshot?.plugins ?? applied(before, action, affected, 'plugins');
    await this.store.write(await this.commitAfter(site, 'plugins', snapshot, after, affected.size > 0));
    const done: SitePlugin[] = [];
    for (const slug of valid) {
      const now = after.find((p) => p.slug === slug);
      const was = before.find((p) => p.slug === slug);
      // The child answers SUCCESS even for a plugin it could not activate: the sync block says what happened. A delete
      // is listed in plugin_action_data only when WordPress removed the files, so that list is the truth for deletes.
      const ok = affected.has(slug) && (action === 'delete' || now?.active === (action === 'activate'));
      if (ok)
        done.push(
          action === 'delete'
            ? { ...(was ?? { slug, name: slug, version: '', update_version: null, last_updated: null, must_use: false }), active: false }
            : now!,
        );
      else if (!now) errors.push(notInstalled('plugins', slug, site));
      else {
        const self = slug.startsWith('mainwp-child/') ? ' The child plugin never acts on itself.' : '';
        errors.push(slugError(slug, FAILED[action], `${site.url} did not ${action} plugin "${slug}".${self}`, 422));
      }
    }
    return { done, errors };
  }

  async activateTheme(
    site: SiteRecord,
    slug: string,
  ): Promise<{ activated: SiteTheme | null; previous: string | null; errors: SlugError[] }> {
    const { valid, errors } = splitSlugs([slug]);
    const before = (await this.siteData.of(site)).themes;
    if (!valid.length) return { activated: null, previous: activeTheme(before) || null, errors };
    const { creds, connector } = await this.connect(site);
    let r: Awaited<ReturnType<typeof connector.themeAction>>;
    try {
      r = await connector.themeAction(creds, 'activate', valid);
    } catch (e) {
      throw childFailure(e, site);
    }
    const affected = new Set(r.affected);
    const after = r.snapshot?.themes ?? applied(before, 'activate', affected, 'themes');
    await this.store.write(await this.commitAfter(site, 'themes', r.snapshot, after, affected.size > 0));
    const target = valid[0]!;
    const now = after.find((t) => t.slug === target);
    const activated = affected.has(target) && now?.active ? now : null;
    const previous = r.previous ?? (activeTheme(before) || null);
    if (!activated) {
      errors.push(
        now
          ? slugError(target, FAILED.activate, `${site.url} did not activate theme "${target}".`, 422)
          : notInstalled('themes', target, site),
      );
      return { activated: null, previous: activeTheme(after) || previous, errors };
    }
    return { activated, previous, errors };
  }

  async deleteThemes(site: SiteRecord, slugs: readonly string[]): Promise<ActionResult<SiteTheme>> {
    const { valid, errors } = splitSlugs(slugs);
    if (!valid.length) return { done: [], errors };
    const { creds, connector } = await this.connect(site);
    const before = (await this.siteData.of(site)).themes;
    let r: Awaited<ReturnType<typeof connector.themeAction>>;
    try {
      r = await connector.themeAction(creds, 'delete', valid);
    } catch (e) {
      throw childFailure(e, site);
    }
    const affected = new Set(r.affected);
    const refused = new Map(r.refused.map((x) => [x.slug, x.reason]));
    const snapshot = withoutDeleted(r.snapshot, 'themes', affected);
    const after = snapshot?.themes ?? applied(before, 'delete', affected, 'themes');
    await this.store.write(await this.commitAfter(site, 'themes', snapshot, after, affected.size > 0));
    const done: SiteTheme[] = [];
    for (const slug of valid) {
      const now = after.find((t) => t.slug === slug);
      const was = before.find((t) => t.slug === slug);
      if (refused.has(slug)) {
        const parent = /parent/.test(refused.get(slug)!);
        errors.push(
          slugError(
            slug,
            parent ? 'svc_theme_parent_active' : 'svc_theme_active',
            parent
              ? `Theme "${slug}" is the parent of the active theme on ${site.url}; it cannot be deleted.`
              : `Theme "${slug}" is the active theme on ${site.url}; activate another theme before deleting it.`,
            409,
          ),
        );
      } else if (affected.has(slug) && !now) {
        done.push({ ...(was ?? { slug, name: slug, version: '', update_version: null, last_updated: null }), active: false });
      } else if (!now) {
        errors.push(notInstalled('themes', slug, site));
      } else {
        errors.push(slugError(slug, FAILED.delete, `${site.url} did not delete theme "${slug}".`, 422));
      }
    }
    return { done, errors };
  }

  deletePlugins(site: SiteRecord, slugs: readonly string[]): Promise<ActionResult<SitePlugin>> {
    return this.pluginAction(site, 'delete', slugs);
  }

  /**
   * A delete, previewed from the stored lists (no child call): the items that would go, a warning for each
   * active one, and errors for slugs the last sync did not see.
   */
  async deletePreview(
    site: SiteRecord,
    kind: ItemKind,
    slugs: readonly string[],
  ): Promise<{ items: SiteTheme[]; warnings: string[]; errors: SlugError[] }> {
    const { valid, errors } = splitSlugs(slugs);
    const data = await this.siteData.of(site);
    const list: readonly SiteTheme[] = data[kind];
    const items: SiteTheme[] = [];
    const warnings: string[] = [];
    for (const slug of valid) {
      const item = list.find((i) => i.slug === slug);
      if (!item) {
        errors.push(notInstalled(kind, slug, site, data.synced_at || undefined));
        continue;
      }
      items.push(item);
      if (item.active) {
        warnings.push(
          kind === 'plugins'
            ? `Plugin ${slug} is currently active.`
            : `Theme ${slug} is the currently active theme: the child will refuse to delete it.`,
        );
      } else if (kind === 'themes' && (item as SiteTheme).parent_active) {
        warnings.push(`Theme ${slug} is the parent of the active theme: the child will refuse to delete it.`);
      }
    }
    return { items, warnings, errors };
  }

  /**
   * The confirm / dry_run rule around a delete: both flags are refused (abilities check that first, before the site
   * lookup), a suspended or disconnected site is refused, a dry run previews from the stored list, else confirm is
   * required and the site is asked.
   */
  async delete(
    site: SiteRecord,
    kind: ItemKind,
    slugs: readonly string[],
    flags: { confirm?: boolean; dry_run?: boolean },
  ): Promise<DeleteOutcome> {
    refuseBothFlags(flags);
    this.children.assertReachable(site);
    if (flags.dry_run) return { dry_run: true, site, ...(await this.deletePreview(site, kind, slugs)) };
    requireConfirm(flags);
    const r = kind === 'plugins' ? await this.deletePlugins(site, slugs) : await this.deleteThemes(site, slugs);
    return { dry_run: false, site, done: r.done, errors: r.errors };
  }
}
