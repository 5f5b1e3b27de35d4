// The simulator answers as the real MainWP Child does: the same script of child calls runs against the simulator and
// is compared with the real child's replies recorded in test/fixtures/child-replies/ (re-record them with
// SITEFLEET_RECORD_REPLIES=1 npm run test:real-child). Shapes must match, and so must the semantics sitefleet
// depends on, each of which once differed and broke a real site.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childFixture, rawSignedCall } from './support/child-sim.js';
import { replyScript, shape } from './support/reply-script.js';

const real = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'child-replies', 'real-child-6.1.json'), 'utf8')) as Record<
  string,
  any
>;

/**
 * Parts of the real replies the simulator leaves out, each because sitefleet never reads it. Anything else the real
 * child sends, the simulator must send with the same JSON type.
 */
const NOT_SIMULATED = [
  /^\.(sync\.)?(recent_comments|recent_posts|recent_pages|directories|categories|categories_list|extauth|mainwpdir|password_policy_options|securityIssues|dbsize|dbsize_activitylogs|uniqueId|last_post_gmt|translation_updates|wp_updates|admin_nicename|admin_useremail|health_site_status)\b/,
  /^\.(sync\.)?site_info\.(child_curl_version|child_openssl_version|site_lang|site_public)$/,
  /\.(plugins|themes)\[\]\.(title|description|child_theme|child_active|mainwp|network)$/,
  /^\.(sync\.)?(plugin|theme)_updates\.\*/,
  /\.(plugins|themes)_outdate_info\.\*/,
  // The log's per-event meta data varies by event type; sitefleet reads a few names from it (see logSummary).
  /^\.changes_logs_data\.\*\.(meta_data|blog_id|log_type_id|client_ip|user_roles|user_id|duration|post_status|post_type|post_id)/,
  /^\.sync\.(changes_logs_data|child_site_actions_data)/,
  /\.child_site_actions_data\.\*\.meta_data/,
  /^\.my_post\.(post_custom|post_category|post_featured_image)$/,
];

let fx: Awaited<ReturnType<typeof childFixture>>;
let sim: Record<string, any>;

beforeAll(async () => {
  fx = await childFixture({ sites: 24, seed: 11 });
  // A simulated site shaped like the kit's: a child theme active, a theme that is nobody's parent, an inactive plugin.
  const index =
    fx.sim.sites.findIndex((_, i) => {
      const st = fx.sim.state(i + 1);
      return (
        st.themes.some((t) => t.active && t.parent) &&
        st.themes.some((t) => !t.active && !st.themes.some((c) => c.parent === t.slug)) &&
        st.plugins.some((p) => !p.active && !p.mu && !p.isChild)
      );
    }) + 1;
  expect(index).toBeGreaterThan(0);
  const st = fx.sim.state(index);
  const child = st.themes.find((t) => t.active && t.parent)!;
  // Updates on offer like the kit's: a plugin (other than the one the script deletes) and the child theme.
  const deleted = st.plugins.find((p) => !p.active && !p.mu && !p.isChild)!.slug;
  const upd = st.plugins.find((p) => !p.isChild && !p.mu && p.slug !== deleted)!;
  upd.updateVersion = '99.0.0';
  child.updateVersion = '1.1.0';
  st.rev++;
  const script = {
    updatePlugin: upd.slug,
    updateTheme: child.slug,
    plugin: deleted,
    theme: st.themes.find((t) => !t.active && t.slug !== child.parent)!.slug,
    childTheme: child.slug,
    parentTheme: child.parent!,
  };
  const reg = await fx.register(index);
  sim = await replyScript((fn, fields) => rawSignedCall(reg, fn, { signAlgo: reg.signAlgo, fields }), script);
});
afterAll(async () => {
  await fx?.close();
});

