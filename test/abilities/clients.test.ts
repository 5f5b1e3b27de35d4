// Client and client-field abilities through the registry: lookups by id or email, status rules, suspension of a
// client's sites, removal (its sites stay, unassigned), custom fields and their values — without a door.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { seedFleet, type Fleet } from '../support/fixtures.js';
import { seedSites } from '../support/server.js';

let h: AbilityHarness;
let fleet: Fleet;
let n = 0;
const uniq = (p: string) => { n += 1; return `${p}${n}`; };
const sitesFor = async (count: number) => seedSites(h.services, count, () => ({ url: `https://${uniq('cl')}.example.com/` }));

beforeAll(async () => { h = await openAbilities(); fleet = await seedFleet(h.services); });
afterAll(() => h.close());

describe('add-client-v1, get-client-v1, list-clients-v1, count-clients-v1', () => {
  it('adds a client with its sites, finds it by id or email (any case), lists and counts by status', async () => {
    const sites = await sitesFor(2);
    const c = await h.call('add-client-v1', { name: 'Listed Co', email: 'Boss@Listed.example', status: 'lead', city: 'Oslo', selected_sites: sites.map((s) => s.id) });
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
    expect(await h.fails('get-client-v1', { client_id_or_email: 'nobody@example.com' })).toMatchObject({ code: 'svc_client_not_found', status: 404 });
    expect(await h.fails('add-client-v1', { name: 'X', status: 'vip' })).toMatchObject({ code: 'ability_invalid_input', data: { params: { status: expect.any(String) } } });
    expect(await h.fails('add-client-v1', { name: uniq('Ghost sites '), selected_sites: [99999] })).toMatchObject({ status: 404 });
    expect(await h.fails('add-client-v1', { name: 'Never' }, h.as.viewer)).toMatchObject({ code: 'svc_permission_denied' });
  });
});

describe('the e-mail and lookup rules', () => {
  // Moved from test/clients.test.ts (add-client-v1, get-client-v1, update-client-v1): rules of the client service.
  it('refuses an e-mail another client has (any letter case) with 409', async () => {
    expect(await h.fails('add-client-v1', { name: 'Copy', email: 'IT@acme.example' })).toMatchObject({ status: 409, code: 'svc_client_exists',
      message: `A client with e-mail "IT@acme.example" already exists (ID ${fleet.clients[1]!.id}).` });
  });

  it('answers an unknown client with 404 svc_client_not_found, by id or by e-mail', async () => {
    expect(await h.fails('get-client-v1', { client_id_or_email: 999 })).toMatchObject({ status: 404, code: 'svc_client_not_found', message: 'No client found with ID 999.' });
    expect(await h.fails('get-client-v1', { client_id_or_email: 'who@nowhere.example' })).toMatchObject({ status: 404, code: 'svc_client_not_found',
      message: 'No client found matching "who@nowhere.example".' });
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
  it('counts and lists a client\'s sites, and names a site\'s client (or none)', async () => {
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
    expect(await h.call('delete-client-v1', { client_id_or_email: c.id, dry_run: true })).toMatchObject({ deleted: false, dry_run: true, sites_unassigned: 1, would_affect: { sites_count: 1 } });
    expect(await h.fails('delete-client-v1', { client_id_or_email: c.id })).toMatchObject({ code: 'svc_confirmation_required' });
    expect(await h.fails('delete-client-v1', { client_id_or_email: c.id, dry_run: true, confirm: true })).toMatchObject({ code: 'svc_invalid_input' });
    expect(await h.call('delete-client-v1', { client_id_or_email: c.id, confirm: true })).toMatchObject({ deleted: true, client_id: c.id });
    expect(await h.fails('get-client-v1', { client_id_or_email: c.id })).toMatchObject({ code: 'svc_client_not_found' });
    const kept = await h.call('get-site-v1', { site_id_or_domain: site!.id });
    expect(kept.client_id).toBeNull();
  });
});

describe('client fields', () => {
  it('adds, lists, renames and deletes a field; names are unique', async () => {
    const f = await h.call('add-client-field-v1', { name: 'Contract', description: 'Contract number' });
    expect(f).toMatchObject({ name: 'Contract', description: 'Contract number', clients_count: 0 });
    expect(await h.fails('add-client-field-v1', { name: 'contract' })).toMatchObject({ status: 409 });
    expect((await h.call('list-client-fields-v1', { search: 'contr' })).items.map((x) => x.id)).toEqual([f.id]);
    expect(await h.call('update-client-field-v1', { field: f.id, name: 'Contract no' })).toMatchObject({ id: f.id, name: 'Contract no', description: 'Contract number' });
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
    expect(await h.fails('set-client-field-values-v1', { client_id_or_email: gold.id, values: { 'no such field': 'x' } })).toMatchObject({ status: 404 });
    expect(await h.fails('delete-client-field-v1', { field: f.id })).toMatchObject({ code: 'svc_confirmation_required' });
    expect(await h.call('delete-client-field-v1', { field: f.id, dry_run: true })).toMatchObject({ deleted: false, values_removed: 2 });
    expect(await h.call('delete-client-field-v1', { field: f.id, confirm: true })).toMatchObject({ deleted: true, values_removed: 2 });
    expect((await h.call('get-client-field-values-v1', { client_id_or_email: gold.id })).fields.some((x) => x.id === f.id)).toBe(false);
  });
});
