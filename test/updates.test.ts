// Updates across the fleet (issue 15) through every door against the child simulator: listing from the sync, applying
// through the child with per-item results read from the child's own data, ignore rules honoured everywhere, and each
// upstream defect of updates reference §7 answered differently (the test names say which).
import { jobEnded, until } from './support/wait.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildSim } from '../src/child/simulator/server.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { connectMcp } from './support/mcp.js';
import { seedSites, startServer } from './support/server.js';

let f: Fleet;
let sites: Array<{ id: number; url: string }>;
let sim: ChildSim;

/** The simulator's pending updates of a site, as sitefleet should list them. */
function simPending(i: number) {
  const st = sim.state(i);
  return {
    core: st.wpUpdate,
    plugins: st.plugins.filter((p) => p.updateVersion).map((p) => p.slug),
    themes: st.themes.filter((t) => t.updateVersion).map((t) => t.slug),
    translations: st.translations.map((t) => t.slug),
  };
}
/** Site index (1-based) with at least one pending plugin and one pending theme. */
function siteWith(pred: (p: ReturnType<typeof simPending>, i: number) => boolean): number {
  for (let i = 1; i <= sim.sites.length; i++) if (pred(simPending(i), i)) return i;
  throw new Error('no simulated site fits');
}
const sync = (ids: number[]) => f.s.ability('sync-sites-v1', { site_ids_or_domains: ids });
const bump = (i: number) => {
  sim.state(i).rev++;
};

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 9, seed: 7 } });
  sim = f.sim;
  sites = await registerSites(f);
});
afterAll(async () => {
  await f?.close();
});

describe('list-updates-v1 and get-site-updates-v1 (from the sync, no child call)', () => {
  it('lists every pending core, plugin, theme and translation update of the fleet with a summary, paged', async () => {
    const before = sites.map((_, i) => sim.requests(i + 1));
    const r = await f.s.ability('list-updates-v1', { per_page: 200 }, { method: 'GET' });
    expect(r.status).toBe(200);
    const want = sites.flatMap((_, i) => {
      const p = simPending(i + 1);
      return [
        ...(p.core ? [`${i + 1} core wordpress`] : []),
        ...p.plugins.map((s) => `${i + 1} plugin ${s}`),
        ...p.themes.map((s) => `${i + 1} theme ${s}`),
        ...p.translations.map((s) => `${i + 1} translation ${s}`),
      ];
    });
    expect(r.body.updates.map((u: any) => `${u.site_id} ${u.type} ${u.slug}`).sort()).toEqual(want.sort());
    expect(r.body.summary.total).toBe(want.length);
    expect(r.body.summary.translations).toBeGreaterThan(0);
    expect(r.body.total).toBe(want.length);
    expect(sites.map((_, i) => sim.requests(i + 1))).toEqual(before);
    // A translation names its language; it has no installed version (D9).
    const t = r.body.updates.find((u: any) => u.type === 'translation');
    expect(t).toMatchObject({ language: 'de_DE', current_version: null, new_version: expect.any(String) });
    const page2 = await f.s.ability('list-updates-v1', { page: 2, per_page: 3 }, { method: 'GET' });
    expect(page2.body.updates).toEqual(r.body.updates.slice(3, 6));
    expect(page2.body).toMatchObject({ page: 2, per_page: 3, total: want.length });
    const plugins = await f.s.ability('list-updates-v1', { types: ['plugins'], site_ids_or_domains: [sites[0]!.id] }, { method: 'GET' });
    expect(plugins.body.updates.every((u: any) => u.type === 'plugin' && u.site_id === sites[0]!.id)).toBe(true);
    expect(plugins.body.summary).toMatchObject({ core: 0, themes: 0, translations: 0, plugins: simPending(1).plugins.length });
  });

  it('refuses bad input with the field named, and reports unknown sites as error items (D6: a scalar is coerced, never a 500)', async () => {
    const bad = await f.s.ability('list-updates-v1', { types: ['plugin'] }, { method: 'GET' });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('ability_invalid_input');
    expect(bad.body.message).toContain('types');
    expect((await f.s.ability('list-updates-v1', { per_page: 201 }, { method: 'GET' })).status).toBe(400);
    expect((await f.s.ability('list-updates-v1', { nope: 1 }, { method: 'GET' })).status).toBe(400);
    // Bounds, just past them: 200 slugs a call, 5,000 site identifiers.
    const many = await f.s.ability('update-site-plugins-v1', {
      site_id_or_domain: sites[0]!.id,
      slugs: Array.from({ length: 201 }, (_, i) => `p${i}/p.php`),
      dry_run: true,
    });
    expect(many.status).toBe(400);
    expect(many.body.message).toContain('slugs');
    const refs = await f.s.ability('run-updates-v1', { site_ids_or_domains: Array.from({ length: 5001 }, (_, i) => i + 1), dry_run: true });
    expect(refs.status).toBe(400);
    const scalar = await f.s.ability('list-updates-v1', null, { method: 'GET', query: 'input[types]=themes' });
    expect(scalar.status).toBe(200);
    expect(scalar.body.updates.every((u: any) => u.type === 'theme')).toBe(true);
    const unknown = await f.s.ability(
      'list-updates-v1',
      { site_ids_or_domains: [999999, 'nowhere.example', sites[0]!.id] },
      { method: 'GET' },
    );
    expect(unknown.status).toBe(200);
    expect(unknown.body.errors).toEqual([
      {
        site_id: 0,
        site_url: '999999',
        site_name: '',
        type: 'site',
        slug: '',
        code: 'svc_site_not_found',
        message: 'No site found with ID 999999.',
      },
      expect.objectContaining({ site_url: 'nowhere.example', code: 'svc_site_not_found' }),
    ]);
    expect(unknown.body.updates.every((u: any) => u.site_id === sites[0]!.id)).toBe(true);
  });

  it('lists a site once however often it is named (D8)', async () => {
    const one = await f.s.ability('list-updates-v1', { site_ids_or_domains: [sites[0]!.id] }, { method: 'GET' });
    const twice = await f.s.ability('list-updates-v1', { site_ids_or_domains: [sites[0]!.id, sites[0]!.url] }, { method: 'GET' });
    expect(twice.body.total).toBe(one.body.total);
  });

  it("get-site-updates-v1: one site's updates and summary; unknown site 404; refresh=true asks the child first", async () => {
    const r = await f.s.ability('get-site-updates-v1', { site_id_or_domain: sites[1]!.id }, { method: 'GET' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ site_id: sites[1]!.id, site_url: sites[1]!.url, rollback_items: { plugins: [], themes: [] } });
    expect(r.body.summary.plugins).toBe(simPending(2).plugins.length);
    const missing = await f.s.ability('get-site-updates-v1', { site_id_or_domain: 999999 }, { method: 'GET' });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('svc_site_not_found');
    const n = sim.requests(2);
    await f.s.ability('get-site-updates-v1', { site_id_or_domain: sites[1]!.id, refresh: true }, { method: 'GET' });
    expect(sim.requests(2)).toBe(n + 1);
  });
});

