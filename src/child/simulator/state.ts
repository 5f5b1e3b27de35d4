// src/child/simulator/state.ts — the in-memory WordPress of one simulated child site, generated deterministically from a seed.
import { USER_ROLES, type UserRole } from '../wordpress.js';

export type Role = UserRole;
export const ROLES: readonly Role[] = USER_ROLES;

export interface SimUser {
  id: number;
  login: string;
  password: string;
  email: string;
  nicename: string;
  display_name: string;
  first_name: string;
  last_name: string;
  nickname: string;
  url: string;
  description: string;
  role: Role;
  /** Unix seconds. */
  registered: number;
}

export interface SimPlugin {
  /** Plugin file, e.g. `akismet/akismet.php`. */
  slug: string;
  name: string;
  description: string;
  version: string;
  active: boolean;
  mu: boolean;
  /** The MainWP Child plugin itself (`mainwp: "T"`), which the child never acts on. */
  isChild: boolean;
  updateVersion: string | null;
  /** Unix seconds of the item's last release on wordpress.org. */
  lastUpdated: number;
}

export interface SimTheme {
  /** Stylesheet. */
  slug: string;
  name: string;
  version: string;
  active: boolean;
  parent: string | null;
  updateVersion: string | null;
  lastUpdated: number;
}

/** A language pack on offer (`translation_updates`): `slug` is the text domain of what it translates. */
export interface SimTranslation {
  type: 'plugin' | 'theme' | 'core';
  slug: string;
  language: string;
  version: string;
  name: string;
}

export interface SimPost {
  id: number;
  type: 'post' | 'page';
  status: string;
  title: string;
  content: string;
  name: string;
  excerpt: string;
  password: string;
  /** Unix seconds (GMT); 0 for a draft without a date. */
  date: number;
  modified: number;
  author: number;
  categories: string[];
  tags: string[];
  commentCount: number;
  commentStatus: string;
  pingStatus: string;
  sticky: boolean;
  featuredImage: string | null;
  custom: Record<string, unknown[]>;
}

/** A change made in wp-admin (not through the dashboard): `child_site_actions_data`. */
export interface SimChange {
  id: number;
  context: string;
  action: string;
  user: string;
  /** Unix seconds, with a fraction like the child's microtime. */
  created: number;
  summary: string;
}

export interface RegverifyRecord {
  hashKey: string;
  secure: string;
  date: number;
}

/**
 * What a broken update does to the front end, as rc-alpha's broken versions do on a real site: `fatal` — WordPress's
 * critical-error page (500) on every page, the login page too; `no_title` — pages answer 200 without the site's title;
 * `php_error` — PHP's own "Fatal error" text in a 200 page (display_errors on).
 */
export type SimBreak = 'fatal' | 'no_title' | 'php_error';

export interface SimSiteState {
  index: number;
  siteUrl: string;
  wpVersion: string;
  phpVersion: string;
  childVersion: string;
  /** Newer WordPress core version, or null. */
  wpUpdate: string | null;
  translations: SimTranslation[];
  /** Packages that fail to install here (slug or "wordpress" → the upgrader's message), for failure scenarios. */
  failingUpdates: Record<string, string>;
  /**
   * Updates that break the site's front end once installed (slug, "wordpress" or "translation:TEXT-DOMAIN" → how), for
   * health and rollback tests.
   */
  breakOnUpdate: Record<string, SimBreak>;
  /** How the front end is broken now, and by which item's update (null: it renders well). */
  frontEnd: { effect: SimBreak; by: string } | null;
  /** Every item an upgrade call installed, in order ("plugin:akismet/akismet.php", "core:wordpress"): tests count them. */
  upgradeLog: string[];
  users: SimUser[];
  plugins: SimPlugin[];
  themes: SimTheme[];
  posts: SimPost[];
  categories: string[];
  changes: SimChange[];
  /** Hardening checks not derived from the lists above. */
  checks: { db_reporting: string; php_reporting: string; phpversion_matched: string; debug_disabled: string; sslprotocol: string };
  health: { good: number; recommended: number; critical: number };
  /** False after `deactivate`: the plugin no longer answers anything. */
  childActive: boolean;
  /** mainwp_child_uniqueId; "" = none required. */
  uniqueId: string;
  /** Last `numberdaysOutdatePluginTheme` received (the child keeps its abandoned-check setting). */
  outdatedDays: number;
  /** Per-login "Require password to connect" (default on). */
  passwordAuth: Record<string, boolean>;
  connection: {
    pubkeyPem: string | null;
    server: string | null;
    admin: string | null;
    signAlgo: number | null;
    /** Last `syncdata` received (mainwp_child_settings_sync_data). */
    syncdata: Record<string, unknown> | null;
  };
  regverify: Record<string, RegverifyRecord[]>;
  nextId: { user: number; post: number };
  /** Bumped by every change; keys the cached stats payload. */
  rev: number;
}

