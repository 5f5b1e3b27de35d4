// Site abilities through the registry: lookups by id or domain, filters, edits and what they check, suspension,
// removal and what it lets go of — the rules, without a door. (Adding, syncing and the child side: child-sites.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InputOf } from '../../src/abilities/index.js';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { expectSchema, seedClients, seedFleet, seedTag, type Fleet } from '../support/fixtures.js';
import { seedSites } from '../support/server.js';

const ids = (list: Array<{ id: number }>) => list.map((x) => x.id);
let h: AbilityHarness;
let fleet: Fleet;
const at = (...idx: number[]) => idx.map((i) => fleet.sites[i]!.id);
let n = 0;
const newSite = async (fields: Record<string, unknown> = {}) => {
  n += 1;
  const [site] = await seedSites(h.services, 1, () => ({ url: `https://ab${n}.example.com/`, name: `Ab ${n}`, ...fields }));
  return site!;
};

beforeAll(async () => {
  h = await openAbilities();
  fleet = await seedFleet(h.services);
});
afterAll(() => h.close());

describe('list-sites-v1, get-sites-basic-v1, count-sites-v1', () => {
  // Moved from test/rest-sites.test.ts (GET /sites): what search matches.
  it('searches name and URL, any case', async () => {
    expect(ids((await h.call('list-sites-v1', { search: 'ECHO' })).items)).toEqual(at(4));
    expect(ids((await h.call('list-sites-v1', { search: 'example.org' })).items)).toEqual(at(1));
  });

  it('filters by status, client and tag', async () => {
    const fixed = at(0, 1, 2, 3, 4, 5);
    const list = async (i: object) => ids((await h.call('list-sites-v1', { include: fixed, ...i }, h.as.viewer)).items);
    expect(await list({ status: 'connected' })).toEqual(at(0, 3, 5));
    expect(await list({ status: 'suspended' })).toEqual(at(2, 4));
    expect(await list({ status: 'disconnected' })).toEqual(at(1));
    expect(await list({ status: 'available_update' })).toEqual(at(0));
    expect(await list({ client_id: fleet.clients[1]!.id })).toEqual(at(0, 1));
    expect(await list({ tag_id: fleet.tags.staging.id })).toEqual(at(3));
  });

  it('answers id, name and url only from get-sites-basic-v1, filtered by tags', async () => {
    const r = await h.call('get-sites-basic-v1', { tag_ids: [fleet.tags.production.id], per_page: 2 }, h.as.readKey);
    expect(r.total).toBe(3);
    expect(r.items).toEqual([
      { id: at(0)[0], name: 'Alpha', url: 'https://alpha.example.com/' },
      { id: at(1)[0], name: 'Bravo', url: 'http://www.bravo.example.org/' },
    ]);
    expect(r.sites).toEqual(r.items);
  });

  it('counts by status, include, exclude, client and tags', async () => {
    const fixed = at(0, 1, 2, 3, 4, 5);
    expect((await h.call('count-sites-v1', { include: fixed })).total).toBe(6);
    expect((await h.call('count-sites-v1', { include: fixed, exclude: at(0) })).total).toBe(5);
    expect((await h.call('count-sites-v1', { include: fixed, status: 'suspended' })).total).toBe(2);
    expect((await h.call('count-sites-v1', { status: 'connected', include: at(0, 1) })).total).toBe(1);
    expect((await h.call('count-sites-v1', { client_id: fleet.clients[0]!.id })).total).toBe(1);
    expect((await h.call('count-sites-v1', { tag_ids: [fleet.tags.production.id, fleet.tags.staging.id] })).total).toBe(4);
  });
});

