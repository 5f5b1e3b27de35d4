// Installing plugins and themes on many sites (install-plugins-v1, install-themes-v1; POST /plugins|themes/install; MCP)
// on simulated children, from the simulator's stand-in directory (/__sim/dir/) by slug and version, or from a zip URL:
// per-site results, skips, failures, dry runs, jobs, the stored lists right after, and MCP's confirmation.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildSim, type ChildSim } from '../src/child/simulator/server.js';
import { checkZipUrl } from '../src/domain/installs.js';
import { buildMcpServer } from '../src/mcp/server.js';
import { rawSignedCall } from './support/child-sim.js';
import { expectError, expectSchema } from './support/fixtures.js';
import { shape } from './support/reply-script.js';
import { startServer, type TestServer } from './support/server.js';
import { until } from './support/wait.js';

let sim: ChildSim;
let s: TestServer;
let dir: string;
let ids: number[];

async function register(server: TestServer, n: number, from = 1): Promise<number[]> {
  const out: number[] = [];
  for (const info of sim.sites.slice(from - 1, from - 1 + n)) {
    const r = await server.rest('/sites/add', {
      method: 'POST',
      json: { url: info.url, admin: info.admin, admin_password: info.password, name: `Sim ${info.index}` },
    });
    if (r.status !== 200) throw new Error(`add ${info.url}: ${r.status} ${JSON.stringify(r.body)}`);
    out.push(r.body.data.id);
  }
  return out;
}

const simPlugin = (n: number, folder: string) => sim.state(n).plugins.find((p) => p.slug.startsWith(`${folder}/`));
const storedPlugins = async (id: number) => (await s.ability('get-site-plugins-v1', { site_id_or_domain: id })).body.plugins;
const requests = (ns: number[]) => ns.map((n) => sim.requests(n));
const output = (name: string) => s.registry.schemas(s.registry.get(name)!).output;

beforeAll(async () => {
  sim = await startChildSim({ sites: 10, seed: 5 });
  dir = `${sim.baseUrl}/__sim/dir/`;
  s = await startServer({ config: { packageSource: dir } });
  ids = await register(s, 8);
});
afterAll(async () => {
  await s?.close();
  await sim?.close();
});

