// The REST door describing itself: the OpenAPI 3.1 document (GET {rest}/openapi.json, `sitefleet openapi`,
// docs/openapi.json) and the WordPress-style route index (GET {rest}), both derived from the route table.
//
// Nothing here is written per route. A row's arguments are the ones its `input` reads — observed with the same
// kind of recording proxy the door uses to refuse unknown write arguments (rest-door.ts `readingOnly`) — typed by
// its ability's input schema (same name, or an upstream alias) or by the row's `doc.args`; its path parameters
// come from the path and the door's PARAM_PATTERNS; its answer is {success: 1, data: <ability output>} or the
// row's `doc.answers`; its errors follow from what the door and the ability do. A row that reads an argument no
// schema types, or reshapes its answer without declaring it, is still documented (loosely) and listed by
// `undocumented()`, which a test holds empty.
import { z } from 'zod';
import { keyAllowsMethod, type KeyPermission } from '../core/principal.js';
import { allAbilities } from '../abilities/index.js';
import * as clientViews from '../abilities/client-views.js';
import * as costViews from '../abilities/cost-views.js';
import * as posts from '../abilities/posts.js';
import * as shared from '../abilities/schemas.js';
import * as users from '../abilities/users.js';
import { dropSafeIntBounds, jsonSchemaOf } from '../core/registry.js';
import type { JsonSchema } from '../core/input.js';
import type { Config } from '../config.js';
import { VERSION } from '../version.js';
import { CHILD_ERRORS } from './routes/answers.js';
import { PARAM_PATTERNS, READ, type BatchShape, type RestArgs, type RestRoute } from './rest-door.js';

export const WpError = z
  .object({
    code: z.string().describe('Machine-readable error code (svc_…, rest_…).'),
    message: z.string(),
    data: z.looseObject({ status: z.number().int() }).describe('status is the HTTP status; params names the arguments at fault.'),
  })
  .describe('The WordPress error envelope.');

const ERROR_REF = { $ref: '#/components/schemas/WpError' };
const SCHEMA_MODULES: ReadonlyArray<Record<string, unknown>> = [shared, clientViews, costViews, posts, users];
const WRITE = new Set(['POST', 'PUT', 'PATCH']);
const MAX_BATCH_ITEMS = 100;
const KEY_LEVELS: readonly KeyPermission[] = ['read', 'write', 'read_write', 'delete'];
const METHOD_PERMISSION: Record<string, string> = {
  GET: 'read',
  HEAD: 'read',
  POST: 'write',
  PUT: 'write',
  PATCH: 'write',
  DELETE: 'delete',
};

export interface Arg {
  name: string;
  schema: JsonSchema;
  required: boolean;
  typed: boolean;
}

/**
 * Output schemas that get a name in components.schemas: the shared zod exports (by their export name) and every
 * ability's output (<Ability>Result). Matched by identity, in a registry of our own (the global one feeds schemas/
 * and the MCP tool list, which stay inline).
 */
const named = z.registry<{ id: string }>();
let namesReady = false;
function nameSchemas(): void {
  if (namesReady) return;
  namesReady = true;
  for (const mod of SCHEMA_MODULES) {
    for (const [k, v] of Object.entries(mod)) if (/^[A-Z]/.test(k) && v instanceof z.ZodObject && !named.has(v)) named.add(v, { id: k });
  }
  for (const a of allAbilities) if (!named.has(a.output)) named.add(a.output, { id: `${pascal(a.name.replace(/-v\d+$/, ''))}Result` });
  named.add(WpError, { id: 'WpError' });
}

/** components.schemas: every named schema met so far (deterministic: a name always means the same schema). */
const defs = new Map<string, JsonSchema>();
const toComponents = (node: unknown): unknown => JSON.parse(JSON.stringify(node).replaceAll('"#/$defs/', '"#/components/schemas/'));