describe('get-site-v1', () => {
  it('finds a site by id, by domain (any case, with or without www.) and answers an unknown one with the subject', async () => {
    const alpha = await h.call('get-site-v1', { site_id_or_domain: at(0)[0]! });
    expect(alpha).toMatchObject({ id: at(0)[0], name: 'Alpha', notes: 'first', client_id: fleet.clients[1]!.id });
    expect((await h.call('get-site-v1', { site_id_or_domain: 'WWW.alpha.example.com' })).id).toBe(alpha.id);
    expect((await h.call('get-site-v1', { site_id_or_domain: 'bravo.example.org' })).id).toBe(at(1)[0]);
    expect(await h.fails('get-site-v1', { site_id_or_domain: 'gone.example.com' })).toMatchObject({
      code: 'svc_site_not_found',
      status: 404,
      detail: { subject: { kind: 'site', ref: 'gone.example.com' } },
    });
  });
});

// ---- Moved from test/abilities-door.test.ts (list-sites-v1, get-site-v1, get-sites-basic-v1): the reading rules on
// the seeded fleet. They run before any test below adds a site (the file's tests run in order), so the seeded totals
// hold. The schema refusals, GET = POST, a GET without input and the 404 over GET stay at the door.
describe('list-sites-v1, get-site-v1 and get-sites-basic-v1 on the seeded fleet (rules)', () => {
  const outputSchema = (name: string) => h.registry.schemas(h.registry.get(name)!).output;
  const get = (input: InputOf<'get-site-v1'>) => h.call('get-site-v1', input);

  it('lists with the defaults: page 1, 20 per page, sorted by URL, items of id, url, name, status, client_id', async () => {
    const r = await h.call('list-sites-v1', {});
    expect(r).toMatchObject({ page: 1, per_page: 20, total: 6 });
    expect(ids(r.items)).toEqual(ids(fleet.sites));
    expect(r.items[1]).toEqual({
      id: fleet.sites[1]!.id,
      url: 'http://www.bravo.example.org/',
      name: 'Bravo',
      status: 'disconnected',
      client_id: fleet.clients[1]!.id,
    });
    for (const item of r.items) expect(Object.keys(item).sort()).toEqual(['client_id', 'id', 'name', 'status', 'url']);
    expectSchema(r, outputSchema('list-sites-v1'));
  });

  it('returns the full site by id, with tags and no stats by default', async () => {
    const a = fleet.sites[0]!;
    const r = await get({ site_id_or_domain: a.id });
    expect(r).toMatchObject({
      id: a.id,
      url: 'https://alpha.example.com/',
      name: 'Alpha',
      status: 'connected',
      client_id: fleet.clients[1]!.id,
      admin_username: 'admin',
      wp_version: '6.8',
      php_version: '8.2',
      child_version: '6.1',
      notes: 'first',
      tags: [{ id: fleet.tags.production.id, name: 'Production' }],
    });
    expect(typeof r.last_sync).toBe('string');
    expect(r).not.toHaveProperty('stats');
    expectSchema(r, outputSchema('get-site-v1'));
  });

  it('adds stats from stored data with include_stats', async () => {
    const r = await get({ site_id_or_domain: fleet.sites[0]!.id, include_stats: true });
    expect(r.stats).toEqual({ plugin_updates: 2, theme_updates: 1, wp_update_available: true, health_score: 87 });
    const never = await get({ site_id_or_domain: fleet.sites[5]!.id, include_stats: true });
    expect(never.stats).toEqual({ plugin_updates: 0, theme_updates: 0, wp_update_available: false, health_score: null });
    expect(never.last_sync).toBeNull();
    expectSchema(r, outputSchema('get-site-v1'));
  });

  it.each([
    ['bravo.example.org', 1],
    ['www.bravo.example.org', 1],
    ['WWW.BRAVO.EXAMPLE.ORG', 1],
    ['https://bravo.example.org/', 1],
    ['HTTP://www.Bravo.example.org', 1],
    ['alpha.example.com/', 0],
    ['http://alpha.example.com', 0],
    ['delta.example.com/blog', 3],
    ['2', 1],
  ] as const)('finds a site by %s', async (ref, idx) => {
    expect((await get({ site_id_or_domain: ref })).id).toBe(fleet.sites[idx]!.id);
  });

  it('answers an unknown id or domain with 404 svc_site_not_found', async () => {
    expect(await h.fails('get-site-v1', { site_id_or_domain: 99999 })).toMatchObject({
      status: 404,
      code: 'svc_site_not_found',
      message: 'No site found with ID 99999.',
    });
    expect(await h.fails('get-site-v1', { site_id_or_domain: 'nope.example' })).toMatchObject({
      status: 404,
      code: 'svc_site_not_found',
      message: 'No site found matching "nope.example".',
    });
    expect(await h.fails('get-site-v1', { site_id_or_domain: 'delta.example.com' })).toMatchObject({
      status: 404,
      code: 'svc_site_not_found',
    });
    expect(await h.fails('get-site-v1', { site_id_or_domain: 0 })).toMatchObject({ status: 404, code: 'svc_site_not_found' });
  });

  it('lists id, url and name only from get-sites-basic-v1, as sites[] (spec) and items[] (upstream), with the total', async () => {
    const r = await h.call('get-sites-basic-v1', {});
    expect(r.total).toBe(6);
    expect(r.sites).toEqual(fleet.sites.map((x) => ({ id: x.id, url: x.url, name: x.name })));
    expect(r.items).toEqual(r.sites);
    expect(r).toMatchObject({ page: 1, per_page: 20 });
    expectSchema(r, outputSchema('get-sites-basic-v1'));
  });

  it('pages get-sites-basic-v1 and filters it by status', async () => {
    const r = await h.call('get-sites-basic-v1', { per_page: 2, page: 3 });
    expect(ids(r.sites)).toEqual([fleet.sites[4]!.id, fleet.sites[5]!.id]);
    expect(r.total).toBe(6);
    const susp = await h.call('get-sites-basic-v1', { status: 'suspended' });
    expect(ids(susp.sites)).toEqual([fleet.sites[2]!.id, fleet.sites[4]!.id]);
  });
});

