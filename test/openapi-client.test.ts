// Issue 20, proof by real tools: openapi-typescript turns the served document into types, the TypeScript compiler
// checks a generated openapi-fetch client's calls (test/support/openapi-client.ts) against them, and the client
// drives a real `serve` with simulated children through every route family, one error each. Every answer it gets is
// also checked against the document's schema for its route and status.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Middleware } from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFleet, registerSites, type Fleet } from './support/fleet.js';
import { checkRestAnswer } from './support/openapi-check.js';
import * as families from './support/openapi-client.js';
// @ts-expect-error a plain ES module without types
import { openApiTypes } from './support/openapi-types.mjs';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));

/** Every answer the generated client gets must match the document (the same check TestServer.rest makes). */
const checked: string[] = [];
const check: Middleware = {
  async onResponse({ request, response }) {
    const url = new URL(request.url);
    const path = url.pathname.replace(/^\/wp-json\/svc\/v2/, '') + url.search;
    const text = await response.clone().text();
    checkRestAnswer(request.method, path, response.status, text ? JSON.parse(text) : null, response.headers);
    checked.push(`${request.method} ${path} ${response.status}`);
    return undefined;
  },
};

describe('the generated client (openapi-typescript + openapi-fetch)', () => {
  let f: Fleet;
  let client: families.RestClient;
  let siteId: number;
  let otherSite: number;

  beforeAll(async () => {
    f = await startFleet({ sim: { sites: 2 } });
    [siteId, otherSite] = (await registerSites(f, 2)).map((s) => s.id) as [number, number];
    client = families.restClient(f.s.restBase, f.s.creds.key.read_write, check);
  });
  afterAll(async () => {
    await f.close();
  });

  it('compiles against the types openapi-typescript makes of the served document', async () => {
    const served = await client.GET('/openapi.json');
    expect(served.response.status).toBe(200);
    mkdirSync(`${root}test/fixtures/openapi`, { recursive: true });
    writeFileSync(`${root}test/fixtures/openapi/paths.d.ts`, await openApiTypes(served.data));
    // One compiler run: the client must compile, and calls the document does not describe must not — a path it
    // lacks, a required field left out, a field of the wrong type.
    writeFileSync(
      `${root}test/fixtures/openapi/wrong.ts`,
      [
        "import type { RestClient } from '../../support/openapi-client.js';",
        "export const noPath = (c: RestClient) => c.GET('/widgets');",
        "export const noName = (c: RestClient) => c.POST('/tags/add', { body: { color: '#000000' } });",
        "export const badPage = (c: RestClient) => c.GET('/tags', { params: { query: { page: 'two' } } });",
        '',
      ].join('\n'),
    );
    writeFileSync(
      `${root}test/fixtures/openapi/tsconfig.json`,
      JSON.stringify({
        extends: '../../../tsconfig.json',
        // Incremental: a run whose files and document are unchanged reuses the last check of them; a changed file, the
        // generated types included, is checked again.
        compilerOptions: {
          noEmit: true,
          rootDir: '../../..',
          lib: ['ES2023', 'DOM'],
          incremental: true,
          tsBuildInfoFile: '../../../node_modules/.cache/sitefleet/openapi-client.tsbuildinfo',
        },
        // The walk (the client's calls and the answers it reads; lint's tsconfig.test.json leaves it out), not this test:
        // this file imports the fleet support and through it all of src/, which the build checks already (a cold run
        // took 16.5 s with it, 3.1 s without, and 35-60 s on a loaded 2-core machine). What this file reads of an
        // answer its assertions check when it runs.
        include: ['paths.d.ts', 'wrong.ts', '../../support/openapi-client.ts'],
      }),
    );
    const tsc = await run(
      process.execPath,
      [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}test/fixtures/openapi/tsconfig.json`],
      { cwd: root },
    ).then(
      () => ({ stdout: '' }),
      (e: { stdout: string }) => ({ stdout: e.stdout }),
    );
    const errors = tsc.stdout.split('\n').filter((l) => l.includes('error TS'));
    expect(errors.filter((l) => !l.startsWith('test/fixtures/openapi/wrong.ts'))).toEqual([]);
    expect(errors.map((l) => l.replace(/^.*wrong\.ts\((\d+),.*$/, '$1'))).toEqual(['2', '3', '4']);
  }, 120_000);

  it('sites: list, count, one, edit, sync, check; an unknown id is 404 svc_rest_invalid_site_id', async () => {
    const r = await families.sitesFamily(client, siteId);
    expect(r.list.data?.total).toBe(2);
    expect(r.list.response.headers.get('x-wp-totalpages')).toBe('1');
    expect(r.count.data?.count).toBe(2);
    expect(r.one.data?.data.id).toBe(siteId);
    expect(r.edit.data?.data.name).toBe('Renamed by the generated client');
    expect(r.sync.data?.data.stats).toBeDefined();
    expect(r.check.data?.data.reachable).toBe(true);
    expect(r.error.response.status).toBe(404);
    expect(r.error.error?.code).toBe('svc_rest_invalid_site_id');
  });

  it('plugins and themes of a site: list, activate, security, abandoned; an unknown domain is 404 svc_rest_invalid_site_data', async () => {
    const r = await families.pluginsFamily(client, siteId);
    expect(r.plugins.data?.data.length).toBeGreaterThan(0);
    expect(r.activate.data?.success).toBe(1);
    expect(r.themes.data?.active_theme).toBeTruthy();
    expect(r.security.data?.site.id).toBe(siteId);
    expect(r.abandoned.data?.success).toBe(1);
    expect(r.error.error?.code).toBe('svc_rest_invalid_site_data');
  });

  it('tags: add, list, one, edit, tag a site, its sites, batch; a taken name is 409 svc_tag_exists', async () => {
    const r = await families.tagsFamily(client, siteId);
    expect(r.add.data?.data.name).toBe('Typed');
    expect(r.list.data?.total).toBe(1);
    expect(r.one.data?.data.color).toBe('#112233');
    expect(r.edit.data?.data.color).toBe('#445566');
    expect(r.sites.data?.data.map((s: { id: number }) => s.id)).toEqual([siteId]);
    expect(r.batch.data?.create?.[0]).toMatchObject({ success: 1 });
    expect(r.error.response.status).toBe(409);
    expect(r.error.error?.code).toBe('svc_tag_exists');
  });

  it("clients: add, list, by e-mail, sites, a site's client, suspend; an unknown id is 404 svc_rest_invalid_client_id", async () => {
    const r = await families.clientsFamily(client, otherSite);
    expect(r.add.data?.data.name).toBe('Typed Client');
    expect(r.list.data?.total).toBe(1);
    expect(r.byEmail.data?.data.email).toBe('typed@example.com');
    expect(r.sites.data?.data.map((s: { id: number }) => s.id)).toEqual([otherSite]);
    expect(r.siteClient.data?.data?.name).toBe('Typed Client');
    expect(r.suspend.data?.suspended).toBe(1);
    expect(r.error.error?.code).toBe('svc_rest_invalid_client_id');
  });

  it("costs: add, list, one, a site's costs, remove; the removed one is 404 svc_rest_invalid_costs_id", async () => {
    const r = await families.costsFamily(client, siteId);
    expect(r.add.error).toBeUndefined();
    expect(r.list.data?.total).toBe(1);
    expect(r.one.data?.data.name).toBe('Typed hosting');
    expect(r.siteCosts.data?.total_monthly).toBe(12.5);
    expect(r.remove.data?.success).toBe(1);
    expect(r.error.error?.code).toBe('svc_rest_invalid_costs_id');
  });

  it('users on child sites: list, create; a malformed e-mail is 400 naming it', async () => {
    const r = await families.usersFamily(client, siteId);
    expect(r.list.data?.total).toBeGreaterThan(0);
    expect(r.create.data?.data.total_success).toBe(1);
    expect(r.error.response.status).toBe(400);
    expect(r.error.error?.data).toMatchObject({ params: { email: expect.any(String) } });
  });

  it('posts on child sites: create, get, update status, list; an unknown post is an error', async () => {
    const r = await families.postsFamily(client, siteId);
    expect(r.create.data?.data.post_status).toBe('draft');
    expect(r.one.data?.data.post_title).toBe('Typed post');
    expect(r.status.data?.data.post_status).toBe('publish');
    expect(r.list.data?.total).toBeGreaterThan(0);
    expect(r.error.response.status).toBeGreaterThanOrEqual(400);
    expect(r.error.error?.code).toMatch(/^svc_/);
  });

  it('batches and jobs: the combined batch, a site batch; 101 items are 413, an unknown job is 404', async () => {
    const r = await families.jobsAndBatchFamily(client, siteId);
    expect(r.batch.data?.sites?.check?.[0]).toMatchObject({ success: 1 });
    expect(r.batch.data?.tags?.create?.[0]).toMatchObject({ success: 1 });
    expect(r.sitesBatch.data?.sync?.[0]).toMatchObject({ success: 1 });
    expect(r.tooMany.response.status).toBe(413);
    expect(r.error.error?.code).toBe('svc_job_not_found');
  });

  it("updates: the fleet's, a site's, a dry run, one plugin applied, ignore and unignore; an unknown site is 404 svc_rest_invalid_site_id", async () => {
    const r = await families.updatesFamily(client, siteId);
    expect(r.plugins.length).toBeGreaterThanOrEqual(2);
    expect(r.list.data?.data.every((u: { site_id: number }) => u.site_id === siteId)).toBe(true);
    expect(r.list.data?.summary.plugins).toBe(r.plugins.length);
    expect(r.one.data?.summary.plugins).toBe(r.plugins.length);
    expect(r.dryRun.data?.dry_run).toBe(true);
    expect(r.dryRun.data?.would_update?.length).toBe(r.plugins.length);
    expect(r.apply.data?.success).toBe(1);
    expect(r.apply.data?.data.updated).toHaveLength(1);
    expect(r.ignore.data?.changed).toBe(1);
    expect(r.ignored.data?.data.map((i: { slug: string }) => i.slug)).toEqual([r.plugins[1]]);
    expect(r.after.data?.data.map((u: { slug: string }) => u.slug)).toEqual(r.plugins.slice(2));
    expect(r.after.data?.ignored.map((u: { slug: string }) => u.slug)).toEqual([r.plugins[1]]);
    expect(r.unignore.data?.changed).toBe(1);
    expect(r.fleetIgnored.data?.total).toBe(0);
    expect(r.error.response.status).toBe(404);
    expect(r.error.error?.code).toBe('svc_rest_invalid_site_id');
  });

  it('pages on child sites: create, get, edit, update status, list, delete; an unknown page is 404 svc_page_not_found', async () => {
    const r = await families.pagesFamily(client, siteId);
    expect(r.create.data?.data.post_status).toBe('draft');
    expect(r.one.data?.data.post_title).toBe('Typed page');
    expect(r.edit.data?.data.name).toBe('Typed page, edited');
    expect(r.status.data?.data).toMatchObject({ previous_status: 'draft', post_status: 'publish' });
    expect(r.list.data?.total).toBeGreaterThan(0);
    expect(r.remove.data?.data.name).toBe('Typed page, edited');
    expect(r.error.response.status).toBe(404);
    expect(r.error.error?.code).toBe('svc_page_not_found');
  });

  it("client custom fields: add, list, edit, a client's values, clients by value, delete; the deleted one is 404 svc_client_field_not_found", async () => {
    const r = await families.clientFieldsFamily(client);
    expect(r.add.data?.data.name).toBe('Contract');
    expect(r.list.data?.total).toBe(1);
    expect(r.edit.data?.data.description).toBe('The signed contract');
    expect(r.set.error).toBeUndefined();
    expect(r.values.data?.data.fields.map((x: { name: string; value: string | null }) => `${x.name}=${x.value}`)).toEqual([
      'Contract=C-1042',
    ]);
    expect(r.clients.data?.data.map((x: { name: string }) => x.name)).toEqual(['Fielded Client']);
    expect(r.remove.data?.values_removed).toBe(1);
    expect(r.error.response.status).toBe(404);
    expect(r.error.error?.code).toBe('svc_client_field_not_found');
  });

  it("settings: general, advanced, the cost tracker's types and methods, disconnect-all as a dry run, a 501 route; no confirmation is 400", async () => {
    const r = await families.settingsFamily(client);
    expect(r.general.data?.data.frequency_daily_update).toBeTypeOf('number');
    expect(r.advanced.data?.data.mainwp_maximum_sync_requests).toBeTypeOf('number');
    expect(r.generalEdit.data?.data).toMatchObject({ frequency_daily_update: 2, time_daily_update: '03:30' });
    expect(r.advancedEdit.data?.data.mainwp_maximum_sync_requests).toBe(4);
    expect(Object.values(r.typeAdd.data?.data ?? {})[0]).toMatchObject({ title: 'Typed support', color: '#123456' });
    expect(Object.values(r.methodAdd.data?.data ?? {})).toEqual(['Typed transfer']);
    expect(r.methodDelete.data?.success).toBe(1);
    expect(r.costTracker.data?.data.product_categories.map((t: { title: string }) => t.title)).toContain('Typed support');
    expect(Object.values(r.costTracker.data?.data.payment_methods ?? {})).not.toContain('Typed transfer');
    expect(r.disconnectDryRun.data?.data.total).toBe(2);
    expect(r.unsupported.response.status).toBe(501);
    expect(r.unsupported.error?.code).toBe('svc_not_supported');
    expect(r.error.response.status).toBe(400);
    expect(r.error.error?.code).toBe('svc_confirmation_required');
  });

  it('monitors and webhooks: a check, the lists, count, one, heartbeats, incidents, settings; a webhook added, tested, removed; an unknown site is 404', async () => {
    const r = await families.monitorsFamily(client, siteId);
    expect(r.check.data?.data.uptime_status).toBe('up');
    expect(r.list.data?.total).toBe(2);
    expect(r.basic.data?.data.map((m: { id: number }) => m.id)).toContain(siteId);
    expect(r.count.data?.count).toBeGreaterThanOrEqual(1);
    expect(r.one.data?.data).toMatchObject({ id: siteId, last_status: 'up' });
    expect(r.heartbeat.data?.data.length).toBeGreaterThan(0);
    expect(r.incidents.data?.total).toBe(0);
    expect(r.siteSettings.data?.data.monitor_id).toBe(siteId);
    expect(r.siteSettings.data?.data.interval_s).toBe(600);
    expect(r.fleetSettings.data?.data.monitor_id).toBe(0);
    expect(r.webhookAdd.data?.data.secret).toMatch(/^whsec_/);
    expect(r.webhooks.data?.total).toBe(1);
    expect(r.webhookTest.data?.success).toBe(0);
    expect(r.webhookTest.data?.data.status).toBe('failed');
    expect(r.webhookRemove.data?.success).toBe(1);
    expect(r.error.response.status).toBe(404);
    expect(r.error.error?.code).toBe('svc_rest_invalid_site_id');
  });

  it('discovery: the index and the document themselves', async () => {
    const r = await families.discoveryFamily(client);
    expect(r.index.data?.namespace).toBe('svc/v2');
    expect(r.document.data?.openapi).toBe('3.1.0');
    // Every answer above went through the document check.
    expect(checked.length).toBeGreaterThan(40);
  });
});
