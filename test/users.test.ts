// Users on child sites through every door (abilities v1, REST v2, MCP) against simulated children: selectors,
// list, create, edit, delete, the connection admin's protection, administrator passwords, dead children.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { seedClients, seedTag } from './support/fixtures.js';
import { captureLogs as logged } from './support/logs.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';

let f: Fleet;
let ids: Array<{ id: number; url: string }>;
let mcp: McpTestClient;
let clientId: number;

const loginsOf = (i: number) =>
  f.sim
    .state(i)
    .users.map((u) => u.login)
    .sort();
const userOn = (i: number, login: string) => f.sim.state(i).users.find((u) => u.login === login);

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 6 }, config: { childConcurrency: '4' } });
  ids = await registerSites(f, 5);
  await seedTag(f.s.services, 'Client Blogs', [ids[0]!.id, ids[1]!.id]);
  const [client] = await seedClients(f.s.services, [{ name: 'Acme', email: 'it@acme.example' }]);
  clientId = client!.id;
  expect((await f.s.ability('update-site-v1', { site_id_or_domain: ids[2]!.id, client_id: clientId })).status).toBe(200);
  mcp = await connectMcp(f.s);
});
afterAll(async () => {
  await mcp.close();
  await f.close();
});

describe('site selectors', () => {
  it('lists users of sites named by id and by domain, keyed by site URL', async () => {
    const domain = new URL(ids[1]!.url).host + new URL(ids[1]!.url).pathname;
    const r = await f.s.rest(`/users?websites=${ids[0]!.id},${encodeURIComponent(domain)}`);
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(1);
    expect(Object.keys(r.body.data)).toEqual([ids[0]!.url, ids[1]!.url]);
    expect(r.body.data[ids[0]!.url].map((u: { username: string }) => u.username).sort()).toEqual(loginsOf(1));
    expect(r.body.data[ids[0]!.url][0]).toEqual({
      id: expect.any(Number),
      website_id: ids[0]!.id,
      username: expect.any(String),
      name: expect.any(String),
      email: expect.any(String),
      role: expect.any(String),
      posts: expect.any(Number),
      registered: expect.any(String),
    });
    expect(r.body.total).toBe(loginsOf(1).length + loginsOf(2).length);
    expect(r.body.errors).toEqual([]);
  });

  // The selector rule itself (websites ∪ groups ∪ clients, unknown values reported) moved to test/abilities/users.test.ts.
  it('REST: groups by name and clients select sites from the query string', async () => {
    const rest = await f.s.rest(`/users?groups=${encodeURIComponent('Client Blogs')}&clients=${clientId}`);
    expect(Object.keys(rest.body.data)).toEqual(ids.slice(0, 3).map((s) => s.url));
  });

  it('reads a group of digits as a tag id first, then as a tag name', async () => {
    await seedTag(f.s.services, '2024', [ids[3]!.id]);
    const r = await f.s.rest('/users?groups=2024');
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.data)).toEqual([ids[3]!.url]);
  });

  it('needs a selector (400) and a selection that names something (404)', async () => {
    const none = await f.s.rest('/users');
    expect([none.status, none.body.code]).toEqual([400, 'svc_sites_required']);
    const nothing = await f.s.rest('/users?websites=999&groups=Nope');
    expect([nothing.status, nothing.body.code]).toEqual([404, 'svc_sites_not_found']);
    expect(nothing.body.data.unknown).toHaveLength(2);
  });

  it('skips a suspended site with a note and sends it nothing', async () => {
    await f.s.ability('suspend-site-v1', { site_id_or_domain: ids[4]!.id });
    try {
      const before = f.sim.requests(5);
      const r = await f.s.rest(`/users?websites=${ids[0]!.id},${ids[4]!.id}`);
      expect(r.status).toBe(200);
      expect(Object.keys(r.body.data)).toEqual([ids[0]!.url]);
      expect(r.body.skipped).toEqual([
        { site_id: ids[4]!.id, site_url: ids[4]!.url, status: 'suspended', message: expect.stringContaining('suspended') },
      ]);
      const edit = await f.s.rest(`/users/${ids[4]!.id}/2/edit`, { method: 'PUT', json: { first_name: 'X' } });
      expect([edit.status, edit.body.code]).toEqual([409, 'svc_site_suspended']);
      expect(f.sim.requests(5)).toBe(before);
    } finally {
      await f.s.ability('unsuspend-site-v1', { site_id_or_domain: ids[4]!.id });
    }
  });
});

