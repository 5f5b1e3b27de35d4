// Credentials on every door: none, wrong, revoked; which schemes each door takes; the key permission
// matrix (read → GET, write → POST/PUT/PATCH/DELETE, read_write → all, delete → DELETE); viewer vs admin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_HEADERS, MCP_INITIALIZE, expectError, seedFleet, seedTag, type Fleet } from './support/fixtures.js';
import { basic, startServer, type TestServer } from './support/server.js';

let s: TestServer;
let fleet: Fleet;
let n = 0;
const unique = (p: string) => {
  n += 1;
  return `${p}-${n}`;
};

beforeAll(async () => {
  // These tests fail logins on purpose, many times from one address: keep the login throttle out of the way.
  s = await startServer({ config: { loginFailureLimit: '1000' } as never });
  fleet = await seedFleet(s.services);
});
afterAll(async () => {
  await s.close();
});

/** A request to any URL of the server with exactly this Authorization header (or none). */
async function call(path: string, auth: string | null, init: { method?: string; body?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...init.headers };
  if (auth) headers.authorization = auth;
  if (init.body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
  const res = await fetch(`${s.url}${path}`, { method: init.method ?? 'GET', headers, body: init.body });
  const text = await res.text();
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  return { status: res.status, body, headers: res.headers };
}

const REST = '/wp-json/svc/v2';
const AB = '/wp-json/wp-abilities/v1';
const bearer = (t: string) => `Bearer ${t}`;

describe('no credentials', () => {
  it.each([
    ['REST list', 'GET', `${REST}/sites`],
    ['REST write', 'POST', `${REST}/tags/add`],
    ['REST unknown path', 'GET', `${REST}/no/such/route`],
    ['abilities run', 'GET', `${AB}/abilities/svc/list-sites-v1/run`],
    ['abilities run of an unknown ability', 'POST', `${AB}/abilities/svc/no-such-v1/run`],
    ['abilities discovery', 'GET', `${AB}/abilities`],
    ['one ability', 'GET', `${AB}/abilities/svc/list-sites-v1`],
    ['categories', 'GET', `${AB}/categories`],
    ['abilities unknown path', 'GET', `${AB}/nothing-here`],
    ['MCP', 'POST', '/mcp'],
    ['an unknown path', 'GET', '/no/such/path'],
    ['the console API (the root redirects to the console page)', 'GET', '/console/api/session'],
  ])('answers %s with 401 {code, message, data:{status:401}}', async (_label, method, path) => {
    const r = await call(
      path,
      null,
      method === 'POST'
        ? { method, body: path === '/mcp' ? MCP_INITIALIZE : '{}', headers: path === '/mcp' ? MCP_HEADERS : {} }
        : { method },
    );
    expect(r.status).toBe(401);
    expect(typeof r.body.code).toBe('string');
    expect(typeof r.body.message).toBe('string');
    expect(r.body.data).toEqual(expect.objectContaining({ status: 401 }));
  });

  it('uses svc_permission_denied on the abilities run endpoint and svc_rest_authentication_error on REST', async () => {
    expectError(
      await call(`${AB}/abilities/svc/list-sites-v1/run`, null),
      401,
      'svc_permission_denied',
      'You must be logged in to access this ability.',
    );
    expectError(await call(`${REST}/sites`, null), 401, 'svc_rest_authentication_error', 'You are not authenticated.');
  });

  it('does not change anything', async () => {
    const name = unique('anon');
    await call(`${REST}/tags/add`, null, { method: 'POST', body: JSON.stringify({ name }) });
    await call(`${AB}/abilities/svc/add-tag-v1/run`, null, { method: 'POST', body: JSON.stringify({ input: { name } }) });
    expect((await s.rest(`/tags?search=${name}`)).body.total).toBe(0);
  });
});

describe('wrong credentials', () => {
  const wrongToken = 'sf_000000000000_' + 'A'.repeat(32);

  it.each([
    ['an unknown key', bearer(wrongToken)],
    ['a malformed token', 'Bearer not-a-token'],
    ['an empty Bearer', 'Bearer '],
    ['a known key id with a wrong secret', () => bearer(s.creds.key.read_write.slice(0, -4) + 'AAAA')],
    ['HTTP Basic (REST takes Bearer only)', () => s.creds.admin],
    ['an unknown scheme', 'Token abc'],
  ])('REST answers %s with 401', async (_label, auth) => {
    const a = typeof auth === 'function' ? auth() : auth;
    expectError(await call(`${REST}/sites`, a), 401, 'svc_rest_authentication_error');
    expectError(await call(`${REST}/no/such/route`, a), 401, 'svc_rest_authentication_error');
  });

  it.each([
    ['a wrong application password', () => basic('admin', 'abcd efgh ijkl mnop qrst uvwx')],
    ['an unknown user', () => basic('nobody', 'abcd efgh ijkl mnop qrst uvwx')],
    [
      "the admin name with the viewer's password",
      () => basic('admin', Buffer.from(s.creds.viewer.slice(6), 'base64').toString().split(':')[1]!),
    ],
  ])('the abilities door answers %s with 401 incorrect_password, on run and discovery', async (_label, auth) => {
    expectError(await call(`${AB}/abilities/svc/list-sites-v1/run`, auth()), 401, 'incorrect_password');
    expectError(await call(`${AB}/abilities/svc/no-such-v1/run`, auth(), { method: 'POST', body: '{bad' }), 401, 'incorrect_password');
    expectError(await call(`${AB}/abilities`, auth()), 401, 'incorrect_password');
  });

  it('the abilities door answers malformed Basic credentials and a wrong Bearer with 401', async () => {
    const noColon = `Basic ${Buffer.from('admin').toString('base64')}`;
    const r1 = await call(`${AB}/abilities/svc/list-sites-v1/run`, noColon);
    expect(r1.status).toBe(401);
    expect(r1.body.data.status).toBe(401);
    expectError(await call(`${AB}/abilities/svc/list-sites-v1/run`, bearer(wrongToken)), 401, 'svc_rest_authentication_error');
  });

  it('/mcp answers a wrong Bearer and HTTP Basic with 401', async () => {
    for (const auth of [bearer(wrongToken), s.creds.admin]) {
      const r = await call('/mcp', auth, { method: 'POST', body: MCP_INITIALIZE, headers: MCP_HEADERS });
      expectError(r, 401, 'svc_rest_authentication_error');
    }
  });

  it('an unknown path answers wrong credentials with 401 and valid ones with 404 rest_no_route', async () => {
    expect((await call('/no/such/path', bearer(wrongToken))).status).toBe(401);
    expect((await call('/no/such/path', basic('admin', 'wrong'))).status).toBe(401);
    expectError(await call('/no/such/path', bearer(s.creds.key.read)), 404, 'rest_no_route');
    expectError(await call('/no/such/path', s.creds.admin), 404, 'rest_no_route');
  });

  it('refuses a revoked key on every door', async () => {
    const { key, token } = await s.services.auth.createKey('soon-revoked', 'read_write');
    expect((await call(`${REST}/sites`, bearer(token))).status).toBe(200);
    await s.services.auth.revokeKey(key.id);
    expectError(await call(`${REST}/sites`, bearer(token)), 401, 'svc_rest_authentication_error');
    expectError(await call(`${AB}/abilities/svc/list-sites-v1/run`, bearer(token)), 401, 'svc_rest_authentication_error');
    expectError(
      await call('/mcp', bearer(token), { method: 'POST', body: MCP_INITIALIZE, headers: MCP_HEADERS }),
      401,
      'svc_rest_authentication_error',
    );
  });

  it('refuses the password of a deleted user', async () => {
    const { password } = await s.services.auth.createUser('leaver', 'administrator');
    const auth = basic('leaver', password);
    expect((await call(`${AB}/abilities/svc/list-sites-v1/run`, auth)).status).toBe(200);
    await s.services.auth.deleteUser('leaver');
    expectError(await call(`${AB}/abilities/svc/list-sites-v1/run`, auth), 401, 'incorrect_password');
  });
});

describe('application passwords and Bearer on the abilities door', () => {
  it('accepts the application password with its spaces and without them', async () => {
    const { password } = await s.services.auth.createUser('spacey', 'administrator');
    expect(password).toContain(' ');
    for (const p of [password, password.replace(/ /g, '')]) {
      const r = await call(`${AB}/abilities/svc/count-sites-v1/run`, basic('spacey', p));
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ total: 6 });
    }
  });

  it('accepts a Bearer key for runs, reads and writes', async () => {
    const r = await call(`${AB}/abilities/svc/list-sites-v1/run?input[per_page]=1`, bearer(s.creds.key.read_write));
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(6);
    const name = unique('bearer-tag');
    const w = await call(`${AB}/abilities/svc/add-tag-v1/run`, bearer(s.creds.key.read_write), {
      method: 'POST',
      body: JSON.stringify({ input: { name } }),
    });
    expect(w.status).toBe(200);
    expect(w.body.name).toBe(name);
  });
});

