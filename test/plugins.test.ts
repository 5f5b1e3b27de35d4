// Plugins and themes on real (simulated) children through every door: listings from the stored data,
// actions on the child and what every door sees right after, abandoned lists, security, the change log.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimPlugin, SimTheme } from '../src/child/simulator/state.js';
import { buildMcpServer } from '../src/mcp/server.js';
import { expectError, expectSchema } from './support/fixtures.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';

let f: Fleet;
let ids: Array<{ id: number; url: string }>;
let mcp: Client;

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 5 } });
  ids = await registerSites(f, 5);
  const [a, b] = InMemoryTransport.createLinkedPair();
  await buildMcpServer(f.s.registry, { principal: { kind: 'local', name: 'stdio' } }).connect(a);
  mcp = new Client({ name: 'plugins-test', version: '1' });
  await mcp.connect(b);
});
afterAll(async () => {
  await mcp?.close();
  await f?.close();
});

/** Sim site n (1-based) is the n-th registered site. */
const siteId = (n: number) => ids[n - 1]!.id;
const requests = (n: number) => f.sim.requests(n);

async function tool(name: string, args: Record<string, unknown>): Promise<{ isError: boolean; body: any }> {
  const r = await mcp.callTool({ name, arguments: args });
  return { isError: !!r.isError, body: r.structuredContent };
}

/** A regular plugin of sim site n (not the child plugin, not must-use). */
const plugin = (n: number, pred: (p: SimPlugin) => boolean): SimPlugin => {
  const p = f.sim.state(n).plugins.find((x) => !x.isChild && !x.mu && pred(x));
  if (!p) throw new Error(`sim site ${n} has no such plugin`);
  return p;
};
const simPlugin = (n: number, slug: string) => f.sim.state(n).plugins.find((p) => p.slug === slug);
const activeSimTheme = (n: number): SimTheme => f.sim.state(n).themes.find((t) => t.active)!;
const outputSchema = (name: string) => f.s.registry.schemas(f.s.registry.get(name)!).output;

const TWO_YEARS_S = 730 * 86_400;
const day = (unix: number) => new Date(unix * 1000).toISOString().slice(0, 10);

