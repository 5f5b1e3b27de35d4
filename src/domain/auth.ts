// Credentials: API keys (Bearer) and users with application passwords (HTTP Basic). Only salted hashes are
// stored (a random salt per key and per user); every comparison is constant-time. Both secrets are 144+ random
// bits made here, so a salted SHA-256 is as strong as a slow hash would be, and keeps a request's auth check in
// microseconds.
import { hash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { ServiceError } from '../core/errors.js';
import type { KeyPermission, Principal, ToolLists, UserRole } from '../core/principal.js';
import { errors } from '../core/errors.js';
import { MAX_SCOPE_IDS, normalScope, type Scope } from '../core/scope.js';
import type { ClientRecord, SiteRecord, TagRecord } from '../store/records.js';
import type { KeyRecord, UserRecord } from '../store/records.js';
import type { Store, Tx } from '../store/store.js';
import { Cascade } from './cascade.js';

/** One-shot: a tenth of createHash's cost on a key's short input (verifyBearer hashes twice per request). */
const sha256 = (s: string) => hash('sha256', s, 'hex');
const now = () => new Date().toISOString();
/** An API key's stored hash. The inner hash lets the format-2 migration salt keys hashed before salts existed. */
const keyHash = (salt: string, secret: string) => sha256(salt + sha256(secret));

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

export const unauthenticated = (message = 'You are not authenticated.') => new ServiceError('svc_rest_authentication_error', message, 401);

const APP_PASSWORD_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** WordPress-style application password: six groups of four, spaces optional when it is used. */
function newAppPassword(): string {
  const chars = Array.from({ length: 24 }, () => APP_PASSWORD_ALPHABET[randomInt(APP_PASSWORD_ALPHABET.length)]);
  return chars.join('').replace(/(.{4})(?=.)/g, '$1 ');
}

// A hash to compare against when the user or key is unknown, so that both paths cost the same.
const DUMMY_HASH = sha256('sitefleet-no-such-credential');

const keyNotFound = (id: number) => new ServiceError('svc_key_not_found', `No API key with ID ${id}.`, 404);
const userNotFound = (name: string) => new ServiceError('svc_user_not_found', `No user named "${name}".`, 404);

/** The last administrator user can be neither deleted nor demoted: someone must be left to manage the dashboard. */
function assertNotLastAdministrator(tx: Tx, u: UserRecord, what: 'delete' | 'demote'): void {
  if (u.role !== 'administrator') return;
  const admins = [...tx.all<UserRecord>('users')].filter((x) => x.role === 'administrator').length;
  if (admins <= 1)
    throw new ServiceError(
      'svc_last_administrator',
      `"${u.name}" is the last administrator; ${what === 'delete' ? 'deleting' : 'demoting'} them would leave nobody to manage the dashboard. Make another administrator first.`,
      409,
    );
}

/** What a scope may be given as: any of its lists, each up to MAX_SCOPE_IDS ids. */
export type ScopeInput = Partial<Scope> | null;

/**
 * A user's or key's scope, checked inside the write that stores it: each id must name an existing client, tag or site
 * (404 as for any unknown one); administrators see the whole fleet (a scope on them is refused); a client user is bound
 * to exactly one client, and nothing else. Null: the whole fleet.
 */
function checkedScope(tx: Tx, input: ScopeInput | undefined, holder: { admin: boolean; role?: UserRole }): Scope | null {
  const scope = normalScope(input);
  for (const [kind, ids] of Object.entries(scope ?? {})) {
    if (ids.length > MAX_SCOPE_IDS)
      throw new ServiceError('svc_invalid_input', `A scope lists at most ${MAX_SCOPE_IDS} ${kind}.`, 400, {
        params: { scope: `Too many ${kind}.` },
      });
  }
  if (scope && holder.admin)
    throw new ServiceError(
      'svc_invalid_input',
      'Administrators see the whole fleet: a scope is for managers, viewers, clients and keys that are not administrator keys.',
      400,
      { params: { scope: 'Not for administrators.' } },
    );
  if (holder.role === 'client' && (!scope || scope.clients.length !== 1 || scope.tags.length || scope.sites.length))
    throw new ServiceError(
      'svc_invalid_input',
      'A client user is bound to exactly one client: scope {"clients":[ID]} and nothing else.',
      400,
      {
        params: { scope: 'Exactly one client.' },
      },
    );
  // An ID that names nothing is a mistake in the input (400, naming it), not a missing thing the call is about.
  const unknown = (e: ServiceError) =>
    new ServiceError('svc_invalid_input', `Invalid scope: ${e.message}`, 400, { params: { scope: e.message } });
  for (const id of scope?.clients ?? []) if (!tx.get<ClientRecord>('clients', id)) throw unknown(errors.clientNotFound(id));
  for (const id of scope?.tags ?? []) if (!tx.get<TagRecord>('tags', id)) throw unknown(errors.tagNotFound(id));
  for (const id of scope?.sites ?? []) if (!tx.get<SiteRecord>('sites', id)) throw unknown(errors.siteNotFound(id));
  return scope;
}

/** A key's allow / deny lists as given: null clears one, undefined leaves it. */
export interface KeyToolLists {
  allow_tools?: string[] | null;
  deny_tools?: string[] | null;
}

export class AuthService {
  private keyIndexVersion = -1;
  private keyIndex = new Map<string, KeyRecord>();
  /** The lists of a key record as sets, made once per record (verifyBearer runs on every request). */
  private toolSets = new WeakMap<KeyRecord, ToolLists>();
  /** The tool names a key's lists may name (abilities/index.ts buildRegistry sets it); unset: lists cannot be set. */
  toolNames: ReadonlySet<string> | null = null;
  /** Run inside the write that deletes a user or changes their role (their console sessions end there). */
  readonly onAccessChange = new Cascade();
  /** The clock keys expire by (tests move it). */
  now: () => number = Date.now;

  constructor(private readonly store: Store) {}

  private keysById(): Map<string, KeyRecord> {
    const v = this.store.version('keys');
    if (v !== this.keyIndexVersion) {
      this.keyIndex = new Map([...this.store.all<KeyRecord>('keys')].map((k) => [k.key_id, k]));
      this.keyIndexVersion = v;
    }
    return this.keyIndex;
  }

  async createKey(
    name: string,
    permissions: KeyPermission,
    opts: { admin?: boolean; expires_at?: string | null; scope?: ScopeInput } & KeyToolLists = {},
  ): Promise<{ key: KeyRecord; token: string }> {
    if (opts.expires_at) this.assertFuture(opts.expires_at);
    const lists = this.toolLists(opts);
    const key_id = randomBytes(6).toString('hex');
    const secret = randomBytes(24).toString('base64url');
    const salt = randomBytes(16).toString('hex');
    const key = await this.store.write((tx) =>
      tx.insert<KeyRecord>('keys', {
        name,
        permissions,
        key_id,
        salt,
        secret_hash: keyHash(salt, secret),
        created_at: now(),
        revoked: false,
        admin: opts.admin === true,
        expires_at: opts.expires_at ?? null,
        scope: checkedScope(tx, opts.scope, { admin: opts.admin === true }),
        allow_tools: lists.allow_tools ?? null,
        deny_tools: lists.deny_tools ?? null,
      }),
    );
    return { key, token: `sf_${key_id}_${secret}` };
  }

  listKeys(): KeyRecord[] {
    return [...this.store.all<KeyRecord>('keys')];
  }

  async revokeKey(id: number): Promise<KeyRecord> {
    return this.store.write((tx) => {
      const k = tx.get<KeyRecord>('keys', id);
      if (!k) throw keyNotFound(id);
      return tx.put<KeyRecord>('keys', { ...k, revoked: true });
    });
  }

  getKey(id: number): KeyRecord {
    const k = this.store.get<KeyRecord>('keys', id);
    if (!k) throw keyNotFound(id);
    return k;
  }

  /** Whether a key is refused at authentication: revoked, or past its expiry. */
  keyEnded(k: KeyRecord): boolean {
    return k.revoked || (!!k.expires_at && Date.parse(k.expires_at) <= this.now());
  }

  /** Renames a key, changes its permissions, administrator flag or expiry (null: never). A revoked key stays revoked. */
  async updateKey(
    id: number,
    patch: { name?: string; permissions?: KeyPermission; admin?: boolean; expires_at?: string | null; scope?: ScopeInput } & KeyToolLists,
  ): Promise<KeyRecord> {
    if (patch.expires_at) this.assertFuture(patch.expires_at);
    const lists = this.toolLists(patch);
    return this.store.write((tx) => {
      const k = tx.get<KeyRecord>('keys', id);
      if (!k) throw keyNotFound(id);
      const next: KeyRecord = { ...k };
      if (patch.name !== undefined) next.name = patch.name;
      if (patch.permissions !== undefined) next.permissions = patch.permissions;
      if (patch.admin !== undefined) next.admin = patch.admin;
      if (patch.expires_at !== undefined) next.expires_at = patch.expires_at;
      if (patch.scope !== undefined || patch.admin !== undefined)
        next.scope = checkedScope(tx, patch.scope !== undefined ? patch.scope : next.admin ? null : next.scope, {
          admin: next.admin === true,
        });
      if (lists.allow_tools !== undefined) next.allow_tools = lists.allow_tools;
      if (lists.deny_tools !== undefined) next.deny_tools = lists.deny_tools;
      return tx.put<KeyRecord>('keys', next);
    });
  }

  /**
   * A key's lists checked: every name a tool (ability) of this server, each once (sorted, duplicates dropped); an empty
   * list is null (an empty allow list would be a key that can do nothing: revoke it instead). 400 naming the first
   * unknown name.
   */
  private toolLists(given: KeyToolLists): KeyToolLists {
    const out: KeyToolLists = {};
    for (const field of ['allow_tools', 'deny_tools'] as const) {
      const list = given[field];
      if (list === undefined) continue;
      if (list === null || list.length === 0) {
        out[field] = null;
        continue;
      }
      const known = this.toolNames;
      if (!known) throw new ServiceError('svc_invalid_input', `${field} cannot be set here.`, 400);
      const names = [...new Set(list.map((n) => n.replace(/^svc\//, '')))].sort();
      const unknown = names.find((n) => !known.has(n));
      if (unknown !== undefined)
        throw new ServiceError('svc_invalid_input', `${field}: no tool named "${unknown}".`, 400, {
          params: { [field]: `Unknown tool ${unknown}.` },
        });
      out[field] = names;
    }
    return out;
  }

  /** A key's lists as the principal carries them, or undefined when it has none. */
  private listsOf(k: KeyRecord): ToolLists | undefined {
    if (!k.allow_tools?.length && !k.deny_tools?.length) return undefined;
    let t = this.toolSets.get(k);
    if (!t) {
      t = { allow: k.allow_tools?.length ? new Set(k.allow_tools) : null, deny: k.deny_tools?.length ? new Set(k.deny_tools) : null };
      this.toolSets.set(k, t);
    }
    return t;
  }

  private assertFuture(at: string): void {
    if (!(Date.parse(at) > this.now()))
      throw new ServiceError('svc_invalid_input', 'expires_at must be a time in the future.', 400, {
        params: { expires_at: 'In the past.' },
      });
  }

  /** The principal for a Bearer token, or 401. */
  verifyBearer(token: string): Principal {
    const m = /^sf_([0-9a-f]{12})_([A-Za-z0-9_-]{32})$/.exec(token.trim());
    const key = m ? this.keysById().get(m[1]!) : undefined;
    const ok = sameHash(keyHash(key?.salt ?? '', m?.[2] ?? ''), key?.secret_hash ?? DUMMY_HASH);
    if (!key || !ok) throw unauthenticated('The API key is invalid, revoked or expired.');
    if (this.keyEnded(key)) throw unauthenticated('The API key is invalid, revoked or expired.');
    const tools = this.listsOf(key);
    const p: Principal = {
      kind: 'key',
      id: key.id,
      name: key.name,
      permissions: key.permissions,
      admin: key.admin === true,
      scope: normalScope(key.scope),
    };
    return tools ? { ...p, tools } : p;
  }

  async createUser(name: string, role: UserRole, scope?: ScopeInput): Promise<{ user: UserRecord; password: string }> {
    if (!/^[A-Za-z0-9._@-]{1,60}$/.test(name)) {
      throw new ServiceError('svc_invalid_input', 'User names are 1-60 letters, digits, dots, dashes, underscores or @.', 400);
    }
    const password = newAppPassword();
    const salt = randomBytes(16).toString('hex');
    const user = await this.store.write((tx) => {
      for (const u of tx.all<UserRecord>('users')) {
        if (u.name.toLowerCase() === name.toLowerCase())
          throw new ServiceError('svc_user_exists', `A user named "${name}" already exists.`, 409);
      }
      return tx.insert<UserRecord>('users', {
        name,
        role,
        scope: checkedScope(tx, scope, { admin: role === 'administrator', role }),
        salt,
        password_hash: sha256(salt + password.replace(/ /g, '')),
        created_at: now(),
      });
    });
    return { user, password };
  }

  listUsers(): UserRecord[] {
    return [...this.store.all<UserRecord>('users')];
  }

  getUser(name: string): UserRecord {
    const u = [...this.store.all<UserRecord>('users')].find((x) => x.name === name);
    if (!u) throw userNotFound(name);
    return u;
  }

  async deleteUser(name: string): Promise<UserRecord> {
    return this.store.write((tx) => {
      const u = [...tx.all<UserRecord>('users')].find((x) => x.name === name);
      if (!u) throw userNotFound(name);
      assertNotLastAdministrator(tx, u, 'delete');
      this.onAccessChange.run(tx, u.id);
      tx.delete('users', u.id);
      return u;
    });
  }

  /** Gives a user another role; their console sessions end (they log in again with the new role). */
  setRole(name: string, role: UserRole): Promise<UserRecord> {
    return this.updateUser(name, { role });
  }

  /**
   * Changes a user's role and/or scope. A role change ends their console sessions (they log in again with the new
   * role); a scope change applies to their next request, on every door and in open sessions.
   */
  async updateUser(name: string, patch: { role?: UserRole; scope?: ScopeInput }): Promise<UserRecord> {
    return this.store.write((tx) => {
      const u = [...tx.all<UserRecord>('users')].find((x) => x.name === name);
      if (!u) throw userNotFound(name);
      const role = patch.role ?? u.role;
      const scope = checkedScope(tx, patch.scope !== undefined ? patch.scope : role === 'administrator' ? null : u.scope, {
        admin: role === 'administrator',
        role,
      });
      if (role === u.role && JSON.stringify(scope) === JSON.stringify(normalScope(u.scope))) return u;
      if (role !== u.role) {
        assertNotLastAdministrator(tx, u, 'demote');
        this.onAccessChange.run(tx, u.id);
      }
      return tx.put<UserRecord>('users', { ...u, role, scope });
    });
  }

  /** The principal for HTTP Basic user:application-password (spaces in the password are ignored), or 401. */
  verifyBasic(name: string, password: string): Principal {
    const user = [...this.store.all<UserRecord>('users')].find((u) => u.name.toLowerCase() === name.toLowerCase());
    const ok = sameHash(sha256((user?.salt ?? '') + password.replace(/ /g, '')), user?.password_hash ?? DUMMY_HASH);
    if (!user || !ok) throw new ServiceError('incorrect_password', 'The provided password is an invalid application password.', 401);
    return userPrincipal(user);
  }

  isEmpty(): boolean {
    return this.store.count('users') === 0 && this.store.count('keys') === 0;
  }
}

/** The principal of a dashboard user as stored now (its role and scope): every door builds it here, per request. */
export function userPrincipal(user: UserRecord): Principal {
  return { kind: 'user', id: user.id, name: user.name, role: user.role, scope: normalScope(user.scope) };
}