const schemaCache = new WeakMap<z.ZodType, { input: JsonSchema; output: JsonSchema }>();
function schemaOf(s: z.ZodType, io: 'input' | 'output'): JsonSchema {
  let c = schemaCache.get(s);
  if (!c) {
    nameSchemas();
    const out = z.toJSONSchema(s, { io: 'output', unrepresentable: 'any', metadata: named }) as JsonSchema;
    delete out.$schema;
    dropSafeIntBounds(out);
    for (const [k, v] of Object.entries((out.$defs ?? {}) as Record<string, JsonSchema>)) defs.set(k, toComponents(v) as JsonSchema);
    delete out.$defs;
    c = { input: jsonSchemaOf(s, 'input'), output: toComponents(out) as JsonSchema };
    schemaCache.set(s, c);
  }
  return structuredClone(c[io]);
}

/** The argument names a row's `input` reads (all = it reads every argument). */
export function observedArgs(row: RestRoute): { names: string[]; all: boolean } {
  if (!row.input) return { names: [], all: false };
  const read = new Set<string>();
  let all = false;
  const args = new Proxy({} as Record<string, unknown>, {
    get: (_t, k) => {
      if (typeof k === 'string') read.add(k);
      return undefined;
    },
    has: (_t, k) => {
      if (typeof k === 'string') read.add(k);
      return false;
    },
    ownKeys: () => {
      all = true;
      return [];
    },
  });
  const params = new Proxy({} as Record<string, string>, { get: (_t, k) => (typeof k === 'string' ? '1' : undefined) });
  const a: RestArgs = { params, args, principal: { kind: 'local', name: 'cli' }, method: row.methods[0]! };
  try {
    row.input(a);
  } catch {
    /* a row may need a real value past the reads it made (an upload) */
  }
  return { names: [...read].filter((n) => !n.startsWith('_')), all };
}

export const pathParams = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

function paramSchema(name: string): JsonSchema {
  const p = PARAM_PATTERNS[name];
  if (!p) return { type: 'string' };
  if (p.source === '^\\d+$') return { type: 'integer', minimum: 0 };
  return { type: 'string', pattern: p.source };
}

/** The arguments a row reads, each with its schema (typed: false when nothing declares one). */
export function rowArgs(row: RestRoute): Arg[] {
  const { names, all } = observedArgs(row);
  const ability = row.ability;
  const input = ability ? schemaOf(ability.input, 'input') : undefined;
  const declared = row.doc?.args ?? {};
  const fromPath = new Set<string>();
  // Ability fields the row fills from the path (site_id_or_domain, tag_id, …) are not arguments.
  if (row.input && input) {
    try {
      const mapped = row.input({
        params: new Proxy({}, { get: () => '1' }),
        args: {},
        principal: { kind: 'local', name: 'cli' },
        method: row.methods[0]!,
      }) as Record<string, unknown>;
      for (const k of Object.keys(mapped ?? {})) fromPath.add(k);
    } catch {
      /* see observedArgs */
    }
  }
  const wanted = all && input ? Object.keys(input.properties ?? {}).filter((k) => !fromPath.has(k)) : names;
  const out: Arg[] = [];
  for (const name of new Set([...wanted, ...Object.keys(declared)])) {
    const d = declared[name];
    if (row.doc?.upload?.file === name) {
      out.push({ name, schema: { type: 'string', format: 'binary' }, required: true, typed: true });
      continue;
    }
    if (d) {
      out.push({ name, schema: schemaOf(d, 'input'), required: !d.safeParse(undefined).success, typed: true });
      continue;
    }
    const alias = ability?.aliases?.[name];
    const field = alias ?? name;
    const s = input?.properties?.[field];
    if (s) {
      out.push({
        name,
        schema: alias ? { ...s, description: `Upstream's name for ${alias}.` } : s,
        required: !alias && !!input?.required?.includes(field),
        typed: true,
      });
    } else {
      out.push({ name, schema: { description: 'Read by this route; no schema declares it.' }, required: false, typed: false });
    }
  }
  return out;
}