describe('plugin and theme listings', () => {
  it('lists what the site reported at its last sync, the same through every door, with no call to the site', async () => {
    const before = requests(1);
    const st = f.sim.state(1);
    const ab = await f.s.ability('get-site-plugins-v1', { site_id_or_domain: siteId(1) });
    expect(ab.status).toBe(200);
    expectSchema(ab.body, outputSchema('get-site-plugins-v1'));
    expect(ab.body).toMatchObject({ site_id: siteId(1), site_url: ids[0]!.url, total: st.plugins.length });
    expect(ab.body.plugins.map((p: { slug: string }) => p.slug).sort()).toEqual(st.plugins.map((p) => p.slug).sort());
    for (const p of ab.body.plugins) {
      const sim = simPlugin(1, p.slug)!;
      expect(p).toEqual({ slug: sim.slug, name: sim.name, version: sim.version, active: sim.active, update_version: sim.updateVersion });
    }
    const get = await f.s.ability('get-site-plugins-v1', undefined, { method: 'GET', query: `input[site_id_or_domain]=${siteId(1)}` });
    expect(get.body.plugins).toEqual(ab.body.plugins);
    const rest = await f.s.rest(`/sites/${siteId(1)}/plugins`);
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject({ success: 1, total: st.plugins.length, site: { id: siteId(1), url: ids[0]!.url } });
    expect(rest.body.data).toEqual(ab.body.plugins);
    const m = await tool('get-site-plugins-v1', { site_id_or_domain: ids[0]!.url });
    expect(m.isError).toBe(false);
    expect(m.body.plugins).toEqual(ab.body.plugins);
    expect(requests(1)).toBe(before);
  });

  it('filters by status, has_update, search and must_use, and pages when asked', async () => {
    const st = f.sim.state(1);
    const active = await f.s.rest(`/sites/${siteId(1)}/plugins?status=active`);
    expect(active.body.data.length).toBe(st.plugins.filter((p) => p.active).length);
    expect(active.body.data.every((p: { active: boolean }) => p.active)).toBe(true);
    const inactive = await f.s.ability('get-site-plugins-v1', { site_id_or_domain: siteId(1), status: 'inactive' });
    expect(inactive.body.total).toBe(st.plugins.filter((p) => !p.active).length);
    for (const any of ['any', 'active,inactive', '']) {
      expect((await f.s.rest(`/sites/${siteId(1)}/plugins?status=${any}`)).body.total, any).toBe(st.plugins.length);
    }
    const updates = await f.s.rest(`/sites/${siteId(1)}/plugins?has_update=true`);
    expect(updates.body.data.map((p: { slug: string }) => p.slug).sort()).toEqual(
      st.plugins
        .filter((p) => p.updateVersion)
        .map((p) => p.slug)
        .sort(),
    );
    const someName = plugin(1, () => true).name;
    const search = await f.s.rest(`/sites/${siteId(1)}/plugins?search=${encodeURIComponent(someName.toUpperCase())}`);
    expect(search.body.data.map((p: { name: string }) => p.name)).toContain(someName);
    expect(
      search.body.data.every((p: { name: string; slug: string }) => `${p.name} ${p.slug}`.toLowerCase().includes(someName.toLowerCase())),
    ).toBe(true);
    const mu = await f.s.rest(`/sites/${siteId(1)}/plugins?must_use=1`);
    expect(mu.body.total).toBe(st.plugins.filter((p) => p.mu).length);
    const paged = await f.s.rest(`/sites/${siteId(1)}/plugins?page=2&per_page=3`);
    const all = (await f.s.rest(`/sites/${siteId(1)}/plugins`)).body.data;
    expect(paged.body.data).toEqual(all.slice(3, 6));
    expect(paged.body.total).toBe(all.length);
  });

  it('refuses an unknown status', async () => {
    expectError(await f.s.rest(`/sites/${siteId(1)}/plugins?status=broken`), 400, 'rest_invalid_param');
    expectError(
      await f.s.ability('get-site-plugins-v1', { site_id_or_domain: siteId(1), status: 'broken' }),
      400,
      'ability_invalid_input',
      /input\[status\] is not one of all, active, and inactive/,
    );
  });

  it('lists themes with the active theme', async () => {
    const st = f.sim.state(2);
    const ab = await f.s.ability('get-site-themes-v1', { site_id_or_domain: siteId(2) });
    expect(ab.status).toBe(200);
    expectSchema(ab.body, outputSchema('get-site-themes-v1'));
    expect(ab.body.active_theme).toBe(activeSimTheme(2).slug);
    expect(ab.body.themes.map((t: { slug: string }) => t.slug).sort()).toEqual(st.themes.map((t) => t.slug).sort());
    const rest = await f.s.rest(`/sites/${siteId(2)}/themes?status=inactive`);
    expect(rest.body).toMatchObject({ success: 1, active_theme: activeSimTheme(2).slug, total: st.themes.length - 1 });
    expect(rest.body.data.some((t: { active: boolean }) => t.active)).toBe(false);
    const m = await tool('get-site-themes-v1', { site_id_or_domain: siteId(2) });
    expect(m.body.active_theme).toBe(activeSimTheme(2).slug);
  });

  it('answers an unknown site with 404 on every door', async () => {
    expectError(
      await f.s.ability('get-site-plugins-v1', { site_id_or_domain: 999 }),
      404,
      'svc_site_not_found',
      'No site found with ID 999.',
    );
    expectError(await f.s.rest('/sites/999/plugins'), 404, 'svc_rest_invalid_site_id');
    expectError(await f.s.rest('/sites/nope.example/themes'), 404, 'svc_rest_invalid_site_data');
    expectError(
      await f.s.rest('/sites/999/plugins/activate', { method: 'POST', json: { slug: 'hello.php' } }),
      404,
      'svc_rest_invalid_site_id',
    );
    const m = await tool('activate-site-plugins-v1', { site_id_or_domain: 'nope.example', slugs: ['hello.php'] });
    expect(m).toMatchObject({ isError: true, body: { code: 'svc_site_not_found', data: { status: 404 } } });
  });
});

