// Records as callers see them: the spec's site and tag views (abilities reference §2.3, §4).
import type { z } from 'zod';
import type { Services } from '../domain/index.js';
import { siteStatus } from '../domain/sites.js';
import type { SiteRecord } from '../store/records.js';
import type { TagWithSites } from '../domain/tags.js';
import { siteError, type Fanned } from '../domain/selectors.js';
import type { FullSite, ListedSite, Tag } from './schemas.js';

type S = Pick<Services, 'sites' | 'tags'>;

export function listedSite(s: SiteRecord): z.infer<typeof ListedSite> {
  return { id: s.id, url: s.url, name: s.name, status: siteStatus(s), client_id: s.client_id };
}

/** A site's tags, {id, name} each. */
export function siteTags(svc: S, id: number): z.infer<typeof FullSite>['tags'] {
  return svc.tags.tagsOfSite(id).map((t) => ({ id: t, name: svc.tags.nameOf(t)! }));
}

export function fullSite(svc: S, s: SiteRecord, withStats = false): z.infer<typeof FullSite> {
  const v: z.infer<typeof FullSite> = {
    ...listedSite(s),
    admin_username: s.admin_username,
    wp_version: s.wp_version,
    php_version: s.php_version,
    child_version: s.child_version,
    last_sync: s.last_sync,
    notes: s.notes,
    tags: siteTags(svc, s.id),
  };
  if (withStats) v.stats = { ...s.stats };
  return v;
}

export function tagView(svc: S, t: TagWithSites): z.infer<typeof Tag> {
  const sites_ids = t.site_ids.filter((id) => svc.sites.get(id));
  return {
    id: t.id,
    name: t.name,
    color: t.color,
    sites_count: sites_ids.length,
    sites_ids,
    created_at: t.created_at,
    updated_at: t.updated_at,
  };
}

/**
 * A fan-out's answers in upstream's list shape: the items keyed by site URL, their total, and the sites that failed,
 * were skipped or named nothing (posts, pages and WordPress users alike).
 */
export function bySiteUrl<P, T>(r: Fanned<P[]>, item: (site: SiteRecord, p: P) => T) {
  const data: Record<string, T[]> = {};
  let total = 0;
  for (const x of r.results) {
    if (!x.ok) continue;
    data[x.site.url] = x.value.map((p) => item(x.site, p));
    total += x.value.length;
  }
  return {
    data,
    total,
    errors: r.results.filter((x) => !x.ok).map(siteError),
    skipped: r.selection.skipped,
    unknown: r.selection.unknown,
    ...(r.notDone.length ? { not_processed: r.notDone.map((s) => s.id) } : {}),
  };
}
