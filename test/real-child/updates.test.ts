// Updates on a real child (issue 15): a plugin, a theme and WordPress core updated through sitefleet's doors, each
// checked on the site's disk; an ignored update neither listed nor applied by update-all-v1; a broken package reported
// with WordPress's own reason. Site 4 is this file's alone: its core update changes WordPress files, restored after.
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { connectMcp } from '../support/mcp.js';
import { KIT, RC_DIR, offer, resetSite, serverWithRealSite, wpJson } from './kit.js';

const K = 4;
let s: TestServer;
let id: number;

const restoreCore = () => {
  cpSync(`${KIT}/wordpress/wp-includes/version.php`, `${RC_DIR}/sites/${K}/wp-includes/version.php`);
  wpJson(K, 'delete_site_transient("update_core"); return true;');
};
/** Withdraws the offers this file made (the kit keeps them in DIR/offers/K.json until the site has that version). */
const withdrawOffers = () => {
  const file = `${RC_DIR}/offers/${K}.json`;
  if (existsSync(file)) {
    const o = JSON.parse(readFileSync(file, 'utf8'));
    delete o.core;
    delete o.themes?.['rc-tt5-child'];
    delete o.plugins?.['rc-beta/rc-beta.php'];
    writeFileSync(file, JSON.stringify(o, null, 4));
  }
  wpJson(K, 'foreach (["update_core","update_plugins","update_themes"] as $t) delete_site_transient($t); return true;');
};
const pluginVersion = (file: string) =>
  wpJson<string>(K, `wp_clean_plugins_cache(); return get_plugins()[${JSON.stringify(file)}]["Version"];`);
const themeVersion = (slug: string) =>
  wpJson<string>(K, `wp_clean_themes_cache(); return wp_get_theme(${JSON.stringify(slug)})->get("Version");`);
const coreVersion = () => wpJson<string>(K, 'global $wp_version; return $wp_version;');
const pending = async () =>
  (await s.ability('list-updates-v1', { site_ids_or_domains: [id], refresh: true }, { method: 'GET' })).body.updates.map(
    (u: { type: string; slug: string; current_version: string; new_version: string }) =>
      `${u.type} ${u.slug} ${u.current_version}→${u.new_version}`,
  );

beforeAll(async () => {
  withdrawOffers();
  restoreCore();
  resetSite(K);
  offer(K, '--theme', 'rc-tt5-child', '--to', '1.1.0');
  offer(K, '--core', '7.0.5');
  ({ s, id } = await serverWithRealSite(K, startServer));
});
afterAll(async () => {
  await s?.close();
  withdrawOffers();
  restoreCore();
  resetSite(K);
});

describe('updates on a real child', () => {
  it('lists what WordPress offers: rc-gamma, the theme and core', async () => {
    expect((await pending()).sort()).toEqual([
      'core wordpress 7.0.4→7.0.5',
      'plugin rc-gamma/rc-gamma.php 1.0.0→1.1.0',
      'theme rc-tt5-child 1.0.0→1.1.0',
    ]);
  });

  it('update-site-plugins-v1 (abilities door) updates rc-gamma on disk and says so', async () => {
    const r = await s.ability('update-site-plugins-v1', { site_id_or_domain: id, slugs: ['rc-gamma/rc-gamma.php'] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.updated).toEqual([
      expect.objectContaining({ slug: 'rc-gamma/rc-gamma.php', old_version: '1.0.0', new_version: '1.1.0' }),
    ]);
    expect(r.body.errors).toEqual([]);
    expect(pluginVersion('rc-gamma/rc-gamma.php')).toBe('1.1.0');
  });

  it('an ignored theme update is no longer listed and not applied by update-all-v1 (MCP), which updates core', async () => {
    const ig = await s.rest(`/updates/${id}/ignore/themes?slug=rc-tt5-child`, { method: 'POST' });
    expect(ig.body, JSON.stringify(ig.body)).toMatchObject({ success: 1, changed: 1 });
    expect(await pending()).toEqual(['core wordpress 7.0.4→7.0.5']);
    const mcp = await connectMcp(s);
    try {
      const r = await mcp.call('update-all-v1', { site_ids_or_domains: [id] });
      expect(r.isError, JSON.stringify(r.body)).toBe(false);
      expect(r.body.updated).toEqual([expect.objectContaining({ type: 'core', old_version: '7.0.4', new_version: '7.0.5' })]);
      expect(r.body.skipped, JSON.stringify(r.body.skipped)).toEqual([
        expect.objectContaining({ type: 'theme', slug: 'rc-tt5-child', reason: 'ignored' }),
      ]);
    } finally {
      await mcp.close();
    }
    expect(coreVersion()).toBe('7.0.5');
    expect(themeVersion('rc-tt5-child')).toBe('1.0.0');
  });

  it('unignored, the theme is updated through REST POST /updates/:id/update/themes', async () => {
    const un = await s.rest(`/updates/${id}/ignore/themes?slug=rc-tt5-child`, { method: 'DELETE', token: s.creds.key.delete });
    expect(un.status, JSON.stringify(un.body)).toBe(200);
    const r = await s.rest(`/updates/${id}/update/themes`, { method: 'POST' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.updated).toEqual([expect.objectContaining({ slug: 'rc-tt5-child', old_version: '1.0.0', new_version: '1.1.0' })]);
    expect(themeVersion('rc-tt5-child')).toBe('1.1.0');
    expect(await pending()).toEqual([]);
  });

  it("a package WordPress cannot install is an error item with WordPress's reason, and the plugin stays at its version", async () => {
    const zip = `${RC_DIR}/packages/broken-rc-beta.zip`;
    execFileSync('python3', [
      '-c',
      `import zipfile; z=zipfile.ZipFile(${JSON.stringify(zip)},'w'); z.writestr('readme.txt','not a plugin'); z.close()`,
    ]);
    offer(K, '--plugin', 'rc-beta', '--to', '2.1.0', '--package', zip);
    expect(await pending()).toEqual(['plugin rc-beta/rc-beta.php 2.0.0→2.1.0']);
    const r = await s.ability('update-site-plugins-v1', { site_id_or_domain: id });
    expect(r.body.updated).toEqual([]);
    expect(r.body.errors).toEqual([
      expect.objectContaining({ slug: 'rc-beta/rc-beta.php', code: 'svc_update_failed', message: expect.stringMatching(/\S/) }),
    ]);
    expect(pluginVersion('rc-beta/rc-beta.php')).toBe('2.0.0');
  });
});
