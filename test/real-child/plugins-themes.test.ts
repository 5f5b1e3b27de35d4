// Plugins and themes on a real child: every action through the REST door, each result checked inside WordPress.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { serverWithRealSite, wpJson } from './kit.js';

const K = 2;
let s: TestServer;
let id: number;

const activePlugins = () => wpJson<string[]>(K, 'return get_option("active_plugins");');
const installedPlugins = () => Object.keys(wpJson<Record<string, unknown>>(K, 'wp_clean_plugins_cache(); return get_plugins();')).sort();
const installedThemes = () => Object.keys(wpJson<Record<string, unknown>>(K, 'wp_clean_themes_cache(); return wp_get_themes();')).sort();
const stylesheet = () => wpJson<string>(K, 'return get_stylesheet();');
const listed = async (what: 'plugins' | 'themes') => {
  const r = await s.rest(`/sites/${id}/${what}?per_page=100`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as Array<{ slug: string; active: boolean; version: string }>;
};

beforeAll(async () => {
  ({ s, id } = await serverWithRealSite(K, startServer));
});
afterAll(async () => {
  await s?.close();
});

describe('plugins on a real child', () => {
  it('activates and deactivates, as WordPress then says', async () => {
    const on = await s.rest(`/sites/${id}/plugins/activate`, { method: 'POST', json: { slug: 'rc-beta/rc-beta.php' } });
    expect(on.status, JSON.stringify(on.body)).toBe(200);
    expect(on.body.data.map((p: { slug: string }) => p.slug)).toEqual(['rc-beta/rc-beta.php']);
    expect(activePlugins()).toContain('rc-beta/rc-beta.php');
    expect((await listed('plugins')).find((p) => p.slug === 'rc-beta/rc-beta.php')?.active).toBe(true);

    const off = await s.rest(`/sites/${id}/plugins/deactivate`, { method: 'POST', json: { slug: 'rc-beta/rc-beta.php' } });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect(off.body.data.map((p: { slug: string }) => p.slug)).toEqual(['rc-beta/rc-beta.php']);
    expect(activePlugins()).not.toContain('rc-beta/rc-beta.php');
    expect((await listed('plugins')).find((p) => p.slug === 'rc-beta/rc-beta.php')?.active).toBe(false);
  });

  it('deletes a plugin, reports it deleted and lists no ghost of it (defect 1)', async () => {
    const preview = await s.rest(`/sites/${id}/plugins/delete?slug=rc-beta/rc-beta.php&dry_run=1`, { method: 'DELETE' });
    expect(preview.body).toMatchObject({ dry_run: true, data: [expect.objectContaining({ slug: 'rc-beta/rc-beta.php' })] });
    expect(installedPlugins()).toContain('rc-beta/rc-beta.php');

    const r = await s.rest(`/sites/${id}/plugins/delete?slug=rc-beta/rc-beta.php`, { method: 'DELETE' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ success: 1, errors: [] });
    expect(r.body.data.map((p: { slug: string }) => p.slug)).toEqual(['rc-beta/rc-beta.php']);
    expect(installedPlugins()).not.toContain('rc-beta/rc-beta.php');
    expect((await listed('plugins')).map((p) => p.slug)).not.toContain('rc-beta/rc-beta.php');
    // The ability says the same, and so does a fresh sync.
    const viaAbility = await s.ability('get-site-plugins-v1', { site_id_or_domain: id }, { method: 'GET' });
    expect(viaAbility.body.plugins.map((p: { slug: string }) => p.slug)).not.toContain('rc-beta/rc-beta.php');
    await s.rest(`/sites/${id}/sync`, { method: 'POST' });
    expect((await listed('plugins')).map((p) => p.slug).sort()).toEqual(installedPlugins());
  });

  it('refuses to delete what is not installed, per item', async () => {
    const r = await s.rest(`/sites/${id}/plugins/delete?slug=no-such/no-such.php`, { method: 'DELETE' });
    expect(r.body.errors[0]).toMatchObject({ slug: 'no-such/no-such.php', code: 'svc_plugin_not_found' });
  });
});

describe('themes on a real child', () => {
  it('activates a theme, as WordPress then says', async () => {
    const r = await s.rest(`/sites/${id}/themes/activate`, { method: 'POST', json: { slug: 'twentytwentyfour' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ success: 1, previous_theme: 'twentytwentyfive' });
    expect(stylesheet()).toBe('twentytwentyfour');
    expect((await listed('themes')).find((t) => t.active)?.slug).toBe('twentytwentyfour');
  });

  it('previews deleting the parent of the active theme with a warning, and the child refuses it (defect 6)', async () => {
    const on = await s.rest(`/sites/${id}/themes/activate`, { method: 'POST', json: { slug: 'rc-tt5-child' } });
    expect(on.body.success, JSON.stringify(on.body)).toBe(1);
    expect(stylesheet()).toBe('rc-tt5-child');
    const preview = await s.rest(`/sites/${id}/themes/delete?slug=twentytwentyfive&dry_run=1`, { method: 'DELETE' });
    expect(preview.body.warnings.join(' ')).toMatch(/parent of the active theme/);
    const r = await s.rest(`/sites/${id}/themes/delete?slug=twentytwentyfive`, { method: 'DELETE' });
    expect(r.body.errors[0]).toMatchObject({ slug: 'twentytwentyfive', code: 'svc_theme_parent_active' });
    expect(installedThemes()).toContain('twentytwentyfive');
  });

  it('deletes an inactive theme, reports it deleted and lists no ghost of it (defect 2)', async () => {
    const r = await s.rest(`/sites/${id}/themes/delete?slug=twentytwentyfour`, { method: 'DELETE' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ success: 1, errors: [] });
    expect(installedThemes()).not.toContain('twentytwentyfour');
    expect((await listed('themes')).map((t) => t.slug)).not.toContain('twentytwentyfour');
  });
});
