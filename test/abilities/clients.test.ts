// Client and client-field abilities through the registry: lookups by id or email, status rules, suspension of a
// client's sites, removal (its sites stay, unassigned), custom fields and their values — without a door.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_CLIENT_FIELDS } from '../../src/domain/client-fields.js';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { expectSchema, invalidInput, seedFleet, type Fleet } from '../support/fixtures.js';
import { seedSites } from '../support/server.js';

let h: AbilityHarness;
let fleet: Fleet;
let n = 0;
const uniq = (p: string) => {
  n += 1;
  return `${p}${n}`;
};
const sitesFor = async (count: number) => seedSites(h.services, count, () => ({ url: `https://${uniq('cl')}.example.com/` }));

beforeAll(async () => {
  h = await openAbilities();
  fleet = await seedFleet(h.services);
});
afterAll(() => h.close());

describe('add-client-v1, get-client-v1, list-clients-v1, count-clients-v1', () => {
  it('adds a client with its sites, finds it by id or email (any case), lists and counts by status', async () => {
    const sites = await sitesFor(2);
    const c = await h.call('add-client-v1', {
      name: 'Listed Co',
      email: 'Boss@Listed.example',
      status: 'lead',
      city: 'Oslo',
      selected_sites: sites.map((s) => s.id),
    });
    expect(c).toMatchObject({ name: 'Listed Co', status: 'lead', city: 'Oslo', sites_count: 2 });
    expect((await h.call('get-client-v1', { client_id_or_email: 'boss@listed.example' }, h.as.viewer)).id).toBe(c.id);
    expect((await h.call('get-client-v1', { client_id_or_email: c.id })).name).toBe('Listed Co');
    const leads = await h.call('list-clients-v1', { status: 'lead', search: 'listed' });
    expect(leads.items.map((x) => x.id)).toEqual([c.id]);
    expect((await h.call('count-clients-v1', { status: 'lead' })).total).toBeGreaterThanOrEqual(1);
    const before = (await h.call('count-clients-v1', {})).total;
    await h.call('add-client-v1', { name: uniq('Another ') });
    expect((await h.call('count-clients-v1', { status: 'any' })).total).toBe(before + 1);
  });

  it('refuses an unknown client, a bad status, an unknown site and a read-only caller', async () => {
    expect(await h.fails('get-client-v1', { client_id_or_email: 'nobody@example.com' })).toMatchObject({
      code: 'svc_client_not_found',
      status: 404,
    });
    expect(await h.fails('add-client-v1', { name: 'X', status: 'vip' })).toMatchObject({
      code: 'ability_invalid_input',
      data: { params: { status: expect.any(String) } },
    });
    expect(await h.fails('add-client-v1', { name: uniq('Ghost sites '), selected_sites: [99999] })).toMatchObject({ status: 404 });
    expect(await h.fails('add-client-v1', { name: 'Never' }, h.as.viewer)).toMatchObject({ code: 'svc_permission_denied' });
  });
});

describe('the e-mail and lookup rules', () => {
  // Moved from test/clients.test.ts (add-client-v1, get-client-v1, update-client-v1): rules of the client service.
  it('refuses an e-mail another client has (any letter case) with 409', async () => {
    expect(await h.fails('add-client-v1', { name: 'Copy', email: 'IT@acme.example' })).toMatchObject({
      status: 409,
      code: 'svc_client_exists',
      message: `A client with e-mail "IT@acme.example" already exists (ID ${fleet.clients[1]!.id}).`,
    });
  });

  it('answers an unknown client with 404 svc_client_not_found, by id or by e-mail', async () => {
    expect(await h.fails('get-client-v1', { client_id_or_email: 999 })).toMatchObject({
      status: 404,
      code: 'svc_client_not_found',
      message: 'No client found with ID 999.',
    });
    expect(await h.fails('get-client-v1', { client_id_or_email: 'who@nowhere.example' })).toMatchObject({
      status: 404,
      code: 'svc_client_not_found',
      message: 'No client found matching "who@nowhere.example".',
    });
  });
});

