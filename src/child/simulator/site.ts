// src/child/simulator/site.ts — one simulated MainWP Child 6.1: the request pipeline (§6), registration (§7.3) and the functions of §9.
import { createHmac, createPublicKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import { encodeEnvelope } from '../envelope.js';
import { rawurldecode, type FormField, type FormMap } from '../form.js';
import { SHA1, SIGN_ALGOS, verifySignature } from '../keys.js';
import { versionAtLeast } from '../version.js';
import { ROLES, type Role, type SimPlugin, type SimPost, type SimSiteState, type SimTheme, type SimUser } from './state.js';
import { packageAt, type SimPackage } from './directory.js';

export interface SimReply {
  status: number;
  body: string | Buffer;
  /** True when the body is a `<mainwp>` envelope (reply-shaping faults apply only then). */
  envelope: boolean;
}

// Child 6.1 texts (§3.3, §15); the HTML escaping is the child's own.
const MSG = {
  authFailed: 'Authentication failed! Please deactivate and re-activate the MainWP Child plugin on this site.',
  sha1Downgrade:
    'To use OPENSSL_ALGO_SHA1 OpenSSL signature algorithm. Please deactivate &amp; reactivate the MainWP Child plugin on the child site and try again.',
  parse1: 'Authentication failed! Please deactivate &amp; re-activate the MainWP Child plugin on this child site and try again.',
  incompatible:
    'Required version has not been detected. Please, make sure that you are using the latest version of the MainWP Child plugin on your site.',
  unexisting: 'Unexisting administrator user. Please verify that it is an existing administrator.',
  notAdmin: 'User not administrator. Please use an administrator user to connect.',
  linked:
    'This site already contains a link. Please deactivate and reactivate the MainWP plugin.<br/>Hint: Go to the child site, deactivate and reactivate the MainWP Child plugin and try again.',
  reg1: 'Public key could not be set. Please make sure that the OpenSSL library has been configured correctly on your MainWP Dashboard. For additional help, please check this <strong><a href="https://mainwp.com/kb/" target="_blank">help document</a></strong>.',
  reg2: 'Public key already set. Please deactivate &amp; reactivate the MainWP Child plugin on the child site and try again.',
  reg3: 'This child site is set to require a unique security ID. Please enter it before the connection can be established.',
  reg4: 'The unique security ID mismatch! Please correct it before the connection can be established.',
  reg7: 'Unable to connect to the site. Please verify that your Admin Username and Password are correct and try again.',
  // REG_ERROR8/9 texts are not quoted in the reference; these are close paraphrases.
  reg8: 'Unable to log in as this user. Please verify the Admin Username and try again.',
  reg9: 'User is not an administrator. Please use an administrator user to connect.',
  reg10Forced: 'Forced Reconnect requires Administrator Password authentication. Please enable it on the child site and try again.',
  reg10Old:
    'Your current MainWP Dashboard version is not compatible with the new connection protocol. Please update the MainWP Dashboard to the latest version.',
  reconnect: 'Failed to reconnect to the site. Please remove the site and add it again.',
};

const DAY = 86_400;
/** WordPress's page after a fatal error (wp_die since 5.2), as a real site answers it with HTTP 500. */
export const WP_FATAL_PAGE =
  '<!DOCTYPE html><html><head><title>WordPress &rsaquo; Error</title></head><body id="error-page"><div class="wp-die-message"><p>There has been a critical error on this website.</p><p><a href="https://wordpress.org/documentation/article/faq-troubleshooting/">Learn more about troubleshooting WordPress.</a></p></div></body></html>';
const AVATAR =
  "<img alt='' src='https://secure.gravatar.com/avatar/?s=32&#038;d=mm&#038;r=g' class='avatar avatar-32 photo' height='32' width='32' loading='lazy' decoding='async'/>";

const FATAL_PAGE =
  '<p>There has been a critical error on this website.</p><p><a href="https://wordpress.org/documentation/article/faq-troubleshooting/">Learn more about troubleshooting WordPress.</a></p>';
const reply = (value: unknown): SimReply => ({ status: 200, body: encodeEnvelope(value), envelope: true });
const fail = (error: string, code?: string): SimReply => reply(code ? { error, error_code: code } : { error });
const text = (form: FormMap, name: string): string | undefined => {
  const v: FormField | undefined = form[name];
  return typeof v === 'string' ? v : undefined;
};
/** PHP truthiness of a POST value. */
const truthy = (v: string | undefined): boolean => v !== undefined && v !== '' && v !== '0';
const now = (): number => Math.floor(Date.now() / 1000);
/** Keys the real child's upgrade replies end with (its cache-control module, off on every site it reports). */
const CACHE_CONTROL = {
  mainwp_cache_control_last_purged: 0,
  mainwp_cache_control_cache_solution: 'Plugin Not Found',
  mainwp_cache_control_logs: '{"status":"Disabled","action":"SUCCESS","do_purge":"0"}',
};
/** MySQL DATETIME of unix seconds (the simulated sites run in UTC). */
const mysql = (seconds: number): string => new Date(seconds * 1000).toISOString().slice(0, 19).replace('T', ' ');
const fromMysql = (value: string): number | null => {
  const ms = Date.parse(value.replace(' ', 'T') + 'Z');
  return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
};
const slugify = (s: string): string =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
const fromBase64 = (v: string | undefined): string => Buffer.from(v ?? '', 'base64').toString('utf8');
const base64 = (v: string): string => Buffer.from(v, 'utf8').toString('base64');
/** PHP json_encode of an associative array: `[]` when empty. */
const phpAssoc = <T>(map: Record<string, T>): Record<string, T> | [] => (Object.keys(map).length > 0 ? map : []);
const parseJsonObject = (raw: string): Record<string, unknown> | null => {
  try {
    const v: unknown = JSON.parse(raw);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
};
const regverifyHash = (key: string): string => createHmac('sha256', 'register-verify').update(key).digest('hex');

// Parsed public keys by PEM, shared by all simulated sites (a benchmark preconnects 1,000 sites to one key).
const publicKeys = new Map<string, KeyObject>();
function publicKey(pem: string): KeyObject | null {
  let key = publicKeys.get(pem);
  if (!key) {
    try {
      key = createPublicKey(pem);
    } catch {
      return null;
    }
    if (publicKeys.size >= 10_000) publicKeys.clear();
    publicKeys.set(pem, key);
  }
  return key;
}

interface StatsOptions {
  optimize: boolean;
  othersData: boolean;
  lastCreated: number;
  admin: string;
  /** params_logs[events_count] (0: not asked) and params_logs[newer_than] (unix seconds). */
  logsCount: number;
  logsNewerThan: number;
}

type Callable = (form: FormMap, user: SimUser) => SimReply;

/** A package the simulated WordPress downloaded from outside the simulator's directory (server.ts reads it). */
export interface SimDownload {
  type: 'plugin' | 'theme';
  slug: string;
  name: string;
  version: string;
  /** Plugins: folder/file.php. */
  main: string;
}

export class SimSite {
  /** Set by the server before an installplugintheme: the packages it downloaded for it, by URL. */
  downloads = new Map<string, SimDownload | null>();
  /** Set by the `bad_signature` fault: every signature check fails, as if the stored key did not match. */
  rejectSignatures = false;
  // The signed `stats` reply is most of the traffic: keep the encoded envelope until the state changes.
  private statsCache = { rev: -1, entries: new Map<string, Buffer>() };
  private readonly callables: Record<string, Callable> = {
    stats: (f, u) => this.stats(f, u),
    get_all_plugins: (f) => this.listInstalled(f, 'plugins'),
    get_all_themes: (f) => this.listInstalled(f, 'themes'),
    plugin_action: (f, u) => this.pluginAction(f, u),
    theme_action: (f, u) => this.themeAction(f, u),
    security: () => reply(this.securityStats()),
    upgradeplugintheme: (f, u) => this.upgradePluginTheme(f, u),
    installplugintheme: (f) => this.installPluginTheme(f),
    upgradetranslation: (f, u) => this.upgradeTranslation(f, u),
    upgrade: () => this.upgradeCore(),
    search_users: (f) => this.searchUsers(f),
    get_all_users: (f) => reply(this.usersWithRoles(text(f, 'role') ?? '')),
    user_action: (f, u) => this.userAction(f, u),
    newuser: (f) => this.newUser(f),
    newadminpassword: (f, u) => this.newAdminPassword(f, u),
    get_all_posts: (f) => this.listPosts(f, text(f, 'post_type') ?? 'post'),
    get_all_pages: (f) => this.listPosts(f, 'page'),
    post_action: (f) => this.postAction(f),
    newpost: (f, u) => this.newPost(f, u),
    disconnect: () => {
      this.clearConnection();
      return reply({ result: 'success' });
    },
    deactivate: () => {
      this.clearConnection();
      this.state.childActive = false;
      for (const p of this.state.plugins) if (p.isChild) p.active = false;
      this.changed();
      return reply({ deactivated: true });
    },
  };

  constructor(readonly state: SimSiteState) {}

  private changed(): void {
    this.state.rev++;
  }

  clearConnection(): void {
    Object.assign(this.state.connection, { pubkeyPem: null, server: null, admin: null, signAlgo: null });
  }

  /** wp-admin sessions the single sign-on opened: cookie value → login (the newest 100). */
  private readonly adminSessions = new Map<string, string>();

  /**
   * §10.1 single sign-on ("Open WP Admin"), a GET with login_required=1: when `where` + nonce carry the dashboard's
   * signature and `user` is an administrator, a new wp-admin session (its cookie value); else null, and the page is
   * served as it would be anyway (the real child's parse_login_required returns false).
   */
  loginRequired(q: FormMap): string | null {
    if (!this.state.childActive) return null;
    const signature = text(q, 'mainwpsignature');
    if (!signature) return null;
    if (this.verify(rawurldecode(text(q, 'where') ?? '') + (text(q, 'nonce') ?? ''), signature, q) !== true) return null;
    const user = this.user(text(q, 'user') === undefined ? undefined : rawurldecode(text(q, 'user')!));
    if (user?.role !== 'administrator') return null;
    const cookie = randomBytes(16).toString('hex');
    this.adminSessions.set(cookie, user.login);
    if (this.adminSessions.size > 100) this.adminSessions.delete(this.adminSessions.keys().next().value!);
    return cookie;
  }

  /** The login a wp-admin session cookie belongs to, or null. */
  adminSession(cookie: string | undefined): string | null {
    return (cookie && this.adminSessions.get(cookie)) || null;
  }

  private user(login: string | undefined): SimUser | undefined {
    return login === undefined ? undefined : this.state.users.find((u) => u.login === login);
  }

  /**
   * What WordPress does with a request the child does not answer: admin-ajax says `0`/400, the front end renders —
   * the home page, the login page, the sample page — as broken as a broken update left it (state.frontEnd).
   */
  private notHandled(adminAjax: boolean, path = '/'): SimReply {
    if (adminAjax) return { status: 400, body: '0', envelope: false };
    const name = `Simulated site ${this.state.index}`;
    const broken = this.state.frontEnd?.effect;
    if (broken === 'fatal') return { status: 500, body: WP_FATAL_PAGE, envelope: false };
    const login = path === '/wp-login.php';
    const page = (title: string, body: string) =>
      `<!DOCTYPE html>\n<html lang="en-US"><head><meta charset="UTF-8"><title>${title}</title></head><body>${body}</body></html>\n`;
    if (login)
      return {
        status: 200,
        body: page(`Log In &lsaquo; ${name} &#8212; WordPress`, '<form name="loginform" id="loginform" method="post"></form>'),
        envelope: false,
      };
    if (broken === 'no_title')
      return { status: 200, body: page('Notice', `<p>${this.state.frontEnd!.by} replaced this page</p>`), envelope: false };
    const php =
      broken === 'php_error'
        ? `<br />\n<b>Fatal error</b>:  Uncaught Error: Call to undefined function in /var/www/wp-content/plugins/${this.state.frontEnd!.by}.php:12<br />\n`
        : '';
    const title = path === '/sample-page/' ? `Sample Page &#8211; ${name}` : `${name} &#8211; Just another WordPress site`;
    return { status: 200, body: page(title, `${php}<h1>${name}</h1><p>Just another WordPress site</p>`), envelope: false };
  }

  /** An update of `slug` was installed: the front end breaks if it was set to (sim.breakOnUpdate). */
  private installed(slug: string): void {
    const effect = this.state.breakOnUpdate[slug];
    if (effect) this.state.frontEnd = { effect, by: slug };
  }

  /** The §6 pipeline, step A then step B. `path` is the front-end page asked for (not admin-ajax). */
  handle(form: FormMap, adminAjax: boolean, path = '/'): SimReply {
    if (!this.state.childActive) return this.notHandled(adminAjax, path);
    const signature = text(form, 'mainwpsignature');
    let auth = false;
    let current: SimUser | undefined;
    // Step A (init priority 1): only when the signature is non-empty.
    if (signature) {
      const fn =
        text(form, 'function') || rawurldecode(text(form, 'where') || text(form, 'f') || text(form, 'file') || text(form, 'fdl') || '');
      const verdict = this.verify(fn + (text(form, 'nonce') ?? ''), signature, form);
      if (verdict === 'downgrade') return fail(MSG.sha1Downgrade);
      if (!verdict) return fail(MSG.authFailed);
      auth = true;
      if (text(form, 'function') && text(form, 'user') !== undefined) {
        const alt = this.user(text(form, 'alt_user'));
        current = alt?.role === 'administrator' ? alt : this.user(text(form, 'user'));
        if (!current) return fail(MSG.unexisting);
        if (current.role !== 'administrator') return fail(MSG.notAdmin);
      }
    }
    // Step B (init priority 9999).
    const fn = text(form, 'function') ?? '';
    if (fn === 'register') return this.register(form);
    if (!auth && 'mainwpsignature' in form) return fail(MSG.parse1, 'PARSE_ERROR1');
    if (auth) {
      if (!current) return fail(MSG.unexisting, 'PARSE_ERROR3');
      const callable = this.callables[fn];
      if (callable) return callable(form, current);
      if (fn !== '') return fail(MSG.incompatible, 'child_plugin_incompatible');
    } else if (fn === 'stats') {
      // Unauthenticated stats: the preflight (§7.1).
      const { connection: conn, childVersion, wpVersion } = this.state;
      return conn.pubkeyPem ? fail(MSG.linked) : reply({ version: childVersion, wpversion: wpVersion, wpe: 0, wphost: '' });
    }
    return this.notHandled(adminAjax, path);
  }

  /** §4.2–§4.4: true, false, or 'downgrade' (SHA-1 asked for after a stronger algorithm was stored). */
  private verify(data: string, signatureField: string, form: FormMap): boolean | 'downgrade' {
    const conn = this.state.connection;
    if (!conn.pubkeyPem || this.rejectSignatures) return false;
    const key = publicKey(conn.pubkeyPem);
    if (!key) return false;
    const signature = Buffer.from(rawurldecode(signatureField), 'base64');
    if (truthy(text(form, 'verifylib'))) return verifySignature(data, signature, key, 'pss');
    const requested = text(form, 'sign_algo');
    if (requested === undefined || requested === '') return conn.signAlgo === null && verifySignature(data, signature, key, SHA1);
    const algo = /^\d+$/.test(requested) ? Number(requested) : NaN;
    if (SIGN_ALGOS[algo] === undefined) return false;
    if (conn.signAlgo !== null && conn.signAlgo !== SHA1 && algo === SHA1) return 'downgrade';
    if (!verifySignature(data, signature, key, algo)) return false;
    // Lock in the first explicit algorithm; later upgrades replace it, downgrades never do.
    if (conn.signAlgo === null || (conn.signAlgo !== algo && algo !== SHA1)) conn.signAlgo = algo;
    return true;
  }

  // ---- registration (§7.3) ----

  private passwordAuthOn(login: string): boolean {
    return this.state.passwordAuth[login] ?? true;
  }

  private checkRegverify(login: string, value: string): boolean {
    const [key, secret] = value.split('-');
    if (!key || !secret) return false;
    const record = (this.state.regverify[login] ?? []).find((r) => r.hashKey === regverifyHash(key));
    if (!record) return false;
    const a = Buffer.from(record.secure);
    const b = Buffer.from(secret);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  private issueRegverify(login: string): string {
    const key = randomBytes(20).toString('hex');
    const secure = randomBytes(20).toString('hex');
    this.state.regverify[login] = [...(this.state.regverify[login] ?? []), { hashKey: regverifyHash(key), secure, date: now() }].slice(-5);
    return `${key}-${secure}`;
  }

  private register(form: FormMap): SimReply {
    const { connection: conn } = this.state;
    const login = text(form, 'user') ?? '';
    const pubkey = text(form, 'pubkey') ?? '';
    if (!login || !pubkey) return fail(MSG.reg1, 'REG_ERROR1');
    const server = text(form, 'server') ?? '';
    const sameDashboard = login === conn.admin && server !== '' && server === conn.server;
    if (conn.pubkeyPem && !sameDashboard)
      return this.passwordAuthOn(login) ? fail(MSG.reg2, 'REG_ERROR2') : fail(MSG.reg10Forced, 'REG_ERROR10');
    if (this.state.uniqueId !== '') {
      const uniqueId = text(form, 'uniqueId') ?? '';
      if (uniqueId === '') return fail(MSG.reg3, 'REG_ERROR3');
      if (uniqueId !== this.state.uniqueId) return fail(MSG.reg4, 'REG_ERROR4');
    }
    const modern = versionAtLeast(text(form, 'mainwpver') ?? '0', '5.3');
    const password = rawurldecode(text(form, 'userpwd') ?? '').trim();
    const regverifySent = 'regverify' in form;
    const regverifyValid = regverifySent && this.checkRegverify(login, text(form, 'regverify') ?? '');
    const account = this.user(login);
    if (this.passwordAuthOn(login)) {
      if (password === '' && !modern && !regverifySent) return fail(MSG.reg10Old, 'REG_ERROR10');
      const passed = password !== '' ? account?.password === password : regverifyValid;
      if (!passed) return regverifySent && password === '' ? fail(MSG.reconnect, 'reconnect_failed') : fail(MSG.reg7, 'REG_ERROR7');
    }
    if (!account) return fail(MSG.reg8, 'REG_ERROR8');
    if (account.role !== 'administrator') return fail(MSG.reg9, 'REG_ERROR9');
    Object.assign(conn, { pubkeyPem: pubkey, server: server || null, admin: login });
    // A valid regverify keeps the dashboard's key; otherwise a new one is issued (§7.7).
    const issued = modern && !regverifyValid ? this.issueRegverify(login) : undefined;
    const stats = this.statsPayload({ optimize: false, othersData: false, lastCreated: 0, admin: login, logsCount: 0, logsNewerThan: 0 });
    return reply({ ...(issued ? { regverify: issued } : {}), register: 'OK', uniqueId: this.state.uniqueId, user: login, ...stats });
  }

  // ---- stats (§9.1) ----

  private stats(form: FormMap, user: SimUser): SimReply {
    const conn = this.state.connection;
    const syncdata = parseJsonObject(text(form, 'syncdata') ?? '');
    if (syncdata && JSON.stringify(syncdata) !== JSON.stringify(conn.syncdata)) {
      conn.syncdata = syncdata;
      this.changed();
    }
    const server = text(form, 'server');
    if (server && server !== conn.server) conn.server = server;
    const days = Number(text(form, 'numberdaysOutdatePluginTheme'));
    if (Number.isInteger(days) && days > 0 && days !== this.state.outdatedDays) {
      this.state.outdatedDays = days;
      this.changed();
    }
    const logs = form.params_logs;
    const logParams = logs && typeof logs === 'object' && !Array.isArray(logs) ? (logs as Record<string, unknown>) : null;
    const options: StatsOptions = {
      optimize: truthy(text(form, 'optimize')),
      othersData: 'othersData' in form,
      lastCreated: Number(text(form, 'child_actions_last_created')) || 0,
      admin: user.login,
      logsCount: Number(logParams?.events_count) || 0,
      logsNewerThan: Number(logParams?.newer_than) || 0,
    };
    if (truthy(text(form, 'sync_regverify')))
      return reply({ ...this.statsPayload(options), regverify_info: this.issueRegverify(user.login) });
    if (this.statsCache.rev !== this.state.rev) this.statsCache = { rev: this.state.rev, entries: new Map() };
    const key = JSON.stringify(options);
    let body = this.statsCache.entries.get(key);
    if (body === undefined) {
      body = Buffer.from(encodeEnvelope(this.statsPayload(options)), 'latin1');
      this.statsCache.entries.set(key, body);
    }
    return { status: 200, body, envelope: true };
  }

  /** The `sync` embedded in plugin/theme actions: persisted syncdata, this request's `optimize` (§9.1). */
  /**
   * The sync block of an action reply. The real child builds it from WordPress's plugin and theme caches, which are not
   * cleared within the request: items deleted by the action are still listed (inactive). `ghosts` are those items.
   */
  private embeddedSync(form: FormMap, user: SimUser, ghosts: { plugins?: SimPlugin[]; themes?: SimTheme[] } = {}): Record<string, unknown> {
    const out = this.statsPayload({
      optimize: truthy(text(form, 'optimize')),
      othersData: 'othersData' in form,
      lastCreated: 0,
      admin: user.login,
      logsCount: 0,
      logsNewerThan: 0,
    });
    if (ghosts.plugins?.length && Array.isArray(out.plugins))
      out.plugins = [...out.plugins, ...ghosts.plugins.map((p) => this.pluginItem({ ...p, active: false }))];
    if (ghosts.themes?.length && Array.isArray(out.themes))
      out.themes = [...out.themes, ...ghosts.themes.map((t) => this.themeItem({ ...t, active: false }))];
    return out;
  }

  private securityStats(): Record<string, string> {
    const { checks, wpUpdate, plugins, themes } = this.state;
    const parentOfActive = themes.find((t) => t.active)?.parent;
    return {
      db_reporting: checks.db_reporting,
      php_reporting: checks.php_reporting,
      wp_uptodate: wpUpdate ? 'N' : 'Y',
      phpversion_matched: checks.phpversion_matched,
      sslprotocol: checks.sslprotocol,
      debug_disabled: checks.debug_disabled,
      sec_outdated_plugins: plugins.some((p) => p.updateVersion) ? 'N' : 'Y',
      sec_inactive_plugins: plugins.some((p) => !p.active && !p.mu) ? 'N' : 'Y',
      sec_outdated_themes: themes.some((t) => t.updateVersion) ? 'N' : 'Y',
      sec_inactive_themes: themes.some((t) => !t.active && t.slug !== parentOfActive) ? 'N' : 'Y',
    };
  }

  private pluginItem(p: SimPlugin): Record<string, unknown> {
    return {
      mainwp: p.isChild ? 'T' : 'F',
      name: p.name,
      slug: p.slug,
      description: p.description,
      version: p.version,
      active: p.active ? 1 : 0,
      ...(p.mu ? { mu: 1 } : {}),
    };
  }

  private themeItem(t: SimTheme): Record<string, unknown> {
    const active = this.state.themes.find((x) => x.active);
    const item: Record<string, unknown> = {
      name: t.name,
      title: t.name,
      description: `${t.name} theme.`,
      version: t.version,
      active: t.active ? 1 : 0,
      slug: t.slug,
      parent_active: active?.parent === t.slug ? 1 : 0,
    };
    if (active?.parent === t.slug) item.child_theme = active.name;
    if (t.active && t.parent) item.child_active = 1;
    return item;
  }

  private userItem(u: SimUser, role: string = u.role): Record<string, unknown> {
    return {
      id: u.id,
      login: u.login,
      nicename: u.nicename,
      email: u.email,
      registered: mysql(u.registered),
      status: '0',
      display_name: u.display_name,
      role,
      post_count: String(this.state.posts.filter((p) => p.author === u.id && p.type === 'post' && p.status === 'publish').length),
      last_password_change: null,
      password_status: 'DISABLED',
      password_due_time: null,
      password_has_recorded_change: false,
    };
  }

  private postItem(p: SimPost): Record<string, unknown> {
    const author = this.state.users.find((u) => u.id === p.author);
    return {
      id: p.id,
      post_type: p.type,
      status: p.status,
      title: p.title,
      comment_count: String(p.commentCount),
      dts: p.status === 'future' ? p.date : p.modified,
      author: author?.nicename ?? 'removed',
      authorEmail: author?.email ?? '',
      categories: p.categories.join(', '),
      tags: p.tags.join(', '),
    };
  }

  private statsPayload(o: StatsOptions): Record<string, unknown> {
    const s = this.state;
    const sync = s.connection.syncdata;
    // A missing key means "include"; only 1 includes an explicit key (§9.1).
    const include = (k: string): boolean => sync === null || !(k in sync) || sync[k] === 1 || sync[k] === '1';
    const t = now();
    const admin = this.user(o.admin);
    const dbBytes = 4_000_000 + s.posts.length * 20_000 + s.plugins.length * 50_000;
    const out: Record<string, unknown> = {
      version: s.childVersion,
      wpversion: s.wpVersion,
      siteurl: s.siteUrl,
      wpe: 0,
      wphost: '',
      site_info: {
        wpversion: s.wpVersion,
        debug_mode: s.checks.debug_disabled === 'N',
        phpversion: s.phpVersion,
        child_version: s.childVersion,
        memory_limit: '256M',
        mysql_version: '8.0.36',
        db_size: String(Math.round(dbBytes / 1e6)),
        themeactivated: s.themes.find((x) => x.active)?.name ?? '',
        ip: '127.0.0.1',
        child_curl_version: '8.5.0',
        child_openssl_version: 'OpenSSL/3.0.13',
        site_lang: 'en_US',
        site_public: 1,
        format_datetime: { timezone_string: 'UTC', gmt_offset: 0, date_format: 'F j, Y', time_format: 'g:i a' },
      },
    };
    if (include('wp_updates')) out.wp_updates = s.wpUpdate;
    if (include('plugin_updates')) {
      const updates: Record<string, unknown> = {};
      for (const p of s.plugins) {
        if (!p.updateVersion) continue;
        const dir = p.slug.split('/')[0]!.replace(/\.php$/, '');
        updates[p.slug] = {
          Name: p.name,
          PluginURI: '',
          Version: p.version,
          Description: p.description,
          Author: '',
          active: p.active ? 1 : 0,
          update: {
            slug: dir,
            plugin: p.slug,
            new_version: p.updateVersion,
            url: `https://wordpress.org/plugins/${dir}/`,
            package: `https://downloads.wordpress.org/plugin/${dir}.${p.updateVersion}.zip`,
            requires: '6.0',
            tested: s.wpVersion,
            requires_php: '7.4',
          },
        };
      }
      out.plugin_updates = phpAssoc(updates);
    }
    if (include('theme_updates')) {
      const updates: Record<string, unknown> = {};
      for (const x of s.themes) {
        if (!x.updateVersion) continue;
        updates[x.slug] = {
          update: {
            theme: x.slug,
            new_version: x.updateVersion,
            url: `https://wordpress.org/themes/${x.slug}/`,
            package: `https://downloads.wordpress.org/theme/${x.slug}.${x.updateVersion}.zip`,
          },
          Name: x.name,
          Version: x.version,
          active: x.active ? 1 : 0,
        };
      }
      out.theme_updates = phpAssoc(updates);
    }
    if (include('translation_updates')) out.translation_updates = s.translations.map((t) => ({ ...t }));
    if (include('recent_comments')) out.recent_comments = [];
    const recent = (type: 'post' | 'page') =>
      s.posts
        .filter((p) => p.type === type && ['publish', 'draft', 'pending', 'trash', 'future'].includes(p.status))
        .sort((a, b) => b.modified - a.modified)
        .slice(0, 5)
        .map((p) => this.postItem(p));
    if (include('recent_posts')) out.recent_posts = recent('post');
    if (include('recent_pages')) out.recent_pages = recent('page');
    if (include('securityStats')) {
      const security = this.securityStats();
      out.securityIssues = Object.values(security).filter((v) => v === 'N').length;
      out.securityStats = security;
    }
    if (include('directories')) out.directories = '';
    if (include('categories')) {
      out.categories = s.categories;
      out.categories_list = s.categories.map((name, i) => ({ term_id: i + 1, name, slug: slugify(name), taxonomy: 'category', parent: 0 }));
    }
    if (include('dbsize')) out.dbsize = dbBytes;
    out.extauth = null;
    if (include('plugins')) out.plugins = s.plugins.map((p) => this.pluginItem(p));
    if (include('themes')) out.themes = s.themes.map((x) => this.themeItem(x));
    if (include('users') && o.optimize) out.users = s.users.map((u) => this.userItem(u));
    if (include('last_post_gmt')) out.last_post_gmt = Math.max(0, ...s.posts.map((p) => p.modified));
    out.mainwpdir = 1;
    out.uniqueId = s.uniqueId;
    const cutoff = t - s.outdatedDays * DAY;
    const outdated = (items: (SimPlugin | SimTheme)[]) =>
      phpAssoc(
        Object.fromEntries(
          items
            .filter((i) => i.lastUpdated < cutoff && !('mu' in i && i.mu))
            .map((i) => [i.slug, { Name: i.name, Version: i.version, last_updated: i.lastUpdated, outdate_timestamp: t }]),
        ),
      );
    if (include('plugins_outdate_info')) out.plugins_outdate_info = outdated(s.plugins);
    if (include('themes_outdate_info')) out.themes_outdate_info = outdated(s.themes);
    if (include('health_site_status')) out.health_site_status = s.health;
    if (include('child_site_actions_data')) {
      const recentChanges = s.changes.filter((c) => c.created > o.lastCreated);
      if (o.logsCount > 0) {
        // Child 6.x: asked with params_logs, the changes log answers the oldest events_count events newer than
        // newer_than (§9.1).
        // The real child sends both lists, each with its own events: here odd ids go to the log, even ids stay actions.
        const events = s.changes
          .filter((c) => c.id % 2 === 1 && c.created > o.logsNewerThan)
          .sort((a, b) => a.created - b.created)
          .slice(0, o.logsCount);
        out.child_site_actions_data = phpAssoc(
          Object.fromEntries(
            recentChanges
              .filter((c) => c.id % 2 === 0)
              .map((c) => [
                String(c.id),
                {
                  context: c.context,
                  action: c.action,
                  action_user: c.user,
                  created: c.created,
                  summary: c.summary,
                  meta_data: [],
                  duration: 0,
                },
              ]),
          ),
        );
        out.changes_logs_data = phpAssoc(
          Object.fromEntries(
            events.map((c, i) => [
              String(i + 1),
              {
                id: c.id,
                blog_id: 1,
                log_type_id: 1000 + (c.id % 1000),
                created_on: c.created.toFixed(6),
                client_ip: '203.0.113.9',
                context: c.context,
                action_name: c.action,
                user_agent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0',
                user_roles: 'administrator',
                username: c.user,
                user_id: 1,
                duration: 0,
                post_status: '',
                post_type: '',
                post_id: 0,
                meta_data: { name: c.summary },
              },
            ]),
          ),
        );
      } else {
        out.child_site_actions_data = phpAssoc(
          Object.fromEntries(
            recentChanges.map((c) => [
              String(c.id),
              {
                context: c.context,
                action: c.action,
                action_user: c.user,
                created: c.created,
                summary: c.summary,
                meta_data: [],
                duration: 0,
              },
            ]),
          ),
        );
        out.changes_logs_data = '';
      }
    }
    if (admin) {
      out.admin_nicename = admin.nicename;
      out.admin_useremail = admin.email;
    }
    if (o.othersData) {
      out.mainwp_cache_control_last_purged = 0;
      out.mainwp_cache_control_cache_solution = 'Plugin Not Found';
      out.mainwp_cache_control_logs = '';
    }
    if (include('password_policy_options')) {
      out.password_policy_options = {
        max_age_days: '0',
        policy_enabled_at: '0',
        due_soon_days: '7',
        due_soon_message: '',
        overdue_message: '',
        show_notices_to: 'edit_posts',
      };
    }
    return out;
  }

  // ---- plugins and themes (§9.2–§9.4) ----

  private listInstalled(form: FormMap, kind: 'plugins' | 'themes'): SimReply {
    const all = kind === 'plugins' ? this.state.plugins.filter((p) => !p.mu) : this.state.themes;
    const status = text(form, 'status') ?? '';
    const filter = text(form, 'filter');
    // No `filter` field at all still applies the status filter, with "" meaning inactive (§9.2).
    const byStatus = filter === undefined || filter === '1';
    const keywords = (text(form, 'keyword') ?? '')
      .split(',')
      .map((k) => k.trim().toLowerCase())
      .filter(Boolean);
    const invert = text(form, 'not_criteria') === '1';
    const data = all
      .filter((i) => !byStatus || (status === 'active' ? i.active : !i.active))
      .filter((i) => keywords.length === 0 || keywords.some((k) => i.name.toLowerCase().includes(k)) !== invert)
      .map((i) => (kind === 'plugins' ? this.pluginItem(i as SimPlugin) : this.themeItem(i as SimTheme)));
    const out: Record<string, unknown> = { data };
    if (data.length === 0 && text(form, 'not_installed') === '1') {
      out[kind === 'plugins' ? 'installed_plugins' : 'installed_themes'] = all.map((i) =>
        kind === 'plugins' ? this.pluginItem(i as SimPlugin) : this.themeItem(i as SimTheme),
      );
    }
    return reply(out);
  }

  // ---- updates (updates reference §5.2, checked against the real child 6.1 in the real-site lane) ----

  private pendingPlugins(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const p of this.state.plugins) {
      if (!p.updateVersion) continue;
      const dir = p.slug.split('/')[0]!.replace(/\.php$/, '');
      out[p.slug] = {
        Name: p.name,
        Version: p.version,
        update: {
          slug: dir,
          plugin: p.slug,
          new_version: p.updateVersion,
          package: `https://downloads.wordpress.org/plugin/${dir}.${p.updateVersion}.zip`,
        },
      };
    }
    return out;
  }

  private pendingThemes(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const t of this.state.themes) {
      if (t.updateVersion)
        out[t.slug] = {
          update: {
            theme: t.slug,
            new_version: t.updateVersion,
            package: `https://downloads.wordpress.org/theme/${t.slug}.${t.updateVersion}.zip`,
          },
          Name: t.name,
          Version: t.version,
          active: t.active ? 1 : 0,
        };
    }
    return out;
  }

  /**
   * Plugins: a failure is in upgrades_error; an item that is up to date or not installed is reported as `true` (the
   * real child does). Themes: a failure is `false` with the reason only in updated_data; the reply embeds a sync.
   */
  private upgradePluginTheme(form: FormMap, user: SimUser): SimReply {
    const type = text(form, 'type');
    const list = (text(form, 'list') ?? '').split(',').filter(Boolean);
    if ((type !== 'plugin' && type !== 'theme') || (type === 'theme' && !list.length)) return fail('Invalid request!');
    const items: Array<SimPlugin | SimTheme> = type === 'plugin' ? this.state.plugins : this.state.themes;
    const before = type === 'plugin' ? this.pendingPlugins() : this.pendingThemes();
    const upgrades: Record<string, boolean> = {};
    const errors: Record<string, string> = {};
    const codes: Record<string, string> = {};
    const data: Record<string, Record<string, unknown>> = {};
    for (const slug of list) {
      const item = items.find((i) => i.slug === slug);
      const failure = this.state.failingUpdates[slug];
      if (item?.updateVersion && failure) {
        if (type === 'plugin') errors[slug] = failure;
        else upgrades[slug] = false;
        codes[slug] = 'download_failed';
        data[slug] = { name: type === 'plugin' ? item.name : '', old_version: '', slug, success: 0, error: failure, version: item.version };
      } else if (item?.updateVersion) {
        data[slug] = { name: item.name, old_version: item.version, slug, success: 1, version: item.updateVersion };
        item.version = item.updateVersion;
        item.updateVersion = null;
        upgrades[slug] = true;
        this.state.upgradeLog.push(`${type}:${slug}`);
        this.installed(slug);
      } else {
        upgrades[slug] = true;
        data[slug] = { name: item?.name ?? '', old_version: '', slug, success: 1, ...(item ? { version: item.version } : {}) };
      }
    }
    this.changed();
    const out: Record<string, unknown> = {
      upgrades: phpAssoc(upgrades),
      other_data: { updated_data: data, ...(Object.keys(codes).length ? { upgrade_error_codes: codes } : {}) },
    };
    if (Object.keys(errors).length) out.upgrades_error = errors;
    out[type === 'plugin' ? 'plugin_updates' : 'theme_updates'] = phpAssoc(before);
    if (type === 'theme') out.sync = this.embeddedSync(form, user);
    return reply({ ...out, ...CACHE_CONTROL });
  }

  /**
   * `installplugintheme` as child 6.1 answers it (§9.5): each URL is "downloaded" from the simulator's directory
   * (directory.ts). When WordPress cannot install a package (download failed, folder exists without overwrite, no
   * plugin in the zip) the real child goes on to read the WP_Error as an array: a PHP fatal error, HTTP 500 without
   * an envelope, over http:// URLs; over https:// it retries and reports the error with its code.
   */
  private installPluginTheme(form: FormMap): SimReply {
    const type = text(form, 'type');
    const raw = text(form, 'url') ?? '';
    if ((type !== 'plugin' && type !== 'theme') || raw === '')
      return fail('Plugin or theme not specified, or missing required data. Please reload the page and try again.');
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.replace(/\\(.)/g, '$1'));
    } catch {
      parsed = null;
    }
    const urls = (Array.isArray(parsed) ? parsed : [parsed]).map((u) => (typeof u === 'string' ? u : ''));
    const overwrite = truthy(text(form, 'overwrite'));
    const results: Record<string, boolean> = {};
    const items: Array<{ name: string; version: string; slug: string }> = [];
    let destination: string | null = null;
    for (const url of urls) {
      const got = this.downloads.get(url);
      const found: { type: 'plugin' | 'theme'; slug: string; version: string; main?: string; pkg: SimPackage } | null =
        packageAt(url) ??
        (got && got.type === type
          ? {
              type: got.type,
              slug: got.slug,
              version: got.version,
              main: got.main,
              pkg: {
                name: got.name,
                author: '',
                description: `${got.name}.`,
                versions: [got.version],
                stable: got.version,
                requires_php: null,
              },
            }
          : null);
      const slug = found?.slug ?? '';
      const file = found?.main ?? `${slug}/${slug}.php`;
      const exists =
        type === 'plugin' ? this.state.plugins.some((p) => p.slug.startsWith(`${slug}/`)) : this.state.themes.some((t) => t.slug === slug);
      const failure =
        !found || found.type !== type || found.pkg.broken
          ? 'incompatible_archive'
          : this.state.failingUpdates[slug]
            ? 'download_failed'
            : exists && !overwrite
              ? 'folder_exists'
              : null;
      if (failure) {
        if (url.startsWith('https://'))
          return fail(
            failure === 'folder_exists' ? 'Destination folder already exists.' : (this.state.failingUpdates[slug] ?? ''),
            failure,
          );
        return { status: 500, body: FATAL_PAGE, envelope: false };
      }
      const { pkg, version } = found!;
      const basename = decodeURIComponent(url.split('/').pop() ?? '');
      results[basename] = true;
      destination = slug;
      const now_ = now();
      if (type === 'plugin') {
        const was = this.state.plugins.find((p) => p.slug.startsWith(`${slug}/`));
        const active = (was?.active ?? false) || text(form, 'activatePlugin') === 'yes';
        this.state.plugins = this.state.plugins.filter((p) => p !== was);
        this.state.plugins.push({
          slug: file,
          name: pkg.name,
          description: pkg.description,
          version,
          active,
          mu: false,
          isChild: false,
          updateVersion: null,
          lastUpdated: now_,
        });
        items.push({ name: pkg.name, version, slug: file });
      } else {
        const was = this.state.themes.find((t) => t.slug === slug);
        this.state.themes = this.state.themes.filter((t) => t !== was);
        this.state.themes.push({
          slug,
          name: pkg.name,
          version,
          active: was?.active ?? false,
          parent: pkg.template ?? null,
          updateVersion: null,
          lastUpdated: now_,
        });
        items.push({ name: pkg.name, slug, version });
      }
      this.state.upgradeLog.push(`install:${type}:${slug}:${version}`);
      // Another version of the code that broke the front end replaces it (a rollback): the site renders again.
      const by = this.state.frontEnd?.by;
      if (by && (by === slug || by.startsWith(`${slug}/`))) this.state.frontEnd = null;
    }
    this.changed();
    return reply({
      installation: 'SUCCESS',
      destination_name: destination,
      install_results: phpAssoc(results),
      other_data: { install_items: items },
    });
  }

  private upgradeTranslation(form: FormMap, user: SimUser): SimReply {
    const list = new Set((text(form, 'list') ?? '').split(',').filter(Boolean));
    const upgrades: Record<string, boolean> = {};
    const data: Record<string, unknown> = {};
    for (const t of this.state.translations.filter((x) => list.has(x.slug))) {
      const failure = this.state.failingUpdates[t.slug];
      upgrades[t.slug] = !failure;
      data[t.slug] = { name: t.name, slug: t.slug, type: t.type, version: t.version, success: failure ? 0 : 1 };
      if (failure) continue;
      this.state.upgradeLog.push(`translation:${t.slug}:${t.language}`);
      this.installed(`translation:${t.slug}`);
    }
    this.state.translations = this.state.translations.filter((t) => !upgrades[t.slug]);
    this.changed();
    return reply({ upgrades: phpAssoc(upgrades), other_data: { updated_data: phpAssoc(data) }, sync: this.embeddedSync(form, user) });
  }

  /** Nothing on offer: SUCCESS without versions (WordPress says "latest"), as the real child answers. */
  private upgradeCore(): SimReply {
    const s = this.state;
    if (!s.wpUpdate) return reply({ upgrade: 'SUCCESS', ...CACHE_CONTROL });
    if (s.failingUpdates.wordpress) return reply({ upgrade: 'WPERROR', ...CACHE_CONTROL });
    const old = s.wpVersion;
    s.wpVersion = s.wpUpdate;
    s.wpUpdate = null;
    s.upgradeLog.push('core:wordpress');
    this.installed('wordpress');
    this.changed();
    return reply({ upgrade: 'SUCCESS', old_version: old, version: s.wpVersion, ...CACHE_CONTROL });
  }

  private pluginAction(form: FormMap, user: SimUser): SimReply {
    const action = text(form, 'action') ?? '';
    if (!['activate', 'deactivate', 'delete'].includes(action))
      return reply({ status: 'FAIL', sync: this.embeddedSync(form, user), other_data: [] });
    const files = (text(form, 'plugin') ?? '').split('||').filter(Boolean);
    const done: Record<string, { name: string; version: string; slug: string; created?: number }> = {};
    const deactivated: Record<string, { name: string; version: string; slug: string; created: number }> = {};
    const ghosts: SimPlugin[] = [];
    for (const file of files) {
      const plugin = this.state.plugins.find((p) => p.slug === file && !p.mu);
      // The child never acts on itself (§9.3).
      if (!plugin || plugin.isChild) continue;
      const item: { name: string; version: string; slug: string; created?: number } = {
        name: plugin.name,
        version: plugin.version,
        slug: plugin.slug,
      };
      if (action === 'delete') {
        if (plugin.active) deactivated[file] = { ...item, created: now() };
        item.created = now();
        this.state.plugins = this.state.plugins.filter((p) => p !== plugin);
        ghosts.push(plugin);
      } else {
        plugin.active = action === 'activate';
      }
      // The plugin that broke the front end no longer runs: the site renders again.
      if (action !== 'activate' && this.state.frontEnd?.by === file) this.state.frontEnd = null;
      done[file] = item;
    }
    if (files.length > 0) this.changed();
    const otherData: Record<string, unknown> = { plugin_action_data: phpAssoc(done), duration_bulk: Object.keys(done).length };
    if (Object.keys(deactivated).length > 0) otherData.plugin_deactivated_data = deactivated;
    return reply({ status: 'SUCCESS', sync: this.embeddedSync(form, user, { plugins: ghosts }), other_data: otherData });
  }

  private themeAction(form: FormMap, user: SimUser): SimReply {
    const s = this.state;
    const action = text(form, 'action') ?? '';
    const theme = text(form, 'theme') ?? '';
    const done: Record<string, { name: string; version: string; slug: string }> = {};
    const out: Record<string, unknown> = {};
    let previous: Record<string, { name: string; version: string; slug: string }> = {};
    const ghostThemes: SimTheme[] = [];
    const active = s.themes.find((t) => t.active);
    if (action === 'activate') {
      const target = s.themes.find((t) => t.slug === theme);
      if (target) {
        if (active) {
          previous = { [active.name]: { name: active.name, version: active.version, slug: active.slug } };
          active.active = false;
        }
        target.active = true;
        done[theme] = { name: target.name, version: target.version, slug: target.slug };
      }
    } else if (action === 'delete') {
      const slugs = theme.split('||').filter(Boolean);
      const refuse = (slug: string): boolean => {
        if (slug === active?.slug) out.error = { is_activated_theme: slug };
        else if (slug === active?.parent) out.error = { is_activated_parent: slug };
        else return false;
        return true;
      };
      // A single protected slug gets only the error object, no status and no sync (§9.4).
      if (slugs.length === 1 && refuse(slugs[0]!)) return reply(out);
      for (const slug of slugs) {
        if (refuse(slug)) continue;
        const target = s.themes.find((t) => t.slug === slug);
        if (!target) continue;
        s.themes = s.themes.filter((t) => t !== target);
        ghostThemes.push(target);
        done[slug] = { name: target.name, version: target.version, slug: target.slug };
      }
    } else {
      out.status = 'FAIL';
    }
    if (Object.keys(done).length > 0) this.changed();
    out.status ??= 'SUCCESS';
    out.sync = this.embeddedSync(form, user, { themes: ghostThemes });
    out.other_data = {
      theme_action_data: phpAssoc(done),
      ...(Object.keys(previous).length > 0 ? { theme_deactivate_data: previous } : {}),
    };
    return reply(out);
  }

  // ---- users (§9.7–§9.10) ----

  private usersWithRoles(roles: string): Record<string, unknown>[] {
    // get_all_users queries role by role, so a user appears under the queried role name.
    return roles
      .split(',')
      .filter(Boolean)
      .flatMap((role) => this.state.users.filter((u) => u.role === role).map((u) => ({ ...this.userItem(u, role), avatar: AVATAR })));
  }

  private searchUsers(form: FormMap): SimReply {
    const raw = text(form, 'search') ?? '';
    const term = raw.replace(/^\*|\*$/g, '').toLowerCase();
    const matches = (value: string): boolean => {
      const v = value.toLowerCase();
      if (raw.startsWith('*') && raw.endsWith('*')) return v.includes(term);
      if (raw.startsWith('*')) return v.endsWith(term);
      if (raw.endsWith('*')) return v.startsWith(term);
      return v === term;
    };
    const roles = (text(form, 'role') ?? '').split(',').filter(Boolean);
    const columns: Record<string, (u: SimUser) => string> = {
      user_login: (u) => u.login,
      display_name: (u) => u.display_name,
      user_email: (u) => u.email,
      user_nicename: (u) => u.nicename,
      user_url: (u) => u.url,
    };
    const found: SimUser[] = [];
    for (const column of (text(form, 'search_columns') ?? '').split(',')) {
      const read = columns[column];
      if (!read) continue;
      for (const u of this.state.users) {
        if (!found.includes(u) && matches(read(u)) && (roles.length === 0 || roles.includes(u.role))) found.push(u);
      }
    }
    return reply(found.map((u) => ({ ...this.userItem(u), avatar: AVATAR })));
  }

  private userAction(form: FormMap, current: SimUser): SimReply {
    const s = this.state;
    const action = text(form, 'action') ?? '';
    const idText = text(form, 'id') ?? '';
    const target = s.users.find((u) => String(u.id) === idText);
    const usersData = (u: SimUser | undefined, extra: Record<string, unknown> = {}) =>
      u ? { users_data: { user_id: idText, display_name: u.display_name, roles: u.role, ...extra } } : { users_data: [] };
    switch (action) {
      case 'delete': {
        if (target) {
          for (const p of s.posts) if (p.author === target.id) p.author = current.id;
          s.users = s.users.filter((u) => u !== target);
          this.changed();
        }
        return reply({ status: 'SUCCESS', other_data: usersData(target) });
      }
      case 'changeRole': {
        const role = text(form, 'extra') ?? '';
        const old = target?.role;
        if (target && (ROLES as readonly string[]).includes(role)) {
          target.role = role as Role;
          this.changed();
        }
        return reply({ status: 'SUCCESS', other_data: usersData(target, { old_roles: old ?? '' }) });
      }
      case 'update_password': {
        if (target) target.password = text(form, 'user_pass') ?? target.password;
        return reply({ status: 'SUCCESS', other_data: usersData(target) });
      }
      case 'edit': {
        if (!target) return reply({ status: 'FAIL' });
        return reply({
          status: 'SUCCESS',
          user_data: {
            role: target.role,
            first_name: target.first_name,
            last_name: target.last_name,
            nickname: target.nickname,
            public_display: { display_nickname: target.nickname, display_username: target.login },
            display_name: target.display_name,
            user_email: target.email,
            user_url: target.url,
            contact_methods: [],
            description: target.description,
          },
          other_data: usersData(target),
        });
      }
      case 'update_user': {
        const extra = form.extra;
        if (extra === undefined || typeof extra === 'string') return reply({ status: 'FAIL' });
        const fields: Record<string, string> = {};
        for (const [k, v] of Object.entries(extra))
          if (typeof v === 'string' && v !== 'donotupdate' && (v !== '' || k === 'role')) fields[k] = v;
        const error = this.updateUser(target, fields);
        if (error) return reply({ error });
        return reply({
          status: 'SUCCESS',
          other_data: usersData(target),
          ...(truthy(text(form, 'optimize')) ? { users: s.users.map((u) => this.userItem(u)) } : {}),
        });
      }
      default:
        return reply({ status: 'FAIL' });
    }
  }

  /** WordPress's edit_user() checks, in its order; returns the child's error text or null. */
  private updateUser(target: SimUser | undefined, fields: Record<string, string>): string | null {
    if (!target) return ' ERROR: Please enter a username.';
    if (fields.role !== undefined && fields.role !== '' && !(ROLES as readonly string[]).includes(fields.role))
      return 'You can&#8217;t give users that role.';
    const email = fields.email?.trim() || target.email;
    const errors: string[] = [];
    if ((fields.pass1 ?? '') !== (fields.pass2 ?? '')) errors.push('ERROR: Please enter the same password in both password fields.');
    if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) errors.push('ERROR: The email address isn&#8217;t correct.');
    else if (this.state.users.some((u) => u !== target && u.email.toLowerCase() === email.toLowerCase()))
      errors.push('ERROR: This email is already registered, please choose another one.');
    if (errors.length > 0) return errors.map((e) => ' ' + e).join('');
    target.email = email;
    if (fields.role) target.role = fields.role as Role;
    if (fields.url !== undefined) target.url = fields.url;
    if (fields.first_name !== undefined) target.first_name = fields.first_name;
    if (fields.last_name !== undefined) target.last_name = fields.last_name;
    if (fields.nickname) target.nickname = fields.nickname;
    if (fields.display_name !== undefined) target.display_name = fields.display_name;
    if (fields.description !== undefined) target.description = fields.description.trim();
    if (fields.pass1) target.password = fields.pass1;
    this.changed();
    return null;
  }

  private newUser(form: FormMap): SimReply {
    const data = parseJsonObject(fromBase64(text(form, 'new_user'))) ?? {};
    const str = (k: string): string => (typeof data[k] === 'string' ? (data[k] as string) : '');
    const login = str('user_login').trim();
    if (login === '') return fail('Cannot create a user with an empty login name.');
    if (this.user(login)) return fail('Sorry, that username already exists!');
    const email = str('user_email').trim();
    if (email !== '' && this.state.users.some((u) => u.email.toLowerCase() === email.toLowerCase()))
      return fail('Sorry, that email address is already used!');
    const role: Role = (ROLES as readonly string[]).includes(str('role')) ? (str('role') as Role) : 'subscriber';
    const first = str('first_name');
    const last = str('last_name');
    const user: SimUser = {
      id: this.state.nextId.user++,
      login,
      password: str('user_pass'),
      email,
      nicename: slugify(login) || login,
      display_name: [first, last].filter(Boolean).join(' ') || login,
      first_name: first,
      last_name: last,
      nickname: login,
      url: str('user_url'),
      description: '',
      role,
      registered: now(),
    };
    this.state.users.push(user);
    this.changed();
    return reply({ added: true, other_data: { new_user_data: { user_id: user.id, display_name: user.display_name, roles: user.role } } });
  }

  private newAdminPassword(form: FormMap, current: SimUser): SimReply {
    const password = fromBase64(text(form, 'new_password'));
    if (password === '') return fail('Administrator password could not be changed.');
    current.password = password;
    return reply({
      added: true,
      other_data: { update_admin_password: { display_name: current.display_name, user_id: current.id, roles: current.role } },
    });
  }

  // ---- posts (§9.11–§9.13) ----

  private listPosts(form: FormMap, type: string): SimReply {
    const statuses = text(form, 'status');
    if (statuses === undefined) return reply('');
    const max = 'maxRecords' in form ? Number(text(form, 'maxRecords')) || 0 : 50;
    const postId = text(form, 'postId');
    const userId = text(form, 'userId');
    const keyword = text(form, 'keyword')?.toLowerCase();
    const searchOn = text(form, 'search_on') ?? '';
    const start = text(form, 'dtsstart') ?? '';
    const stop = text(form, 'dtsstop') ?? '';
    const matches = (p: SimPost): boolean => {
      if (postId !== undefined) return String(p.id) === postId;
      if (userId !== undefined) return String(p.author) === userId;
      if (keyword !== undefined) {
        const inTitle = p.title.toLowerCase().includes(keyword);
        const inContent = p.content.toLowerCase().includes(keyword);
        if (!(searchOn === 'title' ? inTitle : searchOn === 'content' ? inContent : inTitle || inContent)) return false;
      }
      const modified = mysql(p.modified);
      return (start === '' || modified > start) && (stop === '' || modified < stop);
    };
    // One query per status, newest first, each capped at maxRecords — as the child does.
    const out = statuses.split(',').flatMap((status) =>
      this.state.posts
        .filter((p) => p.type === type && p.status === status && matches(p))
        .sort((a, b) => b.modified - a.modified)
        .slice(0, max === 0 ? undefined : max)
        .map((p) => this.postItem(p)),
    );
    return reply(out);
  }

  private postData(p: SimPost, oldStatus: string): Record<string, unknown> {
    return {
      post_id: p.id,
      post_type: p.type,
      post_title: p.title,
      post_date: mysql(p.date),
      post_date_gmt: p.date ? mysql(p.date) : '0000-00-00 00:00:00',
      new_status: p.status,
      old_status: oldStatus,
      singular_name: p.type,
    };
  }

  private editPayload(p: SimPost, asPost: boolean): Record<string, string> {
    const newPost: Record<string, unknown> = {
      edit_id: String(p.id),
      post_title: p.title,
      post_content: p.content,
      post_status: p.status,
      post_date: mysql(p.date || p.modified),
      post_date_gmt: p.date ? mysql(p.date) : '0000-00-00 00:00:00',
      post_name: p.name,
      post_excerpt: p.excerpt,
      comment_status: p.commentStatus,
      // The real child's page reader says "page" whatever the id names (a post too).
      ping_status: p.pingStatus,
      post_type: asPost ? p.type : 'page',
      post_password: p.password,
    };
    if (asPost) Object.assign(newPost, { is_sticky: p.sticky ? 1 : 0, post_tags: p.tags.join(', ') });
    const uploads = {
      path: '/var/www/html/wp-content/uploads',
      url: `${this.state.siteUrl}/wp-content/uploads`,
      subdir: '',
      basedir: '/var/www/html/wp-content/uploads',
      baseurl: `${this.state.siteUrl}/wp-content/uploads`,
      error: false,
    };
    return {
      new_post: base64(JSON.stringify(newPost)),
      post_custom: base64(JSON.stringify(Object.keys(p.custom).length > 0 ? p.custom : [])),
      ...(asPost ? { post_category: base64(p.categories.join(', ')) } : {}),
      // get_post_thumbnail_id() is 0 without a featured image.
      post_featured_image: base64(p.featuredImage ?? '0'),
      post_gallery_images: base64('[]'),
      child_upload_dir: base64(JSON.stringify(uploads)),
    };
  }

  private postAction(form: FormMap): SimReply {
    const s = this.state;
    const action = text(form, 'action') ?? '';
    const post = s.posts.find((p) => String(p.id) === (text(form, 'id') ?? ''));
    const t = now();
    let status = 'SUCCESS';
    let data: Record<string, unknown> | [] = [];
    let myPost: unknown = [];
    const move = (p: SimPost, to: string) => {
      const old = p.status;
      p.status = to;
      p.modified = t;
      data = this.postData(p, old);
      this.changed();
    };
    switch (action) {
      case 'publish':
        if (!post) status = 'FAIL';
        else {
          // A scheduled post is published now, with its date reset (§9.12).
          if (post.status === 'future') post.date = t;
          move(post, 'publish');
        }
        break;
      case 'unpublish':
        // The only action that echoes what it did in my_post (the post's ID as a string).
        myPost = { ID: text(form, 'id') ?? '', post_status: 'draft' };
        if (post) move(post, 'draft');
        break;
      case 'trash':
        if (post && post.status !== 'trash') move(post, 'trash');
        break;
      case 'restore':
        // WordPress ≥ 5.6 restores to draft.
        if (post && post.status === 'trash') move(post, 'draft');
        break;
      case 'delete':
        if (post) {
          s.posts = s.posts.filter((p) => p !== post);
          data = { post_type: post.type, post_title: post.title, singular_name: post.type };
          this.changed();
        }
        break;
      case 'get_edit':
        myPost = post ? this.editPayload(post, text(form, 'post_type') === 'post') : false;
        if (post) data = this.postData(post, post.status);
        break;
      default:
        status = 'FAIL';
    }
    return reply({ status, other_data: { post_action_data: data }, my_post: myPost });
  }

  private newPost(form: FormMap, current: SimUser): SimReply {
    const s = this.state;
    const data = parseJsonObject(fromBase64(text(form, 'new_post')));
    if (!data) return fail('Undefined error');
    const custom = parseJsonObject(fromBase64(text(form, 'post_custom'))) ?? {};
    const str = (k: string): string | undefined =>
      typeof data[k] === 'string' ? (data[k] as string) : typeof data[k] === 'number' ? String(data[k]) : undefined;
    const firstOf = (k: string): unknown => (Array.isArray(custom[k]) ? (custom[k] as unknown[])[0] : undefined);
    const type = str('post_type') === 'page' ? 'page' : 'post';
    const editId = Number(firstOf('_mainwp_edit_post_id')) || Number(str('ID')) || 0;
    const t = now();
    let post: SimPost | undefined;
    let oldStatus = '';
    if (editId) {
      post = s.posts.find((p) => p.id === editId && p.type === type);
      if (!post) return fail('Empty post id');
      oldStatus = post.status;
    } else {
      post = {
        id: s.nextId.post++,
        type,
        status: 'draft',
        title: '',
        content: '',
        name: '',
        excerpt: '',
        password: '',
        date: 0,
        modified: t,
        author: current.id,
        categories: [],
        tags: [],
        commentCount: 0,
        commentStatus: 'open',
        pingStatus: 'closed',
        sticky: false,
        featuredImage: null,
        custom: {},
      };
      s.posts.push(post);
    }
    post.title = str('post_title') ?? '';
    post.content = str('post_content') ?? '';
    post.status = str('post_status') || 'draft';
    post.excerpt = str('post_excerpt') ?? '';
    post.password = str('post_password') ?? '';
    post.commentStatus = str('comment_status') || 'open';
    post.pingStatus = str('ping_status') || 'closed';
    post.name = str('post_name') || slugify(post.title) || String(post.id);
    post.modified = t;
    // The child creates a post as an auto-draft and then sets its status: WordPress keeps a new post's date only when
    // post_date_gmt is set, else dates it now (so a "future" post is published at once). An edit keeps post_date.
    const gmt = fromMysql(str('post_date_gmt') ?? '');
    const date = editId ? (gmt ?? fromMysql(str('post_date') ?? '')) : gmt;
    post.date = date ?? (editId ? (post.status === 'draft' ? 0 : post.date || t) : post.status === 'draft' ? 0 : t);
    if (post.status === 'future' && post.date <= t) post.status = 'publish';
    else if (post.status === 'publish' && post.date > t) post.status = 'future';
    const categories = rawurldecode(fromBase64(text(form, 'post_category')))
      .split(',')
      .map((c) => c.trim())
      .filter(Boolean);
    const onlyExisting = firstOf('_post_to_only_existing_categories') !== undefined;
    const chosen = categories.filter((c) => !onlyExisting || s.categories.includes(c));
    for (const c of chosen) if (!s.categories.includes(c)) s.categories.push(c);
    if (type === 'post' && (chosen.length > 0 || !editId)) post.categories = chosen.length > 0 ? chosen : ['Uncategorized'];
    const tags = rawurldecode(str('post_tags') ?? '');
    if (tags !== '')
      post.tags = tags
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
    post.sticky = fromBase64(String(firstOf('_sticky') ?? '')) === 'sticky';
    const image = fromBase64(text(form, 'post_featured_image'));
    if (image !== '') post.featuredImage = image;
    for (const [k, v] of Object.entries(custom))
      if (!k.startsWith('_mainwp') && k !== '_sticky' && k !== '_post_to_only_existing_categories' && Array.isArray(v)) post.custom[k] = v;
    this.changed();
    const link = post.status === 'publish' ? `${s.siteUrl}/${post.name}/` : `${s.siteUrl}/?p=${post.id}`;
    return reply({
      added: true,
      added_id: post.id,
      link,
      other_data: { new_post_data: { ...this.postData(post, oldStatus), is_editing: editId ? 1 : 0 } },
    });
  }
}