describe('plugin actions', () => {
  it('a plugin activated through REST shows active through MCP and the abilities door without a sync', async () => {
    const p = plugin(1, (x) => !x.active);
    const r = await f.s.rest(`/sites/${siteId(1)}/plugins/activate`, { method: 'POST', json: { slug: p.slug } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, data: [{ slug: p.slug, name: p.name, active: true }], errors: [], site: { id: siteId(1) } });
    expect(simPlugin(1, p.slug)!.active).toBe(true);
    const after = requests(1);
    const ab = await f.s.ability('get-site-plugins-v1', { site_id_or_domain: siteId(1), status: 'active' });
    expect(ab.body.plugins.map((x: { slug: string }) => x.slug)).toContain(p.slug);
    const m = await tool('get-site-plugins-v1', { site_id_or_domain: siteId(1) });
    expect(m.body.plugins.find((x: { slug: string }) => x.slug === p.slug).active).toBe(true);
    expect((await f.s.rest(`/sites/${siteId(1)}/plugins?status=inactive`)).body.data.map((x: { slug: string }) => x.slug)).not.toContain(
      p.slug,
    );
    expect(requests(1)).toBe(after);
  });

  it('deactivates several plugins named in a comma-separated slug, and through the abilities door and MCP', async () => {
    const [a, b, c] = f.sim.state(1).plugins.filter((x) => x.active && !x.isChild && !x.mu);
    const r = await f.s.rest(`/sites/${siteId(1)}/plugins/deactivate`, { method: 'PUT', json: { slug: `${a!.slug}, ${b!.slug}` } });
    expect(r.body.success).toBe(1);
    expect(r.body.data.map((x: { slug: string }) => x.slug).sort()).toEqual([a!.slug, b!.slug].sort());
    expect(r.body.data.every((x: { active: boolean }) => !x.active)).toBe(true);
    const m = await tool('deactivate-site-plugins-v1', { site_id_or_domain: siteId(1), slugs: [c!.slug] });
    expect(m.isError).toBe(false);
    expectSchema(m.body, outputSchema('deactivate-site-plugins-v1'));
    expect(m.body).toEqual({
      site_id: siteId(1),
      site_url: ids[0]!.url,
      site: { id: siteId(1), url: ids[0]!.url, name: 'Sim 1', status: 'connected', client_id: null },
      deactivated: [expect.objectContaining({ slug: c!.slug, active: false, has_update: c!.updateVersion !== null })],
      errors: [],
    });
    const back = await f.s.ability('activate-site-plugins-v1', { site_id_or_domain: siteId(1), slugs: [a!.slug, b!.slug, c!.slug] });
    expect(back.body.activated).toHaveLength(3);
    expect([a, b, c].map((x) => simPlugin(1, x!.slug)!.active)).toEqual([true, true, true]);
    const listed = (await f.s.ability('get-site-plugins-v1', { site_id_or_domain: siteId(1) })).body.plugins;
    expect([a, b, c].map((x) => listed.find((l: { slug: string }) => l.slug === x!.slug).active)).toEqual([true, true, true]);
  });

  it('reports unknown slugs and refusals per item, never as a failed call', async () => {
    const p = plugin(1, (x) => x.active);
    const r = await f.s.ability('deactivate-site-plugins-v1', {
      site_id_or_domain: siteId(1),
      plugins: [p.slug, 'nope/nope.php', 'mainwp-child/mainwp-child.php'],
    });
    expect(r.status).toBe(200);
    expect(r.body.deactivated.map((x: { slug: string }) => x.slug)).toEqual([p.slug]);
    expect(r.body.errors).toEqual([
      expect.objectContaining({ identifier: 'nope/nope.php', slug: 'nope/nope.php', code: 'svc_plugin_not_found', status: 404 }),
      expect.objectContaining({ slug: 'mainwp-child/mainwp-child.php', code: 'svc_deactivation_failed' }),
    ]);
    expect(simPlugin(1, 'mainwp-child/mainwp-child.php')!.active).toBe(true);
    const rest = await f.s.rest(`/sites/${siteId(1)}/plugins/activate`, { method: 'POST', json: { slug: 'nope/nope.php' } });
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject({ success: 0, data: [], errors: [{ code: 'svc_plugin_not_found' }] });
    await f.s.ability('activate-site-plugins-v1', { site_id_or_domain: siteId(1), slugs: [p.slug] });
  });

  it('needs slugs (or plugins) and refuses an empty list', async () => {
    expectError(
      await f.s.ability('activate-site-plugins-v1', { site_id_or_domain: siteId(1) }),
      400,
      'ability_invalid_input',
      /slugs is a required property/,
    );
    expectError(
      await f.s.ability('activate-site-plugins-v1', { site_id_or_domain: siteId(1), slugs: [] }),
      400,
      'ability_invalid_input',
      /at least 1 item/,
    );
    expectError(await f.s.rest(`/sites/${siteId(1)}/plugins/activate`, { method: 'POST', json: {} }), 400, 'rest_invalid_param');
  });
});

