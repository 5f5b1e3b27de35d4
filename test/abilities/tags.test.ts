// Tag abilities through the registry: the tag rules (names unique in any letter case, colours, search, what a
// removal lets go of, confirm / dry_run), without a door.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InputOf } from '../../src/abilities/index.js';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { expectSchema, seedClients, seedFleet, seedTag, type Fleet } from '../support/fixtures.js';
import { seedSites } from '../support/server.js';

const ids = (list: Array<{ id: number }>) => list.map((x) => x.id);
let h: AbilityHarness;
let fleet: Fleet;
let n = 0;
const unique = (p: string) => {
  n += 1;
  return `${p} ${n}`;
};

beforeAll(async () => {
  h = await openAbilities();
  fleet = await seedFleet(h.services);
});
afterAll(() => h.close());
const schema = (name: string) => h.registry.schemas(h.registry.get(name)!).output;

describe('list-tags-v1 and get-tag-v1', () => {
  it('lists tags by name with their sites, and pages', async () => {
    const r = await h.call('list-tags-v1', { per_page: 2 }, h.as.viewer);
    expect(r.total).toBeGreaterThanOrEqual(3);
    expect(r.items.map((t) => t.name)).toEqual(['Empty', 'Production']);
    expect(r.items[1]).toMatchObject({
      id: fleet.tags.production.id,
      color: '#21ba45',
      sites_count: 3,
      sites_ids: ids(fleet.sites.slice(0, 3)),
    });
  });

  it('searches names (any case) and ids', async () => {
    expect(ids((await h.call('list-tags-v1', { search: 'STAG' })).items)).toEqual([fleet.tags.staging.id]);
    expect(ids((await h.call('list-tags-v1', { search: String(fleet.tags.empty.id) })).items)).toContain(fleet.tags.empty.id);
    expect(await h.call('list-tags-v1', { search: 'nothing-like-this' })).toMatchObject({ total: 0, items: [] });
  });

  it('includes and excludes ids', async () => {
    const { production, staging, empty } = fleet.tags;
    expect(ids((await h.call('list-tags-v1', { include: [production.id, empty.id] })).items)).toEqual([empty.id, production.id]);
    const ex = await h.call('list-tags-v1', { include: [production.id, staging.id, empty.id], exclude: [production.id] });
    expect(ids(ex.items)).toEqual([empty.id, staging.id]);
  });

  it('gets one tag, and answers an unknown id with svc_tag_not_found', async () => {
    expect(await h.call('get-tag-v1', { tag_id: fleet.tags.staging.id }, h.as.readKey)).toMatchObject({
      name: 'staging',
      color: null,
      sites_ids: [fleet.sites[3]!.id],
    });
    expect(await h.fails('get-tag-v1', { tag_id: 99999 })).toMatchObject({ code: 'svc_tag_not_found', status: 404 });
  });
});

