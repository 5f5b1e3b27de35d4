// src/child/snapshot.ts — the normalised SiteSnapshot, the lenient zod schema of a raw `stats` reply, and the mapping between them (§9.1).
import { z } from 'zod';
import { zoneOf } from '../core/site-time.js';
import { versionAtLeast } from './version.js';

// ---- lenient readers for PHP-encoded JSON (§3.1: numbers often arrive as strings, empty maps as []) ----

/** Longest text sitefleet keeps or echoes from a child (names, versions, messages); longer is cut with a marker. */
export const MAX_CHILD_TEXT = 2000;
const TRUNCATED = '…[truncated by sitefleet]';
/** `s` cut to `max` characters, marker included, when it is longer. */
export function clip(s: string, max = MAX_CHILD_TEXT): string {
  return s.length <= max ? s : s.slice(0, max - TRUNCATED.length) + TRUNCATED;
}
/** A string the child may also send as a number (versions, ids); at most MAX_CHILD_TEXT characters are kept. */
export const Text = z.union([z.string(), z.number().transform(String)]).transform((s) => clip(s));
/** Text that is content, not a label (a post's body or excerpt): bounded only by the reply size cap. */
export const LongText = z.union([z.string(), z.number().transform(String)]);
/** A finite number the child may also send as a numeric string. */
export const Count = z.union([
  z.number(),
  z
    .string()
    .regex(/^\s*-?\d+(\.\d+)?\s*$/)
    .transform(Number),
]);
/** PHP truthiness for the 0/1 flags the child sends. */
export const Flag = z.union([z.boolean(), z.number(), z.string()]).transform((v) => v === true || v === 1 || v === '1');

/** A PHP associative array: an object, or a JSON list when PHP saw sequential keys (an empty map arrives as `[]`). */
export function phpMap<T extends z.ZodType>(item: T) {
  return z.union([
    z.record(z.string(), item),
    z.array(item).transform((list) => Object.fromEntries(list.map((v, i) => [String(i), v])) as Record<string, z.output<T>>),
  ]);
}

/** ISO 8601 UTC from unix seconds (the child's `created`, `dts`, `last_updated`), or null when it is not a usable time. */
export function isoFromUnix(seconds: number): string | null {
  const ms = seconds * 1000;
  return Number.isFinite(ms) && Math.abs(ms) < 8.64e15 ? new Date(ms).toISOString() : null;
}

/** ISO 8601 UTC from a MySQL GMT datetime `Y-m-d H:i:s`; other text is returned unchanged. */
export function isoFromMysqlGmt(value: string): string {
  return /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(value) && !value.startsWith('0000') ? value.replace(' ', 'T') + '.000Z' : value;
}

// ---- normalised shapes (what the rest of sitefleet stores and serves) ----

export const Severity = z.enum(['low', 'medium', 'high']);
export const SecurityFinding = z.object({ type: z.string(), severity: Severity, message: z.string() });
export type SecurityFinding = z.infer<typeof SecurityFinding>;

export const ChildUser = z.object({
  id: z.number().int(),
  login: z.string(),
  email: z.string(),
  display_name: z.string(),
  nicename: z.string(),
  role: z.string(),
  /** ISO 8601 UTC. */
  registered: z.string(),
  post_count: z.number().int(),
});
export type ChildUser = z.infer<typeof ChildUser>;

const SiteItem = z.object({
  slug: z.string(),
  name: z.string(),
  version: z.string(),
  active: z.boolean(),
  update_version: z.string().nullable(),
  /** YYYY-MM-DD, set only for items the child reports as not updated for two years or more (see SYNC_OUTDATED_DAYS). */
  last_updated: z.string().nullable(),
});
export const SiteTheme = SiteItem.extend({
  /** The parent of the active child theme (WordPress refuses to delete it). Absent in data stored before it was kept. */
  parent_active: z.boolean().optional(),
});
export const SitePlugin = SiteItem.extend({ must_use: z.boolean() });
export type SiteTheme = z.infer<typeof SiteTheme>;
export type SitePlugin = z.infer<typeof SitePlugin>;

export const SiteChange = z.object({
  id: z.number().int(),
  /** The child's `context` (plugin, theme, user, post, ...). */
  type: z.string(),
  action: z.string(),
  /** The child's `summary`. */
  description: z.string(),
  user: z.string(),
  /** ISO 8601 UTC. */
  timestamp: z.string(),
});
export type SiteChange = z.infer<typeof SiteChange>;

