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
    edit: await c.PATCH('/sites/{id_or_domain}/edit', {
      params: site(siteId),
      body: { name: 'Renamed by the generated client', note: 'typed' },
    }),
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
  const add = await c.POST('/costs/add', {
    body: {
      name: 'Typed hosting',
      price: 12.5,
      payment_type: 'subscription',
      product_type: 'hosting',
      renewal_type: 'monthly',
      sites: [siteId],
    },
  });
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
    create: await c.POST('/users/create', {
      body: { websites: [siteId], username: 'typed_user', email: 'typed_user@example.com', role: 'editor' },
    }),
    error: await c.POST('/users/create', { body: { websites: [siteId], username: 'bad_email', email: 'not an address' } }),
  };
}

export async function postsFamily(c: RestClient, siteId: number) {
  const create = await c.POST('/posts/{id_or_domain}/create', {
    params: site(siteId),
    body: { post_title: 'Typed post', post_content: 'Hello.', post_status: 'draft' },
  });
  const postId = create.data?.data.post_id ?? 0;
  return {
    create,
    one: await c.GET('/posts/{id_or_domain}/{post_id}', { params: { path: { id_or_domain: String(siteId), post_id: postId } } }),
    status: await c.PATCH('/posts/{id_or_domain}/{post_id}/update-status', {
      params: { path: { id_or_domain: String(siteId), post_id: postId } },
      body: { status: 'publish' },
    }),
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

export async function updatesFamily(c: RestClient, siteId: number) {
  const one = await c.GET('/updates/{id_or_domain}', { params: site(siteId) });
  const plugins = (one.data?.data ?? []).filter((u) => u.type === 'plugin').map((u) => u.slug);
  const [apply = '', ignore = ''] = plugins;
  return {
    plugins,
    list: await c.GET('/updates', { params: { query: { include: [siteId], types: ['plugins', 'themes'], per_page: 50 } } }),
    one,
    dryRun: await c.POST('/updates/update', { body: { include: [siteId], types: ['plugins'], dry_run: true } }),
    apply: await c.POST('/updates/{id_or_domain}/update/plugins', { params: site(siteId), body: { slug: [apply] } }),
    ignore: await c.POST('/updates/{id_or_domain}/ignore/plugins', { params: site(siteId), body: { slug: [ignore] } }),
    ignored: await c.GET('/updates/{id_or_domain}/ignored', { params: { ...site(siteId), query: { types: ['plugins'] } } }),
    after: await c.GET('/updates/{id_or_domain}', { params: { ...site(siteId), query: { types: ['plugins'] } } }),
    unignore: await c.DELETE('/updates/{id_or_domain}/ignore/plugins', { params: { ...site(siteId), query: { slug: [ignore] } } }),
    fleetIgnored: await c.GET('/updates/ignored', { params: { query: { include: [siteId] } } }),
    error: await c.GET('/updates/{id_or_domain}', { params: { path: { id_or_domain: '987654' } } }),
  };
}

export async function pagesFamily(c: RestClient, siteId: number) {
  const create = await c.POST('/pages/{id_or_domain}/create', {
    params: site(siteId),
    body: { post_title: 'Typed page', post_content: 'About us.', post_status: 'draft' },
  });
  const page = { path: { id_or_domain: String(siteId), post_id: create.data?.data.post_id ?? 0 } };
  return {
    create,
    one: await c.GET('/pages/{id_or_domain}/{post_id}', { params: page }),
    edit: await c.PUT('/pages/{id_or_domain}/{post_id}/edit', { params: page, body: { post_title: 'Typed page, edited' } }),
    status: await c.PATCH('/pages/{id_or_domain}/{post_id}/update-status', { params: page, body: { status: 'publish' } }),
    list: await c.GET('/pages', { params: { query: { websites: String(siteId), search: 'Typed page' } } }),
    remove: await c.DELETE('/pages/{id_or_domain}/{post_id}/delete', { params: page }),
    error: await c.GET('/pages/{id_or_domain}/{post_id}', { params: { path: { id_or_domain: String(siteId), post_id: 99999 } } }),
  };
}

export async function clientFieldsFamily(c: RestClient) {
  const owner = await c.POST('/clients/add', { body: { name: 'Fielded Client', email: 'fielded@example.com' } });
  const id = owner.data?.data.id ?? 0;
  const add = await c.POST('/clients/fields/add', { body: { name: 'Contract', description: 'Contract number' } });
  const field = { path: { id_name: 'Contract' } };
  return {
    add,
    list: await c.GET('/clients/fields', { params: { query: { search: 'Contract' } } }),
    edit: await c.PUT('/clients/fields/{id_name}/edit', { params: field, body: { description: 'The signed contract' } }),
    set: await c.PUT('/clients/{id}/fields/edit', { params: { path: { id } }, body: { values: { Contract: 'C-1042' } } }),
    values: await c.GET('/clients/{id}/fields', { params: { path: { id } } }),
    clients: await c.GET('/clients/fields/{id_name}/clients', { params: { ...field, query: { value: 'C-1042' } } }),
    remove: await c.DELETE('/clients/fields/{id_name}/delete', { params: field }),
    error: await c.GET('/clients/fields/{id_name}/clients', { params: field }),
  };
}

export async function settingsFamily(c: RestClient) {
  const typeAdd = await c.POST('/settings/cost-tracker/product-types/add', { body: { title: 'Typed support', color: '#123456' } });
  const methodAdd = await c.POST('/settings/cost-tracker/payment-methods/add', { body: { title: 'Typed transfer' } });
  const method = Object.keys(methodAdd.data?.data ?? {})[0] ?? '';
  return {
    general: await c.GET('/settings/general'),
    generalEdit: await c.PUT('/settings/general/edit', { body: { frequency_daily_update: 2, time_daily_update: '03:30' } }),
    advanced: await c.GET('/settings/advanced'),
    advancedEdit: await c.PUT('/settings/advanced/edit', { body: { mainwp_maximum_sync_requests: 4 } }),
    typeAdd,
    methodAdd,
    methodDelete: await c.DELETE('/settings/cost-tracker/payment-methods/{slug}/delete', { params: { path: { slug: method } } }),
    costTracker: await c.GET('/settings/cost-tracker'),
    disconnectDryRun: await c.POST('/settings/tools/disconnect-all-sites', { body: { dry_run: true } }),
    unsupported: await c.GET('/settings/dashboard-insights'),
    error: await c.POST('/settings/tools/disconnect-all-sites', { body: {} }),
  };
}

export async function monitorsFamily(c: RestClient, siteId: number) {
  const webhookAdd = await c.POST('/webhooks/add', {
    body: { url: 'http://127.0.0.1:9/typed-hook', description: 'typed', events: ['site.down'] },
  });
  const hook = { path: { id: webhookAdd.data?.data.id ?? 0 } };
  return {
    check: await c.POST('/monitors/{id_or_domain}/check', { params: site(siteId) }),
    list: await c.GET('/monitors', { params: { query: { per_page: 10 } } }),
    basic: await c.GET('/monitors/basic'),
    count: await c.GET('/monitors/count', { params: { query: { status: 'up' } } }),
    one: await c.GET('/monitors/{id_or_domain}', { params: site(siteId) }),
    heartbeat: await c.GET('/monitors/{id_or_domain}/heartbeat', { params: { ...site(siteId), query: { period: '24h' } } }),
    incidents: await c.GET('/monitors/{id_or_domain}/incidents', { params: site(siteId) }),
    siteSettings: await c.PUT('/monitors/{id_or_domain}/settings', {
      params: site(siteId),
      body: { interval: '10m', expected_status: [200, 301] },
    }),
    fleetSettings: await c.GET('/monitors/settings'),
    webhookAdd,
    webhooks: await c.GET('/webhooks'),
    webhookTest: await c.POST('/webhooks/{id}/test', { params: hook }),
    webhookRemove: await c.DELETE('/webhooks/{id}/remove', { params: hook }),
    error: await c.GET('/monitors/{id_or_domain}', { params: { path: { id_or_domain: '987654' } } }),
  };
}
