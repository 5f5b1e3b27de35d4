// Safe mode of update applies (issue 28), through the registry over the child simulator, whose sites break their front
// end after a chosen update: on by default (a dashboard setting turns the default off; a call says safe: false); an
// unhealthy site skipped unless forced; a good update passes; a breaking plugin update rolled back — reinstalled at
// its old version from the package source (the simulator's directory), or deactivated when no package exists —; a
// breaking theme with no package ends rollback_failed; every outcome in the history and rollback_items.
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { until } from '../support/wait.js';

let h: AbilityHarness;
let ids: number[];

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
const pendingPlugins = (k: number) => h.sim.state(k).plugins.filter((p) => p.updateVersion);
const plugin = (k: number, slug: string) => h.sim.state(k).plugins.find((p) => p.slug === slug)!;
/** Installs sim-delta 1.0.0 from the simulator's directory on site k and offers 1.1.0. */
async function deltaOffered(k: number): Promise<string> {
  const dir = `${h.sim.baseUrl}/__sim/dir/`;
  const connector = await h.services.children.connector();
  await connector.install(
    await h.services.children.credentials(h.services.sites.get(ids[k - 1]!)!),
    'plugin',
    `${dir}plugin/sim-delta.1.0.0.zip`,
    {
      activate: true,
    },
  );
  h.sim.offerUpdate(k, 'plugin', 'sim-delta/sim-delta.php', '1.1.0');
  await h.call('sync-sites-v1', { site_ids_or_domains: [ids[k - 1]!] });
  return 'sim-delta/sim-delta.php';
}

beforeAll(async () => {
  const port = await freePort();
  h = await openAbilities({ sim: { sites: 10, port }, config: { packageSource: `http://127.0.0.1:${port}/__sim/dir/` } });
  ids = (await h.addSimSites()).map((s) => s.id);
  await h.call('sync-sites-v1', {});
});
afterAll(() => h.close());