describe('installing from the directory by slug', () => {
  it('installs and activates on every selected site; each site reports the version, and the stored list has it at once', async () => {
    const r = await s.ability('install-plugins-v1', { site_ids_or_domains: ids.slice(0, 3), slug: 'sim-delta', activate: true });
    expect(r.status).toBe(200);
    expectSchema(r.body, output('install-plugins-v1'));
    expect(r.body.package).toMatchObject({ type: 'plugin', source: 'directory', slug: 'sim-delta', version: '1.1.0' });
    expect(r.body.package.download_url).toBe(`${dir}plugin/sim-delta.1.1.0.zip`);
    expect(r.body.summary).toEqual({ installed: 3, failed: 0, skipped: 0 });
    expect(r.body.installed.map((i: { site_id: number }) => i.site_id)).toEqual(ids.slice(0, 3));
    for (const row of r.body.installed)
      expect(row).toMatchObject({ slug: 'sim-delta/sim-delta.php', version: '1.1.0', activated: true, replaced_version: null });
    for (const n of [1, 2, 3]) expect(simPlugin(n, 'sim-delta')).toMatchObject({ version: '1.1.0', active: true });
    // No sync needed: the list every door reads has it, active.
    const before = requests([1, 2, 3]);
    for (const id of ids.slice(0, 3))
      expect((await storedPlugins(id)).find((p: { slug: string }) => p.slug === 'sim-delta/sim-delta.php')).toMatchObject({
        version: '1.1.0',
        active: true,
      });
    expect(requests([1, 2, 3])).toEqual(before);
  });

  it('a site that has it is skipped (with the version it has) and not called, unless overwrite', async () => {
    const before = requests([1, 4]);
    const r = await s.ability('install-plugins-v1', { site_ids_or_domains: [ids[0], ids[3]], slug: 'sim-delta', version: '1.0.0' });
    expect(r.body.summary).toEqual({ installed: 1, failed: 0, skipped: 1 });
    expect(r.body.skipped[0]).toMatchObject({ site_id: ids[0], reason: 'already_installed', installed_version: '1.1.0' });
    expect(r.body.installed[0]).toMatchObject({ site_id: ids[3], version: '1.0.0', activated: null });
    expect(sim.requests(1)).toBe(before[0]);
    expect(simPlugin(4, 'sim-delta')).toMatchObject({ version: '1.0.0', active: false });
    // An older version, then the newer one over it.
    const over = await s.ability('install-plugins-v1', {
      site_ids_or_domains: [ids[3]],
      slug: 'sim-delta',
      version: '1.1.0',
      overwrite: true,
    });
    expect(over.body.installed[0]).toMatchObject({ version: '1.1.0', replaced_version: '1.0.0' });
    expect(simPlugin(4, 'sim-delta')!.version).toBe('1.1.0');
    expect((await storedPlugins(ids[3]!)).filter((p: { slug: string }) => p.slug.startsWith('sim-delta/'))).toHaveLength(1);
  });

  it('a dry run lists each site with install or overwrite and calls no site', async () => {
    const before = requests([1, 2, 5]);
    const r = await s.ability('install-plugins-v1', {
      site_ids_or_domains: [ids[0], ids[1], ids[4]],
      slug: 'sim-delta',
      overwrite: true,
      dry_run: true,
    });
    expect(r.body).toMatchObject({ dry_run: true, sites_to_install: 3, installed: [], summary: { installed: 0, failed: 0, skipped: 0 } });
    expect(r.body.would_install.map((w: { action: string; installed_version: string | null }) => [w.action, w.installed_version])).toEqual([
      ['overwrite', '1.1.0'],
      ['overwrite', '1.1.0'],
      ['install', null],
    ]);
    expect(requests([1, 2, 5])).toEqual(before);
  });

  it('installs a theme by slug (REST), and it is on the stored theme list', async () => {
    const r = await s.rest('/themes/install', { method: 'POST', json: { site_ids_or_domains: [ids[4]], slug: 'sim-nova' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, summary: { installed: 1 }, data: { installed: [{ slug: 'sim-nova', version: '1.0.0' }] } });
    expect(sim.state(5).themes.find((t) => t.slug === 'sim-nova')).toMatchObject({ version: '1.0.0', active: false });
    const themes = (await s.ability('get-site-themes-v1', { site_id_or_domain: ids[4] })).body.themes;
    expect(themes.find((t: { slug: string }) => t.slug === 'sim-nova')).toMatchObject({ version: '1.0.0', active: false });
  });
});

describe('installing from a zip URL', () => {
  it('sends the URL as given; the folder is known from SLUG.VERSION.zip, so a site that has it is skipped', async () => {
    const url = `${dir}plugin/contact-form-lite.2.0.0.zip`;
    const r = await s.rest('/plugins/install', { method: 'POST', json: { site_ids_or_domains: `${ids[5]}`, url, activate: '1' } });
    expect(r.status).toBe(200);
    expect(r.body.package).toEqual({
      type: 'plugin',
      source: 'url',
      slug: 'contact-form-lite',
      name: null,
      version: null,
      download_url: url,
    });
    expect(r.body.data.installed[0]).toMatchObject({ slug: 'contact-form-lite/contact-form-lite.php', version: '2.0.0', activated: true });
    const again = await s.rest('/plugins/install', { method: 'POST', json: { site_ids_or_domains: [ids[5]], url } });
    expect(again.body.data.skipped[0]).toMatchObject({ reason: 'already_installed', installed_version: '2.0.0' });
  });

  it('the address policy judges the URL before any site is called: no private address, no credentials, http(s) only', async () => {
    for (const bad of ['http://127.0.0.1/x.zip', 'http://localhost:8080/x.zip', 'http://10.1.2.3/x.zip', 'http://[::1]/x.zip'])
      await expect(checkZipUrl(bad, false), bad).rejects.toMatchObject({ code: 'svc_address_not_allowed', status: 400 });
    await expect(checkZipUrl('https://93.184.216.34/p.zip', false)).resolves.toBe('https://93.184.216.34/p.zip');
    await expect(checkZipUrl('http://127.0.0.1/x.zip', true)).resolves.toBe('http://127.0.0.1/x.zip');
    for (const bad of ['ftp://dir.example/x.zip', 'https://u:p@dir.example/x.zip', 'not a url', `https://x.example/${'a'.repeat(2100)}`])
      await expect(checkZipUrl(bad, false), bad).rejects.toMatchObject({ code: 'svc_invalid_url', status: 400 });
    const before = requests([7]);
    expectError(
      await s.ability('install-plugins-v1', { site_ids_or_domains: [ids[6]], url: 'ftp://x.example/a.zip' }),
      400,
      'svc_invalid_url',
    );
    expect(requests([7])).toEqual(before);
  });
});

describe('what cannot be installed', () => {
  it('bad requests are refused before any site is called', async () => {
    const before = requests([7]);
    const on = { site_ids_or_domains: [ids[6]] };
    expectError(await s.ability('install-plugins-v1', { ...on, slug: 'no-such-plugin' }), 404, 'svc_package_not_found');
    expectError(
      await s.ability('install-plugins-v1', { ...on, slug: 'sim-delta', version: '7.0.0' }),
      404,
      'svc_package_version_not_found',
    );
    expectError(await s.ability('install-plugins-v1', { ...on, slug: 'Bad Slug' }), 400, 'svc_invalid_slug');
    expectError(await s.ability('install-plugins-v1', { ...on }), 400, 'svc_invalid_input');
    expectError(
      await s.ability('install-plugins-v1', { ...on, slug: 'sim-delta', url: `${dir}plugin/sim-delta.zip` }),
      400,
      'svc_invalid_input',
    );
    expectError(
      await s.ability('install-plugins-v1', { ...on, url: `${dir}plugin/sim-delta.zip`, version: '1.0.0' }),
      400,
      'svc_invalid_input',
    );
    expectError(await s.ability('install-plugins-v1', { slug: 'sim-delta' }), 400, 'svc_sites_required');
    expectError(await s.ability('install-plugins-v1', { site_ids_or_domains: [999], slug: 'sim-delta' }), 404, 'svc_sites_not_found');
    expectError(await s.ability('install-themes-v1', { ...on, slug: 'sim-nova', activate: true }), 400, 'ability_invalid_input');
    expectError(await s.ability('install-plugins-v1', { ...on, slug: 'sim-delta', overwrite: 'maybe' }), 400, 'ability_invalid_input');
    const rest = await s.rest('/plugins/install', { method: 'POST', json: { ...on, slug: 'sim-delta', overwrite: 'maybe' } });
    expect(rest.status).toBe(400);
    expect(requests([7])).toEqual(before);
  });

  it("per-site results: the child's failure, an unreachable site, a suspended one, an unknown selector; the others install", async () => {
    sim.setFault(8, { type: 'down' });
    try {
      const suspended = (await s.rest(`/sites/${ids[6]}/suspend`, { method: 'POST' })).status;
      expect(suspended).toBe(200);
      const r = await s.ability('install-plugins-v1', {
        site_ids_or_domains: [ids[0], ids[6], ids[7], 'nowhere.example'],
        slug: 'sim-broken',
      });
      expect(r.status).toBe(200);
      expect(r.body.summary).toEqual({ installed: 0, failed: 3, skipped: 1 });
      const byId = Object.fromEntries(r.body.errors.map((e: { site_id: number | null; code: string }) => [e.site_id ?? 'none', e.code]));
      expect(byId).toEqual({ none: 'svc_site_not_found', [ids[0]!]: 'svc_install_failed', [ids[7]!]: 'svc_child_unreachable' });
      expect(r.body.errors.find((e: { site_id: number }) => e.site_id === ids[0]).message).toMatch(/HTTP 500/);
      expect(r.body.skipped[0]).toMatchObject({ site_id: ids[6], reason: 'site_suspended' });
      const rest = await s.rest('/plugins/install', { method: 'POST', json: { site_ids_or_domains: [ids[7]], slug: 'form-builder-sim' } });
      expect(rest.status).toBe(200);
      expect(rest.body).toMatchObject({ success: 0, data: { errors: [{ site_id: ids[7], code: 'svc_child_unreachable' }] } });
    } finally {
      sim.setFault(8, null);
      await s.rest(`/sites/${ids[6]}/unsuspend`, { method: 'POST' });
    }
  });
});

describe('over MCP', () => {
  async function mcpClient(answer: 'accept' | 'decline', asked: string[]) {
    const [a, b] = InMemoryTransport.createLinkedPair();
    await buildMcpServer(s.registry, { principal: { kind: 'local', name: 'stdio' } }, s.services).connect(a);
    const client = new Client({ name: 't', version: '1' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, (req) => {
      asked.push(req.params.message);
      return answer === 'accept' ? { action: 'accept', content: { confirm: true } } : { action: 'decline' };
    });
    await client.connect(b);
    return client;
  }

  it('asks the person before installing on more than one site; declined, nothing is installed', async () => {
    const asked: string[] = [];
    const client = await mcpClient('decline', asked);
    const r = await client.callTool({
      name: 'install-plugins-v1',
      arguments: { site_ids_or_domains: [ids[1], ids[2]], slug: 'form-builder-sim' },
    });
    expect(r.isError).toBe(true);
    expect((r.structuredContent as { code: string }).code).toBe('svc_confirmation_declined');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('would_install');
    expect(simPlugin(2, 'form-builder-sim')).toBeUndefined();
    expect(simPlugin(3, 'form-builder-sim')).toBeUndefined();
    await client.close();
  });

  it('accepted, it installs; one site is not asked about', async () => {
    const asked: string[] = [];
    const client = await mcpClient('accept', asked);
    const r = await client.callTool({
      name: 'install-plugins-v1',
      arguments: { site_ids_or_domains: [ids[1], ids[2]], slug: 'form-builder-sim' },
    });
    expect(r.isError).toBeFalsy();
    expect((r.structuredContent as { summary: unknown }).summary).toEqual({ installed: 2, failed: 0, skipped: 0 });
    expect(asked).toHaveLength(1);
    const one = await client.callTool({ name: 'install-themes-v1', arguments: { site_ids_or_domains: [ids[1]], slug: 'sim-nova' } });
    expect(one.isError).toBeFalsy();
    expect(asked).toHaveLength(1);
    await client.close();
  });
});

describe('over the queue threshold', () => {
  it('becomes a job that installs on each site and records each site as it goes', async () => {
    const q = await startServer({ config: { packageSource: dir, queueThreshold: '1' } });
    try {
      const [a, b] = await register(q, 2, 9);
      const r = await q.ability('install-plugins-v1', { site_ids_or_domains: [a, b], slug: 'sim-delta', version: '1.0.0' });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ queued: true, sites_to_install: 2, installed: [] });
      expect(r.body.job_id).toMatch(/^install_/);
      const job = await until(
        async () => (await q.ability('get-batch-job-status-v1', { job_id: r.body.job_id }, { method: 'GET' })).body,
        (j) => j.status === 'completed',
      );
      expect(job).toMatchObject({ processed: 2, succeeded: 2, failed: 0 });
      // Recorded as each site finishes (sites run in parallel): sorted here.
      const rows = job.items.map((i: { site_id: number; status: string; version: string }) => [i.site_id, i.status, i.version]);
      expect(rows.sort((x: [number], y: [number]) => x[0] - y[0])).toEqual([
        [a, 'installed', '1.0.0'],
        [b, 'installed', '1.0.0'],
      ]);
      expect(simPlugin(9, 'sim-delta')!.version).toBe('1.0.0');
      const stored = (await q.ability('get-site-plugins-v1', { site_id_or_domain: b })).body.plugins;
      expect(stored.find((p: { slug: string }) => p.slug === 'sim-delta/sim-delta.php')).toMatchObject({ version: '1.0.0' });
      // REST: the queued answer says where to follow the job.
      const rest = await q.rest('/themes/install', { method: 'POST', json: { site_ids_or_domains: [a, b], slug: 'sim-nova' } });
      expect(rest.body).toMatchObject({ success: 1, queued: true, status_url: `${q.restBase}/jobs/${rest.body.job_id}` });
      const done = await until(
        async () => (await q.rest(`/jobs/${rest.body.job_id}`)).body.data,
        (j) => j.status === 'completed',
      );
      expect(done).toMatchObject({ succeeded: 2 });
      // The site's history (REST) has both installs, each by whoever queued its job; updates are not listed.
      const hist = await q.rest(`/updates/${b}/history?action=install&outcome=installed`);
      expect(hist.status).toBe(200);
      expect(
        hist.body.data.map((e: { action: string; type: string; slug: string; to: string; actor: { kind: string; name: string } }) => [
          e.action,
          e.type,
          e.slug,
          e.to,
          e.actor.kind,
          e.actor.name,
        ]),
      ).toEqual([
        ['install', 'theme', 'sim-nova', '1.0.0', 'key', 'rw'],
        ['install', 'plugin', 'sim-delta/sim-delta.php', '1.0.0', 'user', 'admin'],
      ]);
      expect((await q.rest(`/updates/${b}/history?action=update`)).body.total).toBe(0);
      expectError(await q.rest('/updates/history?action=deploy'), 400, 'rest_invalid_param');
    } finally {
      await q.close();
    }
  });
});

