// Installing on real children from the kit's stand-in wordpress.org directory (/__rc/dir/ on every site, given to
// sitefleet as --package-source): the package source against the real API shapes, rc-delta by slug on three sites
// and activated, an older version then a newer one over it, a theme, a failed package and an unreachable site as
// per-site failures. Each result is checked inside WordPress with wp.sh.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawSignedCall } from '../support/child-sim.js';
import { shape } from '../support/reply-script.js';
import { makeZip, pluginZip } from '../support/zip.js';
import { startServer, type TestServer } from '../support/server.js';
import { RC_DIR, realSite, resetSite, startSitesAgain, stopSitePhp, wp, wpJson } from './kit.js';

const SITES = [1, 2, 3, 4];
const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'child-replies', 'real-child-6.1-install.json');
const record = process.env.SITEFLEET_RECORD_REPLIES === '1';

let s: TestServer;
let dir: string;
const id: Record<number, number> = {};

/** Site k without the directory's packages (rc-delta, rc-nova), as the kit made it. */
function withoutPackages(k: number): void {
  wp(k, `deactivate_plugins('rc-delta/rc-delta.php', true); delete_option('rc_delta_activated');`);
  rmSync(`${RC_DIR}/sites/${k}/wp-content/plugins/rc-delta`, { recursive: true, force: true });
  rmSync(`${RC_DIR}/sites/${k}/wp-content/themes/rc-nova`, { recursive: true, force: true });
  wp(k, `deactivate_plugins('rc-upload/rc-upload.php', true);`);
  rmSync(`${RC_DIR}/sites/${k}/wp-content/plugins/rc-upload`, { recursive: true, force: true });
  wp(k, 'wp_clean_plugins_cache(); wp_clean_themes_cache();');
}

const delta = (k: number) =>
  wpJson<{ version: string | null; active: boolean; option: string | false }>(
    k,
    `wp_clean_plugins_cache(); $p = get_plugins()['rc-delta/rc-delta.php'] ?? null;
     return ['version' => $p['Version'] ?? null, 'active' => is_plugin_active('rc-delta/rc-delta.php'), 'option' => get_option('rc_delta_activated')];`,
  );

const install = (type: 'plugins' | 'themes', json: Record<string, unknown>) => s.rest(`/${type}/install`, { method: 'POST', json });

beforeAll(async () => {
  for (const k of SITES) {
    resetSite(k);
    withoutPackages(k);
  }
  dir = `${realSite(1).url}__rc/dir/`;
  s = await startServer({ config: { packageSource: dir } });
  for (const k of SITES) {
    const site = realSite(k);
    const r = await s.rest('/sites/add', { method: 'POST', json: { url: site.url, admin: site.admin, admin_password: site.password } });
    if (r.status !== 200) throw new Error(`registering real site ${k}: ${r.status} ${JSON.stringify(r.body)}`);
    id[k] = r.body.data.id;
  }
});
afterAll(async () => {
  await s?.close();
  for (const k of SITES) {
    withoutPackages(k);
    resetSite(k);
  }
});

