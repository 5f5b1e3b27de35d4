// src/child/connector.ts — ChildConnector: the dashboard → child operations sitefleet uses (register, sync, actions, users, posts, probe).
import { z } from 'zod';
import { ChildError } from './child-error.js';
import { openReply } from './envelope.js';
import { encodeForm, rawurlencode, type FormInput } from './form.js';
import type { ChildPostInput, ChildPostQuery, ChildUserQuery, ChildUserUpdate, NewChildUser } from './inputs.js';
import { DEFAULT_SIGN_ALGO, newKeyPair, newNonce, signRequest, type KeyPair } from './keys.js';
import {
  AdminPasswordReply,
  CoreUpgradeReply,
  UpgradeReply,
  DeactivateReply,
  DisconnectReply,
  InstallReply,
  NewPostReply,
  NewUserReply,
  PluginActionReply,
  PostActionReply,
  PostsReply,
  PreflightReply,
  RegisterReply,
  SecurityReply,
  ThemeActionReply,
  UserActionReply,
  UsersReply,
  toChildPost,
  toChildPostFull,
  type ChildPost,
  type ChildPostFull,
  type ChildUserProfile,
} from './replies.js';
import {
  RawStats,
  SYNC_OUTDATED_DAYS,
  securityFindings,
  toChildUser,
  toSnapshot,
  type ChildUser,
  type SecurityFinding,
  type SiteSnapshot,
} from './snapshot.js';
import { ReplyInterrupted, Transport, type HttpTarget } from './transport.js';
import { versionAtLeast } from './version.js';
import { POST_STATUSES, USER_ROLES } from './wordpress.js';

/** What the connector needs to talk to a connected site. The private key lives only in memory here; it is never logged. */
export interface SiteCredentials extends HttpTarget {
  url: string;
  admin: string;
  privateKeyPem: string;
  signAlgo: number;
  /** The child's register-verify key (§7.7), from register/reconnect; lets reconnect work without the admin password. */
  regverify?: string | null;
}

export interface ConnectorOptions {
  /** Sent as `server`: a stable URL unique to this sitefleet installation; the child uses it to recognise us on reconnect. */
  serverUrl: string;
  /** Calls in flight across all sites (default 32). */
  concurrency?: number;
  connectTimeoutMs?: number;
  /** Total time for one call, fallback included (default 30 s). */
  timeoutMs?: number;
  /**
   * Total time for a call that installs or applies a package (PACKAGE_FUNCTIONS: the child downloads and unpacks it
   * while the request is held open): default 15 min, the protocol reference's figure; never shorter than `timeoutMs`.
   */
  packageTimeoutMs?: number;
  maxReplyBytes?: number;
  /** Reach loopback and private addresses too (default false: an SSRF guard; tests and the demo need it). */
  allowPrivateAddresses?: boolean;
}

export interface RegisterInput extends HttpTarget {
  url: string;
  admin: string;
  adminPassword?: string;
}

export interface Registration extends KeyPair {
  signAlgo: number;
  /** Store it with the site; null when the child issued none (child < 5.3). */
  regverify: string | null;
  snapshot: SiteSnapshot;
}

export type PluginAction = 'activate' | 'deactivate' | 'delete';

/** What the child says it did with one item of an upgrade call. */
export interface UpgradeItem {
  /** The child's own flag (`upgrades[slug]` true, or updated_data success 1). Not proof: see the updates service. */
  success: boolean;
  /** The version on disk after the call (updated_data.version), when the child reported one. */
  version: string | null;
  old_version: string | null;
  /** The child's reason when it failed (upgrades_error, or updated_data.error for themes). */
  error: string | null;
}
export interface UpgradeResult {
  items: Record<string, UpgradeItem>;
  snapshot: SiteSnapshot | null;
}
export interface CoreUpgradeResult {
  status: string;
  old_version: string | null;
  version: string | null;
  error_codes: string[];
}
export type ThemeAction = 'activate' | 'delete';
export type PostAction = 'publish' | 'unpublish' | 'trash' | 'delete' | 'restore';