// ---- Moved from test/abilities-door.test.ts (list-tags-v1, get-tag-v1, get-tag-sites-v1 and get-tag-clients-v1): the
// reading rules on the seeded fleet. They run before any test below adds a tag, site or client (the file's tests run in
// order), so the seeded totals hold. The schema refusals and GET query-string paging stay at the door.
describe('list-tags-v1 on the seeded fleet (rules)', () => {
  const list = (input: InputOf<'list-tags-v1'>) => h.call('list-tags-v1', input);

  it('lists tags by name without regard to case, with counts, site ids and timestamps', async () => {
    const r = await list({});
    expect(r).toMatchObject({ page: 1, per_page: 20, total: 3 });
    expect(r.items.map((t) => t.name)).toEqual(['Empty', 'Production', 'staging']);
    const prod = r.items[1]!;
    expect(prod).toMatchObject({
      id: fleet.tags.production.id,
      name: 'Production',
      color: '#21ba45',
      sites_count: 3,
      sites_ids: ids(fleet.sites.slice(0, 3)),
    });
    expect(r.items[2]).toMatchObject({ name: 'staging', color: null, sites_count: 1 });
    expect(Date.parse(prod.created_at)).not.toBeNaN();
    expect(Date.parse(prod.updated_at)).not.toBeNaN();
    expectSchema(r, schema('list-tags-v1'));
  });

  it('searches names (any case) and ids, includes and excludes ids', async () => {
    expect(ids((await list({ search: 'PROD' })).items)).toEqual([fleet.tags.production.id]);
    expect(ids((await list({ search: String(fleet.tags.staging.id) })).items)).toContain(fleet.tags.staging.id);
    expect(ids((await list({ include: [fleet.tags.staging.id, fleet.tags.empty.id] })).items)).toEqual([
      fleet.tags.empty.id,
      fleet.tags.staging.id,
    ]);
    const ex = await list({ exclude: [fleet.tags.production.id] });
    expect(ids(ex.items)).toEqual([fleet.tags.empty.id, fleet.tags.staging.id]);
    expect(ex.total).toBe(2);
  });

  it('pages, and a page past the end is empty', async () => {
    const r = await list({ page: 2, per_page: 1 });
    expect(r.items.map((t) => t.name)).toEqual(['Production']);
    expect(r.total).toBe(3);
    expect(await list({ page: 50 })).toMatchObject({ items: [], total: 3 });
  });
});

describe('get-tag-v1 on the seeded fleet (rules)', () => {
  it('returns one tag with its name, colour, count and timestamps', async () => {
    const t = fleet.tags.production;
    const r = await h.call('get-tag-v1', { tag_id: t.id });
    expect(r).toMatchObject({ id: t.id, name: 'Production', color: '#21ba45', sites_count: 3 });
    expect(r.created_at).toBe(t.created_at);
    expectSchema(r, schema('get-tag-v1'));
  });

  it('answers an unknown tag with 404 svc_tag_not_found', async () => {
    expect(await h.fails('get-tag-v1', { tag_id: 99999 })).toMatchObject({
      status: 404,
      code: 'svc_tag_not_found',
      message: 'No tag found with ID 99999.',
    });
  });
});

describe('get-tag-sites-v1 and get-tag-clients-v1 on the seeded fleet (rules)', () => {
  it('lists the sites of a tag by URL with tag_id, tag_name, paging and total', async () => {
    const t = fleet.tags.production;
    const r = await h.call('get-tag-sites-v1', { tag_id: t.id });
    expect(r).toMatchObject({ tag_id: t.id, tag_name: 'Production', page: 1, per_page: 20, total: 3 });
    // Ordered like list-sites-v1: by URL with the scheme and www. left out (alpha, bravo, ...).
    const key = (u: string) => u.replace(/^https?:\/\/(www\.)?/, '');
    const byUrl = fleet.sites.slice(0, 3).sort((a, b) => (key(a.url) < key(b.url) ? -1 : 1));
    expect(ids(r.sites)).toEqual(ids(byUrl));
    expect(r.sites).toContainEqual({
      id: fleet.sites[0]!.id,
      url: 'https://alpha.example.com/',
      name: 'Alpha',
      status: 'connected',
      client_id: fleet.clients[1]!.id,
    });
    expect(r.sites).toContainEqual(expect.objectContaining({ id: fleet.sites[1]!.id, status: 'disconnected' }));
    expect(r.sites).toContainEqual(expect.objectContaining({ id: fleet.sites[2]!.id, status: 'suspended' }));
    expectSchema(r, schema('get-tag-sites-v1'));
    const p2 = await h.call('get-tag-sites-v1', { tag_id: t.id, page: 2, per_page: 2 });
    expect(ids(p2.sites)).toEqual([byUrl[2]!.id]);
    expect(p2.total).toBe(3);
    expect(await h.call('get-tag-sites-v1', { tag_id: fleet.tags.empty.id })).toMatchObject({ sites: [], total: 0 });
  });

  it('lists the clients of a tag by name with sites_with_tag', async () => {
    const t = fleet.tags.production;
    const r = await h.call('get-tag-clients-v1', { tag_id: t.id });
    const [beta, acme] = fleet.clients;
    expect(r).toMatchObject({ tag_id: t.id, tag_name: 'Production', page: 1, per_page: 20, total: 2 });
    expect(r.clients).toEqual([
      expect.objectContaining({ id: acme!.id, name: 'Acme Corp', email: 'it@acme.example', sites_with_tag: 2 }),
      expect.objectContaining({ id: beta!.id, name: 'Beta Ltd', email: 'ops@beta.example', sites_with_tag: 1 }),
    ]);
    expectSchema(r, schema('get-tag-clients-v1'));
    const p = await h.call('get-tag-clients-v1', { tag_id: t.id, per_page: 1, page: 2 });
    expect(ids(p.clients)).toEqual([beta!.id]);
    expect(await h.call('get-tag-clients-v1', { tag_id: fleet.tags.staging.id })).toMatchObject({ clients: [], total: 0 });
  });

  it.each(['get-tag-sites-v1', 'get-tag-clients-v1'] as const)('%s answers an unknown tag with 404', async (name) => {
    expect(await h.fails(name, { tag_id: 99999 })).toMatchObject({ status: 404, code: 'svc_tag_not_found' });
  });
});

