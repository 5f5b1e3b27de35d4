// Fleet-wide security issues: which sites reported hardening issues at their last sync, the most severe first.
// Served from an in-memory index of what is derived (site-data-index.ts), so that a request never reads every site's
// data: only sites whose last sync or record changed are read again, in batches (the first request reads each once).
import { SiteAccess } from './access.js';
import type { SecurityFinding } from '../child/snapshot.js';
import type { SiteData, SiteRecord } from '../store/records.js';
import { intern, internValue } from '../core/intern.js';
import { paginate } from '../core/paging.js';
import { type Entry, SiteDataIndex, type SiteDataScan } from './site-data-index.js';

export interface SiteSecurity {
  site_id: number;
  site_url: string;
  site_name: string;
  high: number;
  medium: number;
  low: number;
  issues: SecurityFinding[];
}

/**
 * What a site's findings come to: its counts by severity and the findings, the index's value for the site. Pooled by
 * the findings (internValue): the sites that report the same findings share one, so the index keeps no object of its
 * own per site besides its entry; an answer's SiteSecurity objects are made for the sites it shows only.
 */
interface Findings {
  readonly high: number;
  readonly medium: number;
  readonly low: number;
  readonly issues: readonly SecurityFinding[];
}

// The value does not depend on the record: an entry whose data derives the same value follows the record (Entry).
const stampOf = (s: SiteRecord) => `${s.last_sync}|${s.updated_at}`;

/** Most high issues first, then medium, then low; then by site id. */
const worstFirst = (a: Entry<Findings>, b: Entry<Findings>) =>
  b.value.high - a.value.high || b.value.medium - a.value.medium || b.value.low - a.value.low || a.site.id - b.site.id;

function entry(_site: SiteRecord, data: SiteData | null): Findings | null {
  const stored = data?.security ?? [];
  if (!stored.length) return null;
  const issues = stored.map(pooled);
  const make = (): Findings => {
    const count = (sev: SecurityFinding['severity']) => issues.filter((i) => i.severity === sev).length;
    return { high: count('high'), medium: count('medium'), low: count('low'), issues: Object.freeze(issues) };
  };
  // A list with a finding that is not plain is kept as it is, never cut down (see pooled).
  return issues.every(isPlain) ? internValue(`findings:${issues.map(keyOf).join('\u0001')}`, make) : make();
}

/** What sitesWithIssues holds of a site, as answers show it. */
const view = ({ site, value }: Entry<Findings>): SiteSecurity => ({
  site_id: site.id,
  site_url: site.url,
  site_name: site.name,
  high: value.high,
  medium: value.medium,
  low: value.low,
  issues: value.issues as SecurityFinding[],
});

/** The key of a finding `pooled` makes: its three fields (a finding with other fields is not pooled). */
const keyOf = (i: SecurityFinding) => `finding:${i.type}\u0000${i.severity}\u0000${i.message}`;
const isPlain = (i: SecurityFinding) => Object.keys(i).length === 3 && 'type' in i && 'severity' in i && 'message' in i;

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
  private readonly index: SiteDataIndex<Findings | null>;
  private sortedAt = -1;
  private sorted: Array<Entry<Findings>> = [];

  constructor(scan: SiteDataScan) {
    this.index = new SiteDataIndex(scan, stampOf, entry);
  }

  /** The sites with findings, worst first: the index's entries themselves (each follows its site's record). */
  async list(): Promise<ReadonlyArray<Entry<Findings>>> {
    await this.index.refresh();
    if (this.sortedAt !== this.index.contents) {
      const sorted: Array<Entry<Findings>> = [];
      for (const e of this.index.allEntries()) if (e.value) sorted.push(e as Entry<Findings>);
      this.sorted = sorted.sort(worstFirst);
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

  /** The entries of the sites in scope with at least one issue of `minSeverity` or worse, worst first. */
  private async matching(minSeverity: SecurityFinding['severity']): Promise<ReadonlyArray<Entry<Findings>>> {
    const fleet = await this.index.list();
    const visible = this.access.visible();
    const severe = (f: Findings) => (minSeverity === 'high' ? f.high > 0 : minSeverity === 'medium' ? f.high + f.medium > 0 : true);
    if (!visible && minSeverity === 'low') return fleet;
    return fleet.filter((e) => (!visible || visible.has(e.site.id)) && severe(e.value));
  }

  /** Sites with at least one issue of `minSeverity` or worse, worst first. */
  async sitesWithIssues(minSeverity: SecurityFinding['severity'] = 'low'): Promise<SiteSecurity[]> {
    return (await this.matching(minSeverity)).map(view);
  }

  /** One page of sitesWithIssues, and how many there are: only the page's sites are made into answers. */
  async page(minSeverity: SecurityFinding['severity'], page: number, perPage: number): Promise<{ items: SiteSecurity[]; total: number }> {
    const all = await this.matching(minSeverity);
    return { items: paginate(all, page, perPage).map(view), total: all.length };
  }
}