describe('update-client-v1, suspend-client-v1, unsuspend-client-v1', () => {
  it('updates fields and assigns more sites (those it had stay); suspending suspends its sites and unsuspending brings them back', async () => {
    const [a, b] = await sitesFor(2);
    const c = await h.call('add-client-v1', { name: uniq('Upd '), email: `${uniq('u')}@example.com`, selected_sites: [a!.id] });
    const u = await h.call('update-client-v1', { client_id_or_email: c.id, phone: '+47 1', selected_sites: [b!.id] });
    expect(u).toMatchObject({ id: c.id, phone: '+47 1', sites_count: 2 });
    expect((await h.call('get-site-v1', { site_id_or_domain: a!.id })).client_id).toBe(c.id);
    const s = await h.call('suspend-client-v1', { client_id_or_email: c.email });
    expect(s).toMatchObject({ suspended: true, client: { status: 'suspended' }, sites_count: 2 });
    expect((await h.call('get-site-v1', { site_id_or_domain: b!.id })).status).toBe('suspended');
    const back = await h.call('unsuspend-client-v1', { client_id_or_email: c.id });
    expect(back).toMatchObject({ unsuspended: true, client: { status: 'active' } });
    expect((await h.call('get-site-v1', { site_id_or_domain: b!.id })).status).not.toBe('suspended');
    expect(await h.fails('update-client-v1', { client_id_or_email: 99999, name: 'x' })).toMatchObject({ code: 'svc_client_not_found' });
  });
});

describe('count-client-sites-v1, get-client-sites-v1, get-site-client-v1', () => {
  it("counts and lists a client's sites, and names a site's client (or none)", async () => {
    const sites = await sitesFor(3);
    const c = await h.call('add-client-v1', { name: uniq('Owner '), selected_sites: sites.slice(0, 2).map((s) => s.id) });
    expect(await h.call('count-client-sites-v1', { client_id_or_email: c.id })).toEqual({ client_id: c.id, total: 2 });
    const list = await h.call('get-client-sites-v1', { client_id_or_email: c.id, per_page: 1 });
    expect(list).toMatchObject({ client_id: c.id, client_name: c.name, total: 2 });
    expect(list.items).toHaveLength(1);
    expect((await h.call('get-site-client-v1', { site_id_or_domain: sites[0]!.id })).client).toMatchObject({ id: c.id });
    expect((await h.call('get-site-client-v1', { site_id_or_domain: sites[2]!.id })).client).toBeNull();
  });
});

describe('delete-client-v1', () => {
  it('previews, needs confirm, then deletes; its sites stay unassigned', async () => {
    const [site] = await sitesFor(1);
    const c = await h.call('add-client-v1', { name: uniq('Gone '), selected_sites: [site!.id] });
    expect(await h.call('delete-client-v1', { client_id_or_email: c.id, dry_run: true })).toMatchObject({
      deleted: false,
      dry_run: true,
      sites_unassigned: 1,
      would_affect: { sites_count: 1 },
    });
    expect(await h.fails('delete-client-v1', { client_id_or_email: c.id })).toMatchObject({ code: 'svc_confirmation_required' });
    expect(await h.fails('delete-client-v1', { client_id_or_email: c.id, dry_run: true, confirm: true })).toMatchObject({
      code: 'svc_invalid_input',
    });
    expect(await h.call('delete-client-v1', { client_id_or_email: c.id, confirm: true })).toMatchObject({ deleted: true, client_id: c.id });
    expect(await h.fails('get-client-v1', { client_id_or_email: c.id })).toMatchObject({ code: 'svc_client_not_found' });
    const kept = await h.call('get-site-v1', { site_id_or_domain: site!.id });
    expect(kept.client_id).toBeNull();
  });
});