describe('list-users filters', () => {
  it('filters by role and by search text', async () => {
    const admins = await f.s.rest(`/users?websites=${ids[0]!.id}&roles=administrator`);
    expect(admins.body.data[ids[0]!.url].every((u: { role: string }) => u.role === 'administrator')).toBe(true);
    expect(admins.body.data[ids[0]!.url].map((u: { username: string }) => u.username)).toContain('admin');
    const other = f.sim.state(1).users.find((u) => u.login !== 'admin')!;
    const found = await f.s.ability('list-users-v1', { websites: [ids[0]!.id], search: other.login.slice(1, 4) }, { method: 'GET' });
    expect(found.body.data[ids[0]!.url].map((u: { username: string }) => u.username)).toContain(other.login);
  });

  it('refuses an unknown role, naming the allowed ones', async () => {
    const r = await f.s.rest(`/users?websites=${ids[0]!.id}&roles=owner`);
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('rest_invalid_param');
    expect(JSON.stringify(r.body)).toContain('administrator, editor, author, contributor, and subscriber');
  });
});

describe('create-user', () => {
  it('a user created through MCP is listed by REST, and no answer carries its password', async () => {
    const r = await mcp.call('create-user-v1', {
      websites: [ids[0]!.id, ids[1]!.url],
      username: 'mcp.editor',
      email: 'mcp.editor@example.com',
      password: 'Sekr3t-MCP-pass',
      role: 'editor',
      first_name: 'Mia',
    });
    expect(r.isError).toBe(false);
    expect(r.body).toMatchObject({ total_sites: 2, total_success: 2, total_failed: 0, user: { username: 'mcp.editor', role: 'editor' } });
    expect(JSON.stringify(r.body)).not.toContain('Sekr3t-MCP-pass');
    expect(userOn(1, 'mcp.editor')).toMatchObject({ role: 'editor', password: 'Sekr3t-MCP-pass', first_name: 'Mia' });
    const listed = await f.s.rest(`/users?websites=${ids[0]!.id},${ids[1]!.id}&search=mcp.editor`);
    for (const s of ids.slice(0, 2)) {
      expect(listed.body.data[s.url]).toEqual([
        expect.objectContaining({ username: 'mcp.editor', email: 'mcp.editor@example.com', role: 'editor', website_id: s.id }),
      ]);
    }
    expect(JSON.stringify(listed.body)).not.toContain('Sekr3t');
  });

  it('creates on every selected site through REST and reports a refusal per site', async () => {
    const r = await f.s.rest('/users/create', {
      method: 'POST',
      json: { websites: `${ids[0]!.id},${ids[2]!.id}`, username: 'mcp.editor', email: 'other@example.com', password: 'Another-Secret-1' },
    });
    expect(r.status).toBe(200);
    expect(r.body.message).toBe('User created on 1 of 2 website(s). 1 failed.');
    expect(r.body.data.created_sites).toEqual({
      [ids[2]!.id]: { url: ids[2]!.url, user_id: expect.any(Number), message: 'User created successfully.' },
    });
    expect(r.body.data.failed_sites[ids[0]!.id]).toEqual({
      code: 'svc_child_refused',
      message: expect.stringContaining('username already exists'),
    });
    expect(r.body.data.user_info).toEqual({
      username: 'mcp.editor',
      email: 'other@example.com',
      role: 'subscriber',
      first_name: '',
      last_name: '',
      user_url: '',
    });
    expect(JSON.stringify(r.body)).not.toContain('Another-Secret-1');
  });

  it('sets a random password when none is given, and returns none', async () => {
    const r = await f.s.ability('create-user-v1', { websites: [ids[3]!.id], username: 'nopass', email: 'nopass@example.com' });
    expect(r.status).toBe(200);
    const pass = userOn(4, 'nopass')!.password;
    expect(pass).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(JSON.stringify(r.body)).not.toContain(pass);
  });

  it('validates the username, e-mail and role before any child call', async () => {
    const before = f.sim.requests(1);
    for (const [json, param] of [
      [{ websites: String(ids[0]!.id), email: 'a@example.com' }, 'username'],
      [{ websites: String(ids[0]!.id), username: 'x', email: 'not-an-email' }, 'email'],
      [{ websites: String(ids[0]!.id), username: 'x', email: 'a@example.com', role: 'owner' }, 'role'],
    ] as const) {
      const r = await f.s.rest('/users/create', { method: 'POST', json });
      expect(r.status, param).toBe(400);
      expect(Object.keys(r.body.data.params)).toEqual([param]);
    }
    expect(f.sim.requests(1)).toBe(before);
  });
});