const objectOf = (args: Arg[], extra: Record<string, JsonSchema> = {}, required: string[] = []): JsonSchema => {
  const req = [...required, ...args.filter((a) => a.required).map((a) => a.name)];
  return {
    type: 'object',
    properties: { ...extra, ...Object.fromEntries(args.map((a) => [a.name, a.schema])) },
    ...(req.length ? { required: req } : {}),
    additionalProperties: false,
  };
};

/** The success body of a row. */
export function answerSchema(row: RestRoute, refs: Refs = INLINE): { schema: JsonSchema; documented: boolean } {
  const d = row.doc;
  if (d?.answers) return { schema: schemaOf(d.answers, 'output'), documented: true };
  if (d?.batch) return { schema: batchAnswer(d.batch, refs), documented: true };
  if (d?.controllers) {
    return {
      schema: {
        type: 'object',
        properties: Object.fromEntries(Object.entries(d.controllers).map(([k, b]) => [k, batchAnswer(b, refs)])),
        additionalProperties: false,
      },
      documented: true,
    };
  }
  // Also pathClient/costRow-style wrappers: a handler that runs the row's own ability without reshaping it.
  if (row.ability && !row.output) {
    return {
      schema: {
        type: 'object',
        properties: { success: { type: 'integer', const: 1 }, data: schemaOf(row.ability.output, 'output') },
        required: ['success', 'data'],
        additionalProperties: false,
      },
      documented: true,
    };
  }
  return { schema: { type: 'object', description: 'Not declared by the route.' }, documented: false };
}

const ID = { type: 'integer', minimum: 1 } as const;
const failedItem: JsonSchema = {
  type: 'object',
  properties: { id: { type: 'integer' }, success: { type: 'integer', const: 0 }, error: ERROR_REF },
  required: ['id', 'error'],
  additionalProperties: false,
  description: 'An item that failed; the others still ran.',
};

export function bodySchema(row: RestRoute, refs: Refs = INLINE): JsonSchema {
  if (row.doc?.batch) return batchBody(row.doc.batch, refs);
  if (row.doc?.controllers) {
    return {
      type: 'object',
      properties: Object.fromEntries(Object.entries(row.doc.controllers).map(([k, b]) => [k, batchBody(b, refs)])),
      additionalProperties: false,
      description: `At most ${MAX_BATCH_ITEMS} items in all.`,
    };
  }
  return objectOf(rowArgs(row));
}

/** How a schema of another row is included: inline, or as a reference to components (the document). */
interface Refs {
  body(row: RestRoute): JsonSchema;
  answer(row: RestRoute): JsonSchema;
}
const INLINE: Refs = { body: (r) => bodySchema(r), answer: (r) => answerSchema(r).schema };

function batchBody(b: BatchShape, refs: Refs): JsonSchema {
  const list = (items: JsonSchema, description: string): JsonSchema => ({ type: 'array', items, maxItems: MAX_BATCH_ITEMS, description });
  const props: Record<string, JsonSchema> = {};
  if (b.rows.create) props.create = list(refs.body(b.rows.create), 'Items to create: the body of the create route.');
  // Inline: the edit body with the id added (a reference to it would refuse the id).
  const update = bodySchema(b.rows.update);
  props.update = list(
    { ...update, properties: { id: ID, ...update.properties }, required: ['id', ...(update.required ?? [])] },
    "Items to update: the edit route's body and the id.",
  );
  props.delete = list(ID, 'IDs to delete.');
  for (const action of Object.keys(b.actions)) props[action] = list(ID, `Site IDs to run ${action} on.`);
  return { type: 'object', properties: props, additionalProperties: false, description: `At most ${MAX_BATCH_ITEMS} items in all.` };
}

function batchAnswer(b: BatchShape, refs: Refs): JsonSchema {
  const phases: Record<string, RestRoute | undefined> = {
    create: b.rows.create,
    update: b.rows.update,
    delete: b.rows.delete,
    ...b.actions,
  };
  const props = Object.fromEntries(
    Object.entries(phases)
      .filter(([, r]) => r)
      .map(([k, r]) => [k, { type: 'array', items: { anyOf: [refs.answer(r!), failedItem] } } satisfies JsonSchema]),
  );
  return {
    type: 'object',
    properties: props,
    additionalProperties: false,
    description: "One entry per item, in order: the single route's answer, or the item's error.",
  };
}