describe('applying updates on one site', () => {
  it('update-site-plugins-v1 updates through the child and reports the version the child read from disk', async () => {
    const k = siteWith((p) => p.plugins.length >= 2);
    const id = sites[k - 1]!.id;
    const slug = simPending(k).plugins[0]!;
    const plugin = sim.state(k).plugins.find((p) => p.slug === slug)!;
    const [from, to] = [plugin.version, plugin.updateVersion];
    const r = await f.s.ability('update-site-plugins-v1', { site_id_or_domain: id, slugs: [slug] });
    expect(r.status).toBe(200);
    expect(r.body.updated).toEqual([expect.objectContaining({ site_id: id, type: 'plugin', slug, old_version: from, new_version: to })]);
    expect(r.body.errors).toEqual([]);
    expect(r.body.summary).toEqual({ total_updated: 1, total_errors: 0, total_skipped: 0, total_rolled_back: 0 });
    expect(sim.state(k).upgradeLog).toEqual([`plugin:${slug}`]);
    expect(plugin.version).toBe(to);
    // Stored at once: no longer listed, and the site's plugin list has the new version without a sync.
    const after = await f.s.ability('get-site-updates-v1', { site_id_or_domain: id }, { method: 'GET' });
    expect(after.body.updates.some((u: any) => u.slug === slug)).toBe(false);
    const listed = await f.s.ability('get-site-plugins-v1', { site_id_or_domain: id }, { method: 'GET' });
    expect(listed.body.plugins.find((p: any) => p.slug === slug)).toMatchObject({ version: to, update_version: null });
  });

  it("a package that fails is an error item with the child's reason, and stays pending", async () => {
    const k = siteWith((p) => p.plugins.length >= 1 && p.themes.length >= 1);
    const id = sites[k - 1]!.id;
    const slug = simPending(k).plugins[0]!;
    sim.failUpdate(k, slug, 'Download failed.');
    const r = await f.s.ability('update-site-plugins-v1', { site_id_or_domain: id, slugs: [slug] });
    expect(r.body.updated).toEqual([]);
    expect(r.body.errors).toEqual([expect.objectContaining({ slug, code: 'svc_update_failed', message: 'Download failed.' })]);
    const still = await f.s.ability('list-updates-v1', { site_ids_or_domains: [id], types: ['plugins'] }, { method: 'GET' });
    expect(still.body.updates.some((u: any) => u.slug === slug)).toBe(true);
    sim.failUpdate(k, slug, null);
  });

  it('a theme that fails is an error item, never the silent {"updated":[],"errors":[]} of upstream (D1)', async () => {
    const k = siteWith((p) => p.themes.length >= 1);
    const id = sites[k - 1]!.id;
    const slug = simPending(k).themes[0]!;
    sim.failUpdate(k, slug, 'Download failed.');
    const r = await f.s.ability('update-site-themes-v1', { site_id_or_domain: id });
    expect(r.body.errors).toEqual([
      expect.objectContaining({ slug, type: 'theme', code: 'svc_update_failed', message: 'Download failed.' }),
    ]);
    sim.failUpdate(k, slug, null);
    const ok = await f.s.ability('update-site-themes-v1', { site_id_or_domain: id, slugs: [slug] });
    expect(ok.body.updated).toEqual([expect.objectContaining({ slug, type: 'theme' })]);
  });

  it('a child that says "updated" while the disk keeps the old version is an error, not a success (D2)', async () => {
    const k = siteWith((p) => p.plugins.length >= 1);
    const id = sites[k - 1]!.id;
    const slug = simPending(k).plugins.at(-1)!;
    // The offer vanishes on the child after the last sync (stale dashboard data): the real child then answers true.
    sim.state(k).plugins.find((p) => p.slug === slug)!.updateVersion = null;
    bump(k);
    const r = await f.s.ability('update-site-plugins-v1', { site_id_or_domain: id, slugs: [slug] });
    expect(r.body.updated).toEqual([]);
    expect(r.body.errors).toEqual([expect.objectContaining({ slug, code: 'svc_update_not_applied' })]);
    expect(sim.state(k).upgradeLog).not.toContain(`plugin:${slug}`);
  });

  it('slugs that are not pending are skipped with a reason; dry_run lists exactly what would change and calls no child', async () => {
    const k = siteWith((p) => p.plugins.length >= 1);
    const id = sites[k - 1]!.id;
    const n = sim.requests(k);
    const dry = await f.s.ability('update-site-plugins-v1', {
      site_id_or_domain: id,
      dry_run: true,
      slugs: ['nope/nope.php', ...simPending(k).plugins],
    });
    expect(dry.body.dry_run).toBe(true);
    expect(dry.body.would_update.map((u: any) => u.slug).sort()).toEqual([...simPending(k).plugins].sort());
    expect(dry.body.skipped).toEqual([expect.objectContaining({ slug: 'nope/nope.php', reason: 'not_pending' })]);
    expect(sim.requests(k)).toBe(n);
  });

  it('update-site-translations-v1 installs a language pack (slug + language are its identity, D9)', async () => {
    const k = siteWith((p) => p.translations.length > 0);
    const id = sites[k - 1]!.id;
    const t = sim.state(k).translations[0]!;
    const r = await f.s.ability('update-site-translations-v1', { site_id_or_domain: id });
    expect(r.body.updated).toEqual([
      expect.objectContaining({ type: 'translation', slug: t.slug, language: 'de_DE', old_version: null, new_version: t.version }),
    ]);
    expect(sim.state(k).translations).toEqual([]);
  });

  it("update-site-core-v1 updates WordPress and checks the new version with a sync; 404 when none is pending; 502 with the child's status (D5)", async () => {
    const k = siteWith((p) => !!p.core);
    const id = sites[k - 1]!.id;
    const from = sim.state(k).wpVersion;
    sim.failUpdate(k, 'wordpress', 'x');
    const failed = await f.s.ability('update-site-core-v1', { site_id_or_domain: id });
    expect(failed.status).toBe(502);
    expect(failed.body.code).toBe('svc_update_failed');
    expect(failed.body.message).toContain('WPERROR');
    sim.failUpdate(k, 'wordpress', null);
    const r = await f.s.ability('update-site-core-v1', { site_id_or_domain: id });
    expect(r.status).toBe(200);
    expect(r.body.updated).toMatchObject({ type: 'core', slug: 'wordpress', old_version: from, new_version: sim.state(k).wpVersion });
    expect(sim.state(k).upgradeLog.filter((x) => x === 'core:wordpress')).toHaveLength(1);
    const none = await f.s.ability('update-site-core-v1', { site_id_or_domain: id });
    expect(none.status).toBe(404);
    expect(none.body.code).toBe('svc_no_updates');
    const site = await f.s.ability('get-site-v1', { site_id_or_domain: id }, { method: 'GET' });
    expect(site.body.wp_version).toBe(sim.state(k).wpVersion);
  });

  it('refuses a suspended site (409, nothing sent: D4) and a second run on a site that is updating (409)', async () => {
    const k = siteWith((p) => p.plugins.length >= 1);
    const id = sites[k - 1]!.id;
    await f.s.rest(`/sites/${id}/suspend`, { method: 'POST' });
    const n = sim.requests(k);
    const r = await f.s.ability('update-site-plugins-v1', { site_id_or_domain: id });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('svc_site_suspended');
    expect(sim.requests(k)).toBe(n);
    await f.s.rest(`/sites/${id}/unsuspend`, { method: 'POST' });
    sim.setFault(k, { type: 'latency', ms: 400 });
    const asked = sim.requests(k);
    const first = f.s.ability('update-site-plugins-v1', { site_id_or_domain: id });
    // The second call comes once the first is at the site (held there 400 ms), not after 100 ms.
    await until(
      () => sim.requests(k),
      (x) => x > asked,
      10_000,
    );
    const second = await f.s.ability('update-site-plugins-v1', { site_id_or_domain: id });
    expect(second.status).toBe(409);
    expect(second.body.code).toBe('svc_update_in_progress');
    expect((await first).status).toBe(200);
    sim.setFault(k, null);
  });

  it('unknown site: 404; no credentials: 401; a viewer cannot apply (403)', async () => {
    expect((await f.s.ability('update-site-plugins-v1', { site_id_or_domain: 999999 })).status).toBe(404);
    expect((await f.s.ability('run-updates-v1', {}, { auth: null })).status).toBe(401);
    const viewer = await f.s.ability('run-updates-v1', {}, { auth: f.s.creds.viewer });
    expect(viewer.status).toBe(403);
    expect((await f.s.ability('run-updates-v1', {}, { method: 'GET' })).status).toBe(405);
  });
});

