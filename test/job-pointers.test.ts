// Issue 14: a job is answered by its id; each door renders its own pointer to it. REST and the abilities door: the
// status URL on the base the server really listens on (or SITEFLEET_PUBLIC_URL); MCP: the sitefleet://jobs/{job_id}
// resource, never an HTTP URL. And the config cannot change once loaded (nothing rewrites it after listen).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boot } from '../src/app/boot.js';
import { startChildSim } from '../src/child/simulator/server.js';
import { loadConfig, type Config } from '../src/config.js';
import { registerSites, type Fleet } from './support/fleet.js';
import { connectMcp } from './support/mcp.js';
import { startServer, tempDir, type TestServer } from './support/server.js';
import { until } from './support/wait.js';

const JOB_ID = /^sync_[0-9a-f-]{36}$/;

/** A server with three simulator sites and a queue threshold of 2: any batch of all of them is a job. */
async function queuingFleet(env?: Record<string, string>): Promise<Fleet> {
  const sim = await startChildSim({ sites: 3, seed: 3 });
  const s = await startServer({ config: { queueThreshold: '2' }, env });
  const f = {
    s,
    sim,
    close: async () => {
      await s.close();
      await sim.close();
    },
  };
  await registerSites(f);
  return f;
}

const done = (s: TestServer, jobId: string) =>
  until(
    () => s.rest(`/jobs/${jobId}`),
    (x) => x.body?.data?.status === 'completed',
  );

describe('the config', () => {
  it('is frozen when loaded: a write throws and changes nothing', () => {
    const c = loadConfig({ port: '0' }, {});
    expect(Object.isFrozen(c)).toBe(true);
    expect(() => {
      (c as { port: number }).port = 8080;
    }).toThrow(TypeError);
    expect(() => {
      (c as { publicUrl: string | null }).publicUrl = 'http://evil.example';
    }).toThrow(TypeError);
    expect(c.port).toBe(0);
    expect(c.publicUrl).toBeNull();
  });

  it('is frozen by boot even when built by hand, as a copy the caller can no longer reach', async () => {
    const dir = tempDir();
    const mine: { -readonly [K in keyof Config]: Config[K] } = { ...loadConfig({ dataDir: dir }, {}) };
    const running = await boot(mine, {});
    try {
      expect(Object.isFrozen(running.services.config)).toBe(true);
      mine.queueThreshold = 1;
      expect(running.services.config.queueThreshold).toBe(200);
      expect(() => {
        (running.services.config as { queueThreshold: number }).queueThreshold = 1;
      }).toThrow(TypeError);
    } finally {
      await running.close();
    }
  });

  it('takes SITEFLEET_PUBLIC_URL as an http(s) base without a trailing slash, and refuses anything else', () => {
    expect(loadConfig({}, { SITEFLEET_PUBLIC_URL: 'https://fleet.example.com/proxy/' }).publicUrl).toBe('https://fleet.example.com/proxy');
    expect(loadConfig({}, { SITEFLEET_PUBLIC_URL: 'http://10.0.0.5:8080' }).publicUrl).toBe('http://10.0.0.5:8080');
    for (const bad of [
      'fleet.example.com',
      'ftp://fleet.example.com',
      'https://u:p@fleet.example.com',
      'https://fleet.example.com/?a=1',
      'https://x/#f',
    ]) {
      expect(() => loadConfig({}, { SITEFLEET_PUBLIC_URL: bad }), bad).toThrow(
        /SITEFLEET_PUBLIC_URL must be an http:\/\/ or https:\/\/ URL/,
      );
    }
  });
});