// We speak the protocol of MainWP Dashboard 6.1.2; the child only compares `mainwpver` with 5.3 (§5.1).
const DASHBOARD_VERSION = '6.1.2';
// SHA-256 signatures need child ≥ 4.5 (§4.3, §11).
const MIN_CHILD_VERSION = '4.5';
// The child persists `syncdata` and reuses it for register replies and embedded `sync` blocks, so every stats call
// sends the full list, never a reduced one (§9.1).
const SYNC_DATA = JSON.stringify(
  Object.fromEntries(
    [
      'wp_updates',
      'plugin_updates',
      'theme_updates',
      'translation_updates',
      'recent_comments',
      'recent_posts',
      'recent_pages',
      'securityStats',
      'directories',
      'categories',
      'totalsize',
      'dbsize',
      'plugins',
      'themes',
      'users',
      'plugins_outdate_info',
      'themes_outdate_info',
      'health_site_status',
      'child_site_actions_data',
      'othersData',
      'primaryLasttimeBackup',
      'last_post_gmt',
      'password_policy_options',
    ].map((k) => [k, 1]),
  ),
);

/** admin-ajax.php first, the bare site URL as fallback (§2.1). */
function endpoints(url: string): [string, string] {
  if (url.includes('wp-admin')) return [url, url];
  return [`${url.endsWith('/') ? url : url + '/'}wp-admin/admin-ajax.php`, url];
}

function parseReply<T extends z.ZodType>(schema: T, value: unknown, fn: string): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'reply';
  throw new ChildError('bad_reply', `Invalid reply from the child site to ${fn}: ${where}: ${issue?.message ?? 'unexpected shape'}`);
}

function unexpected(fn: string, status: string | undefined): ChildError {
  return new ChildError('child_error', `ERROR: Unexpected error from ${fn}${status ? ` (status ${status})` : ''}.`);
}

function requireSlugs(slugs: readonly string[]): void {
  if (slugs.length === 0 || slugs.some((s) => s === '' || s.includes('||')))
    throw new RangeError('slugs must be non-empty and contain no "||"');
}

/** Child functions that download and install a package (or WordPress itself) inside the call: they get packageTimeoutMs. */
export const PACKAGE_FUNCTIONS: ReadonlySet<string> = new Set([
  'installplugintheme',
  'upgradeplugintheme',
  'upgradetranslation',
  'upgrade',
]);

const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

/** Changes-log events asked for per sync: a site with more catches up over the next syncs. */
export const CHANGES_PER_SYNC = 200;

export class ChildConnector {
  private readonly transport: Transport;
  private readonly serverUrl: string;
  private readonly timeoutMs: number;
  private readonly packageTimeoutMs: number;

  constructor(options: ConnectorOptions) {
    this.serverUrl = options.serverUrl;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.packageTimeoutMs = Math.max(this.timeoutMs, options.packageTimeoutMs ?? 15 * 60_000);
    this.transport = new Transport({
      allowPrivateAddresses: options.allowPrivateAddresses ?? false,
      concurrency: options.concurrency ?? 32,
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      timeoutMs: this.timeoutMs,
      maxReplyBytes: options.maxReplyBytes ?? 20 * 1024 * 1024,
    });
  }

  // ---- plumbing ----

  /**
   * One call: sign, then, holding one of the `concurrency` slots, POST to admin-ajax.php, and on a
   * transport or no-marker failure re-send the identical body to the bare URL. Never re-sent once the child answered
   * (envelope, or a reply that broke off mid-body), nor after the deadline. If the fallback cannot reach the child
   * either, the first error is reported, as the dashboard does.
   */
  private async call(target: HttpTarget & { url: string }, form: Record<string, FormInput>, signer?: SiteCredentials): Promise<unknown> {
    // Signed before taking a slot: the RSA work runs on the libuv pool while the slots carry network calls only.
    if (signer) Object.assign(form, await this.signature(String(form.function), signer));
    const body = encodeForm(form);
    const timeoutMs = PACKAGE_FUNCTIONS.has(String(form.function)) ? this.packageTimeoutMs : this.timeoutMs;
    return this.transport.inSlot(async () => {
      const deadline = Date.now() + timeoutMs;
      const [primary, fallback] = endpoints(target.url);
      try {
        return openReply(await this.transport.post(primary, body, target, deadline, true, timeoutMs));
      } catch (first) {
        const retry =
          first instanceof ChildError && !(first instanceof ReplyInterrupted) && (first.kind === 'transport' || first.kind === 'no_marker');
        if (!retry || fallback === primary || Date.now() >= deadline) throw first;
        try {
          return openReply(await this.transport.post(fallback, body, target, deadline, true, timeoutMs));
        } catch (second) {
          const unreached = second instanceof ChildError && ['transport', 'no_marker', 'timeout'].includes(second.kind);
          throw unreached ? first : second;
        }
      }
    });
  }