describe('stale and phantom data', () => {
  it('an offer that is not newer than what is installed is not listed (the phantom theme update, D3)', async () => {
    const k = siteWith((p) => p.themes.length > 0);
    const t = sim.state(k).themes.find((x) => x.updateVersion)!;
    const saved = t.updateVersion;
    t.updateVersion = t.version;
    bump(k);
    await sync([sites[k - 1]!.id]);
    const r = await f.s.ability('list-updates-v1', { site_ids_or_domains: [sites[k - 1]!.id], types: ['themes'] }, { method: 'GET' });
    expect(r.body.updates.some((u: any) => u.slug === t.slug)).toBe(false);
    t.updateVersion = saved;
    bump(k);
    await sync([sites[k - 1]!.id]);
  });

  it("a failed item whose offer vanished from the child's fresh data stays pending: unknown is not done (D17)", async () => {
    const k = siteWith((p) => p.plugins.length > 0 && p.themes.length > 0);
    const id = sites[k - 1]!.id;
    const slug = simPending(k).plugins[0]!;
    // WordPress drops the plugin offer after a failed upgrade; the theme call's sync block then lacks it.
    sim.state(k).plugins.find((p) => p.slug === slug)!.updateVersion = null;
    bump(k);
    const r = await f.s.ability('run-updates-v1', { site_ids_or_domains: [id], types: ['plugins', 'themes'] });
    expect(r.body.errors).toContainEqual(expect.objectContaining({ slug, code: 'svc_update_not_applied' }));
    expect(r.body.updated.some((u: any) => u.type === 'theme')).toBe(true);
    const still = await f.s.ability('list-updates-v1', { site_ids_or_domains: [id], types: ['plugins'] }, { method: 'GET' });
    expect(still.body.updates.some((u: any) => u.slug === slug)).toBe(true);
    const fresh = await f.s.ability('list-updates-v1', { site_ids_or_domains: [id], types: ['plugins'], refresh: true }, { method: 'GET' });
    expect(fresh.body.updates.some((u: any) => u.slug === slug)).toBe(false);
  });

  it('a whole-type rule (REST ignore without slug) hides every plugin update of the site and lists as slug "*" (D11)', async () => {
    const k = siteWith((p) => p.plugins.length > 0);
    const id = sites[k - 1]!.id;
    const r = await f.s.rest(`/updates/${id}/ignore/plugins`, { method: 'POST' });
    expect(r.body).toMatchObject({ success: 1, changed: 1 });
    const listed = await f.s.ability('list-updates-v1', { site_ids_or_domains: [id], types: ['plugins'] }, { method: 'GET' });
    expect(listed.body.total).toBe(0);
    const ignored = await f.s.ability('list-ignored-updates-v1', { site_ids_or_domains: [id], types: ['plugins'] }, { method: 'GET' });
    expect(ignored.body.ignored).toEqual([expect.objectContaining({ slug: '*', name: 'All plugins', type: 'plugin' })]);
    const un = await f.s.rest(`/updates/${id}/ignore/plugins`, { method: 'DELETE', token: f.s.creds.key.delete });
    expect(un.body).toMatchObject({ success: 1, changed: 1 });
    const back = await f.s.ability('list-updates-v1', { site_ids_or_domains: [id], types: ['plugins'] }, { method: 'GET' });
    expect(back.body.total).toBe(simPending(k).plugins.length);
  });
});