describe('key permissions on REST', () => {
  type Perm = 'read' | 'write' | 'read_write' | 'delete';
  const PERMS: Perm[] = ['read', 'write', 'read_write', 'delete'];
  const ALLOWED: Record<string, Perm[]> = {
    GET: ['read', 'read_write'],
    POST: ['write', 'read_write'],
    PUT: ['write', 'read_write'],
    PATCH: ['write', 'read_write'],
    DELETE: ['write', 'read_write', 'delete'],
  };
  const WORD: Record<string, string> = { GET: 'read', POST: 'write', PUT: 'write', PATCH: 'write', DELETE: 'delete' };

  // Each case makes what it needs, so that an allowed call really does its work.
  const cases: Array<[string, () => Promise<{ path: string; json?: unknown; check?: (body: any) => void }>]> = [
    ['GET', async () => ({ path: '/sites', check: (b) => expect(b.total).toBe(6) })],
    [
      'POST',
      async () => {
        const name = unique('perm');
        return { path: '/tags/add', json: { name }, check: (b) => expect(b.data.name).toBe(name) };
      },
    ],
    ['PUT', async () => ({ path: `/sites/${fleet.sites[5]!.id}/edit`, json: { notes: unique('n') } })],
    [
      'PATCH',
      async () => {
        const t = await seedTag(s.services, unique('patch'));
        return { path: `/tags/${t.id}/edit`, json: { color: '#0a0a0a' } };
      },
    ],
    [
      'DELETE',
      async () => {
        const t = await seedTag(s.services, unique('del'));
        return { path: `/tags/${t.id}/remove`, check: (b) => expect(b.data.id).toBe(t.id) };
      },
    ],
  ];

  for (const [method, make] of cases) {
    for (const perm of PERMS) {
      const allowed = ALLOWED[method]!.includes(perm);
      it(`${allowed ? 'lets' : 'stops'} a ${perm} key ${allowed ? 'do' : 'doing'} ${method}`, async () => {
        const { path, json, check } = await make();
        const r = await s.rest(path, { method, json, token: s.creds.key[perm] });
        if (allowed) {
          expect(r.status).toBe(200);
          expect(r.body.success).toBe(1);
          check?.(r.body);
        } else {
          expectError(r, 403, 'svc_permission_denied', `The API key provided does not have ${WORD[method]} permissions.`);
        }
      });
    }
  }

  it('leaves nothing behind when a key is refused', async () => {
    const name = unique('refused');
    expect((await s.rest('/tags/add', { method: 'POST', json: { name }, token: s.creds.key.read })).status).toBe(403);
    expect((await s.rest('/tags/add', { method: 'POST', json: { name }, token: s.creds.key.delete })).status).toBe(403);
    expect((await s.rest(`/tags?search=${name}`)).body.total).toBe(0);
    const t = await seedTag(s.services, unique('survivor'));
    expect((await s.rest(`/tags/${t.id}/remove`, { method: 'DELETE', token: s.creds.key.read })).status).toBe(403);
    expect((await s.rest(`/tags/${t.id}`)).status).toBe(200);
  });
});

