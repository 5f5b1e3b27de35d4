// Update abilities through the registry, over the child simulator: listing from the sync, applying on one site
// (plugins, themes, translations, core) with the child's own versions, ignore rules and what they hide, and fleet
// runs (dry run first) — without a door. (Upstream defects, jobs, MCP elicitation: test/updates.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTION_NAMES } from '../../src/store/engine.js';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';

let h: AbilityHarness;
let ids: number[];

function pending(i: number) {
  const st = h.sim.state(i);
  return {
    core: st.wpUpdate,
    plugins: st.plugins.filter((p) => p.updateVersion).map((p) => p.slug),
    themes: st.themes.filter((t) => t.updateVersion).map((t) => t.slug),
    translations: st.translations.map((t) => t.slug),
  };
}
/** A simulated site (1-based) whose pending updates fit, other than those in `not`. */
function siteWith(pred: (p: ReturnType<typeof pending>) => boolean, not: number[] = []): number {
  for (let i = 1; i <= h.sim.sites.length; i++) if (!not.includes(i) && pred(pending(i))) return i;
  throw new Error('no simulated site fits');
}

beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 6 } });
  ids = (await h.addSimSites()).map((s) => s.id);
  await h.call('sync-sites-v1', {});
});
afterAll(() => h.close());

describe('list-updates-v1 and get-site-updates-v1', () => {
  it("lists what the children offered, with a summary by type, and one site's share", async () => {
    const all = await h.call('list-updates-v1', { per_page: 200 }, h.as.viewer);
    const want = h.sim.sites.map((_, k) => pending(k + 1));
    expect(all.summary.plugins).toBe(want.reduce((n, p) => n + p.plugins.length, 0));
    expect(all.summary.themes).toBe(want.reduce((n, p) => n + p.themes.length, 0));
    expect(all.summary.core).toBe(want.filter((p) => p.core).length);
    expect(all.total).toBe(all.summary.total);
    const k = siteWith((p) => p.plugins.length > 0);
    const one = await h.call('get-site-updates-v1', { site_id_or_domain: ids[k - 1]!, types: ['plugins'] });
    expect(one.updates.map((u) => u.slug).sort()).toEqual([...pending(k).plugins].sort());
    expect(one.summary.plugins).toBe(pending(k).plugins.length);
    expect(await h.fails('get-site-updates-v1', { site_id_or_domain: 99999 })).toMatchObject({ code: 'svc_site_not_found' });
  });
});

describe('refresh is a write (issue 35, finding 2)', () => {
  /** Requests the simulated children received, and every collection's version: what a refresh would change. */
  const childRequests = () => h.sim.sites.reduce((n, _s, k) => n + h.sim.requests(k + 1), 0);
  const storeVersion = () => COLLECTION_NAMES.map((c) => h.services.store.version(c)).join('.');

  it.each(['readKey', 'viewer', 'readOnlyLocal'] as const)(
    'a read-only caller (%s) asking for refresh is refused with 403: no child call, no store write',
    async (who) => {
      const [calls, version] = [childRequests(), storeVersion()];
      for (const [name, input] of [
        ['list-updates-v1', { refresh: true }],
        ['get-site-updates-v1', { site_id_or_domain: ids[0]!, refresh: true }],
      ] as const) {
        const e = await h.fails(name, input, h.as[who]);
        expect(e).toMatchObject({ code: 'svc_permission_denied', status: 403 });
        expect(e.message).toMatch(/refresh: true syncs the sites, which needs write permission/);
      }
      expect(childRequests()).toBe(calls);
      expect(storeVersion()).toBe(version);
      // Without refresh the same caller reads what the last sync stored.
      expect((await h.call('list-updates-v1', {}, h.as[who])).errors).toEqual([]);
      expect((await h.call('get-site-updates-v1', { site_id_or_domain: ids[0]! }, h.as[who])).site_id).toBe(ids[0]);
      expect(childRequests()).toBe(calls);
    },
  );

  it('a caller that may write still refreshes: every live site is asked again', async () => {
    const calls = childRequests();
    expect((await h.call('list-updates-v1', { refresh: true })).errors).toEqual([]);
    expect(childRequests()).toBeGreaterThanOrEqual(calls + ids.length);
    const one = childRequests();
    await h.call('get-site-updates-v1', { site_id_or_domain: ids[0]!, refresh: true }, h.as.admin);
    expect(childRequests()).toBeGreaterThan(one);
  });
});

