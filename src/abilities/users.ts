// User abilities: users on child sites, listed and created across selected sites, edited and deleted on one
// site, the connection administrator's password, and CSV import. No answer ever carries a password.
import { z } from 'zod';
import { defineAbility } from './context.js';
import type { ChildUserProfile } from '../child/replies.js';
import type { ChildUser } from '../child/snapshot.js';
import { siteError, type SiteSelection } from '../domain/selectors.js';
import { CsvUpload, MAX_CSV_BYTES } from '../domain/users-import.js';
import { USER_ROLES } from '../domain/users.js';
import type { SiteRecord } from '../store/records.js';
import {
  BasicSite,
  Confirm,
  DryRun,
  ItemError,
  NotProcessed,
  SelectionNotes,
  SiteRef,
  SiteSelectors,
  SkippedSite,
  bySiteList,
} from './schemas.js';
import { bySiteUrl } from './views.js';

const remoteRead = { readonly: true, destructive: false, idempotent: true, openWorld: true };

const UserRole = z.enum(USER_ROLES);
const UserId = z.number().int().min(1);

export const UserItem = z.object({
  id: z.number().int(),
  website_id: z.number().int(),
  username: z.string(),
  name: z.string().describe('Display name.'),
  email: z.string(),
  role: z.string(),
  posts: z.number().int().describe('Published posts.'),
  registered: z.string().describe('ISO 8601 UTC.'),
});

export const UserProfile = z.object({
  id: z.number().int(),
  role: z.string(),
  email: z.string(),
  first_name: z.string(),
  last_name: z.string(),
  nickname: z.string(),
  display_name: z.string(),
  user_url: z.string(),
  description: z.string(),
});

const userItem = (site: SiteRecord, u: ChildUser): z.infer<typeof UserItem> => ({
  id: u.id,
  website_id: site.id,
  username: u.login,
  name: u.display_name,
  email: u.email,
  role: u.role,
  posts: u.post_count,
  registered: u.registered,
});

const userProfile = (p: ChildUserProfile): z.infer<typeof UserProfile> => ({
  id: p.id,
  role: p.role,
  email: p.email,
  first_name: p.first_name,
  last_name: p.last_name,
  nickname: p.nickname,
  display_name: p.display_name,
  user_url: p.url,
  description: p.description,
});

const notes = (s: SiteSelection, notDone: SiteRecord[]) => ({
  skipped: s.skipped,
  unknown: s.unknown,
  ...(notDone.length ? { not_processed: notDone.map((x) => x.id) } : {}),
});
const basic = (s: SiteRecord) => ({ id: s.id, url: s.url, name: s.name });

export const listUsers = defineAbility({
  name: 'list-users-v1',
  label: 'List users',
  category: 'svc-users',
  toolset: 'users',
  description:
    'List the WordPress users of selected sites, live, filtered by search and roles. Errors: ' +
    'svc_sites_required (400), svc_sites_not_found (404).',
  input: z
    .object({
      ...SiteSelectors,
      search: z.string().max(200).optional().describe('Login, name or e-mail.'),
      roles: z.array(UserRole).optional().describe('Any of these roles.'),
    })
    .strict(),
  output: bySiteList(UserItem),
  annotations: remoteRead,
  execute: async (i, ctx) => {
    return bySiteUrl(await ctx.wpUsers.list(ctx, i, { search: i.search, roles: i.roles }), userItem);
  },
});