describe("key permissions on the abilities door (the ability's own method counts)", () => {
  const run = (name: string, perm: 'read' | 'write' | 'read_write' | 'delete', input: unknown, method?: string) =>
    s.ability(name, input, { auth: bearer(s.creds.key[perm]), method });

  it('lets a read key run read-only abilities, over GET and over POST, and nothing else', async () => {
    expect((await run('list-sites-v1', 'read', { per_page: 1 }, 'GET')).status).toBe(200);
    expect((await run('get-site-v1', 'read', { site_id_or_domain: fleet.sites[0]!.id })).status).toBe(200);
    expect((await run('get-tag-sites-v1', 'read', { tag_id: fleet.tags.production.id }, 'GET')).status).toBe(200);
    expectError(await run('add-tag-v1', 'read', { name: unique('ro') }), 403, 'svc_permission_denied');
    expectError(await run('suspend-site-v1', 'read', { site_id_or_domain: fleet.sites[5]!.id }), 403, 'svc_permission_denied');
    expect((await s.ability('get-site-v1', { site_id_or_domain: fleet.sites[5]!.id })).body.status).toBe('connected');
  });

  it('lets a write key run writes but not reads', async () => {
    const name = unique('wo');
    const r = await run('add-tag-v1', 'write', { name });
    expect(r.status).toBe(200);
    expect(r.body.name).toBe(name);
    expectError(await run('list-sites-v1', 'write', undefined, 'GET'), 403, 'svc_permission_denied');
    expectError(await run('get-site-v1', 'write', { site_id_or_domain: 1 }), 403, 'svc_permission_denied');
  });

  it('lets a delete key run delete-tag over DELETE and nothing that reads or writes', async () => {
    const t = await seedTag(s.services, unique('delkey'));
    const r = await run('delete-tag-v1', 'delete', { tag_id: t.id, confirm: true }, 'DELETE');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ deleted: true, tag_id: t.id });
    expectError(await run('list-tags-v1', 'delete', undefined, 'GET'), 403, 'svc_permission_denied');
    expectError(await run('add-tag-v1', 'delete', { name: unique('dk') }), 403, 'svc_permission_denied');
  });

  it('lets a read_write key run everything', async () => {
    expect((await run('list-tags-v1', 'read_write', undefined, 'GET')).status).toBe(200);
    const t = await run('add-tag-v1', 'read_write', { name: unique('rw') });
    expect(t.status).toBe(200);
    expect((await run('delete-tag-v1', 'read_write', { tag_id: t.body.id, confirm: true }, 'DELETE')).status).toBe(200);
  });
});

