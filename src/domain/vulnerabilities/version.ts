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

const tierOf = (p: string) => (/^\d+$/.test(p) ? NUMBER_TIER : (WORD_TIER[p] ?? 1));

/** Numbers of any length, compared as numbers (no float rounding). */
function compareDigits(a: string, b: string): number {
  const x = a.replace(/^0+(?=\d)/, '');
  const y = b.replace(/^0+(?=\d)/, '');
  if (x.length !== y.length) return x.length < y.length ? -1 : 1;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** -1, 0 or 1: a older than, equal to or newer than b. */
export function compareVersions(a: string, b: string): number {
  const pa = versionParts(a);
  const pb = versionParts(b);
  const n = Math.max(pa.length, pb.length);
  for (let i = 0; i < n; i++) {
    const x = pa[i] ?? '0';
    const y = pb[i] ?? '0';
    if (x === y) continue;
    const tx = tierOf(x);
    const ty = tierOf(y);
    if (tx !== ty) return tx < ty ? -1 : 1;
    if (tx === NUMBER_TIER) {
      const c = compareDigits(x, y);
      if (c) return c;
    }
    // Two words of the same tier are equal.
  }
  return 0;
}