// ---- Moved from test/client-fields.test.ts: the field and value rules (names unique in any case, bounds, edits by id
// or name, values kept and cleared, lookups by value, what deleting a field or a client takes along). They run before
// any other test here defines a field (the file's tests run in order), so the totals hold. Acme's e-mail differs from
// the seeded Acme Corp's. The REST envelopes, pre_page, PATCH, the REST delete and read-only callers stay at the door.
describe('client fields and their values (rules)', () => {
  let acme: number;
  let globex: number;
  const valuesOf = (id: number) => h.services.clientFields.valuesOf(id);
  beforeAll(async () => {
    acme = (await h.call('add-client-v1', { name: 'Acme', email: 'it@acme-fields.example' })).id;
    globex = (await h.call('add-client-v1', { name: 'Globex' })).id;
  });

  it('adds fields and lists them by name', async () => {
    const a = await h.call('add-client-field-v1', { name: 'Plan', description: 'Support plan' });
    expect(a).toMatchObject({ id: expect.any(Number), name: 'Plan', description: 'Support plan', clients_count: 0 });
    expect(await h.call('add-client-field-v1', { name: 'Account manager' })).toMatchObject({ name: 'Account manager', description: '' });
    expect(await h.call('list-client-fields-v1', { per_page: 1 })).toMatchObject({ total: 2, items: [{ name: 'Account manager' }] });
    const searched = await h.call('list-client-fields-v1', { search: 'support' });
    expect(searched.items.map((f) => f.name)).toEqual(['Plan']);
  });

  it('refuses a duplicate name (any case), an empty or digits-only name and a too long one', async () => {
    expect(await h.fails('add-client-field-v1', { name: 'plan', description: 'x' })).toMatchObject({
      status: 409,
      code: 'svc_client_field_exists',
    });
    expect(await h.fails('add-client-field-v1', { name: '  <b></b> ' })).toMatchObject({ status: 400, code: 'svc_invalid_input' });
    expect((await h.fails('add-client-field-v1', { name: '42' })).status).toBe(400);
    expect((await h.fails('add-client-field-v1', { name: 'x'.repeat(101) })).status).toBe(400);
    expect((await h.call('list-client-fields-v1', {})).total).toBe(2);
  });

  it('edits a field by id or name; unknown is 404, a clash 409', async () => {
    const e = await h.call('update-client-field-v1', { field: 'Plan', description: 'Support plan (gold, silver)' });
    expect(e).toMatchObject({ name: 'Plan', description: 'Support plan (gold, silver)' });
    const id = e.id;
    expect(await h.call('update-client-field-v1', { field: id, name: 'Support plan' })).toMatchObject({ id, name: 'Support plan' });
    expect(await h.fails('update-client-field-v1', { field: id, name: 'account MANAGER' })).toMatchObject({
      status: 409,
      code: 'svc_client_field_exists',
    });
    expect(await h.fails('update-client-field-v1', { field: 'nosuch', name: 'x' })).toMatchObject({
      status: 404,
      code: 'svc_client_field_not_found',
    });
    expect(await h.fails('update-client-field-v1', { field: id })).toMatchObject({ status: 400, code: 'svc_missing_fields' });
  });

  it('holds the number of fields to its bound', async () => {
    const have = (await h.call('list-client-fields-v1', {})).total;
    await h.services.store.write((tx) => {
      for (let i = have; i < MAX_CLIENT_FIELDS; i++) h.services.clientFields.create(tx, { name: `Bulk ${i}`, description: '' });
    });
    expect(await h.fails('add-client-field-v1', { name: 'One too many' })).toMatchObject({ status: 409, code: 'svc_client_field_limit' });
    await h.services.store.write((tx) => {
      for (const f of h.services.clientFields.list({ search: 'Bulk ' })) h.services.clientFields.delete(tx, f.id);
    });
  });

  it('sets values by field name or id (client by id or e-mail), reads them back; other fields keep theirs', async () => {
    const r = await h.call('set-client-field-values-v1', {
      client_id_or_email: acme,
      values: { 'Support plan': 'Gold', 'Account manager': 'Dana' },
    });
    expect(r.updated).toEqual(['Support plan', 'Account manager']);
    const plan = h.services.clientFields.resolveRef('support plan');
    await h.call('set-client-field-values-v1', { client_id_or_email: 'it@acme-fields.example', values: { [String(plan.id)]: 'Silver' } });
    expect(await h.call('get-client-field-values-v1', { client_id_or_email: acme })).toEqual({
      client_id: acme,
      fields: [
        { id: expect.any(Number), name: 'Account manager', value: 'Dana' },
        { id: plan.id, name: 'Support plan', value: 'Silver' },
      ],
    });
    const other = await h.call('get-client-field-values-v1', { client_id_or_email: globex });
    expect(other.fields.every((f) => f.value === null)).toBe(true);
    await h.call('set-client-field-values-v1', { client_id_or_email: globex, values: { 'Support plan': 'gold plus' } });
  });

  it('changes nothing when one field is unknown; refuses an empty set, a too long value, a field twice and an unknown client', async () => {
    const bad = await h.fails('set-client-field-values-v1', {
      client_id_or_email: acme,
      values: { 'Account manager': 'Lee', Colour: 'red' },
    });
    expect([bad.status, bad.code]).toEqual([404, 'svc_client_field_not_found']);
    expect(bad.message).toContain('Colour');
    expect(valuesOf(acme).find((f) => f.name === 'Account manager')!.value).toBe('Dana');
    expect(await h.fails('set-client-field-values-v1', { client_id_or_email: acme, values: {} })).toMatchObject({
      status: 400,
      code: 'svc_missing_fields',
    });
    const long = await h.fails('set-client-field-values-v1', { client_id_or_email: acme, values: { 'Account manager': 'x'.repeat(2001) } });
    expect(long.status).toBe(400);
    const twice = await h.fails('set-client-field-values-v1', {
      client_id_or_email: acme,
      values: { 'Account manager': 'a', 'account manager': 'b' },
    });
    expect(twice.status).toBe(400);
    expect(await h.fails('get-client-field-values-v1', { client_id_or_email: 999 })).toMatchObject({
      status: 404,
      code: 'svc_client_not_found',
    });
  });

  it('finds clients by a value: exact, contains, set (case-insensitive)', async () => {
    const exact = await h.call('list-clients-by-field-v1', { field: 'Support plan', value: 'silver' });
    expect(exact).toMatchObject({ total: 1, items: [{ id: acme, name: 'Acme' }] });
    const contains = await h.call('list-clients-by-field-v1', { field: 'Support plan', value: 'GOLD', match: 'contains' });
    expect(contains.items.map((c) => c.id)).toEqual([globex]);
    const set = await h.call('list-clients-by-field-v1', { field: 'Support plan', match: 'set' });
    expect(set.items.map((c) => c.name)).toEqual(['Acme', 'Globex']);
    expect((await h.fails('list-clients-by-field-v1', { field: 'nosuch' })).status).toBe(404);
  });

  it('clears a value with null or ""', async () => {
    await h.call('set-client-field-values-v1', { client_id_or_email: acme, values: { 'Account manager': null } });
    expect(valuesOf(acme).find((f) => f.name === 'Account manager')!.value).toBeNull();
    await h.call('set-client-field-values-v1', { client_id_or_email: globex, values: { 'Support plan': '' } });
    expect(valuesOf(globex).every((f) => f.value === null)).toBe(true);
  });

  it('a field needs confirm, previews with dry_run, and takes its values along', async () => {
    expect(await h.fails('delete-client-field-v1', { field: 'Support plan' })).toMatchObject({
      status: 400,
      code: 'svc_confirmation_required',
    });
    expect(await h.call('delete-client-field-v1', { field: 'Support plan', dry_run: true })).toMatchObject({
      deleted: false,
      dry_run: true,
      values_removed: 1,
      field: { name: 'Support plan', clients_count: 1 },
    });
    expect(await h.call('delete-client-field-v1', { field: 'Support plan', confirm: true })).toMatchObject({ values_removed: 1 });
    expect(valuesOf(acme).map((f) => f.name)).toEqual(['Account manager']);
    expect(await h.fails('delete-client-field-v1', { field: 'Support plan', confirm: true })).toMatchObject({
      status: 404,
      code: 'svc_client_field_not_found',
    });
  });

  it("a deleted client's values go with it", async () => {
    await h.call('set-client-field-values-v1', { client_id_or_email: globex, values: { 'Account manager': 'Kim' } });
    expect(h.services.clientFields.usedBy(h.services.clientFields.resolveRef('Account manager').id)).toEqual([globex]);
    await h.call('delete-client-v1', { client_id_or_email: globex, confirm: true });
    expect(h.services.store.get('client_field_values', globex)).toBeUndefined();
  });
});