/** HTTP status → error codes a row may answer, from what the door and its ability do. */
export function rowErrors(row: RestRoute): Map<number, Set<string>> {
  const out = new Map<number, Set<string>>();
  const add = (status: number, ...codes: string[]) => {
    const s = out.get(status) ?? new Set<string>();
    codes.forEach((c) => s.add(c));
    out.set(status, s);
  };
  // Every method but GET and HEAD reads a body (DELETE included: confirm, dry_run, slugs may come in it) and writes.
  const writes = row.methods.some((m) => m !== 'GET' && m !== 'HEAD');
  add(400, 'rest_invalid_param');
  if (row.ability) add(400, 'svc_invalid_input');
  // The door's body readers (respond.ts: JSON and forms; multipart.ts: multipart forms, a file where none is taken)
  // and the store's refusal to take writes it cannot keep — also on a read whose input makes it a write (refresh).
  if (writes) {
    add(400, 'rest_invalid_json', 'svc_invalid_multipart', 'svc_no_file_expected');
    add(415, 'rest_invalid_json');
  }
  if (writes || row.ability?.writesWhen) add(503, 'svc_store_unavailable');
  add(401, 'svc_rest_authentication_error');
  add(403, 'svc_permission_denied');
  add(404, 'rest_no_route');
  add(405, 'rest_no_route_method');
  if (writes) add(413, 'svc_request_too_large');
  add(429, 'svc_too_many_attempts');
  add(500, 'svc_internal_error');
  const params = pathParams(row.path);
  if (params.includes('id_or_domain')) add(404, 'svc_rest_invalid_site_id', 'svc_rest_invalid_site_data');
  const a = row.ability;
  if (a) {
    if (params.includes('id') && 'tag_id' in a.input.shape) add(404, 'svc_rest_invalid_tag_id');
    if (a.module) add(501, 'svc_module_not_available');
    if (a.annotations.openWorld) for (const [s, codes] of Object.entries(CHILD_ERRORS)) add(Number(s), ...codes);
    // The codes an ability's description names: "svc_tag_exists (409)", "svc_site_suspended / svc_site_disconnected (409)".
    const code = '(?:svc|rest|ability)_[a-z_]+';
    const sep = '(?:\\s*[/,]\\s*|\\s+or\\s+)';
    for (const m of a.description.matchAll(new RegExp(`\\b(${code}(?:${sep}${code})*)\\s*\\((\\d{3})`, 'g'))) {
      add(Number(m[2]), ...m[1]!.split(new RegExp(sep)));
    }
  }
  if (row.doc?.batch || row.doc?.controllers) add(413, 'svc_rest_request_entity_too_large');
  for (const [s, codes] of Object.entries(row.doc?.errors ?? {})) add(Number(s), ...codes);
  return out;
}

/** Rows whose document would be loose: arguments without a schema, answers not declared. */
export function undocumented(routes: readonly RestRoute[]): string[] {
  const out: string[] = [];
  for (const row of routes) {
    const where = `${row.methods.join('|')} ${row.path}`;
    for (const a of rowArgs(row)) if (!a.typed) out.push(`${where}: argument "${a.name}" has no schema (declare it in the row's args)`);
    if (!answerSchema(row).documented) out.push(`${where}: the answer is not declared (add answers to the row)`);
  }
  return out;
}

const camel = (s: string) => s.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''));
const pascal = (s: string) => {
  const c = camel(s);
  return c.charAt(0).toUpperCase() + c.slice(1);
};

function tagOf(row: RestRoute): string {
  if (row.ability) return row.ability.toolset;
  const first = row.path.split('/').filter((x) => x && !x.startsWith(':'))[0];
  return !first || first === 'openapi.json' ? 'discovery' : first === 'batch' ? 'batch' : first;
}

type Json = Record<string, unknown>;

export interface DocumentOptions {
  restPrefix: string;
}

