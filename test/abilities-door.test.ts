// The abilities interface v1 (/wp-json/wp-abilities/v1): discovery, the run endpoint's order of checks,
// methods, query-string input, and the door side of every ability of issue 2 (envelopes, schema refusals in
// WordPress's words); the abilities' own rules are tested without a door in test/abilities/.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATIONS,
  ISSUE_ABILITIES,
  TAG_ABILITIES,
  expectError,
  invalidInput,
  seedFleet,
  seedTag,
  type Fleet,
} from './support/fixtures.js';
import { connectMcp } from './support/mcp.js';
import { basic, bracketQuery, seedSites, startServer, type TestServer } from './support/server.js';

/** A run request with full control over method, headers, body and query string. */
async function run(
  t: TestServer,
  name: string,
  o: { method?: string; body?: string; query?: string; auth?: string | null; contentType?: string | null } = {},
) {
  const headers: Record<string, string> = {};
  const auth = o.auth === undefined ? t.creds.admin : o.auth;
  if (auth) headers.authorization = auth;
  const ct = o.contentType === undefined ? 'application/json' : o.contentType;
  if (ct) headers['content-type'] = ct;
  const url = `${t.abilitiesBase}/abilities/svc/${name}/run${o.query ? `?${o.query}` : ''}`;
  const res = await fetch(url, { method: o.method ?? 'POST', headers, body: o.body });
  const text = await res.text();
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    /* keep text */
  }
  return { status: res.status, body, headers: res.headers };
}

async function discover(t: TestServer, path: string, auth: string | null = t.creds.admin) {
  const res = await fetch(`${t.abilitiesBase}${path}`, { headers: auth ? { authorization: auth } : {} });
  return { status: res.status, body: (await res.json()) as any, headers: res.headers };
}

const ids = (list: Array<{ id: number }>) => list.map((x) => x.id);

let s: TestServer;
let fleet: Fleet;

beforeAll(async () => {
  s = await startServer();
  fleet = await seedFleet(s.services);
});
afterAll(async () => {
  await s.close();
});