describe('update-site-v1', () => {
  it('edits name and notes, replaces the tags, sets and unassigns the client', async () => {
    const site = await newSite();
    const r = await h.call('update-site-v1', {
      site_id_or_domain: site.id,
      name: 'Renamed',
      notes: 'n',
      tags: [fleet.tags.staging.id, fleet.tags.empty.id],
    });
    expect(r).toMatchObject({ id: site.id, name: 'Renamed', notes: 'n' });
    expect((await h.call('get-tag-v1', { tag_id: fleet.tags.empty.id })).sites_ids).toEqual([site.id]);
    expect((await h.call('update-site-v1', { site_id_or_domain: site.id, client_id: fleet.clients[0]!.id })).client_id).toBe(
      fleet.clients[0]!.id,
    );
    expect((await h.call('update-site-v1', { site_id_or_domain: site.id, client_id: null })).client_id).toBeNull();
    await h.call('update-site-v1', { site_id_or_domain: site.id, tags: [] });
    expect((await h.call('get-tag-v1', { tag_id: fleet.tags.empty.id })).sites_ids).toEqual([]);
  });

  // Moved from test/rest-sites.test.ts (POST /sites/{id_or_domain}/edit): the domain lookup of an edit.
  it('finds the site by domain', async () => {
    const site = await newSite();
    const domain = site.url.replace('https://', 'www.').replace(/\/$/, '').toUpperCase();
    const r = await h.call('update-site-v1', { site_id_or_domain: domain, name: 'By domain' });
    expect(r.id).toBe(site.id);
  });

  it('answers unknown sites, tags and clients with 404 and changes nothing', async () => {
    const site = await newSite();
    expect(await h.fails('update-site-v1', { site_id_or_domain: 99999, name: 'x' })).toMatchObject({
      code: 'svc_site_not_found',
      status: 404,
    });
    expect(await h.fails('update-site-v1', { site_id_or_domain: site.id, name: 'Changed', tags: [99999] })).toMatchObject({
      code: 'svc_tag_not_found',
      status: 404,
    });
    expect(await h.fails('update-site-v1', { site_id_or_domain: site.id, name: 'Changed', client_id: 99999 })).toMatchObject({
      code: 'svc_client_not_found',
      status: 404,
    });
    expect(await h.fails('update-site-v1', { site_id_or_domain: site.id, name: 'Changed', colour: 'red' })).toMatchObject({
      code: 'ability_invalid_input',
    });
    expect((await h.call('get-site-v1', { site_id_or_domain: site.id })).name).toBe(site.name);
  });
});