describe('deleting plugins', () => {
  it('refuses without confirm, or with both flags, before any child call', async () => {
    const before = requests(1);
    const p = plugin(1, () => true);
    expectError(
      await f.s.ability('delete-site-plugins-v1', { site_id_or_domain: siteId(1), slugs: [p.slug] }),
      400,
      'svc_confirmation_required',
    );
    expectError(
      await f.s.ability('delete-site-plugins-v1', { site_id_or_domain: 999, slugs: [p.slug], confirm: true, dry_run: true }),
      400,
      'svc_invalid_input',
    );
    const m = await tool('delete-site-plugins-v1', { site_id_or_domain: siteId(1), slugs: [p.slug] });
    expect(m).toMatchObject({ isError: true, body: { code: 'svc_confirmation_required' } });
    expect(requests(1)).toBe(before);
    expect(simPlugin(1, p.slug)).toBeDefined();
  });

  it('previews from the stored list, warns about active plugins, and calls nobody', async () => {
    const before = requests(1);
    const on = plugin(1, (x) => x.active);
    const off = plugin(1, (x) => !x.active);
    const r = await f.s.ability('delete-site-plugins-v1', {
      site_id_or_domain: siteId(1),
      slugs: [on.slug, off.slug, 'nope/nope.php'],
      dry_run: true,
    });
    expect(r.status).toBe(200);
    expectSchema(r.body, outputSchema('delete-site-plugins-v1'));
    expect(r.body).toMatchObject({
      dry_run: true,
      site_id: siteId(1),
      deleted: [],
      count: 2,
      warnings: [`Plugin ${on.slug} is currently active.`],
    });
    expect(r.body.would_affect).toEqual([
      {
        slug: on.slug,
        name: on.name,
        version: on.version,
        active: true,
        has_update: on.updateVersion !== null,
        update_version: on.updateVersion,
      },
      {
        slug: off.slug,
        name: off.name,
        version: off.version,
        active: false,
        has_update: off.updateVersion !== null,
        update_version: off.updateVersion,
      },
    ]);
    expect(r.body.errors).toEqual([expect.objectContaining({ slug: 'nope/nope.php', code: 'svc_plugin_not_found' })]);
    const rest = await f.s.rest(`/sites/${siteId(1)}/plugins/delete?slug=${encodeURIComponent(off.slug)}&dry_run=1`, { method: 'DELETE' });
    expect(rest.body).toMatchObject({ success: 1, dry_run: true, data: [{ slug: off.slug }] });
    expect(requests(1)).toBe(before);
    expect(simPlugin(1, off.slug)).toBeDefined();
  });

  it('deletes with confirm (an active plugin too), and the plugin is gone through every door', async () => {
    const on = plugin(1, (x) => x.active);
    const r = await f.s.ability('delete-site-plugins-v1', {
      site_id_or_domain: siteId(1),
      slugs: [on.slug, 'nope/nope.php'],
      confirm: true,
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      dry_run: false,
      count: 1,
      deleted: [{ slug: on.slug, name: on.name, active: false }],
      errors: [{ code: 'svc_plugin_not_found' }],
    });
    expect(simPlugin(1, on.slug)).toBeUndefined();
    const off = plugin(1, (x) => !x.active);
    const rest = await f.s.rest(`/sites/${siteId(1)}/plugins/delete?slug=${encodeURIComponent(off.slug)}`, { method: 'DELETE' });
    expect(rest.body).toMatchObject({ success: 1, data: [{ slug: off.slug }] });
    expect(simPlugin(1, off.slug)).toBeUndefined();
    const after = requests(1);
    const slugs = (await tool('get-site-plugins-v1', { site_id_or_domain: siteId(1) })).body.plugins.map((x: { slug: string }) => x.slug);
    expect(slugs).not.toContain(on.slug);
    expect(slugs).not.toContain(off.slug);
    expect((await f.s.rest(`/sites/${siteId(1)}/plugins`)).body.total).toBe(f.sim.state(1).plugins.length);
    expect(requests(1)).toBe(after);
  });
});

