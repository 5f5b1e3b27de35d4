// The package abilities through the registry: searching the simulator's stand-in directory (/__sim/dir/, set as
// --package-source), uploading a zip, and installing plugins and themes on simulated sites — answers by value, the
// simulated sites' own lists, and each error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { pluginZip, themeZip } from '../support/zip.js';

let h: AbilityHarness;
let ids: number[];
let dir: string;

beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 4, seed: 11 }, config: (base) => ({ packageSource: `${base}/__sim/dir/` }) });
  dir = `${h.sim.baseUrl}/__sim/dir/`;
  ids = (await h.addSimSites(4)).map((s) => s.id);
});
afterAll(() => h.close());

const simPlugin = (n: number, folder: string) => h.sim.state(n).plugins.find((p) => p.slug.startsWith(`${folder}/`));

describe('search-plugin-directory-v1 / search-theme-directory-v1', () => {
  it('finds plugins by words, paged, each with the slug an install takes', async () => {
    const r = await h.call('search-plugin-directory-v1', { search: 'form', page: 1, per_page: 2 }, h.as.readKey);
    expect(r).toMatchObject({ page: 1, per_page: 2, total: 3, pages: 2, source: dir });
    expect(r.items.map((i) => i.slug)).toEqual(['contact-form-lite', 'contact-form-sim']);
    expect(r.items[0]).toMatchObject({
      name: 'Contact Form Lite',
      version: '2.3.1',
      download_url: `${dir}plugin/contact-form-lite.2.3.1.zip`,
    });
    const next = await h.call('search-plugin-directory-v1', { search: 'form', page: 2, per_page: 2 });
    expect(next.items.map((i) => i.slug)).toEqual(['form-builder-sim']);
    expect((await h.call('search-plugin-directory-v1', { search: 'no such thing here', page: 1, per_page: 10 })).items).toEqual([]);
  });

  it('finds themes; a viewer may search (it reads only)', async () => {
    const r = await h.call('search-theme-directory-v1', { search: 'nova', page: 1, per_page: 10 }, h.as.viewer);
    expect(r.items.map((i) => [i.slug, i.version])).toEqual([
      ['sim-nova', '1.0.0'],
      ['sim-nova-child', '1.0.0'],
    ]);
  });

  it('refuses empty words and a page size past the bound', async () => {
    expect(await h.fails('search-plugin-directory-v1', { search: '  ' })).toMatchObject({ code: 'ability_invalid_input', status: 400 });
    expect(await h.fails('search-theme-directory-v1', { search: 'nova', per_page: 1000 })).toMatchObject({ code: 'ability_invalid_input' });
  });
});

