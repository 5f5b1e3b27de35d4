// WordPress-user abilities (users on child sites, not dashboard accounts) through the registry, over the child
// simulator: list across sites, create on several, edit, delete with confirm / dry_run, the administrator password,
// and a CSV import — checked inside the simulated WordPress, without a door.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { seedClients, seedTag } from '../support/fixtures.js';

let h: AbilityHarness;
let sites: Array<{ id: number; url: string }>;
let clientId: number;
const userOn = (i: number, login: string) => h.sim.state(i).users.find((u) => u.login === login);

beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 4 } });
  sites = await h.addSimSites();
  await seedTag(h.services, 'Client Blogs', [sites[0]!.id, sites[1]!.id]);
  const [client] = await seedClients(h.services, [{ name: 'Acme', email: 'it@acme.example' }]);
  clientId = client!.id;
  await h.call('update-site-v1', { site_id_or_domain: sites[2]!.id, client_id: clientId });
});
afterAll(() => h.close());

describe('list-users-v1', () => {
  it("lists each selected site's users by site URL, filtered by role, and names unknown selectors", async () => {
    const r = await h.call('list-users-v1', { websites: [sites[0]!.id, sites[1]!.url, 'nowhere.example'] }, h.as.viewer);
    expect(Object.keys(r.data).sort()).toEqual([sites[0]!.url, sites[1]!.url].sort());
    expect(r.data[sites[0]!.url]!.map((u) => u.username).sort()).toEqual(
      h.sim
        .state(1)
        .users.map((u) => u.login)
        .sort(),
    );
    expect(r.total).toBe(h.sim.state(1).users.length + h.sim.state(2).users.length);
    expect(r.unknown).toEqual([expect.objectContaining({ identifier: 'nowhere.example' })]);
    const admins = await h.call('list-users-v1', { websites: [sites[0]!.id], roles: ['administrator'] });
    expect(admins.data[sites[0]!.url]!.every((u) => u.role === 'administrator')).toBe(true);
    expect(admins.total).toBe(h.sim.state(1).users.filter((u) => u.role === 'administrator').length);
  });
});

describe('site selectors', () => {
  // Moved from test/users.test.ts ("site selectors"; the REST half stays there): how websites, groups and clients select sites.
  it('unites websites, groups (by name or id) and clients; unknown values are reported, not fatal', async () => {
    const tag = h.services.tags.findByName('Client Blogs')!;
    const r = await h.call('list-users-v1', {
      websites: [sites[3]!.id, 999],
      groups: ['client blogs', 'Nope', tag.id],
      clients: [clientId, 998],
    });
    expect(Object.keys(r.data)).toEqual(sites.slice(0, 4).map((s) => s.url));
    expect(r.unknown).toEqual([
      { identifier: 999, code: 'svc_site_not_found', message: 'No site found with ID 999.', status: 404 },
      expect.objectContaining({ identifier: 'Nope', code: 'svc_tag_not_found' }),
      expect.objectContaining({ identifier: 998, code: 'svc_client_not_found' }),
    ]);
  });
});