describe('safe mode', () => {
  it('is on by default: the site is probed before and after, and a good update passes untouched', async () => {
    const k = 1;
    const slug = pendingPlugins(k)[0]!.slug;
    const to = pendingPlugins(k)[0]!.updateVersion;
    const r = await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [slug] });
    expect(r).toMatchObject({ safe: true, rolled_back: [], errors: [], updated: [{ slug, new_version: to }] });
    const last = (await h.call('list-update-history-v1', { site_id_or_domain: ids[k - 1]! })).entries[0]!;
    expect(last).toMatchObject({
      slug,
      outcome: 'updated',
      safe: true,
      probe: { before: 'healthy', after: 'healthy', summary: 'healthy' },
    });
    expect((await h.call('get-site-health-v1', { site_id_or_domain: ids[k - 1]! })).health!.status).toBe('healthy');
  });

  it('safe: false applies without probing; the dashboard setting turns the default off and on', async () => {
    const k = 2;
    const [a, b] = pendingPlugins(k);
    const r = await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [a!.slug], safe: false });
    expect(r).toMatchObject({ safe: false, updated: [{ slug: a!.slug }] });
    expect(r.rolled_back).toBeUndefined();
    expect((await h.call('get-site-health-v1', { site_id_or_domain: ids[k - 1]! })).health).toBeNull();
    expect((await h.call('update-settings-v1', { safe_updates: false })).safe_updates).toBe(false);
    const off = await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [b!.slug] });
    expect(off.safe).toBe(false);
    expect((await h.call('list-update-history-v1', { site_id_or_domain: ids[k - 1]! })).entries.map((e) => [e.safe, e.probe])).toEqual([
      [false, null],
      [false, null],
    ]);
    expect((await h.call('update-settings-v1', { safe_updates: true })).safe_updates).toBe(true);
    expect((await h.call('get-settings-v1', {})).safe_updates).toBe(true);
  });

  it('skips a site that is unhealthy before, with that reason, unless the caller insists (force)', async () => {
    const k = 3;
    const slug = pendingPlugins(k)[0]!.slug;
    const was = plugin(k, slug).version;
    h.sim.setFrontEnd(k, { effect: 'fatal', by: 'something-else' });
    const r = await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [slug] });
    expect(r.updated).toEqual([]);
    expect(r.skipped).toEqual([expect.objectContaining({ slug, reason: 'site_unhealthy' })]);
    expect(r.skipped[0]!.message).toMatch(/unhealthy before the update \(unhealthy: home fatal_error \(HTTP 500\); login fatal_error/);
    expect(plugin(k, slug).version).toBe(was);
    const hist = (await h.call('list-update-history-v1', { site_id_or_domain: ids[k - 1]!, outcomes: ['skipped'] })).entries;
    expect(hist).toEqual([
      expect.objectContaining({
        slug,
        outcome: 'skipped',
        code: 'svc_site_unhealthy',
        probe: expect.objectContaining({ before: 'unhealthy' }),
      }),
    ]);
    const forced = await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [slug], force: true });
    expect(forced.updated).toEqual([expect.objectContaining({ slug })]);
    expect(forced.rolled_back).toEqual([]); // unhealthy before and after: not a regression
    h.sim.setFrontEnd(k, null);
  });

  it('rolls a breaking plugin back by reinstalling its old version from the package source', async () => {
    const k = 4;
    const slug = await deltaOffered(k);
    h.sim.breakOnUpdate(k, slug, 'fatal');
    const r = await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [slug] });
    expect(r.updated).toEqual([]);
    expect(r.errors).toEqual([expect.objectContaining({ slug, code: 'svc_update_rolled_back' })]);
    expect(r.rolled_back).toEqual([
      expect.objectContaining({
        slug,
        from_version: '1.0.0',
        to_version: '1.1.0',
        outcome: 'rolled_back',
        action: 'reinstalled',
        package_url: `${h.sim.baseUrl}/__sim/dir/plugin/sim-delta.1.0.0.zip`,
      }),
    ]);
    const rb = r.rolled_back![0]!;
    expect(rb.evidence).toMatchObject({ before: 'healthy', after_rollback: 'healthy' });
    expect(rb.evidence.after).toMatch(/^unhealthy: home fatal_error \(HTTP 500\)/);
    expect(rb.evidence.problems).toContainEqual({ kind: 'home', url: h.sim.sites[k - 1]!.url, http_status: 500, problem: 'fatal_error' });
    expect(r.summary).toMatchObject({ total_updated: 0, total_errors: 1, total_rolled_back: 1 });
    expect(plugin(k, slug)).toMatchObject({ version: '1.0.0', active: true });
    expect(h.sim.state(k).frontEnd).toBeNull();
    const hist = (await h.call('list-update-history-v1', { site_id_or_domain: ids[k - 1]!, type: 'plugin', slug })).entries[0]!;
    expect(hist).toMatchObject({
      outcome: 'rolled_back',
      from: '1.0.0',
      to: '1.1.0',
      code: 'svc_update_rolled_back',
      probe: { before: 'healthy', after: 'unhealthy' },
    });
    expect(hist.probe!.summary).toMatch(/after the rollback: healthy$/);
    // Still offered (WordPress offers it again), and marked as rolled back before.
    const site = await h.call('get-site-updates-v1', { site_id_or_domain: ids[k - 1]!, types: ['plugins'] });
    expect(site.updates.some((u) => u.slug === slug && u.current_version === '1.0.0')).toBe(true);
    expect(site.rollback_items.plugins).toEqual([
      expect.objectContaining({ slug, old_version: '1.0.0', version: '1.1.0', outcome: 'rolled_back' }),
    ]);
  });

  it('deactivates a breaking plugin that has no package of its old version, and says so', async () => {
    const k = 5;
    const p = pendingPlugins(k)[0]!;
    h.sim.breakOnUpdate(k, p.slug, 'php_error');
    const r = await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [p.slug] });
    expect(r.rolled_back).toEqual([
      expect.objectContaining({ slug: p.slug, outcome: 'rolled_back', action: 'deactivated', package_url: null }),
    ]);
    expect(r.rolled_back![0]!.reason).toMatch(/deactivated the plugin instead \(no package of .*\); the site is healthy again\.$/);
    expect(plugin(k, p.slug).active).toBe(false);
  });

  it('a breaking theme with no package to put back ends rollback_failed, loudly', async () => {
    const k = [6, 7, 8].find((i) => h.sim.state(i).themes.some((t) => t.updateVersion))!;
    const t = h.sim.state(k).themes.find((x) => x.updateVersion)!;
    h.sim.breakOnUpdate(k, t.slug, 'no_title');
    await h.call('check-site-health-v1', { site_id_or_domain: ids[k - 1]! }); // learns the title
    const r = await h.call('update-site-themes-v1', { site_id_or_domain: ids[k - 1]!, slugs: [t.slug] });
    expect(r.rolled_back).toEqual([expect.objectContaining({ slug: t.slug, outcome: 'rollback_failed', action: 'none' })]);
    expect(r.rolled_back![0]!.reason).toMatch(/could not be put back: no package of .*\(a theme cannot be deactivated instead\)\.$/);
    expect(r.errors).toEqual([expect.objectContaining({ slug: t.slug, code: 'svc_rollback_failed' })]);
    const hist = await h.call('list-update-history-v1', { outcomes: ['rollback_failed'] });
    expect(hist.entries).toEqual([expect.objectContaining({ site_id: ids[k - 1], slug: t.slug, outcome: 'rollback_failed' })]);
    h.sim.setFrontEnd(k, null);
  });
});