describe('on an ephemeral port, SITEFLEET_PUBLIC_URL not set', () => {
  let f: Fleet;
  beforeAll(async () => {
    f = await queuingFleet();
  });
  afterAll(async () => {
    await f.close();
  });

  it('leaves the config as loaded (port 0, no public URL) while the doors point at the port it really got', () => {
    expect(f.s.services.config.port).toBe(0);
    expect(f.s.services.config.publicUrl).toBeNull();
    expect(f.s.url).toMatch(/^http:\/\/127\.0\.0\.1:(?!0$)\d+$/);
  });

  it('REST: a queued sync answers status_url on the listening address, and it serves the job', async () => {
    const r = await f.s.rest('/sites/sync', { method: 'POST' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      success: 1,
      message: 'Sync queued for background processing.',
      job_id: expect.stringMatching(JOB_ID),
      total: 3,
    });
    expect(r.body.status_url).toBe(`${f.s.url}/wp-json/svc/v2/jobs/${r.body.job_id}`);
    const viaUrl = await fetch(r.body.status_url, { headers: { authorization: `Bearer ${f.s.creds.key.read}` } });
    expect(viaUrl.status).toBe(200);
    expect(((await viaUrl.json()) as { data: { job_id: string } }).data.job_id).toBe(r.body.job_id);
    await done(f.s, r.body.job_id);
  });

  it("abilities door: a queued answer carries upstream's status_url, and the described output schema declares it", async () => {
    const r = await f.s.ability('sync-sites-v1', {});
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['queued', 'job_id', 'status_url', 'sites_queued', 'errors']);
    expect(r.body.status_url).toBe(`${f.s.restBase}/jobs/${r.body.job_id}`);
    expect((await fetch(r.body.status_url, { headers: { authorization: `Bearer ${f.s.creds.key.read}` } })).status).toBe(200);
    await done(f.s, r.body.job_id);
    const described = await fetch(`${f.s.abilitiesBase}/abilities/svc/sync-sites-v1`, { headers: { authorization: f.s.creds.admin } });
    const schema = ((await described.json()) as { output_schema: { properties: Record<string, unknown> } }).output_schema;
    expect(Object.keys(schema.properties).slice(0, 3)).toEqual(['queued', 'job_id', 'status_url']);
    // The ability's own output (schemas/, the registry) has no URL: only the door adds it.
    expect(f.s.registry.schemas(f.s.registry.get('sync-sites-v1')!).output.properties).not.toHaveProperty('status_url');
  });

  it('abilities door: an answer that is not queued gets no status_url', async () => {
    const r = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [1] });
    expect(r.body).toMatchObject({ queued: false, total_synced: 1 });
    expect(r.body).not.toHaveProperty('status_url');
  });

  it('MCP: a queued result links its job resource (no HTTP URL), and reading the link follows the job', async () => {
    const c = await connectMcp(f.s);
    try {
      const r = await c.client.callTool({ name: 'sync-sites-v1', arguments: {} });
      expect(r.isError).toBeFalsy();
      const result = r.structuredContent as { queued: boolean; job_id: string };
      expect(result).toMatchObject({ queued: true, job_id: expect.stringMatching(JOB_ID), sites_queued: 3 });
      expect(JSON.stringify(r)).not.toMatch(/status_url|https?:\/\//);
      const link = (r.content as Array<{ type: string; uri?: string; mimeType?: string }>).find((x) => x.type === 'resource_link');
      expect(link).toMatchObject({ uri: `sitefleet://jobs/${result.job_id}`, mimeType: 'application/json' });
      const job = await until(
        async () => JSON.parse(((await c.client.readResource({ uri: link!.uri! })).contents[0] as { text: string }).text),
        (j) => j.status === 'completed',
      );
      expect(job).toMatchObject({ job_id: result.job_id, type: 'sync', processed: 3, total: 3 });
    } finally {
      await c.close();
    }
  });

  it('MCP: a result that is not queued has no link', async () => {
    const c = await connectMcp(f.s);
    try {
      const r = await c.client.callTool({ name: 'sync-sites-v1', arguments: { site_ids_or_domains: [1] } });
      expect((r.content as Array<{ type: string }>).map((x) => x.type)).toEqual(['text']);
    } finally {
      await c.close();
    }
  });
});