describe('themes', () => {
  it('activates a theme and answers the previous one; every door sees the switch without a sync', async () => {
    const old = activeSimTheme(2);
    const next = f.sim.state(2).themes.find((t) => !t.active && t.slug !== old.parent)!;
    const r = await f.s.rest(`/sites/${siteId(2)}/themes/activate`, { method: 'POST', json: { slug: next.slug } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      success: 1,
      previous_theme: old.slug,
      data: { activate: { slug: next.slug, active: true }, deactivate: old.slug },
    });
    expect(activeSimTheme(2).slug).toBe(next.slug);
    const after = requests(2);
    expect((await f.s.ability('get-site-themes-v1', { site_id_or_domain: siteId(2) })).body.active_theme).toBe(next.slug);
    expect((await tool('get-site-themes-v1', { site_id_or_domain: siteId(2) })).body.active_theme).toBe(next.slug);
    expect(requests(2)).toBe(after);
    const back = await f.s.ability('activate-site-theme-v1', { site_id_or_domain: siteId(2), theme: old.slug });
    expectSchema(back.body, outputSchema('activate-site-theme-v1'));
    expect(back.body).toMatchObject({
      site_id: siteId(2),
      activated: old.slug,
      previous_theme: next.slug,
      theme: { slug: old.slug, active: true },
      errors: [],
    });
  });

  it('answers an unknown theme with a per-item error and leaves the active theme alone', async () => {
    const active = activeSimTheme(2).slug;
    const r = await f.s.ability('activate-site-theme-v1', { site_id_or_domain: siteId(2), slug: 'no-such-theme' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      activated: null,
      previous_theme: active,
      theme: null,
      errors: [{ slug: 'no-such-theme', code: 'svc_theme_not_found', status: 404 }],
    });
    const m = await tool('activate-site-theme-v1', { site_id_or_domain: siteId(2), slug: 'no-such-theme' });
    expect(m).toMatchObject({ isError: false, body: { activated: null, errors: [{ code: 'svc_theme_not_found' }] } });
    const rest = await f.s.rest(`/sites/${siteId(2)}/themes/activate`, { method: 'POST', json: { slug: 'no-such-theme' } });
    expect(rest.body).toMatchObject({ success: 0, errors: [{ code: 'svc_theme_not_found' }] });
    expect(activeSimTheme(2).slug).toBe(active);
    expectError(
      await f.s.ability('activate-site-theme-v1', { site_id_or_domain: siteId(2) }),
      400,
      'ability_invalid_input',
      /slug is a required property/,
    );
  });

  it('refuses to delete the active theme as a per-item error and deletes the others', async () => {
    const active = activeSimTheme(2);
    const victim = f.sim.state(2).themes.find((t) => !t.active && t.slug !== active.parent)!;
    const preview = await f.s.ability('delete-site-themes-v1', {
      site_id_or_domain: siteId(2),
      slugs: [active.slug, victim.slug],
      dry_run: true,
    });
    expect(preview.body.count).toBe(2);
    expect(preview.body.warnings).toEqual([expect.stringContaining(`Theme ${active.slug} is the currently active theme`)]);
    const alone = await f.s.ability('delete-site-themes-v1', { site_id_or_domain: siteId(2), slugs: [active.slug], confirm: true });
    expect(alone.status).toBe(200);
    expect(alone.body).toMatchObject({ deleted: [], count: 0, errors: [{ slug: active.slug, code: 'svc_theme_active', status: 409 }] });
    const both = await f.s.rest(`/sites/${siteId(2)}/themes/delete`, { method: 'DELETE', json: { slug: [active.slug, victim.slug] } });
    expect(both.status).toBe(200);
    expect(both.body).toMatchObject({
      success: 1,
      data: [{ slug: victim.slug }],
      errors: [{ slug: active.slug, code: 'svc_theme_active' }],
    });
    expect(f.sim.state(2).themes.map((t) => t.slug)).toContain(active.slug);
    expect(f.sim.state(2).themes.map((t) => t.slug)).not.toContain(victim.slug);
    const listed = (await tool('get-site-themes-v1', { site_id_or_domain: siteId(2) })).body.themes.map((t: { slug: string }) => t.slug);
    expect(listed).not.toContain(victim.slug);
    const m = await tool('delete-site-themes-v1', { site_id_or_domain: siteId(2), themes: ['gone-theme'], confirm: true });
    expect(m.body).toMatchObject({ deleted: [], errors: [{ code: 'svc_theme_not_found' }] });
  });
});