describe('client fields', () => {
  it('adds, lists, renames and deletes a field; names are unique', async () => {
    const f = await h.call('add-client-field-v1', { name: 'Contract', description: 'Contract number' });
    expect(f).toMatchObject({ name: 'Contract', description: 'Contract number', clients_count: 0 });
    expect(await h.fails('add-client-field-v1', { name: 'contract' })).toMatchObject({ status: 409 });
    expect((await h.call('list-client-fields-v1', { search: 'contr' })).items.map((x) => x.id)).toEqual([f.id]);
    expect(await h.call('update-client-field-v1', { field: f.id, name: 'Contract no' })).toMatchObject({
      id: f.id,
      name: 'Contract no',
      description: 'Contract number',
    });
    expect(await h.fails('update-client-field-v1', { field: 99999, name: 'x' })).toMatchObject({ status: 404 });
  });

  it('sets and reads values, finds clients by value, and a deleted field takes its values with it', async () => {
    const f = await h.call('add-client-field-v1', { name: uniq('Tier ') });
    const gold = await h.call('add-client-v1', { name: uniq('Gold ') });
    const silver = await h.call('add-client-v1', { name: uniq('Silver ') });
    const set = await h.call('set-client-field-values-v1', { client_id_or_email: gold.id, values: { [f.name]: 'gold' } });
    expect(set.updated).toEqual([f.name]);
    await h.call('set-client-field-values-v1', { client_id_or_email: silver.id, values: { [String(f.id)]: 'silver-gold' } });
    const read = await h.call('get-client-field-values-v1', { client_id_or_email: gold.id });
    expect(read.fields).toContainEqual({ id: f.id, name: f.name, value: 'gold' });
    expect((await h.call('list-clients-by-field-v1', { field: f.id, value: 'gold' })).items.map((c) => c.id)).toEqual([gold.id]);
    expect((await h.call('list-clients-by-field-v1', { field: f.name, value: 'gold', match: 'contains' })).total).toBe(2);
    expect(await h.fails('set-client-field-values-v1', { client_id_or_email: gold.id, values: { 'no such field': 'x' } })).toMatchObject({
      status: 404,
    });
    expect(await h.fails('delete-client-field-v1', { field: f.id })).toMatchObject({ code: 'svc_confirmation_required' });
    expect(await h.call('delete-client-field-v1', { field: f.id, dry_run: true })).toMatchObject({ deleted: false, values_removed: 2 });
    expect(await h.call('delete-client-field-v1', { field: f.id, confirm: true })).toMatchObject({ deleted: true, values_removed: 2 });
    expect((await h.call('get-client-field-values-v1', { client_id_or_email: gold.id })).fields.some((x) => x.id === f.id)).toBe(false);
  });
});

