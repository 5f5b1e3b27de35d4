// REST interface v2 mechanics: turns the route table (rest-routes.ts) into an express router. A row names
// its ability; the door authenticates, builds the input, runs the ability and shapes the answer. Errors
// keep the {code, message, data:{status}} envelope with REST's own codes for unknown path ids.
import express, { type Request, type Response } from 'express';
import type { z } from 'zod';
import type { Ability } from '../core/ability.js';
import { ServiceError, toServiceError, type Subject } from '../core/errors.js';
import { KEY_METHODS, keyMethodError, keyAllowsMethod, type Principal } from '../core/principal.js';
import type { Registry } from '../core/registry.js';
import { assertBounded } from '../core/input.js';
import type { Services } from '../domain/index.js';
import { requireAuth, type LoginThrottle } from './auth.js';
import { bodyErrors, hasBody, jsonBody, sendError } from './respond.js';
import { readForm, readFormFields } from './multipart.js';
import { AnswerCache, cacheKey, cachedAnswers, represent, sendRepresentation, storeFingerprint, STORE_PURE } from './conditional.js';

/** What a row sees of a request: path params, and query and body arguments merged (body wins). */
export interface RestArgs {
  params: Record<string, string>;
  args: Record<string, unknown>;
  principal: Principal;
  method: string;
}

/**
 * What a row's `output` sees besides the ability's result: the request's own arguments and the door's base URL
 * (for job pointers), nothing else. An output mapper is a pure function of them — it cannot reach the services; what an answer needs beyond the
 * result, the ability returns (an input option the row sets, when it is heavy).
 */
export interface RestContext {
  readonly args: RestArgs;
  /** This door's base URL with its prefix (the server's public base: where a row's job `status_url` leads). */
  readonly restBase: string;
}

/**
 * What the OpenAPI document and the route index (http/openapi.ts) cannot see in a row's functions. Everything else
 * is derived: the arguments a row's `input` reads (observed the way `readingOnly` observes them) typed by its
 * ability's input schema, the path parameters, the errors, the paging headers.
 */
export interface RouteDoc {
  /** Arguments the row reads that are not ability input fields of the same name (or alias): their schemas. */
  args?: Record<string, z.ZodType>;
  /** The success body when `output` reshapes the result; without `output` it is {success: 1, data: <ability output>}. */
  answers?: z.ZodType;
  /** A multipart/form-data upload: the file field (the other fields are `args`). */
  upload?: { file: string; maxBytes: number };
  /** A request and its answer, shown in the document (a test validates them against the schemas). */
  example?: { request?: Record<string, unknown>; response: unknown };
  /** Rows without an ability (batches, the door's own routes). */
  summary?: string;
  description?: string;
  /** A batch route: the rows each operation runs (routes/args.ts `batch`), or one such shape per controller. */
  batch?: BatchShape;
  controllers?: Readonly<Record<string, BatchShape>>;
  /** Error codes beyond those derived (per HTTP status). */
  errors?: Readonly<Record<number, readonly string[]>>;
}

/** The rows a batch runs: create/update/delete and per-site actions (lists of ids). */
export interface BatchShape {
  rows: { create?: RestRoute; update: RestRoute; delete: RestRoute };
  actions: Readonly<Record<string, RestRoute>>;
}

export interface RestRoute {
  methods: readonly string[];
  path: string;
  ability?: Ability;
  input?: (a: RestArgs) => unknown;
  output?: (result: never, ctx: RestContext) => unknown;
  /** Reads a body that is not JSON (a multipart upload); its fields take the JSON body's place in `args`. */
  body?: (req: Request, res: Response) => Promise<Record<string, unknown>>;
  /** A route that is not one ability call (batches); it runs rows itself. */
  handler?: (a: RestArgs, run: RowRunner) => Promise<unknown>;
  /** The module a handler row belongs to (a row with an ability belongs to its ability's). */
  module?: Ability['module'];
  doc?: RouteDoc;
}

export type RowRunner = (route: RestRoute, a: RestArgs) => Promise<unknown>;

type RowIo<A extends Ability> = {
  input?: (a: RestArgs) => unknown;
  output?: (result: z.output<A['output']>, ctx: RestContext) => unknown;
  body?: RestRoute['body'];
} & Pick<RouteDoc, 'args' | 'answers' | 'upload' | 'example' | 'errors'>;

export function route<A extends Ability>(methods: readonly string[], path: string, ability: A, io: RowIo<A> = {}): RestRoute {
  const { input, output, body, ...doc } = io;
  return { methods, path, ability, input, output: output as RestRoute['output'], body, doc };
}

export const READ = ['GET'] as const;
export const CREATE = ['POST'] as const;
export const EDIT = ['POST', 'PUT', 'PATCH'] as const;
export const REMOVE = ['DELETE'] as const;