describe('users: administrator and viewer', () => {
  it.each([
    ['list-sites-v1', undefined, 'GET'],
    ['get-site-v1', { site_id_or_domain: 1 }, 'POST'],
    ['count-sites-v1', undefined, 'GET'],
    ['get-sites-basic-v1', undefined, 'GET'],
    ['list-tags-v1', undefined, 'GET'],
    ['get-tag-v1', { tag_id: 1 }, 'GET'],
    ['get-tag-sites-v1', { tag_id: 1 }, 'POST'],
    ['get-tag-clients-v1', { tag_id: 1 }, 'POST'],
  ])('lets a viewer run the read-only %s', async (name, input, method) => {
    const r = await s.ability(name, input, { auth: s.creds.viewer, method });
    expect(r.status).toBe(200);
  });

  it.each([
    ['update-site-v1', { site_id_or_domain: 6, name: 'viewer was here' }, 'POST'],
    ['delete-site-v1', { site_id_or_domain: 6, confirm: true }, 'POST'],
    ['suspend-site-v1', { site_id_or_domain: 6 }, 'POST'],
    ['unsuspend-site-v1', { site_id_or_domain: 3 }, 'POST'],
    ['suspend-sites-v1', { site_ids_or_domains: [6] }, 'POST'],
    ['add-tag-v1', { name: 'viewer tag' }, 'POST'],
    ['update-tag-v1', { tag_id: 1, name: 'viewer name' }, 'POST'],
    ['delete-tag-v1', { tag_id: 3, confirm: true }, 'DELETE'],
  ])('refuses a viewer %s with 403 svc_permission_denied and changes nothing', async (name, input, method) => {
    expectError(
      await s.ability(name, input, { auth: s.creds.viewer, method }),
      403,
      'svc_permission_denied',
      'You do not have permission to perform this action.',
    );
    const site6 = await s.ability('get-site-v1', { site_id_or_domain: 6 });
    expect(site6.body).toMatchObject({ name: 'Foxtrot', status: 'connected' });
    expect((await s.ability('get-site-v1', { site_id_or_domain: 3 })).body.status).toBe('suspended');
    expect((await s.ability('get-tag-v1', { tag_id: 1 })).body.name).toBe('Production');
    expect((await s.ability('get-tag-v1', { tag_id: 3 })).status).toBe(200);
    expect((await s.ability('list-tags-v1', { search: 'viewer' }, { method: 'GET' })).body.total).toBe(0);
  });

  it('lets an administrator run a write', async () => {
    const r = await s.ability('update-tag-v1', { tag_id: fleet.tags.empty.id, color: '#abcdef' }, { auth: s.creds.admin });
    expect(r.status).toBe(200);
    expect(r.body.color).toBe('#abcdef');
  });
});