describe("the simulator's installplugintheme", () => {
  it('answers in the shape the real child 6.1 answered (test/fixtures/child-replies/real-child-6.1-install.json)', async () => {
    const real = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'child-replies', 'real-child-6.1-install.json'), 'utf8'));
    const info = sim.sites[7]!;
    const key = await s.services.children.credentials(s.services.sites.get(ids[7]!)!);
    const call = (fields: Record<string, string>) =>
      rawSignedCall({ url: info.url, admin: info.admin, privateKeyPem: key.privateKeyPem }, 'installplugintheme', {
        signAlgo: key.signAlgo,
        fields,
      });
    const plugin = await call({ type: 'plugin', url: JSON.stringify([`${dir}plugin/sim-delta.1.0.0.zip`]), activatePlugin: 'yes' });
    const theme = await call({ type: 'theme', url: JSON.stringify(`${dir}theme/sim-nova.1.0.0.zip`) });
    // install_results is keyed by the zip's file name.
    const keys = (v: unknown) =>
      [...new Set([...shape(v).keys()].map((k) => k.replace(/^\.install_results\..*/, '.install_results.*')))].sort();
    expect(keys(plugin)).toEqual(keys(real.install_plugin));
    expect(keys(theme)).toEqual(keys(real.install_theme));
    expect(plugin).toMatchObject({
      installation: 'SUCCESS',
      destination_name: 'sim-delta',
      install_results: { 'sim-delta.1.0.0.zip': true },
    });
  });
});