describe('discovery', () => {
  /** Every ability, 100 a page (the most per_page allows), checking each page's headers on the way. */
  async function everyAbility(): Promise<any[]> {
    const all: any[] = [];
    for (let page = 1; ; page++) {
      const r = await discover(s, `/abilities?per_page=100&page=${page}`);
      expect(r.status).toBe(200);
      expect(Array.isArray(r.body)).toBe(true);
      if (!r.body.length) return all;
      all.push(...r.body);
      const total = Number(r.headers.get('x-wp-total'));
      expect(r.headers.get('x-wp-totalpages')).toBe(String(Math.ceil(total / 100)));
      if (page === Math.ceil(total / 100)) expect(r.headers.get('link') ?? '').not.toContain('rel="next"');
      else expect(r.headers.get('link')).toContain('rel="next"');
    }
  }

  it('lists every ability as a bare JSON array with X-WP-Total and X-WP-TotalPages', async () => {
    const all = await everyAbility();
    expect(all.map((a: any) => a.name)).toEqual(expect.arrayContaining(ISSUE_ABILITIES.map((n) => `svc/${n}`)));
    const r = await discover(s, '/abilities?per_page=100&page=1');
    expect(r.headers.get('x-wp-total')).toBe(String(all.length));
    expect(new Set(all.map((a: any) => a.name)).size).toBe(all.length);
  });

  it('pages with per_page, keeps the query in Link headers and answers [] past the end', async () => {
    const all = await everyAbility();
    const pages = Math.ceil(all.length / 5);
    const first = await discover(s, '/abilities?per_page=5');
    expect(first.body.map((a: any) => a.name)).toEqual(all.slice(0, 5).map((a) => a.name));
    expect(first.headers.get('x-wp-totalpages')).toBe(String(pages));
    expect(first.headers.get('x-wp-total')).toBe(String(all.length));
    expect(first.headers.get('link')).toMatch(/<[^>]*per_page=5[^>]*page=2[^>]*>; rel="next"/);
    expect(first.headers.get('link')).not.toContain('rel="prev"');

    const second = await discover(s, '/abilities?per_page=5&page=2');
    expect(second.body.map((a: any) => a.name)).toEqual(all.slice(5, 10).map((a) => a.name));
    expect(second.headers.get('link')).toMatch(/page=1[^>]*>; rel="prev"/);
    expect(second.headers.get('link')).toMatch(/page=3[^>]*>; rel="next"/);

    const last = await discover(s, `/abilities?per_page=5&page=${pages}`);
    expect(last.headers.get('link')).toContain('rel="prev"');
    expect(last.headers.get('link')).not.toContain('rel="next"');

    const past = await discover(s, `/abilities?per_page=5&page=${pages + 3}`);
    expect(past.status).toBe(200);
    expect(past.body).toEqual([]);
    expect(past.headers.get('x-wp-total')).toBe(String(all.length));
  });

  it('pages 50 abilities at a time by default', async () => {
    const r = await discover(s, '/abilities');
    const total = Number(r.headers.get('x-wp-total'));
    expect(r.body).toHaveLength(Math.min(total, 50));
    expect(r.headers.get('x-wp-totalpages')).toBe(String(Math.ceil(total / 50)));
  });

  it.each([
    ['per_page=0', 'per_page', 'per_page must be between 1 (inclusive) and 100 (inclusive)'],
    ['per_page=101', 'per_page', 'per_page must be between 1 (inclusive) and 100 (inclusive)'],
    ['page=0', 'page', 'page must be greater than or equal to 1'],
    ['per_page=abc', 'per_page', 'per_page is not of type integer.'],
    ['page=-1', 'page', /page/],
  ])('refuses %s with rest_invalid_param naming the parameter', async (query, param, detail) => {
    for (const path of ['/abilities', '/categories']) {
      const r = await discover(s, `${path}?${query}`);
      expectError(r, 400, 'rest_invalid_param', `Invalid parameter(s): ${param}`);
      expect(Object.keys(r.body.data.params)).toEqual([param]);
      if (typeof detail === 'string') expect(r.body.data.params[param]).toBe(detail);
      else expect(r.body.data.params[param]).toMatch(detail);
    }
  });

  it('describes every ability with name svc/<slug>, an svc- category, schemas, boolean annotations and show_in_rest', async () => {
    const r = await discover(s, '/abilities?per_page=100');
    for (const a of r.body as any[]) {
      expect(a.name, a.name).toMatch(/^svc\/[a-z0-9-]+$/);
      expect(a.name.split('/')).toHaveLength(2);
      expect(typeof a.label).toBe('string');
      expect(a.label.length).toBeGreaterThan(0);
      expect(typeof a.description).toBe('string');
      expect(a.description.length).toBeGreaterThan(0);
      expect(a.category, a.name).toMatch(/^svc-[a-z0-9-]+$/);
      expect(a.input_schema, a.name).toMatchObject({ type: 'object' });
      expect(typeof a.output_schema, a.name).toBe('object');
      expect(Object.keys(a.output_schema).length, a.name).toBeGreaterThan(0);
      const ann = a.meta?.annotations ?? {};
      for (const k of ['readonly', 'destructive', 'idempotent']) expect(typeof ann[k], `${a.name} ${k}`).toBe('boolean');
      expect(a.meta.show_in_rest, a.name).toBe(true);
      expect(a._links['wp:action-run'][0].href).toBe(`${s.abilitiesBase}/abilities/${a.name}/run`);
    }
  });

  it('reports the reference annotations for the abilities of the issue', async () => {
    const r = await discover(s, '/abilities?per_page=100');
    const byName = new Map((r.body as any[]).map((a) => [a.name, a]));
    for (const name of ISSUE_ABILITIES) {
      const a = byName.get(`svc/${name}`);
      const { readonly, destructive, idempotent } = a.meta.annotations;
      expect([readonly, destructive, idempotent], name).toEqual(ANNOTATIONS[name]);
      expect(a.category, name).toBe(TAG_ABILITIES.includes(name as never) ? 'svc-tags' : 'svc-sites');
    }
  });

  it('filters by category; an unknown category is an empty list, not an error', async () => {
    const tags = await discover(s, '/abilities?category=svc-tags');
    expect(tags.status).toBe(200);
    expect(tags.body.map((a: any) => a.name).sort()).toEqual(TAG_ABILITIES.map((n) => `svc/${n}`).sort());
    expect(tags.headers.get('x-wp-total')).toBe(String(TAG_ABILITIES.length));
    const none = await discover(s, '/abilities?category=svc-nothing');
    expect(none.status).toBe(200);
    expect(none.body).toEqual([]);
    expect(none.headers.get('x-wp-total')).toBe('0');
  });

  it('describes one ability at /abilities/svc/<slug>, the same object as in the list', async () => {
    const list = await discover(s, '/abilities?per_page=100');
    const one = await discover(s, '/abilities/svc/get-site-v1');
    expect(one.status).toBe(200);
    expect(one.body).toEqual(list.body.find((a: any) => a.name === 'svc/get-site-v1'));
    expect(one.body.input_schema.required).toEqual(['site_id_or_domain']);
  });

  // Issue 27, defect 5: a client that validates its input against the discovered schema refused the upstream names
  // the abilities accept (adminpassword on add-site-v1, client_email on add-client-v1, user_confirmed on delete-site-v1).
  it('discovers the upstream input names the abilities accept, so that a client validating against the schema sends them', async () => {
    const ajv = new Ajv2020({ strict: false });
    const schemaOf = async (name: string) => (await discover(s, `/abilities/svc/${name}`)).body.input_schema;
    const addSite = ajv.compile(await schemaOf('add-site-v1'));
    const site = { url: 'https://new.example.com', admin: 'admin' };
    expect(addSite({ ...site, adminpassword: 'secret' })).toBe(true);
    expect(addSite({ ...site, admin_password: 'secret' })).toBe(true);
    expect(addSite({ ...site, adminpassword: 5 })).toBe(false); // typed as the field it stands for
    expect(addSite({ ...site, admin_password: 'x', nonsense: 1 })).toBe(false); // still closed
    const addClient = ajv.compile(await schemaOf('add-client-v1'));
    expect(addClient({ name: 'Acme', client_email: 'it@acme.example', address: 'Main St 1' })).toBe(true);
    expect(ajv.compile(await schemaOf('delete-site-v1'))({ site_id_or_domain: 1, dry_run: true, user_confirmed: true })).toBe(true);
    // The same input runs: the door takes what its discovery document says.
    const run = await s.ability('add-client-v1', { name: 'Upstream Names Ltd', client_email: 'x@upstream.example' });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ email: 'x@upstream.example' });
    // The MCP tool list leaves the second names out (for size); a tool call still takes them.
    const mcp = await connectMcp(s);
    try {
      const tools = new Map((await mcp.client.listTools()).tools.map((t) => [t.name, t.inputSchema.properties ?? {}]));
      expect(Object.keys(tools.get('add-site-v1')!)).toContain('admin_password');
      expect(Object.keys(tools.get('add-site-v1')!)).not.toContain('adminpassword');
      expect(Object.keys(tools.get('add-client-v1')!)).not.toContain('client_email');
      const viaMcp = await mcp.call('add-client-v1', { name: 'Upstream Names MCP', client_email: 'm@upstream.example' });
      expect(viaMcp).toMatchObject({ isError: false, body: { email: 'm@upstream.example' } });
    } finally {
      await mcp.close();
    }
  });

  it.each(['/abilities/svc/no-such-v1', '/abilities/core/get-site-v1', '/abilities/svc/Get-Site-V1'])(
    'answers %s with 404 rest_ability_not_found',
    async (path) => {
      expectError(await discover(s, path), 404, 'rest_ability_not_found', 'Ability not found.');
    },
  );

  it('lists the categories with slug, label and description, and every ability names one of them', async () => {
    const r = await discover(s, '/categories?per_page=100&page=1');
    expect(r.status).toBe(200);
    expect(Array.isArray(r.body)).toBe(true);
    expect(r.headers.get('x-wp-total')).toBe(String(r.body.length));
    expect(r.headers.get('x-wp-totalpages')).toBe('1');
    const slugs = r.body.map((c: any) => c.slug);
    expect(slugs).toEqual(expect.arrayContaining(['svc-sites', 'svc-tags']));
    for (const c of r.body) {
      expect(c.slug).toMatch(/^svc-[a-z0-9-]+$/);
      expect(typeof c.label).toBe('string');
      expect(typeof c.description).toBe('string');
    }
    const abilities = (await discover(s, '/abilities?per_page=100')).body as any[];
    for (const a of abilities) expect(slugs, a.name).toContain(a.category);
  });

  it('describes one category and answers an unknown one with 404 rest_ability_category_not_found', async () => {
    const one = await discover(s, '/categories/svc-tags');
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ slug: 'svc-tags' });
    expectError(await discover(s, '/categories/svc-nothing'), 404, 'rest_ability_category_not_found', 'Ability category not found.');
  });

  it('accepts a Bearer key for discovery as well as Basic', async () => {
    const r = await discover(s, '/abilities?per_page=100', `Bearer ${s.creds.key.read}`);
    expect(r.status).toBe(200);
    expect(r.body.length).toBeGreaterThanOrEqual(ISSUE_ABILITIES.length);
  });
});