describe('a dead child', () => {
  it('is one per-site error in lists, creates and password updates; the other sites work', async () => {
    f.sim.setFault(2, { type: 'down' });
    try {
      const list = await f.s.rest(`/users?websites=${ids[0]!.id},${ids[1]!.id}`);
      expect(list.status).toBe(200);
      expect(Object.keys(list.body.data)).toEqual([ids[0]!.url]);
      expect(list.body.errors).toEqual([
        { identifier: ids[1]!.id, code: 'svc_child_unreachable', message: expect.stringContaining(ids[1]!.url), status: 502 },
      ]);
      const created = await f.s.ability('create-user-v1', {
        websites: [ids[0]!.id, ids[1]!.id],
        username: 'during.outage',
        email: 'outage@example.com',
      });
      expect(created.body).toMatchObject({
        total_success: 1,
        total_failed: 1,
        errors: [expect.objectContaining({ identifier: ids[1]!.id, code: 'svc_child_unreachable' })],
      });
      const single = await f.s.rest(`/users/${ids[1]!.id}/2/edit`, { method: 'PATCH', json: { first_name: 'Z' } });
      expect([single.status, single.body.code]).toEqual([502, 'svc_child_unreachable']);
    } finally {
      f.sim.setFault(2, null);
    }
  });
});

