// MCP beyond plain tool calls: progress, cancellation, confirmation by elicitation, toolsets and
// read-only mode, resources and subscriptions, tool-list changes. Over stdio and over HTTP.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from './support/process.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { until } from './support/wait.js';

let f: Fleet;
const clients: Client[] = [];
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await f.close();
});
beforeAll(async () => {
  f = await startFleet({ sim: { sites: 12, latencyMs: 40 }, config: { childConcurrency: '2' } });
  await registerSites(f, 12);
});

type Door = 'stdio' | 'http';
async function connect(door: Door, opts: { elicit?: 'accept' | 'decline' | 'cancel'; args?: string[] } = {}): Promise<Client> {
  const client = new Client({ name: 'test', version: '1' }, { capabilities: opts.elicit ? { elicitation: {} } : {} });
  if (opts.elicit) {
    client.setRequestHandler(ElicitRequestSchema, () =>
      opts.elicit === 'accept' ? { action: 'accept', content: { confirm: true } } : { action: opts.elicit! },
    );
  }
  const transport =
    door === 'stdio'
      ? new StdioClientTransport({
          command: process.execPath,
          args: [
            CLI,
            'mcp',
            '--data-dir',
            f.s.dataDir,
            ...(f.s.databaseUrl ? ['--database-url', f.s.databaseUrl] : []),
            ...(opts.args ?? []),
          ],
          env: { ...process.env, SITEFLEET_LOG: 'warn', SITEFLEET_CHILD_CONCURRENCY: '2', SITEFLEET_ALLOW_PRIVATE_SITES: '1' } as Record<
            string,
            string
          >,
        })
      : new StreamableHTTPClientTransport(new URL(`${f.s.url}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${f.s.creds.key.read_write}` } },
        });
  await client.connect(transport);
  clients.push(client);
  return client;
}

