// Test support: every REST answer a test receives is checked against the OpenAPI document's schema for its route,
// method and status (TestServer.rest calls checkRestAnswer), so a route whose answers drift from what it documents
// fails whichever test exercises it — routes added later are covered without being listed anywhere.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { openApiDocument, withDiscovery } from '../../src/http/openapi.js';
import { restRoutes } from '../../src/http/rest-routes.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const PREFIX = '/wp-json/svc/v2';

type Json = Record<string, any>;
interface Template {
  path: string;
  segments: string[];
  literals: number;
}

let state: { doc: Json; ajv: Ajv2020; templates: Template[]; validators: Map<string, ValidateFunction> } | undefined;

/** The document the suite checks answers against: the one the door serves. */
export function restDocument(): Json {
  return load().doc;
}

function load() {
  if (state) return state;
  const doc = openApiDocument(withDiscovery(restRoutes, { restPrefix: PREFIX, publicUrl: 'http://127.0.0.1' }), { restPrefix: PREFIX });
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json');
  const templates = Object.keys(doc.paths as object)
    .map((path) => {
      const segments = path.split('/').filter(Boolean);
      return { path, segments, literals: segments.filter((s) => !s.startsWith('{')).length };
    })
    .sort((x, y) => y.literals - x.literals);
  state = { doc, ajv, templates, validators: new Map() };
  return state;
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

function paramMatches(doc: Json, template: string, name: string, value: string): boolean {
  const p = (doc.paths[template].parameters ?? []).find((x: Json) => x.name === name);
  const schema = p?.schema ?? {};
  if (schema.type === 'integer') return /^\d+$/.test(value);
  return schema.pattern ? new RegExp(schema.pattern).test(value) : value !== '';
}

/** The documented path a request path (relative to the REST prefix, query allowed) is routed to, or undefined. */
export function documentedPath(path: string): string | undefined {
  const { doc, templates } = load();
  const segs = path
    .split('?')[0]!
    .split('/')
    .filter(Boolean)
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
  for (const t of templates) {
    if (t.segments.length !== segs.length) continue;
    if (t.segments.every((s, i) => (s.startsWith('{') ? paramMatches(doc, t.path, s.slice(1, -1), segs[i]!) : s === segs[i])))
      return t.path;
  }
  return undefined;
}

function validator(ptr: string): ValidateFunction {
  const s = load();
  let v = s.validators.get(ptr);
  if (!v) {
    v = s.ajv.getSchema(`openapi.json#${ptr}`);
    if (!v) throw new Error(`No schema at ${ptr} in the OpenAPI document.`);
    s.validators.set(ptr, v);
  }
  return v;
}

/** Throws when an answer does not match the document: its schema for the route, method and status, and its headers. */
export function checkRestAnswer(method: string, path: string, status: number, body: unknown, headers: Headers): void {
  if (method === 'HEAD' || status === 431) return; // no body; the HTTP parser's own refusal comes before any route
  // The path as fetch sends it: "." and ".." segments resolved (/sites/. is /sites/); one that leaves the door is not its answer.
  const sent = new URL(`http://h${PREFIX}${path.startsWith('/') || path === '' ? path : `/${path}`}`);
  if (sent.pathname !== PREFIX && !sent.pathname.startsWith(`${PREFIX}/`)) return;
  path = sent.pathname.slice(PREFIX.length) + sent.search;
  const { doc } = load();
  const template = documentedPath(path);
  const op: Json | undefined = template ? doc.paths[template][method.toLowerCase()] : undefined;
  let ptr: string;
  let response: Json;
  if (!op) {
    ptr = pointer('', 'components', 'responses', 'Error');
    response = doc.components.responses.Error;
  } else {
    const key = String(status) in op.responses ? String(status) : 'default';
    ptr = pointer('', 'paths', template!, method.toLowerCase(), 'responses', key);
    response = op.responses[key];
    if (response.$ref) {
      ptr = response.$ref.slice(1);
      response = doc.components.responses[response.$ref.split('/').pop()];
    }
  }
  const where = `${method} ${path} → ${status}`;
  if (status < 400 && !op) throw new Error(`${where}: answered success on a route the OpenAPI document does not have.`);
  for (const [name, h] of Object.entries((response.headers ?? {}) as Json)) {
    const header = h.$ref ? doc.components.headers[h.$ref.split('/').pop()] : h;
    if (header.required && !headers.has(name)) throw new Error(`${where}: header ${name} is documented as required and missing.`);
  }
  if (!response.content) {
    // A documented answer without a body (304 Not Modified).
    if (body !== null && body !== '') throw new Error(`${where}: answered a body where the document says there is none.`);
    return;
  }
  const validate = validator(`${ptr}/content/application~1json/schema`);
  if (!validate(body)) {
    throw new Error(
      `${where}: the answer does not match its documented schema (${template ?? 'no route'}):\n` +
        `${JSON.stringify(validate.errors?.slice(0, 8), null, 1)}\nbody: ${JSON.stringify(body).slice(0, 1500)}`,
    );
  }
}