  private async signature(fn: string, site: SiteCredentials): Promise<Record<string, FormInput>> {
    const nonce = newNonce();
    try {
      return { nonce, sign_algo: site.signAlgo, mainwpsignature: await signRequest(fn, nonce, site.privateKeyPem, site.signAlgo) };
    } catch {
      // Deliberately no detail: the error text could echo key material.
      throw new ChildError('auth_failed', 'The stored private key cannot sign requests for this site; reconnect it.');
    }
  }

  /** `optimize=1` like the dashboard's fetch_url_authed: the `sync` embedded in plugin/theme actions then carries users. */
  private signed(site: SiteCredentials, fn: string, params: Record<string, FormInput> = {}): Promise<unknown> {
    return this.call(site, { user: site.admin, function: fn, mainwpver: DASHBOARD_VERSION, json_result: 1, optimize: 1, ...params }, site);
  }

  // ---- connection ----

  /** Preflight (§7.1), then register with a fresh key pair (§7.2), then a full sync for the snapshot. */
  async register(input: RegisterInput): Promise<Registration> {
    await this.preflight(input, input.admin);
    return this.handshake(input, input.admin, input.adminPassword, undefined);
  }

  /**
   * Renews the site's keys (§7.8): `register` with a new key pair plus the stored `regverify` (and the admin password
   * when given). A child ≥ 5.4 accepts this from the same dashboard while still connected, so the old key stays valid
   * until the new one is in place; `reconnect_failed` means the password is needed.
   */
  reconnect(site: SiteCredentials, options: { adminPassword?: string } = {}): Promise<Registration> {
    return this.handshake(site, site.admin, options.adminPassword, site.regverify ?? '');
  }

  private async preflight(target: HttpTarget & { url: string }, admin: string): Promise<void> {
    let reply: unknown;
    try {
      reply = await this.call(target, { user: admin, function: 'stats', mainwpver: DASHBOARD_VERSION, json_result: 1 });
    } catch (err) {
      // Already connected — possibly to us. Register decides: the same dashboard may re-register (§7.3 step 2).
      if (err instanceof ChildError && err.kind === 'child_error' && err.message.includes('already contains a link')) return;
      throw err;
    }
    const { version } = parseReply(PreflightReply, reply, 'stats (preflight)');
    if (!versionAtLeast(version, MIN_CHILD_VERSION)) {
      throw new ChildError(
        'child_error',
        `ERROR: MainWP Child ${version} is too old; update the MainWP Child plugin to ${MIN_CHILD_VERSION} or newer.`,
        'child_plugin_incompatible',
      );
    }
  }

  private async handshake(
    target: HttpTarget & { url: string },
    admin: string,
    password: string | undefined,
    regverify: string | undefined,
  ): Promise<Registration> {
    const keys = await newKeyPair();
    const reply = await this.call(target, {
      user: admin,
      function: 'register',
      mainwpver: DASHBOARD_VERSION,
      json_result: 1,
      pubkey: keys.publicKeyPem,
      server: this.serverUrl,
      uniqueId: '',
      // The child form-decodes and then rawurldecodes it (§7.2): a single encoding would break '%' and '+'.
      userpwd: password ? rawurlencode(password) : undefined,
      regverify,
    });
    const registered = parseReply(RegisterReply, reply, 'register');
    if (registered.register !== 'OK') throw new ChildError('bad_reply', 'Undefined error occurred while registering the site.');
    const site: SiteCredentials = {
      ...target,
      admin,
      privateKeyPem: keys.privateKeyPem,
      signAlgo: DEFAULT_SIGN_ALGO,
      regverify: registered.regverify ?? (regverify || null),
    };
    let snapshot: SiteSnapshot;
    try {
      // The register reply lacks users (§7.5); this also locks sign_algo 7 in and stores the full syncdata on the child.
      snapshot = await this.sync(site);
    } catch {
      // The child is linked to the new key now; losing that key over a failed follow-up sync would orphan the site.
      snapshot = toSnapshot(registered, admin);
    }
    return { ...keys, signAlgo: site.signAlgo, regverify: site.regverify ?? null, snapshot };
  }