describe('what cannot be rolled back', () => {
  it('a breaking core update ends rollback_failed saying why, and the rest of the site is left alone', async () => {
    const k = 9;
    const st = h.sim.state(k);
    const was = st.wpVersion;
    st.wpUpdate = '6.9.0';
    st.rev++;
    if (!pendingPlugins(k).length) h.sim.offerUpdate(k, 'plugin', st.plugins[0]!.slug, '99.0.0');
    const p = pendingPlugins(k)[0]!;
    h.sim.breakOnUpdate(k, 'wordpress', 'fatal');
    await h.call('sync-sites-v1', { site_ids_or_domains: [ids[k - 1]!] });
    const r = await h.call('run-updates-v1', { site_ids_or_domains: [ids[k - 1]!], types: ['core', 'plugins'] });
    expect(r.rolled_back).toEqual([
      expect.objectContaining({ type: 'core', from_version: was, to_version: '6.9.0', outcome: 'rollback_failed', action: 'none' }),
    ]);
    expect(r.rolled_back![0]!.reason).toMatch(
      /^WordPress 6\.9\.0 left the site unhealthy .*; WordPress core cannot be put back through the MainWP Child: its core update \(upgrade\) only installs the newer version wordpress\.org offers, and its installer \(installplugintheme\) takes plugins and themes only\./,
    );
    expect(r.rolled_back![0]!.reason).toContain(
      `Reinstall WordPress ${was} by hand (https://downloads.wordpress.org/release/wordpress-${was}.zip).`,
    );
    expect(r.errors).toContainEqual(expect.objectContaining({ type: 'core', code: 'svc_rollback_failed' }));
    // The site stays broken: its plugins are not updated on it, nor blamed (and "rolled back") for what core did.
    expect(r.skipped).toEqual(
      pendingPlugins(k).map((x) =>
        expect.objectContaining({
          slug: x.slug,
          reason: 'site_unhealthy',
          message: expect.stringMatching(/^Not updated: WordPress 6\.9\.0 left the site unhealthy and could not be put back/),
        }),
      ),
    );
    expect(plugin(k, p.slug).updateVersion).toBe(p.updateVersion);
    expect(h.sim.state(k).wpVersion).toBe('6.9.0');
    const hist = (await h.call('list-update-history-v1', { site_id_or_domain: ids[k - 1]! })).entries;
    expect(hist).toContainEqual(expect.objectContaining({ type: 'core', outcome: 'rollback_failed', code: 'svc_rollback_failed' }));
    expect(hist).toContainEqual(expect.objectContaining({ slug: p.slug, outcome: 'skipped', code: 'svc_site_unhealthy' }));
    h.sim.setFrontEnd(k, null);
  });

  it('translations are applied, never held back; a breaking one ends rollback_failed: there is no older language pack', async () => {
    const k = 10;
    h.sim.state(k).translations = [{ type: 'plugin', slug: 'sim-lang', language: 'de_DE', version: '1.2.0', name: 'Sim Lang' }];
    h.sim.state(k).rev++;
    h.sim.breakOnUpdate(k, 'translation:sim-lang', 'php_error');
    await h.call('sync-sites-v1', { site_ids_or_domains: [ids[k - 1]!] });
    const r = await h.call('update-site-translations-v1', { site_id_or_domain: ids[k - 1]! });
    expect(h.sim.state(k).upgradeLog).toContain('translation:sim-lang:de_DE');
    expect(r.rolled_back).toEqual([
      expect.objectContaining({ type: 'translation', slug: 'sim-lang', outcome: 'rollback_failed', action: 'none', package_url: null }),
    ]);
    expect(r.rolled_back![0]!.reason).toMatch(
      /; a translation cannot be put back: wordpress\.org keeps only the latest language pack, so there is no older one to reinstall\./,
    );
    expect(r.rolled_back![0]!.evidence.after).toMatch(/^unhealthy: home php_error/);
    h.sim.setFrontEnd(k, null);
  });
});