export const PARAM_PATTERNS: Record<string, RegExp> = {
  id_or_domain: /^[A-Za-z0-9._-]+$/,
  id: /^\d+$/,
  job_id: /^[a-z]+_[0-9a-f-]{36}$/,
  user_id: /^\d+$/,
  post_id: /^\d+$/,
  id_or_email: /^(\d+|[^\s/@]+@[^\s/@]+)$/,
};

export const noRoute = () => new ServiceError('rest_no_route', 'No route was found matching the URL and request method.', 404);

/** Whether an error is about the thing the path names (ids compare as numbers: /sites/007 names site 7). */
function about(err: ServiceError, kind: Subject['kind'], pathRef: string): boolean {
  const s = err.detail.subject;
  if (s?.kind !== kind) return false;
  return /^\d+$/.test(pathRef) ? Number(s.ref) === Number(pathRef) : String(s.ref).toLowerCase() === pathRef.toLowerCase();
}

/** REST's own codes where the thing named in the path does not exist (REST v2 reference §0.3). */
function translate(e: unknown, a: RestArgs): ServiceError {
  const err = toServiceError(e);
  const ref = a.params.id_or_domain;
  if (err.code === 'svc_site_not_found' && ref !== undefined && about(err, 'site', ref)) {
    return /^\d+$/.test(ref)
      ? new ServiceError('svc_rest_invalid_site_id', 'Invalid or not found ID.', 404)
      : new ServiceError('svc_rest_invalid_site_data', 'Invalid or not found domain.', 404);
  }
  if (err.code === 'svc_tag_not_found' && a.params.id !== undefined && about(err, 'tag', a.params.id)) {
    return new ServiceError('svc_rest_invalid_tag_id', 'Invalid or not found ID.', 404);
  }
  if (err.code === 'ability_invalid_input') {
    const params = (err.data.params ?? {}) as Record<string, string>;
    // A path id that no record can have (beyond the integer range) is not found, like any unknown id.
    if (ref !== undefined && 'site_id_or_domain' in params)
      return new ServiceError('svc_rest_invalid_site_id', 'Invalid or not found ID.', 404);
    if (a.params.id !== undefined && 'tag_id' in params)
      return new ServiceError('svc_rest_invalid_tag_id', 'Invalid or not found ID.', 404);
    const names = Object.keys(params);
    // REST names a parameter by itself (`a[b]`), where the abilities API says `input[a][b]`: the error carries both.
    const reason = err.detail.paramReason ?? err.message;
    const clean = Object.fromEntries(names.map((n) => [n, err.detail.paramReason ?? params[n]!]));
    return new ServiceError(
      'rest_invalid_param',
      names.length ? `Invalid parameter(s): ${names.join(', ')}` : `Invalid parameter(s): ${reason}`,
      400,
      { params: names.length ? clean : {}, reason },
    );
  }
  return err;
}

/** GET and HEAD take no body: it is never read nor parsed (node discards it), whatever it is. */
const takesBody = (req: Request) => req.method !== 'GET' && req.method !== 'HEAD';

/**
 * The body's arguments: a JSON object, a urlencoded form or a multipart form (fields only), PHP bracket keys read,
 * bounded (core/input.ts MAX_INPUT_FIELDS, MAX_INPUT_DEPTH). A body of any other type (or of none) is refused, never
 * read as no arguments.
 */
async function bodyArgs(req: Request): Promise<Record<string, unknown>> {
  if (!takesBody(req)) return {};
  if (typeof req.body === 'string') return readForm(req.body, 'body');
  if (req.body && typeof req.body === 'object' && !Array.isArray(req.body)) {
    assertBounded(req.body);
    return req.body as Record<string, unknown>;
  }
  const type = String(req.headers['content-type'] ?? '');
  if (/^multipart\/form-data\b/i.test(type)) return readFormFields(req, 1024 * 1024);
  if (hasBody(req) && req.body === undefined) {
    throw new ServiceError(
      'rest_invalid_json',
      type
        ? `The request body is ${type.split(';')[0]}, which this API does not read: send application/json, application/x-www-form-urlencoded or multipart/form-data.`
        : 'The request body has no Content-Type, so it was not read: send Content-Type: application/json with a JSON body (or application/x-www-form-urlencoded with a form).',
      415,
    );
  }
  return {};
}

/** The arguments of the query string: bounded like a form, every value of a repeated key kept (k=1&k=2 → [1, 2]). */
function queryArgs(req: Request): Record<string, unknown> {
  const url = req.originalUrl ?? req.url;
  const q = url.indexOf('?');
  return q < 0 ? {} : readForm(url.slice(q + 1), 'query');
}

/** Query arguments a route does not read (WordPress ignores them), named in this header of the answer. */
export const IGNORED_HEADER = 'X-Sitefleet-Ignored-Params';
const MAX_NAMED = 50;
const NONE: ReadonlySet<string> = new Set();