/** One pending update as the child reported it at sync (updates reference §1.1); translations carry their language. */
export const PendingItem = z.object({
  slug: z.string(),
  name: z.string(),
  /** Installed version; null for a translation (a language pack has no installed version the child reports). */
  current_version: z.string().nullable(),
  new_version: z.string(),
  /** Translations only: the locale of the pack, and what it translates (plugin, theme or core). */
  language: z.string().optional(),
  kind: z.string().optional(),
});
export type PendingItem = z.infer<typeof PendingItem>;
export const SitePending = z.object({
  core: z.object({ current_version: z.string(), new_version: z.string() }).nullable(),
  plugins: z.array(PendingItem),
  themes: z.array(PendingItem),
  translations: z.array(PendingItem),
});
export type SitePending = z.infer<typeof SitePending>;

export const SiteSnapshot = z.object({
  child_version: z.string(),
  wp_version: z.string(),
  php_version: z.string(),
  /** The site's time zone: an IANA name or a fixed offset like "+05:30"; null when the child did not say. */
  timezone: z.string().nullable(),
  site_url: z.string(),
  admin_username: z.string(),
  wp_update_version: z.string().nullable(),
  plugins: z.array(SitePlugin),
  themes: z.array(SiteTheme),
  security: z.array(SecurityFinding),
  health: z.object({ good: z.number(), recommended: z.number(), critical: z.number() }),
  /** Changes made outside the dashboard, newest first. */
  changes: z.array(SiteChange),
  /** created_on of the newest changes-log event read (the child's float seconds, as text); the next sync asks for newer ones. */
  changes_cursor: z.string().nullable(),
  users: z.array(ChildUser),
  /** What the child offers to update (wp_updates, plugin_updates, theme_updates, translation_updates). */
  updates: SitePending,
});
export type SiteSnapshot = z.infer<typeof SiteSnapshot>;

/**
 * Sent as `numberdaysOutdatePluginTheme`: the child then lists in `*_outdate_info` exactly the items without a
 * release for two years or more, so a non-null `last_updated` means "abandoned" by the spec's rule.
 */
export const SYNC_OUTDATED_DAYS = 730;

// ---- raw `stats` reply ----

export const RawUser = z.object({
  id: Count,
  login: Text,
  nicename: Text.default(''),
  email: Text.default(''),
  registered: Text.default(''),
  display_name: Text.default(''),
  role: Text.nullable().default(''),
  post_count: Count.default(0),
});

const RawItem = z.object({ slug: Text, name: Text, version: Text.default(''), active: Flag.default(false) });
const RawPlugin = RawItem.extend({ mu: Flag.default(false) });
const RawTheme = RawItem.extend({ parent_active: Flag.default(false) });
const RawUpdate = z.object({
  update: z.object({ new_version: Text.optional() }).optional(),
  new_version: Text.optional(),
  Name: Text.optional(),
  Version: Text.optional(),
});
const RawTranslation = z.object({
  type: Text.default(''),
  slug: Text.default(''),
  language: Text.default(''),
  version: Text.default(''),
  name: Text.optional(),
});
const RawOutdated = z.object({ last_updated: z.union([z.number(), z.string()]).optional() });
/** One event of the child's changes log (`changes_logs_data`, child ≥ 5.4.1, sent only when params_logs asks). */
const RawLog = z.object({
  id: Count.optional(),
  created_on: z.union([z.string(), z.number()]).transform(String),
  context: Text.default(''),
  action_name: Text.default(''),
  username: Text.default(''),
  user_agent: Text.default(''),
  meta_data: z.unknown().optional(),
});
type RawLog = z.infer<typeof RawLog>;

/** The User-Agent sitefleet sends: events the child logged while serving our own requests are not outside changes. */
export const OWN_USER_AGENT = 'Mozilla/5.0 (compatible; MainWP/6.1.2; sitefleet)';

/** A line that says what an event was about, from the meta data the child logs with it. */
function logSummary(log: RawLog): string {
  const m = (log.meta_data && typeof log.meta_data === 'object' ? log.meta_data : {}) as Record<string, unknown>;
  const named = (v: unknown) =>
    v && typeof v === 'object' && typeof (v as { name?: unknown }).name === 'string' ? (v as { name: string }).name : undefined;
  const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const what =
    named(m.plugindata) ??
    named(m.themedata) ??
    str(m.name) ??
    str(m.posttitle) ??
    str(m.post_title) ??
    str(m.task_name) ??
    str(m.changeusername) ??
    str(m.username) ??
    str(m.slug);
  // type and action are fields of their own: the description names what was acted on.
  if (!what) return clip(`${log.context} ${log.action_name}`, 500);
  return clip(`${what}${str(m.slug) && what !== m.slug ? ` (${m.slug as string})` : ''}`, 500);
}

