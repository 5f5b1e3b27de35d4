// REST v2 API key routes (upstream's four under /rest-api, REST v2 reference §1.5): list, add, edit, delete. Upstream's
// shapes: `description` is the key's name, `permissions` a comma list of read / write / delete, `active` a flag (false
// on edit revokes the key for good; a new key is active). Administrators only: the abilities say so (annotations.admin).
import { z } from 'zod';
import { addApiKey, ApiKey, listApiKeys, revokeApiKey, updateApiKey } from '../../abilities/team.js';
import { ServiceError } from '../../core/errors.js';
import type { KeyPermission } from '../../core/principal.js';
import { CREATE, READ, REMOVE, route, type RestArgs, type RestRoute } from '../rest-door.js';
import { Flag, Int, ListArg, done, ok } from './answers.js';
import { list, pathId, pick } from './args.js';

const EDIT = ['PUT', 'PATCH'] as const;

const TITLES: Record<KeyPermission, string[]> = { read: ['Read'], write: ['Write'], read_write: ['Read', 'Write'], delete: ['Delete'] };

/** Upstream's item, with sitefleet's own fields beside it. */
const Item = ApiKey.extend({
  user_id: z.null().describe('Keys belong to no dashboard user here.'),
  version: z.literal('v2'),
  description: z.string().describe('The key name.'),
  permissions: z.array(z.string()).describe('Read, Write, Delete.'),
  permission: ApiKey.shape.permissions,
  last_access: z.null().describe('Not recorded (it would be a write per request).'),
});
const item = (k: z.output<typeof ApiKey>): z.input<typeof Item> => ({
  ...k,
  user_id: null,
  version: 'v2',
  description: k.name,
  permissions: TITLES[k.permissions],
  permission: k.permissions,
  last_access: null,
});

function invalid(name: string, message: string): ServiceError {
  return new ServiceError('rest_invalid_param', `Invalid parameter(s): ${name}`, 400, { params: { [name]: message } });
}

/** read, write, delete as a comma list or an array → a key permission (read+write → read_write; any with delete and write → read_write). */
function permissionOf(v: unknown): KeyPermission | undefined {
  const given = list(v);
  if (!given) return undefined;
  const words = new Set(given.map((w) => String(w).trim().toLowerCase()).filter(Boolean));
  for (const w of words)
    if (!['read', 'write', 'delete', 'read_write'].includes(w)) throw invalid('permissions', `Unknown permission "${w}".`);
  const read = words.has('read') || words.has('read_write');
  const write = words.has('write') || words.has('read_write');
  if (read && write) return 'read_write';
  if (read && words.has('delete')) throw invalid('permissions', 'read with delete but not write cannot be given to one key.');
  if (read) return 'read';
  if (write) return 'write';
  if (words.has('delete')) return 'delete';
  throw invalid('permissions', 'Name at least one of read, write, delete.');
}

/** A flag upstream sends: true/false, 1/0, yes/no; anything else is refused. */
function flagOf(name: string, v: unknown): boolean | undefined {
  if (v === undefined || v === '') return undefined;
  if ([true, 1, '1', 'true', 'yes'].includes(v as never)) return true;
  if ([false, 0, '0', 'false', 'no'].includes(v as never)) return false;
  throw invalid(name, 'Must be true or false.');
}

const keyFields = (a: RestArgs) => {
  const permissions = permissionOf(a.args.permissions);
  const name = a.args.description ?? a.args.name;
  return {
    ...(name !== undefined && name !== '' ? { name } : {}),
    ...(permissions ? { permissions } : {}),
    ...pick(a, 'admin', 'expires_at', 'scope'),
  };
};

/** allow_tools / deny_tools (edit-key): a comma list or an array of tool names; "" or [] clears the list. */
const toolLists = (a: RestArgs) =>
  Object.fromEntries(
    (['allow_tools', 'deny_tools'] as const)
      .filter((k) => a.args[k] !== undefined)
      .map((k) => [k, a.args[k] === null || a.args[k] === '' ? [] : list(a.args[k])!.map((n) => String(n).trim())]),
  );

const keyArgs = {
  description: z.string().optional().describe('The key name.'),
  permissions: ListArg(z.string(), 'read, write, delete (comma list).'),
  active: Flag('A new key is active (false is refused); on edit, false revokes the key.'),
};

const editArgs = {
  ...keyArgs,
  allow_tools: ListArg(z.string(), 'Only these tools (ability names, comma list), on every door; "" clears the list.'),
  deny_tools: ListArg(z.string(), 'Never these tools (ability names, comma list), on every door; "" clears the list.'),
};

const keysList = route(READ, '/rest-api/keys', listApiKeys, {
  input: (a) => pick(a, 'page', 'per_page'),
  answers: ok({ total: Int, pages: Int, data: z.array(Item) }),
  output: (r) => ({ success: 1, total: r.total, pages: Math.ceil(r.total / r.per_page), data: r.items.map(item) }),
});

const keyAdd = route(CREATE, '/rest-api/add-key', addApiKey, {
  input: (a) => {
    if (flagOf('active', a.args.active) === false) throw invalid('active', 'A new key is active; revoke it to end it.');
    return { name: 'API key', ...keyFields(a) };
  },
  args: keyArgs,
  answers: ok({ message: z.string(), token: z.string(), data: Item }),
  output: (r) => ({ success: 1, message: 'API Key created successfully.', token: r.token, data: item(r.key) }),
});

const keyEdit = route(EDIT, '/rest-api/edit-key/:id', updateApiKey, {
  input: (a) => {
    const active = flagOf('active', a.args.active);
    return { key_id: pathId(a), ...keyFields(a), ...toolLists(a), ...(active === undefined ? {} : { active }) };
  },
  args: editArgs,
  answers: done(Item),
  output: (r) => ({ success: 1, message: 'API Key updated successfully.', data: item(r) }),
});

const keyDelete = route(REMOVE, '/rest-api/delete-key/:id', revokeApiKey, {
  input: (a) => ({ key_id: pathId(a), confirm: true }),
  answers: done(Item),
  output: (r) => ({ success: 1, message: 'API Key deleted successfully.', data: item(r.key) }),
});

export const keyRoutes: readonly RestRoute[] = [keysList, keyAdd, keyEdit, keyDelete];
