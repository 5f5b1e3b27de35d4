// Version comparison for vulnerability matching: wordfence-cli's rules (PHP version_compare ordering) except that a
// missing component counts as the number 0, so 1.5 == 1.5.0 (reference vulnerability-feeds.md §7). One comparator
// for every feed.

/** Tier of a part: unknown words < dev < alpha/a < beta/b < RC/rc < number < pl/p. */
const WORD_TIER: Record<string, number> = { dev: 2, alpha: 3, a: 3, beta: 4, b: 4, RC: 5, rc: 5, pl: 7, p: 7 };
const NUMBER_TIER = 6;

/** A version as found in a Version: header or a feed: trimmed, a leading v/V dropped (it would rank it lower). */
export function cleanVersion(raw: string): string {
  return raw.trim().replace(/^[vV](?=\d)/, '');
}

/** A part of a version, typed once: its tier and, for numbers, its value (digits kept for numbers past 2^53). */
export interface Part {
  tier: number;
  n: number;
  digits: string;
  text: string;
}
const ZERO: Part = { tier: NUMBER_TIER, n: 0, digits: '0', text: '0' };

/** Parsed versions, kept for the fleet's repeats (a fleet has few distinct versions); emptied when it reaches the bound. */
const PARTS_CACHE_MAX = 100_000;
const partsCache = new Map<string, Part[]>();

/** A version parsed once for repeated comparisons (compareParsed). */
export function partsOf(raw: string): Part[] {
  let parts = partsCache.get(raw);
  if (!parts) {
    if (partsCache.size >= PARTS_CACHE_MAX) partsCache.clear();
    parts = versionParts(raw).map((p) => {
      if (!/^\d+$/.test(p)) return { tier: WORD_TIER[p] ?? 1, n: 0, digits: '', text: p };
      const digits = p.replace(/^0+(?=\d)/, '');
      return { tier: NUMBER_TIER, n: digits.length <= 15 ? Number(digits) : NaN, digits, text: p };
    });
    partsCache.set(raw, parts);
  }
  return parts;
}

/** The parts of a version: `-` `_` `+` are separators, and every run of letters becomes a part of its own. */
export function versionParts(raw: string): string[] {
  return cleanVersion(raw)
    .replace(/[-_+]/g, '.')
    .replace(/([^\d.]+)/g, '.$1.')
    .replace(/\.{2,}/g, '.')
    .replace(/^\.|\.$/g, '')
    .split('.')
    .filter((p) => p !== '');
}

/** Numbers of any length, compared as numbers (no float rounding). */
function compareDigits(x: string, y: string): number {
  if (x.length !== y.length) return x.length < y.length ? -1 : 1;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** -1, 0 or 1: a older than, equal to or newer than b. */
export function compareVersions(a: string, b: string): number {
  return compareParsed(partsOf(a), partsOf(b));
}

/** compareVersions on versions parsed by partsOf. */
export function compareParsed(pa: readonly Part[], pb: readonly Part[]): number {
  const n = pa.length > pb.length ? pa.length : pb.length;
  for (let i = 0; i < n; i++) {
    const x = pa[i] ?? ZERO;
    const y = pb[i] ?? ZERO;
    if (x.text === y.text) continue;
    if (x.tier !== y.tier) return x.tier < y.tier ? -1 : 1;
    if (x.tier === NUMBER_TIER) {
      const c = Number.isNaN(x.n) || Number.isNaN(y.n) ? compareDigits(x.digits, y.digits) : x.n - y.n;
      if (c) return c < 0 ? -1 : 1;
    }
    // Two words of the same tier are equal.
  }
  return 0;
}