// ---- Moved from test/clients.test.ts: the list, count, relation and deletion rules, each describe on a fleet of
// its own (ids 1..6 as seedFleet makes them on a fresh store). Beta Ltd owns charlie (3); Acme Corp owns alpha (1)
// and bravo (2).

interface World {
  h: AbilityHarness;
  fleet: Fleet;
}
async function world(): Promise<World> {
  const w = await openAbilities();
  return { h: w, fleet: await seedFleet(w.services) };
}
const names = (items: Array<{ name: string }>) => items.map((c) => c.name);
const outputSchema = (w: World, name: string) => w.h.registry.schemas(w.h.registry.get(name)!).output;

describe('list-clients-v1 and count-clients-v1 (rules)', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
    await w.h.call('add-client-v1', { name: 'Zeta', email: 'z@zeta.example', status: 'lost' });
    await w.h.call('add-client-v1', { name: 'alpha agency', status: 'lead' });
  });
  afterAll(() => w.h.close());

  it('lists by name (any case), paged, with sites_count', async () => {
    const r = await w.h.call('list-clients-v1', {});
    expect(names(r.items)).toEqual(['Acme Corp', 'alpha agency', 'Beta Ltd', 'Zeta']);
    expect(r).toMatchObject({ page: 1, per_page: 20, total: 4 });
    expect(r.items.map((c) => c.sites_count)).toEqual([2, 0, 1, 0]);
    expectSchema(r, outputSchema(w, 'list-clients-v1'));
    const p = await w.h.call('list-clients-v1', { page: 2, per_page: 3 });
    expect(names(p.items)).toEqual(['Zeta']);
    expect(p.total).toBe(4);
  });

  it('filters by status, search (name, e-mail, id), include and exclude', async () => {
    const list = async (input: Record<string, unknown>) => names((await w.h.call('list-clients-v1', input)).items);
    const [beta, acme] = w.fleet.clients;
    expect(await list({ status: 'lead' })).toEqual(['alpha agency']);
    expect(await list({ status: 'active' })).toEqual(['Acme Corp', 'Beta Ltd']);
    expect(await list({ search: 'ALPHA' })).toEqual(['alpha agency']);
    expect(await list({ search: 'zeta.example' })).toEqual(['Zeta']);
    expect(await list({ include: [beta!.id, acme!.id] })).toEqual(['Acme Corp', 'Beta Ltd']);
    expect(await list({ exclude: [beta!.id] })).toEqual(['Acme Corp', 'alpha agency', 'Zeta']);
    expect(await w.h.fails('list-clients-v1', { status: 'vip' })).toMatchObject({
      status: 400,
      code: 'ability_invalid_input',
      message: invalidInput('list-clients-v1', 'input[status] is not one of any, active, suspended, lead, and lost.'),
    });
  });

  it('counts, all or by status', async () => {
    expect(await w.h.call('count-clients-v1', {})).toEqual({ total: 4 });
    expect(await w.h.call('count-clients-v1', { status: 'lost' })).toEqual({ total: 1 });
  });
});

