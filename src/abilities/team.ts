// Dashboard access over the API (issue 32): API keys and dashboard users, administrators only (annotations.admin:
// refused to anyone else by the registry, and not offered to them as MCP tools). A key's secret and a user's
// application password are answered once, when made; only their salted hashes are stored.
import { z } from 'zod';
import { defineAbility } from './context.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { ServiceError } from '../core/errors.js';
import { Page, paginate } from '../core/paging.js';
import { USER_ROLES } from '../core/principal.js';
import { MAX_SCOPE_IDS, normalScope } from '../core/scope.js';
import type { KeyRecord, UserRecord } from '../store/records.js';
import type { AuthService } from '../domain/auth.js';
import { Confirm, DryRun, paged, undescribed } from './schemas.js';

const Permissions = z
  .enum(['read', 'write', 'read_write', 'delete'])
  .describe('read: GET; write: POST/PUT/PATCH/DELETE; read_write: all; delete: DELETE.');
const KeyName = z.string().trim().min(1).max(100).describe('A name for the key (1-100 characters).');
const ExpiresAt = z.iso.datetime({ offset: true }).nullable().describe('Expiry (ISO 8601, future); null: never.');
const KeyId = z.number().int().min(1);
/** manager: reads and site actions in its scope; viewer and client (bound to one client): read-only. */
const Role = z.enum(USER_ROLES);
const ScopeIds = z.array(z.number().int().min(1)).max(MAX_SCOPE_IDS).optional();
/** A scope as given: any of its lists; {} (all empty): the whole fleet. */
const ScopeInput = z
  .object({ clients: ScopeIds, tags: ScopeIds, sites: ScopeIds })
  .strict()
  .describe('Only sites of these client, tag, site IDs; {}: all.');
const ScopeView = z
  .object({ clients: z.array(z.number().int()), tags: z.array(z.number().int()), sites: z.array(z.number().int()) })
  .nullable()
  .describe('The sites this holder may see and act on (clients, tags, sites); null: the whole fleet.');
const UserName = z.string().min(1).max(60).describe('Dashboard user name.');
/** At most this many names a list: more than there are tools, so a list of every tool fits. */
const MAX_TOOL_LIST = 500;
// Names are checked against the registry's by the domain (an unknown one is a 400 naming it). Short descriptions:
// every byte here is in the tools/list an assistant pays for.
const ToolList = z.array(z.string().min(1).max(100)).max(MAX_TOOL_LIST);
const AllowTools = ToolList.describe('Only these tools; [] clears.');
const DenyTools = ToolList.describe('Never these tools; [] clears.');
/** Up to 200 a page, as upstream's key list. */
const PerPage = z.number().int().min(1).max(200).default(20).describe('Items per page (1-200, default 20).');

export const ApiKey = z.object({
  id: z.number().int(),
  name: z.string(),
  permissions: Permissions,
  admin: z.boolean().describe('An administrator key: may manage keys, users and read the audit log.'),
  scope: ScopeView,
  truncated_key: z.string().describe("The token's public start; the secret is never shown again."),
  active: z.boolean().describe('Neither revoked nor expired.'),
  revoked: z.boolean(),
  expires_at: z.string().nullable(),
  allow_tools: z.array(z.string()).nullable().describe('Only these tools, on every door; null: every tool its permissions allow.'),
  deny_tools: z.array(z.string()).nullable().describe('Never these tools, on every door; null: none.'),
  created_at: z.string(),
});

export const DashboardUser = z.object({
  id: z.number().int(),
  name: z.string(),
  role: Role,
  scope: ScopeView,
  created_at: z.string(),
});

const keyView = (auth: AuthService, k: KeyRecord): z.input<typeof ApiKey> => ({
  id: k.id,
  name: k.name,
  permissions: k.permissions,
  admin: k.admin === true,
  scope: normalScope(k.scope),
  truncated_key: `sf_${k.key_id}_…`,
  active: !auth.keyEnded(k),
  revoked: k.revoked,
  expires_at: k.expires_at ?? null,
  allow_tools: k.allow_tools ?? null,
  deny_tools: k.deny_tools ?? null,
  created_at: k.created_at,
});
const userView = (u: UserRecord): z.input<typeof DashboardUser> => ({
  id: u.id,
  name: u.name,
  role: u.role,
  scope: normalScope(u.scope),
  created_at: u.created_at,
});

const adminRead = { readonly: true, destructive: false, idempotent: true, openWorld: false, admin: true };
const adminWrite = { readonly: false, destructive: false, idempotent: false, openWorld: false, admin: true };
const adminEdit = { readonly: false, destructive: false, idempotent: true, openWorld: false, admin: true };
const adminDelete = { readonly: false, destructive: true, idempotent: true, openWorld: false, admin: true };

