// "Open WP Admin" (issue 29): a one-time link on sitefleet's public address that, opened in a browser, sends it to the
// child's own signed single sign-on URL (`?login_required=1&user=…&where=index.php&nonce=…&mainwpsignature=…`, the
// signature over where+nonce with the site's private key), which logs the browser into wp-admin as the site's
// administrator. The ability that makes the link needs write permission (the registry's check); the link lives
// LINK_TTL_MS and works once. The store keeps it (only the token's SHA-256, never the token), so a link made by one
// `serve` process works through any other on the same database or data dir, and a use claims it in one store write:
// writes are serialised across processes and each starts from the latest commit, so of two concurrent uses, in one
// process or two, exactly one finds the record and deletes it. The signed child URL is made when the link is used and
// never stored. Each use is logged and told to the listeners (the audit log's hook).
import { createHash, randomBytes } from 'node:crypto';
import { newNonce, signRequest } from '../child/keys.js';
import { ServiceError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import { log } from '../log.js';
import type { Store } from '../store/engine.js';
import type { UpdateActor } from '../store/health-records.js';
import type { AdminLoginRecord, SiteRecord } from '../store/records.js';
import type { ChildSiteService } from './child-sites.js';
import type { SiteService } from './sites.js';
import { actorOf } from './update-history.js';

/** How long a link works. */
export const LINK_TTL_MS = 30_000;
/** Links not yet used that the store holds at most (all processes); past it, making one more is refused (429) until some expire. */
export const MAX_OPEN_LINKS = 1000;
/** The wp-admin page the child lands the browser on. */
export const ADMIN_WHERE = 'index.php';
/** The path links live under on sitefleet's public address (app/http.ts serves it). */
export const LINK_PATH = '/admin-login/';

const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const hash = (token: string) => createHash('sha256').update(token).digest('hex');

/** What a use of a link tells the listeners (e.g. the audit log). */
export interface AdminLoginUse {
  site_id: number;
  site_url: string;
  /** Who made the link. */
  actor: UpdateActor;
  at: string;
  /** The address the browser came from. */
  address: string;
}

export class AdminLoginService {
  /** sitefleet's public base URL (set by the HTTP door; null: this process serves no link). */
  publicBase: string | null = null;
  private readonly listeners: Array<(use: AdminLoginUse) => void> = [];
  private indexVersion = -1;
  private index = new Map<string, AdminLoginRecord>();

  constructor(
    private readonly store: Store,
    private readonly sites: SiteService,
    private readonly children: ChildSiteService,
    private readonly now: () => number = Date.now,
  ) {}

  /** Hook for the audit log: called on every use of a link (after the child URL is made). */
  onUse(listener: (use: AdminLoginUse) => void): void {
    this.listeners.push(listener);
  }

  /**
   * A one-time link for `site`, made for `principal` (the ability's write check ran before). One write: expired links
   * (anyone's) go, the bound is checked, the new link's hash is stored.
   */
  async issue(site: SiteRecord, principal: Principal): Promise<{ url: string; expires_at: string; expires_in_s: number }> {
    if (!this.publicBase)
      throw new ServiceError(
        'svc_admin_login_not_served',
        'This process serves no HTTP door, so it cannot hand out a login link: ask `sitefleet serve` (REST, abilities, console).',
        400,
      );
    this.children.assertReachable(site);
    await this.children.credentials(site); // 409 svc_site_keys_missing now rather than when the link is opened
    const now = this.now();
    const token = randomBytes(32).toString('base64url');
    const expires = now + LINK_TTL_MS;
    await this.store.write((tx) => {
      let waiting = 0;
      for (const l of [...tx.all<AdminLoginRecord>('admin_logins')]) {
        if (Date.parse(l.expires_at) <= now) tx.delete('admin_logins', l.id);
        else waiting++;
      }
      if (waiting >= MAX_OPEN_LINKS)
        throw new ServiceError(
          'svc_too_many_admin_logins',
          `${MAX_OPEN_LINKS} login links are waiting to be used; retry in ${LINK_TTL_MS / 1000} s.`,
          429,
          { retry_after: LINK_TTL_MS / 1000 },
        );
      tx.insert<AdminLoginRecord>('admin_logins', {
        token_hash: hash(token),
        site_id: site.id,
        actor: actorOf(principal),
        expires_at: new Date(expires).toISOString(),
      });
    });
    return { url: `${this.publicBase}${LINK_PATH}${token}`, expires_at: new Date(expires).toISOString(), expires_in_s: LINK_TTL_MS / 1000 };
  }

  /**
   * Uses a link: the child's signed login URL to redirect the browser to, or null when the token is malformed, unknown,
   * used, or expired (all alike to the caller). The link is gone after this, whatever happens next. A token not in
   * memory (after a sync with the store) costs no write; one that is, is claimed by deleting it in a write, which only
   * one use, in any process, can do.
   */
  async use(token: string, address: string): Promise<string | null> {
    if (!TOKEN.test(token)) return null;
    await this.store.sync();
    const seen = this.byHash().get(hash(token));
    if (!seen) return null;
    const link = await this.store.write((tx) => {
      const rec = tx.get<AdminLoginRecord>('admin_logins', seen.id);
      if (!rec || rec.token_hash !== seen.token_hash) return null; // another use claimed it first
      tx.delete('admin_logins', rec.id);
      return rec;
    });
    if (!link || Date.parse(link.expires_at) <= this.now()) return null;
    const site = this.sites.get(link.site_id);
    if (!site || site.suspended || site.disconnected) return null;
    const creds = await this.children.credentials(site);
    const nonce = newNonce();
    const signature = await signRequest(ADMIN_WHERE, nonce, creds.privateKeyPem, creds.signAlgo);
    const u = new URL(site.url);
    const q = new URLSearchParams({
      login_required: '1',
      user: creds.admin,
      where: ADMIN_WHERE,
      nonce,
      sign_algo: String(creds.signAlgo),
      mainwpsignature: signature,
    });
    u.search = q.toString();
    const use: AdminLoginUse = { site_id: site.id, site_url: site.url, actor: link.actor, at: new Date(this.now()).toISOString(), address };
    // The log line names who and where, never the link or the signature.
    log('info', 'admin login link used', { ...use, actor: `${use.actor.kind}:${use.actor.name}` });
    for (const l of this.listeners) l(use);
    return u.href;
  }

  /** Links by token hash, rebuilt when the collection changes (here or in another process). */
  private byHash(): Map<string, AdminLoginRecord> {
    const v = this.store.version('admin_logins');
    if (v !== this.indexVersion) {
      this.index = new Map([...this.store.all<AdminLoginRecord>('admin_logins')].map((l) => [l.token_hash, l]));
      this.indexVersion = v;
    }
    return this.index;
  }
}
