// REST v2 client custom field routes (upstream's four under /clients/fields), and sitefleet's: a client's values
// (GET /clients/{id}/fields, PUT /clients/{id}/fields/edit) and the clients with a value (/clients/fields/{f}/clients).
// Before the client routes: /clients/{id_or_email} would otherwise take "fields".
import {
  addClientField,
  deleteClientField,
  getClientFieldValues,
  listClientFields,
  listClientsByField,
  setClientFieldValues,
  updateClientField,
} from '../../abilities/client-fields.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestArgs, type RestRoute } from '../rest-door.js';
import { pick } from './args.js';
import { z } from 'zod';
import { ClientField } from '../../abilities/client-fields.js';
import { Client } from '../../abilities/client-views.js';
import { Int, done, listed, ok } from './answers.js';

const field = (a: RestArgs) => ({ field: a.params.id_name! });
const client = (a: RestArgs) => ({ client_id_or_email: a.params.id! });
/** Upstream spells per_page "pre_page" here. */
const paging = (a: RestArgs) => ({
  ...pick(a, 'page', 'per_page'),
  ...(a.args.pre_page !== undefined && a.args.per_page === undefined ? { per_page: a.args.pre_page } : {}),
});
const Paging = {
  pre_page: z.number().int().min(1).max(100).optional().describe("Upstream's spelling of per_page (used when per_page is not given)."),
};
const FIELD_NOT_FOUND = { 404: ['svc_client_field_not_found'] } as const;

const fieldsList = route(READ, '/clients/fields', listClientFields, {
  input: (a) => ({ ...pick(a, 'search', 'include', 'exclude'), ...paging(a) }),
  args: Paging,
  answers: listed(ClientField),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const fieldAdd = route(CREATE, '/clients/fields/add', addClientField, {
  input: (a) => pick(a, 'name', 'description'),
  errors: { 409: ['svc_client_field_exists', 'svc_client_field_limit'] },
  answers: done(ClientField),
  output: (r) => ({ success: 1, message: 'Client field created successfully.', data: r }),
});
const fieldEdit = route(EDIT, '/clients/fields/:id_name/edit', updateClientField, {
  input: (a) => ({ ...field(a), ...pick(a, 'name', 'description') }),
  errors: { ...FIELD_NOT_FOUND, 400: ['svc_missing_fields'], 409: ['svc_client_field_exists'] },
  answers: done(ClientField),
  output: (r) => ({ success: 1, message: 'Client field updated successfully.', data: r }),
});
const fieldDelete = route(REMOVE, '/clients/fields/:id_name/delete', deleteClientField, {
  input: (a) => ({ ...field(a), confirm: true }),
  errors: FIELD_NOT_FOUND,
  answers: done(ClientField, { values_removed: Int }),
  output: (r) => ({ success: 1, message: 'Client field deleted successfully.', values_removed: r.values_removed, data: r.field }),
});
const fieldClients = route(READ, '/clients/fields/:id_name/clients', listClientsByField, {
  input: (a) => ({ ...field(a), ...pick(a, 'value', 'match'), ...paging(a) }),
  args: Paging,
  errors: FIELD_NOT_FOUND,
  answers: listed(Client),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const clientValues = route(READ, '/clients/:id/fields', getClientFieldValues, {
  input: client,
  errors: { 404: ['svc_client_not_found'] },
  answers: ok({ data: getClientFieldValues.output }),
  output: (r) => ({ success: 1, data: r }),
});
const clientValuesEdit = route(EDIT, '/clients/:id/fields/edit', setClientFieldValues, {
  input: (a) => ({ ...client(a), ...pick(a, 'values') }),
  errors: { 400: ['svc_missing_fields'], 404: ['svc_client_not_found', 'svc_client_field_not_found'] },
  answers: done(setClientFieldValues.output),
  output: (r) => ({ success: 1, message: 'Client fields updated successfully.', data: r }),
});

export const clientFieldRoutes: readonly RestRoute[] = [
  fieldsList,
  fieldAdd,
  fieldEdit,
  fieldDelete,
  fieldClients,
  clientValues,
  clientValuesEdit,
];
