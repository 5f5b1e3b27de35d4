// REST v2 client routes, and the client of one site (GET /sites/{id_or_domain}/client).
import {
  addClient,
  countClientSites,
  countClients,
  deleteClient,
  getClient,
  getClientCosts,
  getClientSites,
  getSiteClient,
  listClients,
  suspendClient,
  unsuspendClient,
  updateClient,
} from '../../abilities/clients.js';
import { ServiceError, toServiceError } from '../../core/errors.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestArgs, type RestRoute } from '../rest-door.js';
import { batch, pathId, pick, site } from './args.js';
import { z } from 'zod';
import { Client } from '../../abilities/client-views.js';
import { Cost } from '../../abilities/cost-views.js';
import { ListedSite } from '../../abilities/schemas.js';
import { Int, done, listed, ok } from './answers.js';
import { CLIENT_TEXT_FIELDS } from '../../domain/clients.js';

const CLIENT_FIELDS = [
  'name',
  'email',
  'status',
  ...CLIENT_TEXT_FIELDS,
  'suspended',
  'selected_sites',
  // upstream's names, renamed by the abilities
  ...Object.keys(addClient.aliases ?? {}),
] as const;

/**
 * The client named in the path, by REST's own code when it does not exist (REST v2 reference §0.3 template
 * mainwp_rest_invalid_{type}_id), like tags; an id no record can have is not found either.
 */
function pathClient(row: RestRoute): RestRoute {
  return {
    ...row,
    doc: { ...row.doc, errors: { 404: ['svc_rest_invalid_client_id'] } },
    handler: async (a: RestArgs, run) => {
      try {
        return await run(row, a);
      } catch (e) {
        const err = toServiceError(e);
        const badPathId = err.code === 'rest_invalid_param' && 'client_id_or_email' in ((err.data.params ?? {}) as object);
        if (err.code === 'svc_client_not_found' || badPathId)
          throw new ServiceError('svc_rest_invalid_client_id', 'Invalid or not found ID.', 404);
        throw err;
      }
    },
  };
}

const clientRef = (a: RestArgs) => ({ client_id_or_email: pathId(a) });
/** GET /clients/{id_or_email}: an e-mail names the client too. */
const clientByIdOrEmail = (a: RestArgs) => ({
  client_id_or_email: /^\d+$/.test(a.params.id_or_email!) ? Number(a.params.id_or_email) : a.params.id_or_email!,
});

const clientsList = route(READ, '/clients', listClients, {
  input: (a) => pick(a, 'page', 'per_page', 'search', 'status', 'include', 'exclude'),
  answers: listed(Client),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const clientsCount = route(READ, '/clients/count', countClients, {
  input: (a) => pick(a, 'status'),
  answers: ok({ total: Int }),
  output: (r) => ({ success: 1, total: r.total }),
});
const clientGet = pathClient(
  route(READ, '/clients/:id_or_email', getClient, {
    input: clientByIdOrEmail,
  }),
);
const clientSuspend = pathClient(
  route(EDIT, '/clients/:id/suspend', suspendClient, {
    input: clientRef,
    answers: done(Client, { suspended: z.literal(1), sites_count: Int }),
    output: (r) => ({ success: 1, message: 'Client suspended.', suspended: 1, sites_count: r.sites_count, data: r.client }),
  }),
);
const clientUnsuspend = pathClient(
  route(EDIT, '/clients/:id/unsuspend', unsuspendClient, {
    input: clientRef,
    answers: done(Client, { suspended: z.literal(0), sites_count: Int }),
    output: (r) => ({ success: 1, message: 'Client unsuspended.', suspended: 0, sites_count: r.sites_count, data: r.client }),
  }),
);
const clientSitesCount = pathClient(
  route(READ, '/clients/:id/sites/count', countClientSites, {
    input: clientRef,
    answers: ok({ total: Int }),
    output: (r) => ({ success: 1, total: r.total }),
  }),
);
const clientAdd = route(CREATE, '/clients/add', addClient, {
  input: (a) => pick(a, ...CLIENT_FIELDS),
  answers: done(Client),
  output: (r) => ({ success: 1, message: 'Client created successfully.', data: r }),
});
const clientEdit = pathClient(
  route(EDIT, '/clients/:id/edit', updateClient, {
    input: (a) => ({ ...clientRef(a), ...pick(a, ...CLIENT_FIELDS), ...(a.args.email === null ? { email: null } : {}) }),
    answers: done(Client),
    output: (r) => ({ success: 1, message: 'Client updated successfully.', data: r }),
  }),
);
const clientRemove = pathClient(
  route(REMOVE, '/clients/:id/remove', deleteClient, {
    input: (a) => ({ ...clientRef(a), confirm: true }),
    answers: done(Client, { sites_unassigned: Int }),
    output: (r) => ({ success: 1, message: 'Client deleted successfully.', sites_unassigned: r.sites_unassigned, data: r.client }),
  }),
);
const clientSites = pathClient(
  route(READ, '/clients/:id/sites', getClientSites, {
    input: (a) => ({ ...clientRef(a), ...pick(a, 'page', 'per_page') }),
    answers: listed(ListedSite),
    output: (r) => ({ success: 1, total: r.total, data: r.sites }),
  }),
);
const clientCosts = pathClient(
  route(READ, '/clients/:id/costs', getClientCosts, {
    input: (a) => ({ ...clientRef(a), ...pick(a, 'page', 'per_page') }),
    answers: listed(Cost),
    output: (r) => ({ success: 1, total: r.total, data: r.costs }),
  }),
);

const siteClient = route(READ, '/sites/:id_or_domain/client', getSiteClient, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  answers: done(Client.nullable()),
  output: (r) => ({ success: 1, message: r.message, data: r.client }),
});

export const runClientsBatch = batch({ create: clientAdd, update: clientEdit, delete: clientRemove }, 'id');
const clientsBatch: RestRoute = {
  methods: EDIT,
  path: '/clients/batch',
  handler: runClientsBatch,
  doc: { summary: 'Client batch', description: 'Create, edit and delete clients in one request.', batch: runClientsBatch.shape },
};

/** Static paths before parameterised ones. */
export const clientRoutes: readonly RestRoute[] = [
  clientsList,
  clientsCount,
  clientAdd,
  clientsBatch,
  clientGet,
  clientEdit,
  clientRemove,
  clientSuspend,
  clientUnsuspend,
  clientSitesCount,
  clientSites,
  clientCosts,
  siteClient,
];