describe('applying on one site', () => {
  it('update-site-plugins-v1 updates through the child; dry_run calls no child', async () => {
    const k = siteWith((p) => p.plugins.length > 0);
    const slug = pending(k).plugins[0]!;
    const plugin = h.sim.state(k).plugins.find((p) => p.slug === slug)!;
    const [from, to] = [plugin.version, plugin.updateVersion];
    const dry = await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [slug], dry_run: true });
    expect(dry).toMatchObject({ dry_run: true, would_update: [expect.objectContaining({ slug, current_version: from, new_version: to })] });
    expect(h.sim.state(k).upgradeLog).toEqual([]);
    const r = await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [slug] });
    expect(r.updated).toEqual([expect.objectContaining({ type: 'plugin', slug, old_version: from, new_version: to })]);
    expect(r.summary).toEqual({ total_updated: 1, total_errors: 0, total_skipped: 0, total_rolled_back: 0 });
    expect(plugin.version).toBe(to);
    expect(await h.fails('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [slug] }, h.as.viewer)).toMatchObject({
      code: 'svc_permission_denied',
    });
  });

  it('update-site-themes-v1 and update-site-translations-v1 install what is pending', async () => {
    const kt = siteWith((p) => p.themes.length > 0);
    const theme = pending(kt).themes[0]!;
    const t = await h.call('update-site-themes-v1', { site_id_or_domain: ids[kt - 1]!, slugs: [theme] });
    expect(t.updated).toEqual([expect.objectContaining({ type: 'theme', slug: theme })]);
    expect(pending(kt).themes).not.toContain(theme);
    const kl = siteWith((p) => p.translations.length > 0);
    const before = h.sim.state(kl).translations.length;
    const l = await h.call('update-site-translations-v1', { site_id_or_domain: ids[kl - 1]! });
    expect(l.updated.length).toBe(before);
    expect(l.updated.every((u) => u.type === 'translation')).toBe(true);
    expect(h.sim.state(kl).translations).toEqual([]);
  });

  it('update-site-core-v1 updates WordPress; none pending is 404 svc_no_updates', async () => {
    const k = siteWith((p) => !!p.core);
    const from = h.sim.state(k).wpVersion;
    const r = await h.call('update-site-core-v1', { site_id_or_domain: ids[k - 1]! });
    expect(r.updated).toMatchObject({ type: 'core', slug: 'wordpress', old_version: from, new_version: h.sim.state(k).wpVersion });
    expect(h.sim.state(k).wpVersion).not.toBe(from);
    expect(await h.fails('update-site-core-v1', { site_id_or_domain: ids[k - 1]! })).toMatchObject({ code: 'svc_no_updates', status: 404 });
  });
});