export const DEFAULT_ORIGIN = 'http://127.0.0.1:8787';

/**
 * Operation ids: the ability's name in camelCase (listSites), made unique by the path's last word (listSitesBasic)
 * or a number; a row's other methods add theirs (updateTagPut).
 */
function operationIds(routes: readonly RestRoute[]): Map<RestRoute, string[]> {
  const taken = new Set<string>();
  const out = new Map<RestRoute, string[]>();
  for (const row of routes) {
    const base0 = row.ability ? camel(row.ability.name.replace(/-v\d+$/, '')) : camel(row.path.replace(/[{}:]/g, '')) || 'routeIndex';
    let base = base0;
    if (taken.has(base))
      base =
        base0 +
        pascal(
          row.path
            .split('/')
            .filter((x) => x && !x.startsWith(':'))
            .slice(-1)[0] ?? '',
        );
    for (let n = 2; taken.has(base); n++) base = `${base0}${n}`;
    const ids = row.methods.map((method, i) => (i === 0 ? base : base + pascal(method.toLowerCase())));
    ids.forEach((id) => taken.add(id));
    out.set(row, ids);
  }
  return out;
}

const STATUS_WORDS: Record<number, string> = {
  400: 'BadRequest',
  404: 'NotFound',
  409: 'Conflict',
  413: 'TooLarge',
  415: 'UnsupportedType',
  501: 'NotImplemented',
  502: 'BadGateway',
  503: 'Unavailable',
  504: 'GatewayTimeout',
};

/** Error responses that read the same on every route: one definition in components.responses. */
const SHARED_ERRORS: Record<number, [string, string]> = {
  401: ['Unauthorized', 'svc_rest_authentication_error: no credentials, or a key that is unknown, revoked or malformed.'],
  403: ['Forbidden', "svc_permission_denied: the key's permission does not open this method."],
  405: ['MethodNotAllowed', 'rest_no_route_method: the path exists; the method does not (the Allow header lists those that do).'],
  429: ['TooManyAttempts', 'svc_too_many_attempts: too many failed logins from this address or for this account.'],
  500: ['InternalError', 'svc_internal_error: a fault of the server; see its log.'],
};