  /**
   * Signed `stats` with the full syncdata (§9.1). `changesSince` is the changes_cursor of the last sync: the child's
   * changes log answers the oldest CHANGES_PER_SYNC events newer than it (all of them when it is absent).
   */
  async sync(site: SiteCredentials, opts: { changesSince?: string | null } = {}): Promise<SiteSnapshot> {
    const reply = await this.signed(site, 'stats', {
      cloneSites: 0,
      othersData: '[]',
      server: this.serverUrl,
      numberdaysOutdatePluginTheme: SYNC_OUTDATED_DAYS,
      primaryBackup: '',
      child_actions_saved_days_number: 30,
      syncdata: SYNC_DATA,
      // Child 6.x logs most outside changes in its changes log, which it sends only when asked (params_logs).
      params_logs: { events_count: CHANGES_PER_SYNC, ...(opts.changesSince ? { newer_than: opts.changesSince } : {}) },
    });
    return toSnapshot(parseReply(RawStats, reply, 'stats'), site.admin);
  }

  /** Clears the connection on the child; the plugin stays active. */
  async disconnect(site: SiteCredentials): Promise<void> {
    parseReply(DisconnectReply, await this.signed(site, 'disconnect'), 'disconnect');
  }

  /** Clears the connection and deactivates the child plugin (remove site). */
  async deactivate(site: SiteCredentials): Promise<void> {
    parseReply(DeactivateReply, await this.signed(site, 'deactivate'), 'deactivate');
  }

  /** Live hardening check; also the cheapest signed ping (§9.17). */
  async security(site: SiteCredentials): Promise<SecurityFinding[]> {
    return securityFindings(parseReply(SecurityReply, await this.signed(site, 'security'), 'security'));
  }

  // ---- plugins and themes ----

  /** `affected` lists the plugin files the child acted on; the child skips unknown files and itself (§9.3). */
  async pluginAction(
    site: SiteCredentials,
    action: PluginAction,
    slugs: readonly string[],
  ): Promise<{ affected: string[]; snapshot: SiteSnapshot | null }> {
    requireSlugs(slugs);
    const reply = parseReply(
      PluginActionReply,
      await this.signed(site, 'plugin_action', { action, plugin: slugs.join('||') }),
      'plugin_action',
    );
    if (reply.status !== 'SUCCESS') throw unexpected('plugin_action', reply.status);
    return {
      affected: Object.keys(reply.other_data?.plugin_action_data ?? {}),
      snapshot: reply.sync ? toSnapshot(reply.sync, site.admin) : null,
    };
  }

  /**
   * `activate` takes exactly one slug; `previous` is the theme it replaced. The child refuses to delete the active
   * theme or its parent: those come back in `refused`, not as an error (§9.4).
   */
  async themeAction(
    site: SiteCredentials,
    action: ThemeAction,
    slugs: readonly string[],
  ): Promise<{ affected: string[]; refused: { slug: string; reason: string }[]; previous: string | null; snapshot: SiteSnapshot | null }> {
    requireSlugs(slugs);
    if (action === 'activate' && slugs.length !== 1) throw new RangeError('theme activate takes exactly one slug');
    const reply = parseReply(
      ThemeActionReply,
      await this.signed(site, 'theme_action', { action, theme: slugs.join('||') }),
      'theme_action',
    );
    const refused: { slug: string; reason: string }[] = [];
    if (reply.error?.is_activated_theme) refused.push({ slug: reply.error.is_activated_theme, reason: 'It is the active theme.' });
    if (reply.error?.is_activated_parent)
      refused.push({ slug: reply.error.is_activated_parent, reason: 'It is the parent of the active theme.' });
    if (reply.status !== 'SUCCESS' && !(reply.status === undefined && refused.length > 0)) throw unexpected('theme_action', reply.status);
    const previous = Object.values(reply.other_data?.theme_deactivate_data ?? {})[0]?.slug ?? null;
    return {
      affected: Object.keys(reply.other_data?.theme_action_data ?? {}),
      refused,
      previous,
      snapshot: reply.sync ? toSnapshot(reply.sync, site.admin) : null,
    };
  }

