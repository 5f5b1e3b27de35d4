// Web console logins: random session ids (the cookie) with a CSRF token each, held in memory with an absolute
// expiry. A session names a user, never a role: the user is read again on every request, so a deleted user is
// logged out and a changed role applies at once. Sessions end with the process (a restart means logging in again).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export interface ConsoleSession {
  userId: number;
  csrf: string;
  expiresAt: number;
  /** Live job streams this session holds open (bounded per session). */
  streams: number;
}

/** Most sessions held at once; past it the one closest to expiry is dropped (its owner logs in again). */
export const MAX_SESSIONS = 10_000;

const digest = (id: string) => createHash('sha256').update(id).digest('hex');

export class ConsoleSessions {
  // Keyed by a hash of the id, so that a heap dump or a log of this map does not hand out live cookies.
  private map = new Map<string, ConsoleSession>();

  constructor(
    private readonly ttlMs: number,
    private readonly max = MAX_SESSIONS,
  ) {}

  create(userId: number, now = Date.now()): { id: string; session: ConsoleSession } {
    this.sweep(now);
    if (this.map.size >= this.max) {
      // Insertion order is expiry order (one TTL for all): the first entry is the oldest login.
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
    const id = randomBytes(32).toString('base64url');
    const session: ConsoleSession = { userId, csrf: randomBytes(32).toString('base64url'), expiresAt: now + this.ttlMs, streams: 0 };
    this.map.set(digest(id), session);
    return { id, session };
  }

  /** The live session a cookie value names, or undefined (unknown, malformed or expired). */
  get(id: string | undefined, now = Date.now()): ConsoleSession | undefined {
    if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id)) return undefined;
    const key = digest(id);
    const s = this.map.get(key);
    if (!s) return undefined;
    if (s.expiresAt <= now) {
      this.map.delete(key);
      return undefined;
    }
    return s;
  }

  delete(id: string): void {
    this.map.delete(digest(id));
  }

  get size(): number {
    return this.map.size;
  }

  private sweep(now: number): void {
    for (const [k, s] of this.map) {
      if (s.expiresAt > now) break; // expiry order: the rest are younger
      this.map.delete(k);
    }
  }
}

export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
