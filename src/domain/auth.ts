// Credentials: API keys (Bearer) and users with application passwords (HTTP Basic). Only salted hashes are
// stored (a random salt per key and per user); every comparison is constant-time. Both secrets are 144+ random
// bits made here, so a salted SHA-256 is as strong as a slow hash would be, and keeps a request's auth check in
// microseconds.
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { ServiceError } from '../core/errors.js';
import type { KeyPermission, Principal, UserRole } from '../core/principal.js';
import type { KeyRecord, UserRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import { Cascade } from './cascade.js';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
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

export class AuthService {
  private keyIndexVersion = -1;
  private keyIndex = new Map<string, KeyRecord>();
  /** Run inside the write that deletes a user or changes their role (their console sessions end there). */
  readonly onAccessChange = new Cascade();

  constructor(private readonly store: Store) {}

  private keysById(): Map<string, KeyRecord> {
    const v = this.store.version('keys');
    if (v !== this.keyIndexVersion) {
      this.keyIndex = new Map([...this.store.all<KeyRecord>('keys')].map((k) => [k.key_id, k]));
      this.keyIndexVersion = v;
    }
    return this.keyIndex;
  }

  async createKey(name: string, permissions: KeyPermission): Promise<{ key: KeyRecord; token: string }> {
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
      if (!k) throw new ServiceError('svc_key_not_found', `No API key with ID ${id}.`, 404);
      return tx.put<KeyRecord>('keys', { ...k, revoked: true });
    });
  }

  /** The principal for a Bearer token, or 401. */
  verifyBearer(token: string): Principal {
    const m = /^sf_([0-9a-f]{12})_([A-Za-z0-9_-]{32})$/.exec(token.trim());
    const key = m ? this.keysById().get(m[1]!) : undefined;
    const ok = sameHash(keyHash(key?.salt ?? '', m?.[2] ?? ''), key?.secret_hash ?? DUMMY_HASH);
    if (!key || !ok) throw unauthenticated('The API key is invalid or revoked.');
    if (key.revoked) throw unauthenticated('The API key is invalid or revoked.');
    return { kind: 'key', id: key.id, name: key.name, permissions: key.permissions };
  }

  async createUser(name: string, role: UserRole): Promise<{ user: UserRecord; password: string }> {
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

  async deleteUser(name: string): Promise<UserRecord> {
    return this.store.write((tx) => {
      const u = [...tx.all<UserRecord>('users')].find((x) => x.name === name);
      if (!u) throw new ServiceError('svc_user_not_found', `No user named "${name}".`, 404);
      this.onAccessChange.run(tx, u.id);
      tx.delete('users', u.id);
      return u;
    });
  }

  /** Gives a user another role; their console sessions end (they log in again with the new role). */
  async setRole(name: string, role: UserRole): Promise<UserRecord> {
    return this.store.write((tx) => {
      const u = [...tx.all<UserRecord>('users')].find((x) => x.name === name);
      if (!u) throw new ServiceError('svc_user_not_found', `No user named "${name}".`, 404);
      if (u.role === role) return u;
      this.onAccessChange.run(tx, u.id);
      return tx.put<UserRecord>('users', { ...u, role });
    });
  }

  /** The principal for HTTP Basic user:application-password (spaces in the password are ignored), or 401. */
  verifyBasic(name: string, password: string): Principal {
    const user = [...this.store.all<UserRecord>('users')].find((u) => u.name.toLowerCase() === name.toLowerCase());
    const ok = sameHash(sha256((user?.salt ?? '') + password.replace(/ /g, '')), user?.password_hash ?? DUMMY_HASH);
    if (!user || !ok) throw new ServiceError('incorrect_password', 'The provided password is an invalid application password.', 401);
    return { kind: 'user', id: user.id, name: user.name, role: user.role };
  }

  isEmpty(): boolean {
    return this.store.count('users') === 0 && this.store.count('keys') === 0;
  }
}
