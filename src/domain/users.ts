// Users on child sites: list and create across selected sites, edit and delete on one site, the connection
// administrator's password. The site's connection admin is never deleted or demoted (child protocol §9.8: the
// child does not protect it, so we must). Passwords go to the child and nowhere else: no answer, no log.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { ChildConnector, SiteCredentials } from '../child/connector.js';
import type { ChildUserProfile } from '../child/replies.js';
import type { ChildUser } from '../child/snapshot.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { ServiceError } from '../core/errors.js';
import type { SiteRecord } from '../store/records.js';
import type { Fanned, FleetCall, SiteSelector, SiteSelectorService } from './selectors.js';

import { USER_ROLES, type UserRole } from '../child/wordpress.js';

export { USER_ROLES, type UserRole };

export interface NewUser {
  username: string;
  email: string;
  /** Empty or absent: a random 24-character password (never returned; send_password mails it). */
  password?: string;
  role: UserRole;
  first_name?: string;
  last_name?: string;
  user_url?: string;
  send_password: boolean;
}

/** The editable profile fields; `user_url` is WordPress's `url`. */
export const USER_EDIT_FIELDS = [
  'email',
  'password',
  'role',
  'first_name',
  'last_name',
  'user_url',
  'nickname',
  'display_name',
  'description',
] as const;
export type UserChanges = Partial<Record<(typeof USER_EDIT_FIELDS)[number], string>>;

/** The same rule as the abilities' email fields (zod's), so that CSV rows and JSON calls agree. */
const Email = z.email();
export const isEmail = (v: string): boolean => Email.safeParse(v).success;

/** What WordPress's wp_generate_password(24) gives in strength: 24 characters from 144 random bits. */
export const generatePassword = (): string => randomBytes(18).toString('base64url');

/** The child user id of the site's connection admin, or null when the child has no such login. */
async function connectionAdminId(c: ChildConnector, creds: SiteCredentials, site: SiteRecord): Promise<number | null> {
  const login = site.admin_username.toLowerCase();
  if (!login) return null;
  const found = await c.listUsers(creds, { search: site.admin_username });
  return found.find((u) => u.login.toLowerCase() === login)?.id ?? null;
}

function protectedAdmin(site: SiteRecord, userId: number, what: string): ServiceError {
  return new ServiceError(
    'svc_connection_admin_protected',
    `User ${userId} is ${site.admin_username}, the administrator this dashboard connects to ${site.url} as; it cannot be ${what}.`,
    409,
    { site_id: site.id, user_id: userId },
  );
}

const userNotFound = (site: SiteRecord, userId: number) =>
  new ServiceError('svc_user_not_found', `No user with ID ${userId} on ${site.url}.`, 404, { site_id: site.id, user_id: userId });

export interface UpdatedUser {
  site: SiteRecord;
  user: ChildUserProfile;
  updated: string[];
}

export interface DeletedUser {
  site: SiteRecord;
  user: ChildUserProfile;
  deleted: boolean;
  dry_run: boolean;
}

/**
 * WordPress users on child sites (not dashboard accounts: those are AuthService): listed and created across selected
 * sites, edited and deleted on one site, the connection administrator's password.
 */
export class WordPressUserService {
  constructor(private readonly selectors: SiteSelectorService) {}

  list(call: FleetCall, sel: SiteSelector, q: { search?: string; roles?: readonly UserRole[] }): Promise<Fanned<ChildUser[]>> {
    const query = { search: q.search?.trim() || undefined, roles: q.roles?.length ? [...q.roles] : undefined };
    return this.selectors.fanOut(call, sel, 'list users', (c, creds) => c.listUsers(creds, query));
  }

  create(call: FleetCall, sel: SiteSelector, u: NewUser): Promise<Fanned<{ user_id: number }>> {
    if (!u.username.trim())
      throw new ServiceError('svc_invalid_input', 'Username is required.', 400, { params: { username: 'Username is required.' } });
    const password = u.password || generatePassword();
    return this.selectors.fanOut(call, sel, 'create user', (c, creds) =>
      c.createUser(
        creds,
        {
          user_login: u.username.trim(),
          user_pass: password,
          user_email: u.email.trim(),
          user_url: u.user_url ?? '',
          first_name: u.first_name ?? '',
          last_name: u.last_name ?? '',
          role: u.role,
        },
        u.send_password,
      ),
    );
  }

  /** Sets the connection administrator's password on every selected site (the keys keep working, §9.10). */
  setAdminPassword(call: FleetCall, sel: SiteSelector, password: string): Promise<Fanned<void>> {
    if (password === '')
      throw new ServiceError('svc_invalid_input', 'The password must not be empty.', 400, {
        params: { password: 'The password must not be empty.' },
      });
    return this.selectors.fanOut(call, sel, 'admin password', (c, creds) => c.setAdminPassword(creds, password));
  }

  /** Changes only the fields given. WordPress ignores empty values, so a field cannot be cleared: those are refused. */
  async update(ref: number | string, userId: number, changes: UserChanges): Promise<UpdatedUser> {
    const given = USER_EDIT_FIELDS.filter((k) => changes[k] !== undefined);
    if (given.length === 0) {
      throw new ServiceError(
        'svc_missing_fields',
        `At least one field must be provided to update the user: ${USER_EDIT_FIELDS.join(', ')}.`,
        400,
      );
    }
    const empty = given.filter((k) => changes[k]!.trim() === '');
    if (empty.length > 0) {
      throw new ServiceError('svc_invalid_input', `Empty values cannot clear a field on a WordPress site: ${empty.join(', ')}.`, 400, {
        params: Object.fromEntries(empty.map((k) => [k, 'Must not be empty.'])),
      });
    }
    const site = this.selectors.reachable(ref);
    return this.selectors.onChild(site, async (c, creds) => {
      if (!(await c.getUser(creds, userId))) throw userNotFound(site, userId);
      if (changes.role !== undefined && changes.role !== 'administrator' && (await connectionAdminId(c, creds, site)) === userId) {
        throw protectedAdmin(site, userId, 'demoted');
      }
      await c.updateUser(creds, userId, {
        email: changes.email,
        url: changes.user_url,
        first_name: changes.first_name,
        last_name: changes.last_name,
        nickname: changes.nickname,
        display_name: changes.display_name,
        description: changes.description,
        role: changes.role,
        password: changes.password,
      });
      const user = await c.getUser(creds, userId);
      if (!user) throw userNotFound(site, userId);
      return { site, user, updated: given };
    });
  }

  /** confirm / dry_run as every destructive ability; the user's posts go to the connection admin (§9.8). */
  async delete(ref: number | string, userId: number, flags: { confirm?: boolean; dry_run?: boolean }): Promise<DeletedUser> {
    refuseBothFlags(flags);
    const site = this.selectors.reachable(ref);
    return this.selectors.onChild(site, async (c, creds) => {
      const user = await c.getUser(creds, userId);
      if (!user) throw userNotFound(site, userId);
      if ((await connectionAdminId(c, creds, site)) === userId) throw protectedAdmin(site, userId, 'deleted');
      if (flags.dry_run) return { site, user, deleted: false, dry_run: true };
      requireConfirm(flags, 'Deleting a user requires confirm=true (preview with dry_run=true).');
      if (!(await c.deleteUser(creds, userId))) throw userNotFound(site, userId);
      return { site, user, deleted: true, dry_run: false };
    });
  }
}
