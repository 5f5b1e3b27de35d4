// Issue 6 (costs) and issue 4 point 5 (get-site-costs-v1, GET /sites/{id_or_domain}/costs): the cost tracker
// through the abilities door, REST v2 and MCP (in process), with its rules — targets, enumerations, next
// renewal, totals, deletion of what costs point to, the module switch and permissions.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildMcpServer } from '../src/mcp/server.js';
import { expectError, expectSchema, invalidInput, seedFleet, type Fleet } from './support/fixtures.js';
import { startServer, type TestServer } from './support/server.js';

/** Every date below is counted from this day. */
const TODAY = new Date('2026-03-15T12:00:00Z');

interface World {
  s: TestServer;
  fleet: Fleet;
  mcp: Client;
}

async function world(): Promise<World> {
  const s = await startServer();
  const fleet = await seedFleet(s.services);
  s.services.costs.clock = () => TODAY;
  const [a, b] = InMemoryTransport.createLinkedPair();
  await buildMcpServer(s.registry, { principal: { kind: 'local', name: 'stdio' } }).connect(a);
  const mcp = new Client({ name: 'costs-test', version: '1.0.0' });
  await mcp.connect(b);
  return { s, fleet, mcp };
}
const close = async (w: World) => {
  await w.mcp.close();
  await w.s.close();
};

const hosting = { payment_type: 'subscription', product_type: 'hosting', renewal_type: 'monthly' } as const;

async function add(s: TestServer, input: Record<string, unknown>): Promise<any> {
  const r = await s.ability('add-cost-v1', input);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

const outputSchema = (s: TestServer, name: string) => s.registry.schemas(s.registry.get(name)!).output;
const costCount = (s: TestServer) => s.services.store.count('costs');
const tool = async (mcp: Client, name: string, args: Record<string, unknown>) => mcp.callTool({ name, arguments: args }) as Promise<any>;

describe('add-cost-v1 and get-cost-v1', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });
  afterAll(async () => {
    await close(w);
  });

  it('records a cost and answers the full record, defaults filled in', async () => {
    const { s, fleet } = w;
    const c = await add(s, {
      name: 'Hosting',
      price: 29.5,
      ...hosting,
      last_renewal: '2026-02-20',
      payment_method: 'stripe',
      url: 'https://host.example/',
      note: 'VPS',
      product_color: '#112233',
      sites: [fleet.sites[0]!.id, 'bravo.example.org'],
    });
    expect(c).toEqual({
      id: c.id,
      name: 'Hosting',
      price: 29.5,
      payment_type: 'subscription',
      product_type: 'hosting',
      product_slug: '',
      license_type: 'single_site',
      renewal_type: 'monthly',
      last_renewal: '2026-02-20',
      next_renewal: '2026-03-20',
      payment_method: 'stripe',
      cost_tracker_status: 'active',
      url: 'https://host.example/',
      note: 'VPS',
      product_color: '#112233',
      icon_hidden: false,
      sites: [fleet.sites[0]!.id, fleet.sites[1]!.id],
      groups: [],
      clients: [],
      sites_count: 2,
      orphaned: false,
      warnings: [],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expectSchema(c, outputSchema(s, 'add-cost-v1'));
    const got = await s.ability('get-cost-v1', { cost_id: c.id }, { method: 'GET' });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(c);
  });

  it('requires name, price, payment_type and product_type, naming the one missing', async () => {
    const { s } = w;
    const full = { name: 'X', price: 1, payment_type: 'subscription', product_type: 'other', renewal_type: 'yearly', sites: [1] };
    const reasons = Object.fromEntries(
      ['name', 'price', 'payment_type', 'product_type'].map((f) => [f, `${f} is a required property of input.`]),
    );
    for (const [field, reason] of Object.entries(reasons)) {
      const input: Record<string, unknown> = { ...full };
      delete input[field];
      const r = await s.ability('add-cost-v1', input);
      expectError(r, 400, 'ability_invalid_input', invalidInput('add-cost-v1', reason));
      expect(Object.keys(r.body.data.params)).toEqual([field]);
    }
  });

  it.each([
    ['payment_type', 'monthly', 'subscription and lifetime'],
    ['license_type', 'unlimited', 'single_site and multi_site'],
    ['renewal_type', 'daily', 'weekly, monthly, quarterly, and yearly'],
    ['cost_tracker_status', 'paused', 'active, canceled, onhold, expired, and pending_cancelation'],
  ])('refuses a %s that is not allowed, listing the allowed values', async (field, bad, allowed) => {
    const { s } = w;
    const before = costCount(s);
    const r = await s.ability('add-cost-v1', { name: 'X', price: 1, ...hosting, sites: [1], [field]: bad });
    expectError(r, 400, 'ability_invalid_input', invalidInput('add-cost-v1', `input[${field}] is not one of ${allowed}.`));
    expect(r.body.data.params).toEqual({ [field]: `input[${field}] is not one of ${allowed}.` });
    expect(costCount(s)).toBe(before);
  });

  it('refuses a negative price or one that is not a number', async () => {
    const { s } = w;
    const neg = await s.ability('add-cost-v1', { name: 'X', price: -0.01, ...hosting, sites: [1] });
    expectError(neg, 400, 'ability_invalid_input', /input\[price\] must be between 0 \(inclusive\)/);
    expectError(
      await s.ability('add-cost-v1', { name: 'X', price: 'ten', ...hosting, sites: [1] }),
      400,
      'ability_invalid_input',
      invalidInput('add-cost-v1', 'input[price] is not of type number.'),
    );
    expect((await add(s, { name: 'Free plan', price: 0, ...hosting, sites: [1] })).price).toBe(0);
  });

  it('takes ISO 8601 dates and date-times (kept as the UTC day), and refuses anything else', async () => {
    const { s } = w;
    const c = await add(s, { name: 'Late night', price: 1, ...hosting, sites: [1], last_renewal: '2026-01-31T23:30:00-05:00' });
    expect(c.last_renewal).toBe('2026-02-01');
    for (const bad of ['31/01/2026', '2026-02-30', '2026-13-01', 'yesterday', '2026-01-01T25:00:00Z']) {
      expectError(
        await s.ability('add-cost-v1', { name: 'X', price: 1, ...hosting, sites: [1], last_renewal: bad }),
        400,
        'ability_invalid_input',
        invalidInput('add-cost-v1', 'input[last_renewal]: must be an ISO 8601 date such as 2026-03-31 or 2026-03-31T12:00:00Z'),
      );
    }
  });

  it('refuses unknown fields, bad colours and non-web URLs', async () => {
    const { s } = w;
    expectError(
      await s.ability('add-cost-v1', { name: 'X', price: 1, ...hosting, sites: [1], currency: 'EUR' }),
      400,
      'ability_invalid_input',
      invalidInput('add-cost-v1', 'currency is not a valid property of Object.'),
    );
    expectError(
      await s.ability('add-cost-v1', { name: 'X', price: 1, ...hosting, sites: [1], product_color: 'red' }),
      400,
      'ability_invalid_input',
      /input\[product_color\] does not match pattern/,
    );
    expectError(
      await s.ability('add-cost-v1', { name: 'X', price: 1, ...hosting, sites: [1], url: 'javascript:alert(1)' }),
      400,
      'ability_invalid_input',
      invalidInput('add-cost-v1', 'input[url] is not a valid url.'),
    );
  });

  it('answers an unknown cost with 404 svc_cost_not_found', async () => {
    expectError(
      await w.s.ability('get-cost-v1', { cost_id: 9999 }, { method: 'GET' }),
      404,
      'svc_cost_not_found',
      'No cost found with ID 9999.',
    );
  });
});

