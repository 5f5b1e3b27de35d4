// "Open WP Admin" (issue 29): a one-time link on sitefleet's public address that, opened in a browser, sends it to the
// child's own signed single sign-on URL (`?login_required=1&user=…&where=index.php&nonce=…&mainwpsignature=…`, the
// signature over where+nonce with the site's private key), which logs the browser into wp-admin as the site's
// administrator. The ability that makes the link needs write permission (the registry's check); the link lives
// LINK_TTL_MS, works once, and is kept only as its hash in this process's memory (a restart forgets every link). The
// signed child URL is made when the link is used and never stored. Each use is logged and told to the listeners
// (the audit log's hook).
import { createHash, randomBytes } from 'node:crypto';
import { newNonce, signRequest } from '../child/keys.js';
import { ServiceError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import { log } from '../log.js';
import type { SiteRecord } from '../store/records.js';
import type { ChildSiteService } from './child-sites.js';
import type { SiteService } from './sites.js';
import { actorOf } from './update-history.js';
import type { UpdateActor } from '../store/health-records.js';

/** How long a link works. */
export const LINK_TTL_MS = 30_000;
/** Links not yet used that this process holds at most; past it, making one more is refused (429) until some expire. */
export const MAX_OPEN_LINKS = 1000;
/** The wp-admin page the child lands the browser on. */
export const ADMIN_WHERE = 'index.php';
/** The path links live under on sitefleet's public address (app/http.ts serves it). */
export const LINK_PATH = '/admin-login/';

const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const hash = (token: string) => createHash('sha256').update(token).digest('hex');

interface OpenLink {
  site_id: number;
  actor: UpdateActor;
  expires: number;
}

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
  private readonly open = new Map<string, OpenLink>();
  private readonly listeners: Array<(use: AdminLoginUse) => void> = [];

  constructor(
    private readonly sites: SiteService,
    private readonly children: ChildSiteService,
    private readonly now: () => number = Date.now,
  ) {}

  /** Hook for the audit log: called on every use of a link (after the child URL is made). */
  onUse(listener: (use: AdminLoginUse) => void): void {
    this.listeners.push(listener);
  }

  /** A one-time link for `site`, made for `principal` (the ability's write check ran before). */
  issue(site: SiteRecord, principal: Principal): { url: string; expires_at: string; expires_in_s: number } {
    if (!this.publicBase)
      throw new ServiceError(
        'svc_admin_login_not_served',
        'This process serves no HTTP door, so it cannot hand out a login link: ask `sitefleet serve` (REST, abilities, console).',
        400,
      );
    this.children.assertReachable(site);
    this.children.credentials(site); // 409 svc_site_keys_missing now rather than when the link is opened
    const now = this.now();
    for (const [k, v] of this.open) if (v.expires <= now) this.open.delete(k);
    if (this.open.size >= MAX_OPEN_LINKS)
      throw new ServiceError(
        'svc_too_many_admin_logins',
        `${MAX_OPEN_LINKS} login links are waiting to be used; retry in ${LINK_TTL_MS / 1000} s.`,
        429,
        { retry_after: LINK_TTL_MS / 1000 },
      );
    const token = randomBytes(32).toString('base64url');
    const expires = now + LINK_TTL_MS;
    this.open.set(hash(token), { site_id: site.id, actor: actorOf(principal), expires });
    return { url: `${this.publicBase}${LINK_PATH}${token}`, expires_at: new Date(expires).toISOString(), expires_in_s: LINK_TTL_MS / 1000 };
  }

  /**
   * Uses a link: the child's signed login URL to redirect the browser to, or null when the token is malformed, unknown,
   * used, or expired (all alike to the caller). The link is gone after this, whatever happens next.
   */
  async use(token: string, address: string): Promise<string | null> {
    if (!TOKEN.test(token)) return null;
    const key = hash(token);
    const link = this.open.get(key);
    if (!link) return null;
    this.open.delete(key);
    if (link.expires <= this.now()) return null;
    const site = this.sites.get(link.site_id);
    if (!site || site.suspended || site.disconnected) return null;
    const creds = this.children.credentials(site);
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
}