describe.each(['stdio', 'http'] as const)('over %s', (door) => {
  it('sends progress in order for a multi-site tool when asked', async () => {
    const c = await connect(door);
    const seen: Array<{ progress: number; total?: number }> = [];
    const r = await c.callTool({ name: 'sync-sites-v1', arguments: { site_ids_or_domains: [1, 2, 3, 4] } }, undefined, {
      onprogress: (p) => seen.push({ progress: p.progress, total: p.total }),
    });
    expect(r.isError).toBeFalsy();
    expect(seen.map((p) => p.progress)).toEqual([1, 2, 3, 4]);
    expect(seen.every((p) => p.total === 4)).toBe(true);
  });

  it('stops a cancelled sync early', async () => {
    const c = await connect(door);
    const before = f.sim.sites.map((s) => f.sim.requests(s.index)).reduce((a, b) => a + b, 0);
    const syncs = async () => (await f.s.services.audit.list({ action: 'sync-sites-v1' }, 1, 1)).total;
    const syncsBefore = await syncs();
    const ac = new AbortController();
    const call = c.callTool({ name: 'sync-sites-v1', arguments: {} }, undefined, {
      signal: ac.signal,
      onprogress: () => ac.abort('enough'),
    });
    await expect(call).rejects.toThrow();
    // The server's call has ended (its audit entry is written after it, by this process or the stdio one): no site
    // starts after that.
    await until(syncs, (n) => n === syncsBefore + 1);
    const after = f.sim.sites.map((s) => f.sim.requests(s.index)).reduce((a, b) => a + b, 0);
    expect(after - before).toBeLessThan(12);
  });

  it('asks the person before a destructive call and goes ahead on accept', async () => {
    const c = await connect(door, { elicit: 'accept' });
    const tag = await c.callTool({ name: 'add-tag-v1', arguments: { name: `elicit-yes-${door}` } });
    const id = (tag.structuredContent as { id: number }).id;
    const r = await c.callTool({ name: 'delete-tag-v1', arguments: { tag_id: id } });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ deleted: true, tag_id: id });
  });

  it('changes nothing when the person declines', async () => {
    const c = await connect(door, { elicit: 'decline' });
    const tag = await c.callTool({ name: 'add-tag-v1', arguments: { name: `elicit-no-${door}` } });
    const id = (tag.structuredContent as { id: number }).id;
    const r = await c.callTool({ name: 'delete-tag-v1', arguments: { tag_id: id } });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ code: 'svc_confirmation_declined', data: { status: 400 } });
    const still = await c.callTool({ name: 'get-tag-v1', arguments: { tag_id: id } });
    expect(still.isError).toBeFalsy();
  });

  it('keeps the confirm rule for clients without elicitation', async () => {
    const c = await connect(door);
    const tag = await c.callTool({ name: 'add-tag-v1', arguments: { name: `plain-${door}` } });
    const r = await c.callTool({ name: 'delete-tag-v1', arguments: { tag_id: (tag.structuredContent as { id: number }).id } });
    expect(r.structuredContent).toMatchObject({ code: 'svc_confirmation_required' });
  });

  it('reads the fleet, a site and a job as resources, and notifies a job subscriber', async () => {
    const c = await connect(door);
    const { resources } = await c.listResources();
    expect(resources.map((x) => x.uri)).toContain('sitefleet://sites');
    const { resourceTemplates } = await c.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate).sort()).toEqual([
      'sitefleet://jobs/{job_id}',
      'sitefleet://sites/{id}',
      'sitefleet://sites/{id}/plugins',
      'sitefleet://sites/{id}/themes',
      'sitefleet://sites/{id}/updates',
    ]);
    const fleet = JSON.parse(((await c.readResource({ uri: 'sitefleet://sites' })).contents[0] as { text: string }).text);
    expect(fleet.total).toBe(12);
    const site = JSON.parse(((await c.readResource({ uri: 'sitefleet://sites/1' })).contents[0] as { text: string }).text);
    expect(site).toMatchObject({ id: 1, stats: expect.any(Object) });
    await expect(c.readResource({ uri: 'sitefleet://sites/99999' })).rejects.toThrow(/No site found with ID 99999/);

    const job = await f.s.services.jobs.enqueue('check', [1, 2, 3, 4, 5, 6]);
    const updates: string[] = [];
    c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      updates.push(n.params.uri);
    });
    await c.subscribeResource({ uri: `sitefleet://jobs/${job.job_id}` });
    await until(
      async () => JSON.parse(((await c.readResource({ uri: `sitefleet://jobs/${job.job_id}` })).contents[0] as { text: string }).text),
      (j: { status: string }) => j.status === 'completed' && updates.length > 0,
      10_000,
    );
    expect(updates[0]).toBe(`sitefleet://jobs/${job.job_id}`);
  });

  it('points a queued result at its job resource (no HTTP URL over MCP), and reading it follows the job', async () => {
    const c = await connect(door);
    await f.s.ability('update-settings-v1', { queue_threshold: 2 });
    try {
      const r = await c.callTool({ name: 'sync-sites-v1', arguments: { site_ids_or_domains: [1, 2, 3] } });
      expect(r.isError).toBeFalsy();
      const { job_id } = r.structuredContent as { job_id: string };
      expect(r.structuredContent).toMatchObject({ queued: true, job_id: expect.stringMatching(/^sync_/), sites_queued: 3 });
      expect(JSON.stringify(r)).not.toMatch(/status_url|https?:\/\//);
      const link = (r.content as Array<{ type: string; uri?: string }>).find((x) => x.type === 'resource_link');
      expect(link?.uri).toBe(`sitefleet://jobs/${job_id}`);
      let j: { status?: string; processed?: number } = {};
      for (const deadline = Date.now() + 10_000; Date.now() < deadline && j.status !== 'completed';) {
        j = JSON.parse(((await c.readResource({ uri: link!.uri! })).contents[0] as { text: string }).text);
        if (j.status !== 'completed') await new Promise((x) => setTimeout(x, 100));
      }
      expect(j).toMatchObject({ status: 'completed', processed: 3 });
    } finally {
      await f.s.ability('update-settings-v1', { queue_threshold: null });
    }
  });

  it('sends request-scoped log lines for per-site failures, once the client asked for them', async () => {
    const c = await connect(door);
    await c.setLoggingLevel('warning');
    const lines: unknown[] = [];
    c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      lines.push(n.params.data);
    });
    f.sim.setFault(5, { type: 'http500' });
    try {
      await c.callTool({ name: 'sync-sites-v1', arguments: { site_ids_or_domains: [5] } });
    } finally {
      f.sim.setFault(5, null);
    }
    // The log line may come after the result: waited for (bounded), not given 100 ms.
    const text = await until(
      () => JSON.stringify(lines),
      (t) => /svc_child_not_detected/.test(t),
      5_000,
    );
    expect(text).toMatch(/svc_child_not_detected/);
  });

  it('sends no log line before the client asks for them, and a failed call only as its result (#13)', async () => {
    const c = await connect(door);
    const lines: unknown[] = [];
    c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      lines.push(n.params.data);
    });
    f.sim.setFault(5, { type: 'http500' });
    try {
      await c.callTool({ name: 'sync-sites-v1', arguments: { site_ids_or_domains: [5] } });
    } finally {
      f.sim.setFault(5, null);
    }
    const failed = await c.callTool({ name: 'get-site-v1', arguments: { site_id_or_domain: 99_999 } });
    expect(failed.isError).toBe(true);
    // Both calls have ended, and a call's log lines go out before its answer, on its own stream. The client hands a
    // notification to its handler a microtask after reading it: one turn of the event loop lets any line land.
    await new Promise((r) => setImmediate(r));
    expect(lines).toEqual([]);
    // Error texts carry the JSON-RPC prefix once.
    await expect(c.callTool({ name: 'no-such-tool-v1', arguments: {} })).rejects.toThrow(
      /^MCP error -32602: Unknown tool: no-such-tool-v1$/,
    );
    await expect(c.readResource({ uri: 'sitefleet://nothing' })).rejects.toMatchObject({ code: -32002 });
    await expect(c.readResource({ uri: 'sitefleet://sites/99999' })).rejects.toMatchObject({
      code: -32002,
      message: expect.not.stringMatching(/MCP error.*MCP error/),
    });
  });

  it('tells clients the tool list changed when a module is switched', async () => {
    const c = await connect(door);
    let changed = 0;
    c.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed++;
    });
    await f.s.services.settings.setModule('logs', false);
    try {
      await until(() => changed > 0, Boolean, 5_000);
      expect(changed).toBeGreaterThan(0);
    } finally {
      await f.s.services.settings.setModule('logs', true);
    }
  });
});

