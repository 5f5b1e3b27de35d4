// What an assistant pays for on every conversation: the tools/list. The registry's JSON Schemas (schemas/, the
// abilities door) are complete; the MCP tool list carries the same inputs made compact — no description repeated
// inside a property that already has one, none for the parameters the server's instructions explain once, no
// second names of a field (upstream's aliases, still accepted),
// `type: [a, "null"]` instead of anyOf for nullable and simple unions, no length limits, patterns or
// additionalProperties (the server checks them and names the field) — and descriptions without their "Errors:" list
// (each error comes back in the result with its code and message).
import type { JsonSchema } from '../core/input.js';

type Node = Record<string, unknown>;

const DROP = new Set(['maxLength', 'minLength', 'maxItems', '$schema', 'pattern', 'format', 'propertyNames']);
/** Parameters many tools share, explained once in the server's instructions rather than in every tool. */
export const SHARED_PARAMS = new Set([
  'site_id_or_domain',
  'site_ids_or_domains',
  'client_id_or_email',
  'page',
  'per_page',
  'confirm',
  'dry_run',
  'websites',
  'groups',
  'clients',
  'include',
  'exclude',
  'safe',
  'force',
]);

/** Keywords that constrain only values of one type, so branches of different types can share a node. */
const TYPE_KEYS: Record<string, readonly string[]> = {
  array: ['items', 'minItems', 'maxItems'],
  integer: ['minimum', 'maximum'],
  number: ['minimum', 'maximum'],
  string: ['minLength', 'maxLength', 'pattern', 'format'],
};
const NOTES = new Set(['type', 'description', 'default', 'enum']);

/**
 * anyOf of branches of different single types (nullable, number-or-string, a string or a list) as one node with a
 * type list — when nothing a branch says would then constrain another's values. An enum stays exact: null joins it.
 */
function merged(out: Node): Node | null {
  const branches = out.anyOf;
  if (!Array.isArray(branches) || branches.length < 2) return null;
  const types = branches.map((b) => (b && typeof b === 'object' ? (b as Node).type : undefined));
  if (!types.every((t): t is string => typeof t === 'string') || new Set(types).size !== types.length) return null;
  const enums = (branches as Node[]).filter((b) => Array.isArray(b.enum));
  if (enums.length && !(branches as Node[]).every((b) => Array.isArray(b.enum) || (Object.keys(b).length === 1 && b.type === 'null')))
    return null;
  const { anyOf: _drop, ...rest } = out;
  const node: Node = {};
  for (const b of branches as Node[]) {
    for (const [k, v] of Object.entries(b)) {
      if (k === 'type' || k === 'enum') continue;
      if (!NOTES.has(k) && !TYPE_KEYS[b.type as string]?.includes(k)) return null;
      node[k] ??= v;
    }
  }
  if (enums.length) node.enum = [...enums.flatMap((b) => b.enum as unknown[]), ...(types.includes('null') ? [null] : [])];
  return { ...node, ...rest, type: types };
}

function compact(node: unknown, parentDescribed = false): unknown {
  if (Array.isArray(node)) return node.map((x) => compact(x, parentDescribed));
  if (!node || typeof node !== 'object') return node;
  const n = node as Node;
  const out: Node = {};
  const described = typeof n.description === 'string';
  for (const [k, v] of Object.entries(n)) {
    if (DROP.has(k)) continue;
    // additionalProperties: false is the server's to enforce; a schema there (a record's values) is kept.
    if (k === 'additionalProperties' && v === false) continue;
    if (k === 'description' && parentDescribed) continue;
    // Bounds that say nothing to a reader: ids start at 1, counts at 0, and limits in the millions.
    if (
      (k === 'maximum' || k === 'minimum') &&
      typeof v === 'number' &&
      (Math.abs(v) >= 1_000_000 || (k === 'minimum' && (v === 0 || v === 1)))
    )
      continue;
    if (k === 'default' && (v === '' || v === false)) continue; // says nothing an absent value does not
    if (k === 'additionalProperties' && v && typeof v === 'object') {
      out[k] = compact(v, described || parentDescribed);
    } else if (k === 'properties' && v && typeof v === 'object') {
      // Another name for a listed field (upstream's, see abilities/schemas.ts alias()) is accepted, not listed.
      const listed = Object.entries(v as Node).filter(([, s]) => !(s && typeof s === 'object' && 'x-alias-of' in s));
      out[k] = Object.fromEntries(listed.map(([p, s]) => [p, SHARED_PARAMS.has(p) ? shared(p, compact(s, true)) : compact(s)]));
    } else if (k === 'anyOf' || k === 'items') {
      out[k] = compact(v, described || parentDescribed);
    } else out[k] = v;
  }
  return merged(out) ?? out;
}

/** A shared parameter: the instructions give its meaning, limits and defaults (per_page at most 100, page from 1). */
function shared(name: string, node: unknown): unknown {
  if (!node || typeof node !== 'object' || Array.isArray(node)) return node;
  const { maximum: _limit, ...rest } = node as Node;
  if (name === 'page' && rest.default === 1) delete rest.default;
  return rest;
}

/** An ability's input schema as the MCP tool list shows it. */
export function compactInputSchema(schema: JsonSchema): JsonSchema {
  return compact(schema) as JsonSchema;
}

/**
 * An ability's description without its trailing "Errors: …" list, nor "Administrators only." (the tool list shows an
 * administrator-only tool to administrators only: see server.ts visible()).
 */
export function toolDescription(description: string): string {
  const i = description.search(/\s*Errors?: /);
  return (i > 0 ? description.slice(0, i).trim() : description).replace(/ ?Administrators only\.(?= |$)/, '');
}