/** The OpenAPI 3.1 document of a route table. */
export function openApiDocument(routes: readonly RestRoute[], opts: DocumentOptions): Json {
  const paths: Record<string, Json> = {};
  const tags = new Set<string>();
  const ids = operationIds(routes);
  // Each row's body and answer are components, referred to by every method of the row and by the batches.
  const rowSchemas: Record<string, JsonSchema> = {};
  const nameOf = (row: RestRoute) => pascal(ids.get(row)?.[0] ?? camel(`${row.ability?.name ?? ''}${row.path}`));
  const refs: Refs = {
    body: (row) => {
      const name = `${nameOf(row)}Body`;
      if (!(name in rowSchemas)) {
        rowSchemas[name] = {};
        rowSchemas[name] = bodySchema(row, refs);
      }
      return { $ref: `#/components/schemas/${name}` };
    },
    answer: (row) => {
      const name = `${nameOf(row)}Answer`;
      if (!(name in rowSchemas)) {
        rowSchemas[name] = {};
        rowSchemas[name] = answerSchema(row, refs).schema;
      }
      return { $ref: `#/components/schemas/${name}` };
    },
  };
  // The envelope, with the codes this status carries on this route when they are known.
  const errorResponse = (description: string, headers?: Json, codes?: string[]) => ({
    description,
    ...(headers ? { headers } : {}),
    content: { 'application/json': { schema: codes ? { allOf: [ERROR_REF, { properties: { code: { enum: codes } } }] } : ERROR_REF } },
  });
  // Error responses with the same codes for the same status are one component (BadRequest1, NotFound2, …).
  const errorResponses: Record<string, Json> = {};
  const errorNames = new Map<string, string>();
  const errorRef = (status: number, codes: string[]) => {
    const key = `${status} ${codes.join(',')}`;
    let name = errorNames.get(key);
    if (!name) {
      const word = STATUS_WORDS[status] ?? `Status${status}`;
      name = `${word}${[...errorNames.keys()].filter((k) => k.startsWith(`${status} `)).length + 1}`;
      errorNames.set(key, name);
      errorResponses[name] = errorResponse(codes.join(', '), undefined, codes);
    }
    return { $ref: `#/components/responses/${name}` };
  };
  for (const row of routes) {
    const p = openApiPath(row.path);
    const item = (paths[p] ??= {});
    const params = pathParams(row.path);
    if (params.length) {
      item.parameters = params.map((name) => ({ name, in: 'path', required: true, schema: paramSchema(name) }));
    }
    const args = rowArgs(row);
    const errors = rowErrors(row);
    const tag = tagOf(row);
    tags.add(tag);
    const out = row.ability ? jsonSchemaOf(row.ability.output, 'output') : undefined;
    const paged = !!out?.properties?.total && !!out.properties.per_page;
    const pagedAlways = paged && !!out?.required?.includes('per_page');
    row.methods.forEach((method, m) => {
      const permission = METHOD_PERMISSION[method]!;
      const levels = KEY_LEVELS.filter((k) => keyAllowsMethod(k, method));
      const op: Json = {
        operationId: ids.get(row)![m],
        tags: [tag],
        summary: row.ability?.label ?? row.doc?.summary ?? `${method} ${p}`,
        description: [
          row.ability?.description ?? row.doc?.description ?? '',
          `Needs an API key with ${permission} permission (${levels.join(', ')}).${row.ability?.module ? ` Module ${row.ability.module} must be enabled.` : ''}`,
          row.ability ? `Runs the ability svc/${row.ability.name}.` : '',
        ]
          .filter(Boolean)
          .join('\n\n'),
        security: [{ apiKey: [permission] }],
        'x-key-permissions': levels,
      };
      const inQuery = !WRITE.has(method);
      if (inQuery && args.length) {
        op.parameters = args.map((a) => ({ name: a.name, in: 'query', required: a.required, schema: a.schema }));
      }
      if (!inQuery) {
        const body = bodySchema(row, refs);
        if (row.doc?.upload) {
          const u = row.doc.upload;
          op.requestBody = {
            required: true,
            description: `A multipart upload; the file field ${u.file} up to ${u.maxBytes} bytes.`,
            content: {
              'multipart/form-data': {
                schema: objectOf(
                  args.filter((a) => a.name !== u.file),
                  { [u.file]: { type: 'string', format: 'binary' } },
                  [u.file],
                ),
              },
            },
          };
        } else if (Object.keys(body.properties ?? {}).length) {
          const example = row.doc?.example?.request;
          const schema = refs.body(row);
          op.requestBody = {
            required: !!body.required?.length,
            content: {
              'application/json': { schema, ...(example ? { examples: { main: { value: example } } } : {}) },
              'application/x-www-form-urlencoded': { schema },
            },
          };
        }
      }
      const example = row.doc?.example;
      const ok: Json = {
        description: 'Success.',
        content: {
          'application/json': { schema: refs.answer(row), ...(example ? { examples: { main: { value: example.response } } } : {}) },
        },
      };
      if (paged) {
        ok.headers = {
          'X-WP-Total': { $ref: `#/components/headers/${pagedAlways ? 'Total' : 'TotalIfPaged'}` },
          'X-WP-TotalPages': { $ref: `#/components/headers/${pagedAlways ? 'TotalPages' : 'TotalPagesIfPaged'}` },
        };
      }
      const responses: Json = { 200: ok };
      if (method === 'GET') {
        // Conditional GETs (http/conditional.ts): every success carries an ETag (and Cache-Control: private, no-cache);
        // If-None-Match naming it gets 304 with no body.
        responses[304] = { $ref: '#/components/responses/NotModified' };
      }
      for (const status of [...errors.keys()].sort((x, y) => x - y)) {
        const codes = [...errors.get(status)!];
        const shared = SHARED_ERRORS[status];
        responses[status] = shared && codes.length === 1 ? { $ref: `#/components/responses/${shared[0]}` } : errorRef(status, codes);
      }
      responses.default = { $ref: '#/components/responses/Error' };
      op.responses = responses;
      item[method.toLowerCase()] = op;
    });
  }
  const header = (description: string, required: boolean) => ({ description, required, schema: { type: 'integer', minimum: 0 } });
  return {
    openapi: '3.1.0',
    info: {
      title: 'sitefleet REST API',
      version: VERSION,
      summary: 'Manage a fleet of WordPress sites running the MainWP Child plugin.',
      description:
        'The REST v2 door of sitefleet. Generated from the route table and the ability registry (`sitefleet openapi`); ' +
        'every route needs an API key (`Authorization: Bearer sf_…`) whose permission opens the method: read for GET, write ' +
        'for POST/PUT/PATCH, delete (or write) for DELETE. Errors use the WordPress envelope {code, message, data: {status}}. ' +
        'Arguments of GET and DELETE routes go in the query string, those of POST/PUT/PATCH in a JSON (or form) body; ' +
        'a write refuses arguments it does not read.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [
      { url: opts.restPrefix, description: 'The server this document was fetched from.' },
      { url: `{origin}${opts.restPrefix}`, description: 'Any sitefleet server.', variables: { origin: { default: DEFAULT_ORIGIN } } },
    ],
    security: [{ apiKey: [] }],
    tags: [...tags].sort().map((name) => ({ name })),
    paths,
    components: {
      schemas: { ...referenced({ paths, rowSchemas }), ...rowSchemas },
      responses: {
        ...Object.fromEntries(
          Object.entries(SHARED_ERRORS).map(([status, [name, description]]) => [
            name,
            errorResponse(
              description,
              status === '401'
                ? { 'WWW-Authenticate': { schema: { type: 'string', const: 'Bearer' } } }
                : status === '429'
                  ? { 'Retry-After': { schema: { type: 'integer' } } }
                  : undefined,
              [description.split(':')[0]!],
            ),
          ]),
        ),
        Error: errorResponse('Any other error, in the same envelope.'),
        NotModified: {
          description: 'The answer is the one the If-None-Match header names (its ETag): no body.',
          headers: { ETag: { $ref: '#/components/headers/ETag' }, 'Cache-Control': { $ref: '#/components/headers/CacheControl' } },
        },
        ...errorResponses,
      },
      headers: {
        Total: header('Items in the whole list.', true),
        TotalPages: header('Pages at this per_page.', true),
        ETag: {
          description: 'A strong validator of this answer (its body and list headers): send it back in If-None-Match.',
          required: true,
          schema: { type: 'string' },
        },
        CacheControl: {
          description: 'private, no-cache: keep the answer, and revalidate it (If-None-Match) before reuse.',
          required: true,
          schema: { type: 'string', const: 'private, no-cache' },
        },
        TotalIfPaged: header('Items in the whole list (when page or per_page is given).', false),
        TotalPagesIfPaged: header('Pages at this per_page (when page or per_page is given).', false),
      },
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'sf_<key id>_<secret>',
          description:
            'An API key (`sitefleet keys create --permissions read|write|read_write|delete`). The scope of each ' +
            'operation names the permission it needs: read (keys read, read_write), write (write, read_write), delete (delete, write, read_write).',
        },
      },
    },
  };
}