describe('ignore rules', () => {
  it('an ignored plugin is not listed, not updated by run-updates-v1 or update-site-plugins-v1, and listed as ignored with its real name (D4, D10)', async () => {
    const k = siteWith((p) => p.plugins.length >= 1);
    const id = sites[k - 1]!.id;
    const slug = simPending(k).plugins[0]!;
    const name = sim.state(k).plugins.find((p) => p.slug === slug)!.name;
    const ig = await f.s.ability('ignore-site-plugins-v1', { site_id_or_domain: id, slugs: [slug, slug] });
    expect(ig.body).toEqual({ success: true, message: '1 plugin ignored.', ignored_count: 1 });
    const again = await f.s.ability('ignore-site-plugins-v1', { site_id_or_domain: id, slugs: [slug] });
    expect(again.body).toMatchObject({ success: false, ignored_count: 0 });
    const listed = await f.s.ability('list-updates-v1', { site_ids_or_domains: [id] }, { method: 'GET' });
    expect(listed.body.updates.some((u: any) => u.slug === slug)).toBe(false);
    const ignored = await f.s.ability('list-ignored-updates-v1', { site_ids_or_domains: [id] }, { method: 'GET' });
    expect(ignored.body.ignored).toEqual([
      expect.objectContaining({ site_id: id, type: 'plugin', slug, name, ignored_version: 'all_versions', scope: 'site' }),
    ]);
    const single = await f.s.ability('update-site-plugins-v1', { site_id_or_domain: id, slugs: [slug] });
    expect(single.body.skipped).toEqual([expect.objectContaining({ slug, reason: 'ignored' })]);
    const run = await f.s.ability('run-updates-v1', { site_ids_or_domains: [id], types: ['plugins'] });
    expect(run.body.updated.some((u: any) => u.slug === slug)).toBe(false);
    expect(run.body.skipped.filter((x: any) => x.slug === slug)).toEqual([expect.objectContaining({ slug, reason: 'ignored' })]);
    expect(sim.state(k).upgradeLog).not.toContain(`plugin:${slug}`);
    const un = await f.s.ability('ignore-site-plugins-v1', { site_id_or_domain: id, slugs: [slug], action: 'remove' });
    expect(un.body).toEqual({ success: true, message: '1 plugin unignored.', ignored_count: 1 });
    const none = await f.s.ability('ignore-site-plugins-v1', { site_id_or_domain: id, slugs: [] });
    expect(none.body).toEqual({ success: false, message: 'No plugins were ignored.', ignored_count: 0 });
  });

  it('set-ignored-updates-v1 and ignore-site-core-v1 hide core from update-all-v1; bad values are 400 naming the field', async () => {
    const k = siteWith((p) => !!p.core);
    const id = sites[k - 1]!.id;
    const set = await f.s.ability('set-ignored-updates-v1', { action: 'ignore', site_id_or_domain: id, type: 'core', slug: 'wordpress' });
    expect(set.body).toEqual({ success: true, action: 'ignore', site_id: id, type: 'core', slug: 'wordpress', changed: true });
    const all = await f.s.ability('update-all-v1', { site_ids_or_domains: [id], types: ['core'] });
    expect(all.body.updated).toEqual([]);
    expect(all.body.skipped).toEqual([expect.objectContaining({ type: 'core', reason: 'ignored' })]);
    expect(sim.state(k).upgradeLog).not.toContain('core:wordpress');
    const rm = await f.s.ability('ignore-site-core-v1', { site_id_or_domain: id, action: 'remove' });
    expect(rm.body).toEqual({ success: true, message: 'Core updates unignored for this site.', ignored_count: 1 });
    for (const input of [
      { action: 'add', site_id_or_domain: id, type: 'core', slug: 'x' },
      { action: 'ignore', site_id_or_domain: id, type: 'plugins', slug: 'x' },
      { action: 'ignore', site_id_or_domain: id, type: 'plugin' },
    ]) {
      const r = await f.s.ability('set-ignored-updates-v1', input);
      expect(r.status, JSON.stringify(input)).toBe(400);
    }
    expect((await f.s.ability('ignore-site-core-v1', { site_id_or_domain: id, action: 'ignore' })).status).toBe(400);
    expect((await f.s.ability('ignore-site-plugins-v1', { site_id_or_domain: id })).status).toBe(400);
    expect((await f.s.ability('list-ignored-updates-v1', { types: ['translations'] }, { method: 'GET' })).status).toBe(400);
    expect(
      (await f.s.ability('set-ignored-updates-v1', { action: 'ignore', site_id_or_domain: 999999, type: 'plugin', slug: 'x' })).status,
    ).toBe(404);
  });
});

