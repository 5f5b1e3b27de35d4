// What an assistant pays for on every conversation: the tools/list. The registry's JSON Schemas (schemas/, the
// abilities door) are complete; the MCP tool list carries the same inputs made compact — no description repeated
// inside a property that already has one, none for the parameters the server's instructions explain once,
// `type: [a, "null"]` instead of anyOf for nullable and simple unions, no length limits, patterns or
// additionalProperties (the server checks them and names the field) — and descriptions without their "Errors:" list
// (each error comes back in the result with its code and message).
import type { JsonSchema } from '../core/input.js';

type Node = Record<string, unknown>;

const DROP = new Set(['maxLength', 'minLength', 'maxItems', '$schema', 'pattern', 'format', 'propertyNames']);
/** Parameters many tools share, explained once in the server's instructions rather than in every tool. */
export const SHARED_PARAMS = new Set(['site_id_or_domain', 'site_ids_or_domains', 'client_id_or_email', 'page', 'per_page', 'confirm', 'dry_run']);

function simpleType(n: unknown): n is Node & { type: string } {
  return !!n && typeof n === 'object' && typeof (n as Node).type === 'string' && !('properties' in (n as Node)) && !('items' in (n as Node));
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
    if ((k === 'maximum' || k === 'minimum') && typeof v === 'number' && (Math.abs(v) >= 1_000_000 || (k === 'minimum' && (v === 0 || v === 1)))) continue;
    if (k === 'additionalProperties' && v && typeof v === 'object') {
      out[k] = compact(v, described || parentDescribed);
    } else if (k === 'properties' && v && typeof v === 'object') {
      out[k] = Object.fromEntries(Object.entries(v as Node).map(([p, s]) => [p, compact(s, SHARED_PARAMS.has(p))]));
    } else if (k === 'anyOf' || k === 'items') {
      out[k] = compact(v, described || parentDescribed);
    } else out[k] = v;
  }
  // anyOf of simple branches (nullable, number-or-string): one node with a type list.
  const branches = out.anyOf as unknown[] | undefined;
  if (Array.isArray(branches) && branches.every(simpleType)) {
    const rich = branches.filter((b) => Object.keys(b).length > 1);
    if (rich.length <= 1) {
      const { anyOf: _drop, ...rest } = out;
      return { ...(rich[0] ?? {}) as Node, ...rest, type: [...new Set(branches.map((b) => b.type))] };
    }
  }
  return out;
}

/** An ability's input schema as the MCP tool list shows it. */
export function compactInputSchema(schema: JsonSchema): JsonSchema {
  return compact(schema) as JsonSchema;
}

/** An ability's description without its trailing "Errors: …" list. */
export function toolDescription(description: string): string {
  const i = description.search(/\s*Errors?: /);
  return i > 0 ? description.slice(0, i).trim() : description;
}