export const createUser = defineAbility({
  name: 'create-user-v1',
  label: 'Create user',
  category: 'svc-users',
  toolset: 'users',
  description:
    'Create a WordPress user on every selected site; without a password a random one is set, never ' +
    'returned. Errors: svc_sites_required (400), svc_sites_not_found (404).',
  input: z
    .object({
      ...SiteSelectors,
      username: z.string().trim().min(1).max(60),
      email: z.email().max(100),
      password: z.string().max(255).optional().describe('Random when absent.'),
      role: UserRole.default('subscriber'),
      first_name: z.string().max(100).optional(),
      last_name: z.string().max(100).optional(),
      user_url: z.string().max(500).optional(),
      send_password: z.boolean().default(false).describe('E-mail the login to the user.'),
    })
    .strict(),
  output: z.object({
    user: z.object({
      username: z.string(),
      email: z.string(),
      role: z.string(),
      first_name: z.string(),
      last_name: z.string(),
      user_url: z.string(),
    }),
    total_sites: z.number().int(),
    total_success: z.number().int(),
    total_failed: z.number().int(),
    created: z.array(z.object({ site_id: z.number().int(), site_url: z.string(), user_id: z.number().int() })),
    errors: z.array(ItemError),
    ...SelectionNotes,
    not_processed: NotProcessed,
  }),
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: true, siteAction: true },
  execute: async (i, ctx) => {
    const r = await ctx.wpUsers.create(ctx, i, i);
    const created = r.results.flatMap((x) => (x.ok ? [{ site_id: x.site.id, site_url: x.site.url, user_id: x.value.user_id }] : []));
    const errors = r.results.filter((x) => !x.ok).map(siteError);
    return {
      user: {
        username: i.username,
        email: i.email,
        role: i.role,
        first_name: i.first_name ?? '',
        last_name: i.last_name ?? '',
        user_url: i.user_url ?? '',
      },
      total_sites: r.results.length,
      total_success: created.length,
      total_failed: errors.length,
      created,
      errors,
      ...notes(r.selection, r.notDone),
    };
  },
});

export const updateUser = defineAbility({
  name: 'update-user-v1',
  label: 'Update user',
  category: 'svc-users',
  toolset: 'users',
  description:
    'Change a WordPress user on one site; only the fields given change. Errors: svc_missing_fields ' +
    '(400), svc_site_not_found / svc_user_not_found (404), svc_site_suspended / svc_site_disconnected / ' +
    'svc_connection_admin_protected (409), svc_child_refused (400, e.g. e-mail taken).',
  input: z
    .object({
      site_id_or_domain: SiteRef,
      user_id: UserId,
      email: z.email().max(100).optional(),
      password: z.string().max(255).optional().describe('Never returned.'),
      role: UserRole.optional(),
      first_name: z.string().max(100).optional(),
      last_name: z.string().max(100).optional(),
      user_url: z.string().max(500).optional(),
      nickname: z.string().max(100).optional(),
      display_name: z.string().max(250).optional(),
      description: z.string().max(10_000).optional(),
    })
    .strict(),
  output: z.object({
    site_id: z.number().int(),
    site_url: z.string(),
    user_id: z.number().int(),
    updated: z.array(z.string()).describe('Fields changed (password included when set, never its value).'),
    user: UserProfile,
  }),
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: true, siteAction: true },
  execute: async ({ site_id_or_domain, user_id, ...changes }, ctx) => {
    const r = await ctx.wpUsers.update(site_id_or_domain, user_id, changes);
    return { site_id: r.site.id, site_url: r.site.url, user_id, updated: r.updated, user: userProfile(r.user) };
  },
});

export const deleteUser = defineAbility({
  name: 'delete-user-v1',
  label: 'Delete user',
  category: 'svc-users',
  toolset: 'users',
  description:
    'Delete a WordPress user from one site; their posts go to the connection administrator, who cannot ' +
    'be deleted. Errors: svc_confirmation_required / svc_invalid_input (400), svc_site_not_found / ' +
    'svc_user_not_found (404), svc_connection_admin_protected / svc_site_suspended / ' +
    'svc_site_disconnected (409).',
  input: z.object({ site_id_or_domain: SiteRef, user_id: UserId, confirm: Confirm, dry_run: DryRun }).strict(),
  output: z.object({
    deleted: z.boolean(),
    dry_run: z.boolean(),
    site_id: z.number().int(),
    site_url: z.string(),
    user_id: z.number().int(),
    user: UserProfile,
    warnings: z.array(z.string()),
  }),
  annotations: { readonly: false, destructive: true, idempotent: true, openWorld: true, siteAction: true },
  acceptsPost: true,
  execute: async ({ site_id_or_domain, user_id, confirm, dry_run }, ctx) => {
    const r = await ctx.wpUsers.delete(site_id_or_domain, user_id, { confirm, dry_run });
    const warnings = r.dry_run ? ['This cannot be undone.', `The user's posts will be reassigned to ${r.site.admin_username}.`] : [];
    return {
      deleted: r.deleted,
      dry_run: r.dry_run,
      site_id: r.site.id,
      site_url: r.site.url,
      user_id,
      user: userProfile(r.user),
      warnings,
    };
  },
});

