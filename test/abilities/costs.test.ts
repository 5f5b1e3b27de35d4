// Cost abilities through the registry: targets (named sites, tags' sites, clients' sites — each once), next renewal,
// a site's share and totals, deletion — the cost tracker's rules, without a door. Today is fixed: 2026-03-15.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { seedFleet, type Fleet } from '../support/fixtures.js';

const TODAY = new Date('2026-03-15T12:00:00Z');
const hosting = { payment_type: 'subscription', product_type: 'hosting', renewal_type: 'monthly' } as const;
let h: AbilityHarness;
let fleet: Fleet;

beforeAll(async () => {
  h = await openAbilities();
  fleet = await seedFleet(h.services);
  h.services.costs.clock = () => TODAY;
});
afterAll(() => h.close());

describe('add-cost-v1, get-cost-v1, list-costs-v1, update-cost-v1', () => {
  it('records a cost with its next renewal, reads it back, lists and filters it', async () => {
    const c = await h.call('add-cost-v1', {
      name: 'Hosting A',
      price: 29.5,
      ...hosting,
      last_renewal: '2026-02-20',
      sites: [fleet.sites[0]!.id, 'bravo.example.org'],
    });
    expect(c).toMatchObject({
      name: 'Hosting A',
      price: 29.5,
      next_renewal: '2026-03-20',
      sites: [fleet.sites[0]!.id, fleet.sites[1]!.id],
      sites_count: 2,
      orphaned: false,
    });
    expect(await h.call('get-cost-v1', { cost_id: c.id }, h.as.viewer)).toEqual(c);
    await h.call('add-cost-v1', {
      name: 'Theme B',
      price: 50,
      payment_type: 'lifetime',
      product_type: 'theme',
      sites: [fleet.sites[2]!.id],
    });
    const lifetime = await h.call('list-costs-v1', { type: 'lifetime' });
    expect(lifetime.items.map((x) => x.name)).toEqual(['Theme B']);
    expect(lifetime.items[0]!.next_renewal).toBeNull();
    expect((await h.call('list-costs-v1', { search: 'hosting a', category: ['hosting'] })).items.map((x) => x.id)).toEqual([c.id]);
  });

  it('refuses a cost without a target, an unknown product type or target, and a read-only caller; stores nothing', async () => {
    const before = h.services.store.count('costs');
    expect(await h.fails('add-cost-v1', { name: 'Nowhere', price: 1, ...hosting })).toMatchObject({
      code: 'svc_invalid_input',
      message: expect.stringMatching(/at least one target/),
    });
    expect(await h.fails('add-cost-v1', { name: 'X', price: 1, ...hosting, product_type: 'yacht', sites: [1] })).toMatchObject({
      status: 400,
    });
    expect(await h.fails('add-cost-v1', { name: 'X', price: 1, ...hosting, sites: [99999] })).toMatchObject({
      status: 400,
      message: 'Invalid sites: no site found with ID 99999.',
    });
    expect(await h.fails('add-cost-v1', { name: 'X', price: 1, ...hosting, sites: [1] }, h.as.readKey)).toMatchObject({
      code: 'svc_permission_denied',
    });
    expect(h.services.store.count('costs')).toBe(before);
  });

  // Moved from test/costs.test.ts (add-cost-v1 and get-cost-v1): the target-resolution rule.
  it('refuses unknown ids in every relation, naming the list and the id, and stores nothing', async () => {
    const before = h.services.store.count('costs');
    const ok = { sites: [fleet.sites[0]!.id], groups: [fleet.tags.production.id], clients: [fleet.clients[0]!.id] };
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ sites: [fleet.sites[0]!.id, 999] }, 'sites', 'no site found with ID 999.'],
      [{ sites: ['nowhere.example'] }, 'sites', 'no site found matching "nowhere.example".'],
      [{ groups: [fleet.tags.production.id, 998] }, 'groups', 'no tag found with ID 998.'],
      [{ clients: [997] }, 'clients', 'no client found with ID 997.'],
    ];
    for (const [bad, list, reason] of cases) {
      const e = await h.fails('add-cost-v1', { name: 'X', price: 1, ...hosting, ...ok, ...bad });
      expect(e).toMatchObject({ status: 400, code: 'svc_invalid_input', message: `Invalid ${list}: ${reason}` });
      expect(e.data.params).toEqual({ [list]: reason });
    }
    expect(h.services.store.count('costs')).toBe(before);
  });

  it('changes only the fields given; a target list given replaces that list', async () => {
    const c = await h.call('add-cost-v1', {
      name: 'Editable',
      price: 10,
      ...hosting,
      sites: [fleet.sites[0]!.id],
      groups: [fleet.tags.staging.id],
    });
    const u = await h.call('update-cost-v1', { cost_id: c.id, price: 12, sites: [fleet.sites[5]!.id] });
    expect(u).toMatchObject({ name: 'Editable', price: 12, sites: [fleet.sites[5]!.id], groups: [fleet.tags.staging.id], sites_count: 2 });
    expect(await h.fails('update-cost-v1', { cost_id: c.id, sites: [], groups: [] })).toMatchObject({ code: 'svc_invalid_input' });
    expect(await h.fails('update-cost-v1', { cost_id: 99999, price: 1 })).toMatchObject({ code: 'svc_cost_not_found', status: 404 });
  });
});