describe('run: order of checks', () => {
  const wrongPassword = () => basic('admin', 'abcd efgh ijkl mnop qrst uvwx');

  it('answers wrong credentials with 401 before a malformed body, an unknown ability or a wrong method', async () => {
    expectError(await run(s, 'no-such-v1', { method: 'PUT', body: '{bad', auth: wrongPassword() }), 401, 'incorrect_password');
    expectError(await run(s, 'list-sites-v1', { method: 'POST', body: '{bad', auth: wrongPassword() }), 401, 'incorrect_password');
  });

  it('answers no credentials with 401 before an unknown ability', async () => {
    expectError(await run(s, 'no-such-v1', { method: 'GET', auth: null }), 401, 'svc_permission_denied');
  });

  it('answers a malformed JSON body with 400 rest_invalid_json before an unknown ability or a wrong method', async () => {
    const unknown = await run(s, 'no-such-v1', { body: '{"input": {' });
    expectError(unknown, 400, 'rest_invalid_json', 'Invalid JSON body passed.');
    expectError(await run(s, 'list-sites-v1', { method: 'POST', body: '{"input": ' }), 400, 'rest_invalid_json');
  });

  it('answers an unknown ability with 404 rest_ability_not_found before a wrong method', async () => {
    expectError(await run(s, 'no-such-v1', { method: 'PATCH', body: '{}' }), 404, 'rest_ability_not_found', 'Ability not found.');
    expectError(await run(s, 'list_sites', { method: 'GET' }), 404, 'rest_ability_not_found');
  });

  it('answers a wrong method with 405 before invalid input', async () => {
    const r = await run(s, 'list-sites-v1', { method: 'POST', body: JSON.stringify({ input: { per_page: 500 } }) });
    expectError(r, 405, 'rest_ability_invalid_method', 'Read-only abilities require GET method.');
  });

  it("answers invalid input with 400 before a viewer's missing permission", async () => {
    const r = await s.ability('add-tag-v1', { name: 'Nope', color: 'green' }, { auth: s.creds.viewer });
    expectError(r, 400, 'ability_invalid_input', invalidInput('add-tag-v1', 'input[color] does not match pattern ^#[0-9A-Fa-f]{6}$.'));
  });

  it('answers a viewer with 403 svc_permission_denied before looking up the target', async () => {
    const r = await s.ability('delete-tag-v1', { tag_id: 99999, confirm: true }, { auth: s.creds.viewer });
    expectError(r, 403, 'svc_permission_denied');
    const u = await s.ability('update-site-v1', { site_id_or_domain: 99999, name: 'x' }, { auth: s.creds.viewer });
    expectError(u, 403, 'svc_permission_denied');
  });

  it.each([
    ['list-sites-v1', 'DELETE', 'Read-only abilities require GET method.'],
    ['get-tag-v1', 'PUT', 'Read-only abilities require GET method.'],
    ['suspend-site-v1', 'GET', 'Abilities that perform updates require POST method.'],
    ['add-tag-v1', 'PATCH', 'Abilities that perform updates require POST method.'],
    ['delete-tag-v1', 'GET', 'Abilities that perform destructive actions require DELETE method.'],
    ['delete-tag-v1', 'PUT', 'Abilities that perform destructive actions require DELETE method.'],
  ])('answers %s over %s with 405 and the WordPress message', async (name, method, message) => {
    const r = await run(s, name, { method, body: method === 'GET' || method === 'DELETE' ? undefined : '{"input":{}}' });
    expectError(r, 405, 'rest_ability_invalid_method', message);
  });

  it('reports a missing required property before another invalid one', async () => {
    const r = await s.ability('add-tag-v1', { color: 'green' });
    expectError(r, 400, 'ability_invalid_input', invalidInput('add-tag-v1', 'name is a required property of input.'));
  });
});

