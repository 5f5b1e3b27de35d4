// Input validation with WordPress REST semantics: query-string values are strings ("5", "true"), so they
// are coerced to the schema's types first; zod then validates, and its first issue becomes the message
// WordPress would give ("input[per_page] must be between 1 (inclusive) and 100 (inclusive)").
import { z } from 'zod';
import { errors, ServiceError } from './errors.js';

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
 * A boolean the way WordPress reads one (rest_is_boolean, then rest_sanitize_boolean): true/false, the integers 1/0 and
 * the strings "true"/"false"/"1"/"0" in any case. Anything else ("on", "yes", "", "AAA") is not a boolean: undefined.
 */
export function wpBoolean(value: unknown, upstream = false): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 1 || value === 0) return value === 1;
  if (typeof value !== 'string') return undefined;
  const v = value.toLowerCase();
  if (v === 'true' || v === '1' || (upstream && v === 'yes')) return true;
  if (v === 'false' || v === '0' || (upstream && v === 'no')) return false;
  return undefined;
}

/** A flag argument read outside a schema (a REST row's own): its default when absent, else a WordPress boolean or a 400 naming it. */
export function readFlag(name: string, value: unknown, def: boolean): boolean {
  if (value === undefined) return def;
  const b = wpBoolean(value, true);
  if (b !== undefined) return b;
  const what = Array.isArray(value)
    ? `was given ${value.length} values`
    : `is ${typeof value === 'string' ? JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value) : JSON.stringify(value)}`;
  throw new ServiceError(
    'rest_invalid_param',
    `Invalid parameter(s): ${name}. ${name} ${what}; send true or false (also 1/0, "true"/"false", "1"/"0", "yes"/"no"). Nothing was changed.`,
    400,
    { params: { [name]: `${name} is not of type boolean.` } },
  );
}

const isEmpty = (v: unknown) => v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0);
/** How a value compares with the same field under another name: "5" is 5, and ["a"] is "a". */
const sameness = (v: unknown) => {
  const one = Array.isArray(v) && v.length === 1 ? v[0] : v;
  return JSON.stringify(
    Array.isArray(one) ? one.map((x) => (x && typeof x === 'object' ? x : String(x))) : one && typeof one === 'object' ? one : String(one),
  );
};

/**
 * One field sent under several names (upstream's name and ours: `slug` and `slugs`, `adminpassword` and
 * `admin_password`): the same value under both is that value, an empty one ('', null, []) gives way to the other, and
 * two different values are a 400 that names both. The first name is ours; all empty → the first value given.
 */
export function oneValue(entries: ReadonlyArray<readonly [string, unknown]>): unknown {
  const given = entries.filter(([, v]) => !isEmpty(v));
  if (!given.length) return entries.find(([, v]) => v !== undefined)?.[1];
  const [first, ...rest] = given;
  const other = rest.find(([, v]) => sameness(v) !== sameness(first![1]));
  if (other) {
    const names = `${first![0]} and ${other[0]}`;
    throw new ServiceError(
      'ability_invalid_input',
      `${names} name the same field and were given different values; send one of them.`,
      400,
      {
        params: {
          [first![0]]: `Same field as ${other[0]}, with another value.`,
          [other[0]]: `Same field as ${first![0]}, with another value.`,
        },
      },
      { paramReason: `${names} name the same field and were given different values; send one of them.` },
    );
  }
  return first![1];
}

/** Whether a schema takes any string (not only the strings of an enum or a const). */
function takesAnyString(s: JsonSchema): boolean {
  return branches(s).some((b) => !b.enum && b.const === undefined && types(b).includes('string'));
}

/**
 * Turn string values into the types the schema asks for, the way WordPress reads them:
 * "5" → 5, "true"/"1" → true, "false"/"0" → false, {"0":"a","1":"b"} and "a,b" → ["a","b"].
 * Values that do not fit are left alone so that validation reports them.
 */