/** The names for the header: each percent-encoded where a header could not carry it, at most MAX_NAMED of them. */
function ignoredHeader(names: string[]): string {
  const shown = names
    .slice(0, MAX_NAMED)
    .map((n) => (n.length > 100 ? `${n.slice(0, 100)}…` : n).replace(/[^\x21-\x2b\x2d-\x7e]/g, encodeURIComponent));
  return shown.join(', ') + (names.length > MAX_NAMED ? `, … (${names.length - MAX_NAMED} more)` : '');
}

/** A write's body fields the route does not read: 400 naming each, nothing changed. */
function unknownParameters(unknown: string[]): ServiceError {
  return new ServiceError(
    'rest_invalid_param',
    `Unknown parameter(s): ${unknown.join(', ')}. This route does not read them; nothing was changed.`,
    400,
    { params: Object.fromEntries(unknown.map((k) => [k, 'Unknown parameter.'])) },
  );
}

/**
 * Runs a row's input mapping and sorts the arguments it did not read. A body field (on a write) is refused: a field the
 * route does not know (a misspelling, another product's name for it) is a 400 that names it, never silently dropped.
 * A query argument is ignored, as WordPress ignores arguments a route does not declare (clients add their own, such
 * as `?DELETE=DELETE`), and named in the answer's IGNORED_HEADER. Body fields starting with "_" are WordPress's own
 * (_method, _envelope, _fields, …) and are left alone, and so are empty ones. `declared`: arguments the row reads
 * elsewhere (its output).
 */
function readingOnly(
  a: RestArgs,
  input: ((a: RestArgs) => unknown) | undefined,
  fromQuery: ReadonlySet<string>,
  declared: readonly string[],
): { mapped: unknown; ignored: string[] } {
  const read = new Set<string>();
  let all = false;
  const args = new Proxy(a.args, {
    get: (t, k) => {
      if (typeof k === 'string') read.add(k);
      return Reflect.get(t, k);
    },
    has: (t, k) => {
      if (typeof k === 'string') read.add(k);
      return Reflect.has(t, k);
    },
    ownKeys: (t) => {
      all = true;
      return Reflect.ownKeys(t);
    },
  });
  const mapped = input ? input({ ...a, args }) : {};
  for (const k of declared) read.add(k);
  const unread = all ? [] : Object.keys(a.args).filter((k) => !read.has(k));
  // An empty value carries nothing that could be lost (forms send every field, filled or not).
  const unknown = unread.filter((k) => !fromQuery.has(k) && !k.startsWith('_') && a.args[k] !== '' && a.args[k] !== null);
  if (unknown.length) throw unknownParameters(unknown);
  return { mapped, ignored: unread.filter((k) => fromQuery.has(k)) };
}

/**
 * WordPress's collection headers on a paged answer (an ability result with `total` and `per_page`): X-WP-Total and
 * X-WP-TotalPages, as WordPress's own lists and our abilities door send them.
 */
function pagingHeaders(res: Response, result: unknown): void {
  const r = result as { total?: unknown; per_page?: unknown } | null;
  if (!r || typeof r !== 'object' || typeof r.total !== 'number' || typeof r.per_page !== 'number' || r.per_page < 1) return;
  res.setHeader('X-WP-Total', String(r.total));
  res.setHeader('X-WP-TotalPages', String(Math.ceil(r.total / r.per_page)));
}