describe('run: methods per ability', () => {
  // [ability, methods that must be accepted, methods that must be refused]
  const table: Array<[string, string[], string[]]> = [
    ['list-sites-v1', ['GET'], ['POST', 'PUT', 'PATCH', 'DELETE']],
    ['count-sites-v1', ['GET'], ['POST', 'PUT', 'PATCH', 'DELETE']],
    ['get-sites-basic-v1', ['GET'], ['POST', 'PUT', 'PATCH', 'DELETE']],
    ['list-tags-v1', ['GET'], ['POST', 'PUT', 'PATCH', 'DELETE']],
    ['get-site-v1', ['GET', 'POST'], ['PUT', 'PATCH', 'DELETE']],
    ['get-tag-v1', ['GET', 'POST'], ['PUT', 'PATCH', 'DELETE']],
    ['get-tag-sites-v1', ['GET', 'POST'], ['PUT', 'PATCH', 'DELETE']],
    ['get-tag-clients-v1', ['GET', 'POST'], ['PUT', 'PATCH', 'DELETE']],
    ['update-site-v1', ['POST'], ['GET', 'PUT', 'PATCH', 'DELETE']],
    ['delete-site-v1', ['POST'], ['GET', 'PUT', 'PATCH', 'DELETE']],
    ['suspend-site-v1', ['POST'], ['GET', 'PUT', 'PATCH', 'DELETE']],
    ['unsuspend-site-v1', ['POST'], ['GET', 'PUT', 'PATCH', 'DELETE']],
    ['suspend-sites-v1', ['POST'], ['GET', 'PUT', 'PATCH', 'DELETE']],
    ['add-tag-v1', ['POST'], ['GET', 'PUT', 'PATCH', 'DELETE']],
    ['update-tag-v1', ['POST'], ['GET', 'PUT', 'PATCH', 'DELETE']],
    ['delete-tag-v1', ['DELETE', 'POST'], ['GET', 'PUT', 'PATCH']],
  ];

  it('covers every ability of the issue', () => {
    expect(table.map(([n]) => n).sort()).toEqual([...ISSUE_ABILITIES].sort());
  });

  it.each(table)('%s accepts %j and refuses the rest with 405', async (name, accepted, refused) => {
    // An input that fails validation (or a lookup) shows the method check passed without changing anything.
    const probe = { tag_id: 99999, site_id_or_domain: 99999, site_ids_or_domains: [99999] };
    for (const method of accepted) {
      const r = await run(
        s,
        name,
        method === 'POST'
          ? { method, body: JSON.stringify({ input: probe }) }
          : { method, query: bracketQuery({ tag_id: 99999, site_id_or_domain: 99999 }) },
      );
      expect(r.status, `${name} ${method}`).not.toBe(405);
      expect(r.body.code, `${name} ${method}`).not.toBe('rest_ability_invalid_method');
    }
    for (const method of refused) {
      const r = await run(s, name, {
        method,
        body: method === 'GET' || method === 'DELETE' ? undefined : JSON.stringify({ input: probe }),
      });
      expectError(r, 405, 'rest_ability_invalid_method');
    }
  });

  it('answers HEAD on a read-only ability with 405 (HEAD is not GET here)', async () => {
    const r = await fetch(`${s.abilitiesBase}/abilities/svc/list-sites-v1/run`, {
      method: 'HEAD',
      headers: { authorization: s.creds.admin },
    });
    expect(r.status).toBe(405);
  });
});

