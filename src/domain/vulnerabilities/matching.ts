// Matching installed items against the feed: which feed slug an installed plugin, theme or core is, an index of the
// records by type:slug (wordfence-cli's `type → slug → ranges`), and the fixed-in version of a hit.
import type { SiteData } from '../../store/records.js';
import { cleanVersion, compareParsed, compareVersions, partsOf, type Part } from './version.js';
import type { SoftwareType, VersionRange, VulnRecord } from './records.js';

/** An installed item as the feeds name it. `ref` is sitefleet's own identifier (the plugin file, the stylesheet). */
export interface InstalledItem {
  type: SoftwareType;
  slug: string;
  ref: string;
  name: string;
  version: string;
  /** The update the site offers for it (as of its last sync), if any. */
  offered: string | null;
}

/**
 * The feed slug of a plugin file: the first path segment (`akismet/akismet.php` → `akismet`); a single-file plugin
 * is its file name without `.php` (`hello.php` → `hello`), as wordfence-cli does.
 */
export function pluginSlug(file: string): string {
  const i = file.indexOf('/');
  return i > 0 ? file.slice(0, i) : file.replace(/\.php$/i, '');
}

/** Every item of a site the feeds can name: core (`wordpress`), regular plugins (not must-use), themes. */
export function installedItems(wpVersion: string, data: SiteData | null): InstalledItem[] {
  const out: InstalledItem[] = [];
  const core = data?.updates?.core ?? null;
  if (wpVersion.trim())
    out.push({
      type: 'core',
      slug: 'wordpress',
      ref: 'wordpress',
      name: 'WordPress',
      version: wpVersion,
      offered: core?.new_version ?? null,
    });
  const pending = (list: readonly { slug: string; new_version: string }[] | undefined, slug: string) =>
    list?.find((p) => p.slug === slug)?.new_version ?? null;
  for (const p of data?.plugins ?? []) {
    if (p.must_use || !p.version.trim()) continue;
    out.push({
      type: 'plugin',
      slug: pluginSlug(p.slug),
      ref: p.slug,
      name: p.name || p.slug,
      version: p.version,
      offered: p.update_version ?? pending(data?.updates?.plugins, p.slug),
    });
  }
  for (const t of data?.themes ?? []) {
    if (!t.version.trim()) continue;
    out.push({
      type: 'theme',
      slug: t.slug,
      ref: t.slug,
      name: t.name || t.slug,
      version: t.version,
      offered: t.update_version ?? pending(data?.updates?.themes, t.slug),
    });
  }
  return out;
}

export function inRange(version: string, r: VersionRange): boolean {
  return inRangeParsed(partsOf(version), r);
}

/** A range's bounds parsed once (the index keeps its ranges for as long as the feed is live). */
const parsedBounds = new WeakMap<VersionRange, { from: Part[] | null; to: Part[] | null }>();
function boundsOf(r: VersionRange) {
  let b = parsedBounds.get(r);
  if (!b) {
    b = { from: r.from === null ? null : partsOf(r.from), to: r.to === null ? null : partsOf(r.to) };
    parsedBounds.set(r, b);
  }
  return b;
}

function inRangeParsed(v: readonly Part[], r: VersionRange): boolean {
  const b = boundsOf(r);
  if (b.from !== null) {
    const c = compareParsed(v, b.from);
    if (c < 0 || (c === 0 && !r.from_inclusive)) return false;
  }
  if (b.to !== null) {
    const c = compareParsed(v, b.to);
    if (c > 0 || (c === 0 && !r.to_inclusive)) return false;
  }
  return true;
}

/** The compact form of a record's software entry that the index keeps in memory (no texts). */
export interface IndexEntry {
  /** The record's key and where its full text is stored (the bucket number). */
  key: string;
  bucket: number;
  informational: boolean;
  score: number | null;
  ranges: VersionRange[];
  patched: boolean;
  patched_versions: string[];
}

/**
 * The lowest patched version above the installed one that no range covers (per branch: a record fixed on several
 * branches lists one per branch); null when none is known.
 */