describe("the simulator, against the real child's recorded replies", () => {
  it('sends every part of each reply that the real child sends, with the same types', () => {
    const missing: string[] = [];
    for (const step of Object.keys(real)) {
      const want = shape(real[step]);
      const got = shape(sim[step]);
      for (const [path, type] of want) {
        if (NOT_SIMULATED.some((re) => re.test(path))) continue;
        const have = got.get(path);
        // A number the real child sends as a string (or the reverse) is the same field: PHP is loose, so is our reader.
        const loose = (a: string | undefined, b: string) =>
          (['string', 'number'].includes(a ?? '') && ['string', 'number'].includes(b)) ||
          (a === 'empty' && ['array', 'object'].includes(b)) ||
          (b === 'empty' && ['array', 'object'].includes(a ?? ''));
        const same = have === type || loose(have, type);
        if (!same) missing.push(`${step} ${path}: real ${type}, simulator ${have ?? 'absent'}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('lists a deleted plugin or theme in the sync block of the delete reply, as the real child does', () => {
    const slug = (x: { slug: string }) => x.slug;
    for (const [step, kind, dataKey] of [
      ['plugin_delete', 'plugins', 'plugin_action_data'],
      ['theme_delete', 'themes', 'theme_action_data'],
    ] as const) {
      for (const r of [real[step], sim[step]]) {
        const deleted = Object.keys(r.other_data[dataKey]);
        expect(deleted.length, step).toBe(1);
        expect(r.sync[kind].map(slug), step).toContain(deleted[0]);
      }
    }
  });

  it('refuses to delete the parent of the active theme with is_activated_parent, and flags it parent_active', () => {
    expect(Object.keys(sim.theme_delete_parent)).toEqual(Object.keys(real.theme_delete_parent));
    expect(sim.theme_delete_parent.error.is_activated_parent).toBeTruthy();
    for (const r of [real.theme_activate_child, sim.theme_activate_child]) {
      expect(r.sync.themes.filter((t: { parent_active: number }) => t.parent_active === 1)).toHaveLength(1);
    }
  });

  it('answers an unpublish with my_post {ID, post_status: draft}, and every action with the new status', () => {
    for (const r of [real, sim]) {
      expect(r.post_unpublish.my_post).toEqual({ ID: expect.anything(), post_status: 'draft' });
      expect(r.post_unpublish.other_data.post_action_data.new_status).toBe('draft');
      expect(r.post_trash.other_data.post_action_data.new_status).toBe('trash');
      expect(r.post_restore.other_data.post_action_data.new_status).toBe('draft');
      expect(r.post_publish_missing).toMatchObject({ status: 'FAIL' });
    }
  });

  it('keeps a date sent with post_date_gmt, and resets one sent without it (a "future" post is then published)', () => {
    for (const r of [real, sim]) {
      expect(r.newpost_future.other_data.new_post_data.new_status).toBe('future');
      expect(r.newpost_future_without_gmt.other_data.new_post_data.new_status).toBe('publish');
      expect(r.newpost_backdated.other_data.new_post_data.new_status).toBe('publish');
    }
    expect(sim.newpost_backdated.other_data.new_post_data.post_date_gmt).toBe('2020-03-04 05:06:07');
  });

  it('answers upgrades as the real child does: updated_data carries the version on disk; an item already up to date is "true" again', () => {
    for (const r of [real, sim]) {
      const [slug, d] = Object.entries(r.upgrade_plugin.other_data.updated_data)[0] as [string, any];
      expect(r.upgrade_plugin.upgrades[slug]).toBe(true);
      expect(d).toMatchObject({ success: 1, version: expect.any(String), old_version: expect.any(String) });
      expect(d.version).not.toBe(d.old_version);
      const again = r.upgrade_plugin_again.other_data.updated_data[slug];
      expect(r.upgrade_plugin_again.upgrades[slug]).toBe(true);
      expect(again.version).toBe(d.version);
      const theme = Object.values(r.upgrade_theme.other_data.updated_data)[0] as any;
      expect(theme).toMatchObject({ success: 1 });
      expect(typeof r.upgrade_theme.sync).toBe('object');
      expect(r.upgrade_translation_none.upgrades).toEqual([]);
      expect(Object.keys(r.stats_after_updates.plugin_updates ?? {})).not.toContain(slug);
    }
  });

  it("sends its changes log only when params_logs asks for it, and the site's time zone", () => {
    for (const r of [real, sim]) {
      expect(typeof r.stats.changes_logs_data, 'with params_logs').toBe('object');
      expect(r.stats_without_params_logs.changes_logs_data).toBe('');
      expect(r.stats.site_info.format_datetime).toMatchObject({ timezone_string: expect.any(String), gmt_offset: expect.anything() });
    }
  });
});