describe('list-costs-v1 and GET /costs', () => {
  let w: World;
  let ids: Record<string, number>;
  beforeAll(async () => {
    w = await world();
    const mk = async (name: string, extra: Record<string, unknown>) =>
      (await add(w.s, { name, price: 10, ...hosting, sites: [1], ...extra })).id as number;
    ids = {
      vps: await mk('VPS', {}),
      seo: await mk('SEO plugin', { product_type: 'plugin', cost_tracker_status: 'canceled' }),
      theme: await mk('astra theme', { product_type: 'theme', payment_type: 'lifetime', renewal_type: null }),
      audit: await mk('Audit', { product_type: 'service', cost_tracker_status: 'onhold' }),
    };
  });
  afterAll(async () => {
    await close(w);
  });

  const names = (items: Array<{ name: string }>) => items.map((c) => c.name);

  it('lists by name, paged, with the full record', async () => {
    const r = await w.s.ability('list-costs-v1', undefined, { method: 'GET' });
    expect(r.status).toBe(200);
    expect(names(r.body.items)).toEqual(['astra theme', 'Audit', 'SEO plugin', 'VPS']);
    expect(r.body).toMatchObject({ page: 1, per_page: 20, total: 4 });
    expectSchema(r.body, outputSchema(w.s, 'list-costs-v1'));
    const p = await w.s.ability('list-costs-v1', { page: 2, per_page: 3 }, { method: 'GET' });
    expect(names(p.body.items)).toEqual(['VPS']);
    expect(p.body.total).toBe(4);
  });

  it('filters by status, category, type, search, include and exclude', async () => {
    const list = async (input: Record<string, unknown>) => names((await w.s.ability('list-costs-v1', input, { method: 'GET' })).body.items);
    expect(await list({ status: ['canceled', 'onhold'] })).toEqual(['Audit', 'SEO plugin']);
    expect(await list({ category: ['plugin', 'theme'] })).toEqual(['astra theme', 'SEO plugin']);
    expect(await list({ category: ['any'] })).toHaveLength(4);
    expect(await list({ type: 'lifetime' })).toEqual(['astra theme']);
    expect(await list({ search: 'PLUGIN' })).toEqual(['SEO plugin']);
    expect(await list({ search: String(ids.vps) })).toContain('VPS');
    expect(await list({ include: [ids.vps, ids.audit] })).toEqual(['Audit', 'VPS']);
    expect(await list({ exclude: [ids.vps] })).toEqual(['astra theme', 'Audit', 'SEO plugin']);
  });

  it('refuses filter values that are not allowed, listing the allowed ones', async () => {
    expectError(
      await w.s.ability('list-costs-v1', { type: 'monthly' }, { method: 'GET' }),
      400,
      'ability_invalid_input',
      invalidInput('list-costs-v1', 'input[type] is not one of any, subscription, and lifetime.'),
    );
    expectError(
      await w.s.ability('list-costs-v1', { status: ['paused'] }, { method: 'GET' }),
      400,
      'ability_invalid_input',
      invalidInput('list-costs-v1', 'input[status][0] is not one of active, canceled, onhold, expired, and pending_cancelation.'),
    );
  });

  it('REST: {success, total, data} with the same filters, comma lists included', async () => {
    const r = await w.s.rest('/costs');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, total: 4 });
    expect(names(r.body.data)).toEqual(['astra theme', 'Audit', 'SEO plugin', 'VPS']);
    expect(names((await w.s.rest('/costs?status=canceled,onhold')).body.data)).toEqual(['Audit', 'SEO plugin']);
    expect(names((await w.s.rest('/costs?category=theme&type=lifetime')).body.data)).toEqual(['astra theme']);
    expect(names((await w.s.rest(`/costs?include=${ids.vps},${ids.seo}&search=seo`)).body.data)).toEqual(['SEO plugin']);
    expect((await w.s.rest('/costs?page=2&per_page=3')).body).toMatchObject({ total: 4, data: [{ name: 'VPS' }] });
  });

  it('REST: a bad filter value is 400 rest_invalid_param naming it and listing the allowed values', async () => {
    const r = await w.s.rest('/costs?type=monthly');
    expectError(r, 400, 'rest_invalid_param', 'Invalid parameter(s): type');
    expect(r.body.data.params).toEqual({ type: 'type is not one of any, subscription, and lifetime.' });
    const st = await w.s.rest('/costs?status=bogus');
    expectError(st, 400, 'rest_invalid_param', 'Invalid parameter(s): status');
    expect(st.body.data.params.status).toMatch(/is not one of active, canceled, onhold, expired, and pending_cancelation\./);
    expectError(
      await w.s.rest('/costs?category=software'),
      400,
      'svc_invalid_product_type',
      'Unknown product_type "software". Product types: plugin, theme, hosting, service, other (settings: cost-tracker product types).',
    );
  });
});