const RawChange = z.object({
  context: Text.default(''),
  action: Text.default(''),
  action_user: Text.default(''),
  created: Count,
  summary: Text.default(''),
});

export const RawStats = z.object({
  version: Text,
  wpversion: Text,
  siteurl: Text,
  site_info: z
    .object({
      phpversion: Text.optional(),
      child_version: Text.optional(),
      format_datetime: z
        .object({ timezone_string: Text.optional(), gmt_offset: z.union([Text, z.null()]).optional() })
        .partial()
        .optional(),
    })
    .optional(),
  wp_updates: z.union([Text, z.null(), z.boolean()]).optional(),
  plugin_updates: phpMap(RawUpdate).optional(),
  theme_updates: phpMap(RawUpdate).optional(),
  translation_updates: z.union([z.array(RawTranslation), phpMap(RawTranslation).transform((m) => Object.values(m))]).optional(),
  securityStats: phpMap(z.string()).optional(),
  plugins: z.array(RawPlugin).optional(),
  themes: z.array(RawTheme).optional(),
  users: z.array(RawUser).optional(),
  plugins_outdate_info: phpMap(RawOutdated).optional(),
  themes_outdate_info: phpMap(RawOutdated).optional(),
  health_site_status: z.union([z.object({ good: Count, recommended: Count, critical: Count }).partial(), z.tuple([])]).optional(),
  child_site_actions_data: z.union([phpMap(RawChange), z.literal('')]).optional(),
  changes_logs_data: z.union([phpMap(RawLog), z.literal('')]).optional(),
});
export type RawStats = z.infer<typeof RawStats>;

// Labels for the child 6.1 hardening checks (§9.1 securityStats). Severity is ours: what an admin should fix first.
const SECURITY_CHECKS: Record<string, { severity: z.infer<typeof Severity>; message: string }> = {
  wp_uptodate: { severity: 'high', message: 'WordPress core is not up to date.' },
  sec_outdated_plugins: { severity: 'high', message: 'Some plugins have pending updates.' },
  sslprotocol: { severity: 'high', message: 'The site is not served over HTTPS.' },
  sec_outdated_themes: { severity: 'medium', message: 'Some themes have pending updates.' },
  phpversion_matched: { severity: 'medium', message: 'The PHP version is below the recommended version.' },
  debug_disabled: { severity: 'medium', message: 'WordPress debug mode is enabled.' },
  db_reporting: { severity: 'low', message: 'Database error reporting is enabled.' },
  php_reporting: { severity: 'low', message: 'PHP error reporting is enabled.' },
  sec_inactive_plugins: { severity: 'low', message: 'Inactive plugins are installed.' },
  sec_inactive_themes: { severity: 'low', message: 'Inactive themes are installed.' },
};

/** One finding per check the child reports as "N" (the dashboard's count; "Y_UNABLE"/"N_UNABLE" are not issues). */
export function securityFindings(stats: Record<string, string>): SecurityFinding[] {
  return Object.entries(stats)
    .filter(([, value]) => value === 'N')
    .map(([type]) => ({
      type,
      ...(SECURITY_CHECKS[type] ?? { severity: 'medium' as const, message: `Security check "${type}" failed.` }),
    }));
}

function isoDay(value: number | string | undefined): string | null {
  if (value === undefined || value === '') return null;
  if (typeof value === 'number' || /^\d+(\.\d+)?$/.test(value)) return isoFromUnix(Number(value))?.slice(0, 10) ?? null;
  if (/^\d{4}-\d{2}-\d{2}/.test(value)) return value.slice(0, 10);
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : (isoFromUnix(ms / 1000)?.slice(0, 10) ?? null);
}

export function toChildUser(raw: z.infer<typeof RawUser>): ChildUser {
  return {
    id: Math.trunc(raw.id),
    login: raw.login,
    email: raw.email,
    display_name: raw.display_name,
    nicename: raw.nicename,
    role: raw.role ?? '',
    registered: isoFromMysqlGmt(raw.registered),
    post_count: Math.trunc(raw.post_count),
  };
}

/** Newest first; equal times by id, highest first. */
export const newestFirst = (a: SiteChange, b: SiteChange): number =>
  a.timestamp < b.timestamp ? 1 : a.timestamp > b.timestamp ? -1 : b.id - a.id;

/** True when `b` is a newer version than `a` (PHP version_compare order on the dotted numbers; equal is not newer). */
export function isNewer(b: string, a: string | null): boolean {
  if (!a) return b !== '';
  return b !== '' && !versionAtLeast(a, b);
}

/**
 * The pending updates of a stats reply. An item whose offered version is not newer than the installed one is left
 * out (upstream lists such "phantom" updates after a theme update restores a stale cache: updates reference §7 D3).
 */
