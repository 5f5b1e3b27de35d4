// Issue 14: REST output mappers are pure functions of the ability's result and the request's own arguments. What a
// REST answer shows beyond the default result comes from the ability (its output, or an input option the row sets),
// so the same views are there for every door: the site beside per-site answers, list-sites-v1 with tags or full
// records, sync-sites-v1 with full records, get-site-costs-v1 with full cost records. Each is checked here against
// the ability that owns the view (get-site-v1, get-cost-v1), through the abilities door, MCP and REST.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSite } from '../src/abilities/sites.js';
import { buildMcpServer } from '../src/mcp/server.js';
import { READ, route } from '../src/http/rest-door.js';
import { expectError, expectSchema, invalidInput } from './support/fixtures.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';

let f: Fleet;
let ids: Array<{ id: number; url: string }>;
let mcp: Client;
let tag: { id: number; name: string };
let clientId: number;

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 3 } });
  ids = await registerSites(f, 3);
  const [a, b] = InMemoryTransport.createLinkedPair();
  await buildMcpServer(f.s.registry, { principal: { kind: 'local', name: 'stdio' } }).connect(a);
  mcp = new Client({ name: 'rest-views-test', version: '1' });
  await mcp.connect(b);
  tag = (await f.s.ability('add-tag-v1', { name: 'Production' })).body;
  const c = await f.s.ability('add-client-v1', { name: 'Acme', email: 'it@acme.example' });
  expect(c.status, JSON.stringify(c.body)).toBe(200);
  clientId = c.body.id;
  const edit = await f.s.ability('update-site-v1', {
    site_id_or_domain: ids[0]!.id,
    tags: [tag.id],
    client_id: clientId,
    notes: 'main shop',
  });
  expect(edit.status, JSON.stringify(edit.body)).toBe(200);
});
afterAll(async () => {
  await mcp?.close();
  await f?.close();
});

const outputSchema = (name: string) => f.s.registry.schemas(f.s.registry.get(name)!).output;
async function tool(name: string, args: Record<string, unknown>): Promise<{ isError: boolean; body: any }> {
  const r = await mcp.callTool({ name, arguments: args });
  return { isError: !!r.isError, body: r.structuredContent };
}
const fullOf = async (id: number, include_stats = false) => {
  const r = await f.s.ability('get-site-v1', { site_id_or_domain: id, include_stats });
  expect(r.status).toBe(200);
  return r.body;
};
const simple = (s: { id: number; name: string; url: string; client_id: number | null }) => ({
  id: s.id,
  name: s.name,
  url: s.url,
  client_id: s.client_id,
});

describe('list-sites-v1: with_tags and full', () => {
  it('answers the listed view by default, tags with with_tags, get-site-v1 records with full (which wins)', async () => {
    const plain = await f.s.ability('list-sites-v1', {}, { method: 'GET' });
    expect(plain.body.items[0]).toEqual({ id: ids[0]!.id, url: ids[0]!.url, name: 'Sim 1', status: 'connected', client_id: clientId });
    const tagged = await f.s.ability('list-sites-v1', { with_tags: true }, { method: 'GET' });
    expect(tagged.body.items.map((s: { tags: unknown }) => s.tags)).toEqual([[{ id: tag.id, name: 'Production' }], [], []]);
    expect(tagged.body.items[0]).toEqual({ ...plain.body.items[0], tags: [{ id: tag.id, name: 'Production' }] });
    const full = await f.s.ability('list-sites-v1', { full: true, with_tags: true }, { method: 'GET' });
    expect(full.body.items).toEqual(await Promise.all(ids.map((x) => fullOf(x.id))));
    expect(full.body.items[0]).toMatchObject({ notes: 'main shop', tags: [{ id: tag.id, name: 'Production' }] });
    expect(full.body.items[0]).not.toHaveProperty('stats');
    for (const r of [plain, tagged, full]) expectSchema(r.body, outputSchema('list-sites-v1'));
  });

  it('gives MCP the same views, and REST its with_tags / full_data from them', async () => {
    const m = await tool('list-sites-v1', { full: true, per_page: 1 });
    expect(m.isError).toBe(false);
    expect(m.body.items).toEqual([await fullOf(ids[0]!.id)]);
    const rest = await f.s.rest('/sites?full_data=1');
    expect(rest.body.data).toEqual((await f.s.ability('list-sites-v1', { full: true }, { method: 'GET' })).body.items);
    const restTags = await f.s.rest('/sites?with_tags=true&per_page=2&page=1');
    expect(restTags.body).toEqual({
      success: 1,
      total: 3,
      data: (await f.s.ability('list-sites-v1', { with_tags: true, per_page: 2 }, { method: 'GET' })).body.items,
    });
  });

  it('refuses a flag that is not a boolean, naming it', async () => {
    const r = await f.s.ability('list-sites-v1', { full: 'maybe' }, { method: 'GET' });
    expectError(r, 400, 'ability_invalid_input', invalidInput('list-sites-v1', 'input[full] is not of type boolean.'));
    expect((await tool('list-sites-v1', { with_tags: 'x' })).isError).toBe(true);
  });
});