describe('sites that cannot be reached', () => {
  const actions = (n: number, slug: string, theme: string) =>
    [
      ['activate-site-plugins-v1', { site_id_or_domain: siteId(n), slugs: [slug] }],
      ['deactivate-site-plugins-v1', { site_id_or_domain: siteId(n), slugs: [slug] }],
      ['delete-site-plugins-v1', { site_id_or_domain: siteId(n), slugs: [slug], confirm: true }],
      ['activate-site-theme-v1', { site_id_or_domain: siteId(n), slug: theme }],
      ['delete-site-themes-v1', { site_id_or_domain: siteId(n), slugs: [theme], confirm: true }],
    ] as const;

  it('refuses a suspended site with svc_site_suspended on every door and sends it nothing', async () => {
    await f.s.ability('suspend-site-v1', { site_id_or_domain: siteId(4) });
    try {
      const before = requests(4);
      const slug = plugin(4, () => true).slug;
      const theme = f.sim.state(4).themes.find((t) => !t.active)!.slug;
      for (const [name, input] of actions(4, slug, theme)) {
        expectError(await f.s.ability(name, input), 409, 'svc_site_suspended');
        expect(await tool(name, input)).toMatchObject({ isError: true, body: { code: 'svc_site_suspended', data: { status: 409 } } });
      }
      expectError(await f.s.rest(`/sites/${siteId(4)}/plugins/activate`, { method: 'POST', json: { slug } }), 409, 'svc_site_suspended');
      expectError(await f.s.rest(`/sites/${siteId(4)}/themes/delete?slug=${theme}`, { method: 'DELETE' }), 409, 'svc_site_suspended');
      expect((await f.s.rest(`/sites/${siteId(4)}/plugins`)).status).toBe(200);
      expect(requests(4)).toBe(before);
      expect(simPlugin(4, slug)).toBeDefined();
    } finally {
      await f.s.ability('unsuspend-site-v1', { site_id_or_domain: siteId(4) });
    }
  });

  it('refuses a disconnected site with svc_site_disconnected and sends it nothing', async () => {
    const slug = plugin(5, () => true).slug;
    const theme = f.sim.state(5).themes.find((t) => !t.active)!.slug;
    await f.s.ability('disconnect-site-v1', { site_id_or_domain: siteId(5) });
    const before = requests(5);
    for (const [name, input] of actions(5, slug, theme)) {
      expectError(await f.s.ability(name, input), 409, 'svc_site_disconnected');
    }
    expect(await tool('activate-site-plugins-v1', { site_id_or_domain: siteId(5), slugs: [slug] })).toMatchObject({
      isError: true,
      body: { code: 'svc_site_disconnected' },
    });
    expectError(await f.s.rest(`/sites/${siteId(5)}/plugins/deactivate`, { method: 'POST', json: { slug } }), 409, 'svc_site_disconnected');
    expect((await f.s.ability('get-site-plugins-v1', { site_id_or_domain: siteId(5) })).body.total).toBe(f.sim.state(5).plugins.length);
    expect(requests(5)).toBe(before);
  });

  it('turns a dead child into the connector failure code, and keeps the stored list', async () => {
    const p = plugin(3, (x) => !x.active);
    const listed = (await f.s.rest(`/sites/${siteId(3)}/plugins`)).body.data;
    try {
      f.sim.setFault(3, { type: 'down' });
      expectError(
        await f.s.ability('activate-site-plugins-v1', { site_id_or_domain: siteId(3), slugs: [p.slug] }),
        502,
        'svc_child_unreachable',
      );
      expectError(
        await f.s.rest(`/sites/${siteId(3)}/plugins/activate`, { method: 'POST', json: { slug: p.slug } }),
        502,
        'svc_child_unreachable',
      );
      expect(await tool('activate-site-theme-v1', { site_id_or_domain: siteId(3), slug: 'x' })).toMatchObject({
        isError: true,
        body: { code: 'svc_child_unreachable', data: { status: 502 } },
      });
      f.sim.setFault(3, { type: 'http500' });
      expectError(
        await f.s.ability('delete-site-themes-v1', { site_id_or_domain: siteId(3), slugs: ['x'], confirm: true }),
        502,
        'svc_child_not_detected',
      );
      expect((await f.s.rest(`/sites/${siteId(3)}/plugins`)).body.data).toEqual(listed);
    } finally {
      f.sim.setFault(3, null);
    }
    expect(simPlugin(3, p.slug)!.active).toBe(false);
  });
});

