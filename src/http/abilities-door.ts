// Abilities interface v1 (WordPress Abilities API semantics): discovery, categories, and run.
// Check order of a run (abilities reference §1.2): credentials 401 → JSON body 400 → unknown ability 404
// → method 405 → input 400 → permission 403 → execute.
import express, { type Request, type Response } from 'express';
import { CATEGORIES } from '../abilities/index.js';
import { allowedMethods, annotationMethod, type Ability } from '../core/ability.js';
import { ServiceError } from '../core/errors.js';
import { withUpstreamNames, type Registry } from '../core/registry.js';
import type { Services } from '../domain/index.js';
import { requireAuth, type LoginThrottle } from './auth.js';
import { bodyErrors, hasBody, jsonBody, sendError } from './respond.js';
import { readForm } from './multipart.js';
import { assertBounded } from '../core/input.js';
import { withStatusUrl, withStatusUrlSchema } from './job-links.js';
import {
  AnswerCache,
  cacheKey,
  cachedAnswers,
  represent,
  sendConditional,
  sendRepresentation,
  storeFingerprint,
  STORE_PURE,
} from './conditional.js';

const METHOD_MESSAGE = {
  GET: 'Read-only abilities require GET method.',
  DELETE: 'Abilities that perform destructive actions require DELETE method.',
  POST: 'Abilities that perform updates require POST method.',
} as const;

const NAME = /^[a-z0-9-]+$/;

function listParams(req: Request): { page: number; per_page: number } {
  const bad: Record<string, string> = {};
  const int = (name: string, def: number, min: number, max?: number): number => {
    const raw = req.query[name];
    if (raw === undefined) return def;
    const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isInteger(n)) bad[name] = `${name} is not of type integer.`;
    else if (n < min || (max !== undefined && n > max)) {
      bad[name] =
        max === undefined
          ? `${name} must be greater than or equal to ${min}`
          : `${name} must be between ${min} (inclusive) and ${max} (inclusive)`;
    }
    return n;
  };
  const page = int('page', 1, 1);
  const per_page = int('per_page', 50, 1, 100);
  const names = Object.keys(bad);
  if (names.length) {
    throw new ServiceError('rest_invalid_param', `Invalid parameter(s): ${names.join(', ')}`, 400, {
      params: bad,
      details: Object.fromEntries(names.map((n) => [n, { code: 'rest_out_of_bounds', message: bad[n], data: null }])),
    });
  }
  return { page, per_page };
}

/** Answer a paged discovery list the WordPress way: a bare array plus X-WP-Total, X-WP-TotalPages and Link. */
function sendPaged<T>(req: Request, res: Response, base: string, all: T[], page: number, per_page: number): void {
  const total = all.length;
  const pages = Math.ceil(total / per_page);
  res.setHeader('X-WP-Total', String(total));
  res.setHeader('X-WP-TotalPages', String(pages));
  // Links are built on the server's base URL (SITEFLEET_PUBLIC_URL or the address it listens on), never on the Host
  // header a caller sends (it may be malformed, or another site's name that we would reflect).
  const url = new URL(`${base}${req.originalUrl}`);
  const link = (p: number) => {
    url.searchParams.set('page', String(p));
    return url.toString();
  };
  const links: string[] = [];
  if (page > 1) links.push(`<${link(page - 1)}>; rel="prev"`);
  if (page < pages) links.push(`<${link(page + 1)}>; rel="next"`);
  if (links.length) res.setHeader('Link', links.join(', '));
  sendConditional(req, res, all.slice((page - 1) * per_page, page * per_page));
}

/** How a caller should use an ability, from its annotations (upstream's meta.annotations.instructions). */
export function instructionsOf(a: Ability): string {
  const { readonly, destructive, openWorld } = a.annotations;
  const how = readonly
    ? 'Read-only: safe to call at any time.'
    : destructive
      ? 'Destructive: call with dry_run=true first and show the preview, then call again with confirm=true.'
      : 'Changes data: confirm the input with the user before calling.';
  return openWorld ? `${how} Talks to child sites; a site that fails is reported on its own and never fails the call.` : how;
}

const NAME_ARG = { type: 'string', pattern: '^[a-z0-9-]+$', required: true };
const PAGING_ARGS = {
  page: { type: 'integer', minimum: 1, default: 1, required: false },
  per_page: { type: 'integer', minimum: 1, maximum: 100, default: 50, required: false },
};

/**
 * GET {abilities}: the WordPress namespace index of this door, as WordPress serves it for wp-abilities/v1. The door's
 * routes are the five below (written out here next to the handlers they describe); the abilities themselves are
 * described by GET /abilities.
 */