describe('run: input from the query string and the body', () => {
  it('coerces bracketed query values to the schema types', async () => {
    const r = await run(s, 'list-sites-v1', { method: 'GET', query: 'input[per_page]=2&input[page]=2&input[status]=any' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ page: 2, per_page: 2, total: 6 });
    expect(ids(r.body.items)).toEqual([fleet.sites[2]!.id, fleet.sites[3]!.id]);
  });

  it('reads arrays as input[k][]=v and as input[k][0]=v', async () => {
    const [a, , c] = fleet.sites;
    const r1 = await run(s, 'list-sites-v1', { method: 'GET', query: `input[include][]=${a!.id}&input[include][]=${c!.id}` });
    expect(ids(r1.body.items)).toEqual([a!.id, c!.id]);
    const r2 = await run(s, 'list-sites-v1', { method: 'GET', query: `input[include][0]=${c!.id}&input[include][1]=${a!.id}` });
    expect(ids(r2.body.items)).toEqual([a!.id, c!.id]);
  });

  it('splits a scalar given for an array (never reads it as "all sites")', async () => {
    const [a, , c] = fleet.sites;
    const r = await run(s, 'list-sites-v1', { method: 'GET', query: `input[include]=${a!.id},${c!.id}` });
    expect(ids(r.body.items)).toEqual([a!.id, c!.id]);
    const count = await run(s, 'count-sites-v1', { method: 'GET', query: `input[tag_ids]=${fleet.tags.staging.id}` });
    expect(count.body).toEqual({ total: 1 });
  });

  it('accepts ?input=<json text>', async () => {
    const q = `input=${encodeURIComponent(JSON.stringify({ per_page: 1, status: 'suspended' }))}`;
    const r = await run(s, 'list-sites-v1', { method: 'GET', query: q });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ per_page: 1, total: 2 });
    expect(r.body.items).toHaveLength(1);
  });

  it('refuses ?input= with malformed JSON text', async () => {
    const r = await run(s, 'list-sites-v1', { method: 'GET', query: `input=${encodeURIComponent('{"per_page":')}` });
    expectError(r, 400, 'rest_invalid_json');
  });

  it('reads an empty ?input= and a missing query string as "use the defaults"', async () => {
    for (const query of ['input=', undefined]) {
      const r = await run(s, 'list-sites-v1', { method: 'GET', query });
      expect(r.status, String(query)).toBe(200);
      expect(r.body).toMatchObject({ page: 1, per_page: 20, total: 6 });
    }
  });

  it('reads an empty body sent with Content-Type: application/json as no input, never as a JSON error', async () => {
    const get = await run(s, 'count-sites-v1', { method: 'GET', contentType: 'application/json' });
    expect(get.status).toBe(200);
    expect(get.body).toEqual({ total: 6 });
    // get-site needs input: "no input" fails validation, not JSON parsing.
    const post = await run(s, 'get-site-v1', { method: 'POST', body: '', contentType: 'application/json' });
    expectError(post, 400, 'ability_invalid_input', invalidInput('get-site-v1', 'input is not of type object.'));
  });

  it('reads a POST body without an input key, or with a non-object input, as no input', async () => {
    for (const body of ['{}', '{"input": 5}', '{"input": [1]}']) {
      const r = await run(s, 'get-site-v1', { body });
      expectError(r, 400, 'ability_invalid_input', invalidInput('get-site-v1', 'input is not of type object.'));
    }
    // Fields beside the input key, not under it (issue #27 item 14): said so, rather than "input is not of type object".
    const r = await run(s, 'get-site-v1', { body: '{"site_id_or_domain": 1}' });
    expectError(r, 400, 'ability_invalid_input', /no "input" key \(it has site_id_or_domain\)/);
  });

  it('reads "false" and "0" in the query string as false', async () => {
    const site = fleet.sites[0]!;
    for (const v of ['false', '0', 'FALSE']) {
      const r = await run(s, 'get-site-v1', { method: 'GET', query: `input[site_id_or_domain]=${site.id}&input[include_stats]=${v}` });
      expect(r.status).toBe(200);
      expect(r.body, v).not.toHaveProperty('stats');
    }
    for (const v of ['true', '1']) {
      const r = await run(s, 'get-site-v1', { method: 'GET', query: `input[site_id_or_domain]=${site.id}&input[include_stats]=${v}` });
      expect(r.body.stats, v).toEqual({ plugin_updates: 2, theme_updates: 1, wp_update_available: true, health_score: 87 });
    }
  });

  it('refuses query values that do not fit the schema', async () => {
    const cases: Array<[string, string]> = [
      ['input[per_page]=1.5', 'input[per_page] is not of type integer.'],
      ['input[per_page]=abc', 'input[per_page] is not of type integer.'],
      ['input[status]=CONNECTED', 'input[status] is not one of any, connected, disconnected, suspended, and available_update.'],
    ];
    for (const [query, reason] of cases) {
      expectError(
        await run(s, 'list-sites-v1', { method: 'GET', query }),
        400,
        'ability_invalid_input',
        invalidInput('list-sites-v1', reason),
      );
    }
    const b = await run(s, 'get-site-v1', { method: 'GET', query: 'input[site_id_or_domain]=1&input[include_stats]=yes' });
    expectError(b, 400, 'ability_invalid_input', invalidInput('get-site-v1', 'input[include_stats] is not of type boolean.'));
  });
});

describe('paging on every paged ability', () => {
  const paged: Array<[string, Record<string, unknown>]> = [
    ['list-sites-v1', {}],
    ['get-sites-basic-v1', {}],
    ['list-tags-v1', {}],
    ['get-tag-sites-v1', { tag_id: 1 }],
    ['get-tag-clients-v1', { tag_id: 1 }],
  ];
  it.each(paged)('%s refuses page < 1 and per_page outside 1-100, naming the parameter', async (name, base) => {
    for (const [param, value] of [
      ['page', 0],
      ['page', -3],
      ['per_page', 0],
      ['per_page', 101],
    ] as const) {
      const r = await s.ability(name, { ...base, [param]: value }, { method: 'GET' });
      expectError(r, 400, 'ability_invalid_input', new RegExp(`Reason: input\\[${param}\\] must be`));
      expect(Object.keys(r.body.data.params ?? {}), `${name} ${param}=${value}`).toEqual([param]);
    }
    for (const per_page of [1, 100]) expect((await s.ability(name, { ...base, per_page }, { method: 'GET' })).status).toBe(200);
  });
});