describe('ignore rules', () => {
  it('ignore-site-plugins-v1 hides a plugin from the lists and from runs; removing the rule brings it back', async () => {
    const k = siteWith((p) => p.plugins.length > 0);
    const id = ids[k - 1]!;
    const slug = pending(k).plugins[0]!;
    expect(await h.call('ignore-site-plugins-v1', { site_id_or_domain: id, slugs: [slug], action: 'add' })).toMatchObject({
      success: true,
      ignored_count: 1,
    });
    expect((await h.call('get-site-updates-v1', { site_id_or_domain: id })).updates.some((u) => u.slug === slug)).toBe(false);
    const rules = await h.call('list-ignored-updates-v1', { site_ids_or_domains: [id] });
    expect(rules.ignored).toContainEqual(expect.objectContaining({ site_id: id, type: 'plugin', slug, scope: 'site' }));
    const run = await h.call('run-updates-v1', { site_ids_or_domains: [id], types: ['plugins'], specific_items: [slug] });
    expect(run.updated).toEqual([]);
    expect(run.skipped).toEqual([expect.objectContaining({ slug, reason: 'ignored' })]);
    expect(await h.call('ignore-site-plugins-v1', { site_id_or_domain: id, slugs: [slug], action: 'remove' })).toMatchObject({
      ignored_count: 1,
    });
    expect((await h.call('get-site-updates-v1', { site_id_or_domain: id })).updates.some((u) => u.slug === slug)).toBe(true);
  });

  it('ignore-site-themes-v1, ignore-site-core-v1 and set-ignored-updates-v1 keep rules; changed=false when it already was so', async () => {
    const k = siteWith((p) => p.themes.length > 0);
    const id = ids[k - 1]!;
    const theme = pending(k).themes[0]!;
    expect((await h.call('ignore-site-themes-v1', { site_id_or_domain: id, slugs: [theme], action: 'add' })).ignored_count).toBe(1);
    expect((await h.call('ignore-site-themes-v1', { site_id_or_domain: id, slugs: [theme], action: 'add' })).ignored_count).toBe(0);
    expect(await h.call('ignore-site-core-v1', { site_id_or_domain: id, action: 'add' })).toMatchObject({
      success: true,
      ignored_count: 1,
    });
    expect(await h.call('set-ignored-updates-v1', { action: 'ignore', site_id_or_domain: id, type: 'core', slug: 'wordpress' })).toEqual({
      success: true,
      action: 'ignore',
      site_id: id,
      type: 'core',
      slug: 'wordpress',
      changed: false,
    });
    expect(await h.call('set-ignored-updates-v1', { action: 'unignore', site_id_or_domain: id, type: 'theme', slug: theme })).toMatchObject(
      { changed: true },
    );
    expect(await h.call('ignore-site-core-v1', { site_id_or_domain: id, action: 'remove' })).toMatchObject({ ignored_count: 1 });
    expect((await h.call('list-ignored-updates-v1', { site_ids_or_domains: [id] })).ignored).toEqual([]);
    expect(
      await h.fails('set-ignored-updates-v1', { action: 'ignore', site_id_or_domain: 999999, type: 'plugin', slug: 'x' }),
    ).toMatchObject({ status: 404 });
  });
});

describe('fleet runs: run-updates-v1 and update-all-v1', () => {
  it('update-all-v1 previews exactly what a run then updates, once each', async () => {
    const ks = [siteWith((p) => p.plugins.length > 0), siteWith((p) => p.themes.length > 0)].filter((v, i, a) => a.indexOf(v) === i);
    const sel = ks.map((k) => ids[k - 1]!);
    const dry = await h.call('update-all-v1', { site_ids_or_domains: sel, types: ['plugins', 'themes'], dry_run: true });
    const want = ks.flatMap((k) => [...pending(k).plugins, ...pending(k).themes]);
    expect(dry.dry_run).toBe(true);
    expect(dry.would_update!.map((u) => u.slug).sort()).toEqual([...want].sort());
    const r = await h.call('update-all-v1', { site_ids_or_domains: sel, types: ['plugins', 'themes'] });
    expect(r.updated.map((u) => u.slug).sort()).toEqual([...want].sort());
    expect(r.summary).toMatchObject({ total_updated: want.length, total_errors: 0, sites_updated: ks.length });
    for (const k of ks) expect(new Set(h.sim.state(k).upgradeLog).size).toBe(h.sim.state(k).upgradeLog.length);
  });

  it("run-updates-v1 with specific_items updates only those; a dead site is that site's errors", async () => {
    const k = siteWith((p) => p.translations.length > 0 || p.plugins.length > 0);
    await h.call('sync-sites-v1', {});
    const rest = await h.call('list-updates-v1', { per_page: 200 });
    const item = rest.updates.find((u) => u.type === 'plugin' || u.type === 'translation');
    const dead = rest.updates.find((u) => u.site_id !== item?.site_id);
    if (!item || !dead) throw new Error(`not enough pending updates left on the simulator (site ${k})`);
    const deadIndex = ids.indexOf(dead.site_id) + 1;
    h.sim.setFault(deadIndex, { type: 'http500' });
    try {
      // Plain mode: in safe mode the dead site is skipped as unhealthy before anything is sent (safe-updates.test.ts).
      const r = await h.call('run-updates-v1', {
        site_ids_or_domains: [item.site_id, dead.site_id],
        specific_items: [item.slug, dead.slug],
        safe: false,
      });
      expect(r.updated.map((u) => u.slug)).toContain(item.slug);
      expect(r.updated.every((u) => u.site_id === item.site_id)).toBe(true);
      expect(r.errors.length).toBeGreaterThan(0);
      expect(r.errors.every((e) => e.site_id === dead.site_id)).toBe(true);
    } finally {
      h.sim.setFault(deadIndex, null);
    }
  });
});
