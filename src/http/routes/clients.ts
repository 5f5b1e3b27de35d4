// REST v2 client routes, and the client of one site (GET /sites/{id_or_domain}/client).
import {
  addClient, deleteClient, getClient, getClientCosts, getClientSites, getSiteClient, listClients, updateClient,
} from '../../abilities/clients.js';
import { ServiceError, asServiceError } from '../../core/errors.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestArgs, type RestRoute } from '../rest-door.js';
import { pathId, pick, site } from './args.js';

const CLIENT_FIELDS = ['name', 'email', 'status', 'phone', 'address_1', 'address_2', 'city', 'state', 'zip', 'country', 'note',
  'facebook', 'twitter', 'instagram', 'linkedin'] as const;

/**
 * The client named in the path, by REST's own code when it does not exist (REST v2 reference §0.3 template
 * mainwp_rest_invalid_{type}_id), like tags; an id no record can have is not found either.
 */
function pathClient(row: RestRoute): RestRoute {
  return {
    ...row,
    handler: async (a: RestArgs, run) => {
      try {
        return await run(row, a);
      } catch (e) {
        const err = asServiceError(e);
        const badPathId = err.code === 'rest_invalid_param' && 'client_id_or_email' in ((err.data.params ?? {}) as object);
        if (err.code === 'svc_client_not_found' || badPathId) throw new ServiceError('svc_rest_invalid_client_id', 'Invalid or not found ID.', 404);
        throw err;
      }
    },
  };
}

const clientRef = (a: RestArgs) => ({ client_id_or_email: pathId(a) });

const clientsList = route(READ, '/clients', listClients, {
  input: (a) => pick(a, 'page', 'per_page', 'search', 'status', 'include', 'exclude'),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const clientGet = pathClient(route(READ, '/clients/:id', getClient, {
  input: clientRef,
  output: (r) => ({ success: 1, data: r }),
}));
const clientAdd = route(CREATE, '/clients/add', addClient, {
  input: (a) => pick(a, ...CLIENT_FIELDS),
  output: (r) => ({ success: 1, message: 'Client created successfully.', data: r }),
});
const clientEdit = pathClient(route(EDIT, '/clients/:id/edit', updateClient, {
  input: (a) => ({ ...clientRef(a), ...pick(a, ...CLIENT_FIELDS), ...(a.args.email === null ? { email: null } : {}) }),
  output: (r) => ({ success: 1, message: 'Client updated successfully.', data: r }),
}));
const clientRemove = pathClient(route(REMOVE, '/clients/:id/remove', deleteClient, {
  input: (a) => ({ ...clientRef(a), confirm: true }),
  output: (r) => ({ success: 1, message: 'Client deleted successfully.', sites_unassigned: r.sites_unassigned, data: r.client }),
}));
const clientSites = pathClient(route(READ, '/clients/:id/sites', getClientSites, {
  input: (a) => ({ ...clientRef(a), ...pick(a, 'page', 'per_page') }),
  output: (r) => ({ success: 1, total: r.total, data: r.sites }),
}));
const clientCosts = pathClient(route(READ, '/clients/:id/costs', getClientCosts, {
  input: (a) => ({ ...clientRef(a), ...pick(a, 'page', 'per_page') }),
  output: (r) => ({ success: 1, total: r.total, data: r.costs }),
}));

const siteClient = route(READ, '/sites/:id_or_domain/client', getSiteClient, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  output: (r) => ({ success: 1, message: r.message, data: r.client }),
});

/** Static paths before parameterised ones. */
export const clientRoutes: readonly RestRoute[] = [
  clientsList, clientAdd, clientGet, clientEdit, clientRemove, clientSites, clientCosts, siteClient,
];