  /**
   * `installplugintheme` (§9.5): one package URL (the child downloads it). `activate` (plugins) activates it after
   * the install; `overwrite` replaces an installed copy. Answers what the child installed, or null when it reported
   * the package as not installed. A refusal (download failed, folder exists) is a child_error.
   */
  async install(
    site: SiteCredentials,
    type: 'plugin' | 'theme',
    url: string,
    opts: { activate?: boolean; overwrite?: boolean } = {},
  ): Promise<{ slug: string; name: string; version: string } | null> {
    const reply = parseReply(
      InstallReply,
      await this.signed(site, 'installplugintheme', {
        type,
        // JSON text: the child json_decodes it after stripping slashes (§9.5).
        url: JSON.stringify([url]),
        activatePlugin: type === 'plugin' && opts.activate ? 'yes' : undefined,
        overwrite: opts.overwrite ? 1 : undefined,
      }),
      'installplugintheme',
    );
    if (reply.installation !== 'SUCCESS') throw unexpected('installplugintheme', reply.installation);
    const ok = Object.values(reply.install_results ?? {}).some((v) => v === true || v === 1 || v === '1');
    const item = reply.other_data?.install_items?.[0];
    if (!ok || !item) return null;
    return { slug: item.slug, name: item.name ?? '', version: item.version ?? '' };
  }

  // ---- updates (updates reference §5) ----

  /** `upgradeplugintheme` (type plugin or theme) or `upgradetranslation`: one call for every slug of one type. */
  async upgrade(site: SiteCredentials, type: 'plugin' | 'theme' | 'translation', slugs: readonly string[]): Promise<UpgradeResult> {
    if (slugs.length === 0 || slugs.some((s) => s === '' || s.includes(',')))
      throw new RangeError('slugs must be non-empty and contain no ","');
    const fn = type === 'translation' ? 'upgradetranslation' : 'upgradeplugintheme';
    const reply = parseReply(UpgradeReply, await this.signed(site, fn, { type, list: slugs.join(',') }), fn);
    const data = reply.other_data?.updated_data ?? {};
    const items: Record<string, UpgradeItem> = {};
    for (const slug of new Set(slugs)) {
      const d = data[slug];
      const flag = reply.upgrades?.[slug];
      const error = reply.upgrades_error?.[slug] ?? d?.error ?? null;
      items[slug] = {
        success: !error && (flag === true || flag === 1 || flag === '1' || d?.success === true),
        version: d?.version || null,
        old_version: d?.old_version || null,
        error,
      };
    }
    return { items, snapshot: reply.sync ? toSnapshot(reply.sync, site.admin) : null };
  }

  /** `upgrade`: installs the core update WordPress has on offer. */
  async upgradeCore(site: SiteCredentials): Promise<CoreUpgradeResult> {
    const reply = parseReply(CoreUpgradeReply, await this.signed(site, 'upgrade'), 'upgrade');
    const codes =
      reply.other_data && typeof reply.other_data === 'object'
        ? (reply.other_data as { upgrade_error_codes?: unknown }).upgrade_error_codes
        : undefined;
    return {
      status: reply.upgrade ?? '',
      old_version: reply.old_version || null,
      version: reply.version || null,
      error_codes:
        codes && typeof codes === 'object'
          ? Object.values(codes as Record<string, unknown>)
              .map(String)
              .slice(0, 20)
          : [],
    };
  }

  // ---- users ----