describe("the package source on the kit's directory", () => {
  it('resolves slugs and versions to the directory links, and searches', async () => {
    const src = s.services.packages;
    expect(await src.resolve('plugin', 'rc-delta')).toMatchObject({
      name: 'RC Delta',
      version: '1.1.0',
      download_url: `${dir}plugin/rc-delta.1.1.0.zip`,
    });
    expect((await src.resolve('plugin', 'rc-alpha', '1.2.0')).download_url).toBe(`${dir}plugin/rc-alpha.1.2.0.zip`);
    expect(await src.resolve('theme', 'rc-tt5-child')).toMatchObject({ version: '1.1.0', parent: 'twentytwentyfive' });
    await expect(src.resolve('plugin', 'no-such')).rejects.toMatchObject({ code: 'svc_package_not_found', status: 404 });
    await expect(src.resolve('theme', 'no-such')).rejects.toMatchObject({ code: 'svc_package_not_found', status: 404 });
    await expect(src.resolve('plugin', 'rc-delta', '3.0.0')).rejects.toMatchObject({ code: 'svc_package_version_not_found' });
    const found = await s.rest('/directory/plugins?search=rc&per_page=3');
    expect(found.body).toMatchObject({ total: 4, pages: 2, per_page: 3 });
    const rest = await s.rest('/directory/plugins?search=rc&per_page=3&page=2');
    const slugs = [...found.body.data, ...rest.body.data].map((p: { slug: string }) => p.slug).sort();
    expect(slugs).toEqual(['rc-alpha', 'rc-beta', 'rc-delta', 'rc-gamma']);
    const themes = await s.ability('search-theme-directory-v1', { search: 'nova' });
    expect(themes.body.items.map((t: { slug: string }) => t.slug)).toEqual(['rc-nova']);
  });
});

