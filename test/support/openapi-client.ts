// Test support: a REST client generated from the OpenAPI document — openapi-fetch over the types openapi-typescript
// makes of it (test/fixtures/openapi/paths.d.ts, written by test/openapi-client.test.ts) — and one typed walk
// through each route family, including one error each. test/openapi-client.test.ts type-checks this file against
// the generated types (so a call the document does not describe fails to compile) and runs it against a real server.
// It imports nothing of sitefleet: what it knows of the API, it knows from the document.
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from '../fixtures/openapi/paths.js';

export type RestClient = ReturnType<typeof createClient<paths>>;

export function restClient(baseUrl: string, token: string, check?: Middleware): RestClient {
  const client = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${token}` } });
  if (check) client.use(check);
  return client;
}

const site = (id: number) => ({ path: { id_or_domain: String(id) } });

export async function sitesFamily(c: RestClient, siteId: number) {
  return {
    list: await c.GET('/sites', { params: { query: { per_page: 2, page: 1, with_tags: '1' } } }),
    count: await c.GET('/sites/count'),
    one: await c.GET('/sites/{id_or_domain}', { params: site(siteId) }),
    edit: await c.PATCH('/sites/{id_or_domain}/edit', { params: site(siteId), body: { name: 'Renamed by the generated client', note: 'typed' } }),
    sync: await c.POST('/sites/{id_or_domain}/sync', { params: site(siteId) }),
    check: await c.POST('/sites/{id_or_domain}/check', { params: site(siteId) }),
    error: await c.GET('/sites/{id_or_domain}', { params: { path: { id_or_domain: '987654' } } }),
  };
}

export async function pluginsFamily(c: RestClient, siteId: number) {
  const plugins = await c.GET('/sites/{id_or_domain}/plugins', { params: { ...site(siteId), query: { status: 'inactive' } } });
  const slug = plugins.data?.data[0]?.slug ?? '';
  return {
    plugins,
    activate: await c.POST('/sites/{id_or_domain}/plugins/activate', { params: site(siteId), body: { slugs: [slug] } }),
    themes: await c.GET('/sites/{id_or_domain}/themes', { params: site(siteId) }),
    security: await c.GET('/sites/{id_or_domain}/security', { params: site(siteId) }),
    abandoned: await c.GET('/sites/{id_or_domain}/plugins/abandoned', { params: site(siteId) }),
    error: await c.GET('/sites/{id_or_domain}/themes', { params: { path: { id_or_domain: 'nowhere.example' } } }),
  };
}

export async function tagsFamily(c: RestClient, siteId: number) {
  const add = await c.POST('/tags/add', { body: { name: 'Typed', color: '#112233' } });
  const id = add.data?.data.id ?? 0;
  return {
    add,
    list: await c.GET('/tags', { params: { query: { search: 'Typed' } } }),
    one: await c.GET('/tags/{id}', { params: { path: { id } } }),
    edit: await c.PUT('/tags/{id}/edit', { params: { path: { id } }, body: { color: '#445566' } }),
    tagSite: await c.POST('/sites/{id_or_domain}/edit', { params: site(siteId), body: { tags: [id] } }),
    sites: await c.GET('/tags/{id}/sites', { params: { path: { id } } }),
    batch: await c.POST('/tags/batch', { body: { create: [{ name: 'Typed 2' }], update: [{ id, name: 'Typed one' }] } }),
    error: await c.POST('/tags/add', { body: { name: 'typed one' } }),
  };
}

export async function clientsFamily(c: RestClient, siteId: number) {
  const add = await c.POST('/clients/add', { body: { name: 'Typed Client', email: 'typed@example.com', selected_sites: [siteId] } });
  const id = add.data?.data.id ?? 0;
  return {
    add,
    list: await c.GET('/clients', { params: { query: { per_page: 10 } } }),
    byEmail: await c.GET('/clients/{id_or_email}', { params: { path: { id_or_email: 'typed@example.com' } } }),
    sites: await c.GET('/clients/{id}/sites', { params: { path: { id } } }),
    siteClient: await c.GET('/sites/{id_or_domain}/client', { params: site(siteId) }),
    suspend: await c.POST('/clients/{id}/suspend', { params: { path: { id } } }),
    error: await c.GET('/clients/{id_or_email}', { params: { path: { id_or_email: '424242' } } }),
  };
}

export async function costsFamily(c: RestClient, siteId: number) {
  const add = await c.POST('/costs/add', { body: { name: 'Typed hosting', price: 12.5, payment_type: 'subscription', product_type: 'hosting', renewal_type: 'monthly', sites: [siteId] } });
  const id = add.data?.data.id ?? 0;
  return {
    add,
    list: await c.GET('/costs', { params: { query: { per_page: 5 } } }),
    one: await c.GET('/costs/{id}', { params: { path: { id } } }),
    siteCosts: await c.GET('/sites/{id_or_domain}/costs', { params: site(siteId) }),
    remove: await c.DELETE('/costs/{id}/remove', { params: { path: { id } } }),
    error: await c.GET('/costs/{id}', { params: { path: { id } } }),
  };
}

export async function usersFamily(c: RestClient, siteId: number) {
  return {
    list: await c.GET('/users', { params: { query: { websites: String(siteId), roles: 'administrator' } } }),
    create: await c.POST('/users/create', { body: { websites: [siteId], username: 'typed_user', email: 'typed_user@example.com', role: 'editor' } }),
    error: await c.POST('/users/create', { body: { websites: [siteId], username: 'bad_email', email: 'not an address' } }),
  };
}

export async function postsFamily(c: RestClient, siteId: number) {
  const create = await c.POST('/posts/{id_or_domain}/create', { params: site(siteId), body: { post_title: 'Typed post', post_content: 'Hello.', post_status: 'draft' } });
  const postId = create.data?.data.post_id ?? 0;
  return {
    create,
    one: await c.GET('/posts/{id_or_domain}/{post_id}', { params: { path: { id_or_domain: String(siteId), post_id: postId } } }),
    status: await c.PATCH('/posts/{id_or_domain}/{post_id}/update-status', { params: { path: { id_or_domain: String(siteId), post_id: postId } }, body: { status: 'publish' } }),
    list: await c.GET('/posts', { params: { query: { websites: String(siteId) } } }),
    error: await c.GET('/posts/{id_or_domain}/{post_id}', { params: { path: { id_or_domain: String(siteId), post_id: 99999 } } }),
  };
}

export async function jobsAndBatchFamily(c: RestClient, siteId: number) {
  return {
    batch: await c.POST('/batch', { body: { sites: { check: [siteId] }, tags: { create: [{ name: 'From the combined batch' }] } } }),
    sitesBatch: await c.POST('/sites/batch', { body: { sync: [siteId] } }),
    tooMany: await c.POST('/sites/batch', { body: { check: Array.from({ length: 101 }, () => siteId) } }),
    error: await c.GET('/jobs/{job_id}', { params: { path: { job_id: 'sync_00000000-0000-0000-0000-000000000000' } } }),
  };
}

export async function discoveryFamily(c: RestClient) {
  return {
    index: await c.GET('/'),
    document: await c.GET('/openapi.json'),
  };
}