describe('list-sites-v1', () => {
  const list = (input: unknown) => s.ability('list-sites-v1', input, { method: 'GET' });

  // The default listing moved to test/abilities/sites.test.ts; a GET without input is read as the defaults in
  // 'run: input from the query string and the body'.
  it.each([
    [{ per_page: 0 }, 'input[per_page] must be between 1 (inclusive) and 100 (inclusive)'],
    [{ per_page: 101 }, 'input[per_page] must be between 1 (inclusive) and 100 (inclusive)'],
    [{ page: 0 }, 'input[page] must be greater than or equal to 1'],
    [{ client_id: 0 }, 'input[client_id] must be greater than or equal to 1'],
    [{ status: 'online' }, 'input[status] is not one of any, connected, disconnected, suspended, and available_update.'],
    [{ foo: 1 }, 'foo is not a valid property of Object.'],
  ])('refuses %j with ability_invalid_input', async (input, reason) => {
    expectError(await list(input), 400, 'ability_invalid_input', invalidInput('list-sites-v1', reason));
  });
});

describe('get-site-v1', () => {
  const get = (input: unknown, method = 'POST') => s.ability('get-site-v1', input, { method });

  // The rules (fields, include_stats, lookups by id and domain, 404 messages) moved to test/abilities/sites.test.ts.
  it('answers GET the same as POST', async () => {
    const a = fleet.sites[0]!;
    const post = await get({ site_id_or_domain: a.id });
    expect(post.status).toBe(200);
    expect(post.body.id).toBe(a.id);
    const viaGet = await get({ site_id_or_domain: a.id }, 'GET');
    expect(viaGet.status).toBe(200);
    expect(viaGet.body).toEqual(post.body);
  });

  it('answers an unknown id over GET with 404 svc_site_not_found', async () => {
    expectError(await get({ site_id_or_domain: 99999 }, 'GET'), 404, 'svc_site_not_found');
  });

  it.each([
    [{}, 'site_id_or_domain is a required property of input.'],
    [{ site_id_or_domain: [1] }, 'input[site_id_or_domain] is not of type integer,string.'],
    [{ site_id_or_domain: 1, include_stats: 'maybe' }, 'input[include_stats] is not of type boolean.'],
    [{ site_id_or_domain: 1, extra: true }, 'extra is not a valid property of Object.'],
    [{ include_stats: 'maybe' }, 'site_id_or_domain is a required property of input.'],
  ])('refuses %j with ability_invalid_input', async (input, reason) => {
    expectError(await get(input), 400, 'ability_invalid_input', invalidInput('get-site-v1', reason));
  });

  it('refuses a GET without any input', async () => {
    expectError(await get(undefined, 'GET'), 400, 'ability_invalid_input', invalidInput('get-site-v1', 'input is not of type object.'));
  });
});

describe('count-sites-v1', () => {
  const count = (input: unknown) => s.ability('count-sites-v1', input, { method: 'GET' });

  it('refuses an unknown status and a non-integer tag id', async () => {
    expectError(
      await count({ status: 'gone' }),
      400,
      'ability_invalid_input',
      invalidInput('count-sites-v1', 'input[status] is not one of any, connected, disconnected, suspended, and available_update.'),
    );
    expectError(
      await count({ tag_ids: ['x'] }),
      400,
      'ability_invalid_input',
      invalidInput('count-sites-v1', 'input[tag_ids][0] is not of type integer.'),
    );
  });
});

describe('get-sites-basic-v1', () => {
  const basicList = (input: unknown) => s.ability('get-sites-basic-v1', input, { method: 'GET' });

  // The listing and paging rules moved to test/abilities/sites.test.ts.
  it('reads a GET without input as the defaults', async () => {
    const r = await basicList(undefined);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ page: 1, per_page: 20 });
  });

  it('refuses per_page 9999', async () => {
    expectError(
      await basicList({ per_page: 9999 }),
      400,
      'ability_invalid_input',
      invalidInput('get-sites-basic-v1', 'input[per_page] must be between 1 (inclusive) and 100 (inclusive)'),
    );
  });
});

describe('list-tags-v1', () => {
  const list = (input: unknown) => s.ability('list-tags-v1', input, { method: 'GET' });

  it.each([
    [{ per_page: 9999 }, 'input[per_page] must be between 1 (inclusive) and 100 (inclusive)'],
    [{ include: ['a'] }, 'input[include][0] is not of type integer.'],
    [{ colour: 'x' }, 'colour is not a valid property of Object.'],
  ])('refuses %j', async (input, reason) => {
    expectError(await list(input), 400, 'ability_invalid_input', invalidInput('list-tags-v1', reason));
  });
});