describe('suspend-site-v1, unsuspend-site-v1, suspend-sites-v1', () => {
  it('suspends and unsuspends one site (idempotent), by id or domain; a viewer may not', async () => {
    const site = await newSite({ sync_error: 'HTTP error' });
    expect(await h.call('suspend-site-v1', { site_id_or_domain: site.id })).toMatchObject({
      suspended: true,
      site_id: site.id,
      status: 'suspended',
    });
    expect(await h.call('suspend-site-v1', { site_id_or_domain: site.url })).toMatchObject({ suspended: true, status: 'suspended' });
    expect(await h.fails('unsuspend-site-v1', { site_id_or_domain: site.id }, h.as.viewer)).toMatchObject({
      code: 'svc_permission_denied',
    });
    expect(await h.call('unsuspend-site-v1', { site_id_or_domain: site.id })).toMatchObject({ unsuspended: true, status: 'connected' });
    expect(await h.fails('suspend-site-v1', { site_id_or_domain: 'none.example.com' })).toMatchObject({ code: 'svc_site_not_found' });
  });

  it('suspends several sites, with an error per unknown one; none known is 404', async () => {
    const [a, b] = [await newSite(), await newSite()];
    const r = await h.call('suspend-sites-v1', { site_ids_or_domains: [a.id, b.url, 99999] });
    expect(r).toMatchObject({ queued: false, total_suspended: 2, total_errors: 1 });
    expect(ids(r.suspended!)).toEqual([a.id, b.id]);
    expect(r.errors).toEqual([expect.objectContaining({ identifier: 99999, code: 'svc_site_not_found' })]);
    expect((await h.call('get-site-v1', { site_id_or_domain: b.id })).status).toBe('suspended');
    expect(await h.fails('suspend-sites-v1', { site_ids_or_domains: [99998] })).toMatchObject({
      code: 'svc_site_not_found',
      status: 404,
      message: 'No valid sites found.',
      data: { errors: [expect.objectContaining({ identifier: 99998 })] },
    });
  });
});

describe('delete-site-v1', () => {
  it('previews with dry_run, needs confirm, then removes the site and lets go of its tags', async () => {
    const site = await newSite();
    const tag = await seedTag(h.services, `rm-${site.id}`, [site.id]);
    expect(await h.call('delete-site-v1', { site_id_or_domain: site.id, dry_run: true })).toMatchObject({ dry_run: true, deleted: false });
    expect(await h.fails('delete-site-v1', { site_id_or_domain: site.id })).toMatchObject({
      code: 'svc_confirmation_required',
      status: 400,
    });
    expect(await h.fails('delete-site-v1', { site_id_or_domain: site.id, confirm: true }, h.as.readKey)).toMatchObject({
      code: 'svc_permission_denied',
    });
    expect(await h.call('delete-site-v1', { site_id_or_domain: site.id, confirm: true })).toMatchObject({ dry_run: false, deleted: true });
    expect(await h.fails('get-site-v1', { site_id_or_domain: site.id })).toMatchObject({ code: 'svc_site_not_found' });
    expect(await h.call('get-tag-v1', { tag_id: tag.id })).toMatchObject({ sites_count: 0, sites_ids: [] });
    expect(await h.fails('delete-site-v1', { site_id_or_domain: site.id, confirm: true })).toMatchObject({ code: 'svc_site_not_found' });
  });
});