export function pendingOf(raw: RawStats): SitePending {
  const installed = new Map<string, { name: string; version: string }>();
  for (const p of [...(raw.plugins ?? []), ...(raw.themes ?? [])]) installed.set(p.slug, { name: p.name, version: p.version });
  const items = (map: Record<string, z.infer<typeof RawUpdate>>) =>
    Object.entries(map).flatMap(([slug, u]) => {
      const next = u.update?.new_version ?? u.new_version ?? '';
      const current = u.Version ?? installed.get(slug)?.version ?? '';
      if (!slug || !next || (current && !isNewer(next, current))) return [];
      return [{ slug, name: u.Name || installed.get(slug)?.name || slug, current_version: current, new_version: next }];
    });
  const wpNew = typeof raw.wp_updates === 'string' ? raw.wp_updates : '';
  return {
    core: wpNew && isNewer(wpNew, raw.wpversion) ? { current_version: raw.wpversion, new_version: wpNew } : null,
    plugins: items(raw.plugin_updates ?? {}),
    themes: items(raw.theme_updates ?? {}),
    translations: (raw.translation_updates ?? [])
      .filter((t) => t.slug)
      .map((t) => ({
        slug: t.slug,
        name: t.name || t.slug,
        current_version: null,
        new_version: t.version,
        language: t.language,
        kind: t.type,
      })),
  };
}

/** Normalises a validated `stats` reply (or the stats part of register / plugin_action / theme_action replies). */
export function toSnapshot(raw: RawStats, adminUsername: string): SiteSnapshot {
  const pluginUpdates = raw.plugin_updates ?? {};
  const themeUpdates = raw.theme_updates ?? {};
  const pluginsOutdated = raw.plugins_outdate_info ?? {};
  const themesOutdated = raw.themes_outdate_info ?? {};
  const health = Array.isArray(raw.health_site_status) ? {} : (raw.health_site_status ?? {});
  const changes = raw.child_site_actions_data === '' ? {} : (raw.child_site_actions_data ?? {});
  const logs = Object.values(raw.changes_logs_data === '' ? {} : (raw.changes_logs_data ?? {}));
  return {
    child_version: raw.site_info?.child_version ?? raw.version,
    wp_version: raw.wpversion,
    php_version: raw.site_info?.phpversion ?? '',
    timezone: zoneOf(raw.site_info?.format_datetime?.timezone_string, raw.site_info?.format_datetime?.gmt_offset ?? undefined),
    site_url: raw.siteurl,
    admin_username: adminUsername,
    wp_update_version: typeof raw.wp_updates === 'string' && raw.wp_updates !== '' ? raw.wp_updates : null,
    plugins: (raw.plugins ?? []).map((p) => ({
      slug: p.slug,
      name: p.name,
      version: p.version,
      active: p.active,
      update_version: pluginUpdates[p.slug]?.update?.new_version ?? null,
      last_updated: isoDay(pluginsOutdated[p.slug]?.last_updated),
      must_use: p.mu,
    })),
    themes: (raw.themes ?? []).map((t) => ({
      slug: t.slug,
      name: t.name,
      version: t.version,
      active: t.active,
      update_version: themeUpdates[t.slug]?.update?.new_version ?? null,
      last_updated: isoDay(themesOutdated[t.slug]?.last_updated),
      parent_active: t.parent_active,
    })),
    security: securityFindings(raw.securityStats ?? {}),
    health: { good: health.good ?? 0, recommended: health.recommended ?? 0, critical: health.critical ?? 0 },
    changes: [
      ...Object.entries(changes).flatMap(([key, c], i) => {
        const timestamp = isoFromUnix(c.created);
        if (timestamp === null) return [];
        const id = Number(key);
        return [
          {
            id: Number.isSafeInteger(id) ? id : i + 1,
            type: c.context,
            action: c.action,
            description: c.summary,
            user: c.action_user,
            timestamp,
          },
        ];
      }),
      ...logs.flatMap((l, i) => {
        const timestamp = isoFromUnix(Number(l.created_on));
        if (timestamp === null || l.user_agent === OWN_USER_AGENT) return [];
        const id = l.id !== undefined && Number.isSafeInteger(l.id) ? l.id : i + 1;
        return [{ id, type: l.context, action: l.action_name, description: logSummary(l), user: l.username, timestamp }];
      }),
    ].sort(newestFirst),
    changes_cursor: logs.reduce<string | null>((max, l) => (max === null || Number(l.created_on) > Number(max) ? l.created_on : max), null),
    users: (raw.users ?? []).map(toChildUser),
    updates: pendingOf(raw),
  };
}