describe('the sites and clients a cost covers', () => {
  // Moved from test/costs.test.ts ("the sites and clients a cost covers"): the cost tracker's target rules.
  // Fleet: alpha(1), bravo(2) → Acme; charlie(3) → Beta; Production = 1,2,3; staging = 4.
  it('unions named sites, the sites of named tags and the sites of named clients (each once, by URL)', async () => {
    const [beta, acme] = fleet.clients;
    const c = await h.call('add-cost-v1', {
      name: 'Mixed',
      price: 1,
      ...hosting,
      sites: [6, 1],
      groups: [fleet.tags.staging.id],
      clients: [acme!.id],
    });
    expect(c.sites_count).toBe(4);
    const r = await h.call('get-cost-sites-v1', { cost_id: c.id });
    expect(r).toMatchObject({ cost_id: c.id, cost_name: 'Mixed', total: 4, page: 1, per_page: 20 });
    expect(r.sites.map((x) => x.name)).toEqual(['Alpha', 'Bravo', 'Delta', 'Foxtrot']);
    expect(r.sites[0]).toEqual({ id: 1, url: 'https://alpha.example.com/', name: 'Alpha', status: 'connected', client_id: acme!.id });
    const cl = await h.call('get-cost-clients-v1', { cost_id: c.id });
    expect(cl.clients.map((x) => [x.name, x.sites_covered])).toEqual([['Acme Corp', 2]]);
    const viaTag = await h.call('add-cost-v1', {
      name: 'Prod backup',
      price: 1,
      ...hosting,
      groups: [fleet.tags.production.id],
      clients: [beta!.id],
    });
    const both = await h.call('get-cost-clients-v1', { cost_id: viaTag.id });
    expect(both).toMatchObject({
      total: 2,
      clients: [
        { id: acme!.id, name: 'Acme Corp', sites_covered: 2 },
        { id: beta!.id, name: 'Beta Ltd', sites_covered: 1 },
      ],
    });
  });

  it('lists a client named by a cost even when it owns no site', async () => {
    const lone = await h.call('add-client-v1', { name: 'Lone Client' });
    const c = await h.call('add-cost-v1', { name: 'Retainer', price: 100, ...hosting, clients: [lone.id] });
    expect(c.sites_count).toBe(0);
    expect((await h.call('get-cost-clients-v1', { cost_id: c.id })).clients).toEqual([
      expect.objectContaining({ id: lone.id, name: 'Lone Client', sites_covered: 0 }),
    ]);
    const theirs = await h.call('get-client-costs-v1', { client_id_or_email: lone.id });
    expect(theirs).toMatchObject({ client_id: lone.id, client_name: 'Lone Client', total: 1 });
    expect(theirs.items.map((x) => x.id)).toEqual([c.id]);
  });
});

describe('get-site-costs-v1 and delete-cost-v1', () => {
  it('lists the costs of a site with monthly and yearly totals of the active recurring ones', async () => {
    const site = (await h.call('add-tag-v1', { name: 'Lonely' })) && fleet.sites[4]!;
    await h.call('add-cost-v1', {
      name: 'Domain E',
      price: 120,
      payment_type: 'subscription',
      product_type: 'service',
      renewal_type: 'yearly',
      last_renewal: '2025-09-01',
      sites: [site.id],
    });
    await h.call('add-cost-v1', { name: 'Dead E', price: 50, ...hosting, cost_tracker_status: 'canceled', sites: [site.id] });
    const r = await h.call('get-site-costs-v1', { site_id_or_domain: 'echo.example.com' });
    expect(r).toMatchObject({ site_id: site.id, site_url: site.url, total: 2, total_monthly: 10, total_yearly: 120 });
    expect(await h.fails('get-site-costs-v1', { site_id_or_domain: 99999 })).toMatchObject({ code: 'svc_site_not_found' });
  });

  it('deletes a cost with the confirm / dry_run rule', async () => {
    const c = await h.call('add-cost-v1', { name: 'Doomed cost', price: 1, ...hosting, sites: [1] });
    expect(await h.call('delete-cost-v1', { cost_id: c.id, dry_run: true })).toMatchObject({
      deleted: false,
      dry_run: true,
      would_affect: { id: c.id, sites_count: 1 },
    });
    expect(await h.fails('delete-cost-v1', { cost_id: c.id })).toMatchObject({ code: 'svc_confirmation_required' });
    expect(await h.call('delete-cost-v1', { cost_id: c.id, confirm: true })).toMatchObject({ deleted: true, cost_name: 'Doomed cost' });
    expect(await h.fails('get-cost-v1', { cost_id: c.id })).toMatchObject({ code: 'svc_cost_not_found' });
  });
});