/** mulberry32: small, fast, good enough for test data. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Independent stream per site, so site n looks the same whatever the number of sites. */
export function siteSeed(seed: number, index: number): number {
  return (Math.imul(seed ^ 0x5bd1e995, 0x9e3779b1) + Math.imul(index, 0x85ebca6b)) >>> 0;
}

const WP_VERSIONS = ['6.5.5', '6.6.2', '6.7.2', '6.8.1', '6.8.2'];
const PHP_VERSIONS = ['7.4.33', '8.0.30', '8.1.31', '8.2.27', '8.3.16'];
const PLUGINS = [
  'akismet/akismet.php|Akismet Anti-spam: Spam Protection',
  'hello.php|Hello Dolly',
  'wordpress-seo/wp-seo.php|Yoast SEO',
  'woocommerce/woocommerce.php|WooCommerce',
  'contact-form-7/wp-contact-form-7.php|Contact Form 7',
  'elementor/elementor.php|Elementor',
  'jetpack/jetpack.php|Jetpack',
  'wordfence/wordfence.php|Wordfence Security',
  'wp-super-cache/wp-cache.php|WP Super Cache',
  'updraftplus/updraftplus.php|UpdraftPlus - Backup/Restore',
  'classic-editor/classic-editor.php|Classic Editor',
  'really-simple-ssl/rlrsssl-really-simple-ssl.php|Really Simple Security',
  'wpforms-lite/wpforms.php|WPForms Lite',
  'all-in-one-seo-pack/all_in_one_seo_pack.php|All in One SEO',
  'litespeed-cache/litespeed-cache.php|LiteSpeed Cache',
  'duplicate-post/duplicate-post.php|Yoast Duplicate Post',
  'redirection/redirection.php|Redirection',
  'wp-mail-smtp/wp_mail_smtp.php|WP Mail SMTP',
  'google-site-kit/google-site-kit.php|Site Kit by Google',
  'limit-login-attempts-reloaded/limit-login-attempts-reloaded.php|Limit Login Attempts Reloaded',
  'wp-optimize/wp-optimize.php|WP-Optimize',
  'tablepress/tablepress.php|TablePress',
  'regenerate-thumbnails/regenerate-thumbnails.php|Regenerate Thumbnails',
  'custom-post-type-ui/custom-post-type-ui.php|Custom Post Type UI',
  'advanced-custom-fields/acf.php|Advanced Custom Fields',
  'loco-translate/loco.php|Loco Translate',
  'wp-file-manager/file_folder_manager.php|WP File Manager',
  'smush/wp-smush.php|Smush',
  'autoptimize/autoptimize.php|Autoptimize',
  'cookie-notice/cookie-notice.php|Cookie Notice & Compliance',
  'mailchimp-for-wp/mailchimp-for-wp.php|MC4WP: Mailchimp for WordPress',
  'svg-support/svg-support.php|SVG Support',
  'wp-statistics/wp-statistics.php|WP Statistics',
  'user-role-editor/user-role-editor.php|User Role Editor',
  'health-check/health-check.php|Health Check & Troubleshooting',
  'query-monitor/query-monitor.php|Query Monitor',
  'disable-comments/disable-comments.php|Disable Comments',
  'post-smtp/postman-smtp.php|Post SMTP',
  'broken-link-checker/broken-link-checker.php|Broken Link Checker',
  'wp-maintenance-mode/wp-maintenance-mode.php|LightStart',
  'black-studio-tinymce-widget/black-studio-tinymce-widget.php|Black Studio TinyMCE Widget',
  'simple-custom-post-order/simple-custom-post-order.php|Simple Custom Post Order',
  'wps-hide-login/wps-hide-login.php|WPS Hide Login',
  'members/members.php|Members',
];
const THEMES = [
  'twentytwentyfive|Twenty Twenty-Five',
  'twentytwentyfour|Twenty Twenty-Four',
  'twentytwentythree|Twenty Twenty-Three',
  'twentytwentytwo|Twenty Twenty-Two',
  'twentytwentyone|Twenty Twenty-One',
  'astra|Astra',
  'generatepress|GeneratePress',
  'oceanwp|OceanWP',
  'kadence|Kadence',
  'neve|Neve',
  'hello-elementor|Hello Elementor',
  'storefront|Storefront',
];
const PEOPLE = ['alice', 'bruno', 'chen', 'dana', 'emeka', 'farah', 'gus', 'hana', 'ivan', 'jo'];
const TITLES = [
  'Hello world!',
  'Spring update',
  'Our new office',
  'How we ship',
  'Release notes',
  'Meet the team',
  'Five tips',
  'Year in review',
  'Roadmap',
  'Customer story',
];
const CHANGE_KINDS: [string, string, string][] = [
  ['plugin', 'activated', 'Activated plugin'],
  ['plugin', 'deactivated', 'Deactivated plugin'],
  ['plugin', 'updated', 'Updated plugin'],
  ['theme', 'switched', 'Switched theme'],
  ['user', 'created', 'Created user'],
  ['user', 'login', 'User logged in'],
  ['post', 'published', 'Published post'],
  ['post', 'updated', 'Updated post'],
  ['settings', 'updated', 'Updated general settings'],
];
const DAY = 86_400;