describe('run-updates-v1 and update-all-v1 over several sites', () => {
  it("update-all-v1 with types [] updates everything (D7); duplicates are updated once (D8); a dead site is one site's errors", async () => {
    const ks = [siteWith((p, i) => i > 0 && p.plugins.length > 0), siteWith((p) => p.themes.length > 0)].filter(
      (v, i, a) => a.indexOf(v) === i,
    );
    const ids = ks.map((k) => sites[k - 1]!.id);
    const dead = siteWith((p, i) => !ks.includes(i) && p.plugins.length > 0);
    sim.setFault(dead, { type: 'http500' });
    const want = ks.flatMap((k) => [...simPending(k).plugins, ...simPending(k).themes]);
    // Plain mode: in safe mode a dead site is skipped as unhealthy before anything is sent (test/abilities/safe-updates.test.ts).
    const r = await f.s.ability('update-all-v1', {
      site_ids_or_domains: [...ids, sites[ks[0]! - 1]!.url, sites[dead - 1]!.id],
      types: [],
      safe: false,
    });
    expect(r.status).toBe(200);
    for (const slug of want) expect(r.body.updated.filter((u: any) => u.slug === slug).length, slug).toBeGreaterThanOrEqual(1);
    for (const k of ks) expect(new Set(sim.state(k).upgradeLog).size).toBe(sim.state(k).upgradeLog.length);
    const deadErrors = r.body.errors.filter((e: any) => e.site_id === sites[dead - 1]!.id);
    expect(deadErrors.length).toBe(
      simPending(dead).plugins.length +
        simPending(dead).themes.length +
        (simPending(dead).core ? 1 : 0) +
        simPending(dead).translations.length,
    );
    expect(deadErrors[0].code).toBe('svc_child_not_detected');
    expect(r.body.summary.sites_updated).toBe(ks.length);
    sim.setFault(dead, null);
  });

  it('a suspended site in a batch is skipped per item (D4); specific_items limits the run', async () => {
    const k = siteWith((p) => p.plugins.length > 0);
    const id = sites[k - 1]!.id;
    await f.s.rest(`/sites/${id}/suspend`, { method: 'POST' });
    const r = await f.s.ability('run-updates-v1', { site_ids_or_domains: [id], types: ['plugins'] });
    expect(r.body.skipped.length).toBe(simPending(k).plugins.length);
    expect(r.body.skipped[0]).toMatchObject({ reason: 'site_suspended' });
    await f.s.rest(`/sites/${id}/unsuspend`, { method: 'POST' });
    const only = simPending(k).plugins[0]!;
    const one = await f.s.ability('run-updates-v1', { site_ids_or_domains: [id], specific_items: [only] });
    expect(one.body.updated.map((u: any) => u.slug)).toEqual([only]);
  });

  it('a child that times out mid-update is a per-item timeout error; the item stays listed until a sync shows the new version', async () => {
    const k = siteWith((p) => p.plugins.length > 0);
    const id = sites[k - 1]!.id;
    const slug = simPending(k).plugins[0]!;
    const g = await startFleet({ sim: { sites: 1, seed: 99 }, config: { childTimeoutMs: '1500', childPackageTimeoutMs: '1500' } });
    try {
      const [s1] = await registerSites(g);
      const gslug = g.sim.state(1).plugins.find((p) => p.updateVersion)?.slug;
      if (!gslug) return;
      g.sim.setFault(1, { type: 'hang_after_work' });
      // Plain mode: in safe mode the hanging site fails its probe first and is skipped.
      const r = await g.s.ability('update-site-plugins-v1', { site_id_or_domain: s1!.id, slugs: [gslug], safe: false });
      expect(r.body.errors).toEqual([expect.objectContaining({ slug: gslug, code: 'svc_child_timeout' })]);
      g.sim.setFault(1, null);
      const listed = await g.s.ability('list-updates-v1', {}, { method: 'GET' });
      expect(listed.body.updates.some((u: any) => u.slug === gslug)).toBe(true);
      const fresh = await g.s.ability('list-updates-v1', { refresh: true }, { method: 'GET' });
      expect(fresh.body.updates.some((u: any) => u.slug === gslug)).toBe(false);
      expect(g.sim.state(1).upgradeLog).toEqual([`plugin:${gslug}`]);
    } finally {
      await g.close();
    }
    expect(id && slug).toBeTruthy();
  });
});

describe('jobs', () => {
  it('run-updates-v1 over the queue threshold is a job that records every item and updates each once', async () => {
    const g = await startFleet({ sim: { sites: 6, seed: 5 }, config: { queueThreshold: '2' } });
    try {
      await registerSites(g);
      const pending = Array.from({ length: 6 }, (_, i) => g.sim.state(i + 1).plugins.filter((p) => p.updateVersion).length);
      const r = await g.s.ability('run-updates-v1', { types: ['plugins'] });
      expect(r.body).toMatchObject({
        queued: true,
        updates_queued: pending.reduce((a, b) => a + b, 0),
        sites_queued: pending.filter(Boolean).length,
      });
      await jobEnded(g.s.services.jobs, r.body.job_id);
      const job = (await g.s.ability('get-batch-job-status-v1', { job_id: r.body.job_id }, { method: 'GET' })).body;
      expect(job.status).toBe('completed');
      // The status_url it answered is served (upstream's pointed at a missing route, D14).
      const viaUrl = await fetch(r.body.status_url, { headers: { authorization: `Bearer ${g.s.creds.key.read}` } });
      expect(viaUrl.status).toBe(200);
      expect(job.items.filter((i: any) => i.status === 'updated').length).toBe(pending.reduce((a, b) => a + b, 0));
      for (let i = 1; i <= 6; i++) expect(g.sim.state(i).upgradeLog.length).toBe(pending[i - 1]);
    } finally {
      await g.close();
    }
  });
});