describe('get-tag-v1', () => {
  // The tag's fields and the 404 are rules (test/abilities/tags.test.ts); here, the door answers the same over both methods.
  it('returns one tag over POST and GET', async () => {
    const t = fleet.tags.production;
    const post = await s.ability('get-tag-v1', { tag_id: t.id });
    expect(post.status).toBe(200);
    expect(post.body.id).toBe(t.id);
    const get = await s.ability('get-tag-v1', { tag_id: t.id }, { method: 'GET' });
    expect(get.status).toBe(200);
    expect(get.body).toEqual(post.body);
  });

  it.each([
    [{ tag_id: 0 }, 'input[tag_id] must be greater than or equal to 1'],
    [{ tag_id: 'invalid' }, 'input[tag_id] is not of type integer.'],
    [{}, 'tag_id is a required property of input.'],
  ])('refuses %j', async (input, reason) => {
    expectError(await s.ability('get-tag-v1', input), 400, 'ability_invalid_input', invalidInput('get-tag-v1', reason));
  });
});

describe('get-tag-sites-v1 and get-tag-clients-v1', () => {
  // What they list and how they page are rules (test/abilities/tags.test.ts); here, paging read from a GET query string.
  it('read page and per_page from a GET query string', async () => {
    const t = fleet.tags.production;
    const key = (u: string) => u.replace(/^https?:\/\/(www\.)?/, '');
    const byUrl = fleet.sites.slice(0, 3).sort((a, b) => (key(a.url) < key(b.url) ? -1 : 1));
    const p2 = await s.ability('get-tag-sites-v1', { tag_id: t.id, page: 2, per_page: 2 }, { method: 'GET' });
    expect(p2.status).toBe(200);
    expect(p2.body.sites.map((x: any) => x.id)).toEqual([byUrl[2]!.id]);
    expect(p2.body.total).toBe(3);
    const p = await s.ability('get-tag-clients-v1', { tag_id: t.id, per_page: 1, page: 2 }, { method: 'GET' });
    expect(p.status).toBe(200);
    expect(p.body.clients.map((c: any) => c.id)).toEqual([fleet.clients[0]!.id]);
  });

  it.each(['get-tag-sites-v1', 'get-tag-clients-v1'])('%s answers bad paging and a missing tag_id with 400', async (name) => {
    expectError(
      await s.ability(name, { tag_id: fleet.tags.production.id, per_page: 101 }),
      400,
      'ability_invalid_input',
      invalidInput(name, 'input[per_page] must be between 1 (inclusive) and 100 (inclusive)'),
    );
    expectError(await s.ability(name, {}), 400, 'ability_invalid_input', invalidInput(name, 'tag_id is a required property of input.'));
  });
});

