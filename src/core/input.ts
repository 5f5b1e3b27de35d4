// Input validation with WordPress REST semantics: query-string values are strings ("5", "true"), so they
// are coerced to the schema's types first; zod then validates, and its first issue becomes the message
// WordPress would give ("input[per_page] must be between 1 (inclusive) and 100 (inclusive)").
import { z } from 'zod';
import { errors } from './errors.js';

export type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  [k: string]: unknown;
};

const NUMERIC = /^\s*-?\d+(\.\d+)?\s*$/;

function types(s: JsonSchema): string[] {
  if (s.anyOf || s.oneOf) return (s.anyOf ?? s.oneOf)!.flatMap(types);
  if (s.enum) return [...new Set(s.enum.map((v) => (v === null ? 'null' : typeof v === 'number' ? 'number' : typeof v)))];
  if (s.const !== undefined) return [typeof s.const];
  return s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
}

function branches(s: JsonSchema): JsonSchema[] {
  return s.anyOf ?? s.oneOf ?? [s];
}

/**
 * Turn string values into the types the schema asks for, the way WordPress reads them:
 * "5" → 5, "true"/"1" → true, "false"/"0" → false, {"0":"a","1":"b"} and "a,b" → ["a","b"].
 * Values that do not fit are left alone so that validation reports them.
 */
export function coerce(value: unknown, schema: JsonSchema | undefined): unknown {
  if (!schema) return value;
  const t = types(schema);
  if (typeof value === 'string') {
    if ((t.includes('integer') || t.includes('number')) && NUMERIC.test(value)) {
      const n = Number(value);
      if (t.includes('number') || Number.isInteger(n)) return n;
    }
    if (t.includes('boolean') && !t.includes('string')) {
      const v = value.toLowerCase();
      if (v === 'true' || v === '1') return true;
      if (v === 'false' || v === '0') return false;
    }
    if (t.includes('null') && value === '' && !t.includes('string')) return null;
    if (t.includes('array') && !t.includes('string')) {
      const items = value === '' ? [] : value.split(/[\s,]+/).filter(Boolean);
      return coerce(
        items,
        branches(schema).find((b) => types(b).includes('array')),
      );
    }
    return value;
  }
  if (Array.isArray(value)) {
    const arr = branches(schema).find((b) => types(b).includes('array'));
    return arr ? value.map((v) => coerce(v, arr.items)) : value;
  }
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const arr = branches(schema).find((b) => types(b).includes('array'));
    const keys = Object.keys(obj);
    if (arr && keys.every((k) => /^\d+$/.test(k))) {
      return keys.sort((a, b) => Number(a) - Number(b)).map((k) => coerce(obj[k], arr.items));
    }
    const o = branches(schema).find((b) => types(b).includes('object'));
    if (!o?.properties) return value;
    const out: Record<string, unknown> = {};
    for (const k of keys) out[k] = coerce(obj[k], o.properties[k]);
    return out;
  }
  if (typeof value === 'number' && t.includes('boolean') && !t.includes('number') && !t.includes('integer')) {
    if (value === 1) return true;
    if (value === 0) return false;
  }
  return value;
}

/** How a path is named: inside the input (`input[a][b]`, the abilities API) or as a parameter (`a[b]`, REST). */
export type Naming = 'input' | 'param';

function pathLabel(path: PropertyKey[], naming: Naming): string {
  if (naming === 'param' && path.length) return path.slice(1).reduce<string>((acc, k) => `${acc}[${String(k)}]`, String(path[0]));
  return path.reduce<string>((acc, k) => `${acc}[${String(k)}]`, 'input');
}

function nodeAt(schema: JsonSchema | undefined, path: PropertyKey[]): JsonSchema | undefined {
  let node = schema;
  for (const k of path) {
    if (!node) return undefined;
    const b = branches(node);
    node = typeof k === 'number' ? b.find((x) => x.items)?.items : b.find((x) => x.properties)?.properties?.[String(k)];
  }
  return node;
}

function listWords(values: unknown[]): string {
  const s = values.map((v) => String(v));
  if (s.length <= 1) return s.join('');
  if (s.length === 2) return `${s[0]} and ${s[1]}`;
  return `${s.slice(0, -1).join(', ')}, and ${s[s.length - 1]}`;
}

function typeWord(node: JsonSchema | undefined, fallback: string): string {
  if (!node) return fallback;
  const t = types(node).map((x) => (x === 'number' && node.type === undefined ? x : x));
  return t.length ? [...new Set(t)].join(',') : fallback;
}