describe('install-plugins-v1 / install-themes-v1', () => {
  it('installs a plugin by slug and version on two sites and activates it; the sites have it', async () => {
    const r = await h.call(
      'install-plugins-v1',
      { site_ids_or_domains: ids.slice(0, 2), slug: 'sim-delta', version: '1.0.0', activate: true, overwrite: false, dry_run: false },
      h.as.writeKey,
    );
    expect(r.package).toEqual({
      type: 'plugin',
      source: 'directory',
      slug: 'sim-delta',
      name: 'Sim Delta',
      version: '1.0.0',
      download_url: `${dir}plugin/sim-delta.1.0.0.zip`,
    });
    expect(r.summary).toEqual({ installed: 2, failed: 0, skipped: 0 });
    expect(r.installed.map((i) => [i.site_id, i.slug, i.version, i.activated, i.replaced_version])).toEqual([
      [ids[0], 'sim-delta/sim-delta.php', '1.0.0', true, null],
      [ids[1], 'sim-delta/sim-delta.php', '1.0.0', true, null],
    ]);
    for (const n of [1, 2]) expect(simPlugin(n, 'sim-delta')).toMatchObject({ version: '1.0.0', active: true });
  });

  it('skips a site that has it, overwrites with overwrite, and previews with dry_run without calling a site', async () => {
    const skip = await h.call('install-plugins-v1', {
      site_ids_or_domains: [ids[0]!],
      slug: 'sim-delta',
      activate: false,
      overwrite: false,
      dry_run: false,
    });
    expect(skip.skipped).toEqual([expect.objectContaining({ site_id: ids[0], reason: 'already_installed', installed_version: '1.0.0' })]);
    const before = h.sim.requests(1);
    const dry = await h.call('install-plugins-v1', {
      site_ids_or_domains: [ids[0]!, ids[2]!],
      slug: 'sim-delta',
      activate: false,
      overwrite: true,
      dry_run: true,
    });
    expect(dry.would_install?.map((w) => [w.site_id, w.action, w.installed_version])).toEqual([
      [ids[0], 'overwrite', '1.0.0'],
      [ids[2], 'install', null],
    ]);
    expect(h.sim.requests(1)).toBe(before);
    const over = await h.call('install-plugins-v1', {
      site_ids_or_domains: [ids[0]!],
      slug: 'sim-delta',
      activate: false,
      overwrite: true,
      dry_run: false,
    });
    expect(over.installed[0]).toMatchObject({ version: '1.1.0', replaced_version: '1.0.0' });
    expect(simPlugin(1, 'sim-delta')!.version).toBe('1.1.0');
  });

  it('installs a theme by slug; a broken package is a per-site failure with the reason', async () => {
    const r = await h.call('install-themes-v1', { site_ids_or_domains: [ids[3]!], slug: 'sim-nova', overwrite: false, dry_run: false });
    expect(r.installed).toEqual([expect.objectContaining({ site_id: ids[3], type: 'theme', slug: 'sim-nova', version: '1.0.0' })]);
    expect(h.sim.state(4).themes.find((t) => t.slug === 'sim-nova')).toMatchObject({ version: '1.0.0' });
    const bad = await h.call('install-plugins-v1', {
      site_ids_or_domains: [ids[3]!],
      slug: 'sim-broken',
      activate: false,
      overwrite: false,
      dry_run: false,
    });
    expect(bad.summary).toEqual({ installed: 0, failed: 1, skipped: 0 });
    expect(bad.errors[0]).toMatchObject({ site_id: ids[3], code: 'svc_install_failed' });
  });

  it('refuses before any site: no package named, two named, an unknown slug or version, unknown sites, no sites', async () => {
    const before = h.sim.requests(3);
    const base = { site_ids_or_domains: [ids[2]!] };
    expect(await h.fails('install-plugins-v1', base)).toMatchObject({ code: 'svc_invalid_input', status: 400 });
    expect(await h.fails('install-plugins-v1', { ...base, slug: 'sim-delta', url: `${dir}plugin/sim-delta.1.0.0.zip` })).toMatchObject({
      code: 'svc_invalid_input',
    });
    expect(await h.fails('install-plugins-v1', { ...base, slug: 'no-such-plugin' })).toMatchObject({
      code: 'svc_package_not_found',
      status: 404,
    });
    expect(await h.fails('install-plugins-v1', { ...base, slug: 'sim-delta', version: '9.9.9' })).toMatchObject({
      code: 'svc_package_version_not_found',
      status: 404,
    });
    expect(await h.fails('install-themes-v1', { ...base, url: 'ftp://x.example/a.zip' })).toMatchObject({ code: 'svc_invalid_url' });
    expect(await h.fails('install-plugins-v1', { slug: 'sim-delta' })).toMatchObject({ code: 'svc_sites_required' });
    expect(await h.fails('install-plugins-v1', { site_ids_or_domains: [9999], slug: 'sim-delta' })).toMatchObject({
      code: 'svc_sites_not_found',
      status: 404,
    });
    // Among known sites, an unknown one is a row of errors[]; a dry run calls no site.
    const mixed = await h.call('install-plugins-v1', {
      site_ids_or_domains: [ids[2]!, 9999],
      slug: 'sim-delta',
      activate: false,
      overwrite: false,
      dry_run: true,
    });
    expect(mixed.errors).toEqual([expect.objectContaining({ site_id: null, code: 'svc_site_not_found' })]);
    expect(mixed.would_install?.map((w) => w.site_id)).toEqual([ids[2]]);
    expect(h.sim.requests(3)).toBe(before);
  });

  it('a read key, a viewer and read-only mode may not install', async () => {
    const input = { site_ids_or_domains: [ids[2]!], slug: 'sim-delta' };
    for (const who of [h.as.readKey, h.as.viewer, h.as.readOnlyLocal])
      expect(await h.fails('install-plugins-v1', input, who)).toMatchObject({ code: 'svc_permission_denied', status: 403 });
    expect(simPlugin(3, 'sim-delta')).toBeUndefined();
  });
});