// ---- Moved from test/abilities-door.test.ts (list-sites-v1, count-sites-v1): the listing and counting rules, on a
// fleet of exactly the six seeded sites (its own harness: the tests above add sites).
describe('list-sites-v1 and count-sites-v1 on the seeded fleet (rules)', () => {
  let p: AbilityHarness;
  let six: Fleet;
  const list = (input: InputOf<'list-sites-v1'>) => p.call('list-sites-v1', input);
  const count = (input: InputOf<'count-sites-v1'>) => p.call('count-sites-v1', input);
  beforeAll(async () => {
    p = await openAbilities();
    six = await seedFleet(p.services);
  });
  afterAll(() => p.close());

  it('derives each status: suspended wins over a failed sync, a failed sync is disconnected', async () => {
    const r = await list({});
    expect(r.items.map((i) => i.status)).toEqual(['connected', 'disconnected', 'suspended', 'connected', 'suspended', 'connected']);
  });

  it.each([
    ['connected', [0, 3, 5]],
    ['disconnected', [1]],
    ['suspended', [2, 4]],
    ['available_update', [0]],
    ['any', [0, 1, 2, 3, 4, 5]],
  ] as const)('filters status=%s, and total counts the filtered sites', async (status, idx) => {
    const r = await list({ status });
    expect(ids(r.items)).toEqual(idx.map((i) => six.sites[i]!.id));
    expect(r.total).toBe(idx.length);
  });

  it('searches name and URL without regard to case', async () => {
    expect(ids((await list({ search: 'BRAVO' })).items)).toEqual([six.sites[1]!.id]);
    expect(ids((await list({ search: 'example.net' })).items)).toEqual([six.sites[2]!.id]);
    expect(ids((await list({ search: 'foxt' })).items)).toEqual([six.sites[5]!.id]);
    const none = await list({ search: 'zzz-no-match' });
    expect(none).toMatchObject({ items: [], total: 0 });
  });

  it('filters by client_id and by tag_id (items and total alike)', async () => {
    const acme = await list({ client_id: six.clients[1]!.id });
    expect(ids(acme.items)).toEqual([six.sites[0]!.id, six.sites[1]!.id]);
    const tagged = await list({ tag_id: six.tags.production.id, per_page: 2 });
    expect(ids(tagged.items)).toEqual([six.sites[0]!.id, six.sites[1]!.id]);
    expect(tagged.total).toBe(3);
    const empty = await list({ tag_id: six.tags.empty.id });
    expect(empty).toMatchObject({ items: [], total: 0 });
  });

  it('pages: page 2 of 2 per page, and a page past the end is empty with the full total', async () => {
    const p2 = await list({ page: 2, per_page: 2 });
    expect(ids(p2.items)).toEqual([six.sites[2]!.id, six.sites[3]!.id]);
    expect(p2).toMatchObject({ page: 2, per_page: 2, total: 6 });
    expect(await list({ page: 9999 })).toEqual({ items: [], page: 9999, per_page: 20, total: 6 });
  });

  it('counts all sites, then by status, client, tags, include and exclude', async () => {
    expect(await count({})).toEqual({ total: 6 });
    expect(await count({ status: 'suspended' })).toEqual({ total: 2 });
    expect(await count({ status: 'connected' })).toEqual({ total: 3 });
    expect(await count({ client_id: six.clients[1]!.id })).toEqual({ total: 2 });
    expect(await count({ tag_ids: [six.tags.production.id, six.tags.staging.id] })).toEqual({ total: 4 });
    expect(await count({ include: [six.sites[0]!.id, six.sites[2]!.id], exclude: [six.sites[2]!.id] })).toEqual({ total: 1 });
    expect(await count({ client_id: 999 })).toEqual({ total: 0 });
    expectSchema(await count({}), p.registry.schemas(p.registry.get('count-sites-v1')!).output);
  });
});

