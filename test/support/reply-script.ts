// One scripted session of child calls, run against the real MainWP Child (the real-site lane records its replies in
// test/fixtures/child-replies/) and against the simulator (test/child-replies.test.ts compares the two). Each step is
// a raw signed call, so what is compared is the child's own reply, not what sitefleet makes of it.
import type { FormInput } from '../../src/child/form.js';

export type RawCall = (fn: string, fields?: Record<string, FormInput>) => Promise<unknown>;

/** What the script needs to know about a site: slugs it may change (the kit's and the simulator's differ). */
export interface ScriptSite {
  /** An inactive plugin the script activates, deactivates and deletes. */
  plugin: string;
  /** An inactive theme that is no parent of the active one: deleted. */
  theme: string;
  /** A child theme and its parent: the child is activated, then the parent's deletion is refused. */
  childTheme: string;
  parentTheme: string;
  /** A plugin and a theme with an update on offer: updated by the script (the theme may be childTheme). */
  updatePlugin: string;
  updateTheme: string;
}

const SYNCDATA = JSON.stringify(
  Object.fromEntries(['plugins', 'themes', 'users', 'child_site_actions_data', 'securityStats'].map((k) => [k, 1])),
);
const ymd = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** Runs the script; replies by step name. Steps run in order: later ones depend on earlier ones. */
export async function replyScript(call: RawCall, site: ScriptSite): Promise<Record<string, unknown>> {
  const r: Record<string, unknown> = {};
  r.stats = await call('stats', { syncdata: SYNCDATA, params_logs: { events_count: 20 } });
  r.stats_without_params_logs = await call('stats', { syncdata: SYNCDATA });
  r.plugin_activate = await call('plugin_action', { action: 'activate', plugin: site.plugin });
  r.plugin_deactivate = await call('plugin_action', { action: 'deactivate', plugin: site.plugin });
  r.plugin_delete = await call('plugin_action', { action: 'delete', plugin: site.plugin });
  r.theme_activate_child = await call('theme_action', { action: 'activate', theme: site.childTheme });
  r.theme_delete_parent = await call('theme_action', { action: 'delete', theme: site.parentTheme });
  r.theme_delete = await call('theme_action', { action: 'delete', theme: site.theme });
  r.theme_activate_parent = await call('theme_action', { action: 'activate', theme: site.parentTheme });
  const newPost = (fields: Record<string, string>) =>
    call('newpost', {
      new_post: b64(JSON.stringify({ post_content: 'Recorded.', comment_status: 'open', ping_status: 'closed', ...fields })),
      post_custom: b64('[]'),
      post_category: b64(''),
      mainwp_upload_dir: b64('{}'),
    });
  const future = ymd(Date.now() + 30 * 86_400_000);
  r.newpost_future = await newPost({ post_title: 'Recorded future', post_status: 'future', post_date: future, post_date_gmt: future });
  r.newpost_future_without_gmt = await newPost({
    post_title: 'Recorded future, local date only',
    post_status: 'future',
    post_date: future,
  });
  r.newpost_backdated = await newPost({
    post_title: 'Recorded old',
    post_status: 'publish',
    post_date: '2020-03-04 05:06:07',
    post_date_gmt: '2020-03-04 05:06:07',
  });
  const id = Number((r.newpost_backdated as { added_id?: unknown }).added_id);
  r.post_unpublish = await call('post_action', { action: 'unpublish', id });
  r.post_publish = await call('post_action', { action: 'publish', id });
  r.post_trash = await call('post_action', { action: 'trash', id });
  r.post_restore = await call('post_action', { action: 'restore', id });
  r.post_get_edit = await call('post_action', { action: 'get_edit', id, post_type: 'post' });
  r.post_delete = await call('post_action', { action: 'delete', id });
  r.post_publish_missing = await call('post_action', { action: 'publish', id });
  // Updates (updates reference §5.2): an update, the same again once up to date (the child still says true), a theme,
  // a translation that is not on offer, and core.
  r.upgrade_plugin = await call('upgradeplugintheme', { type: 'plugin', list: site.updatePlugin });
  r.upgrade_plugin_again = await call('upgradeplugintheme', { type: 'plugin', list: site.updatePlugin });
  r.upgrade_theme = await call('upgradeplugintheme', { type: 'theme', list: site.updateTheme });
  r.upgrade_translation_none = await call('upgradetranslation', { type: 'translation', list: 'no-such-domain' });
  r.stats_after_updates = await call('stats', {
    syncdata: JSON.stringify({ wp_updates: 1, plugin_updates: 1, theme_updates: 1, translation_updates: 1, plugins: 1, themes: 1 }),
  });
  return r;
}

/** Values that differ between runs and sites (keys, nonces, times, ids, ports), replaced so fixtures read stably. */
const VOLATILE =
  /^(nonce|regverify|uniqueId|pubkey|created|created_on|dts|post_date|post_date_gmt|post_modified|post_modified_gmt|last_updated|outdate_timestamp|timestamp|added_id|post_id|ID|id|user_id|link|siteurl|url|ip|db_size|dbsize|version|wpversion|phpversion|child_version|mysql_version)$/;

/** A reply with its volatile values replaced by their type, for a fixture. */
export function normalise(v: unknown, key = ''): unknown {
  if (Array.isArray(v)) return v.map((x) => normalise(x));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normalise(x, k)]));
  if (VOLATILE.test(key) && (typeof v === 'string' || typeof v === 'number')) return `<${typeof v}>`;
  return v;
}

/** Objects keyed by slugs, names or ids (PHP associative arrays), not by field names. */
const MAPS = new Set([
  'upgrades',
  'updated_data',
  'upgrade_error_codes',
  'upgrades_error',
  'plugin_action_data',
  'plugin_deactivated_data',
  'theme_action_data',
  'theme_deactivate_data',
  'plugin_updates',
  'theme_updates',
  'plugins_outdate_info',
  'themes_outdate_info',
  'changes_logs_data',
  'child_site_actions_data',
  'securityStats',
  'translation_updates',
]);

/**
 * The shape of a reply: every key path with the JSON type found there. Maps keyed by ids or slugs (PHP arrays) are
 * folded to "*", so that two sites with different plugins have the same shape.
 */
export function shape(v: unknown, path = '', out = new Map<string, string>()): Map<string, string> {
  // PHP writes an empty associative array as [], so an empty list and an empty object are one type: "empty".
  const empty = (Array.isArray(v) && v.length === 0) || (!!v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0);
  const type = v === null ? 'null' : empty ? 'empty' : Array.isArray(v) ? 'array' : typeof v;
  out.set(path || '.', type);
  if (Array.isArray(v)) for (const x of v.slice(0, 3)) shape(x, `${path}[]`, out);
  else if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    const folded = MAPS.has(path.slice(path.lastIndexOf('.') + 1)) || (keys.length > 0 && keys.every((k) => /^\d+$/.test(k)));
    for (const k of keys.slice(0, folded ? 3 : undefined)) shape((v as Record<string, unknown>)[k], `${path}.${folded ? '*' : k}`, out);
  }
  return out;
}
