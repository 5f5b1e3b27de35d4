// Version comparison for vulnerability matching: wordfence-cli's rules (PHP version_compare ordering) except that a
// missing component counts as the number 0, so 1.5 == 1.5.0 (reference vulnerability-feeds.md §7). One comparator
// for every feed.

/** Tier of a part: unknown words < dev < alpha/a < beta/b < RC/rc < number < pl/p. */
const WORD_TIER: Record<string, number> = { dev: 2, alpha: 3, a: 3, beta: 4, b: 4, RC: 5, rc: 5, pl: 7, p: 7 };
const NUMBER_TIER = 6;

/** A version as found in a Version: header or a feed: trimmed, a leading v/V dropped (it would rank it lower). */
export function cleanVersion(raw: string): string {
  // The common case (starts with a digit, no trailing space) is already clean: no regex, no new string.
  const first = raw.charCodeAt(0);
  if (first >= 48 && first <= 57 && raw.charCodeAt(raw.length - 1) > 32) return raw;
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

/**
 * A version parsed once: its parts, and the same order as one number per part (`key`) for the comparisons that
 * matching repeats millions of times. Words map below every number by tier (unknown -5, dev -4, alpha -3, beta -2,
 * RC -1), numbers are themselves, pl is +Infinity; a missing part is 0 as in compareParsed. A number over 15 digits
 * has no exact double: such a version has no key and is compared by its parts.
 */
export interface ParsedVersion {
  parts: Part[];
  key: Float64Array | null;
}

/** Parsed versions, kept for the fleet's repeats (a fleet has few distinct versions); emptied when it reaches the bound. */
const PARSED_CACHE_MAX = 100_000;
const parsedCache = new Map<string, ParsedVersion>();

/** A version parsed (and encoded) once for repeated comparisons (compareVersionKeys). */
export function parseVersion(raw: string): ParsedVersion {
  let p = parsedCache.get(raw);
  if (!p) {
    if (parsedCache.size >= PARSED_CACHE_MAX) parsedCache.clear();
    const parts = versionParts(raw).map((t): Part => {
      if (!/^\d+$/.test(t)) return { tier: WORD_TIER[t] ?? 1, n: 0, digits: '', text: t };
      const digits = t.replace(/^0+(?=\d)/, '');
      return { tier: NUMBER_TIER, n: digits.length <= 15 ? Number(digits) : NaN, digits, text: t };
    });
    let key: Float64Array | null = new Float64Array(parts.length);
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      if (part.tier !== NUMBER_TIER) key[i] = part.tier > NUMBER_TIER ? Infinity : part.tier - NUMBER_TIER;
      else if (Number.isNaN(part.n)) {
        key = null;
        break;
      } else key[i] = part.n;
    }
    p = { parts, key };
    parsedCache.set(raw, p);
  }
  return p;
}

/** A version parsed once for repeated comparisons (compareParsed). */
export function partsOf(raw: string): Part[] {
  return parseVersion(raw).parts;
}

/** compareVersions on parsed versions: by their keys (no allocation), by their parts when one has no key. */
export function compareVersionKeys(a: ParsedVersion, b: ParsedVersion): number {
  const ka = a.key;
  const kb = b.key;
  if (ka === null || kb === null) return compareParsed(a.parts, b.parts);
  const n = ka.length > kb.length ? ka.length : kb.length;
  for (let i = 0; i < n; i++) {
    const x = i < ka.length ? ka[i]! : 0;
    const y = i < kb.length ? kb[i]! : 0;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
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
  return compareVersionKeys(parseVersion(a), parseVersion(b));
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