describe('sync-sites-v1: full', () => {
  it('answers synced[] as get-site-v1 with stats, read after the sync; without full, {id, url, name}', async () => {
    const r = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [ids[0]!.id, ids[1]!.url], full: true });
    expect(r.status).toBe(200);
    expectSchema(r.body, outputSchema('sync-sites-v1'));
    const byId = new Map(r.body.synced.map((s: { id: number }) => [s.id, s]));
    for (const x of ids.slice(0, 2)) expect(byId.get(x.id)).toEqual(await fullOf(x.id, true));
    expect((byId.get(ids[0]!.id) as { stats: unknown }).stats).toEqual(expect.objectContaining({ plugin_updates: expect.any(Number) }));
    const brief = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [ids[2]!.id] });
    expect(brief.body.synced).toEqual([{ id: ids[2]!.id, url: ids[2]!.url, name: 'Sim 3' }]);
  });

  it('is what POST /sites/{id}/sync answers, the site as it stands after the sync', async () => {
    const before = await fullOf(ids[1]!.id, true);
    const r = await f.s.rest(`/sites/${ids[1]!.id}/sync`, { method: 'POST' });
    expect(r.status).toBe(200);
    const after = await fullOf(ids[1]!.id, true);
    expect(after.last_sync).not.toBe(before.last_sync);
    expect(r.body).toEqual({ success: 1, message: 'Site synced.', data: after });
  });

  it('refuses a full that is not a boolean', async () => {
    const r = await f.s.ability('sync-sites-v1', { full: 'yes please' });
    expectError(r, 400, 'ability_invalid_input', invalidInput('sync-sites-v1', 'input[full] is not of type boolean.'));
  });
});

