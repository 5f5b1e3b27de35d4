// Fleet-wide security issues: which sites reported hardening issues at their last sync, the most severe first.
// Served from an in-memory index, so that a request never reads every site's file: keyed on the sites collection's
// version, only sites whose last sync or record changed are read again (the first request reads each file once).
import { SiteAccess } from './access.js';
import type { SecurityFinding } from '../child/snapshot.js';
import type { SiteData, SiteRecord } from '../store/records.js';
import { paginate } from '../core/paging.js';
import type { Store } from '../store/store.js';
import type { ChildSiteService } from './child-sites.js';

export interface SiteSecurity {
  site_id: number;
  site_url: string;
  site_name: string;
  high: number;
  medium: number;
  low: number;
  issues: SecurityFinding[];
}

interface Entry {
  stamp: string;
  value: SiteSecurity | null;
}

const stampOf = (s: SiteRecord) => `${s.last_sync}|${s.updated_at}|${s.url}|${s.name}`;

/** Most high issues first, then medium, then low; then by site id. */
const worstFirst = (a: SiteSecurity, b: SiteSecurity) => b.high - a.high || b.medium - a.medium || b.low - a.low || a.site_id - b.site_id;

class SecurityIndex {
  private version = -1;
  private sites = new Map<number, Entry>();
  private sorted: SiteSecurity[] = [];

  constructor(
    private readonly store: Store,
    private readonly read: (id: number) => SiteData | null,
  ) {}

  private entry(site: SiteRecord): Entry {
    const issues = this.read(site.id)?.security ?? [];
    if (!issues.length) return { stamp: stampOf(site), value: null };
    const count = (sev: SecurityFinding['severity']) => issues.filter((i) => i.severity === sev).length;
    return {
      stamp: stampOf(site),
      value: {
        site_id: site.id,
        site_url: site.url,
        site_name: site.name,
        high: count('high'),
        medium: count('medium'),
        low: count('low'),
        issues,
      },
    };
  }

  list(): SiteSecurity[] {
    const v = this.store.version('sites');
    if (v !== this.version) {
      const next = new Map<number, Entry>();
      for (const site of this.store.all<SiteRecord>('sites')) {
        const cur = this.sites.get(site.id);
        next.set(site.id, cur && cur.stamp === stampOf(site) ? cur : this.entry(site));
      }
      this.sites = next;
      this.sorted = [...next.values()].flatMap((e) => (e.value ? [e.value] : [])).sort(worstFirst);
      this.version = v;
    }
    return this.sorted;
  }
}

/** The fleet's security issues, from an index this instance keeps (one per process and store). */
export class FleetSecurityService {
  private readonly index: SecurityIndex;
  /** The index is the fleet's; each call sees the sites of its scope (domain/access.ts). */
  private readonly access: SiteAccess;

  constructor(store: Store, children: ChildSiteService) {
    this.index = new SecurityIndex(store, (id) => children.siteData(id));
    this.access = new SiteAccess(store);
  }

  /** Sites with at least one issue of `minSeverity` or worse, worst first. */
  sitesWithIssues(minSeverity: SecurityFinding['severity'] = 'low'): SiteSecurity[] {
    const visible = this.access.visible();
    const all = visible ? this.index.list().filter((s) => visible.has(s.site_id)) : this.index.list();
    if (minSeverity === 'high') return all.filter((s) => s.high > 0);
    if (minSeverity === 'medium') return all.filter((s) => s.high + s.medium > 0);
    return all;
  }

  /** One page of sitesWithIssues, and how many there are. */
  page(minSeverity: SecurityFinding['severity'], page: number, perPage: number): { items: SiteSecurity[]; total: number } {
    const all = this.sitesWithIssues(minSeverity);
    return { items: paginate(all, page, perPage), total: all.length };
  }
}