describe('upload-package-v1', () => {
  it('takes a base64 plugin zip and names its folder, name and version; a theme zip too', async () => {
    const zip = pluginZip('up-abil', '2.0.1');
    const r = await h.call('upload-package-v1', { type: 'plugin', zip: zip.toString('base64') }, h.as.writeKey);
    expect(r).toMatchObject({ type: 'plugin', folder: 'up-abil', name: 'Up up-abil', version: '2.0.1', size: zip.length });
    expect(r.upload_id).toMatch(/^[0-9a-f]{32}$/);
    const t = await h.call('upload-package-v1', { type: 'theme', zip: themeZip('up-theme', '1.2').toString('base64') });
    expect(t).toMatchObject({ type: 'theme', folder: 'up-theme', version: '1.2' });
    // This process has no HTTP door, so the children could not download it: refused before any site is called.
    const before = h.sim.requests(3);
    expect(await h.fails('install-plugins-v1', { site_ids_or_domains: [ids[2]!], upload_id: r.upload_id })).toMatchObject({
      code: 'svc_upload_not_served',
      status: 400,
    });
    expect(await h.fails('install-themes-v1', { site_ids_or_domains: [ids[2]!], upload_id: r.upload_id })).toMatchObject({
      code: 'svc_invalid_input',
    });
    expect(h.sim.requests(3)).toBe(before);
  });

  it('refuses what is not a package zip, not base64, and a read key', async () => {
    expect(await h.fails('upload-package-v1', { type: 'plugin', zip: Buffer.from('<html>').toString('base64') })).toMatchObject({
      code: 'svc_invalid_package',
      status: 400,
    });
    expect(await h.fails('upload-package-v1', { type: 'theme', zip: pluginZip('p', '1').toString('base64') })).toMatchObject({
      code: 'svc_invalid_package',
    });
    expect(await h.fails('upload-package-v1', { type: 'plugin', zip: 'not base64!' })).toMatchObject({ code: 'ability_invalid_input' });
    expect(await h.fails('upload-package-v1', { type: 'plugin', zip: pluginZip('p', '1').toString('base64') }, h.as.readKey)).toMatchObject(
      {
        code: 'svc_permission_denied',
      },
    );
    expect(await h.fails('install-plugins-v1', { site_ids_or_domains: [ids[2]!], upload_id: 'f'.repeat(32) })).toMatchObject({
      code: 'svc_upload_not_found',
      status: 404,
    });
  });
});

describe('installs in the update history', () => {
  it('each site attempt is an entry with action install: installed (from, to, who) or failed (code, reason)', async () => {
    const r = await h.call('list-update-history-v1', { action: 'install', page: 1, per_page: 50, site_id_or_domain: ids[0]! }, h.as.viewer);
    // Site 1: sim-delta 1.0.0 (by the write key, activated), then overwritten with 1.1.0 by the administrator.
    expect(r.entries.map((e) => [e.action, e.type, e.slug, e.from, e.to, e.outcome, e.actor.kind, e.actor.name])).toEqual([
      ['install', 'plugin', 'sim-delta/sim-delta.php', '1.0.0', '1.1.0', 'installed', 'user', 'admin'],
      ['install', 'plugin', 'sim-delta/sim-delta.php', null, '1.0.0', 'installed', 'key', 'write'],
    ]);
    expect(r.entries[0]).toMatchObject({ site_url: h.sim.sites[0]!.url, reason: '', code: '', safe: false, probe: null });
    const failed = await h.call('list-update-history-v1', { action: 'install', outcomes: ['failed'], page: 1, per_page: 50 });
    expect(failed.entries).toEqual([
      expect.objectContaining({
        site_id: ids[3],
        slug: 'sim-broken',
        name: 'Sim Broken',
        from: null,
        to: '1.0.0',
        outcome: 'failed',
        code: 'svc_install_failed',
        reason: expect.stringContaining('could not install plugin sim-broken'),
      }),
    ]);
    const theme = await h.call('list-update-history-v1', { site_id_or_domain: ids[3]!, type: 'theme', page: 1, per_page: 50 });
    expect(theme.entries.map((e) => [e.slug, e.outcome, e.action])).toEqual([['sim-nova', 'installed', 'install']]);
    // Skips, dry runs and refusals reached no site: not recorded (sites 1 + 2 + the theme + the failure).
    expect((await h.call('list-update-history-v1', { action: 'install', page: 1, per_page: 50 })).total).toBe(5);
  });

  it('an entry written without an action (every update, and those before installs were recorded) reads as update', async () => {
    await h.services.updateHistory.add([
      {
        site_id: ids[1]!,
        site_url: h.sim.sites[1]!.url,
        type: 'plugin',
        slug: 'sim-delta/sim-delta.php',
        name: 'Sim Delta',
        from: '1.0.0',
        to: '1.1.0',
        outcome: 'updated',
        reason: '',
        code: '',
        actor: { kind: 'user', id: 1, name: 'admin' },
        at: new Date().toISOString(),
        duration_ms: 3,
        safe: false,
        probe: null,
      },
    ]);
    const all = await h.call('list-update-history-v1', { site_id_or_domain: ids[1]!, page: 1, per_page: 50 });
    expect(all.entries.map((e) => [e.action, e.outcome])).toEqual([
      ['update', 'updated'],
      ['install', 'installed'],
    ]);
    const updates = await h.call('list-update-history-v1', { site_id_or_domain: ids[1]!, action: 'update', page: 1, per_page: 50 });
    expect(updates.entries.map((e) => e.outcome)).toEqual(['updated']);
    expect(await h.fails('list-update-history-v1', { action: 'deploy' })).toMatchObject({ code: 'ability_invalid_input' });
  });
});