describe('abandoned plugins and themes', () => {
  /** What the simulated children hold that had no release for two years, as the spec's items. */
  function expected(kind: 'plugins' | 'themes', sites = [1, 2, 3, 4, 5]) {
    const now = Date.now() / 1000;
    return sites.flatMap((n) =>
      (f.sim.state(n)[kind] as Array<SimPlugin | SimTheme>)
        .filter((i) => now - i.lastUpdated >= TWO_YEARS_S && !('mu' in i && i.mu))
        .map((i) => ({
          site_id: siteId(n),
          site_url: ids[n - 1]!.url,
          slug: i.slug,
          name: i.name,
          version: i.version,
          last_updated: day(i.lastUpdated),
        }))
        .sort((a, b) => (a.slug < b.slug ? -1 : 1)),
    );
  }

  it("lists the fleet's abandoned plugins by site id then slug, 50 a page by default, through the abilities door and MCP", async () => {
    const want = expected('plugins');
    const total = f.sim.sites.slice(0, 5).reduce((n, s) => n + f.sim.state(s.index).plugins.length, 0);
    expect(want.length).toBeGreaterThan(0);
    expect(want.length).toBeLessThan(total);
    const r = await f.s.ability('get-abandoned-plugins-v1', undefined, { method: 'GET' });
    expect(r.status).toBe(200);
    expectSchema(r.body, outputSchema('get-abandoned-plugins-v1'));
    expect(r.body).toEqual({ items: want.slice(0, 50), page: 1, per_page: 50, total: want.length });
    const page2 = await f.s.ability('get-abandoned-plugins-v1', { page: 2, per_page: 2 }, { method: 'GET' });
    expect(page2.body).toEqual({ items: want.slice(2, 4), page: 2, per_page: 2, total: want.length });
    expect((await f.s.ability('get-abandoned-plugins-v1', { page: 99 }, { method: 'GET' })).body).toMatchObject({
      items: [],
      total: want.length,
    });
    const m = await tool('get-abandoned-plugins-v1', {});
    expect(m.body.items).toEqual(want.slice(0, 50));
  });

  it('lists abandoned themes across the fleet', async () => {
    const want = expected('themes');
    const r = await f.s.ability('get-abandoned-themes-v1', { per_page: 100 }, { method: 'GET' });
    expect(r.body).toEqual({ items: want, page: 1, per_page: 100, total: want.length });
  });

  it("lists one site's abandoned items over REST, with search and paging", async () => {
    const want = expected('plugins', [3]);
    const r = await f.s.rest(`/sites/${siteId(3)}/plugins/abandoned`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, total: want.length, data: want, site: { id: siteId(3) } });
    if (want.length) {
      const one = await f.s.rest(`/sites/${siteId(3)}/plugins/abandoned?search=${encodeURIComponent(want[0]!.name)}&per_page=1`);
      expect(one.body.data).toEqual([want[0]]);
    }
    expect((await f.s.rest(`/sites/${siteId(3)}/themes/abandoned`)).body.data).toEqual(expected('themes', [3]));
    expectError(await f.s.rest('/sites/999/plugins/abandoned'), 404, 'svc_rest_invalid_site_id');
  });

  it('follows a delete at once: a deleted abandoned plugin leaves the fleet list', async () => {
    const target = expected('plugins', [4])[0] ?? expected('plugins', [3])[0];
    expect(target).toBeDefined();
    const before = (await f.s.ability('get-abandoned-plugins-v1', { per_page: 100 }, { method: 'GET' })).body.total;
    await f.s.ability('delete-site-plugins-v1', { site_id_or_domain: target!.site_id, slugs: [target!.slug], confirm: true });
    const after = await f.s.ability('get-abandoned-plugins-v1', { per_page: 100 }, { method: 'GET' });
    expect(after.body.total).toBe(before - 1);
    expect(after.body.items).not.toContainEqual(target);
  });
});

describe('security', () => {
  it('reports the findings of the last sync and an http: site as not valid, with no child call', async () => {
    const before = requests(1);
    const st = f.sim.state(1);
    const r = await f.s.ability('get-site-security-v1', { site_id_or_domain: siteId(1) });
    expect(r.status).toBe(200);
    expectSchema(r.body, outputSchema('get-site-security-v1'));
    expect(r.body.ssl_status).toMatchObject({ valid: false, expires: null });
    const types = r.body.security_issues.map((i: { type: string }) => i.type);
    expect(types).toContain('sslprotocol'); // an http: child reports it
    expect(types.includes('wp_uptodate')).toBe(st.wpUpdate !== null);
    for (const i of r.body.security_issues)
      expect(i).toEqual({ type: expect.any(String), severity: expect.stringMatching(/^(low|medium|high)$/), message: expect.any(String) });
    const rest = await f.s.rest(`/sites/${siteId(1)}/security`);
    expect(rest.body).toMatchObject({
      success: 1,
      data: { security_issues: r.body.security_issues, ssl_status: { valid: false, expires: null } },
      site: { id: siteId(1) },
    });
    const m = await tool('get-site-security-v1', { site_id_or_domain: siteId(1) });
    expect(m.body.security_issues).toEqual(r.body.security_issues);
    expect(requests(1)).toBe(before);
    expectError(await f.s.rest('/sites/999/security'), 404, 'svc_rest_invalid_site_id');
  });
});