/** One zod issue, told the way WordPress tells it. */
export function describeIssue(issue: z.core.$ZodIssue, schema: JsonSchema | undefined, input: unknown, naming: Naming = 'input'): string {
  const path = issue.path;
  const label = pathLabel(path, naming);
  const node = nodeAt(schema, path);
  // A required property that is absent: zod says invalid_type, or invalid_union for a union-typed one
  // (site_id_or_domain); WordPress says "<prop> is a required property of input.".
  if ((issue.code === 'invalid_type' || issue.code === 'invalid_union' || issue.code === 'invalid_value') && isMissing(input, path)) {
    return `${String(path[path.length - 1])} is a required property of ${pathLabel(path.slice(0, -1), naming)}.`;
  }
  switch (issue.code) {
    case 'invalid_type':
      return `${label} is not of type ${typeWord(node, issue.expected)}.`;
    case 'invalid_union':
      return `${label} is not of type ${typeWord(node, 'the expected type')}.`;
    case 'too_small':
    case 'too_big': {
      if (issue.origin === 'string') {
        return issue.code === 'too_small'
          ? `${label} must be at least ${issue.minimum} character${Number(issue.minimum) === 1 ? '' : 's'} long.`
          : `${label} must be at most ${issue.maximum} character${Number(issue.maximum) === 1 ? '' : 's'} long.`;
      }
      if (issue.origin === 'array' || issue.origin === 'set') {
        return issue.code === 'too_small'
          ? `${label} must contain at least ${issue.minimum} item${Number(issue.minimum) === 1 ? '' : 's'}.`
          : `${label} must contain at most ${issue.maximum} item${Number(issue.maximum) === 1 ? '' : 's'}.`;
      }
      const min = node?.minimum ?? node?.exclusiveMinimum;
      const max = node?.maximum ?? node?.exclusiveMaximum;
      if (min !== undefined && max !== undefined) return `${label} must be between ${min} (inclusive) and ${max} (inclusive)`;
      if (issue.code === 'too_small') return `${label} must be greater than or equal to ${min ?? issue.minimum}`;
      return `${label} must be less than or equal to ${max ?? issue.maximum}`;
    }
    case 'invalid_value':
      return `${label} is not one of ${listWords(issue.values as unknown[])}.`;
    case 'invalid_format':
      if (issue.format === 'regex' && 'pattern' in issue)
        return `${label} does not match pattern ${String(issue.pattern).replace(/^\/|\/[a-z]*$/g, '')}.`;
      return `${label} is not a valid ${issue.format}.`;
    case 'unrecognized_keys':
      return `${issue.keys.join(', ')} is not a valid property of Object.`;
    case 'not_multiple_of':
      return `${label} must be a multiple of ${issue.divisor}.`;
    default:
      return issue.message ? `${label}: ${issue.message}` : `${label} is invalid.`;
  }
}

function isMissing(input: unknown, path: PropertyKey[]): boolean {
  if (!path.length) return false;
  const parent = readPath(input, path.slice(0, -1));
  return parent === undefined || parent === null || typeof parent !== 'object' || !(String(path[path.length - 1]) in (parent as object));
}

function readPath(v: unknown, path: PropertyKey[]): unknown {
  let cur = v;
  for (const k of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[k as string];
  }
  return cur;
}

/**
 * WordPress reports a missing required property first, then the first failing property in the order
 * the caller sent them.
 */
function firstIssue(issues: z.core.$ZodIssue[], input: unknown): z.core.$ZodIssue {
  const order = input && typeof input === 'object' ? Object.keys(input) : [];
  const rank = (i: z.core.$ZodIssue): number => {
    if (
      (i.code === 'invalid_type' || i.code === 'invalid_union' || i.code === 'invalid_value') &&
      i.path.length === 1 &&
      readPath(input, i.path) === undefined
    )
      return -1;
    if (i.code === 'unrecognized_keys') return order.indexOf(i.keys[0] ?? '');
    const k = i.path[0];
    const idx = k === undefined ? -1 : order.indexOf(String(k));
    return idx === -1 ? order.length : idx;
  };
  return issues.reduce((best, i) => (rank(i) < rank(best) ? i : best));
}

export interface ValidateOptions {
  /** Apply WordPress's string coercion (abilities and REST doors); MCP input is typed JSON already. */
  coerce: boolean;
}

/**
 * Validate an ability's input. `null`/absent input means "no input": it is read as {} when the schema
 * has no required property (WordPress's ["object","null"] schemas), else it fails as WordPress does.
 */
export function validateInput<T extends z.ZodObject>(
  abilityName: string,
  schema: T,
  jsonSchema: JsonSchema,
  raw: unknown,
  opts: ValidateOptions,
): z.output<T> {
  const fail = (reason: string, param?: string, paramReason?: string): never => {
    throw errors.abilityInput(abilityName, reason, param, paramReason);
  };
  let input = raw;
  if (input === null || input === undefined || input === '') {
    if ((jsonSchema.required ?? []).length > 0 && input !== '') fail('input is not of type object.');
    input = {};
  }
  if (typeof input !== 'object' || Array.isArray(input)) fail('input is not of type object.');
  const value = opts.coerce ? coerce(input, jsonSchema) : input;
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = firstIssue(r.error.issues, value);
  const param = issue.code === 'unrecognized_keys' ? issue.keys[0] : issue.path[0];
  fail(
    describeIssue(issue, jsonSchema, value),
    param === undefined ? undefined : String(param),
    describeIssue(issue, jsonSchema, value, 'param'),
  );
  throw new Error('unreachable');
}