describe('get-site-costs-v1: full', () => {
  it("answers each cost with its get-cost-v1 record and the site's figures; without full, the short view only", async () => {
    const one = await f.s.ability('add-cost-v1', {
      name: 'Hosting',
      price: 12,
      payment_type: 'subscription',
      product_type: 'hosting',
      renewal_type: 'monthly',
      last_renewal: '2026-01-05',
      sites: [ids[0]!.id],
    });
    const shared = await f.s.ability('add-cost-v1', {
      name: 'Theme club',
      price: 90,
      payment_type: 'lifetime',
      product_type: 'theme',
      license_type: 'multi_site',
      groups: [tag.id],
    });
    expect([one.status, shared.status]).toEqual([200, 200]);
    const short = await f.s.ability('get-site-costs-v1', { site_id_or_domain: ids[0]!.id });
    const full = await f.s.ability('get-site-costs-v1', { site_id_or_domain: ids[0]!.id, full: true });
    expect([short.status, full.status]).toEqual([200, 200]);
    for (const r of [short, full]) expectSchema(r.body, outputSchema('get-site-costs-v1'));
    expect(short.body.costs.map((c: object) => Object.keys(c))).toEqual(
      Array(2).fill(['id', 'name', 'amount', 'frequency', 'next_due', 'status', 'license_type', 'site_share', 'monthly_equivalent']),
    );
    expect(full.body.costs).toHaveLength(2);
    for (const [i, c] of full.body.costs.entries()) {
      const record = (await f.s.ability('get-cost-v1', { cost_id: c.id }, { method: 'GET' })).body;
      expect(c).toEqual({ ...record, ...short.body.costs[i] });
    }
    const { costs: _f, ...totals } = full.body;
    const { costs: _s, ...shortTotals } = short.body;
    expect(totals).toEqual(shortTotals);
  });

  it('is what GET /sites/{id}/costs lists', async () => {
    const full = await f.s.ability('get-site-costs-v1', { site_id_or_domain: ids[0]!.id, full: true });
    const r = await f.s.rest(`/sites/${ids[0]!.id}/costs`);
    const { site_id: _i, site_url: _u, costs, ...totals } = full.body;
    expect(r.body).toEqual({
      success: 1,
      total: totals.total,
      total_monthly: totals.total_monthly,
      total_yearly: totals.total_yearly,
      data: costs,
    });
  });
});

describe('the site beside per-site plugin, theme, security and change answers', () => {
  it('is the listed view of the site in every such ability, and REST shows its simple view', async () => {
    const id = ids[0]!.id;
    const listed = (await f.s.ability('list-sites-v1', { include: [id] }, { method: 'GET' })).body.items[0];
    for (const name of [
      'get-site-plugins-v1',
      'get-site-themes-v1',
      'get-site-security-v1',
      'get-site-changes-v1',
      'get-abandoned-plugins-v1',
      'get-abandoned-themes-v1',
    ]) {
      const r = await f.s.ability(name, { site_id_or_domain: id }, { method: 'GET' });
      expect(r.status, name).toBe(200);
      expect(r.body.site, name).toEqual(listed);
      expectSchema(r.body, outputSchema(name));
    }
    for (const path of ['plugins', 'themes', 'security', 'non-mainwp-changes', 'plugins/abandoned', 'themes/abandoned']) {
      expect((await f.s.rest(`/sites/${id}/${path}`)).body.site, path).toEqual(simple(listed));
    }
  });

  it('leaves it out of a fleet-wide abandoned list', async () => {
    const r = await f.s.ability('get-abandoned-plugins-v1', {}, { method: 'GET' });
    expect(r.status).toBe(200);
    expect(r.body).not.toHaveProperty('site');
  });

  it("shows the site's own name and client, also beside an action on the child", async () => {
    const id = ids[1]!.id;
    const p = f.sim.state(2).plugins.find((x) => x.active && !x.isChild && !x.mu)!;
    await f.s.ability('update-site-v1', { site_id_or_domain: id, name: 'Renamed two', client_id: clientId });
    const off = await tool('deactivate-site-plugins-v1', { site_id_or_domain: id, slugs: [p.slug] });
    expect(off.isError).toBe(false);
    expect(off.body.site).toEqual({ id, url: ids[1]!.url, name: 'Renamed two', status: 'connected', client_id: clientId });
    const on = await f.s.rest(`/sites/${id}/plugins/activate`, { method: 'PUT', json: { slug: p.slug } });
    expect(on.body).toMatchObject({ success: 1, site: { id, url: ids[1]!.url, name: 'Renamed two', client_id: clientId } });
  });
});

describe("a REST row's output", () => {
  it("sees the result and the request's arguments, never the services (a type error; run by npm run lint)", () => {
    const row = route(READ, '/x', getSite, {
      // @ts-expect-error RestContext has no services: a mapper cannot query them.
      output: (r, { services }) => ({ r, services }),
    });
    expect(row.output).toBeTypeOf('function');
  });
});