// ---- Moved from test/abilities-door.test.ts ("abilities that change things"): the edit and delete rules.
describe('update-site-v1 and delete-site-v1 (rules)', () => {
  const newTag = async (siteIds: number[] = []) => {
    n += 1;
    return seedTag(h.services, `tag-${n}`, siteIds);
  };
  const getSite = (id: number) => h.call('get-site-v1', { site_id_or_domain: id });
  const schema = (name: string) => h.registry.schemas(h.registry.get(name)!).output;

  it('changes only the fields given and returns the full site', async () => {
    const site = await newSite({ notes: 'keep me' });
    const r = await h.call('update-site-v1', { site_id_or_domain: site.id, name: 'Renamed' });
    expect(r).toMatchObject({ id: site.id, name: 'Renamed', notes: 'keep me', url: site.url });
    expectSchema(r, schema('update-site-v1'));
    const n2 = await h.call('update-site-v1', { site_id_or_domain: site.url, notes: 'new notes' });
    expect(n2).toMatchObject({ name: 'Renamed', notes: 'new notes' });
    expect(await getSite(site.id)).toMatchObject({ name: 'Renamed', notes: 'new notes' });
  });

  it('assigns a client and unassigns it with null', async () => {
    const site = await newSite();
    const [client] = await seedClients(h.services, [{ name: 'Client X', email: 'x@example.com' }]);
    expect((await h.call('update-site-v1', { site_id_or_domain: site.id, client_id: client!.id })).client_id).toBe(client!.id);
    expect((await h.call('update-site-v1', { site_id_or_domain: site.id, client_id: null })).client_id).toBeNull();
  });

  it('replaces the tags with the list given, and [] clears them', async () => {
    const site = await newSite();
    const t1 = await newTag([site.id]);
    const t2 = await newTag();
    const t3 = await newTag();
    const r = await h.call('update-site-v1', { site_id_or_domain: site.id, tags: [t3.id, t2.id] });
    expect(r.tags.map((t) => t.id).sort()).toEqual([t2.id, t3.id].sort());
    expect((await h.call('get-tag-v1', { tag_id: t1.id })).sites_ids).toEqual([]);
    expect((await h.call('get-tag-v1', { tag_id: t2.id })).sites_ids).toEqual([site.id]);
    expect((await h.call('update-site-v1', { site_id_or_domain: site.id, tags: [] })).tags).toEqual([]);
  });

  it('answers an unknown site, client or tag with 404 and changes nothing', async () => {
    const site = await newSite();
    expect(await h.fails('update-site-v1', { site_id_or_domain: 99999, name: 'x' })).toMatchObject({
      status: 404,
      code: 'svc_site_not_found',
      message: 'No site found with ID 99999.',
    });
    expect(await h.fails('update-site-v1', { site_id_or_domain: site.id, name: 'Changed', client_id: 99999 })).toMatchObject({
      status: 404,
      code: 'svc_client_not_found',
    });
    expect(await h.fails('update-site-v1', { site_id_or_domain: site.id, name: 'Changed', tags: [99999] })).toMatchObject({
      status: 404,
      code: 'svc_tag_not_found',
    });
    expect((await getSite(site.id)).name).toBe(site.name);
  });

  it('previews with dry_run and no confirm, and deletes nothing', async () => {
    const site = await newSite();
    const r = await h.call('delete-site-v1', { site_id_or_domain: site.id, dry_run: true });
    expect(r).toMatchObject({
      dry_run: true,
      deleted: false,
      site_id: site.id,
      site_url: site.url,
      would_affect: { id: site.id, url: site.url, name: site.name },
    });
    expect(r.warnings).toHaveLength(4);
    expectSchema(r, schema('delete-site-v1'));
    expect((await getSite(site.id)).id).toBe(site.id);
  });

  it('refuses a missing or false confirm with 400 svc_confirmation_required', async () => {
    const site = await newSite();
    for (const input of [{}, { confirm: false }, { dry_run: false }]) {
      expect(await h.fails('delete-site-v1', { site_id_or_domain: site.id, ...input })).toMatchObject({
        status: 400,
        code: 'svc_confirmation_required',
        message: 'Deletion requires confirm parameter to be true.',
      });
    }
    expect((await getSite(site.id)).id).toBe(site.id);
  });

  it('refuses dry_run and confirm together with 400 svc_invalid_input, before looking the site up', async () => {
    const site = await newSite();
    expect(await h.fails('delete-site-v1', { site_id_or_domain: site.id, dry_run: true, confirm: true })).toMatchObject({
      status: 400,
      code: 'svc_invalid_input',
      message: 'Cannot specify both dry_run and confirm.',
    });
    expect(await h.fails('delete-site-v1', { site_id_or_domain: 99999, dry_run: true, confirm: true })).toMatchObject({
      status: 400,
      code: 'svc_invalid_input',
    });
    expect((await getSite(site.id)).id).toBe(site.id);
  });

  it('answers an unknown site with 404 before the confirm check, also for a dry run', async () => {
    expect(await h.fails('delete-site-v1', { site_id_or_domain: 99999 })).toMatchObject({ status: 404, code: 'svc_site_not_found' });
    expect(await h.fails('delete-site-v1', { site_id_or_domain: 'gone.example', dry_run: true })).toMatchObject({
      status: 404,
      code: 'svc_site_not_found',
    });
    expect(await h.fails('delete-site-v1', { site_id_or_domain: 99999, confirm: true })).toMatchObject({
      status: 404,
      code: 'svc_site_not_found',
    });
  });

  it('deletes with confirm: the site is gone and its tags no longer count it', async () => {
    const site = await newSite();
    const other = await newSite();
    const tag = await newTag([site.id, other.id]);
    const r = await h.call('delete-site-v1', { site_id_or_domain: site.id, confirm: true });
    expect(r).toMatchObject({ deleted: true, dry_run: false, site_id: site.id, site_url: site.url });
    expectSchema(r, schema('delete-site-v1'));
    expect(await h.fails('get-site-v1', { site_id_or_domain: site.id })).toMatchObject({ status: 404, code: 'svc_site_not_found' });
    expect(await h.call('get-tag-v1', { tag_id: tag.id })).toMatchObject({ sites_count: 1, sites_ids: [other.id] });
    expect(await h.fails('delete-site-v1', { site_id_or_domain: site.id, confirm: true })).toMatchObject({
      status: 404,
      code: 'svc_site_not_found',
    });
  });
});