describe('changes made outside the dashboard', () => {
  const simChanges = (n: number) => [...f.sim.state(n).changes].sort((a, b) => b.created - a.created);

  it('lists what the site reported, newest first, paged, through every door', async () => {
    const want = simChanges(2);
    const r = await f.s.ability('get-site-changes-v1', { site_id_or_domain: siteId(2) });
    expect(r.status).toBe(200);
    expectSchema(r.body, outputSchema('get-site-changes-v1'));
    expect(r.body).toMatchObject({ site_id: siteId(2), page: 1, per_page: 50, total: want.length });
    expect(r.body.changes.map((c: { description: string; user: string; type: string }) => [c.description, c.user, c.type])).toEqual(
      want.map((c) => [c.summary, c.user, c.context]),
    );
    expect(r.body.changes[0].timestamp).toBe(new Date(want[0]!.created * 1000).toISOString());
    const page = await f.s.ability('get-site-changes-v1', undefined, {
      method: 'GET',
      query: `input[site_id_or_domain]=${siteId(2)}&input[page]=2&input[per_page]=2`,
    });
    expect(page.body.changes).toEqual(r.body.changes.slice(2, 4));
    const rest = await f.s.rest(`/sites/${siteId(2)}/non-mainwp-changes`);
    expect(rest.body).toMatchObject({ success: 1, total: want.length, data: r.body.changes, site: { id: siteId(2) } });
    expect((await f.s.rest(`/sites/${siteId(2)}/non-mainwp-changes?total_count=true`)).body).toMatchObject({
      success: 1,
      data: { total: want.length },
    });
    const ctx = want[0]!.context;
    const only = await f.s.rest(`/sites/${siteId(2)}/non-mainwp-changes?contexts=${ctx}`);
    expect(only.body.total).toBe(want.filter((c) => c.context === ctx).length);
    expect((await f.s.rest(`/sites/${siteId(2)}/non-mainwp-changes?contexts=allevents&actions=${want[0]!.action}`)).body.total).toBe(
      want.filter((c) => c.action === want[0]!.action).length,
    );
    expect((await f.s.rest(`/sites/${siteId(2)}/non-mainwp-changes?source=dashboard`)).body).toMatchObject({ total: 0, data: [] });
    const m = await tool('get-site-changes-v1', { site_id_or_domain: siteId(2), per_page: 1 });
    expect(m.body).toMatchObject({ changes: [r.body.changes[0]], total: want.length });
  });

  it('answers 501 svc_module_not_available on every door while the logs module is off', async () => {
    await f.s.services.settings.setModule('logs', false);
    try {
      expectError(
        await f.s.ability('get-site-changes-v1', { site_id_or_domain: siteId(2) }),
        501,
        'svc_module_not_available',
        'Logs module is not active.',
      );
      expectError(
        await f.s.ability('get-site-changes-v1', undefined, { method: 'GET', query: `input[site_id_or_domain]=${siteId(2)}` }),
        501,
        'svc_module_not_available',
      );
      expectError(await f.s.rest(`/sites/${siteId(2)}/non-mainwp-changes`), 501, 'svc_module_not_available');
      // The module closes the REST route before its arguments or its site are looked at (upstream removes the route).
      expectError(await f.s.rest(`/sites/${siteId(2)}/non-mainwp-changes?per_page=0`), 501, 'svc_module_not_available');
      expectError(await f.s.rest('/sites/99999/non-mainwp-changes'), 501, 'svc_module_not_available');
      expect(await tool('get-site-changes-v1', { site_id_or_domain: siteId(2) })).toMatchObject({
        isError: true,
        body: { code: 'svc_module_not_available', data: { status: 501 } },
      });
      // A server that knows the services (stdio, HTTP) hides the tool instead.
      const [a, b] = InMemoryTransport.createLinkedPair();
      await buildMcpServer(f.s.registry, { principal: { kind: 'local', name: 'stdio' } }, f.s.services).connect(a);
      const c = new Client({ name: 'modules', version: '1' });
      await c.connect(b);
      const names = (await c.listTools()).tools.map((t) => t.name);
      await c.close();
      expect(names).toContain('get-site-plugins-v1');
      expect(names).not.toContain('get-site-changes-v1');
      expect((await f.s.ability('get-site-plugins-v1', { site_id_or_domain: siteId(2) })).status).toBe(200);
    } finally {
      await f.s.services.settings.setModule('logs', true);
    }
    expect((await f.s.rest(`/sites/${siteId(2)}/non-mainwp-changes`)).status).toBe(200);
  });
});