/** The named schemas a document refers to, and those they refer to, by name. */
function referenced(paths: unknown): Record<string, JsonSchema> {
  schemaOf(WpError, 'output');
  const names = new Set<string>(['WpError']);
  const scan = (node: unknown) => {
    if (node === undefined) return;
    for (const m of JSON.stringify(node).matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      if (!names.has(m[1]!)) {
        names.add(m[1]!);
        scan(defs.get(m[1]!));
      }
    }
  };
  scan(paths);
  for (const n of [...names]) scan(defs.get(n));
  return Object.fromEntries(
    [...names]
      .sort()
      .filter((n) => defs.has(n))
      .map((n) => [n, defs.get(n)!]),
  );
}

/** WordPress's route pattern of a path: /sites/:id_or_domain → /sites/(?P<id_or_domain>[A-Za-z0-9._-]+). */
const wpPattern = (path: string) =>
  path.replace(/:(\w+)/g, (_m, name: string) => {
    const p = PARAM_PATTERNS[name];
    return `(?P<${name}>${p ? p.source.replace(/^\^/, '').replace(/\$$/, '') : '[^/]+'})`;
  });

/** An argument as WordPress's index shows it: its JSON Schema with `required`. */
const wpArg = (schema: JsonSchema, required: boolean) => ({ ...schema, required });