describe('update-cost-v1 and delete-cost-v1, and their REST routes', () => {
  let w: World;
  beforeEach(async () => {
    w = await world();
  });
  afterEach(async () => {
    await close(w);
  });

  it('changes only the fields given; a target list given replaces that list', async () => {
    const { s, fleet } = w;
    const c = await add(s, {
      name: 'VPS',
      price: 20,
      ...hosting,
      last_renewal: '2026-03-01',
      note: 'keep me',
      sites: [1, 2],
      groups: [fleet.tags.staging.id],
    });
    const r = await s.ability('update-cost-v1', { cost_id: c.id, price: 25, sites: [3] });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ...c, price: 25, sites: [3], sites_count: 2, updated_at: expect.any(String) });
    const cleared = await s.ability('update-cost-v1', { cost_id: c.id, last_renewal: null, note: '' });
    expect(cleared.body).toMatchObject({
      last_renewal: null,
      next_renewal: null,
      note: '',
      price: 25,
      sites: [3],
      groups: [fleet.tags.staging.id],
    });
  });

  it('refuses an edit that leaves no target, unknown ids, bad enums and negative prices; the cost stays as it was', async () => {
    const { s } = w;
    const c = await add(s, { name: 'VPS', price: 20, ...hosting, sites: [1] });
    const up = (input: Record<string, unknown>) => s.ability('update-cost-v1', { cost_id: c.id, ...input });
    expectError(await up({ sites: [] }), 400, 'svc_invalid_input', /at least one target/);
    expectError(await up({ groups: [999] }), 400, 'svc_invalid_input', 'Invalid groups: no tag found with ID 999.');
    expectError(await up({ clients: [999] }), 400, 'svc_invalid_input', 'Invalid clients: no client found with ID 999.');
    expectError(await up({ sites: [999] }), 400, 'svc_invalid_input', 'Invalid sites: no site found with ID 999.');
    expectError(
      await up({ renewal_type: 'daily' }),
      400,
      'ability_invalid_input',
      /input\[renewal_type\] is not one of weekly, monthly, quarterly, and yearly\./,
    );
    expectError(await up({ price: -5 }), 400, 'ability_invalid_input', /input\[price\] must be between 0/);
    expectError(await up({ renewal_type: null }), 400, 'svc_invalid_input', /A subscription needs renewal_type/);
    expect((await s.ability('get-cost-v1', { cost_id: c.id }, { method: 'GET' })).body).toEqual(c);
    expectError(await s.ability('update-cost-v1', { cost_id: 9999, price: 1 }), 404, 'svc_cost_not_found');
  });

  it('deletes with the confirm / dry_run rule', async () => {
    const { s } = w;
    const c = await add(s, { name: 'VPS', price: 20, ...hosting, sites: [1, 2] });
    const del = (input: Record<string, unknown>) => s.ability('delete-cost-v1', { cost_id: c.id, ...input }, { method: 'DELETE' });
    expectError(await del({ confirm: true, dry_run: true }), 400, 'svc_invalid_input', 'Cannot specify both dry_run and confirm.');
    const dry = await del({ dry_run: true });
    expect(dry.body).toMatchObject({
      deleted: false,
      dry_run: true,
      cost_id: c.id,
      cost_name: 'VPS',
      would_affect: { id: c.id, name: 'VPS', sites_count: 2 },
    });
    expectError(await del({}), 400, 'svc_confirmation_required', 'Cost deletion requires confirmation. Set confirm:true to proceed.');
    expect(costCount(s)).toBe(1);
    const done = await del({ confirm: true });
    expect(done.body).toMatchObject({ deleted: true, dry_run: false, cost_id: c.id, cost: { id: c.id, name: 'VPS' } });
    expect(costCount(s)).toBe(0);
    expectError(await del({ confirm: true }), 404, 'svc_cost_not_found');
    expectError(await s.ability('delete-cost-v1', { cost_id: 9999, dry_run: true }, { method: 'DELETE' }), 404, 'svc_cost_not_found');
  });

  it('REST: add, get, edit (POST, PUT, PATCH) and remove', async () => {
    const { s, fleet } = w;
    const created = await s.rest('/costs/add', {
      method: 'POST',
      json: { name: 'CDN', price: '9.99', ...hosting, sites: `${fleet.sites[0]!.id},${fleet.sites[1]!.id}`, icon_hidden: 'true' },
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      success: 1,
      message: 'Cost created successfully.',
      data: { name: 'CDN', price: 9.99, icon_hidden: true, sites: [1, 2] },
    });
    const id = created.body.data.id as number;
    expect((await s.rest(`/costs/${id}`)).body).toEqual({ success: 1, data: created.body.data });
    for (const [method, price] of [
      ['POST', 10],
      ['PUT', 11],
      ['PATCH', 12],
    ] as const) {
      const e = await s.rest(`/costs/${id}/edit`, { method, json: { price } });
      expect(e.body).toMatchObject({ success: 1, message: 'Cost updated successfully.', data: { id, price, sites: [1, 2] } });
    }
    const put = await s.rest('/costs/add', {
      method: 'PUT',
      json: { name: 'Mail', price: 3, ...hosting, groups: [fleet.tags.staging.id] },
    });
    expect(put.body).toMatchObject({ success: 1, data: { name: 'Mail', groups: [fleet.tags.staging.id] } });
    const gone = await s.rest(`/costs/${id}/remove`, { method: 'DELETE' });
    expect(gone.body).toMatchObject({ success: 1, message: 'Cost deleted successfully.', data: { id, name: 'CDN', price: 12 } });
    expectError(await s.rest(`/costs/${id}`), 404, 'svc_rest_invalid_costs_id', 'Invalid or not found ID.');
  });

  it('REST: unknown, odd and huge ids; validation errors name the field', async () => {
    const { s } = w;
    expectError(await s.rest('/costs/9999'), 404, 'svc_rest_invalid_costs_id', 'Invalid or not found ID.');
    expectError(await s.rest('/costs/9999/edit', { method: 'PATCH', json: { price: 1 } }), 404, 'svc_rest_invalid_costs_id');
    expectError(await s.rest('/costs/9999/remove', { method: 'DELETE' }), 404, 'svc_rest_invalid_costs_id');
    expectError(await s.rest('/costs/9999/sites'), 404, 'svc_rest_invalid_costs_id');
    expectError(await s.rest('/costs/9999/clients'), 404, 'svc_rest_invalid_costs_id');
    expectError(await s.rest('/costs/99999999999999999999999'), 404, 'svc_rest_invalid_costs_id');
    expectError(await s.rest('/costs/abc'), 404, 'rest_no_route');
    const bad = await s.rest('/costs/add', { method: 'POST', json: { name: 'X', price: 1, ...hosting, license_type: 'site', sites: [1] } });
    expectError(bad, 400, 'rest_invalid_param', 'Invalid parameter(s): license_type');
    expect(bad.body.data.params).toEqual({ license_type: 'license_type is not one of single_site and multi_site.' });
    const neg = await s.rest('/costs/add', { method: 'POST', json: { name: 'X', price: -1, ...hosting, sites: [1] } });
    expectError(neg, 400, 'rest_invalid_param', 'Invalid parameter(s): price');
    expectError(
      await s.rest('/costs/add', { method: 'POST', json: { name: 'X', price: 1, ...hosting } }),
      400,
      'svc_invalid_input',
      /at least one target/,
    );
    expectError(
      await s.rest('/costs/add', { method: 'POST', json: { name: 'X', price: 1, ...hosting, clients: [77] } }),
      400,
      'svc_invalid_input',
      'Invalid clients: no client found with ID 77.',
    );
    expect(costCount(s)).toBe(0);
  });
});