export const listApiKeys = defineAbility({
  name: 'list-api-keys-v1',
  label: 'List API keys',
  category: 'svc-settings',
  toolset: 'settings',
  description: 'API keys of this dashboard, newest first, without their secrets. Administrators only.',
  input: z.object({ page: Page, per_page: PerPage }).strict(),
  output: paged(ApiKey),
  annotations: adminRead,
  execute: ({ page, per_page }, ctx) => {
    const all = ctx.auth.listKeys().sort((a, b) => b.id - a.id);
    return { items: paginate(all, page, per_page).map((k) => keyView(ctx.auth, k)), page, per_page, total: all.length };
  },
});

export const addApiKey = defineAbility({
  name: 'add-api-key-v1',
  label: 'Add API key',
  category: 'svc-settings',
  toolset: 'settings',
  description: 'Create an API key; its token is shown only here; admin: true for an administrator key. Administrators only.',
  input: z
    .object({
      name: KeyName,
      permissions: Permissions.default('read'),
      admin: z.boolean().default(false),
      expires_at: ExpiresAt.optional(),
      scope: ScopeInput.optional(),
    })
    .strict(),
  output: z.object({ key: ApiKey, token: z.string().describe('Bearer token, shown once.') }),
  annotations: adminWrite,
  execute: async (i, ctx) => {
    const { key, token } = await ctx.auth.createKey(i.name, i.permissions, {
      admin: i.admin,
      expires_at: i.expires_at ?? null,
      scope: i.scope ?? null,
    });
    return { key: keyView(ctx.auth, key), token };
  },
});

export const updateApiKey = defineAbility({
  name: 'update-api-key-v1',
  label: 'Update API key',
  category: 'svc-settings',
  toolset: 'settings',
  description:
    "Change an API key's fields as in add-api-key-v1 and its tool lists; active: false revokes it (for good). " +
    'Administrators only. Errors: svc_key_not_found (404).',
  input: z
    .object({
      key_id: KeyId,
      ...undescribed({
        name: KeyName.optional(),
        permissions: Permissions.optional(),
        admin: z.boolean().optional(),
        expires_at: ExpiresAt.optional(),
        scope: ScopeInput.optional(),
      }),
      allow_tools: AllowTools.optional(),
      deny_tools: DenyTools.optional(),
      active: z.boolean().optional().describe('false: revoke it for good.'),
    })
    .strict(),
  output: ApiKey,
  annotations: adminEdit,
  execute: async ({ key_id, active, ...patch }, ctx) => {
    const k = ctx.auth.getKey(key_id);
    if (active === true && k.revoked)
      throw new ServiceError('svc_key_revoked', `API key ${key_id} is revoked; make a new one.`, 409, { key_id });
    let next = await ctx.auth.updateKey(key_id, patch);
    if (active === false) next = await ctx.auth.revokeKey(key_id);
    return keyView(ctx.auth, next);
  },
});

export const revokeApiKey = defineAbility({
  name: 'revoke-api-key-v1',
  label: 'Revoke API key',
  category: 'svc-settings',
  toolset: 'settings',
  description:
    'Revoke an API key (confirm: true; dry_run previews): its next request is refused (401); the record stays. ' +
    'Administrators only. Errors: svc_key_not_found (404).',
  input: z.object({ key_id: KeyId, confirm: Confirm, dry_run: DryRun }).strict(),
  output: z.object({ revoked: z.boolean(), dry_run: z.boolean(), key: ApiKey }),
  annotations: adminDelete,
  acceptsPost: true,
  execute: async (i, ctx) => {
    refuseBothFlags(i);
    const k = ctx.auth.getKey(i.key_id);
    if (i.dry_run) return { revoked: false, dry_run: true, key: keyView(ctx.auth, k) };
    requireConfirm(i, 'Revoking requires confirm parameter to be true.');
    return { revoked: true, dry_run: false, key: keyView(ctx.auth, await ctx.auth.revokeKey(i.key_id)) };
  },
});

export const listDashboardUsers = defineAbility({
  name: 'list-dashboard-users-v1',
  label: 'List dashboard users',
  category: 'svc-settings',
  toolset: 'settings',
  description: 'Dashboard users (who log in to sitefleet; not WordPress users) by name, with their roles. Administrators only.',
  input: z.object({ page: Page, per_page: PerPage }).strict(),
  output: paged(DashboardUser),
  annotations: adminRead,
  execute: ({ page, per_page }, ctx) => {
    const all = ctx.auth.listUsers().sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : 1));
    return { items: paginate(all, page, per_page).map(userView), page, per_page, total: all.length };
  },
});