describe('get-client-sites-v1, get-client-costs-v1, get-site-client-v1 (rules)', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });
  afterAll(() => w.h.close());

  it('lists the sites of a client by URL', async () => {
    const acme = w.fleet.clients[1]!;
    const r = await w.h.call('get-client-sites-v1', { client_id_or_email: acme.email });
    expect(r).toMatchObject({ client_id: acme.id, client_name: 'Acme Corp', total: 2, page: 1, per_page: 20 });
    expect(r.sites).toEqual([
      { id: 1, url: 'https://alpha.example.com/', name: 'Alpha', status: 'connected', client_id: acme.id },
      { id: 2, url: 'http://www.bravo.example.org/', name: 'Bravo', status: 'disconnected', client_id: acme.id },
    ]);
    expectSchema(r, outputSchema(w, 'get-client-sites-v1'));
    expect((await w.h.call('get-client-sites-v1', { client_id_or_email: acme.id, per_page: 1, page: 2 })).sites.map((x) => x.id)).toEqual([
      2,
    ]);
    expect(await w.h.fails('get-client-sites-v1', { client_id_or_email: 404 })).toMatchObject({
      status: 404,
      code: 'svc_client_not_found',
    });
  });

  it('lists the costs that apply to a client: naming it, or covering its sites directly or by tag', async () => {
    const { h: x, fleet } = w;
    const [beta, acme] = fleet.clients;
    const base = { price: 1, payment_type: 'subscription', product_type: 'service', renewal_type: 'monthly' } as const;
    await x.call('add-cost-v1', { ...base, name: 'Named', clients: [acme!.id] });
    await x.call('add-cost-v1', { ...base, name: 'On alpha', sites: [1] });
    await x.call('add-cost-v1', { ...base, name: 'Production tag', groups: [fleet.tags.production.id] });
    await x.call('add-cost-v1', { ...base, name: 'Staging only', groups: [fleet.tags.staging.id] });
    const r = await x.call('get-client-costs-v1', { client_id_or_email: acme!.id });
    expect(r).toMatchObject({ client_id: acme!.id, client_name: 'Acme Corp', total: 3 });
    expect(names(r.costs)).toEqual(['Named', 'On alpha', 'Production tag']);
    expectSchema(r, outputSchema(w, 'get-client-costs-v1'));
    expect(names((await x.call('get-client-costs-v1', { client_id_or_email: beta!.email })).costs)).toEqual(['Production tag']);
    expect(await x.fails('get-client-costs-v1', { client_id_or_email: 404 })).toMatchObject({ status: 404, code: 'svc_client_not_found' });
  });

  it('answers the client of a site, or null with a message', async () => {
    const acme = w.fleet.clients[1]!;
    const r = await w.h.call('get-site-client-v1', { site_id_or_domain: 'alpha.example.com' });
    expect(r).toEqual({
      site_id: 1,
      client: expect.objectContaining({ id: acme.id, name: 'Acme Corp', email: 'it@acme.example', status: 'active', sites_count: 2 }),
      message: 'Client found.',
    });
    expectSchema(r, outputSchema(w, 'get-site-client-v1'));
    expect(await w.h.call('get-site-client-v1', { site_id_or_domain: 4 })).toEqual({
      site_id: 4,
      client: null,
      message: 'No client assigned to this site.',
    });
    expect(await w.h.fails('get-site-client-v1', { site_id_or_domain: 999 })).toMatchObject({ status: 404, code: 'svc_site_not_found' });
  });

  it('says so when a site names a client that is not stored (data from before clients could be deleted)', async () => {
    const { services } = w.h;
    await services.store.write((tx) => services.sites.patch(tx, 6, { client_id: 4242 }));
    expect(await w.h.call('get-site-client-v1', { site_id_or_domain: 6 })).toEqual({
      site_id: 6,
      client: null,
      message: 'Assigned client not found.',
    });
  });
});

