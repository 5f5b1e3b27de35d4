// One copy of each string that many records repeat (plugin slugs and names, versions, security messages): a string
// parsed from JSON is a copy of its own, so an index that keeps an item per plugin per site keeps as many copies as
// the fleet has sites (at 10,000 sites, a third of the live heap was such repeats). Bounded: at most INTERN_MAX strings
// of at most INTERN_MAX_LENGTH characters are pooled; when the pool is full it starts again (what was shared stays so).

/** Strings the pool holds at most (about 3 MB of them at 60 characters each). */
export const INTERN_MAX = 50_000;
/** A longer string is not pooled: it is unlikely to repeat, and would make the pool's bound one of memory no more. */
export const INTERN_MAX_LENGTH = 200;

let pool = new Map<string, string>();

/** The pooled copy of `s` (the first one seen), or `s` itself. */
export function intern(s: string): string {
  if (s.length > INTERN_MAX_LENGTH) return s;
  const hit = pool.get(s);
  if (hit !== undefined) return hit;
  if (pool.size >= INTERN_MAX) pool = new Map();
  pool.set(s, s);
  return s;
}

/** How many strings the pool holds now (tests). */
export function internedCount(): number {
  return pool.size;
}

/** Values (records, lists) the value pool holds at most. */
export const INTERN_VALUES_MAX = 10_000;
/** A value whose key is longer is not pooled (with the pool's bound: what bounds the pool's keys). */
export const INTERN_KEY_MAX_LENGTH = 1_000;

/**
 * One frozen copy of each value many records repeat as it is, by a key that says what it holds; at most `max` of them
 * (when full, it starts again: what was shared stays so).
 */
export class ValuePool {
  private values = new Map<string, object>();
  constructor(private readonly max: number) {}

  /** The value first made for `key`, or `make()` frozen when the key is too long to pool. */
  get<T extends object>(key: string, make: () => T): T {
    if (key.length > INTERN_KEY_MAX_LENGTH) return Object.freeze(make());
    const hit = this.values.get(key);
    if (hit !== undefined) return hit as T;
    if (this.values.size >= this.max) this.values = new Map();
    const value = Object.freeze(make());
    this.values.set(key, value);
    return value;
  }

  /** How many values it holds now (tests). */
  get size(): number {
    return this.values.size;
  }
}

const values = new ValuePool(INTERN_VALUES_MAX);

/** One frozen copy of a value many records repeat as it is (a security finding, the list of a site's findings). */
export function internValue<T extends object>(key: string, make: () => T): T {
  return values.get(key, make);
}

/** How many values the value pool holds now (tests). */
export function internedValueCount(): number {
  return values.size;
}

/** A number for each pooled value (never reused, a pool starting again included): what keyOfPooled's keys are made of. */
const numbers = new WeakMap<object, number>();
let nextNumber = 0;

/**
 * A key for a list of pooled values (a ValuePool's or internValue's), made of their numbers: two lists have the same
 * key exactly when they hold the same values in the same order. What pools a whole list by its members.
 */
export function keyOfPooled(list: readonly object[]): string {
  let key = '';
  for (const v of list) {
    let n = numbers.get(v);
    if (n === undefined) numbers.set(v, (n = nextNumber++));
    key += `${n},`;
  }
  return key;
}