/** `base`: the server's public base URL (SITEFLEET_PUBLIC_URL, else the address it listens on). */
export function restRouter(
  services: Services,
  registry: Registry,
  routes: readonly RestRoute[],
  base: string,
  throttle?: LoginThrottle,
  answers = new AnswerCache(),
): express.Router {
  const restBase = `${base}${services.config.restPrefix}`;
  const r = express.Router();
  r.use(
    requireAuth(services, ['bearer'], () => new ServiceError('svc_rest_authentication_error', 'You are not authenticated.', 401), throttle),
  );
  r.use((req, res, next) => {
    const p = req.principal!;
    if (p.kind === 'key' && KEY_METHODS.has(req.method) && !keyAllowsMethod(p.permissions, req.method)) {
      return sendError(res, keyMethodError(req.method));
    }
    next();
  });
  // Serialised answers of store-pure GETs (http/conditional.ts), valid for one store fingerprint; a hit is sent here
  // (when the server's fast path did not already send it).
  r.use(cachedAnswers(services.store, answers, ['GET', 'HEAD']));
  // Bodies are read only on methods that take one (never on GET or HEAD).
  const json = jsonBody('1mb');
  // Form bodies, as WordPress reads them into $_POST: urlencoded here (parsed below), multipart in the handler.
  const form = express.text({
    limit: '1mb',
    type: (req) => /^application\/x-www-form-urlencoded\b/i.test(String(req.headers['content-type'] ?? '')),
  });
  r.use((req, res, next) => (takesBody(req) ? json(req, res, next) : next()));
  r.use((req, res, next) => (takesBody(req) ? form(req, res, next) : next()));
  r.use(bodyErrors);

  // The response of a request's own arguments (not of a batch item's): a paged result sets its list headers there.
  const responses = new WeakMap<RestArgs, Response>();
  // The names of a request's own arguments that only its query string carries.
  const queryOnly = new WeakMap<RestArgs, ReadonlySet<string>>();
  const fromQuery = (a: RestArgs) => queryOnly.get(a) ?? NONE;
  const runRow: RowRunner = async (row, a) => {
    // A module that is off removes its routes (upstream does): 501 before any argument or permission check.
    registry.assertModule({ module: row.module ?? row.ability?.module });
    if (row.handler) {
      // A handler row reads its declared arguments itself: a body field it does not declare is refused as a row's is.
      const declared = row.doc?.args;
      if (declared && a.method !== 'GET') {
        const res = responses.get(a);
        const query = res ? fromQuery(a) : NONE;
        const unknown = Object.keys(a.args).filter(
          (k) => !(k in declared) && !(k in a.params) && !query.has(k) && !k.startsWith('_') && a.args[k] !== '' && a.args[k] !== null,
        );
        if (unknown.length) throw unknownParameters(unknown);
      }
      return row.handler(a, runRow);
    }
    const ability = row.ability!;
    try {
      const res = responses.get(a);
      // Only the request's own query arguments may be ignored; a batch item's fields all come from the body.
      const { mapped: input, ignored } = readingOnly(a, row.input, res ? fromQuery(a) : NONE, Object.keys(row.doc?.args ?? {}));
      if (res && ignored.length) res.setHeader(IGNORED_HEADER, ignoredHeader(ignored));
      const result = await registry.run(ability, input, {
        principal: a.principal,
        coerce: 'upstream',
        method: a.method,
      });
      if (res) pagingHeaders(res, result);
      return row.output ? row.output(result as never, { args: a, restBase }) : { success: 1, data: result };
    } catch (e) {
      throw translate(e, a);
    }
  };

  const byPath = new Map<string, RestRoute[]>();
  for (const row of routes) byPath.set(row.path, [...(byPath.get(row.path) ?? []), row]);

  for (const [path, rows] of byPath) {
    const allow = [...new Set(rows.flatMap((x) => x.methods))];
    r.all(path, async (req: Request, res: Response) => {
      const params = req.params as Record<string, string>;
      for (const [name, value] of Object.entries(params)) {
        if (PARAM_PATTERNS[name] && !PARAM_PATTERNS[name].test(value)) return sendError(res, noRoute());
      }
      const method = req.method === 'HEAD' ? 'GET' : req.method;
      const row = rows.find((x) => x.methods.includes(method));
      res.setHeader('Allow', allow.join(', '));
      if (!row) {
        return sendError(
          res,
          new ServiceError('rest_no_route_method', `Method ${req.method} is not allowed here. Allowed: ${allow.join(', ')}.`, 405),
        );
      }
      try {
        const query = queryArgs(req);
        const body = row.body ? await row.body(req, res) : await bodyArgs(req);
        // A batch reads its operations from the body (as WordPress's batch controllers do): its query is ignored.
        const batch = !!(row.doc?.batch || row.doc?.controllers);
        const ignoredByBatch = batch ? Object.keys(query).filter((k) => !(k in body)) : [];
        if (ignoredByBatch.length) res.setHeader(IGNORED_HEADER, ignoredHeader(ignoredByBatch));
        const args: RestArgs = { params, args: batch ? body : { ...query, ...body }, principal: req.principal!, method: req.method };
        responses.set(args, res);
        queryOnly.set(args, new Set(batch ? [] : Object.keys(query).filter((k) => !(k in body))));
        if (method !== 'GET') return res.json(await runRow(row, args));
        // A GET: conditional (ETag, 304), and served from the answer cache when the row's ability is store-pure and
        // the request carries nothing beyond its URL.
        const key = row.ability && STORE_PURE.has(row.ability.name) && !Object.keys(body).length ? cacheKey(req) : undefined;
        const fp = key ? storeFingerprint(services.store) : '';
        const hit = key ? answers.get(key, fp) : undefined;
        if (hit) return sendRepresentation(req, res, hit);
        const rep = represent(res, await runRow(row, args));
        if (key && storeFingerprint(services.store) === fp) answers.set(key, fp, rep);
        sendRepresentation(req, res, rep);
      } catch (e) {
        sendError(res, e);
      }
    });
  }
  r.use((_req, res) => sendError(res, noRoute()));
  return r;
}