describe('update-user', () => {
  it('changes only the fields given (REST PUT, PATCH and POST)', async () => {
    const target = userOn(1, 'mcp.editor')!;
    const before = { ...target };
    const r = await f.s.rest(`/users/${ids[0]!.id}/${target.id}/edit`, {
      method: 'PUT',
      json: { last_name: 'Meyer', description: 'Writes.' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      success: 1,
      message: 'User updated successfully.',
      data: { website_id: ids[0]!.id, user_id: target.id, updated_fields: ['last_name', 'description'] },
    });
    expect(r.body.data.user).toMatchObject({
      id: target.id,
      last_name: 'Meyer',
      first_name: 'Mia',
      email: before.email,
      role: 'editor',
      description: 'Writes.',
    });
    expect(userOn(1, 'mcp.editor')).toMatchObject({
      last_name: 'Meyer',
      first_name: before.first_name,
      email: before.email,
      password: before.password,
      role: 'editor',
    });
    for (const method of ['PATCH', 'POST']) {
      const again = await f.s.rest(`/users/${ids[0]!.id}/${target.id}/edit`, { method, json: { nickname: `nick-${method}` } });
      expect(again.status, method).toBe(200);
    }
  });

  it('sets a password without echoing it, through the abilities door', async () => {
    const target = userOn(1, 'mcp.editor')!;
    const log = await logged(async () => {
      const r = await f.s.ability('update-user-v1', {
        site_id_or_domain: ids[0]!.id,
        user_id: target.id,
        password: 'Fresh-Pass-42',
        role: 'author',
      });
      expect(r.status).toBe(200);
      expect(r.body.updated).toEqual(['password', 'role']);
      expect(JSON.stringify(r.body)).not.toContain('Fresh-Pass-42');
    });
    expect(log).toContain('"msg":"request"');
    expect(log).not.toContain('Fresh-Pass-42');
    expect(userOn(1, 'mcp.editor')).toMatchObject({ password: 'Fresh-Pass-42', role: 'author' });
  });

  it("answers 400 without fields, 404 for an unknown user or site, 400 for the child's refusal", async () => {
    const none = await f.s.rest(`/users/${ids[0]!.id}/2/edit`, { method: 'PUT', json: {} });
    expect([none.status, none.body.code]).toEqual([400, 'svc_missing_fields']);
    const nobody = await f.s.rest(`/users/${ids[0]!.id}/9999/edit`, { method: 'PUT', json: { first_name: 'A' } });
    expect([nobody.status, nobody.body.code]).toEqual([404, 'svc_user_not_found']);
    const nosite = await f.s.rest('/users/999/2/edit', { method: 'PUT', json: { first_name: 'A' } });
    expect([nosite.status, nosite.body.code]).toEqual([404, 'svc_rest_invalid_site_id']);
    const noroute = await f.s.rest(`/users/${ids[0]!.id}/abc/edit`, { method: 'PUT', json: { first_name: 'A' } });
    expect([noroute.status, noroute.body.code]).toEqual([404, 'rest_no_route']);
    const taken = f.sim.state(1).users.find((u) => u.login === 'admin')!.email;
    const refused = await f.s.ability('update-user-v1', {
      site_id_or_domain: ids[0]!.id,
      user_id: userOn(1, 'mcp.editor')!.id,
      email: taken,
    });
    expect([refused.status, refused.body.code]).toEqual([400, 'svc_child_refused']);
    expect(refused.body.message).toContain('already registered');
  });

  it('never demotes the connection administrator, but may edit its profile', async () => {
    const admin = userOn(1, 'admin')!;
    const demote = await f.s.rest(`/users/${ids[0]!.id}/${admin.id}/edit`, { method: 'PUT', json: { role: 'subscriber' } });
    expect([demote.status, demote.body.code]).toEqual([409, 'svc_connection_admin_protected']);
    expect(userOn(1, 'admin')!.role).toBe('administrator');
    const named = await f.s.ability('update-user-v1', {
      site_id_or_domain: ids[0]!.id,
      user_id: admin.id,
      first_name: 'Ada',
      role: 'administrator',
    });
    expect(named.status).toBe(200);
    expect(userOn(1, 'admin')!.first_name).toBe('Ada');
  });
});

describe('delete-user', () => {
  it('needs confirm, previews with dry_run, then deletes (abilities door)', async () => {
    const target = userOn(2, 'mcp.editor')!;
    const bare = await f.s.ability('delete-user-v1', { site_id_or_domain: ids[1]!.id, user_id: target.id });
    expect([bare.status, bare.body.code]).toEqual([400, 'svc_confirmation_required']);
    const both = await f.s.ability('delete-user-v1', { site_id_or_domain: ids[1]!.id, user_id: target.id, confirm: true, dry_run: true });
    expect([both.status, both.body.code]).toEqual([400, 'svc_invalid_input']);
    const preview = await f.s.ability('delete-user-v1', { site_id_or_domain: ids[1]!.id, user_id: target.id, dry_run: true });
    expect(preview.body).toMatchObject({ deleted: false, dry_run: true, user_id: target.id, user: { id: target.id, email: target.email } });
    expect(userOn(2, 'mcp.editor')).toBeDefined();
    const done = await f.s.ability(
      'delete-user-v1',
      { site_id_or_domain: ids[1]!.id, user_id: target.id, confirm: true },
      { method: 'DELETE' },
    );
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ deleted: true, dry_run: false });
    expect(userOn(2, 'mcp.editor')).toBeUndefined();
    const gone = await f.s.ability('delete-user-v1', { site_id_or_domain: ids[1]!.id, user_id: target.id, confirm: true });
    expect([gone.status, gone.body.code]).toEqual([404, 'svc_user_not_found']);
  });

  it('deletes through REST and MCP, and never the connection administrator', async () => {
    const victim = userOn(3, 'mcp.editor')!;
    const r = await f.s.rest(`/users/${ids[2]!.id}/${victim.id}/delete`, { method: 'DELETE' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, message: 'User deleted successfully.' });
    expect(userOn(3, 'mcp.editor')).toBeUndefined();
    const admin = userOn(1, 'admin')!;
    const rest = await f.s.rest(`/users/${ids[0]!.id}/${admin.id}/delete`, { method: 'DELETE' });
    expect([rest.status, rest.body.code]).toEqual([409, 'svc_connection_admin_protected']);
    const viaMcp = await mcp.call('delete-user-v1', { site_id_or_domain: ids[0]!.id, user_id: admin.id, confirm: true });
    expect(viaMcp.isError).toBe(true);
    expect(viaMcp.body.code).toBe('svc_connection_admin_protected');
    expect(userOn(1, 'admin')).toBeDefined();
    const other = userOn(1, 'mcp.editor')!;
    const ok = await mcp.call('delete-user-v1', { site_id_or_domain: ids[0]!.id, user_id: other.id, confirm: true });
    expect(ok.isError).toBe(false);
    expect(userOn(1, 'mcp.editor')).toBeUndefined();
  });
});