describe('toolsets and read-only mode', () => {
  it('serves only the named toolsets, and only reads in --read-only', async () => {
    const c = await connect('stdio', { args: ['--toolsets', 'tags', '--read-only'] });
    const names = (await c.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(['get-tag-clients-v1', 'get-tag-sites-v1', 'get-tag-v1', 'list-tags-v1']);
    const r = await c.callTool({ name: 'add-tag-v1', arguments: { name: 'x' } }).catch((e: Error) => e);
    expect((r as Error).message).toMatch(/Unknown tool: add-tag-v1/);
  });

  it('refuses an unknown toolset', async () => {
    const { cli } = await import('./support/process.js');
    const r = await cli(['mcp', '--toolsets', 'sites,nope']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/Unknown toolset "nope"/);
  });

  it('shows a read key only read-only tools over HTTP', async () => {
    const c = new Client({ name: 't', version: '1' });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(`${f.s.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${f.s.creds.key.read}` } },
      }),
    );
    clients.push(c);
    const tools = (await c.listTools()).tools;
    expect(tools.length).toBeGreaterThan(5);
    expect(tools.every((t) => t.annotations?.readOnlyHint === true)).toBe(true);
  });
});

describe('two fleets in one process', () => {
  it("tells each fleet's MCP clients that their tool list changed, not only the first fleet's", async () => {
    const { startServer } = await import('./support/server.js');
    const { connectMcp } = await import('./support/mcp.js');
    const other = await startServer();
    const first = await connectMcp(f.s);
    const second = await connectMcp(other);
    try {
      const heard = new Promise<void>((resolve) =>
        second.client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
      );
      await other.services.settings.setModule('logs', false);
      // The watcher looks every 500 ms; 5 s bounds the wait for the notification, it is not a pause.
      const outcome = await Promise.race([heard.then(() => 'heard'), new Promise((r) => setTimeout(() => r('not heard'), 5_000).unref())]);
      expect(outcome).toBe('heard');
    } finally {
      await first.close();
      await second.close();
      await other.close();
    }
  });
});