/** The namespace of a prefix: /wp-json/svc/v2 → svc/v2. */
export const namespaceOf = (prefix: string) => prefix.replace(/^\/wp-json\//, '').replace(/^\/+|\/+$/g, '');

/** GET {rest}: the WordPress namespace index (namespace, routes with methods, endpoints and args). */
export function routeIndex(routes: readonly RestRoute[], base: string, prefix: string): Json {
  const ns = namespaceOf(prefix);
  const byPath = new Map<string, RestRoute[]>();
  for (const row of routes) byPath.set(row.path, [...(byPath.get(row.path) ?? []), row]);
  const out: Record<string, Json> = {};
  for (const [path, rows] of byPath) {
    const key = `/${ns}${path === '/' ? '' : wpPattern(path)}`;
    const params = pathParams(path);
    out[key] = {
      namespace: ns,
      methods: [...new Set(rows.flatMap((r) => r.methods))],
      endpoints: rows.map((r) => ({
        methods: r.methods,
        args: {
          ...Object.fromEntries(params.map((p) => [p, wpArg(paramSchema(p), true)])),
          ...Object.fromEntries(rowArgs(r).map((a) => [a.name, wpArg(a.schema, a.required)])),
        },
      })),
      ...(params.length ? {} : { _links: { self: [{ href: `${base}${prefix}${path === '/' ? '' : path}` }] } }),
    };
  }
  return { namespace: ns, routes: out, _links: { up: [{ href: `${base}/wp-json/` }] } };
}

const IndexAnswer = z.looseObject({
  namespace: z.string(),
  routes: z.record(
    z.string(),
    z.looseObject({
      namespace: z.string(),
      methods: z.array(z.string()),
      endpoints: z.array(
        z.looseObject({ methods: z.array(z.string()), args: z.record(z.string(), z.looseObject({ required: z.boolean() })) }),
      ),
    }),
  ),
});
const DocumentAnswer = z.looseObject({
  openapi: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.looseObject({})),
});

/**
 * The table with the door's own two routes in front: GET / (the index) and GET /openapi.json (the document). They
 * are rows like any other, so they need credentials, are listed, and describe themselves.
 */
export function withDiscovery(routes: readonly RestRoute[], config: { restPrefix: string; publicUrl: string }): RestRoute[] {
  let doc: Json | undefined;
  // Built once, never per request.
  let index: Json | undefined;
  const all: RestRoute[] = [
    {
      methods: READ,
      path: '/',
      handler: async () => {
        index ??= routeIndex(all, config.publicUrl, config.restPrefix);
        return index;
      },
      doc: {
        summary: 'Route index',
        description: 'WordPress-style namespace index: every route with its methods and arguments (type, required).',
        answers: IndexAnswer,
      },
    },
    {
      methods: READ,
      path: '/openapi.json',
      handler: async () => (doc ??= openApiDocument(all, config)),
      doc: {
        summary: 'OpenAPI document',
        description: 'This document: OpenAPI 3.1, generated from the route table.',
        answers: DocumentAnswer,
      },
    },
    ...routes,
  ];
  return all;
}

/** The document of a table as the door serves it (its own routes included), as text: what docs/openapi.json holds. */
export function restDocumentJson(routes: readonly RestRoute[], config: Pick<Config, 'restPrefix'>): string {
  return `${JSON.stringify(openApiDocument(withDiscovery(routes, { restPrefix: config.restPrefix, publicUrl: '' }), config), null, 2)}\n`;
}