describe('the sites and clients a cost covers', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });
  afterAll(async () => {
    await close(w);
  });

  it('REST /costs/{id}/sites and /costs/{id}/clients', async () => {
    const { s, fleet } = w;
    const c = await add(s, { name: 'Staging tools', price: 1, ...hosting, groups: [fleet.tags.staging.id], sites: [3] });
    const sites = await s.rest(`/costs/${c.id}/sites`);
    expect(sites.body).toMatchObject({ success: 1, total: 2 });
    expect(sites.body.data.map((x: any) => x.id)).toEqual([3, 4]);
    const clients = await s.rest(`/costs/${c.id}/clients`);
    expect(clients.body).toMatchObject({ success: 1, total: 1, data: [{ name: 'Beta Ltd', sites_covered: 1 }] });
  });
});

describe('get-site-costs-v1 and GET /sites/{id_or_domain}/costs: totals', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
    const { s, fleet } = w;
    const acme = fleet.clients[1]!.id;
    const sub = { payment_type: 'subscription', product_type: 'service' } as const;
    // Site 1 (alpha) is covered by all six; bravo (2) by Backup plugin (tag) and Uptime (client Acme).
    await add(s, { name: 'Hosting', price: 30, ...sub, renewal_type: 'monthly', last_renewal: '2026-02-20', sites: [1] });
    await add(s, {
      name: 'Backup plugin',
      price: 120,
      ...sub,
      renewal_type: 'yearly',
      license_type: 'multi_site',
      last_renewal: '2025-06-01',
      groups: [fleet.tags.production.id],
    });
    await add(s, { name: 'Uptime', price: 7, ...sub, renewal_type: 'weekly', last_renewal: '2026-03-10', clients: [acme] });
    await add(s, {
      name: 'SEO',
      price: 90,
      ...sub,
      renewal_type: 'quarterly',
      license_type: 'multi_site',
      last_renewal: '2026-01-15',
      sites: [1, 4],
      groups: [fleet.tags.staging.id],
    });
    await add(s, {
      name: 'Theme licence',
      price: 200,
      payment_type: 'lifetime',
      product_type: 'theme',
      last_renewal: '2025-01-01',
      sites: [1],
    });
    await add(s, {
      name: 'Old CDN',
      price: 50,
      ...sub,
      renewal_type: 'monthly',
      cost_tracker_status: 'canceled',
      last_renewal: '2026-03-01',
      sites: [1],
    });
    await add(s, { name: 'Domain', price: 130, ...sub, renewal_type: 'yearly', last_renewal: '2025-09-01', sites: [5] });
  });
  afterAll(async () => {
    await close(w);
  });

  it('lists every cost of the site in the ability view and totals only active recurring ones', async () => {
    const r = await w.s.ability('get-site-costs-v1', { site_id_or_domain: 1 }, { method: 'GET' });
    expect(r.status).toBe(200);
    // Monthly equivalents: Hosting 30; Backup plugin 120 split over 3 sites = 40 a year = 3.333…;
    // Uptime 7 × 52 / 12 = 30.333…; SEO 90 split over 2 sites (1 and 4, named and by tag) = 45 a quarter = 15;
    // Theme licence lifetime = 0; Old CDN canceled = 0.
    // total_monthly = 30 + 40/12 + 364/12 + 15 = 45 + 404/12 = 78.666… → 78.67; total_yearly = 540 + 404 = 944.
    expect(r.body).toEqual({
      site_id: 1,
      site_url: 'https://alpha.example.com/',
      costs: [
        {
          id: 2,
          name: 'Backup plugin',
          amount: 120,
          frequency: 'yearly',
          next_due: '2026-06-01',
          status: 'active',
          license_type: 'multi_site',
          site_share: 40,
          monthly_equivalent: 3.33,
        },
        {
          id: 1,
          name: 'Hosting',
          amount: 30,
          frequency: 'monthly',
          next_due: '2026-03-20',
          status: 'active',
          license_type: 'single_site',
          site_share: 30,
          monthly_equivalent: 30,
        },
        {
          id: 6,
          name: 'Old CDN',
          amount: 50,
          frequency: 'monthly',
          next_due: '2026-04-01',
          status: 'canceled',
          license_type: 'single_site',
          site_share: 50,
          monthly_equivalent: 0,
        },
        {
          id: 4,
          name: 'SEO',
          amount: 90,
          frequency: 'quarterly',
          next_due: '2026-04-15',
          status: 'active',
          license_type: 'multi_site',
          site_share: 45,
          monthly_equivalent: 15,
        },
        {
          id: 5,
          name: 'Theme licence',
          amount: 200,
          frequency: 'lifetime',
          next_due: null,
          status: 'active',
          license_type: 'single_site',
          site_share: 200,
          monthly_equivalent: 0,
        },
        {
          id: 3,
          name: 'Uptime',
          amount: 7,
          frequency: 'weekly',
          next_due: '2026-03-17',
          status: 'active',
          license_type: 'single_site',
          site_share: 7,
          monthly_equivalent: 30.33,
        },
      ],
      total: 6,
      total_monthly: 78.67,
      total_yearly: 944,
    });
    expectSchema(r.body, outputSchema(w.s, 'get-site-costs-v1'));
  });

  it.each([
    // bravo: Backup plugin 40/12 + Uptime 364/12 = 404/12 = 33.666… → 33.67; yearly 404.
    ['bravo.example.org', 2, 33.67, 404],
    // delta: SEO 45 a quarter = 15; yearly 180.
    [4, 4, 15, 180],
    // echo: Domain 130 a year = 10.833… → 10.83 a month, and exactly 130 a year (12 × the unrounded monthly sum).
    ['echo.example.com', 5, 10.83, 130],
    // foxtrot: no costs.
    [6, 6, 0, 0],
  ])('site %s: totals by hand', async (ref, id, monthly, yearly) => {
    const r = await w.s.ability('get-site-costs-v1', { site_id_or_domain: ref });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ site_id: id, total_monthly: monthly, total_yearly: yearly });
  });

  it('answers an unknown site with 404', async () => {
    expectError(
      await w.s.ability('get-site-costs-v1', { site_id_or_domain: 999 }),
      404,
      'svc_site_not_found',
      'No site found with ID 999.',
    );
  });

  it('REST: full records with the site figures, and the same totals', async () => {
    const r = await w.s.rest('/sites/alpha.example.com/costs');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, total: 6, total_monthly: 78.67, total_yearly: 944 });
    expect(r.body.data[0]).toMatchObject({
      id: 2,
      name: 'Backup plugin',
      price: 120,
      license_type: 'multi_site',
      groups: [1],
      site_share: 40,
      monthly_equivalent: 3.33,
      next_due: '2026-06-01',
    });
    expect((await w.s.rest('/sites/6/costs')).body).toEqual({ success: 1, total: 0, total_monthly: 0, total_yearly: 0, data: [] });
    expectError(await w.s.rest('/sites/999/costs'), 404, 'svc_rest_invalid_site_id');
    expectError(await w.s.rest('/sites/nowhere.example/costs'), 404, 'svc_rest_invalid_site_data');
  });

  it('MCP: the same answer', async () => {
    const r = await tool(w.mcp, 'get-site-costs-v1', { site_id_or_domain: 'alpha.example.com' });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ site_id: 1, total: 6, total_monthly: 78.67, total_yearly: 944 });
  });

  it('follows the fleet: a site joining a tag shares the multi_site cost', async () => {
    const { s, fleet } = w;
    const before = (await s.ability('get-site-costs-v1', { site_id_or_domain: 2 })).body;
    expect(before.costs.find((c: any) => c.name === 'Backup plugin').site_share).toBe(40);
    await s.ability('update-site-v1', { site_id_or_domain: 6, tags: [fleet.tags.production.id] });
    const after = (await s.ability('get-site-costs-v1', { site_id_or_domain: 2 })).body;
    // 120 over 4 sites = 30 a year = 2.5 a month; Uptime 30.333… → 32.833… → 32.83; yearly 30 + 364 = 394.
    expect(after.costs.find((c: any) => c.name === 'Backup plugin').site_share).toBe(30);
    expect(after).toMatchObject({ total_monthly: 32.83, total_yearly: 394 });
    await s.ability('update-site-v1', { site_id_or_domain: 6, tags: [] });
  });
});