describe('installing on real children', () => {
  it('installs an older version by slug and version', async () => {
    const r = await install('plugins', { site_ids_or_domains: [id[3]], slug: 'rc-delta', version: '1.0.0' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.installed[0]).toMatchObject({ slug: 'rc-delta/rc-delta.php', version: '1.0.0', activated: null });
    expect(delta(3)).toEqual({ version: '1.0.0', active: false, option: false });
  });

  it('installs rc-delta by slug on three sites and activates it; the newer version replaces the older one', async () => {
    const r = await install('plugins', { site_ids_or_domains: [id[1], id[2], id[3]], slug: 'rc-delta', activate: true, overwrite: true });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ success: 1, summary: { installed: 3, failed: 0, skipped: 0 } });
    const rows = r.body.data.installed as Array<{ site_id: number; version: string; activated: boolean; replaced_version: string | null }>;
    // In site-list order (by URL): sorted by id here.
    expect(rows.map((x) => [x.site_id, x.version, x.activated, x.replaced_version]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual([
      [id[1], '1.1.0', true, null],
      [id[2], '1.1.0', true, null],
      [id[3], '1.1.0', true, '1.0.0'],
    ]);
    for (const k of [1, 2, 3]) expect(delta(k), `site ${k}`).toEqual({ version: '1.1.0', active: true, option: '1.1.0' });
    // On the stored list at once.
    const listed = await s.rest(`/sites/${id[2]}/plugins?per_page=100`);
    expect(listed.body.data.find((p: { slug: string }) => p.slug === 'rc-delta/rc-delta.php')).toMatchObject({
      version: '1.1.0',
      active: true,
    });
    // Again without overwrite: each site has it, so none is called.
    const again = await install('plugins', { site_ids_or_domains: [id[1], id[2]], slug: 'rc-delta' });
    expect(again.body.data.skipped.map((x: { reason: string; installed_version: string }) => [x.reason, x.installed_version])).toEqual([
      ['already_installed', '1.1.0'],
      ['already_installed', '1.1.0'],
    ]);
  });

  it('installs a theme, inactive, and it is on the stored list', async () => {
    const r = await install('themes', { site_ids_or_domains: [id[1]], slug: 'rc-nova' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.installed[0]).toMatchObject({ slug: 'rc-nova', version: '1.0.0' });
    expect(
      wpJson(1, `wp_clean_themes_cache(); $t = wp_get_theme('rc-nova'); return [$t->exists(), $t->get('Version'), get_stylesheet()];`),
    ).toEqual([true, '1.0.0', 'twentytwentyfive']);
    const themes = await s.rest(`/sites/${id[1]}/themes`);
    expect(themes.body.data.find((t: { slug: string }) => t.slug === 'rc-nova')).toMatchObject({ version: '1.0.0', active: false });
  });

  it('a package WordPress cannot install and an unreachable site are per-site failures; the others install', async () => {
    const missing = await install('plugins', { site_ids_or_domains: [id[2]], url: `${dir}plugin/rc-missing.1.0.0.zip` });
    expect(missing.status, JSON.stringify(missing.body)).toBe(200);
    expect(missing.body).toMatchObject({ success: 0, data: { errors: [{ site_id: id[2], code: 'svc_install_failed' }] } });
    expect(missing.body.data.errors[0].message).toMatch(/HTTP 500/);
    await stopSitePhp(4);
    try {
      const r = await install('themes', { site_ids_or_domains: [id[4], id[2]], slug: 'rc-nova' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.summary).toEqual({ installed: 1, failed: 1, skipped: 0 });
      expect(r.body.data.installed[0]).toMatchObject({ site_id: id[2], slug: 'rc-nova' });
      expect(r.body.data.errors[0]).toMatchObject({ site_id: id[4], code: 'svc_child_unreachable' });
    } finally {
      startSitesAgain();
    }
    expect(wpJson(4, `wp_clean_themes_cache(); return wp_get_theme('rc-nova')->exists();`)).toBe(false);
  });
});

describe('installing an uploaded zip on real children', () => {
  it('the children download it from the signed link and WordPress installs it; a hostile zip never reaches them', async () => {
    const form = (zip: Buffer) => {
      const f = new FormData();
      f.set('type', 'plugin');
      f.set('file', new Blob([new Uint8Array(zip)]), 'p.zip');
      return f;
    };
    const bad = await s.rest('/packages/upload', { method: 'POST', body: form(makeZip([{ name: 'rc-up/../../x.php', data: 'x' }])) });
    expect(bad.status).toBe(400);
    const up = await s.rest('/packages/upload', { method: 'POST', body: form(pluginZip('rc-upload', '3.1.4', 'RC Upload')) });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    const r = await install('plugins', { site_ids_or_domains: [id[1], id[2]], upload_id: up.body.data.upload_id, activate: true });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.summary, JSON.stringify(r.body)).toEqual({ installed: 2, failed: 0, skipped: 0 });
    for (const k of [1, 2])
      expect(
        wpJson(
          k,
          `wp_clean_plugins_cache(); return [get_plugins()['rc-upload/rc-upload.php']['Version'] ?? null, is_plugin_active('rc-upload/rc-upload.php')];`,
        ),
      ).toEqual(['3.1.4', true]);
  });
});

describe("the real child's installplugintheme replies", () => {
  it(record ? 'are recorded as fixtures' : 'still have the shape of the recorded fixtures', async () => {
    withoutPackages(4);
    const site = realSite(4);
    const key = await s.services.children.credentials(s.services.sites.get(id[4]!)!);
    const call = (fields: Record<string, string>) =>
      rawSignedCall({ url: site.url, admin: site.admin, privateKeyPem: key.privateKeyPem }, 'installplugintheme', {
        signAlgo: key.signAlgo,
        fields,
      });
    const replies = {
      install_plugin: await call({ type: 'plugin', url: JSON.stringify([`${dir}plugin/rc-delta.1.0.0.zip`]), activatePlugin: 'yes' }),
      install_theme: await call({ type: 'theme', url: JSON.stringify(`${dir}theme/rc-nova.1.0.0.zip`) }),
    };
    expect(delta(4)).toEqual({ version: '1.0.0', active: true, option: '1.0.0' });
    if (record) {
      mkdirSync(join(FIXTURE, '..'), { recursive: true });
      writeFileSync(FIXTURE, JSON.stringify(replies, null, 1) + '\n');
      return;
    }
    expect(existsSync(FIXTURE)).toBe(true);
    const fixtures = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Record<string, unknown>;
    const keys = (v: unknown) =>
      [...new Set([...shape(v).keys()].map((k) => k.replace(/^\.install_results\..*/, '.install_results.*')))].sort();
    for (const [step, reply] of Object.entries(replies)) expect(keys(reply), step).toEqual(keys(fixtures[step]));
  });
});