describe('cancelling a job', () => {
  it('starts no site after the cancel, ends as failed "cancelled" and says which sites were not started', async () => {
    const g = await startFleet({ sim: { sites: 6, seed: 5, latencyMs: 150 }, config: { queueThreshold: '2', childConcurrency: '1' } });
    try {
      await registerSites(g);
      // Plain mode: one site at a time (safe mode runs more sites at once, with probes between items).
      const r = await g.s.rest('/updates/update', { method: 'POST', json: { safe: false } });
      expect(r.body.queued, JSON.stringify(r.body)).toBe(true);
      const id = r.body.job_id;
      const status = async () => (await g.s.rest(`/jobs/${id}`)).body.data;
      for (let t = 0; t < 200 && (await status()).processed < 1; t++) await new Promise((x) => setTimeout(x, 25));
      expect((await g.s.rest(`/jobs/${id}/cancel`, { method: 'POST', token: g.s.creds.key.read })).status).toBe(403);
      const c = await g.s.rest(`/jobs/${id}/cancel`, { method: 'POST' });
      expect(c.status, JSON.stringify(c.body)).toBe(200);
      let end: any;
      for (let t = 0; t < 200; t++) {
        end = await status();
        if (end.status !== 'processing' && end.status !== 'queued') break;
        await new Promise((x) => setTimeout(x, 25));
      }
      expect(end).toMatchObject({ status: 'failed', failure: 'cancelled' });
      expect(end.processed).toBeLessThan(end.total);
      expect(end.errors.at(-1)).toMatchObject({ code: 'cancelled', message: expect.stringContaining('not started') });
      const doneSites = new Set(end.items.map((i: any) => i.site_id));
      const logs = Array.from({ length: 6 }, (_, i) => g.sim.state(i + 1).upgradeLog.length);
      expect(logs.filter((n) => n > 0).length).toBe(doneSites.size);
      const again = await g.s.rest(`/jobs/${id}/cancel`, { method: 'POST' });
      expect(again.body).toMatchObject({ success: 1, data: { status: 'failed', failure: 'cancelled' } });
      expect((await g.s.ability('cancel-batch-job-v1', { job_id: 'update_00000000-0000-4000-8000-000000000000' })).status).toBe(404);
    } finally {
      await g.close();
    }
  });
});

describe('MCP', () => {
  it('asks the user by elicitation before a run over several sites, and does nothing when declined', async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
    const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const { buildMcpServer } = await import('../src/mcp/server.js');
    const [a, b] = InMemoryTransport.createLinkedPair();
    await buildMcpServer(f.s.registry, { principal: { kind: 'local', name: 'stdio' } }, f.s.services).connect(a);
    const client = new Client({ name: 't', version: '1' }, { capabilities: { elicitation: {} } });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, (req) => {
      asked.push(req.params.message);
      return { action: 'decline' };
    });
    await client.connect(b);
    const logs = sites.map((_, i) => sim.state(i + 1).upgradeLog.length);
    const r = await client.callTool({ name: 'update-all-v1', arguments: {} });
    expect(r.isError).toBe(true);
    expect((r.structuredContent as any).code).toBe('svc_confirmation_declined');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('would_update');
    // A run on one site is not asked about.
    const k = siteWith((p) => p.plugins.length > 0);
    const one = await client.callTool({
      name: 'run-updates-v1',
      arguments: { site_ids_or_domains: [sites[k - 1]!.id], types: ['plugins'], dry_run: true },
    });
    expect((one.structuredContent as any).sites_to_update).toBe(1);
    expect(asked).toHaveLength(1);
    expect(sites.map((_, i) => sim.state(i + 1).upgradeLog.length)).toEqual(logs);
    await client.close();
  });

  it('reports progress per item and answers per-item results', async () => {
    const mcp = await connectMcp(f.s);
    const k = siteWith((p) => p.plugins.length + p.themes.length > 0);
    const progress: number[] = [];
    const r = await mcp.client.callTool(
      { name: 'run-updates-v1', arguments: { site_ids_or_domains: [sites[k - 1]!.id], types: ['plugins', 'themes'] } },
      undefined,
      {
        onprogress: (p) => {
          progress.push(p.progress);
        },
      },
    );
    const body = r.structuredContent as any;
    expect(body.updated.length + body.errors.length).toBeGreaterThan(0);
    expect(progress.length).toBe(body.updated.length + body.errors.length);
    await mcp.close();
  });
});