export const addDashboardUser = defineAbility({
  name: 'add-dashboard-user-v1',
  label: 'Add dashboard user',
  category: 'svc-settings',
  toolset: 'settings',
  description:
    'Create a dashboard user (manager: site actions in scope; viewer, client: read-only). The application password ' +
    'is shown only here. Administrators only. Errors: svc_user_exists (409).',
  input: z.object({ name: UserName, role: Role.default('viewer'), scope: ScopeInput.optional() }).strict(),
  output: z.object({ user: DashboardUser, password: z.string().describe('Application password, shown once.') }),
  annotations: adminWrite,
  execute: async ({ name, role, scope }, ctx) => {
    const { user, password } = await ctx.auth.createUser(name, role, scope);
    return { user: userView(user), password };
  },
});

export const updateDashboardUser = defineAbility({
  name: 'update-dashboard-user-v1',
  label: 'Update dashboard user',
  category: 'svc-settings',
  toolset: 'settings',
  description:
    "Change a dashboard user's role (console sessions end) or scope (as in add-dashboard-user-v1). The last " +
    'administrator cannot be demoted. Administrators only. Errors: svc_user_not_found (404), svc_last_administrator (409).',
  input: z.object({ name: UserName, role: Role.optional(), ...undescribed({ scope: ScopeInput.optional() }) }).strict(),
  output: DashboardUser,
  annotations: adminEdit,
  execute: async ({ name, role, scope }, ctx) => userView(await ctx.auth.updateUser(name, { role, scope })),
});

export const deleteDashboardUser = defineAbility({
  name: 'delete-dashboard-user-v1',
  label: 'Delete dashboard user',
  category: 'svc-settings',
  toolset: 'settings',
  description:
    'Delete a dashboard user (confirm: true; dry_run previews); their console sessions end. Not the last ' +
    'administrator. Administrators only. Errors: svc_user_not_found (404), svc_last_administrator (409).',
  input: z.object({ name: UserName, confirm: Confirm, dry_run: DryRun }).strict(),
  output: z.object({ deleted: z.boolean(), dry_run: z.boolean(), user: DashboardUser }),
  annotations: adminDelete,
  acceptsPost: true,
  execute: async (i, ctx) => {
    refuseBothFlags(i);
    const u = ctx.auth.getUser(i.name);
    if (i.dry_run) return { deleted: false, dry_run: true, user: userView(u) };
    requireConfirm(i);
    return { deleted: true, dry_run: false, user: userView(await ctx.auth.deleteUser(i.name)) };
  },
});

export const teamAbilities = [
  listApiKeys,
  addApiKey,
  updateApiKey,
  revokeApiKey,
  listDashboardUsers,
  addDashboardUser,
  updateDashboardUser,
  deleteDashboardUser,
] as const;

const AuditEntry = z.object({
  id: z.number().int().describe('The place in the hash chain.'),
  at: z.string(),
  who_kind: z.enum(['user', 'key', 'oauth', 'local', 'system']),
  who_id: z.number().int().nullable(),
  who_name: z.string(),
  door: z.string(),
  address: z.string().nullable(),
  action: z.string().describe('The ability, login, login-failed, or what a scheduler did.'),
  input: z.unknown().describe('The input, summarised; secrets redacted.'),
  outcome: z.string().describe('ok or the error code.'),
  status: z.number().int().nullable(),
  prev_hash: z.string(),
  hash: z.string(),
});

export const listAuditLog = defineAbility({
  name: 'list-audit-log-v1',
  label: 'List audit log',
  category: 'svc-settings',
  toolset: 'settings',
  description:
    'The audit log, newest first: changes through any door, logins, failed logins, scheduled runs. who: a name, ' +
    'user:ID or key:ID; outcome: ok, error or a code. Administrators only.',
  input: z
    .object({
      who: z.string().max(200).optional(),
      action: z.string().max(100).optional(),
      outcome: z.string().max(100).optional(),
      door: z.enum(['rest', 'abilities', 'mcp', 'console', 'cli', 'http', 'scheduler']).optional(),
      since: z.iso.datetime({ offset: true }).optional().describe('From this time (ISO 8601), inclusive.'),
      until: z.iso.datetime({ offset: true }).optional().describe('Before this time (ISO 8601).'),
      page: Page,
      per_page: PerPage,
    })
    .strict(),
  output: paged(AuditEntry),
  annotations: adminRead,
  execute: async ({ page, per_page, since, until, ...f }, ctx) => {
    const iso = (t?: string) => (t ? new Date(t).toISOString() : undefined);
    const { items, total } = await ctx.audit.list({ ...f, since: iso(since), until: iso(until) }, page, per_page);
    return { items, page, per_page, total };
  },
});

export const auditAbilities = [listAuditLog] as const;