describe('delete-client-v1 (rules)', () => {
  let w: World;
  beforeEach(async () => {
    w = await world();
  });
  afterEach(() => w.h.close());

  it('follows the confirm / dry_run rule, unassigns its sites (kept) and drops it from costs', async () => {
    const { h: x, fleet } = w;
    const s = x.services;
    const acme = fleet.clients[1]!;
    const base = { price: 1, payment_type: 'subscription', product_type: 'service', renewal_type: 'monthly' } as const;
    const only = await x.call('add-cost-v1', { ...base, name: 'Only Acme', clients: [acme.id] });
    const shared = await x.call('add-cost-v1', { ...base, name: 'Shared', clients: [acme.id], sites: [4] });
    const del = (input: { confirm?: boolean; dry_run?: boolean }) => x.call('delete-client-v1', { client_id_or_email: acme.id, ...input });
    const delFails = (input: { confirm?: boolean; dry_run?: boolean }) =>
      x.fails('delete-client-v1', { client_id_or_email: acme.id, ...input });

    expect(await delFails({ confirm: true, dry_run: true })).toMatchObject({
      status: 400,
      code: 'svc_invalid_input',
      message: 'Cannot specify both dry_run and confirm.',
    });
    expect(await x.fails('delete-client-v1', { client_id_or_email: 999, dry_run: true })).toMatchObject({
      status: 404,
      code: 'svc_client_not_found',
    });
    const dry = await del({ dry_run: true });
    expect(dry).toMatchObject({
      deleted: false,
      dry_run: true,
      client_id: acme.id,
      client_name: 'Acme Corp',
      sites_unassigned: 2,
      costs_affected: 2,
      would_affect: { id: acme.id, name: 'Acme Corp', sites_count: 2, costs_count: 2 },
    });
    expect(dry.warnings.join(' ')).toMatch(/2 site\(s\) would be unassigned.*Only Acme \(ID \d+\)/);
    expectSchema(dry, outputSchema(w, 'delete-client-v1'));
    expect(await delFails({})).toMatchObject({
      status: 400,
      code: 'svc_confirmation_required',
      message: 'Client deletion requires confirmation. Set confirm:true to proceed.',
    });
    expect(s.clients.get(acme.id)).toBeDefined();

    const done = await del({ confirm: true });
    expect(done).toMatchObject({ deleted: true, dry_run: false, client_id: acme.id, client: { id: acme.id, name: 'Acme Corp' } });
    expect(s.clients.get(acme.id)).toBeUndefined();
    expect([1, 2].map((id) => s.sites.get(id)!.client_id)).toEqual([null, null]);
    expect(s.store.count('sites')).toBe(6);
    expect(await x.call('get-cost-v1', { cost_id: shared.id })).toMatchObject({ clients: [], sites: [4], orphaned: false });
    expect(await x.call('get-cost-v1', { cost_id: only.id })).toMatchObject({ clients: [], orphaned: true });
    expect(await delFails({ confirm: true })).toMatchObject({ status: 404, code: 'svc_client_not_found' });
  });
});
