// Fleet-wide security issues: which sites reported hardening issues at their last sync, the most severe first.
// Served from an in-memory index of what is derived (site-data-index.ts), so that a request never reads every site's
// data: only sites whose last sync or record changed are read again, in batches (the first request reads each once).
import { SiteAccess } from './access.js';
import type { SecurityFinding } from '../child/snapshot.js';
import type { SiteData, SiteRecord } from '../store/records.js';
import { intern, internValue } from '../core/intern.js';
import { paginate } from '../core/paging.js';
import { SiteDataIndex, type SiteDataScan } from './site-data-index.js';

export interface SiteSecurity {
  site_id: number;
  site_url: string;
  site_name: string;
  high: number;
  medium: number;
  low: number;
  issues: SecurityFinding[];
}

const stampOf = (s: SiteRecord) => `${s.last_sync}|${s.updated_at}|${s.url}|${s.name}`;

/** Most high issues first, then medium, then low; then by site id. */
const worstFirst = (a: SiteSecurity, b: SiteSecurity) => b.high - a.high || b.medium - a.medium || b.low - a.low || a.site_id - b.site_id;

function entry(site: SiteRecord, data: SiteData | null): SiteSecurity | null {
  const issues = data?.security ?? [];
  if (!issues.length) return null;
  const count = (sev: SecurityFinding['severity']) => issues.filter((i) => i.severity === sev).length;
  return {
    site_id: site.id,
    site_url: site.url,
    site_name: site.name,
    high: count('high'),
    medium: count('medium'),
    low: count('low'),
    issues: pooledList(issues.map(pooled)),
  };
}

/** The key of a finding `pooled` makes: its three fields (a finding with other fields is not pooled). */
const keyOf = (i: SecurityFinding) => `finding:${i.type}\u0000${i.severity}\u0000${i.message}`;
const isPlain = (i: SecurityFinding) => Object.keys(i).length === 3 && 'type' in i && 'severity' in i && 'message' in i;

/** A site's findings, pooled as a list when each finding is: many sites report the very same ones. */
function pooledList(list: SecurityFinding[]): SecurityFinding[] {
  if (!list.every(isPlain)) return list;
  return internValue(`findings:${list.map(keyOf).join('\u0001')}`, () => list) as SecurityFinding[];
}

/**
 * A finding pooled (core/intern.ts): the same few findings repeat on thousands of sites, so each is kept once, frozen.
 * One with other fields than these three (none is stored today) is kept as it is, never cut down.
 */
function pooled(i: SecurityFinding): SecurityFinding {
  if (!isPlain(i)) return i;
  return internValue(keyOf(i), () => ({
    type: intern(i.type),
    severity: intern(i.severity) as SecurityFinding['severity'],
    message: intern(i.message),
  }));
}

class SecurityIndex {
  private readonly index: SiteDataIndex<SiteSecurity | null>;
  private sortedAt = -1;
  private sorted: SiteSecurity[] = [];

  constructor(scan: SiteDataScan) {
    this.index = new SiteDataIndex(scan, stampOf, entry);
  }

  async list(): Promise<SiteSecurity[]> {
    await this.index.refresh();
    if (this.sortedAt !== this.index.contents) {
      this.sorted = [...this.index.values()].flatMap((e) => (e ? [e] : [])).sort(worstFirst);
      this.sortedAt = this.index.contents;
    }
    return this.sorted;
  }
}

/** The fleet's security issues, from an index this instance keeps (one per process and store). */
export class FleetSecurityService {
  private readonly index: SecurityIndex;
  /** The index is the fleet's; each call sees the sites of its scope (domain/access.ts). */
  private readonly access: SiteAccess;

  constructor(scan: SiteDataScan, access: SiteAccess) {
    this.index = new SecurityIndex(scan);
    this.access = access;
  }

  /** Sites with at least one issue of `minSeverity` or worse, worst first. */
  async sitesWithIssues(minSeverity: SecurityFinding['severity'] = 'low'): Promise<SiteSecurity[]> {
    const fleet = await this.index.list();
    const visible = this.access.visible();
    const all = visible ? fleet.filter((s) => visible.has(s.site_id)) : fleet;
    if (minSeverity === 'high') return all.filter((s) => s.high > 0);
    if (minSeverity === 'medium') return all.filter((s) => s.high + s.medium > 0);
    return all;
  }

  /** One page of sitesWithIssues, and how many there are. */
  async page(minSeverity: SecurityFinding['severity'], page: number, perPage: number): Promise<{ items: SiteSecurity[]; total: number }> {
    const all = await this.sitesWithIssues(minSeverity);
    return { items: paginate(all, page, perPage), total: all.length };
  }
}