describe('get-tag-sites-v1 and get-tag-clients-v1', () => {
  it('lists the sites in a tag, paged', async () => {
    const r = await h.call('get-tag-sites-v1', { tag_id: fleet.tags.production.id, per_page: 2, page: 2 });
    expect(r).toMatchObject({ tag_id: fleet.tags.production.id, tag_name: 'Production', total: 3 });
    expect(r.items).toHaveLength(1);
    expect((await h.call('get-tag-sites-v1', { tag_id: fleet.tags.empty.id })).total).toBe(0);
  });

  it("lists the clients of a tag's sites by name, with sites_with_tag", async () => {
    const [beta, acme] = fleet.clients;
    const r = await h.call('get-tag-clients-v1', { tag_id: fleet.tags.production.id });
    expect(r.items).toEqual([
      expect.objectContaining({ id: acme!.id, name: 'Acme Corp', sites_with_tag: 2 }),
      expect.objectContaining({ id: beta!.id, name: 'Beta Ltd', sites_with_tag: 1 }),
    ]);
    expect(await h.fails('get-tag-clients-v1', { tag_id: 99999 })).toMatchObject({ code: 'svc_tag_not_found' });
  });

  // Moved from test/rest-tags.test.ts ("/tags/{id}/clients after changes"): a rule of the tag's clients, not of the door.
  it('counts each client once, with the number of its sites in the tag; a removed site lets go of it', async () => {
    const [c1, c2] = await seedClients(h.services, [
      { name: 'Zed Client', email: 'z@example.com' },
      { name: 'Ann Client', email: 'a@example.com' },
    ]);
    const sites = await seedSites(h.services, 3, (i) => ({
      url: `https://cl${i}-${unique('x').replace(' ', '')}.example.com/`,
      client_id: i < 2 ? c1!.id : c2!.id,
    }));
    const t = await seedTag(h.services, unique('Clients'), ids(sites));
    const r = await h.call('get-tag-clients-v1', { tag_id: t.id });
    expect(r.total).toBe(2);
    expect(r.items.map((c) => [c.name, c.sites_with_tag])).toEqual([
      ['Ann Client', 1],
      ['Zed Client', 2],
    ]);
    await h.call('delete-site-v1', { site_id_or_domain: sites[2]!.id, confirm: true });
    expect((await h.call('get-tag-clients-v1', { tag_id: t.id })).items.map((c) => c.name)).toEqual(['Zed Client']);
  });
});