describe('deleting a site, tag or client removes it from the costs that name it', () => {
  let w: World;
  beforeEach(async () => {
    w = await world();
  });
  afterEach(async () => {
    await close(w);
  });

  it('keeps a cost whose last target went, reports it orphaned, and wants a new target on edit', async () => {
    const { s, fleet } = w;
    const acme = fleet.clients[1]!.id;
    const c = await add(s, { name: 'Everything', price: 10, ...hosting, sites: [6], groups: [fleet.tags.staging.id], clients: [acme] });
    expect(c).toMatchObject({ sites: [6], groups: [fleet.tags.staging.id], clients: [acme], sites_count: 4, orphaned: false });

    expect((await s.ability('delete-site-v1', { site_id_or_domain: 6, confirm: true })).status).toBe(200);
    expect((await s.ability('get-cost-v1', { cost_id: c.id }, { method: 'GET' })).body).toMatchObject({
      sites: [],
      sites_count: 3,
      orphaned: false,
    });

    expect((await s.rest(`/tags/${fleet.tags.staging.id}/remove`, { method: 'DELETE' })).status).toBe(200);
    expect((await s.ability('get-cost-v1', { cost_id: c.id }, { method: 'GET' })).body).toMatchObject({
      groups: [],
      sites_count: 2,
      orphaned: false,
    });

    expect((await s.ability('delete-client-v1', { client_id_or_email: acme, confirm: true })).status).toBe(200);
    const orphan = await s.ability('get-cost-v1', { cost_id: c.id }, { method: 'GET' });
    expect(orphan.body).toMatchObject({ sites: [], groups: [], clients: [], sites_count: 0, orphaned: true });
    expect(orphan.body.warnings).toEqual([expect.stringMatching(/applies to no site, tag or client/)]);
    expect(costCount(s)).toBe(1);
    expect((await s.rest(`/costs/${c.id}`)).body.data.orphaned).toBe(true);

    expectError(await s.ability('update-cost-v1', { cost_id: c.id, price: 11 }), 400, 'svc_invalid_input', /at least one target/);
    const fixed = await s.ability('update-cost-v1', { cost_id: c.id, price: 11, sites: [1] });
    expect(fixed.body).toMatchObject({ price: 11, sites: [1], orphaned: false, warnings: [] });
  });

  it('leaves costs that do not name the deleted thing alone', async () => {
    const { s, fleet } = w;
    const other = await add(s, { name: 'Other', price: 1, ...hosting, sites: [1], groups: [fleet.tags.production.id] });
    await s.ability('delete-site-v1', { site_id_or_domain: 6, confirm: true });
    await s.ability('delete-tag-v1', { tag_id: fleet.tags.empty.id, confirm: true }, { method: 'DELETE' });
    expect((await s.ability('get-cost-v1', { cost_id: other.id }, { method: 'GET' })).body).toEqual(other);
  });
});