// Abilities that change things run on a server of their own; every test makes the sites and tags it uses.
describe('abilities that change things', () => {
  let w: TestServer;
  let n = 0;
  const newSite = async (fields: Record<string, unknown> = {}) => {
    n += 1;
    const [site] = await seedSites(w.services, 1, () => ({ url: `https://w${n}.example.com/`, name: `W${n}`, ...fields }));
    return site!;
  };
  const newTag = async (name?: string, siteIds: number[] = [], color: string | null = null) => {
    n += 1;
    return seedTag(w.services, name ?? `tag-${n}`, siteIds, color);
  };

  beforeAll(async () => {
    w = await startServer();
  });
  afterAll(async () => {
    await w.close();
  });

  describe('update-site-v1', () => {
    it.each([
      [{ name: 5 }, 'input[name] is not of type string.'],
      [{ name: '' }, 'input[name] must be at least 1 character long.'],
      [{ client_id: 'abc' }, 'input[client_id] is not of type integer,null.'],
      [{ tags: 'x' }, 'input[tags][0] is not of type integer.'],
      [{ url: 'https://elsewhere.example/' }, 'url is not a valid property of Object.'],
    ])('refuses %j', async (input, reason) => {
      const site = await newSite();
      const r = await w.ability('update-site-v1', { site_id_or_domain: site.id, ...input });
      expectError(r, 400, 'ability_invalid_input', invalidInput('update-site-v1', reason));
    });

    it('refuses a missing site identifier', async () => {
      expectError(
        await w.ability('update-site-v1', { name: 'x' }),
        400,
        'ability_invalid_input',
        invalidInput('update-site-v1', 'site_id_or_domain is a required property of input.'),
      );
    });
  });

  describe('delete-site-v1', () => {
    it('deletes a site named by domain, with confirm given as a query-style string', async () => {
      const site = await newSite();
      const r = await w.ability('delete-site-v1', { site_id_or_domain: site.url.replace('https://', 'www.'), confirm: 'true' });
      expect(r.status).toBe(200);
      expect(r.body.site_id).toBe(site.id);
    });

    it('accepts the user_confirmed key that bridges send with a destructive call, and ignores it (as the README says)', async () => {
      const site = await newSite();
      const r = await w.ability('delete-site-v1', { site_id_or_domain: site.id, dry_run: true, user_confirmed: true });
      expect(r.status).toBe(200);
      expect(r.body.dry_run).toBe(true);
      // Any other unknown key is refused, naming it (no field is dropped silently).
      expectError(
        await w.ability('delete-site-v1', { site_id_or_domain: site.id, dry_run: true, forcefully: true }),
        400,
        'ability_invalid_input',
        invalidInput('delete-site-v1', 'forcefully is not a valid property of Object.'),
      );
    });

    it('refuses a confirm that is not a boolean', async () => {
      const site = await newSite();
      expectError(
        await w.ability('delete-site-v1', { site_id_or_domain: site.id, confirm: 'yes' }),
        400,
        'ability_invalid_input',
        invalidInput('delete-site-v1', 'input[confirm] is not of type boolean.'),
      );
    });
  });

  describe('suspend-site-v1 and unsuspend-site-v1', () => {
    // The 404s for unknown sites are rules (test/abilities/sites.test.ts); the schema refusals stay here.
    it.each(['suspend-site-v1', 'unsuspend-site-v1'])('%s answers bad input with 400', async (name) => {
      expectError(
        await w.ability(name, {}),
        400,
        'ability_invalid_input',
        invalidInput(name, 'site_id_or_domain is a required property of input.'),
      );
      expectError(
        await w.ability(name, { site_id_or_domain: true }),
        400,
        'ability_invalid_input',
        invalidInput(name, 'input[site_id_or_domain] is not of type integer,string.'),
      );
    });
  });

  describe('suspend-sites-v1', () => {
    it.each([
      [{}, 'site_ids_or_domains is a required property of input.'],
      [{ site_ids_or_domains: 5 }, 'input[site_ids_or_domains] is not of type array.'],
      [{ site_ids_or_domains: [1], confirm: true }, 'confirm is not a valid property of Object.'],
    ])('refuses %j', async (input, reason) => {
      expectError(await w.ability('suspend-sites-v1', input), 400, 'ability_invalid_input', invalidInput('suspend-sites-v1', reason));
    });
  });

  describe('add-tag-v1', () => {
    it.each(['green', '#abc', '#GGGGGG', '21ba45', '#21ba45ff'])('refuses the colour %s, which is not #RRGGBB', async (color) => {
      expectError(
        await w.ability('add-tag-v1', { name: `c-${color}`, color }),
        400,
        'ability_invalid_input',
        invalidInput('add-tag-v1', 'input[color] does not match pattern ^#[0-9A-Fa-f]{6}$.'),
      );
    });

    it.each([
      [{ name: '' }, 'input[name] must be at least 1 character long.'],
      [{ name: 12 }, 'input[name] is not of type string.'],
      [{}, 'name is a required property of input.'],
      [{ name: 'x', sites: [] }, 'sites is not a valid property of Object.'],
    ])('refuses %j', async (input, reason) => {
      expectError(await w.ability('add-tag-v1', input), 400, 'ability_invalid_input', invalidInput('add-tag-v1', reason));
    });
  });

  describe('update-tag-v1', () => {
    // The 409s and 404s are rules (test/abilities/tags.test.ts); the schema refusals stay here.
    it('answers bad input with 400', async () => {
      const t = await newTag();
      expectError(
        await w.ability('update-tag-v1', { tag_id: t.id, color: 'blue' }),
        400,
        'ability_invalid_input',
        invalidInput('update-tag-v1', 'input[color] does not match pattern ^#[0-9A-Fa-f]{6}$.'),
      );
      expectError(
        await w.ability('update-tag-v1', { name: 'x' }),
        400,
        'ability_invalid_input',
        invalidInput('update-tag-v1', 'tag_id is a required property of input.'),
      );
    });
  });

  describe('delete-tag-v1', () => {
    it('reads confirm=false and dry_run=false/0 in a DELETE query string as false', async () => {
      const t = await newTag();
      for (const query of ['input[confirm]=false', 'input[confirm]=0', 'input[dry_run]=false', 'input[dry_run]=0&input[confirm]=0']) {
        const r = await w.ability('delete-tag-v1', undefined, { method: 'DELETE', query: `input[tag_id]=${t.id}&${query}` });
        expectError(r, 400, 'svc_confirmation_required');
      }
      expect((await w.ability('get-tag-v1', { tag_id: t.id })).status).toBe(200);
      const preview = await w.ability('delete-tag-v1', undefined, { method: 'DELETE', query: `input[tag_id]=${t.id}&input[dry_run]=true` });
      expect(preview.status).toBe(200);
      expect(preview.body.dry_run).toBe(true);
    });

    // What a deletion removes and keeps is a rule (test/abilities/tags.test.ts); here, DELETE and POST both run it.
    it('deletes with confirm over DELETE and over POST', async () => {
      const t1 = await newTag();
      const t2 = await newTag();
      const viaDelete = await w.ability('delete-tag-v1', { tag_id: t1.id, confirm: true }, { method: 'DELETE' });
      expect(viaDelete.status).toBe(200);
      expect(viaDelete.body).toMatchObject({ deleted: true, tag_id: t1.id, tag_name: t1.name });
      const viaPost = await w.ability('delete-tag-v1', { tag_id: t2.id, confirm: true });
      expect(viaPost.status).toBe(200);
      expect(viaPost.body).toMatchObject({ deleted: true, tag_id: t2.id });
      expectError(await w.ability('get-tag-v1', { tag_id: t1.id }), 404, 'svc_tag_not_found');
    });

    it('refuses an unknown key such as user_confirmed with ability_invalid_input', async () => {
      const t = await newTag();
      expectError(
        await w.ability('delete-tag-v1', { tag_id: t.id, confirm: true, user_confirmed: true }),
        400,
        'ability_invalid_input',
        invalidInput('delete-tag-v1', 'user_confirmed is not a valid property of Object.'),
      );
      expect((await w.ability('get-tag-v1', { tag_id: t.id })).status).toBe(200);
    });
  });
});