  /** `search_users` when there is a search term, else `get_all_users`; users listed under several roles appear once. */
  async listUsers(site: SiteCredentials, query: ChildUserQuery = {}): Promise<ChildUser[]> {
    const roles = query.roles && query.roles.length > 0 ? query.roles.join(',') : '';
    const reply = query.search
      ? await this.signed(site, 'search_users', {
          search: `*${query.search}*`,
          search_columns: 'user_login,display_name,user_email',
          role: roles,
        })
      : await this.signed(site, 'get_all_users', { role: roles || USER_ROLES.join(',') });
    const users = new Map<number, ChildUser>();
    for (const raw of parseReply(UsersReply, reply, query.search ? 'search_users' : 'get_all_users')) {
      const user = toChildUser(raw);
      if (!users.has(user.id)) users.set(user.id, user);
    }
    return [...users.values()];
  }

  async createUser(site: SiteCredentials, user: NewChildUser, sendPassword: boolean): Promise<{ user_id: number }> {
    const newUser = {
      user_login: user.user_login,
      user_pass: user.user_pass,
      user_email: user.user_email,
      user_url: user.user_url ?? '',
      first_name: user.first_name ?? '',
      last_name: user.last_name ?? '',
      role: user.role ?? 'subscriber',
    };
    const reply = await this.signed(site, 'newuser', { new_user: base64(JSON.stringify(newUser)), send_password: sendPassword });
    return { user_id: Math.trunc(parseReply(NewUserReply, reply, 'newuser').other_data.new_user_data.user_id) };
  }

  /** The child has no "not found" for update_user; check with getUser first (as the dashboard does). */
  async updateUser(site: SiteCredentials, id: number, fields: ChildUserUpdate): Promise<void> {
    const extra = {
      // 'donotupdate' keeps the role; an empty role would strip it (§9.8).
      role: fields.role ?? 'donotupdate',
      email: fields.email,
      url: fields.url,
      first_name: fields.first_name,
      last_name: fields.last_name,
      nickname: fields.nickname,
      display_name: fields.display_name,
      description: fields.description,
      pass1: fields.password,
      pass2: fields.password,
    };
    const reply = parseReply(UserActionReply, await this.signed(site, 'user_action', { action: 'update_user', id, extra }), 'user_action');
    if (reply.status !== 'SUCCESS') throw unexpected('user_action', reply.status);
  }

  /** False when the child has no user with that id. Posts are reassigned to the connection admin. */
  async deleteUser(site: SiteCredentials, id: number): Promise<boolean> {
    const reply = parseReply(UserActionReply, await this.signed(site, 'user_action', { action: 'delete', id }), 'user_action');
    if (reply.status !== 'SUCCESS') throw unexpected('user_action', reply.status);
    const data = reply.other_data?.users_data;
    return data !== undefined && !Array.isArray(data);
  }

  /** The editable profile (`user_action edit`), or null when there is no such user. */
  async getUser(site: SiteCredentials, id: number): Promise<ChildUserProfile | null> {
    const reply = parseReply(UserActionReply, await this.signed(site, 'user_action', { action: 'edit', id }), 'user_action');
    if (reply.status !== 'SUCCESS' || !reply.user_data) return null;
    const u = reply.user_data;
    return {
      id,
      role: typeof u.role === 'string' ? u.role : '',
      first_name: u.first_name,
      last_name: u.last_name,
      nickname: u.nickname,
      display_name: u.display_name,
      email: u.user_email,
      url: u.user_url,
      description: u.description,
    };
  }

  /** Changes the connection admin's WordPress password; the keys keep working. */
  async setAdminPassword(site: SiteCredentials, password: string): Promise<void> {
    const reply = parseReply(
      AdminPasswordReply,
      await this.signed(site, 'newadminpassword', { new_password: base64(password) }),
      'newadminpassword',
    );
    if (Array.isArray(reply)) throw new ChildError('child_error', 'ERROR: The connection administrator was not found on the child site.');
  }

  // ---- posts ----

