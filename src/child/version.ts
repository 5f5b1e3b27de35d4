// src/child/version.ts — PHP version_compare()-style ordering of dotted versions (child and dashboard gates, §11).

/** True when `version` ≥ `minimum`, comparing dotted numeric parts ("6.1.2" ≥ "5.3"). */
export function versionAtLeast(version: string, minimum: string): boolean {
  const a = version.split('.').map((n) => parseInt(n, 10) || 0);
  const b = minimum.split('.').map((n) => parseInt(n, 10) || 0);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  }
  return true;
}