export function coerce(value: unknown, schema: JsonSchema | undefined, only?: 'booleans', upstream = false): unknown {
  if (!schema) return value;
  const t = types(schema);
  if (typeof value === 'string') {
    // A boolean beside a string enum ('useglobal') still reads "true"/"0"; beside a free string it stays a string.
    if (t.includes('boolean') && !takesAnyString(schema)) {
      const b = wpBoolean(value, upstream);
      if (b !== undefined && !branches(schema).some((x) => x.enum?.includes(value) || x.const === value)) return b;
    }
    if (only) return value;
    if ((t.includes('integer') || t.includes('number')) && NUMERIC.test(value)) {
      const n = Number(value);
      if (t.includes('number') || Number.isInteger(n)) return n;
    }
    if (t.includes('null') && value === '' && !t.includes('string')) return null;
    if (t.includes('array') && !t.includes('string')) {
      const items = value === '' ? [] : value.split(/[\s,]+/).filter(Boolean);
      return coerce(
        items,
        branches(schema).find((b) => types(b).includes('array')),
        undefined,
        upstream,
      );
    }
    return value;
  }
  if (Array.isArray(value)) {
    const arr = branches(schema).find((b) => types(b).includes('array'));
    return arr ? value.map((v) => coerce(v, arr.items, only, upstream)) : value;
  }
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const arr = branches(schema).find((b) => types(b).includes('array'));
    const keys = Object.keys(obj);
    if (!only && arr && keys.every((k) => /^\d+$/.test(k))) {
      return keys.sort((a, b) => Number(a) - Number(b)).map((k) => coerce(obj[k], arr.items, undefined, upstream));
    }
    const o = branches(schema).find((b) => types(b).includes('object'));
    if (!o?.properties) return value;
    const out: Record<string, unknown> = {};
    for (const k of keys) out[k] = coerce(obj[k], o.properties[k], only, upstream);
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
  // Several values where one is taken (a repeated `k=1&k=2`): WordPress's words, and what was wrong.
  const given = readPath(input, path);
  const many = Array.isArray(given) && given.length > 1 ? ` It takes one value and was given ${given.length}.` : '';
  switch (issue.code) {
    case 'invalid_type':
      return `${label} is not of type ${typeWord(node, issue.expected)}.${many}`;
    case 'invalid_union':
      return `${label} is not of type ${typeWord(node, 'the expected type')}.${many}`;
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

/**
 * Bounds of one request's input, whatever carries it (a form body, a query string, a multipart form, JSON): at most
 * MAX_INPUT_FIELDS fields (a form's fields, a JSON body's top-level members; PHP's max_input_vars) and MAX_INPUT_DEPTH
 * levels of nesting (brackets or JSON objects and arrays; PHP's max_input_nesting_level). Past them: a 4xx, nothing read.
 */
export const MAX_INPUT_FIELDS = 1000;
export const MAX_INPUT_DEPTH = 64;

/** The refusals of input past those bounds: a body is too large (413); a query string or a nesting is a bad request (400). */
export const boundErrors = {
  fields: (where: 'body' | 'query') =>
    where === 'body'
      ? new ServiceError('svc_request_too_large', `The request body has more than ${MAX_INPUT_FIELDS} fields.`, 413, {
          max_fields: MAX_INPUT_FIELDS,
        })
      : new ServiceError('rest_invalid_param', `The query string has more than ${MAX_INPUT_FIELDS} arguments.`, 400, {
          max_fields: MAX_INPUT_FIELDS,
        }),
  depth: (field: string) =>
    new ServiceError('rest_invalid_param', `Invalid parameter(s): ${field}. ${field} nests deeper than ${MAX_INPUT_DEPTH} levels.`, 400, {
      params: { [field]: `Nested deeper than ${MAX_INPUT_DEPTH} levels.` },
      max_depth: MAX_INPUT_DEPTH,
    }),
};

/** Refuses a parsed JSON body past the bounds above (walked without recursion: a deep body cannot overflow the stack). */
export function assertBounded(body: unknown): void {
  if (!body || typeof body !== 'object') return;
  const top = Array.isArray(body) ? [] : Object.keys(body);
  if (top.length > MAX_INPUT_FIELDS) throw boundErrors.fields('body');
  const stack: Array<[unknown, number, string]> = [[body, 0, '']];
  while (stack.length) {
    const [node, depth, field] = stack.pop()!;
    if (!node || typeof node !== 'object') continue;
    if (depth > MAX_INPUT_DEPTH) throw boundErrors.depth(field || 'body');
    for (const [k, v] of Object.entries(node)) if (v && typeof v === 'object') stack.push([v, depth + 1, field || k]);
  }
}

export interface ValidateOptions {
  /**
   * Apply WordPress's string coercion (abilities and REST doors). MCP input is typed JSON already: only its booleans
   * are read the WordPress way ("true", 1), so that every door takes the same spellings of a flag. `'upstream'` (the
   * REST door) also reads "yes"/"no", which upstream's REST v2 documents for its flags (`with_tags=yes`); the abilities
   * door refuses them, as WordPress's Abilities API does.
   */
  coerce: boolean | 'upstream';
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
  const value = coerce(input, jsonSchema, opts.coerce ? undefined : 'booleans', opts.coerce === 'upstream');
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
