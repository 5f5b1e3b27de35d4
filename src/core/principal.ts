// Who is calling: a user (application password), an API key, or the local stdio process.
import { ServiceError } from './errors.js';
import { isLimited, type Scope } from './scope.js';

export type KeyPermission = 'read' | 'write' | 'read_write' | 'delete';
/**
 * administrator: everything; manager: reads, and acts on the sites in scope (site actions), never dashboard-wide
 * configuration; viewer: read-only; client: read-only, bound to one client.
 */
export const USER_ROLES = ['administrator', 'manager', 'viewer', 'client'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** Where a call came from, for the audit log: the door, and the client address (as --trust-proxy reads it). */
export interface CallOrigin {
  door: 'rest' | 'abilities' | 'mcp' | 'console' | 'cli' | 'http';
  address?: string | null;
}

/** A principal as authenticated at one HTTP request also says where that request came from (`origin`). */
export type Principal = (
  | { kind: 'user'; id: number; name: string; role: UserRole; scope?: Scope | null }
  | { kind: 'key'; id: number; name: string; permissions: KeyPermission; admin?: boolean; scope?: Scope | null; tools?: ToolLists }
  | {
      /** An OAuth access token (MCP over HTTP only): its scopes give the permission level and, if named, the toolsets. */
      kind: 'oauth';
      /** "<client_id>:<sub>": the audit log's who and the MCP session's owner. */
      name: string;
      permissions: KeyPermission;
      /** Toolsets the token's scopes name (sitefleet:toolset:NAME); null: none named, every toolset. */
      toolsets: readonly string[] | null;
    }
  | { kind: 'local'; name: 'stdio' | 'cli'; readOnly?: boolean }
) & { origin?: CallOrigin };

/**
 * A key's own narrowing by tool (ability) name: `allow` (when set, only these) and `deny` (never these). Both only
 * narrow what the key's permission level allows, on every door.
 */
export interface ToolLists {
  allow: ReadonlySet<string> | null;
  deny: ReadonlySet<string> | null;
}

/** The ability a permission check is about, when there is one: its name (per-key lists) and toolset (OAuth scopes). */
export interface AbilityRef {
  name: string;
  toolset: string;
}

/** Which HTTP methods a key level opens (REST v2 reference §1.3; HEAD and OPTIONS follow GET). */
export function keyAllowsMethod(p: KeyPermission, method: string): boolean {
  switch (method) {
    case 'GET':
    case 'HEAD':
      return p === 'read' || p === 'read_write';
    case 'POST':
    case 'PUT':
    case 'PATCH':
      return p === 'write' || p === 'read_write';
    case 'DELETE':
      return p === 'write' || p === 'read_write' || p === 'delete';
    case 'OPTIONS':
      return true;
    default:
      return false;
  }
}

/** The methods the key rule speaks of; any other (TRACE, PROPFIND, …) no route serves: 405, not a key's 403. */
export const KEY_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

const METHOD_WORD: Record<string, string> = { GET: 'read', HEAD: 'read', POST: 'write', PUT: 'write', PATCH: 'write', DELETE: 'delete' };

export function keyMethodError(method: string): ServiceError {
  return new ServiceError('svc_permission_denied', `The API key provided does not have ${METHOD_WORD[method] ?? method} permissions.`, 403);
}

/** What the permission rule reads of an ability: its annotations. */
export interface Permit {
  readonly: boolean;
  admin?: boolean;
  siteAction?: boolean;
}

/** The scope a principal sees: null for the whole fleet (administrators and the local process always do). */
export function scopeOf(p: Principal): Scope | null {
  // An OAuth token carries no scope of sitefleet's (its scopes are permissions and toolsets): the whole fleet.
  if (p.kind === 'local' || p.kind === 'oauth' || isAdministrator(p)) return null;
  if (isLimited(p.scope)) return p.scope;
  // A client user is bound to one client; one stored without it (never written so) sees nothing, not everything.
  return p.kind === 'user' && p.role === 'client' ? NOTHING : null;
}

/** A scope no site is in (client ids start at 1). */
const NOTHING: Scope = { clients: [0], tags: [], sites: [] };

/**
 * Why a principal may not run an ability (its annotations, called with `method`), or null when it may. The one rule.
 * Users by role: administrators everything; managers reads and site actions (annotations.siteAction: acts on the sites
 * named or selected, all within their scope), never the rest — settings, users, keys, channels, tags, clients, costs —
 * so an ability not marked a site action is refused to them by default; viewers and clients read-only abilities. Keys
 * by the HTTP method the call stands for (the request's on REST, the ability's own on the abilities and MCP doors),
 * and a key limited to a scope, like a manager, only to reads and site actions; a key's tool lists and an OAuth
 * token's scopes (permission level, toolsets) narrow that further, never widen it.
 */
export function refusal(p: Principal, ability: Permit, method: string, which?: AbilityRef): ServiceError | null {
  if (ability.admin && !isAdministrator(p)) {
    return new ServiceError('svc_permission_denied', 'Only administrators may do this.', 403);
  }
  if (p.kind === 'user' && p.role === 'manager' && !ability.readonly && !ability.siteAction) {
    return new ServiceError(
      'svc_permission_denied',
      'Managers act on the sites in their scope; dashboard-wide configuration is for administrators.',
      403,
    );
  }
  if (p.kind === 'user' && p.role !== 'administrator' && p.role !== 'manager' && !ability.readonly) {
    return new ServiceError('svc_permission_denied', 'You do not have permission to perform this action.', 403);
  }
  if (p.kind === 'key' && !keyAllowsMethod(p.permissions, method)) return keyMethodError(method);
  if (p.kind === 'key' && scopeOf(p) && !ability.readonly && !ability.siteAction) {
    return new ServiceError('svc_permission_denied', 'A key limited to a scope may act only on the sites in it.', 403);
  }
  if (p.kind === 'key' && p.tools && which) {
    const { allow, deny } = p.tools;
    if ((allow && !allow.has(which.name)) || deny?.has(which.name))
      return new ServiceError('svc_permission_denied', `This API key may not use ${which.name} (the key's tool list leaves it out).`, 403, {
        ability: which.name,
      });
  }
  if (p.kind === 'oauth') {
    if (!keyAllowsMethod(p.permissions, method))
      return new ServiceError(
        'svc_permission_denied',
        `The access token's scopes do not allow this (${p.permissions === 'read' ? 'sitefleet:read only' : p.permissions}).`,
        403,
        { scope_needed: METHOD_WORD[method] === 'read' ? 'sitefleet:read' : 'sitefleet:write' },
      );
    if (p.toolsets && which && !p.toolsets.includes(which.toolset))
      return new ServiceError('svc_permission_denied', `The access token's scopes do not include the ${which.toolset} toolset.`, 403, {
        scope_needed: `sitefleet:toolset:${which.toolset}`,
      });
  }
  if (p.kind === 'local' && p.readOnly && !ability.readonly) {
    return new ServiceError('svc_permission_denied', 'This server runs in read-only mode.', 403);
  }
  return null;
}

/** Administrators: users with that role, API keys made administrator keys, and the local process (CLI, stdio). */
export function isAdministrator(p: Principal): boolean {
  if (p.kind === 'user') return p.role === 'administrator';
  if (p.kind === 'key') return p.admin === true;
  // An access token is never an administrator's: managing keys and users stays with keys and the console.
  if (p.kind === 'oauth') return false;
  return true;
}

/**
 * May this principal write (run a POST that is not read-only, acting on sites)? Administrators, managers, write keys, a
 * local process not read-only.
 */
export function mayWrite(p: Principal): boolean {
  return refusal(p, { readonly: false, siteAction: true }, 'POST') === null;
}

/** May this principal change dashboard-wide configuration (and so see its secrets)? Not managers, nor scoped keys. */
export function mayConfigure(p: Principal): boolean {
  return refusal(p, { readonly: false }, 'POST') === null;
}

export function assertMayRun(p: Principal, ability: Permit, method: string, which?: AbilityRef): void {
  const no = refusal(p, ability, method, which);
  if (no) throw no;
}