describe('module cost-tracker switched off', () => {
  let w: World;
  let cost: any;
  beforeAll(async () => {
    w = await world();
    cost = await add(w.s, { name: 'Kept', price: 12, ...hosting, sites: [1], clients: [w.fleet.clients[1]!.id] });
    await w.s.services.settings.setModule('cost-tracker', false);
  });
  afterAll(async () => {
    await close(w);
  });

  const off = (r: { status: number; body: any }) => expectError(r, 501, 'svc_module_not_available', 'Cost Tracker module is not active.');

  it('answers 501 on every cost ability (abilities door), valid input or not', async () => {
    const { s } = w;
    off(await s.ability('list-costs-v1', undefined, { method: 'GET' }));
    off(await s.ability('get-cost-v1', { cost_id: cost.id }, { method: 'GET' }));
    off(await s.ability('add-cost-v1', { name: 'New', price: 1, ...hosting, sites: [1] }));
    off(await s.ability('update-cost-v1', { cost_id: cost.id, price: 1 }));
    off(await s.ability('delete-cost-v1', { cost_id: cost.id, confirm: true }, { method: 'DELETE' }));
    off(await s.ability('get-cost-sites-v1', { cost_id: cost.id }, { method: 'GET' }));
    off(await s.ability('get-cost-clients-v1', { cost_id: cost.id }, { method: 'GET' }));
    off(await s.ability('get-site-costs-v1', { site_id_or_domain: 1 }, { method: 'GET' }));
    off(await s.ability('get-client-costs-v1', { client_id_or_email: w.fleet.clients[1]!.id }, { method: 'GET' }));
  });

  it('answers 501 on every REST cost route, before looking at the arguments', async () => {
    const { s } = w;
    off(await s.rest('/costs'));
    off(await s.rest('/costs?type=bogus'));
    off(await s.rest('/costs/add', { method: 'POST', json: { name: 'New', price: 1, ...hosting, sites: [1] } }));
    off(await s.rest('/costs/add', { method: 'PATCH', json: {} }));
    off(await s.rest(`/costs/${cost.id}`));
    off(await s.rest('/costs/9999'));
    off(await s.rest(`/costs/${cost.id}/edit`, { method: 'PUT', json: { price: -1 } }));
    off(await s.rest(`/costs/${cost.id}/remove`, { method: 'DELETE' }));
    off(await s.rest(`/costs/${cost.id}/sites`));
    off(await s.rest(`/costs/${cost.id}/clients`));
    off(await s.rest('/costs/batch', { method: 'POST', json: { delete: [cost.id] } }));
    off(await s.rest('/costs/batch', { method: 'POST', json: {} }));
    off(await s.rest('/sites/1/costs'));
    off(await s.rest(`/clients/${w.fleet.clients[1]!.id}/costs`));
  });

  it('answers 501 over MCP', async () => {
    const r = await tool(w.mcp, 'list-costs-v1', {});
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ code: 'svc_module_not_available', data: { status: 501 } });
  });

  it('hides the cost tools from MCP clients of a server that watches the module', async () => {
    const [a, b] = InMemoryTransport.createLinkedPair();
    await buildMcpServer(w.s.registry, { principal: { kind: 'local', name: 'stdio' } }, w.s.services).connect(a);
    const c = new Client({ name: 't', version: '1' });
    await c.connect(b);
    const names = (await c.listTools()).tools.map((t) => t.name);
    await c.close();
    expect(names).toContain('list-clients-v1');
    for (const n of ['list-costs-v1', 'add-cost-v1', 'get-site-costs-v1', 'get-client-costs-v1']) expect(names).not.toContain(n);
  });

  it('keeps the data: deleting a site still updates costs, and everything is back when the module is on again', async () => {
    const { s } = w;
    await s.ability('delete-site-v1', { site_id_or_domain: 1, confirm: true });
    await s.services.settings.setModule('cost-tracker', true);
    try {
      const r = await s.ability('get-cost-v1', { cost_id: cost.id }, { method: 'GET' });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ id: cost.id, name: 'Kept', price: 12, sites: [], clients: [w.fleet.clients[1]!.id], orphaned: false });
      expect((await s.rest('/costs')).body).toMatchObject({ success: 1, total: 1 });
    } finally {
      await s.services.settings.setModule('cost-tracker', false);
    }
  });
});

