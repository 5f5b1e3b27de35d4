// What the running call may see of the fleet (issue 32): the sites of its scope (core/scope.ts), and the tags, clients
// and jobs that touch them. Every site lookup, list, count and search goes through SiteService, which asks here; the
// tag, client, job, history and monitor services ask here too. A thing outside the scope is answered as missing.
import { callScope, scopeKey } from '../core/scope.js';
import type { Store } from '../store/engine.js';
import type { SiteRecord } from '../store/records.js';

/** Scopes whose site sets are kept at once (each is re-made when sites or tags change). */
const CACHED_SCOPES = 64;

export class SiteAccess {
  private readonly cache = new Map<string, { version: string; ids: ReadonlySet<number> }>();

  /** `sitesOf` answers a tag's sites, whatever the scope (TagService's index: membership is kept on the sites). */
  constructor(
    private readonly store: Store,
    private readonly sitesOf: (tagId: number) => readonly number[],
  ) {}

  /** The ids of the sites the current call may see, or null when it sees the whole fleet. */
  visible(): ReadonlySet<number> | null {
    const scope = callScope();
    if (!scope) return null;
    const key = scopeKey(scope);
    const version = `${this.store.version('sites')}.${this.store.version('tags')}`;
    const hit = this.cache.get(key);
    if (hit && hit.version === version) return hit.ids;
    const ids = new Set<number>();
    for (const id of scope.sites) if (this.store.get<SiteRecord>('sites', id)) ids.add(id);
    for (const id of scope.tags) for (const s of this.sitesOf(id)) ids.add(s);
    if (scope.clients.length) {
      const clients = new Set(scope.clients);
      for (const s of this.store.all<SiteRecord>('sites')) if (s.client_id !== null && clients.has(s.client_id)) ids.add(s.id);
    }
    if (!hit && this.cache.size >= CACHED_SCOPES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, { version, ids });
    return ids;
  }

  /** Whether the current call may see this site. */
  seesSite(id: number): boolean {
    const v = this.visible();
    return !v || v.has(id);
  }

  /** A tag is seen when the scope names it or it carries a site in scope. */
  seesTag(tagId: number): boolean {
    const scope = callScope();
    if (!scope || scope.tags.includes(tagId)) return true;
    const v = this.visible()!;
    return this.sitesOf(tagId).some((s) => v.has(s));
  }

  /** A client is seen when the scope names it or it owns a site in scope. */
  seesClient(clientId: number): boolean {
    const scope = callScope();
    if (!scope || scope.clients.includes(clientId)) return true;
    for (const id of this.visible()!) if (this.store.get<SiteRecord>('sites', id)?.client_id === clientId) return true;
    return false;
  }

  /** Work over sites (a job, a history entry) is seen when it names sites and every one is in scope. */
  seesAll(siteIds: readonly number[]): boolean {
    const v = this.visible();
    return !v || (siteIds.length > 0 && siteIds.every((id) => v.has(id)));
  }

  /** Of these site ids, those the current call may see. */
  only(siteIds: readonly number[]): number[] {
    const v = this.visible();
    return v ? siteIds.filter((id) => v.has(id)) : [...siteIds];
  }
}