// ---- Moved from test/abilities-door.test.ts ("abilities that change things"): the suspension rules. The schema
// refusals stay at the door.
describe('suspend-site-v1, unsuspend-site-v1 and suspend-sites-v1 (rules)', () => {
  const getSite = (id: number) => h.call('get-site-v1', { site_id_or_domain: id });
  const schema = (name: string) => h.registry.schemas(h.registry.get(name)!).output;

  it('suspends (again without error) and answers suspended, site_id, site_url, status', async () => {
    const site = await newSite();
    for (let i = 0; i < 2; i++) {
      const r = await h.call('suspend-site-v1', { site_id_or_domain: site.id });
      expect(r).toMatchObject({ suspended: true, site_id: site.id, site_url: site.url, status: 'suspended' });
      expect(r.site).toMatchObject({ id: site.id, status: 'suspended' });
      expectSchema(r, schema('suspend-site-v1'));
    }
    expect((await getSite(site.id)).status).toBe('suspended');
  });

  it("unsuspends to connected, as the spec's state table says, even after a failed sync", async () => {
    const site = await newSite({ suspended: true, sync_error: 'HTTP error' });
    expect((await getSite(site.id)).status).toBe('suspended');
    const r = await h.call('unsuspend-site-v1', { site_id_or_domain: site.url });
    expect(r).toMatchObject({ unsuspended: true, site_id: site.id, site_url: site.url, status: 'connected' });
    expectSchema(r, schema('unsuspend-site-v1'));
    expect((await getSite(site.id)).status).toBe('connected');
  });

  it.each(['suspend-site-v1', 'unsuspend-site-v1'] as const)('%s answers unknown sites with 404', async (name) => {
    expect(await h.fails(name, { site_id_or_domain: 99999 })).toMatchObject({
      status: 404,
      code: 'svc_site_not_found',
      message: 'No site found with ID 99999.',
    });
    expect(await h.fails(name, { site_id_or_domain: 'nowhere.example' })).toMatchObject({ status: 404, code: 'svc_site_not_found' });
  });

  it('suspends the sites it finds and reports each unknown identifier, keeping its JSON type', async () => {
    const a = await newSite();
    const b = await newSite();
    const r = await h.call('suspend-sites-v1', {
      site_ids_or_domains: [a.id, b.url.replace('https://', ''), 999999, 'nope.example', a.id],
    });
    expect(r.suspended).toEqual([
      { id: a.id, url: a.url, name: a.name, suspended: 1 },
      { id: b.id, url: b.url, name: b.name, suspended: 1 },
    ]);
    expect(r.errors).toEqual([
      { identifier: 999999, code: 'svc_site_not_found', message: 'No site found with ID 999999.', status: 404 },
      { identifier: 'nope.example', code: 'svc_site_not_found', message: 'No site found matching "nope.example".', status: 404 },
    ]);
    expect(r).toMatchObject({ total_suspended: 2, total_errors: 2 });
    expectSchema(r, schema('suspend-sites-v1'));
    expect((await getSite(a.id)).status).toBe('suspended');
    expect((await getSite(b.id)).status).toBe('suspended');
  });

  it('answers 404 svc_site_not_found when no identifier names a site, or the list is empty', async () => {
    expect(await h.fails('suspend-sites-v1', { site_ids_or_domains: [999999, 'nope.example'] })).toMatchObject({
      status: 404,
      code: 'svc_site_not_found',
      message: 'No valid sites found.',
    });
    expect(await h.fails('suspend-sites-v1', { site_ids_or_domains: [] })).toMatchObject({ status: 404, code: 'svc_site_not_found' });
  });
});