describe('permissions', () => {
  let w: World;
  let cost: any;
  beforeAll(async () => {
    w = await world();
    cost = await add(w.s, { name: 'Guarded', price: 5, ...hosting, sites: [1] });
  });
  afterAll(async () => {
    await close(w);
  });

  it('refuses writes to a viewer and to a read-only key on the abilities door (403), and lets them read', async () => {
    const { s } = w;
    for (const auth of [s.creds.viewer, `Bearer ${s.creds.key.read}`]) {
      expectError(await s.ability('add-cost-v1', { name: 'X', price: 1, ...hosting, sites: [1] }, { auth }), 403, 'svc_permission_denied');
      expectError(await s.ability('update-cost-v1', { cost_id: cost.id, price: 1 }, { auth }), 403, 'svc_permission_denied');
      expectError(
        await s.ability('delete-cost-v1', { cost_id: cost.id, confirm: true }, { auth, method: 'POST' }),
        403,
        'svc_permission_denied',
      );
      expect((await s.ability('get-cost-v1', { cost_id: cost.id }, { auth, method: 'GET' })).status).toBe(200);
      expect((await s.ability('get-site-costs-v1', { site_id_or_domain: 1 }, { auth, method: 'GET' })).status).toBe(200);
    }
    expect((await s.ability('get-cost-v1', { cost_id: cost.id }, { method: 'GET' })).body).toEqual(cost);
  });

  it('refuses a read-only key on REST writes (403), and lets it read', async () => {
    const { s } = w;
    const token = s.creds.key.read;
    expectError(
      await s.rest('/costs/add', { method: 'POST', token, json: { name: 'X', price: 1, ...hosting, sites: [1] } }),
      403,
      'svc_permission_denied',
    );
    expectError(await s.rest(`/costs/${cost.id}/edit`, { method: 'PATCH', token, json: { price: 1 } }), 403, 'svc_permission_denied');
    expectError(await s.rest(`/costs/${cost.id}/remove`, { method: 'DELETE', token }), 403, 'svc_permission_denied');
    expectError(await s.rest('/costs/batch', { method: 'POST', token, json: { delete: [cost.id] } }), 403, 'svc_permission_denied');
    expect((await s.rest('/costs', { token })).status).toBe(200);
    expect((await s.rest('/sites/1/costs', { token })).status).toBe(200);
    expect(costCount(s)).toBe(1);
  });
});