export function fixedIn(version: string, e: Pick<IndexEntry, 'ranges' | 'patched' | 'patched_versions'>): string | null {
  if (!e.patched) return null;
  let best: string | null = null;
  for (const p of e.patched_versions) {
    if (compareVersions(p, version) <= 0 || e.ranges.some((r) => inRange(p, r))) continue;
    if (best === null || compareVersions(p, best) < 0) best = p;
  }
  return best;
}

/** A hit: an installed item inside a record's ranges. */
export interface Hit {
  key: string;
  type: SoftwareType;
  slug: string;
  ref: string;
  name: string;
  version: string;
  fixed_in: string | null;
  informational: boolean;
  /** The update the site offers, and whether installing it leaves the record (it is outside every range). */
  offered: string | null;
  offered_clears: boolean;
}

/** The records by `type:slug`. Exact, case-sensitive slugs, as the feeds and wordfence-cli use them. */
/** Whether a parsed version lies in any of the parsed ranges. */
function within(v: readonly Part[], bounds: Compiled['bounds']): boolean {
  for (const b of bounds) {
    if (b.from !== null) {
      const c = compareParsed(v, b.from);
      if (c < 0 || (c === 0 && !b.r.from_inclusive)) continue;
    }
    if (b.to !== null) {
      const c = compareParsed(v, b.to);
      if (c > 0 || (c === 0 && !b.r.to_inclusive)) continue;
    }
    return true;
  }
  return false;
}

/** An entry with its range bounds parsed once, for matching. */
interface Compiled {
  e: IndexEntry;
  bounds: Array<{ from: Part[] | null; to: Part[] | null; r: VersionRange }>;
}

export class FeedIndex {
  private readonly bySlug = new Map<string, IndexEntry[]>();
  private readonly compiled = new Map<string, Compiled[]>();
  size = 0;

  add(r: VulnRecord, bucket: number): void {
    this.size++;
    for (const s of r.software) this.addEntry(`${s.type}:${s.slug}`, toEntry(r, s, bucket));
  }

  addEntry(typeSlug: string, e: IndexEntry): void {
    const list = this.bySlug.get(typeSlug);
    if (list) list.push(e);
    else this.bySlug.set(typeSlug, [e]);
    const c: Compiled = {
      e,
      bounds: e.ranges.map((r) => ({ from: r.from === null ? null : partsOf(r.from), to: r.to === null ? null : partsOf(r.to), r })),
    };
    const cl = this.compiled.get(typeSlug);
    if (cl) cl.push(c);
    else this.compiled.set(typeSlug, [c]);
  }

  entries(): IterableIterator<[string, IndexEntry[]]> {
    return this.bySlug.entries();
  }

  /** Every record the item's installed version lies in (any range). */
  match(item: InstalledItem): Hit[] {
    const list = this.compiled.get(`${item.type}:${item.slug}`);
    if (!list) return [];
    const version = cleanVersion(item.version);
    if (!version) return [];
    const v = partsOf(version);
    const hits: Hit[] = [];
    let offered: Part[] | null | undefined;
    for (const { e, bounds } of list) {
      if (!within(v, bounds) || hits.some((h) => h.key === e.key)) continue;
      if (offered === undefined) offered = item.offered?.trim() ? partsOf(cleanVersion(item.offered)) : null;
      let fixed: string | null = null;
      let best: Part[] | null = null;
      if (e.patched)
        for (const p of e.patched_versions) {
          const pp = partsOf(p);
          if (compareParsed(pp, v) <= 0 || within(pp, bounds)) continue;
          if (best === null || compareParsed(pp, best) < 0) [best, fixed] = [pp, p];
        }
      hits.push({
        key: e.key,
        type: item.type,
        slug: item.slug,
        ref: item.ref,
        name: item.name,
        version: item.version,
        fixed_in: fixed,
        informational: e.informational,
        offered: item.offered,
        offered_clears: offered !== null && compareParsed(offered, v) > 0 && !within(offered, bounds),
      });
    }
    return hits;
  }
}

export function toEntry(r: VulnRecord, s: VulnRecord['software'][number], bucket: number): IndexEntry {
  return {
    key: r.key,
    bucket,
    informational: r.informational,
    score: r.cvss?.score ?? null,
    ranges: s.ranges,
    patched: s.patched,
    patched_versions: s.patched_versions,
  };
}