  async listPosts(site: SiteCredentials, query: ChildPostQuery = {}): Promise<ChildPost[]> {
    const reply = await this.signed(site, 'get_all_posts', {
      status: (query.status && query.status.length > 0 ? query.status : POST_STATUSES).join(','),
      post_type: query.post_type ?? 'post',
      keyword: query.search || undefined,
      search_on: query.search ? query.search_on : undefined,
      dtsstart: query.dtsstart,
      dtsstop: query.dtsstop,
      maxRecords: query.maximum ?? 50,
    });
    const posts = parseReply(PostsReply, reply, 'get_all_posts');
    return posts === '' ? [] : posts.map(toChildPost);
  }

  /** `post_action get_edit`; null when there is no such post. Note the child also takes the edit lock for the admin. */
  async getPost(site: SiteCredentials, id: number, postType = 'post'): Promise<ChildPostFull | null> {
    const reply = parseReply(
      PostActionReply,
      await this.signed(site, 'post_action', { action: 'get_edit', id, post_type: postType }),
      'post_action',
    );
    if (reply.status !== 'SUCCESS') throw unexpected('post_action', reply.status);
    return reply.my_post && 'new_post' in reply.my_post ? toChildPostFull(id, reply.my_post) : null;
  }

  /**
   * null when the post does not exist (the child answers SUCCESS with no data, or FAIL for publish; §9.12); else the
   * status the post has after the action as the child reports it (null when its reply does not say: a delete).
   */
  async postAction(site: SiteCredentials, action: PostAction, id: number): Promise<{ post_status: string | null } | null> {
    const reply = parseReply(PostActionReply, await this.signed(site, 'post_action', { action, id }), 'post_action');
    if (reply.status !== 'SUCCESS') return null;
    const data = reply.other_data?.post_action_data;
    if (data === undefined) return { post_status: null };
    if (Array.isArray(data) || Object.keys(data).length === 0) return null;
    return { post_status: data.new_status ?? null };
  }

  /** Creates a post, or edits post `ID` (§9.13); answers the status and dates WordPress gave it, when the child says. */
  async savePost(
    site: SiteCredentials,
    post: ChildPostInput,
  ): Promise<{ post_id: number; link: string; post_status: string | null; post_date_gmt: string | null }> {
    const { ID, post_category, post_custom, post_featured_image, is_sticky, post_tags, ...fields } = post;
    const custom: Record<string, string[]> = { ...post_custom };
    if (ID !== undefined) custom._mainwp_edit_post_id = [String(ID)];
    if (is_sticky) custom._sticky = [base64('sticky')];
    const newPost = { ...fields, ID, post_tags: post_tags === undefined ? undefined : rawurlencode(post_tags) };
    const reply = await this.signed(site, 'newpost', {
      new_post: base64(JSON.stringify(newPost)),
      post_custom: base64(JSON.stringify(custom)),
      post_category: base64(rawurlencode(post_category ?? '')),
      post_featured_image: post_featured_image ? base64(post_featured_image) : undefined,
      mainwp_upload_dir: base64('{}'),
    });
    const saved = parseReply(NewPostReply, reply, 'newpost');
    const data = saved.other_data?.new_post_data;
    const after = Array.isArray(data) ? undefined : data;
    return {
      post_id: Math.trunc(saved.added_id),
      link: saved.link,
      post_status: after?.new_status ?? null,
      post_date_gmt: after?.post_date_gmt ?? null,
    };
  }

  // ---- reachability ----

  /**
   * The "check" probe (§9.17 level 1): unsigned POST `test=yes` to the URL as given, no redirects, at most 10 s (or the
   * connector's timeout if shorter). Reachable means HTTP 200–206. Never throws; http_status is 0 when nothing answered.
   */
  probe(url: string, options: HttpTarget): Promise<{ reachable: boolean; http_status: number; response_time_ms: number }> {
    return this.transport.inSlot(async () => {
      const started = performance.now();
      let status: number;
      try {
        status = (await this.transport.post(url, 'test=yes', options, Date.now() + Math.min(10_000, this.timeoutMs), false)).status;
      } catch {
        status = 0;
      }
      return { reachable: status >= 200 && status <= 206, http_status: status, response_time_ms: Math.round(performance.now() - started) };
    });
  }

  /** Closes pooled connections; calls still running fail. */
  close(): Promise<void> {
    return this.transport.close();
  }
}