export const updateAdminPassword = defineAbility({
  name: 'update-admin-password-v1',
  label: 'Update administrator password',
  category: 'svc-users',
  toolset: 'users',
  description:
    "Set the connection administrator's password on every selected site; the connection keeps working. " +
    'Errors: svc_sites_required (400), svc_sites_not_found (404).',
  input: z.object({ ...SiteSelectors, password: z.string().min(1).max(255).describe('Never returned.') }).strict(),
  output: z.object({
    total_websites: z.number().int(),
    success_count: z.number().int(),
    failed_count: z.number().int(),
    success_websites: z.array(BasicSite),
    failed_websites: z.array(BasicSite.extend({ code: z.string(), message: z.string() })),
    ...SelectionNotes,
    not_processed: NotProcessed,
  }),
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: true, siteAction: true },
  execute: async ({ password, ...sel }, ctx) => {
    const r = await ctx.wpUsers.setAdminPassword(ctx, sel, password);
    const success_websites = r.results.filter((x) => x.ok).map((x) => basic(x.site));
    const failed_websites = r.results.flatMap((x) => (x.ok ? [] : [{ ...basic(x.site), code: x.error.code, message: x.error.message }]));
    return {
      total_websites: r.results.length,
      success_count: success_websites.length,
      failed_count: failed_websites.length,
      success_websites,
      failed_websites,
      ...notes(r.selection, r.notDone),
    };
  },
});

// CSV text from JSON callers; the REST door hands over the multipart upload it is streaming (CsvUpload) instead,
// which no JSON input can produce. Its JSON Schema is the string's.
const CsvText = z
  .custom<string | CsvUpload>(
    (v) => v instanceof CsvUpload || (typeof v === 'string' && v.length > 0 && Buffer.byteLength(v) <= MAX_CSV_BYTES),
    `CSV text is required (1 byte to ${MAX_CSV_BYTES / 1024 / 1024} MB).`,
  )
  .meta({
    type: 'string',
    minLength: 1,
    description:
      'CSV, a user a line: username, email, first_name, last_name, user_url, password, send_password (true/false), ' +
      'role, select_sites (domains, ;-separated), select_groups (tag names, ;-separated).',
  });

export const ImportFailure = z.object({
  line_number: z.number().int(),
  username: z.string(),
  email: z.string(),
  error: z.string(),
  failed_sites: z.array(z.object({ site_id: z.number().int(), site_url: z.string(), code: z.string(), message: z.string() })).optional(),
  created_sites: z.array(z.object({ site_id: z.number().int(), site_url: z.string(), user_id: z.number().int() })).optional(),
  more_sites: z.number().int().optional(),
});

export const importUsers = defineAbility({
  name: 'import-users-v1',
  label: 'Import users from CSV',
  category: 'svc-users',
  toolset: 'users',
  description:
    'Create users from CSV text on the sites each row names; a bad row fails alone (with its line ' +
    'number). At most 50,000 rows. Errors: svc_csv_empty / svc_invalid_file_type (400).',
  input: z.object({ csv: CsvText, has_header: z.boolean().default(true) }).strict(),
  output: z.object({
    total: z.number().int(),
    success_count: z.number().int(),
    failed_count: z.number().int(),
    failed_users: z.array(ImportFailure),
    failed_users_truncated: z.boolean(),
    stopped: z.object({ line_number: z.number().int(), reason: z.string() }).optional(),
    skipped_sites: z.array(SkippedSite),
  }),
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: true, siteAction: true },
  execute: ({ csv, has_header }, ctx) => ctx.wpUserImport.fromCsv(ctx, csv, has_header),
});

export const userAbilities = [listUsers, createUser, updateUser, deleteUser, updateAdminPassword, importUsers];