describe('with SITEFLEET_PUBLIC_URL set (behind a proxy)', () => {
  const PUBLIC = 'https://fleet.example.com/proxy';
  let f: Fleet;
  beforeAll(async () => {
    f = await queuingFleet({ SITEFLEET_PUBLIC_URL: `${PUBLIC}/` });
  });
  afterAll(async () => {
    await f.close();
  });
  const local = (url: string) => url.replace(PUBLIC, f.s.url);

  it('REST and the abilities door point at the public URL, on the route that serves the job', async () => {
    const rest = await f.s.rest('/sites/check', { method: 'POST' });
    expect(rest.body.status_url).toBe(`${PUBLIC}/wp-json/svc/v2/jobs/${rest.body.job_id}`);
    expect((await fetch(local(rest.body.status_url), { headers: { authorization: `Bearer ${f.s.creds.key.read}` } })).status).toBe(200);
    await until(
      () => f.s.rest(`/jobs/${rest.body.job_id}`),
      (x) => x.body?.data?.status === 'completed',
    );

    const ability = await f.s.ability('sync-sites-v1', {});
    expect(ability.body.status_url).toBe(`${PUBLIC}/wp-json/svc/v2/jobs/${ability.body.job_id}`);
    await done(f.s, ability.body.job_id);
  });

  it('the fleet tools point at their own status routes on the public URL, in the answer and its data', async () => {
    const r = await f.s.rest('/settings/tools/renew-connections', { method: 'POST' });
    expect(r.body.status_url).toBe(`${PUBLIC}/wp-json/svc/v2/settings/tools/renew-connections-status/${r.body.renew_id}`);
    expect(r.body.data).toMatchObject({ queued: true, job_id: r.body.renew_id, status_url: r.body.status_url, total: 3 });
    const followed = await until(
      () =>
        fetch(local(r.body.status_url), { headers: { authorization: `Bearer ${f.s.creds.key.read}` } }).then(
          (x) => x.json() as Promise<{ status: string }>,
        ),
      (x) => x.status === 'completed',
    );
    expect(followed).toMatchObject({ success: true, total: 3, failed: 0 });

    const viaAbility = await f.s.ability('renew-connections-v1', {});
    expect(viaAbility.body.status_url).toBe(`${PUBLIC}/wp-json/svc/v2/settings/tools/renew-connections-status/${viaAbility.body.job_id}`);
    await until(
      () => f.s.rest(`/jobs/${viaAbility.body.job_id}`),
      (x) => x.body?.data?.status === 'completed',
    );
  });

  it("the abilities door's links and the console's Secure cookie use the same base", async () => {
    const index = await fetch(`${f.s.abilitiesBase}`, { headers: { authorization: f.s.creds.admin } });
    expect(((await index.json()) as { _links: { up: Array<{ href: string }> } })._links.up[0]!.href).toBe(`${PUBLIC}/wp-json/`);
    const paged = await fetch(`${f.s.abilitiesBase}/abilities?per_page=1`, { headers: { authorization: f.s.creds.admin } });
    expect(paged.headers.get('link')).toBe(`<${PUBLIC}/wp-json/wp-abilities/v1/abilities?per_page=1&page=2>; rel="next"`);
    const [name, ...pass] = Buffer.from(f.s.creds.admin.slice(6), 'base64').toString().split(':');
    const login = await fetch(`${f.s.url}/console/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, password: pass.join(':') }),
    });
    expect(login.status).toBe(200);
    expect(login.headers.get('set-cookie')).toMatch(/; Secure$/);
  });

  it('MCP still links the job resource, never the public URL', async () => {
    const c = await connectMcp(f.s);
    try {
      const r = await c.client.callTool({ name: 'sync-sites-v1', arguments: {} });
      const id = (r.structuredContent as { job_id: string }).job_id;
      expect(JSON.stringify(r)).not.toContain('fleet.example.com');
      expect(r.content).toContainEqual(expect.objectContaining({ type: 'resource_link', uri: `sitefleet://jobs/${id}` }));
      await done(f.s, id);
    } finally {
      await c.close();
    }
  });
});
