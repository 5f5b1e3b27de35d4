// Issue 20: the REST door describes itself. The OpenAPI 3.1 document (GET /openapi.json, `sitefleet openapi`,
// docs/openapi.json) and the WordPress-style namespace indexes (GET /wp-json/svc/v2, GET /wp-json/wp-abilities/v1)
// are derived from the route table; a maintained validator accepts the document; a route added to the table appears
// in both without anything else written.
import { readFileSync } from 'node:fs';
import { validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { listTags } from '../src/abilities/tags.js';
import { loadConfig } from '../src/config.js';
import { openApiDocument, restDocumentJson, routeIndex, undocumented, withDiscovery } from '../src/http/openapi.js';
import { READ, EDIT, route, type RestRoute } from '../src/http/rest-door.js';
import { restRoutes } from '../src/http/rest-routes.js';
import { listed } from '../src/http/routes/answers.js';
import { Tag } from '../src/abilities/schemas.js';
import { checkRestAnswer, restDocument } from './support/openapi-check.js';
import { cli as runCli } from './support/process.js';
import { seedSites, startServer, type TestServer } from './support/server.js';

const PREFIX = '/wp-json/svc/v2';
const docOf = (routes: readonly RestRoute[]) =>
  openApiDocument(withDiscovery(routes, { restPrefix: PREFIX, publicUrl: 'http://h' }), { restPrefix: PREFIX }) as any;
const express = (p: string) => p.replace(/:(\w+)/g, '{$1}');
/** A response of an operation, its $ref to components.responses followed. */
const resp = (doc: any, op: any, status: number | string) => {
  const r = op.responses[String(status)];
  return r?.$ref ? doc.components.responses[r.$ref.split('/').pop()] : r;
};

describe('the OpenAPI document', () => {
  const doc = docOf(restRoutes);

  it('is valid OpenAPI 3.1 for a maintained validator (@readme/openapi-parser)', async () => {
    const r = await validate(structuredClone(doc));
    expect('errors' in r ? r.errors : []).toEqual([]);
    expect(r.valid).toBe(true);
    expect(doc.openapi).toBe('3.1.0');
  });

  it('has every route and method of the table, each with an operation id, a permission and its answers', () => {
    let ops = 0;
    for (const row of restRoutes) {
      for (const m of row.methods) {
        const op = doc.paths[express(row.path)]?.[m.toLowerCase()];
        expect(op, `${m} ${row.path}`).toBeDefined();
        expect(op.security).toEqual([{ apiKey: [m === 'GET' ? 'read' : m === 'DELETE' ? 'delete' : 'write'] }]);
        expect(op.responses['200'].content['application/json'].schema).toBeDefined();
        expect(op.responses['401']).toEqual({ $ref: '#/components/responses/Unauthorized' });
        ops++;
      }
    }
    expect(ops).toBeGreaterThan(120);
    expect(
      new Set(
        Object.values(doc.paths)
          .flatMap((p: any) => Object.values(p).map((o: any) => o.operationId))
          .filter(Boolean),
      ).size,
    ).toBe(ops + 2); // + the index and the document themselves
  });

  it('leaves nothing undocumented: every argument typed, every reshaped answer declared', () => {
    expect(undocumented(withDiscovery(restRoutes, { restPrefix: PREFIX, publicUrl: '' }))).toEqual([]);
  });

  it('documents path and query parameters, bodies with their required fields, paging headers and errors', () => {
    const list = doc.paths['/sites'].get;
    const q = Object.fromEntries(list.parameters.map((p: any) => [p.name, p]));
    expect(q.per_page).toMatchObject({ in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100 } });
    expect(q.full_data.schema.description).toMatch(/full site records/i);
    expect(list.responses['200'].headers).toEqual({
      'X-WP-Total': { $ref: '#/components/headers/Total' },
      'X-WP-TotalPages': { $ref: '#/components/headers/TotalPages' },
    });

    const site = doc.paths['/sites/{id_or_domain}'];
    expect(site.parameters).toEqual([
      { name: 'id_or_domain', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9._-]+$' } },
    ]);
    expect(resp(doc, site.get, 404).description).toContain('svc_rest_invalid_site_id');
    expect(resp(doc, site.get, 404).content['application/json'].schema.allOf[1].properties.code.enum).toEqual([
      'rest_no_route',
      'svc_rest_invalid_site_id',
      'svc_rest_invalid_site_data',
      'svc_site_not_found',
    ]);

    const add = doc.paths['/tags/add'].post;
    const body = doc.components.schemas[add.requestBody.content['application/json'].schema.$ref.split('/').pop()];
    expect(body).toMatchObject({ type: 'object', required: ['name'], additionalProperties: false });
    expect(Object.keys(body.properties)).toEqual(['name', 'color']);
    expect(resp(doc, add, 409).description).toContain('svc_tag_exists');

    const cost = doc.paths['/costs'].get;
    expect(resp(doc, cost, 501).description).toBe('svc_module_not_available');
    expect(resp(doc, doc.paths['/sites/{id_or_domain}/sync'].post, 504).description).toBe('svc_child_timeout');
    expect(resp(doc, doc.paths['/sites/{id_or_domain}/sync'].post, 409).description).toBe(
      'svc_site_suspended, svc_site_disconnected, svc_site_keys_missing',
    );
    // A site's updates with refresh syncs it first: the same child failures as any route that talks to sites.
    expect(resp(doc, doc.paths['/updates/{id_or_domain}'].get, 409).description).toBe(
      'svc_site_suspended, svc_site_disconnected, svc_site_keys_missing',
    );
    expect(resp(doc, doc.paths['/posts/{id_or_domain}/{post_id}/update-status'].put, 422).description).toBe('svc_status_not_changed');
    expect(resp(doc, doc.paths['/tags/batch'].post, 413).description).toContain('svc_rest_request_entity_too_large');
    expect(doc.paths['/users/import'].post.requestBody.content['multipart/form-data'].schema.properties.csv_file).toEqual({
      type: 'string',
      format: 'binary',
    });
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('shows examples for the main routes, and each matches its own schema', () => {
    const examples: Array<[string, string]> = [];
    for (const [p, item] of Object.entries(doc.paths) as Array<[string, any]>) {
      for (const [m, op] of Object.entries(item) as Array<[string, any]>) {
        const ex = op?.responses?.['200']?.content?.['application/json']?.examples?.main?.value;
        if (!ex) continue;
        examples.push([m, p]);
        const path = p.replace('{id_or_domain}', '1').replace('{id}', '1');
        expect(() =>
          checkRestAnswer(m.toUpperCase(), path, 200, ex, new Headers({ 'x-wp-total': '1', 'x-wp-totalpages': '1' })),
        ).not.toThrow();
      }
    }
    expect(examples.map(([m, p]) => `${m} ${p}`)).toEqual(
      expect.arrayContaining(['get /sites', 'get /sites/{id_or_domain}', 'post /tags/add', 'get /tags']),
    );
  });

  it('is what docs/openapi.json holds (run npm run docs) and what `sitefleet openapi` prints', async () => {
    const text = restDocumentJson(restRoutes, loadConfig({}, {}));
    expect(readFileSync(new URL('../docs/openapi.json', import.meta.url), 'utf8')).toBe(text);
    const cli = await runCli(['openapi']);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toBe(text);
  });

  it('takes a route added to the table without anything else written, and flags what it hides', () => {
    const widgets = route(READ, '/widgets/:id', listTags, {
      input: (a) => ({ ...pickPage(a.args), search: a.args.q }),
      args: { q: z.string().optional().describe('Search words.') },
      answers: listed(Tag),
      output: (r) => ({ success: 1, total: r.total, data: r.items }),
    });
    const d = docOf([...restRoutes, widgets]);
    const op = d.paths['/widgets/{id}'].get;
    expect(op.operationId).toBe('listTagsWidgets');
    expect(op.parameters.map((p: any) => p.name)).toEqual(['page', 'per_page', 'q']);
    expect(d.paths['/widgets/{id}'].parameters[0]).toMatchObject({ name: 'id', in: 'path', schema: { type: 'integer' } });
    const index = routeIndex(
      withDiscovery([...restRoutes, widgets], { restPrefix: PREFIX, publicUrl: 'http://h' }),
      'http://h',
      PREFIX,
    ) as any;
    expect(index.routes['/svc/v2/widgets/(?P<id>\\d+)'].endpoints[0].args.q).toMatchObject({ type: 'string', required: false });

    // A row that reads an argument nothing types, or reshapes its answer without saying how, is listed.
    const loose = route(EDIT, '/gadgets', listTags, { input: (a) => ({ search: a.args.secret_word }), output: (r) => r.items });
    expect(undocumented([loose])).toEqual([
      'POST|PUT|PATCH /gadgets: argument "secret_word" has no schema (declare it in the row\'s args)',
      'POST|PUT|PATCH /gadgets: the answer is not declared (add answers to the row)',
    ]);
    expect(docOf([loose]).paths['/gadgets'].post).toBeDefined();
  });
});

const FILE_PART = '--zz\r\nContent-Disposition: form-data; name="f"; filename="a.txt"\r\n\r\nhi\r\n--zz--\r\n';

function pickPage(args: Record<string, unknown>) {
  return { page: args.page, per_page: args.per_page };
}

describe('the answer check of the test support', () => {
  it('refuses an answer that differs from its documented schema, and a missing paging header', () => {
    const h = new Headers({ 'x-wp-total': '0', 'x-wp-totalpages': '0' });
    expect(() => checkRestAnswer('GET', '/tags', 200, { success: 1, total: 0, data: [] }, h)).not.toThrow();
    expect(() => checkRestAnswer('GET', '/tags', 200, { success: 1, total: '0', data: [] }, h)).toThrow(/documented schema/);
    expect(() => checkRestAnswer('GET', '/tags', 200, { success: 1, total: 0, data: [], extra: 1 }, h)).toThrow(/documented schema/);
    expect(() => checkRestAnswer('GET', '/tags', 200, { success: 1, total: 0, data: [] }, new Headers())).toThrow(/X-WP-Total/);
    expect(() => checkRestAnswer('GET', '/tags/7', 404, { code: 'x', message: 'y' }, h)).toThrow(/documented schema/);
    // An error code the route does not document for that status.
    expect(() =>
      checkRestAnswer('GET', '/tags/7', 404, { code: 'svc_rest_invalid_tag_id', message: 'y', data: { status: 404 } }, h),
    ).not.toThrow();
    expect(() => checkRestAnswer('GET', '/tags/7', 404, { code: 'svc_cost_not_found', message: 'y', data: { status: 404 } }, h)).toThrow(
      /documented schema/,
    );
    expect(() => checkRestAnswer('GET', '/nowhere', 200, {}, h)).toThrow(/does not have/);
    expect(Object.keys(restDocument().paths)).toContain('/sites/{id_or_domain}/plugins');
  });
});

describe('the document and the indexes over HTTP', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
    await seedSites(s.services, 1);
  });
  afterAll(async () => {
    await s.close();
  });

  // Issue 27, defect 5: codes the door answers that the document did not list for the route (s.rest checks every
  // answer against it): a malformed JSON body or a file on a DELETE route, a malformed multipart form on any write.
  it.each([
    ['DELETE', '/sites/1/remove', 'application/json', '{"confirm":', 400, 'rest_invalid_json'],
    ['DELETE', '/tags/1/remove', 'multipart/form-data; boundary=zz', FILE_PART, 400, 'svc_no_file_expected'],
    ['POST', '/tags/add', 'multipart/form-data; boundary=zz', '--zz\r\nbroken', 400, 'svc_invalid_multipart'],
    ['DELETE', '/sites/1/remove', 'multipart/form-data', 'x', 400, 'svc_invalid_multipart'],
  ])('documents what %s %s answers to a bad body (%s)', async (method, path, type, body, status, code) => {
    const r = await s.rest(path, { method, body, headers: { 'content-type': type } });
    expect(r).toMatchObject({ status, body: { code } });
  });

  it('documents 503 svc_store_unavailable on every write, and on the reads whose refresh writes', () => {
    const doc = restDocument();
    const codes = (path: string, method: string) => JSON.stringify(doc.paths[path][method].responses['503'] ?? null);
    expect(codes('/sites/{id_or_domain}/remove', 'delete')).not.toBe('null');
    expect(codes('/updates', 'get')).not.toBe('null');
    expect(codes('/sites', 'get')).toBe('null');
  });

  it('serves GET /openapi.json as docs/openapi.json has it, to any key that may read', async () => {
    const r = await s.rest('/openapi.json', { token: s.creds.key.read });
    expect(r.status).toBe(200);
    expect(r.body).toEqual(JSON.parse(readFileSync(new URL('../docs/openapi.json', import.meta.url), 'utf8')));
  });

  it('needs credentials like every route: 401 without, 403 for a key that may not read', async () => {
    for (const path of ['/openapi.json', '']) {
      const none = await s.rest(path, { token: null });
      expect(none.status).toBe(401);
      expect(none.body.code).toBe('svc_rest_authentication_error');
      const writeOnly = await s.rest(path, { token: s.creds.key.write });
      expect(writeOnly.status).toBe(403);
    }
    const abilities = await fetch(`${s.abilitiesBase}`);
    expect(abilities.status).toBe(401);
  });

  it('serves the WordPress namespace index at GET /wp-json/svc/v2: routes, methods, args with types and required', async () => {
    const r = await s.rest('');
    expect(r.status).toBe(200);
    expect(r.body.namespace).toBe('svc/v2');
    const routes = r.body.routes;
    expect(Object.keys(routes)).toHaveLength(new Set(restRoutes.map((x) => x.path)).size + 2);
    expect(routes['/svc/v2/sites']).toMatchObject({
      namespace: 'svc/v2',
      methods: ['GET'],
      _links: { self: [{ href: `${s.restBase}/sites` }] },
    });
    expect(routes['/svc/v2/sites'].endpoints[0].args.per_page).toMatchObject({ type: 'integer', required: false, default: 20 });
    expect(routes['/svc/v2/tags/add'].endpoints[0]).toMatchObject({
      methods: ['POST'],
      args: { name: { type: 'string', required: true }, color: { required: false } },
    });
    expect(routes['/svc/v2/sites/(?P<id_or_domain>[A-Za-z0-9._-]+)/edit'].endpoints[0].args.id_or_domain).toMatchObject({
      type: 'string',
      required: true,
    });
    expect(routes['/svc/v2/tags/(?P<id>\\d+)'].methods).toEqual(['GET']);
    expect(routes['/svc/v2/clients/(?P<id>\\d+)/edit'].methods).toEqual(['POST', 'PUT', 'PATCH']);
    // The trailing-slash form answers the same.
    expect((await s.rest('/')).body).toEqual(r.body);
  });

  it('serves the abilities namespace index at GET /wp-json/wp-abilities/v1', async () => {
    const res = await fetch(s.abilitiesBase, { headers: { authorization: s.creds.viewer } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.namespace).toBe('wp-abilities/v1');
    expect(body.routes['/wp-abilities/v1/abilities']).toMatchObject({
      methods: ['GET'],
      endpoints: [{ methods: ['GET'], args: { per_page: { type: 'integer', required: false, default: 50 } } }],
    });
    const run = body.routes['/wp-abilities/v1/abilities/(?P<namespace>[a-z0-9-]+)/(?P<name>[a-z0-9-]+)/run'];
    expect(run.methods).toEqual(['GET', 'POST', 'DELETE']);
    expect(run.endpoints[0].args.input).toMatchObject({ required: false });
    expect(body.routes['/wp-abilities/v1/categories/(?P<slug>[a-z0-9-]+)'].methods).toEqual(['GET']);
  });
});