function abilitiesIndex(base: string, prefix: string) {
  const ns = prefix.replace(/^\/wp-json\//, '').replace(/^\/+|\/+$/g, '');
  const routes: Array<[string, string[], Record<string, unknown>, boolean]> = [
    ['', ['GET'], {}, true],
    [
      '/abilities',
      ['GET'],
      { ...PAGING_ARGS, category: { type: 'string', required: false, description: 'Only abilities of this category.' } },
      true,
    ],
    ['/abilities/(?P<namespace>[a-z0-9-]+)/(?P<name>[a-z0-9-]+)', ['GET'], { namespace: NAME_ARG, name: NAME_ARG }, false],
    [
      '/abilities/(?P<namespace>[a-z0-9-]+)/(?P<name>[a-z0-9-]+)/run',
      ['GET', 'POST', 'DELETE'],
      {
        namespace: NAME_ARG,
        name: NAME_ARG,
        input: {
          type: ['object', 'string', 'null'],
          required: false,
          description:
            "The ability's input: the query string (input[key]=v or JSON) for GET and DELETE, the JSON body's input key for POST. The method follows the ability's annotations.",
        },
      },
      false,
    ],
    ['/categories', ['GET'], PAGING_ARGS, true],
    ['/categories/(?P<slug>[a-z0-9-]+)', ['GET'], { slug: NAME_ARG }, false],
  ];
  return {
    namespace: ns,
    routes: Object.fromEntries(
      routes.map(([path, methods, args, self]) => [
        `/${ns}${path}`,
        {
          namespace: ns,
          methods,
          endpoints: [{ methods, args }],
          ...(self ? { _links: { self: [{ href: `${base}${prefix}${path}` }] } } : {}),
        },
      ]),
    ),
    _links: { up: [{ href: `${base}/wp-json/` }] },
  };
}

/** `publicBase`: the server's public base URL (SITEFLEET_PUBLIC_URL, else the address it listens on). */
export function abilitiesRouter(
  services: Services,
  registry: Registry,
  publicBase: string,
  throttle?: LoginThrottle,
  answers = new AnswerCache(),
): express.Router {
  const r = express.Router();
  const prefix = services.config.abilitiesPrefix;
  const base = `${publicBase}${prefix}`;
  const restBase = `${publicBase}${services.config.restPrefix}`;
  const docCache = new Map<string, unknown>();

  r.use(
    requireAuth(
      services,
      ['basic', 'bearer'],
      () => new ServiceError('svc_permission_denied', 'You must be logged in to access this ability.', 401),
      throttle,
    ),
  );
  r.use(cachedAnswers(services.store, answers, ['GET']));
  // Only a run by POST (PUT, PATCH) takes a body; GET and DELETE carry their input in the query string.
  const json = jsonBody('1mb');
  r.use((req, res, next) => (req.method === 'GET' || req.method === 'HEAD' || req.method === 'DELETE' ? next() : json(req, res, next)));
  r.use(bodyErrors);

  const describe = (req: Request, a: Ability) => {
    let doc = docCache.get(a.name);
    if (!doc) {
      const { input, output } = registry.schemas(a);
      const self = `${base}/abilities/svc/${a.name}`;
      doc = {
        name: `svc/${a.name}`,
        label: a.label,
        description: a.description,
        category: a.category,
        input_schema: withUpstreamNames(a, input),
        output_schema: withStatusUrlSchema(output),
        meta: {
          annotations: {
            readonly: a.annotations.readonly,
            destructive: a.annotations.destructive,
            idempotent: a.annotations.idempotent,
            // Upstream always sends this; the official MCP bridge reads it.
            instructions: instructionsOf(a),
          },
          show_in_rest: true,
        },
        _links: {
          self: [{ href: self, targetHints: { allow: ['GET'] } }],
          collection: [{ href: `${base}/abilities` }],
          'wp:action-run': [{ href: `${self}/run` }],
        },
      };
      docCache.set(a.name, doc);
    }
    return doc;
  };

  const find = (ns: string, name: string): Ability => {
    const a = ns === 'svc' && NAME.test(name) ? registry.get(name) : undefined;
    if (!a) throw new ServiceError('rest_ability_not_found', 'Ability not found.', 404);
    return a;
  };

  r.get('/', (req, res) => {
    sendConditional(req, res, abilitiesIndex(publicBase, prefix));
  });

  r.get('/abilities', (req, res) => {
    try {
      const { page, per_page } = listParams(req);
      const category = typeof req.query.category === 'string' ? req.query.category : undefined;
      const list = registry.abilities.filter((a) => !category || a.category === category).map((a) => describe(req, a));
      sendPaged(req, res, publicBase, list, page, per_page);
    } catch (e) {
      sendError(res, e);
    }
  });

  r.get('/abilities/:ns/:name', (req, res) => {
    try {
      sendConditional(req, res, describe(req, find(req.params.ns, req.params.name)));
    } catch (e) {
      sendError(res, e);
    }
  });

  r.get('/categories', (req, res) => {
    try {
      const { page, per_page } = listParams(req);
      const list = CATEGORIES.map((c) => ({
        ...c,
        meta: [],
        _links: {
          self: [{ href: `${base}/categories/${c.slug}`, targetHints: { allow: ['GET'] } }],
          collection: [{ href: `${base}/categories` }],
          abilities: [{ href: `${base}/abilities?category=${c.slug}` }],
        },
      }));
      sendPaged(req, res, publicBase, list, page, per_page);
    } catch (e) {
      sendError(res, e);
    }
  });

  r.get('/categories/:slug', (req, res) => {
    const c = CATEGORIES.find((x) => x.slug === req.params.slug);
    if (!c) return sendError(res, new ServiceError('rest_ability_category_not_found', 'Ability category not found.', 404));
    sendConditional(req, res, { ...c, meta: [] });
  });

  r.all('/abilities/:ns/:name/run', async (req, res) => {
    try {
      const a = find(req.params.ns, req.params.name);
      const methods = allowedMethods(a);
      if (!methods.includes(req.method)) {
        throw new ServiceError('rest_ability_invalid_method', METHOD_MESSAGE[annotationMethod(a.annotations)], 405);
      }
      if (req.method !== 'GET') {
        const result = await registry.run(a, readInput(req), { principal: req.principal!, coerce: true });
        res.setHeader('Allow', 'GET, POST, PUT, PATCH, DELETE');
        // A queued job's answer carries upstream's status_url: where this server's REST door serves the job.
        return res.json(withStatusUrl(a.name, result, restBase));
      }
      // A GET run: conditional (ETag, 304), served from the answer cache when the ability is store-pure.
      const key = STORE_PURE.has(a.name) ? cacheKey(req) : undefined;
      const fp = key ? storeFingerprint(services.store) : '';
      res.setHeader('Allow', 'GET, POST, PUT, PATCH, DELETE');
      const hit = key ? answers.get(key, fp) : undefined;
      if (hit) return sendRepresentation(req, res, hit);
      const rep = represent(res, await registry.run(a, readInput(req), { principal: req.principal!, coerce: true }));
      if (key && storeFingerprint(services.store) === fp) answers.set(key, fp, rep);
      sendRepresentation(req, res, rep);
    } catch (e) {
      sendError(res, e);
    }
  });

  return r;
}

/**
 * GET and DELETE carry input in the query string (input[key]=v, or input=<json text>); POST in the
 * JSON body's `input` key. Absent input is null.
 */
function readInput(req: Request): unknown {
  if (req.method === 'GET' || req.method === 'DELETE') {
    const url = req.originalUrl ?? req.url;
    const at = url.indexOf('?');
    const q = at < 0 ? undefined : readForm(url.slice(at + 1), 'query').input;
    if (typeof q === 'string' && /^\s*[{[]/.test(q)) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(q);
      } catch {
        throw new ServiceError('rest_invalid_json', 'Invalid JSON in the input query parameter.', 400);
      }
      assertBounded({ input: parsed });
      return parsed;
    }
    return q ?? null;
  }
  const body: unknown = req.body;
  if (body === undefined && hasBody(req)) {
    const type = String(req.headers['content-type'] ?? '').split(';')[0];
    throw new ServiceError(
      'rest_invalid_json',
      type
        ? `The request body is ${type}, which this API does not read: send Content-Type: application/json with {"input": {...}}.`
        : 'The request body has no Content-Type, so it was not read: send Content-Type: application/json with {"input": {...}}.',
      415,
    );
  }
  assertBounded(body);
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    if ('input' in body) return (body as { input: unknown }).input;
    const keys = Object.keys(body);
    if (keys.length) {
      const shown = keys.slice(0, 10).join(', ') + (keys.length > 10 ? ', …' : '');
      throw new ServiceError(
        'ability_invalid_input',
        `The JSON body has no "input" key (it has ${shown}): an ability's input goes under it, as {"input": {...}}.`,
        400,
        { params: { input: 'Missing: the body has no input key.' } },
      );
    }
  }
  return null;
}
