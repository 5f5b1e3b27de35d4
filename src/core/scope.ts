// Access scopes (issue 32): which sites a user or API key may see and act on. A scope names clients, tags and sites; a
// site is in it when it belongs to a listed client, carries a listed tag, or is listed. No scope (or an empty one) is
// the whole fleet. The registry runs each call inside its principal's scope (`withScope`); the domain's site selection
// (domain/access.ts) reads it from there, so every lookup, list, count, search and fan-out of that call sees only the
// scope, whatever door the call came through and whichever service asks.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface Scope {
  clients: number[];
  tags: number[];
  sites: number[];
}

/** Ids a scope may list, per kind: a bound on the work of deciding what is in scope. */
export const MAX_SCOPE_IDS = 500;

/** Whether a scope limits anything (absent or all lists empty: the whole fleet). */
export function isLimited(s: Scope | null | undefined): s is Scope {
  return !!s && (s.clients.length > 0 || s.tags.length > 0 || s.sites.length > 0);
}

/** A scope's canonical form (sorted, deduplicated ids), or null for the whole fleet. */
export function normalScope(s: Partial<Scope> | null | undefined): Scope | null {
  if (!s) return null;
  const ids = (v: number[] | undefined) => [...new Set(v ?? [])].sort((a, b) => a - b);
  const out = { clients: ids(s.clients), tags: ids(s.tags), sites: ids(s.sites) };
  return isLimited(out) ? out : null;
}

/** A short text that differs between any two different scopes (cache keys, ETags); '' for the whole fleet. */
export function scopeKey(s: Scope | null | undefined): string {
  if (!isLimited(s)) return '';
  return `c${s.clients.join(',')};t${s.tags.join(',')};s${s.sites.join(',')}`;
}

const current = new AsyncLocalStorage<{ scope: Scope | null }>();

/** Runs `fn` (and all it starts) seeing only `scope`; null: the whole fleet. */
export function withScope<T>(scope: Scope | null | undefined, fn: () => T): T {
  const limited = isLimited(scope);
  // The whole fleet outside any scope already: nothing to set (entering a context costs more than the call it wraps).
  if (!limited && current.getStore() === undefined) return fn();
  return current.run({ scope: limited ? scope : null }, fn);
}

/** The scope of the call running now, or null when it sees the whole fleet (schedulers, the CLI, administrators). */
export function callScope(): Scope | null {
  return current.getStore()?.scope ?? null;
}

/**
 * Runs `fn` outside any caller's scope: work a call only sets going for the whole dashboard (the job runner, which
 * then takes every queued job, not only this caller's) must not inherit the scope of the call that woke it.
 */
export function unscoped<T>(fn: () => T): T {
  return current.exit(fn);
}