describe('every update ability answers on MCP, and every update route on REST', () => {
  it('MCP: each of the 13 tools, with a dry run where it applies', async () => {
    const mcp = await connectMcp(f.s);
    try {
      const id = sites[0]!.id;
      const calls: Array<[string, Record<string, unknown>]> = [
        ['list-updates-v1', {}],
        ['get-site-updates-v1', { site_id_or_domain: id }],
        ['list-ignored-updates-v1', {}],
        ['set-ignored-updates-v1', { action: 'unignore', site_id_or_domain: id, type: 'plugin', slug: 'x/x.php' }],
        ['ignore-site-core-v1', { site_id_or_domain: id, action: 'remove' }],
        ['ignore-site-plugins-v1', { site_id_or_domain: id, slugs: ['x/x.php'], action: 'remove' }],
        ['ignore-site-themes-v1', { site_id_or_domain: id, slugs: ['x'], action: 'remove' }],
        ['update-site-plugins-v1', { site_id_or_domain: id, dry_run: true }],
        ['update-site-themes-v1', { site_id_or_domain: id, dry_run: true }],
        ['update-site-translations-v1', { site_id_or_domain: id, dry_run: true }],
        ['run-updates-v1', { dry_run: true }],
        ['update-all-v1', { dry_run: true }],
      ];
      for (const [name, args] of calls) {
        const r = await mcp.call(name, args);
        expect(r.isError, `${name}: ${JSON.stringify(r.body)}`).toBe(false);
      }
      const tools = (await mcp.client.listTools()).tools.map((t) => t.name);
      for (const [name] of calls) expect(tools).toContain(name);
      expect(tools).toContain('update-site-core-v1');
      const core = await mcp.call('update-site-core-v1', { site_id_or_domain: 999999 });
      expect(core).toMatchObject({ isError: true, body: { code: 'svc_site_not_found' } });
    } finally {
      await mcp.close();
    }
  });

  it('REST: core, translations, the fleet run and the core ignore routes', async () => {
    const k = siteWith((p) => !!p.core || p.translations.length > 0 || true);
    const id = sites[k - 1]!.id;
    for (const path of ['update/wp', 'update/core', 'update/translations', 'update/themes', 'update']) {
      const r = await f.s.rest(`/updates/${id}/${path}?dry_run=1`, { method: 'POST' });
      expect([200, 404], `${path}: ${JSON.stringify(r.body)}`).toContain(r.status);
      if (r.status === 404) expect(r.body.code).toBe('svc_no_updates');
      else expect(r.body.dry_run).toBe(true);
    }
    const fleet = await f.s.rest('/updates/update?dry_run=1&type=plugins', { method: 'POST' });
    expect(fleet.body).toMatchObject({ dry_run: true, success: 1 });
    expect(fleet.body.would_update.every((u: any) => u.type === 'plugin')).toBe(true);
    const ig = await f.s.rest(`/updates/${id}/ignore/wp`, { method: 'POST' });
    expect(ig.body).toMatchObject({ success: 1, changed: 1 });
    expect((await f.s.rest(`/updates/${id}/ignored?type=wp`)).body.data).toEqual([
      expect.objectContaining({ type: 'core', slug: 'wordpress' }),
    ]);
    const un = await f.s.rest(`/updates/${id}/ignore/core`, { method: 'DELETE', token: f.s.creds.key.delete });
    expect(un.body).toMatchObject({ success: 1, changed: 1 });
    expect((await f.s.rest(`/updates/${id}/ignore/core`, { method: 'DELETE', token: f.s.creds.key.read })).status).toBe(403);
  });
});

describe('REST v2', () => {
  it('GET /updates pages and excludes by site id (D15); GET /updates/:id; POST …/update/plugins; ignore and unignore routes; read keys cannot write', async () => {
    const all = await f.s.rest('/updates?per_page=200');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ success: 1, page: 1, per_page: 200 });
    const first = all.body.data[0];
    const ex = await f.s.rest(`/updates?per_page=200&exclude=${first.site_id}`);
    expect(ex.body.data.some((u: any) => u.site_id === first.site_id)).toBe(false);
    expect(ex.body.data.length).toBe(all.body.data.filter((u: any) => u.site_id !== first.site_id).length);
    const wp = await f.s.rest('/updates?type=wp');
    expect(wp.status).toBe(200);
    expect(wp.body.data.every((u: any) => u.type === 'core')).toBe(true);
    const site = await f.s.rest(`/updates/${first.site_id}`);
    expect(site.body).toMatchObject({ success: 1 });
    expect((await f.s.rest('/updates/999999')).body.code).toBe('svc_rest_invalid_site_id');
    const k = siteWith((p) => p.plugins.length > 0);
    const id = sites[k - 1]!.id;
    const slug = simPending(k).plugins[0]!;
    const ro = await f.s.rest(`/updates/${id}/update/plugins?slug=${encodeURIComponent(slug)}`, {
      method: 'POST',
      token: f.s.creds.key.read,
    });
    expect(ro.status).toBe(403);
    const ig = await f.s.rest(`/updates/${id}/ignore/plugins?slug=${encodeURIComponent(slug)}`, { method: 'POST' });
    expect(ig.body).toMatchObject({ success: 1, changed: 1 });
    const listed = await f.s.rest(`/updates/${id}/ignored`);
    expect(listed.body.data).toEqual([expect.objectContaining({ slug, type: 'plugin' })]);
    expect((await f.s.rest('/updates/ignored')).status).toBe(200);
    const un = await f.s.rest(`/updates/${id}/ignore/plugins?slug=${encodeURIComponent(slug)}`, {
      method: 'DELETE',
      token: f.s.creds.key.delete,
    });
    expect(un.status, JSON.stringify(un.body)).toBe(200);
    const dryAll = await f.s.rest(`/updates/${id}/update?dry_run=1`, { method: 'POST' });
    expect(dryAll.status, JSON.stringify(dryAll.body)).toBe(200);
    expect(dryAll.body.would_update.some((u: any) => u.slug === slug)).toBe(true);
    expect((await f.s.rest('/updates/999999/update', { method: 'POST' })).body.code).toBe('svc_rest_invalid_site_id');
    const up = await f.s.rest(`/updates/${id}/update/plugins?slug=${encodeURIComponent(slug)}`, { method: 'POST' });
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ success: 1, data: { updated: [expect.objectContaining({ slug })] }, summary: { total_updated: 1 } });
  });
});

/** A site's stored data with these plugin updates pending and nothing else. */
const dataWithUpdates = (plugins: Array<{ slug: string; name: string; current_version: string; new_version: string }>) => ({
  plugins: [] as unknown[],
  themes: [],
  security: [],
  changes: [],
  users: [],
  synced_at: '',
  updates: { core: null, themes: [], translations: [], plugins },
});