describe('POST /costs/batch', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });
  afterAll(async () => {
    await close(w);
  });

  it('answers one entry per item, each with its own success', async () => {
    const { s } = w;
    const a = await add(s, { name: 'A', price: 1, ...hosting, sites: [1] });
    const b = await add(s, { name: 'B', price: 2, ...hosting, sites: [2] });
    const r = await s.rest('/costs/batch', {
      method: 'POST',
      json: {
        create: [
          { name: 'C', price: 3, ...hosting, sites: [3] },
          { name: 'D', price: 4, ...hosting, payment_type: 'monthly', sites: [3] },
          { name: 'E', price: 5, ...hosting },
        ],
        update: [
          { id: a.id, price: 10 },
          { id: 9999, price: 1 },
          { id: b.id, groups: [404] },
        ],
        delete: [b.id, 9999],
      },
    });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['create', 'update', 'delete']);
    expect(r.body.create.map((e: any) => e.success)).toEqual([1, 0, 0]);
    expect(r.body.create[0]).toMatchObject({ success: 1, message: 'Cost created successfully.', data: { name: 'C', price: 3 } });
    expect(r.body.create[1]).toMatchObject({
      id: 0,
      success: 0,
      error: {
        code: 'rest_invalid_param',
        data: { status: 400, params: { payment_type: 'payment_type is not one of subscription and lifetime.' } },
      },
    });
    expect(r.body.create[2]).toMatchObject({ id: 0, success: 0, error: { code: 'svc_invalid_input', data: { status: 400 } } });
    expect(r.body.update.map((e: any) => e.success)).toEqual([1, 0, 0]);
    expect(r.body.update[0]).toMatchObject({ success: 1, data: { id: a.id, price: 10 } });
    expect(r.body.update[1]).toEqual({
      id: 9999,
      success: 0,
      error: { code: 'svc_rest_invalid_costs_id', message: 'Invalid or not found ID.', data: { status: 404 } },
    });
    expect(r.body.update[2]).toMatchObject({
      id: b.id,
      success: 0,
      error: { code: 'svc_invalid_input', message: 'Invalid groups: no tag found with ID 404.' },
    });
    expect(r.body.delete).toEqual([
      { success: 1, message: 'Cost deleted successfully.', data: expect.objectContaining({ id: b.id, name: 'B' }) },
      { id: 9999, success: 0, error: { code: 'svc_rest_invalid_costs_id', message: 'Invalid or not found ID.', data: { status: 404 } } },
    ]);
    expect((await s.rest('/costs')).body.data.map((c: any) => c.name)).toEqual(['A', 'C']);
  });

  it('takes PUT and PATCH too, and refuses more than 100 items', async () => {
    const { s } = w;
    expect(
      (await s.rest('/costs/batch', { method: 'PATCH', json: { create: [{ name: 'P', price: 1, ...hosting, sites: [1] }] } })).body
        .create[0].success,
    ).toBe(1);
    const many = Array.from({ length: 101 }, () => 1);
    expectError(await s.rest('/costs/batch', { method: 'PUT', json: { delete: many } }), 413, 'svc_rest_request_entity_too_large');
  });
});

describe('MCP: the key flows', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });
  afterAll(async () => {
    await close(w);
  });

  it('adds, reads, updates and deletes a cost; errors come back as isError results', async () => {
    const { mcp, s } = w;
    const tools = (await mcp.listTools()).tools;
    const addTool = tools.find((t) => t.name === 'add-cost-v1')!;
    expect(addTool.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    expect(tools.find((t) => t.name === 'delete-cost-v1')!.annotations).toMatchObject({ destructiveHint: true });

    const made = await tool(mcp, 'add-cost-v1', {
      name: 'Mail',
      price: 6,
      ...hosting,
      last_renewal: '2026-03-01',
      clients: [w.fleet.clients[1]!.id],
    });
    expect(made.isError).toBeFalsy();
    expect(made.structuredContent).toMatchObject({ name: 'Mail', next_renewal: '2026-04-01', sites_count: 2 });
    const id = made.structuredContent.id;
    expect((await s.rest(`/costs/${id}`)).body.data.name).toBe('Mail');

    const bad = await tool(mcp, 'add-cost-v1', { name: 'X', price: 1, ...hosting, product_type: 'saas', sites: [1] });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toMatchObject({ code: 'svc_invalid_product_type', data: { status: 400 } });
    expect(bad.structuredContent.message).toMatch(/Unknown product_type "saas"\. Product types: plugin, theme, hosting, service, other/);
    const none = await tool(mcp, 'add-cost-v1', { name: 'X', price: 1, ...hosting, sites: [999] });
    expect(none.structuredContent).toMatchObject({ code: 'svc_invalid_input', message: 'Invalid sites: no site found with ID 999.' });

    expect((await tool(mcp, 'update-cost-v1', { cost_id: id, cost_tracker_status: 'onhold' })).structuredContent.cost_tracker_status).toBe(
      'onhold',
    );
    expect((await tool(mcp, 'get-site-costs-v1', { site_id_or_domain: 1 })).structuredContent).toMatchObject({
      total: 1,
      total_monthly: 0,
    });
    const noConfirm = await tool(mcp, 'delete-cost-v1', { cost_id: id });
    expect(noConfirm.structuredContent).toMatchObject({ code: 'svc_confirmation_required' });
    expect((await tool(mcp, 'delete-cost-v1', { cost_id: id, confirm: true })).structuredContent).toMatchObject({ deleted: true });
    expect((await tool(mcp, 'get-cost-v1', { cost_id: id })).structuredContent).toMatchObject({
      code: 'svc_cost_not_found',
      data: { status: 404 },
    });
  });
});
