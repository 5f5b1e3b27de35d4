// Plugin and theme abilities through the registry, over the child simulator: the stored lists after a sync and
// their filters, activate / deactivate / delete on the child (confirm / dry_run; the MainWP Child plugin itself
// left alone), switching the theme, the fleet's abandoned items, a site's security and its changes — without a door.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';

let h: AbilityHarness;
let site: number;
const state = () => h.sim.state(1);
const plugin = (slug: string) => state().plugins.find((p) => p.slug === slug)!;

beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 2, seed: 11 } });
  const ids = (await h.addSimSites()).map((s) => s.id);
  site = ids[0]!;
  await h.call('sync-sites-v1', { site_ids_or_domains: ids });
});
afterAll(() => h.close());

describe('get-site-plugins-v1 and get-site-themes-v1', () => {
  it('lists the plugins the site reported, filtered by status, update and search, paged on request', async () => {
    const all = await h.call('get-site-plugins-v1', { site_id_or_domain: site }, h.as.viewer);
    const visible = state().plugins.filter((p) => !p.mu);
    expect(all.total).toBe(visible.length);
    expect(all.plugins.map((p) => p.slug).sort()).toEqual(visible.map((p) => p.slug).sort());
    const active = await h.call('get-site-plugins-v1', { site_id_or_domain: site, status: 'active' });
    expect(active.plugins.every((p) => p.active)).toBe(true);
    expect(active.total).toBe(visible.filter((p) => p.active).length);
    const upd = await h.call('get-site-plugins-v1', { site_id_or_domain: site, has_update: true });
    expect(upd.plugins.map((p) => p.slug).sort()).toEqual(
      visible
        .filter((p) => p.updateVersion)
        .map((p) => p.slug)
        .sort(),
    );
    expect(await h.call('get-site-plugins-v1', { site_id_or_domain: site, page: 1, per_page: 1 })).toMatchObject({
      page: 1,
      per_page: 1,
      total: all.total,
      plugins: [expect.any(Object)],
    });
  });

  it('lists the themes with the active one', async () => {
    const t = await h.call('get-site-themes-v1', { site_id_or_domain: site });
    expect(t.active_theme).toBe(state().themes.find((x) => x.active)!.slug);
    expect(t.themes.map((x) => x.slug).sort()).toEqual(
      state()
        .themes.map((x) => x.slug)
        .sort(),
    );
    expect(await h.fails('get-site-themes-v1', { site_id_or_domain: 'nowhere.example' })).toMatchObject({ code: 'svc_site_not_found' });
  });
});

describe('plugin actions on the child', () => {
  it('deactivates and activates a plugin, and the child says so', async () => {
    const target = state().plugins.find((p) => p.active && !p.isChild && !p.mu)!;
    const d = await h.call('deactivate-site-plugins-v1', { site_id_or_domain: site, slugs: [target.slug, 'no-such/plugin.php'] });
    expect(d.deactivated.map((p) => p.slug)).toEqual([target.slug]);
    expect(d.errors).toEqual([expect.objectContaining({ slug: 'no-such/plugin.php' })]);
    expect(plugin(target.slug).active).toBe(false);
    const a = await h.call('activate-site-plugins-v1', { site_id_or_domain: site, slugs: [target.slug] });
    expect(a.activated).toEqual([expect.objectContaining({ slug: target.slug, active: true })]);
    expect(plugin(target.slug).active).toBe(true);
    expect(await h.fails('activate-site-plugins-v1', { site_id_or_domain: site }, h.as.admin)).toMatchObject({
      code: 'ability_invalid_input',
    });
  });

  it('deletes a plugin after a preview and confirm; the preview deletes nothing', async () => {
    const target = state().plugins.find((p) => !p.active && !p.isChild && !p.mu)!;
    const p = await h.call('delete-site-plugins-v1', { site_id_or_domain: site, slugs: [target.slug], dry_run: true });
    expect(p).toMatchObject({ dry_run: true, deleted: [], count: 1, would_affect: [expect.objectContaining({ slug: target.slug })] });
    expect(plugin(target.slug)).toBeDefined();
    expect(await h.fails('delete-site-plugins-v1', { site_id_or_domain: site, slugs: [target.slug] })).toMatchObject({
      code: 'svc_confirmation_required',
    });
    const r = await h.call('delete-site-plugins-v1', { site_id_or_domain: site, slugs: [target.slug], confirm: true });
    expect(r).toMatchObject({ dry_run: false, count: 1, deleted: [expect.objectContaining({ slug: target.slug })] });
    expect(plugin(target.slug)).toBeUndefined();
    expect((await h.call('get-site-plugins-v1', { site_id_or_domain: site, search: target.slug })).total).toBe(0);
  });
});

describe('theme actions on the child', () => {
  it('switches the active theme, then deletes the one it left (never the active one)', async () => {
    const before = state().themes.find((t) => t.active)!;
    const other = state().themes.find((t) => !t.active && t.slug !== before.parent)!;
    const a = await h.call('activate-site-theme-v1', { site_id_or_domain: site, slug: other.slug });
    expect(a).toMatchObject({ activated: other.slug, previous_theme: before.slug, theme: { slug: other.slug, active: true } });
    expect(state().themes.find((t) => t.active)!.slug).toBe(other.slug);
    const refused = await h.call('delete-site-themes-v1', { site_id_or_domain: site, slugs: [other.slug], confirm: true });
    expect(refused.deleted).toEqual([]);
    expect(refused.errors).toEqual([expect.objectContaining({ slug: other.slug })]);
    const r = await h.call('delete-site-themes-v1', { site_id_or_domain: site, slugs: [before.slug], confirm: true });
    expect(r.deleted.map((t) => t.slug)).toEqual([before.slug]);
    expect(state().themes.some((t) => t.slug === before.slug)).toBe(false);
  });
});

describe('fleet lists and site reports', () => {
  it('lists abandoned plugins and themes across the fleet, and of one site', async () => {
    const p = await h.call('get-abandoned-plugins-v1', { per_page: 100 });
    const t = await h.call('get-abandoned-themes-v1', { per_page: 100 });
    expect(p.total + t.total).toBeGreaterThan(0);
    for (const item of p.items) expect(h.sim.state(item.site_id === site ? 1 : 2).plugins.some((x) => x.slug === item.slug)).toBe(true);
    const mine = await h.call('get-abandoned-plugins-v1', { site_id_or_domain: site, per_page: 100 });
    expect(mine.items.every((i) => i.site_id === site)).toBe(true);
    expect(mine.total).toBe(p.items.filter((i) => i.site_id === site).length);
  });

  it("answers a site's security issues with its TLS status, and its changes made in wp-admin", async () => {
    const sec = await h.call('get-site-security-v1', { site_id_or_domain: site });
    expect(sec).toMatchObject({ site_id: site, total_issues: sec.security_issues.length, ssl_status: { valid: false } });
    expect(sec.synced_at).toEqual(expect.any(String));
    const ch = await h.call('get-site-changes-v1', { site_id_or_domain: site, per_page: 100 });
    expect(ch.total).toBe(state().changes.length);
    expect(ch.total).toBeGreaterThan(0);
    const context = state().changes[0]!.context;
    const one = await h.call('get-site-changes-v1', { site_id_or_domain: site, contexts: [context.toUpperCase()], per_page: 100 });
    expect(one.total).toBe(state().changes.filter((c) => c.context === context).length);
    expect(await h.call('get-site-changes-v1', { site_id_or_domain: site, source: 'dashboard' })).toMatchObject({ total: 0, changes: [] });
  });
});
