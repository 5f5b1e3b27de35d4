// REST v2 user routes (users on child sites). Selectors arrive as comma-separated strings; the CSV import is a
// multipart upload streamed into import-users-v1.
import { createUser, deleteUser, importUsers, listUsers, updateAdminPassword, updateUser } from '../../abilities/users.js';
import { CsvUpload, MAX_CSV_BYTES } from '../../domain/users-import.js';
import { readUpload, type Upload } from '../multipart.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestArgs } from '../rest-door.js';
import { list, pick, site } from './args.js';
import { z } from 'zod';
import { ItemError, SkippedSite } from '../../abilities/schemas.js';
import { Int, ListArg, done, ok } from './answers.js';

/** The selectors as REST takes them: comma-separated strings or arrays. */
export const SelectorArgs = {
  websites: ListArg(z.union([Int, z.string()]), 'Sites by ID or domain.'),
  groups: ListArg(z.union([Int, z.string()]), 'Tag IDs or names.'),
  clients: ListArg(Int, 'Client IDs.'),
};
const Notes = { skipped: z.array(SkippedSite), unknown: z.array(ItemError) };

const PUT_PATCH = ['PUT', 'PATCH'] as const;

/** websites, groups, clients: comma-separated lists (group names may hold spaces, so only commas split). */
export const selectors = (a: RestArgs) => {
  const out: Record<string, unknown> = {};
  for (const k of ['websites', 'groups', 'clients']) {
    const v = list(a.args[k])
      ?.map((x) => (typeof x === 'string' ? x.trim() : x))
      .filter((x) => x !== '');
    if (v?.length) out[k] = v;
  }
  return out;
};

const usersList = route(READ, '/users', listUsers, {
  input: (a) => {
    const i: Record<string, unknown> = { ...selectors(a), ...pick(a, 'search') };
    const roles = list(a.args.roles);
    if (roles) i.roles = roles.map((r) => (typeof r === 'string' ? r.trim() : r));
    return i;
  },
  args: { ...SelectorArgs, roles: ListArg(z.string(), 'Only users with one of these roles.') },
  answers: ok({ total: Int, data: listUsers.output.shape.data, errors: z.array(ItemError), ...Notes }),
  output: (r) => ({ success: 1, total: r.total, data: r.data, errors: r.errors, skipped: r.skipped, unknown: r.unknown }),
});

const usersCreate = route(CREATE, '/users/create', createUser, {
  input: (a) => ({
    ...selectors(a),
    ...pick(a, 'username', 'email', 'password', 'role', 'first_name', 'last_name', 'user_url', 'send_password'),
  }),
  args: SelectorArgs,
  answers: done(
    z.object({
      user_info: createUser.output.shape.user,
      total_sites: Int,
      total_success: Int,
      total_failed: Int,
      created_sites: z.record(z.string(), z.object({ url: z.string(), user_id: Int, message: z.string() })),
      failed_sites: z.record(z.string(), z.object({ code: z.string(), message: z.string() })),
      ...Notes,
    }),
  ),
  output: (r) => {
    const n = r.total_sites;
    const message =
      r.total_failed === 0
        ? `User created successfully on all ${n} website(s).`
        : r.total_success === 0
          ? `User creation failed on all ${n} website(s).`
          : `User created on ${r.total_success} of ${n} website(s). ${r.total_failed} failed.`;
    return {
      success: 1,
      message,
      data: {
        user_info: r.user,
        total_sites: n,
        total_success: r.total_success,
        total_failed: r.total_failed,
        created_sites: Object.fromEntries(
          r.created.map((c) => [c.site_id, { url: c.site_url, user_id: c.user_id, message: 'User created successfully.' }]),
        ),
        failed_sites: Object.fromEntries(r.errors.map((e) => [e.identifier, { code: e.code, message: e.message }])),
        skipped: r.skipped,
        unknown: r.unknown,
      },
    };
  },
});

const userEdit = route(EDIT, '/users/:id_or_domain/:user_id/edit', updateUser, {
  input: (a) => ({
    site_id_or_domain: site(a),
    user_id: a.params.user_id,
    ...pick(a, 'email', 'password', 'role', 'first_name', 'last_name', 'user_url', 'nickname', 'display_name', 'description'),
  }),
  answers: done(
    z.object({
      website_id: Int,
      website_url: z.string(),
      user_id: Int,
      updated_fields: z.array(z.string()),
      user: updateUser.output.shape.user,
    }),
  ),
  output: (r) => ({
    success: 1,
    message: 'User updated successfully.',
    data: { website_id: r.site_id, website_url: r.site_url, user_id: r.user_id, updated_fields: r.updated, user: r.user },
  }),
});

const userDelete = route(REMOVE, '/users/:id_or_domain/:user_id/delete', deleteUser, {
  input: (a) => ({ site_id_or_domain: site(a), user_id: a.params.user_id, confirm: true }),
  answers: done(z.object({ website_id: Int, website_url: z.string(), user_id: Int })),
  errors: { 409: ['svc_connection_admin_protected'] },
  output: (r) => ({
    success: 1,
    message: 'User deleted successfully.',
    data: { website_id: r.site_id, website_url: r.site_url, user_id: r.user_id },
  }),
});

const adminPassword = route(PUT_PATCH, '/users/update-admin-password', updateAdminPassword, {
  input: (a) => ({ ...selectors(a), ...(a.args.password !== undefined ? { password: a.args.password } : {}) }),
  args: SelectorArgs,
  answers: updateAdminPassword.output.extend({ success: z.literal(1), message: z.string() }),
  output: (r) => ({
    success: 1,
    message: `Admin password updated on ${r.success_count} of ${r.total_websites} websites.`,
    ...r,
  }),
});

const usersImport = route(CREATE, '/users/import', importUsers, {
  body: async (req, res) => {
    const upload = await readUpload(req, res, { field: 'csv_file', maxBytes: MAX_CSV_BYTES });
    return { ...upload.fields, csv_file: upload };
  },
  input: (a) => {
    const upload = a.args.csv_file as Upload;
    return { csv: new CsvUpload(upload.file, upload.lateFields), ...pick(a, 'has_header') };
  },
  upload: { file: 'csv_file', maxBytes: MAX_CSV_BYTES },
  errors: {
    400: ['svc_no_file_uploaded', 'svc_csv_empty', 'svc_invalid_multipart', 'svc_upload_interrupted'],
    413: ['svc_upload_too_large'],
  },
  args: { has_header: importUsers.input.shape.has_header },
  answers: ok({ message: z.string(), ...importUsers.output.omit({ stopped: true }).shape, stopped: importUsers.output.shape.stopped }),
  output: (r) => ({
    success: 1,
    message: `Imported ${r.success_count} of ${r.total} user(s).`,
    total: r.total,
    success_count: r.success_count,
    failed_count: r.failed_count,
    failed_users: r.failed_users,
    failed_users_truncated: r.failed_users_truncated,
    ...(r.stopped ? { stopped: r.stopped } : {}),
    skipped_sites: r.skipped_sites,
  }),
});

export const userRoutes = [usersList, usersCreate, adminPassword, usersImport, userEdit, userDelete];