describe('add-tag-v1 and update-tag-v1', () => {
  it('creates a tag, with or without a colour', async () => {
    const name = unique('Created');
    const t = await h.call('add-tag-v1', { name, color: '#123abc' });
    expect(t).toMatchObject({ name, color: '#123abc', sites_count: 0, sites_ids: [] });
    expect(await h.call('get-tag-v1', { tag_id: t.id })).toEqual(t);
    expect((await h.call('add-tag-v1', { name: unique('Plain') })).color).toBeNull();
  });

  // Moved from test/rest-tags.test.ts (POST /tags/add): the uniqueness rule.
  it('refuses a duplicate name in any letter case with 409 svc_tag_exists', async () => {
    const name = unique('Twin');
    await h.call('add-tag-v1', { name });
    expect(await h.fails('add-tag-v1', { name: name.toUpperCase() })).toMatchObject({ code: 'svc_tag_exists', status: 409 });
    expect((await h.call('list-tags-v1', { search: name })).total).toBe(1);
  });

  it.each(['red', '#abc', '#12345g', '123456'])('refuses the colour %s naming color', async (color) => {
    expect(await h.fails('add-tag-v1', { name: unique('Colour'), color })).toMatchObject({
      code: 'ability_invalid_input',
      data: { params: { color: expect.any(String) } },
    });
  });

  it('renames and keeps the colour; a taken name is 409 and changes nothing; read-only callers may not', async () => {
    const taken = await h.call('add-tag-v1', { name: unique('Taken') });
    const t = await h.call('add-tag-v1', { name: unique('Edit me'), color: '#101010' });
    const name = unique('Edited');
    expect(await h.call('update-tag-v1', { tag_id: t.id, name })).toMatchObject({ id: t.id, name, color: '#101010' });
    expect(await h.call('update-tag-v1', { tag_id: t.id, color: '#202020' })).toMatchObject({ name, color: '#202020' });
    expect(await h.fails('update-tag-v1', { tag_id: t.id, name: taken.name.toLowerCase() })).toMatchObject({
      code: 'svc_tag_exists',
      status: 409,
    });
    expect(await h.fails('update-tag-v1', { tag_id: 99999, name: 'x' })).toMatchObject({ code: 'svc_tag_not_found', status: 404 });
    for (const who of [h.as.viewer, h.as.readKey, h.as.readOnlyLocal]) {
      expect(await h.fails('update-tag-v1', { tag_id: t.id, name: 'never' }, who)).toMatchObject({
        code: 'svc_permission_denied',
        status: 403,
      });
    }
    expect((await h.call('get-tag-v1', { tag_id: t.id })).name).toBe(name);
  });
});

describe('delete-tag-v1', () => {
  it('previews with dry_run, needs confirm, refuses both flags, then removes the tag and keeps its sites', async () => {
    const [site] = await seedSites(h.services, 1, () => ({ url: `https://${unique('tagged').replace(' ', '-')}.example.com/` }));
    const t = await seedTag(h.services, unique('Doomed'), [site!.id]);
    expect(await h.call('delete-tag-v1', { tag_id: t.id, dry_run: true })).toMatchObject({
      deleted: false,
      dry_run: true,
      sites_affected: 1,
      would_affect: { sites_count: 1, clients_count: 0 },
    });
    expect(await h.fails('delete-tag-v1', { tag_id: t.id })).toMatchObject({ code: 'svc_confirmation_required', status: 400 });
    expect(await h.fails('delete-tag-v1', { tag_id: t.id, confirm: true, dry_run: true })).toMatchObject({
      code: 'svc_invalid_input',
      status: 400,
    });
    expect((await h.call('get-tag-v1', { tag_id: t.id })).sites_count).toBe(1);
    expect(await h.call('delete-tag-v1', { tag_id: t.id, confirm: true })).toMatchObject({ deleted: true, tag_id: t.id, tag_name: t.name });
    expect(await h.fails('get-tag-v1', { tag_id: t.id })).toMatchObject({ code: 'svc_tag_not_found' });
    expect((await h.call('get-site-v1', { site_id_or_domain: site!.id })).tags).toEqual([]);
  });
});