// Issue 27, item 14: sites were sorted as text (site1, site10, site2); tag names likewise.
describe('natural order of sites and names', () => {
  it('lists sites by domain with numbers as numbers: nat2 before nat10, and so in a tag', async () => {
    const made = await seedSites(h.services, 4, (i) => ({ url: `https://nat${[10, 2, 1, 2][i]}.example.com/${i === 3 ? 'b' : ''}` }));
    const [n10, n2, n1, n2b] = made.map((x) => x.id);
    const r = await h.call('list-sites-v1', { include: made.map((x) => x.id) });
    expect(r.items.map((x) => x.url)).toEqual([
      'https://nat1.example.com/',
      'https://nat2.example.com/',
      'https://nat2.example.com/b',
      'https://nat10.example.com/',
    ]);
    expect(ids(r.items)).toEqual([n1, n2, n2b, n10]);
    const tag = await seedTag(h.services, 'natural', [n10!, n2!, n1!]);
    expect(ids((await h.call('get-tag-sites-v1', { tag_id: tag.id })).items)).toEqual([n1, n2, n10]);
  });

  it('lists tags by name with numbers as numbers', async () => {
    for (const name of ['Wave 10', 'Wave 2', 'wave 1']) await h.call('add-tag-v1', { name });
    const names = (await h.call('list-tags-v1', { search: 'wave' })).items.map((t) => t.name);
    expect(names).toEqual(['wave 1', 'Wave 2', 'Wave 10']);
  });
});
