// One collator for every name-ordered list: localeCompare with options builds a collator per call,
// which made sorting a few thousand tags cost ~100 ms. Numbers in names and domains sort as numbers ("site2" before
// "site10"), as people count, not as text. Made at the first comparison, not at import, nor where a comparator is made
// (the tags' order is made at import): it takes about 8 ms (ICU's data), which every process paid at start.
let collator: Intl.Collator | undefined;

/** Order by name (case- and accent-insensitive, numbers as numbers), then by id. */
export function byName<T extends { id: number }>(name: (x: T) => string) {
  return (a: T, b: T): number =>
    (collator ??= new Intl.Collator('en', { sensitivity: 'base', numeric: true })).compare(name(a), name(b)) || a.id - b.id;
}

/**
 * The first of the places 0 … n - 1 where `before` is false, or n: a binary search over a sorted list, `before(i)`
 * saying that place i comes before what is looked for (true for a run of places, then false to the end).
 */
export function firstPlace(n: number, before: (i: number) => boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Digit runs up to this long compare as numbers in a naturalKey (longer ones: still after every shorter number). */
const DIGITS = 20;

const ZEROS = '0'.repeat(DIGITS);
const isDigit = (c: number) => c >= 48 && c <= 57;

/**
 * A key whose plain (code unit) order is the natural order of `s`: each run of digits, leading zeros dropped, is
 * left-padded to DIGITS so that "site2" < "site10". For large lists sorted often (every site, on each change): ten
 * thousand domains sort in a few milliseconds this way, where the numeric collator takes over 100. A scan, not a
 * replace with a function per run of digits: the fleet's keys at start were 120 ms of a 100,000-site first answer; a
 * string without digits is its own key.
 */
export function naturalKey(s: string): string {
  // Parts joined at the end: a string built by += is a rope of slices, which took 40 MB more at 100,000 sites and was
  // flattened again by each comparison of the sort.
  const out: string[] = [];
  let copied = 0;
  for (let i = 0; i < s.length; i++) {
    if (!isDigit(s.charCodeAt(i))) continue;
    let end = i + 1;
    while (end < s.length && isDigit(s.charCodeAt(end))) end++;
    let first = i;
    while (first < end - 1 && s.charCodeAt(first) === 48) first++; // leading zeros dropped, one digit kept
    const run = end - first;
    out.push(s.slice(copied, i), run < DIGITS ? ZEROS.slice(run) : '', s.slice(first, end));
    copied = end;
    i = end - 1;
  }
  if (copied === 0) return s;
  out.push(s.slice(copied));
  return out.join('');
}
