// Matching installed items against the feed: which feed slug an installed plugin, theme or core is, an index of the
// records by type:slug (wordfence-cli's `type → slug → ranges`), and the fixed-in version of a hit.
import type { SiteData } from '../../store/records.js';
import { cleanVersion, compareVersionKeys, compareVersions, parseVersion, type ParsedVersion } from './version.js';
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
  return within(parseVersion(version), [boundOf(r)]);
}

/** A range with its bounds parsed once (null: open). */
interface Bound {
  from: ParsedVersion | null;
  fromInclusive: boolean;
  to: ParsedVersion | null;
  toInclusive: boolean;
}
const boundOf = (r: VersionRange): Bound => ({
  from: r.from === null ? null : parseVersion(r.from),
  fromInclusive: r.from_inclusive,
  to: r.to === null ? null : parseVersion(r.to),
  toInclusive: r.to_inclusive,
});

/** Whether a parsed version lies in any of the parsed ranges. */
function within(v: ParsedVersion, bounds: readonly Bound[]): boolean {
  for (const b of bounds) {
    if (b.from !== null) {
      const c = compareVersionKeys(v, b.from);
      if (c < 0 || (c === 0 && !b.fromInclusive)) continue;
    }
    if (b.to !== null) {
      const c = compareVersionKeys(v, b.to);
      if (c > 0 || (c === 0 && !b.toInclusive)) continue;
    }
    return true;
  }
  return false;
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

/** An entry with its range bounds and patched versions parsed once, for matching. */
interface Compiled {
  key: string;
  informational: boolean;
  /** Another entry of the same slug belongs to the same record (a hit is then checked against the earlier ones). */
  shared: boolean;
  bounds: Bound[];
  /** The patched versions that no range covers, oldest first (a fix is the oldest one above the installed version). */
  fixes: Array<{ v: ParsedVersion; text: string }>;
}

/**
 * Every range of one slug's entries in one flat table, so that testing a version against a slug reads one block of
 * memory instead of an object per range: per range, the entry's index, the flags, then the lower and the upper
 * bound's keys padded with zeros to TABLE_PARTS (a missing part is 0, so padding keeps the order). A slug with a bound
 * of more parts, or with a number too long for a key, keeps no table and is matched range by range.
 */
const TABLE_PARTS = 5;
const STRIDE = 2 + 2 * TABLE_PARTS;
const HAS_FROM = 1;
const FROM_INCLUSIVE = 2;
const HAS_TO = 4;
const TO_INCLUSIVE = 8;

interface Slot {
  list: Compiled[];
  /** Built on the first match after an entry was added; null: this slug is matched range by range. */
  table: Float64Array | null | undefined;
}

function tableOf(list: readonly Compiled[]): Float64Array | null {
  let rows = 0;
  for (const c of list)
    for (const b of c.bounds) {
      for (const v of [b.from, b.to]) if (v !== null && (v.key === null || v.key.length > TABLE_PARTS)) return null;
      rows++;
    }
  const t = new Float64Array(rows * STRIDE);
  let off = 0;
  list.forEach((c, i) => {
    for (const b of c.bounds) {
      t[off] = i;
      t[off + 1] =
        (b.from ? HAS_FROM : 0) | (b.fromInclusive ? FROM_INCLUSIVE : 0) | (b.to ? HAS_TO : 0) | (b.toInclusive ? TO_INCLUSIVE : 0);
      if (b.from) t.set(b.from.key!, off + 2);
      if (b.to) t.set(b.to.key!, off + 2 + TABLE_PARTS);
      off += STRIDE;
    }
  });
  return t;
}

/** The installed version, padded like the tables' bounds (one buffer, reused: matching is synchronous). */
const padded = new Float64Array(TABLE_PARTS);

/** -1, 0 or 1: `padded` against the bound at t[off…]. */
function compareAt(t: Float64Array, off: number): number {
  for (let i = 0; i < TABLE_PARTS; i++) {
    const x = padded[i]!;
    const y = t[off + i]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/**
 * The records by type, then slug (no key string built per lookup). Exact, case-sensitive slugs, as the feeds and
 * wordfence-cli use them. Each entry is compiled once when added; matching an item parses its version once (cached
 * across the fleet), scans its slug's table and builds a hit only for the entries it lies in.
 */
export class FeedIndex {
  private readonly bySlug = new Map<string, IndexEntry[]>();
  private readonly compiled = new Map<string, Map<string, Slot>>();
  size = 0;

  add(r: VulnRecord, bucket: number): void {
    this.size++;
    for (const s of r.software) this.addEntry(`${s.type}:${s.slug}`, toEntry(r, s, bucket));
  }

  addEntry(typeSlug: string, e: IndexEntry): void {
    const list = this.bySlug.get(typeSlug);
    if (list) list.push(e);
    else this.bySlug.set(typeSlug, [e]);
    const bounds = e.ranges.map(boundOf);
    const fixes = e.patched
      ? e.patched_versions
          .map((text) => ({ v: parseVersion(text), text }))
          .filter((p) => !within(p.v, bounds))
          .sort((a, b) => compareVersionKeys(a.v, b.v))
      : [];
    const colon = typeSlug.indexOf(':');
    const type = typeSlug.slice(0, colon);
    const slug = typeSlug.slice(colon + 1);
    let bySlug = this.compiled.get(type);
    if (!bySlug) this.compiled.set(type, (bySlug = new Map()));
    const c: Compiled = { key: e.key, informational: e.informational, shared: false, bounds, fixes };
    const slot = bySlug.get(slug);
    if (slot) {
      for (const o of slot.list) if (o.key === e.key) o.shared = c.shared = true;
      slot.list.push(c);
      slot.table = undefined;
    } else bySlug.set(slug, { list: [c], table: undefined });
  }

  entries(): IterableIterator<[string, IndexEntry[]]> {
    return this.bySlug.entries();
  }

  /** Every record the item's installed version lies in (any range). */
  match(item: InstalledItem): Hit[] {
    const slot = this.compiled.get(item.type)?.get(item.slug);
    if (!slot) return [];
    const version = cleanVersion(item.version);
    if (!version) return [];
    const v = parseVersion(version);
    if (slot.table === undefined) slot.table = tableOf(slot.list);
    const t = slot.table;
    const hits: Hit[] = [];
    if (t !== null && v.key !== null && v.key.length <= TABLE_PARTS) {
      padded.fill(0);
      padded.set(v.key);
      let last = -1;
      for (let off = 0; off < t.length; off += STRIDE) {
        const i = t[off]!;
        if (i === last) continue;
        const flags = t[off + 1]!;
        if (flags & HAS_FROM) {
          const c = compareAt(t, off + 2);
          if (c < 0 || (c === 0 && !(flags & FROM_INCLUSIVE))) continue;
        }
        if (flags & HAS_TO) {
          const c = compareAt(t, off + 2 + TABLE_PARTS);
          if (c > 0 || (c === 0 && !(flags & TO_INCLUSIVE))) continue;
        }
        last = i;
        addHit(item, v, slot.list[i]!, hits);
      }
    } else for (const c of slot.list) if (within(v, c.bounds)) addHit(item, v, c, hits);
    return hits;
  }
}

/** Adds the hit of an item on an entry it lies in, unless an earlier hit is of the same record. */
function addHit(item: InstalledItem, v: ParsedVersion, c: Compiled, hits: Hit[]): void {
  if (c.shared && hits.some((h) => h.key === c.key)) return;
  let fixed: string | null = null;
  for (const f of c.fixes)
    if (compareVersionKeys(f.v, v) > 0) {
      fixed = f.text;
      break;
    }
  // The offered version, parsed on the item's first hit (the parse is cached by its text).
  const offered = item.offered === null ? '' : cleanVersion(item.offered);
  let clears = false;
  if (offered) {
    const o = parseVersion(offered);
    clears = compareVersionKeys(o, v) > 0 && !within(o, c.bounds);
  }
  hits.push({
    key: c.key,
    type: item.type,
    slug: item.slug,
    ref: item.ref,
    name: item.name,
    version: item.version,
    fixed_in: fixed,
    informational: c.informational,
    offered: item.offered,
    offered_clears: clears,
  });
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
