// Web console logins, kept in the store so that every process behind a proxy knows them, a restart keeps them, and a
// logout, a user's deletion or a role change ends them everywhere. The cookie holds a random 256-bit token; the store
// holds only its SHA-256 (a stolen copy of the store or a backup opens no session). The CSRF token is derived from the
// session token, so it is never stored either. Reads are the store's in-memory working set (no query per request):
// another process's logout reaches it as any other write does (lowdb: on the next read; PostgreSQL: the sync before
// each request).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { UserRole } from '../core/principal.js';
import type { ConsoleSessionRecord, UserRecord } from '../store/records.js';
import type { Store, Tx } from '../store/store.js';

/**
 * Sessions one user holds at once. A further login ends that user's own oldest session; no other user's session is
 * ever ended to make room (the total is bounded by the number of users, whom only an administrator creates).
 */
export const MAX_SESSIONS_PER_USER = 20;

const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const tokenHash = (token: string) => sha256(token);

/** A live session, as the console door sees it. */
export interface ConsoleSession {
  id: number;
  user: UserRecord;
  csrf: string;
  expiresAt: number;
}

export class ConsoleSessionService {
  /** The clock (ms); tests move it instead of sleeping. */
  now: () => number = () => Date.now();
  private indexVersion = -1;
  private index = new Map<string, ConsoleSessionRecord>();

  constructor(
    private readonly store: Store,
    private readonly ttlMs: number,
  ) {}

  /**
   * A new session for `userId` (with the role it has now). In the same write: expired sessions (anyone's) go, the
   * session named by `replacing` (the browser's previous cookie) goes, and past MAX_SESSIONS_PER_USER this user's own
   * oldest sessions go.
   */
  async create(user: Pick<UserRecord, 'id' | 'role'>, replacing?: string): Promise<{ token: string; session: ConsoleSession }> {
    const token = randomBytes(32).toString('base64url');
    const now = this.now();
    const old = replacing && TOKEN.test(replacing) ? tokenHash(replacing) : null;
    const rec = await this.store.write((tx) => {
      const mine: ConsoleSessionRecord[] = [];
      for (const s of [...tx.all<ConsoleSessionRecord>('console_sessions')]) {
        if (Date.parse(s.expires_at) <= now || s.token_hash === old) {
          tx.delete('console_sessions', s.id);
        } else if (s.user_id === user.id) mine.push(s);
      }
      // Ids grow with time: the lowest are the oldest logins.
      mine.sort((a, b) => a.id - b.id);
      for (const s of mine.slice(0, Math.max(0, mine.length - MAX_SESSIONS_PER_USER + 1))) tx.delete('console_sessions', s.id);
      return tx.insert<ConsoleSessionRecord>('console_sessions', {
        user_id: user.id,
        role: user.role as UserRole,
        token_hash: tokenHash(token),
        created_at: new Date(now).toISOString(),
        expires_at: new Date(now + this.ttlMs).toISOString(),
      });
    });
    const session = this.view(rec, token);
    if (!session) throw new Error('a new console session must be live'); // the user vanished in the meantime
    return { token, session };
  }

  /**
   * The live session a cookie's token names, or undefined: unknown, malformed, expired, its user deleted, or its
   * user's role changed since the login.
   */
  get(token: string | undefined): ConsoleSession | undefined {
    if (!token || !TOKEN.test(token)) return undefined;
    const rec = this.byHash().get(tokenHash(token));
    return rec ? this.view(rec, token) : undefined;
  }

  /** Ends the session a token names (logout), in every process. */
  async end(token: string): Promise<void> {
    if (!TOKEN.test(token)) return;
    const rec = this.byHash().get(tokenHash(token));
    if (!rec) return;
    await this.store.write((tx) => {
      tx.delete('console_sessions', rec.id);
    });
  }

  /** Ends every session of a user, inside the caller's write (user deletion, role change). */
  endAllOf(tx: Tx, userId: number): void {
    for (const s of [...tx.all<ConsoleSessionRecord>('console_sessions')]) if (s.user_id === userId) tx.delete('console_sessions', s.id);
  }

  /** The sessions a user holds (live or not yet swept). */
  countOf(userId: number): number {
    let n = 0;
    for (const s of this.store.all<ConsoleSessionRecord>('console_sessions')) if (s.user_id === userId) n++;
    return n;
  }

  /** The CSRF token of a session: a hash of its token under another label (the store never holds either). */
  csrfOf(token: string): string {
    return createHash('sha256').update(`sitefleet console csrf\0${token}`).digest('base64url');
  }

  /** Whether `given` is the CSRF token of the session `token` names (constant time). */
  csrfMatches(token: string, given: unknown): boolean {
    if (typeof given !== 'string') return false;
    const x = Buffer.from(given);
    const y = Buffer.from(this.csrfOf(token));
    return x.length === y.length && timingSafeEqual(x, y);
  }

  private view(rec: ConsoleSessionRecord, token: string): ConsoleSession | undefined {
    const expiresAt = Date.parse(rec.expires_at);
    if (!(expiresAt > this.now())) return undefined;
    const user = this.store.get<UserRecord>('users', rec.user_id);
    if (!user || user.role !== rec.role) return undefined;
    return { id: rec.id, user, csrf: this.csrfOf(token), expiresAt };
  }

  /** Sessions by token hash, rebuilt when the collection changes (here or in another process). */
  private byHash(): Map<string, ConsoleSessionRecord> {
    const v = this.store.version('console_sessions');
    if (v !== this.indexVersion) {
      this.index = new Map([...this.store.all<ConsoleSessionRecord>('console_sessions')].map((s) => [s.token_hash, s]));
      this.indexVersion = v;
    }
    return this.index;
  }
}
