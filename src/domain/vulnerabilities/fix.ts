// The one-call fix: every site running a vulnerable version gets the update it offers when that update leaves every
// record it is hit by (a fixed version), through the update service's own apply path (updates.ts runOne: the same
// per-site lock, child calls, safe mode with its probes and rollback, history and stored result as run-updates-v1).
// Answers per site.
import type { CallContext } from '../../core/ability.js';
import type { SiteRecord } from '../../store/records.js';
import type { SiteService } from '../sites.js';
import type { UpdateService, UpdatedView, ErrorView, SkippedView, TypeName } from '../updates.js';
import type { RollbackView } from '../safe-updates.js';
import type { Hit } from './matching.js';
import type { VulnerabilityService } from './service.js';

export type NotFixedReason = 'no_fix_known' | 'no_update_offered' | 'offered_update_not_fixed';

export interface FixItem {
  type: Hit['type'];
  slug: string;
  item: string;
  version: string;
  /** The version the fix installs (the update the site offers), and the records it fixes. */
  to: string;
  records: string[];
}
export interface NotFixed {
  type: Hit['type'];
  slug: string;
  item: string;
  version: string;
  records: string[];
  reason: NotFixedReason;
  fixed_in: string | null;
  update_version: string | null;
}
export interface SiteFix {
  site_id: number;
  site_url: string;
  site_name: string;
  planned: FixItem[];
  not_fixable: NotFixed[];
  updated: UpdatedView[];
  errors: ErrorView[];
  skipped: SkippedView[];
  /** Safe mode: items whose update broke the site and were rolled back (they stay vulnerable). */
  rolled_back?: RollbackView[];
}

export interface FixQuery {
  sites?: ReadonlyArray<number | string>;
  /** Only these records (feed ids, CVE ids or keys). */
  vulnerabilities?: readonly string[];
  /** Only items with this feed slug or sitefleet item id. */
  slug?: string;
  dry_run: boolean;
  /** Safe mode (probe, one item at a time, roll back a regression) and whether to update a site unhealthy before. */
  safe: boolean;
  force: boolean;
}

type Call = Pick<CallContext, 'signal' | 'progress' | 'principal'>;

const TYPE_OF: Record<Hit['type'], TypeName> = { core: 'core', plugin: 'plugins', theme: 'themes' };

/** What to update on one site: per item, the offered update when it clears every record the item is hit by. */
export function planFix(hits: readonly Hit[]): { planned: FixItem[]; not_fixable: NotFixed[] } {
  const byItem = new Map<string, Hit[]>();
  for (const h of hits) {
    const k = `${h.type}:${h.ref}`;
    byItem.set(k, [...(byItem.get(k) ?? []), h]);
  }
  const planned: FixItem[] = [];
  const not_fixable: NotFixed[] = [];
  for (const list of byItem.values()) {
    const h = list[0]!;
    const records = list.map((x) => x.key);
    const base = { type: h.type, slug: h.slug, item: h.ref, version: h.version, records };
    if (list.every((x) => x.offered_clears)) planned.push({ ...base, to: h.offered! });
    else {
      const stuck = list.find((x) => !x.offered_clears)!;
      not_fixable.push({
        ...base,
        reason: stuck.fixed_in === null ? 'no_fix_known' : stuck.offered === null ? 'no_update_offered' : 'offered_update_not_fixed',
        fixed_in: stuck.fixed_in,
        update_version: stuck.offered,
      });
    }
  }
  return { planned, not_fixable };
}

export async function fixVulnerabilities(
  call: Call,
  vulns: VulnerabilityService,
  sites: SiteService,
  updates: UpdateService,
  q: FixQuery,
): Promise<{
  dry_run: boolean;
  sites: SiteFix[];
  summary: { sites: number; planned: number; updated: number; errors: number; not_fixable: number };
}> {
  const only = q.sites?.length ? new Set(q.sites.map((s) => sites.resolve(s).id)) : null;
  const wanted = q.vulnerabilities?.length ? new Set(q.vulnerabilities) : null;
  const by = await vulns.hitsBySite(!q.dry_run);
  let chosen: Set<string> | null = null;
  if (wanted) {
    const records = await vulns.recordsByKey([...by.values()].flatMap((l) => l.map((h) => h.key)));
    chosen = new Set(
      [...records.values()]
        .filter((r) => wanted.has(r.key) || wanted.has(r.source_id) || r.aliases.some((a) => wanted.has(a)))
        .map((r) => r.key),
    );
  }
  const keysWanted = (h: Hit) => !chosen || chosen.has(h.key);
  const out: SiteFix[] = [];
  for (const [id, all] of [...by].sort((a, b) => a[0] - b[0])) {
    if (only && !only.has(id)) continue;
    const hits = all.filter((h) => keysWanted(h) && (!q.slug || h.slug === q.slug || h.ref === q.slug));
    if (!hits.length) continue;
    const site = sites.get(id) as SiteRecord;
    const { planned, not_fixable } = planFix(hits);
    const fix: SiteFix = {
      site_id: id,
      site_url: site.url,
      site_name: site.name,
      planned,
      not_fixable,
      updated: [],
      errors: [],
      skipped: [],
    };
    out.push(fix);
    if (q.dry_run || !planned.length) continue;
    if (call.signal?.aborted) {
      fix.errors.push({
        site_id: id,
        site_url: site.url,
        site_name: site.name,
        type: 'site',
        slug: '',
        code: 'svc_cancelled',
        message: 'Not started: the call was cancelled.',
      });
      continue;
    }
    try {
      const types = [...new Set(planned.map((p) => TYPE_OF[p.type]))];
      const r = await updates.runOne(call, id, { types, only: planned.map((p) => p.item), safe: q.safe, force: q.force }, false);
      fix.updated = r.updated;
      fix.errors = r.errors;
      fix.skipped = r.skipped;
      if (r.rolled_back) fix.rolled_back = r.rolled_back;
    } catch (e) {
      const err = e as { code?: string; message: string };
      fix.errors.push({
        site_id: id,
        site_url: site.url,
        site_name: site.name,
        type: 'site',
        slug: '',
        code: err.code ?? 'svc_internal_error',
        message: err.message,
      });
    }
  }
  if (!q.dry_run) await vulns.reconcile();
  return {
    dry_run: q.dry_run,
    sites: out,
    summary: {
      sites: out.length,
      planned: out.reduce((n, s) => n + s.planned.length, 0),
      updated: out.reduce((n, s) => n + s.updated.length, 0),
      errors: out.reduce((n, s) => n + s.errors.length, 0),
      not_fixable: out.reduce((n, s) => n + s.not_fixable.length, 0),
    },
  };
}
