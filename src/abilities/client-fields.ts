// Client custom fields (issue 21): define fields, give clients values, read them with the client, find clients by
// them. Rules live in domain/client-fields.ts.
import { z } from 'zod';
import { defineAbility } from './context.js';
import { ServiceError } from '../core/errors.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { Page, paginate, perPage } from '../core/paging.js';
import { MAX_FIELD_DESCRIPTION, MAX_FIELD_NAME, MAX_FIELD_VALUE } from '../domain/client-fields.js';
import type { ClientFieldRecord } from '../store/records.js';
import type { Services } from '../domain/index.js';
import { Client, ClientIds, ClientRef, clientView } from './client-views.js';
import { Confirm, DryRun, paged } from './schemas.js';

const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };
const FieldRef = z.union([z.number().int(), z.string().min(1).max(MAX_FIELD_NAME)]).describe('Field ID or name.');
const Name = z.string().min(1).max(MAX_FIELD_NAME);
const Description = z.string().max(MAX_FIELD_DESCRIPTION);

export const ClientField = z.object({
  id: z.number().int(),
  name: z.string(),
  description: z.string(),
  clients_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});
const FieldValues = z.object({
  client_id: z.number().int(),
  fields: z.array(z.object({ id: z.number().int(), name: z.string(), value: z.string().nullable() })),
});

const fieldView = (ctx: Pick<Services, 'clientFields'>, f: ClientFieldRecord): z.infer<typeof ClientField> => ({
  id: f.id,
  name: f.name,
  description: f.description,
  clients_count: ctx.clientFields.usedBy(f.id).length,
  created_at: f.created_at,
  updated_at: f.updated_at,
});

export const listClientFields = defineAbility({
  name: 'list-client-fields-v1',
  label: 'List client fields',
  category: 'svc-clients',
  toolset: 'clients',
  description: 'Custom fields defined for clients, by name.',
  input: z
    .object({
      search: z.string().max(200).optional(),
      include: ClientIds.optional(),
      exclude: ClientIds.optional(),
      page: Page,
      per_page: perPage(20),
    })
    .strict(),
  output: paged(ClientField),
  annotations: ro,
  execute: ({ page, per_page, ...f }, ctx) => {
    const all = ctx.clientFields.list(f);
    return { items: paginate(all, page, per_page).map((x) => fieldView(ctx, x)), page, per_page, total: all.length };
  },
});

export const addClientField = defineAbility({
  name: 'add-client-field-v1',
  label: 'Add client field',
  category: 'svc-clients',
  toolset: 'clients',
  description: 'Define a custom field for clients (names are unique).',
  input: z.object({ name: Name, description: Description.default('') }).strict(),
  output: ClientField,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: false },
  execute: async (i, ctx) => fieldView(ctx, await ctx.clientFields.add(i)),
});

export const updateClientField = defineAbility({
  name: 'update-client-field-v1',
  label: 'Update client field',
  category: 'svc-clients',
  toolset: 'clients',
  description: 'Rename a client field or change its description; values stay.',
  input: z.object({ field: FieldRef, name: Name.optional(), description: Description.optional() }).strict(),
  output: ClientField,
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ field, ...i }, ctx) => {
    const f = ctx.clientFields.resolveRef(field);
    if (i.name === undefined && i.description === undefined) {
      throw new ServiceError('svc_missing_fields', 'Give name or description to change.', 400);
    }
    return fieldView(ctx, await ctx.clientFields.edit(f.id, i));
  },
});

export const deleteClientField = defineAbility({
  name: 'delete-client-field-v1',
  label: 'Delete client field',
  category: 'svc-clients',
  toolset: 'clients',
  description: "Delete a client field and every client's value of it.",
  input: z.object({ field: FieldRef, confirm: Confirm, dry_run: DryRun }).strict(),
  output: z.object({ deleted: z.boolean(), dry_run: z.boolean(), field: ClientField, values_removed: z.number().int() }),
  annotations: { readonly: false, destructive: true, idempotent: true, openWorld: false },
  acceptsPost: true,
  execute: async ({ field, confirm, dry_run }, ctx) => {
    refuseBothFlags({ confirm, dry_run });
    const f = fieldView(ctx, ctx.clientFields.resolveRef(field));
    if (dry_run) return { deleted: false, dry_run: true, field: f, values_removed: f.clients_count };
    requireConfirm({ confirm }, 'Deleting a client field (and its values) requires confirm=true (preview with dry_run=true).');
    const removed = await ctx.clientFields.remove(f.id);
    return { deleted: true, dry_run: false, field: f, values_removed: removed };
  },
});

export const getClientFieldValues = defineAbility({
  name: 'get-client-field-values-v1',
  label: 'Get client field values',
  category: 'svc-clients',
  toolset: 'clients',
  description: "A client's custom field values (null: not set).",
  input: z.object({ client_id_or_email: ClientRef }).strict(),
  output: FieldValues,
  annotations: ro,
  execute: ({ client_id_or_email }, ctx) => {
    const c = ctx.clients.resolveRef(client_id_or_email);
    return { client_id: c.id, fields: ctx.clientFields.valuesOf(c.id) };
  },
});

export const setClientFieldValues = defineAbility({
  name: 'set-client-field-values-v1',
  label: 'Set client field values',
  category: 'svc-clients',
  toolset: 'clients',
  description: "Set a client's custom field values; fields not named keep theirs.",
  input: z
    .object({
      client_id_or_email: ClientRef,
      values: z
        .record(z.string().min(1).max(MAX_FIELD_NAME), z.string().max(MAX_FIELD_VALUE).nullable())
        .describe('Field ID or name → value; null or "" clears it.'),
    })
    .strict(),
  output: FieldValues.extend({ updated: z.array(z.string()) }),
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ client_id_or_email, values }, ctx) => {
    const c = ctx.clients.resolveRef(client_id_or_email);
    if (Object.keys(values).length === 0) throw new ServiceError('svc_missing_fields', 'Give at least one field value in values.', 400);
    const updated = await ctx.clientFields.setClientValues(c.id, values);
    return { client_id: c.id, fields: ctx.clientFields.valuesOf(c.id), updated };
  },
});

export const listClientsByField = defineAbility({
  name: 'list-clients-by-field-v1',
  label: 'List clients by field',
  category: 'svc-clients',
  toolset: 'clients',
  description: 'Clients whose custom field matches a value (case-insensitive), by name.',
  input: z
    .object({
      field: FieldRef,
      value: z.string().max(MAX_FIELD_VALUE).default(''),
      match: z.enum(['exact', 'contains', 'set']).default('exact').describe('set: any value.'),
      page: Page,
      per_page: perPage(20),
    })
    .strict(),
  output: paged(Client),
  annotations: ro,
  execute: ({ field, value, match, page, per_page }, ctx) => {
    const f = ctx.clientFields.resolveRef(field);
    const ids = ctx.clientFields.clientsMatching(f.id, match, value);
    const all = ctx.clients.list({}).filter((c) => ids.has(c.id));
    return { items: paginate(all, page, per_page).map((c) => clientView(ctx, c)), page, per_page, total: all.length };
  },
});

export const clientFieldAbilities = [
  listClientFields,
  addClientField,
  updateClientField,
  deleteClientField,
  getClientFieldValues,
  setClientFieldValues,
  listClientsByField,
];