describe('safe mode over many sites', () => {
  it('run-updates-v1: each site probed and its items applied one at a time; only the breaking item is rolled back', async () => {
    const sites = [6, 7, 8].filter((i) => pendingPlugins(i).length >= 1);
    const breaking = sites[0]!;
    const culprit = pendingPlugins(breaking)[0]!.slug;
    h.sim.breakOnUpdate(breaking, culprit, 'fatal');
    const before = sites.map((i) => pendingPlugins(i).length);
    const r = await h.call('run-updates-v1', { site_ids_or_domains: sites.map((i) => ids[i - 1]!), types: ['plugins'] });
    expect(r.safe).toBe(true);
    expect(r.rolled_back).toEqual([expect.objectContaining({ site_id: ids[breaking - 1], slug: culprit, outcome: 'rolled_back' })]);
    expect(r.updated.length).toBe(before.reduce((a, b) => a + b, 0) - 1);
    // One child call per item: the culprit's own is known, the others were applied after it and kept.
    for (const i of sites) expect(h.sim.state(i).frontEnd).toBeNull();
  });

  it('a queued run (a job) is safe too: rollbacks in its items and in the history, under the caller who queued it', async () => {
    const k = [1, 2, 3, 4, 5, 6, 7, 8].find((i) => pendingPlugins(i).length > 0)!;
    const culprit = pendingPlugins(k)[0]!.slug;
    h.sim.breakOnUpdate(k, culprit, 'fatal');
    // update-all-v1 queues over 5 sites with something to update.
    const q = await h.call('update-all-v1', { confirm: true }, h.as.writeKey);
    expect(q).toMatchObject({ queued: true, safe: true });
    expect(q.sites_queued).toBeGreaterThan(5);
    const done = await until(
      () => h.call('get-batch-job-status-v1', { job_id: q.job_id! }),
      (j) => j.status === 'completed' || j.status === 'failed',
    );
    expect(done.items).toContainEqual(expect.objectContaining({ site_id: ids[k - 1], slug: culprit, status: 'rolled_back' }));
    const hist = await h.call('list-update-history-v1', { site_id_or_domain: ids[k - 1]!, outcomes: ['rolled_back'] });
    expect(hist.entries[0]).toMatchObject({ slug: culprit, safe: true, actor: { kind: 'key', name: 'write' } });
    expect(h.sim.state(k).frontEnd).toBeNull();
  });

  it('a removed site takes its health with it; its history stays', async () => {
    const k = 8;
    await h.call('check-site-health-v1', { site_id_or_domain: ids[k - 1]! });
    expect(h.services.store.get('site_health', ids[k - 1]!)).toBeDefined();
    const hadHistory = (await h.call('list-update-history-v1', { site_id_or_domain: ids[k - 1]! })).total;
    await h.call('delete-site-v1', { site_id_or_domain: ids[k - 1]!, confirm: true });
    expect(h.services.store.get('site_health', ids[k - 1]!)).toBeUndefined();
    expect(await h.fails('get-site-health-v1', { site_id_or_domain: ids[k - 1]! })).toMatchObject({ code: 'svc_site_not_found' });
    const all = await h.call('list-update-history-v1', { per_page: 100 });
    expect(all.entries.filter((e) => e.site_id === ids[k - 1]).length).toBe(Math.min(hadHistory, 100));
  });

  it('refuses a safe flag that is not a boolean', async () => {
    expect(await h.fails('update-all-v1', { safe: 'maybe' })).toMatchObject({ status: 400 });
    expect(await h.fails('run-updates-v1', { force: 'yes' })).toMatchObject({ status: 400 });
  });
});