describe('bounds', () => {
  it('a fleet-wide dry run lists at most 1,000 items and counts them all; the listing pages them (1,200 items on 300 sites)', async () => {
    const s = await startServer();
    try {
      const recs = await seedSites(s.services, 300, (i) => ({ url: `https://b${i}.example/`, last_sync: new Date().toISOString() }));
      await s.services.store.write((tx) => {
        for (const r of recs) {
          tx.putBlob(
            'site-data',
            r.id,
            dataWithUpdates([1, 2, 3, 4].map((k) => ({ slug: `p${k}/p.php`, name: `P${k}`, current_version: '1.0', new_version: '1.1' }))),
          );
        }
      });
      const dry = await s.ability('update-all-v1', { dry_run: true });
      expect(dry.status).toBe(200);
      expect(dry.body).toMatchObject({ dry_run: true, would_update_total: 1200, sites_to_update: 300, truncated: true });
      expect(dry.body.would_update).toHaveLength(1000);
      const page = await s.ability('list-updates-v1', { page: 7, per_page: 200 }, { method: 'GET' });
      expect(page.body).toMatchObject({ total: 1200, summary: { plugins: 1200, total: 1200 } });
      expect(page.body.updates).toHaveLength(0);
      expect((await s.ability('list-updates-v1', { page: 6, per_page: 200 }, { method: 'GET' })).body.updates).toHaveLength(200);
      // refresh syncs at most 200 sites: 300 is refused before any child call.
      const refresh = await s.ability('list-updates-v1', { refresh: true }, { method: 'GET' });
      expect(refresh.status).toBe(400);
      expect(refresh.body.code).toBe('svc_refresh_too_many');
      // A removed site's ignore rules go with it.
      await s.ability('ignore-site-plugins-v1', { site_id_or_domain: recs[0]!.id, slugs: ['p1/p.php'] });
      expect([...s.services.store.all<{ id: number; site_id: number }>('ignores')].some((r) => r.site_id === recs[0]!.id)).toBe(true);
      const del = await s.rest(`/sites/${recs[0]!.id}/remove`, { method: 'DELETE', token: s.creds.key.delete });
      expect(del.status, JSON.stringify(del.body)).toBe(200);
      expect([...s.services.store.all<{ id: number; site_id: number }>('ignores')].some((r) => r.site_id === recs[0]!.id)).toBe(false);
    } finally {
      await s.close();
    }
  });
});

describe('the fleet list of pending updates after edits', () => {
  it('shows each site as it is now when an edit leaves its items as they were (a rename, a new URL), and the abandoned list too', async () => {
    const s = await startServer();
    try {
      const recs = await seedSites(s.services, 3, (i) => ({
        url: `https://e${i}.example/`,
        name: `Edit ${i}`,
        last_sync: new Date().toISOString(),
      }));
      const plugin = (k: number) => ({ slug: `p${k}/p.php`, name: `P${k}`, version: '1.0', last_updated: '2015-01-01', active: true });
      await s.services.store.write((tx) => {
        for (const r of recs)
          tx.putBlob('site-data', r.id, {
            ...dataWithUpdates([{ slug: 'p1/p.php', name: 'P1', current_version: '1.0', new_version: '1.1' }]),
            plugins: [plugin(1)],
          });
      });
      const listed = async () =>
        (await s.ability('list-updates-v1', {}, { method: 'GET' })).body.updates as Array<{
          site_id: number;
          site_name: string;
          site_url: string;
        }>;
      const abandoned = async () => (await s.ability('get-abandoned-plugins-v1', {}, { method: 'GET' })).body;
      expect((await listed()).map((u) => u.site_name)).toEqual(['Edit 0', 'Edit 1', 'Edit 2']);
      const before = await abandoned();
      expect(JSON.stringify(before)).toContain('https://e1.example/');
      const [, two] = recs;
      // A rename (the list's order stands): the same items, under the new name.
      await s.services.store.write((tx) => s.services.sites.patch(tx, two!.id, { name: 'Renamed' }));
      expect((await listed()).map((u) => u.site_name)).toEqual(['Edit 0', 'Renamed', 'Edit 2']);
      // A new URL: the abandoned items, under the new URL.
      await s.services.store.write((tx) => s.services.sites.patch(tx, two!.id, { url: 'https://moved.example/' }));
      expect((await listed()).find((u) => u.site_id === two!.id)).toMatchObject({
        site_name: 'Renamed',
        site_url: 'https://moved.example/',
      });
      const now = JSON.stringify(await abandoned());
      expect(now).toContain('https://moved.example/');
      expect(now).not.toContain('https://e1.example/');
    } finally {
      await s.close();
    }
  });
});

describe('cancellation', () => {
  it('no site starts after a cancel; the result says what was done and what was not', async () => {
    const g = await startFleet({ sim: { sites: 6, seed: 21, latencyMs: 60 }, config: { childConcurrency: '1' } });
    try {
      const ids = (await registerSites(g)).map((x) => x.id);
      const abort = new AbortController();
      const r = (await g.s.registry.run(
        g.s.registry.get('run-updates-v1')!,
        { site_ids_or_domains: ids, types: ['plugins'] },
        {
          principal: { kind: 'local', name: 'cli' },
          coerce: false,
          signal: abort.signal,
          progress: () => {
            abort.abort();
          },
        },
      )) as any;
      expect(r.not_processed.length).toBeGreaterThan(0);
      const started = ids.filter((id) => !r.not_processed.includes(id));
      const cancelled = r.skipped.filter((x: any) => x.reason === 'cancelled');
      expect(new Set(cancelled.map((x: any) => x.site_id))).toEqual(new Set(r.not_processed));
      for (const id of r.not_processed) expect(g.sim.state(ids.indexOf(id) + 1).upgradeLog).toEqual([]);
      expect(r.updated.every((u: any) => started.includes(u.site_id))).toBe(true);
      expect(r.updated.length).toBeGreaterThan(0);
    } finally {
      await g.close();
    }
  });
});
