// One collator for every name-ordered list: localeCompare with options builds a collator per call,
// which made sorting a few thousand tags cost ~100 ms.
const collator = new Intl.Collator('en', { sensitivity: 'base' });

/** Order by name (case- and accent-insensitive), then by id. */
export function byName<T extends { id: number }>(name: (x: T) => string) {
  return (a: T, b: T): number => collator.compare(name(a), name(b)) || a.id - b.id;
}