describe('create-user-v1, update-user-v1, delete-user-v1', () => {
  it('creates a user on several sites, edits it on one, and deletes it after a preview and confirm', async () => {
    const c = await h.call('create-user-v1', {
      websites: [sites[0]!.id, sites[1]!.id],
      username: 'jane',
      email: 'jane@example.com',
      role: 'editor',
      first_name: 'Jane',
    });
    expect(c).toMatchObject({
      total_sites: 2,
      total_success: 2,
      total_failed: 0,
      user: { username: 'jane', role: 'editor', first_name: 'Jane' },
    });
    expect(userOn(1, 'jane')).toMatchObject({ email: 'jane@example.com', role: 'editor', first_name: 'Jane' });
    expect(userOn(2, 'jane')).toBeDefined();
    expect(userOn(3, 'jane')).toBeUndefined();
    const userId = c.created.find((x) => x.site_id === sites[0]!.id)!.user_id;
    const u = await h.call('update-user-v1', {
      site_id_or_domain: sites[0]!.id,
      user_id: userId,
      role: 'author',
      last_name: 'Doe',
      password: 'N3w-secret!',
    });
    expect(u).toMatchObject({ user_id: userId, user: { role: 'author', last_name: 'Doe' } });
    expect(u.updated).toEqual(expect.arrayContaining(['role', 'last_name', 'password']));
    expect(JSON.stringify(u)).not.toContain('N3w-secret!');
    expect(userOn(1, 'jane')).toMatchObject({ role: 'author', last_name: 'Doe', password: 'N3w-secret!' });
    const dry = await h.call('delete-user-v1', { site_id_or_domain: sites[0]!.id, user_id: userId, dry_run: true });
    expect(dry).toMatchObject({ deleted: false, dry_run: true, user: { id: userId } });
    expect(await h.fails('delete-user-v1', { site_id_or_domain: sites[0]!.id, user_id: userId })).toMatchObject({
      code: 'svc_confirmation_required',
    });
    expect(userOn(1, 'jane')).toBeDefined();
    expect(await h.call('delete-user-v1', { site_id_or_domain: sites[0]!.id, user_id: userId, confirm: true })).toMatchObject({
      deleted: true,
      user_id: userId,
    });
    expect(userOn(1, 'jane')).toBeUndefined();
    expect(userOn(2, 'jane')).toBeDefined();
  });

  it('refuses a create without sites, a bad e-mail, and a viewer', async () => {
    expect(await h.fails('create-user-v1', { username: 'x', email: 'x@example.com' })).toMatchObject({
      code: 'svc_sites_required',
      status: 400,
    });
    expect(await h.fails('create-user-v1', { websites: [sites[0]!.id], username: 'x', email: 'nope' })).toMatchObject({
      code: 'ability_invalid_input',
      data: { params: { email: expect.any(String) } },
    });
    expect(await h.fails('create-user-v1', { websites: [sites[0]!.id], username: 'x', email: 'x@example.com' }, h.as.viewer)).toMatchObject(
      { code: 'svc_permission_denied' },
    );
    expect(userOn(1, 'x')).toBeUndefined();
  });
});

describe('update-admin-password-v1 and import-users-v1', () => {
  it("sets the connection administrator's password on the selected sites, never answering it", async () => {
    const r = await h.call('update-admin-password-v1', { websites: [sites[2]!.id], password: 'Adm1n-New!' });
    expect(r).toMatchObject({ total_websites: 1, success_count: 1, failed_count: 0, success_websites: [{ id: sites[2]!.id }] });
    expect(JSON.stringify(r)).not.toContain('Adm1n-New!');
    expect(userOn(3, h.sim.sites[2]!.admin)!.password).toBe('Adm1n-New!');
  });

  it('imports users from CSV onto the sites each row names; a bad row fails alone with its line number', async () => {
    const csv = [
      'username,email,first_name,last_name,user_url,password,send_password,role,select_sites,select_groups',
      `imp1,imp1@example.com,Imp,One,,,,author,${sites[0]!.url},`,
      `imp2,not-an-email,,,,,,,${sites[0]!.url},`,
      `imp3,imp3@example.com,,,,,,,${sites[1]!.url};${sites[2]!.url},`,
    ].join('\n');
    const r = await h.call('import-users-v1', { csv });
    expect(r).toMatchObject({ total: 3, success_count: 2, failed_count: 1, failed_users: [expect.objectContaining({ line_number: 3 })] });
    expect(userOn(1, 'imp1')).toMatchObject({ role: 'author', first_name: 'Imp' });
    expect(userOn(1, 'imp2')).toBeUndefined();
    expect(userOn(2, 'imp3')).toBeDefined();
    expect(userOn(3, 'imp3')).toBeDefined();
  });
});