describe('update-admin-password', () => {
  it("sets the connection admin's password on the selected sites; the connection keeps working; nothing echoes it", async () => {
    const log = await logged(async () => {
      const r = await f.s.rest('/users/update-admin-password', {
        method: 'PUT',
        json: { password: 'N3w-Admin-Pass!', groups: 'Client Blogs' },
      });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        success: 1,
        message: 'Admin password updated on 2 of 2 websites.',
        total_websites: 2,
        success_count: 2,
        failed_count: 0,
        success_websites: [
          { id: ids[0]!.id, url: ids[0]!.url, name: expect.any(String) },
          { id: ids[1]!.id, url: ids[1]!.url, name: expect.any(String) },
        ],
        failed_websites: [],
      });
      expect(JSON.stringify(r.body)).not.toContain('N3w-Admin-Pass');
    });
    expect(log).not.toContain('N3w-Admin-Pass');
    expect(userOn(1, 'admin')!.password).toBe('N3w-Admin-Pass!');
    expect(userOn(2, 'admin')!.password).toBe('N3w-Admin-Pass!');
    expect(userOn(3, 'admin')!.password).not.toBe('N3w-Admin-Pass!');
    expect((await f.s.rest(`/users?websites=${ids[0]!.id}`)).status).toBe(200);
  });

  it('reports a dead child per site (PATCH, abilities and MCP), and refuses an empty password', async () => {
    f.sim.setFault(3, { type: 'down' });
    try {
      const r = await f.s.rest('/users/update-admin-password', {
        method: 'PATCH',
        json: { password: 'Pw-1', websites: `${ids[2]!.id},${ids[3]!.id}` },
      });
      expect(r.body).toMatchObject({
        success_count: 1,
        failed_count: 1,
        failed_websites: [expect.objectContaining({ id: ids[2]!.id, code: 'svc_child_unreachable' })],
      });
    } finally {
      f.sim.setFault(3, null);
    }
    const viaAbility = await f.s.ability('update-admin-password-v1', { websites: [ids[3]!.id], password: 'Pw-2' });
    expect(viaAbility.body.success_count).toBe(1);
    const viaMcp = await mcp.call('update-admin-password-v1', { clients: [clientId], password: 'Pw-3' });
    expect(viaMcp.body).toMatchObject({ success_count: 1, success_websites: [expect.objectContaining({ id: ids[2]!.id })] });
    expect(userOn(3, 'admin')!.password).toBe('Pw-3');
    const empty = await f.s.rest('/users/update-admin-password', { method: 'PUT', json: { password: '', websites: String(ids[0]!.id) } });
    expect(empty.status).toBe(400);
    const post = await f.s.rest('/users/update-admin-password', { method: 'POST', json: { password: 'x', websites: String(ids[0]!.id) } });
    expect(post.status).toBe(405);
  });
});
