// REST v2 client custom field routes (upstream's four under /clients/fields), and sitefleet's: a client's values
// (GET /clients/{id}/fields, PUT /clients/{id}/fields/edit) and the clients with a value (/clients/fields/{f}/clients).
// Before the client routes: /clients/{id_or_email} would otherwise take "fields".
import {
  addClientField, deleteClientField, getClientFieldValues, listClientFields, listClientsByField, setClientFieldValues, updateClientField,
} from '../../abilities/client-fields.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestArgs, type RestRoute } from '../rest-door.js';
import { pick } from './args.js';

const field = (a: RestArgs) => ({ field: a.params.id_name! });
const client = (a: RestArgs) => ({ client_id_or_email: a.params.id! });
/** Upstream spells per_page "pre_page" here. */
const paging = (a: RestArgs) => ({ ...pick(a, 'page', 'per_page'), ...(a.args.pre_page !== undefined && a.args.per_page === undefined ? { per_page: a.args.pre_page } : {}) });

const fieldsList = route(READ, '/clients/fields', listClientFields, {
  input: (a) => ({ ...pick(a, 'search', 'include', 'exclude'), ...paging(a) }),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const fieldAdd = route(CREATE, '/clients/fields/add', addClientField, {
  input: (a) => pick(a, 'name', 'description'),
  output: (r) => ({ success: 1, message: 'Client field created successfully.', data: r }),
});
const fieldEdit = route(EDIT, '/clients/fields/:id_name/edit', updateClientField, {
  input: (a) => ({ ...field(a), ...pick(a, 'name', 'description') }),
  output: (r) => ({ success: 1, message: 'Client field updated successfully.', data: r }),
});
const fieldDelete = route(REMOVE, '/clients/fields/:id_name/delete', deleteClientField, {
  input: (a) => ({ ...field(a), confirm: true }),
  output: (r) => ({ success: 1, message: 'Client field deleted successfully.', values_removed: r.values_removed, data: r.field }),
});
const fieldClients = route(READ, '/clients/fields/:id_name/clients', listClientsByField, {
  input: (a) => ({ ...field(a), ...pick(a, 'value', 'match'), ...paging(a) }),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const clientValues = route(READ, '/clients/:id/fields', getClientFieldValues, {
  input: client,
  output: (r) => ({ success: 1, data: r }),
});
const clientValuesEdit = route(EDIT, '/clients/:id/fields/edit', setClientFieldValues, {
  input: (a) => ({ ...client(a), ...pick(a, 'values') }),
  output: (r) => ({ success: 1, message: 'Client fields updated successfully.', data: r }),
});

export const clientFieldRoutes: readonly RestRoute[] = [fieldsList, fieldAdd, fieldEdit, fieldDelete, fieldClients, clientValues, clientValuesEdit];