export function defaultPassword(seed: number, index: number): string {
  return `pw-${index}-${siteSeed(seed, index).toString(36)}`;
}

export interface SiteStateInput {
  index: number;
  siteUrl: string;
  seed: number;
  admin: string;
  password: string;
  /** Unix seconds all generated dates are relative to (the simulator's start day). */
  now: number;
}

/** One site's WordPress, a pure function of (seed, index, now). */
export function createSiteState(input: SiteStateInput): SimSiteState {
  const rand = mulberry32(siteSeed(input.seed, input.index));
  const int = (lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));
  const chance = (p: number): boolean => rand() < p;
  const shuffled = <T>(list: readonly T[]): T[] => {
    const out = [...list];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  };
  const version = (): string => `${int(1, 9)}.${int(0, 20)}.${int(0, 9)}`;
  const bump = (v: string): string => v.replace(/\.(\d+)\.\d+$/, (_, minor: string) => `.${Number(minor) + 1}.0`);
  // 15% of items have had no release for more than two years ("abandoned").
  const released = (): number => input.now - (chance(0.15) ? int(731, 2500) : int(1, 700)) * DAY;
  const { now } = input;

  const wpVersion = WP_VERSIONS[int(0, WP_VERSIONS.length - 1)]!;
  const phpVersion = PHP_VERSIONS[int(0, PHP_VERSIONS.length - 1)]!;

  const plugins: SimPlugin[] = [
    {
      slug: 'mainwp-child/mainwp-child.php',
      name: 'MainWP Child',
      description: 'Provides a secure connection between your MainWP Dashboard and your WordPress sites.',
      version: '6.1',
      active: true,
      mu: false,
      isChild: true,
      updateVersion: null,
      lastUpdated: now - int(5, 60) * DAY,
    },
  ];
  for (const entry of shuffled(PLUGINS).slice(0, int(9, 39))) {
    const [slug, name] = entry.split('|') as [string, string];
    const v = version();
    plugins.push({
      slug,
      name,
      description: `${name} for WordPress.`,
      version: v,
      active: chance(0.6),
      mu: false,
      isChild: false,
      updateVersion: chance(0.25) ? bump(v) : null,
      lastUpdated: released(),
    });
  }
  if (chance(0.2)) {
    plugins.push({
      slug: 'site-loader.php',
      name: 'Site Loader (must-use)',
      description: 'Host-provided must-use plugin.',
      version: '1.0.0',
      active: true,
      mu: true,
      isChild: false,
      updateVersion: null,
      lastUpdated: now - 400 * DAY,
    });
  }

  const themes: SimTheme[] = shuffled(THEMES)
    .slice(0, int(3, 8))
    .map((entry, i) => {
      const [slug, name] = entry.split('|') as [string, string];
      const v = version();
      return {
        slug,
        name,
        version: v,
        active: i === 0,
        parent: null,
        updateVersion: chance(0.25) ? bump(v) : null,
        lastUpdated: released(),
      };
    });
  if (chance(0.25)) {
    // The active theme is a child theme: its parent cannot be deleted either (§9.4).
    const parent = themes[0]!;
    parent.active = false;
    themes.unshift({
      slug: `${parent.slug}-child`,
      name: `${parent.name} Child`,
      version: '1.0.0',
      active: true,
      parent: parent.slug,
      updateVersion: null,
      lastUpdated: now - 100 * DAY,
    });
  }

  const domain = `site${input.index}.example`;
  const users: SimUser[] = [
    {
      id: 1,
      login: input.admin,
      password: input.password,
      email: `${input.admin}@${domain}`,
      nicename: input.admin.toLowerCase(),
      display_name: input.admin,
      first_name: '',
      last_name: '',
      nickname: input.admin,
      url: '',
      description: '',
      role: 'administrator',
      registered: now - int(400, 3000) * DAY,
    },
  ];
  for (const person of shuffled(PEOPLE).slice(0, int(2, 5))) {
    const role = (['editor', 'author', 'contributor', 'subscriber'] as const)[int(0, 3)]!;
    const first = person[0]!.toUpperCase() + person.slice(1);
    users.push({
      id: users.length + 1,
      login: person,
      password: `${person}-secret`,
      email: `${person}@${domain}`,
      nicename: person,
      display_name: first,
      first_name: first,
      last_name: 'Example',
      nickname: person,
      url: '',
      description: '',
      role,
      registered: now - int(10, 900) * DAY,
    });
  }

  const categories = ['Uncategorized', 'News', 'Guides', 'Updates'];
  const posts: SimPost[] = [];
  const postCount = int(3, 8);
  for (let i = 0; i < postCount; i++) {
    const page = i === postCount - 1;
    const title = page ? 'About us' : TITLES[int(0, TITLES.length - 1)]!;
    const status = page ? 'publish' : (['publish', 'publish', 'publish', 'draft', 'pending', 'future'] as const)[int(0, 5)]!;
    const date = status === 'future' ? now + int(2, 30) * DAY : now - int(1, 400) * DAY;
    posts.push({
      id: i + 1,
      type: page ? 'page' : 'post',
      status,
      title,
      content: `<p>${title} — generated for site ${input.index}.</p>`,
      name: `${title
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-|-$/g, '')}-${i + 1}`,
      excerpt: '',
      password: '',
      date,
      modified: status === 'future' ? now - DAY : date + int(0, 5) * DAY,
      author: users[int(0, users.length - 1)]!.id,
      categories: page ? [] : [categories[int(0, categories.length - 1)]!],
      tags: page ? [] : ['demo'],
      commentCount: int(0, 12),
      commentStatus: 'open',
      pingStatus: 'closed',
      sticky: false,
      featuredImage: null,
      custom: {},
    });
  }

  const changes: SimChange[] = [];
  const changeCount = int(3, 10);
  for (let i = 0; i < changeCount; i++) {
    const [context, action, label] = CHANGE_KINDS[int(0, CHANGE_KINDS.length - 1)]!;
    const subject =
      context === 'plugin'
        ? plugins[int(0, plugins.length - 1)]!.name
        : context === 'theme'
          ? themes[0]!.name
          : context === 'post'
            ? posts[0]!.title
            : users[int(0, users.length - 1)]!.login;
    changes.push({
      id: i + 1,
      context,
      action,
      user: users[int(0, users.length - 1)]!.login,
      created: now - int(60, 29 * DAY) + int(0, 999) / 1000,
      summary: `${label}: ${subject}`,
    });
  }
  changes.sort((a, b) => a.created - b.created).forEach((c, i) => (c.id = i + 1));

  return {
    index: input.index,
    siteUrl: input.siteUrl.replace(/\/$/, ''),
    wpVersion,
    phpVersion,
    childVersion: '6.1',
    wpUpdate: wpVersion === WP_VERSIONS[WP_VERSIONS.length - 1] ? null : WP_VERSIONS[WP_VERSIONS.length - 1]!,
    // Every third site has a German language pack on offer for its first plugin (no draw from rand: other data stays as it was).
    translations:
      input.index % 3 === 0 && plugins[1]
        ? [
            {
              type: 'plugin',
              slug: plugins[1].slug.split('/')[0]!.replace(/\.php$/, ''),
              language: 'de_DE',
              version: plugins[1].version,
              name: plugins[1].name,
            },
          ]
        : [],
    failingUpdates: {},
    breakOnUpdate: {},
    frontEnd: null,
    upgradeLog: [],
    users,
    plugins,
    themes,
    posts,
    categories,
    changes,
    checks: {
      db_reporting: chance(0.8) ? 'Y_UNABLE' : 'N',
      php_reporting: chance(0.8) ? 'Y_UNABLE' : 'N',
      phpversion_matched: phpVersion.startsWith('7.') || phpVersion.startsWith('8.0') ? 'N' : 'Y',
      debug_disabled: chance(0.8) ? 'Y' : 'N',
      sslprotocol: input.siteUrl.startsWith('https:') ? 'Y' : 'N',
    },
    health: { good: int(10, 20), recommended: int(0, 5), critical: int(0, 2) },
    childActive: true,
    uniqueId: '',
    outdatedDays: 365,
    passwordAuth: {},
    connection: { pubkeyPem: null, server: null, admin: null, signAlgo: null, syncdata: null },
    regverify: {},
    nextId: { user: users.length + 1, post: posts.length + 1 },
    rev: 0,
  };
}