// ---- Moved from test/costs.test.ts (add-cost-v1 and get-cost-v1; next renewal): the cost tracker's input rules and
// its renewal calendar, on this file's fleet (site 1 = alpha).

describe('add-cost-v1: what a cost needs', () => {
  it("refuses a product_type that is not one of the cost-tracker settings' product types, listing them", async () => {
    const before = h.services.store.count('costs');
    expect(await h.fails('add-cost-v1', { name: 'X', price: 1, ...hosting, sites: [1], product_type: 'software' })).toMatchObject({
      status: 400,
      code: 'svc_invalid_product_type',
      message:
        'Unknown product_type "software". Product types: plugin, theme, hosting, service, other (settings: cost-tracker product types).',
    });
    expect(h.services.store.count('costs')).toBe(before);
  });

  it('needs at least one target', async () => {
    const before = h.services.store.count('costs');
    for (const targets of [{}, { sites: [] }, { sites: [], groups: [], clients: [] }]) {
      expect(await h.fails('add-cost-v1', { name: 'X', price: 1, ...hosting, ...targets })).toMatchObject({
        status: 400,
        code: 'svc_invalid_input',
        message: 'A cost needs at least one target: give sites (site IDs or domains), groups (tag IDs) or clients (client IDs).',
      });
    }
    expect(h.services.store.count('costs')).toBe(before);
  });

  it('needs renewal_type for a subscription, not for a lifetime cost', async () => {
    expect(
      await h.fails('add-cost-v1', { name: 'X', price: 1, payment_type: 'subscription', product_type: 'plugin', sites: [1] }),
    ).toMatchObject({
      status: 400,
      code: 'svc_invalid_input',
      message: 'A subscription needs renewal_type, one of weekly, monthly, quarterly, yearly.',
    });
    const life = await h.call('add-cost-v1', {
      name: 'Theme forever',
      price: 59,
      payment_type: 'lifetime',
      product_type: 'theme',
      product_slug: 'astra',
      sites: [1],
    });
    expect(life).toMatchObject({ renewal_type: null, next_renewal: null, product_slug: 'astra' });
  });
});

describe('next renewal: calendar periods from last_renewal, never in the past (today is 2026-03-15)', () => {
  it.each([
    ['monthly', '2026-01-31', '2026-03-31'], // Feb 28 is past; counted from the 31st, not from Feb 28
    ['monthly', '2025-10-31', '2026-03-31'],
    ['monthly', '2026-02-15', '2026-03-15'], // today counts
    ['monthly', '2026-04-01', '2026-05-01'], // a renewal in the future: one period on
    ['weekly', '2026-03-01', '2026-03-15'],
    ['weekly', '2026-03-09', '2026-03-16'],
    ['quarterly', '2025-11-30', '2026-05-30'], // Feb 28 is past
    ['yearly', '2024-02-29', '2027-02-28'],
    ['yearly', '2025-03-15', '2026-03-15'],
  ] as const)('%s from %s → %s', async (renewal_type, last_renewal, next) => {
    const c = await h.call('add-cost-v1', {
      name: 'R',
      price: 1,
      payment_type: 'subscription',
      product_type: 'service',
      renewal_type,
      last_renewal,
      sites: [1],
    });
    expect(c.next_renewal).toBe(next);
  });

  it('has none for a lifetime cost or without last_renewal', async () => {
    expect(
      (
        await h.call('add-cost-v1', {
          name: 'L',
          price: 1,
          payment_type: 'lifetime',
          product_type: 'plugin',
          renewal_type: 'yearly',
          last_renewal: '2026-01-01',
          sites: [1],
        })
      ).next_renewal,
    ).toBeNull();
    expect((await h.call('add-cost-v1', { name: 'N', price: 1, ...hosting, sites: [1] })).next_renewal).toBeNull();
  });

  it('moves on as days pass: a renewal date is never in the past', async () => {
    const c = await h.call('add-cost-v1', { name: 'Moving', price: 1, ...hosting, last_renewal: '2026-02-20', sites: [1] });
    expect(c.next_renewal).toBe('2026-03-20');
    h.services.costs.clock = () => new Date('2026-03-21T00:00:00Z');
    try {
      expect((await h.call('get-cost-v1', { cost_id: c.id })).next_renewal).toBe('2026-04-20');
    } finally {
      h.services.costs.clock = () => TODAY;
    }
  });
});