// ---- Moved from test/abilities-door.test.ts ("abilities that change things"): the add, edit and delete rules. The
// schema refusals, confirm read from a DELETE query string and DELETE vs POST stay at the door.
describe('add-tag-v1, update-tag-v1 and delete-tag-v1 (rules)', () => {
  const newSite = async (fields: Record<string, unknown> = {}) => {
    const [site] = await seedSites(h.services, 1, () => ({ url: `https://${unique('w').replace(' ', '')}.example.com/`, ...fields }));
    return site!;
  };
  const newTag = (name?: string, siteIds: number[] = [], color: string | null = null) =>
    seedTag(h.services, name ?? unique('tag').replace(' ', '-'), siteIds, color);

  it('creates a tag with id, name, colour, no sites and timestamps', async () => {
    const r = await h.call('add-tag-v1', { name: 'Clients 2026', color: '#AABBCC' });
    expect(r).toMatchObject({ name: 'Clients 2026', color: '#AABBCC', sites_count: 0, sites_ids: [] });
    expect(Number.isInteger(r.id)).toBe(true);
    expect(new Date(r.created_at).toISOString()).toBe(r.created_at);
    expect(typeof r.updated_at).toBe('string');
    expectSchema(r, schema('add-tag-v1'));
    expect(await h.call('get-tag-v1', { tag_id: r.id })).toEqual(r);
  });

  it('stores no colour as null and drops markup from the name', async () => {
    expect(await h.call('add-tag-v1', { name: '  <b>Bold tag</b>  ' })).toMatchObject({ name: 'Bold tag', color: null });
  });

  it('refuses a duplicate name in any letter case with 409 svc_tag_exists', async () => {
    await h.call('add-tag-v1', { name: 'Duplicate Me' });
    for (const name of ['Duplicate Me', 'duplicate me', 'DUPLICATE ME']) {
      expect(await h.fails('add-tag-v1', { name })).toMatchObject({ status: 409, code: 'svc_tag_exists' });
    }
    expect((await h.call('list-tags-v1', { search: 'duplicate' })).total).toBe(1);
  });

  it('lets only one of two simultaneous adds of the same name through', async () => {
    const [a, b] = await Promise.allSettled([h.call('add-tag-v1', { name: 'Race Tag' }), h.call('add-tag-v1', { name: 'race tag' })]);
    expect([a!.status, b!.status].sort()).toEqual(['fulfilled', 'rejected']);
    expect(([a, b].find((x) => x!.status === 'rejected') as PromiseRejectedResult).reason).toMatchObject({
      status: 409,
      code: 'svc_tag_exists',
    });
    expect((await h.call('list-tags-v1', { search: 'race tag' })).total).toBe(1);
  });

  it('renames and keeps the colour; recolours and keeps the name; moves updated_at', async () => {
    const t = await newTag('Before', [], '#111111');
    const later = Date.parse(t.updated_at) + 60_000;
    h.services.tags.now = () => later;
    let renamed;
    try {
      renamed = await h.call('update-tag-v1', { tag_id: t.id, name: 'After' });
    } finally {
      h.services.tags.now = Date.now;
    }
    expect(renamed).toMatchObject({ id: t.id, name: 'After', color: '#111111', created_at: t.created_at });
    expect(renamed.updated_at).toBe(new Date(later).toISOString());
    expectSchema(renamed, schema('update-tag-v1'));
    expect(await h.call('update-tag-v1', { tag_id: t.id, color: '#222222' })).toMatchObject({ name: 'After', color: '#222222' });
  });

  it("refuses a name another tag has (any case) with 409, and accepts the tag's own name", async () => {
    await newTag('Taken Name');
    const t = await newTag('Mine');
    expect(await h.fails('update-tag-v1', { tag_id: t.id, name: 'taken name' })).toMatchObject({ status: 409, code: 'svc_tag_exists' });
    expect((await h.call('update-tag-v1', { tag_id: t.id, name: 'MINE' })).name).toBe('MINE');
  });

  it('answers an unknown tag with 404', async () => {
    expect(await h.fails('update-tag-v1', { tag_id: 99999, name: 'x' })).toMatchObject({ status: 404, code: 'svc_tag_not_found' });
  });

  it('previews a deletion with dry_run (no confirm needed): sites_affected and clients_count', async () => {
    const [client] = await seedClients(h.services, [{ name: 'Tag Client', email: 'tc@example.com' }]);
    const a = await newSite({ client_id: client!.id });
    const b = await newSite();
    const t = await newTag(undefined, [a.id, b.id]);
    const r = await h.call('delete-tag-v1', { tag_id: t.id, dry_run: true });
    expect(r).toMatchObject({
      dry_run: true,
      deleted: false,
      tag_id: t.id,
      tag_name: t.name,
      sites_affected: 2,
      would_affect: { id: t.id, name: t.name, sites_count: 2, clients_count: 1 },
    });
    expectSchema(r, schema('delete-tag-v1'));
    expect((await h.call('get-tag-v1', { tag_id: t.id })).id).toBe(t.id);
  });

  it('refuses a deletion with a missing or false confirm with 400 svc_confirmation_required', async () => {
    const t = await newTag();
    expect(await h.fails('delete-tag-v1', { tag_id: t.id })).toMatchObject({
      status: 400,
      code: 'svc_confirmation_required',
      message: 'Tag deletion requires confirmation. Set confirm:true to proceed.',
    });
    expect(await h.fails('delete-tag-v1', { tag_id: t.id, confirm: false })).toMatchObject({
      status: 400,
      code: 'svc_confirmation_required',
    });
    expect((await h.call('get-tag-v1', { tag_id: t.id })).id).toBe(t.id);
  });

  it('refuses dry_run and confirm together with 400 svc_invalid_input, before the lookup', async () => {
    expect(await h.fails('delete-tag-v1', { tag_id: 99999, dry_run: true, confirm: true })).toMatchObject({
      status: 400,
      code: 'svc_invalid_input',
      message: 'Cannot specify both dry_run and confirm.',
    });
  });

  it('answers an unknown tag with 404 for a dry run, a missing confirm and a confirmed delete', async () => {
    for (const input of [{ dry_run: true }, {}, { confirm: true }]) {
      expect(await h.fails('delete-tag-v1', { tag_id: 99999, ...input })).toMatchObject({ status: 404, code: 'svc_tag_not_found' });
    }
  });

  it('deletes with confirm: the sites stay, the grouping goes', async () => {
    const site = await newSite();
    const t1 = await newTag(undefined, [site.id]);
    const t2 = await newTag(undefined, [site.id]);
    const first = await h.call('delete-tag-v1', { tag_id: t1.id, confirm: true });
    expect(first).toMatchObject({ deleted: true, tag_id: t1.id, tag_name: t1.name });
    expectSchema(first, schema('delete-tag-v1'));
    expect(await h.call('delete-tag-v1', { tag_id: t2.id, confirm: true })).toMatchObject({ deleted: true, tag_id: t2.id });
    expect(await h.fails('get-tag-v1', { tag_id: t1.id })).toMatchObject({ status: 404, code: 'svc_tag_not_found' });
    expect(await h.fails('delete-tag-v1', { tag_id: t1.id, confirm: true })).toMatchObject({ status: 404, code: 'svc_tag_not_found' });
    expect((await h.call('get-site-v1', { site_id_or_domain: site.id })).tags).toEqual([]);
  });
});
