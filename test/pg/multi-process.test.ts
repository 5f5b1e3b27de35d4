// Two `sitefleet serve` processes on one PostgreSQL database: a write acknowledged by one is seen by the other's next
// request, concurrent writers across them neither duplicate a unique name nor lose an update, and a background job is
// claimed by exactly one of them and, when that one is killed with SIGKILL, resumed by the other without redoing the
// sites it recorded.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { newKeyPair } from '../../src/child/keys.js';
import { startChildSim } from '../../src/child/simulator/server.js';
import { loadConfig } from '../../src/config.js';
import { closeServices, openServices } from '../../src/domain/index.js';
import type { JobRecord, SiteRecord, TagRecord } from '../../src/store/records.js';
import { cli, lastLine, serveProcess } from '../support/process.js';
import { seedSites, testFleetStore, type TestFleetStore } from '../support/server.js';
import { until as waitUntil } from '../support/wait.js';
import { jobState } from '../../src/domain/job-chunks.js';

type Serve = Awaited<ReturnType<typeof serveProcess>>;
/** The two processes of the first suite (the MCP suite reuses them). */
let urls: { a: string; b: string; token: string };
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
});

const until = <T>(fn: () => Promise<T> | T, ok: (v: T) => boolean, ms = 30_000) => waitUntil(fn, ok, ms);

async function twoProcesses(fleet: TestFleetStore, env: Record<string, string> = {}): Promise<{ a: Serve; b: Serve; token: string }> {
  const token = lastLine((await cli(['keys', 'create', '--name', 'k', ...fleet.args])).stdout);
  const [a, b] = await Promise.all([
    serveProcess([...fleet.args, '--allow-private-sites'], env),
    serveProcess([...fleet.args, '--allow-private-sites'], env),
  ]);
  closers.push(
    () => a.stop(),
    () => b.stop(),
  );
  return { a, b, token };
}

function client(base: string, token: string) {
  return async (path: string, init: { method?: string; json?: unknown } = {}) => {
    const res = await fetch(`${base}/wp-json/svc/v2${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
}

describe('two serve processes on one PostgreSQL database', () => {
  let fleet: TestFleetStore;
  let A: ReturnType<typeof client>;
  let B: ReturnType<typeof client>;

  it("starts both on the database and each sees the other's acknowledged writes on its next request", async () => {
    fleet = await testFleetStore();
    expect(fleet.databaseUrl).toMatch(/^postgres:/);
    const seed = await openServices(loadConfig({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl }, {}));
    await seedSites(seed, 40);
    await closeServices(seed);
    const { a, b, token } = await twoProcesses(fleet);
    expect(a.stdout()).toMatch(/data: postgres:\/\//);
    A = client(a.url, token);
    B = client(b.url, token);
    urls = { a: a.url, b: b.url, token };
    for (let i = 0; i < 25; i++) {
      const [writer, reader] = i % 2 ? [A, B] : [B, A];
      const made = await writer('/tags/add', { method: 'POST', json: { name: `seen-${i}` } });
      expect(made.status).toBe(200);
      const got = await reader(`/tags/${made.body.data.id}`);
      expect(got.status, `tag ${i} on the other process`).toBe(200);
      expect(got.body.data.name).toBe(`seen-${i}`);
      // And an edit: the other process's next read has the new name, never the old one.
      await reader(`/tags/${made.body.data.id}/edit`, { method: 'PUT', json: { name: `renamed-${i}` } });
      expect((await writer(`/tags/${made.body.data.id}`)).body.data.name).toBe(`renamed-${i}`);
    }
  });

  it('keeps tag names unique under 50 concurrent creates across the two processes', async () => {
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => (i % 2 ? A : B)('/tags/add', { method: 'POST', json: { name: `dup-${i % 10}` } })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(10);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(40);
    for (const r of refused) expect(r).toMatchObject({ status: 409, body: { code: 'svc_tag_exists' } });
    for (const side of [A, B]) {
      const names = ((await side('/tags?per_page=100')).body.data as TagRecord[]).map((t) => t.name).filter((n) => n.startsWith('dup-'));
      expect(names.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `dup-${i}`));
    }
  });

  it('loses no update when 40 concurrent edits across the processes each add a site to one tag', async () => {
    const tag = (await A('/tags/add', { method: 'POST', json: { name: 'shared' } })).body.data;
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? A : B)(`/sites/${i + 1}/edit`, { method: 'PUT', json: { tags: [tag.id] } })),
    );
    for (const r of results) expect(r.status).toBe(200);
    for (const side of [A, B]) {
      const sites = (await side(`/tags/${tag.id}/sites?per_page=100`)).body.data as Array<{ id: number }>;
      expect(sites.map((s) => s.id).sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    }
    const store = await fleet.open();
    expect([...store.all<SiteRecord>('sites')].filter((s) => s.tag_ids?.includes(tag.id))).toHaveLength(40);
    await store.close();
  });

  it('leaves no site carrying a tag one process deletes while the other gives it to sites', async () => {
    // Membership is on the sites: the delete writes each site that has the tag, and an assignment names the tag.
    // Whichever commits first, no site may end up holding the deleted tag's id.
    const tag = (await A('/tags/add', { method: 'POST', json: { name: 'doomed' } })).body.data;
    const edits = Array.from({ length: 40 }, (_, i) => B(`/sites/${i + 1}/edit`, { method: 'PUT', json: { tags: [tag.id] } }));
    const removed = A(`/tags/${tag.id}/remove?confirm=true`, { method: 'DELETE' });
    const results = await Promise.all(edits);
    expect((await removed).status).toBe(200);
    for (const r of results) {
      if (r.status !== 200) expect(r).toMatchObject({ status: 404, body: { code: 'svc_tag_not_found' } });
    }
    const store = await fleet.open();
    expect([...store.all<SiteRecord>('sites')].filter((s) => s.tag_ids?.includes(tag.id))).toEqual([]);
    await store.close();
    for (const side of [A, B]) {
      expect((await side(`/tags/${tag.id}`)).status).toBe(404);
      for (const id of [1, 20, 40]) {
        const site = await side(`/sites/${id}`);
        expect(site.status).toBe(200);
        expect(site.body.data.tags.map((t: { id: number }) => t.id)).not.toContain(tag.id);
      }
    }
  });
});

describe('MCP over HTTP with two processes', () => {
  it('keeps a session in the process that made it; its writes reach the other; the other answers 404 to its id', async () => {
    const { a, b, token } = urls;
    const mcp = new Client({ name: 'lb-test', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(`${a}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    });
    await mcp.connect(transport);
    closers.push(() => mcp.close());
    const made = await mcp.callTool({ name: 'add-tag-v1', arguments: { name: 'via-mcp' } });
    expect(made.isError).not.toBe(true);
    const id = (made.structuredContent as { id: number }).id;
    expect((await client(b, token)(`/tags/${id}`)).body.data.name).toBe('via-mcp');
    // The session lives in process A only: B does not know its id (the proxy must keep a session on one process).
    const sid = transport.sessionId!;
    expect(sid).toBeTruthy();
    const onB = await fetch(`${b}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sid,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }),
    });
    expect(onB.status).toBe(404);
    expect(await onB.text()).toMatch(/Session not found/);
    const listed = await mcp.callTool({ name: 'get-tag-v1', arguments: { tag_id: id } });
    expect((listed.structuredContent as { name: string }).name).toBe('via-mcp');
  });
});

describe('a background job across two processes', () => {
  it('is claimed by exactly one, and resumed by the other after SIGKILL without redoing recorded sites', async () => {
    const fleet = await testFleetStore();
    const seed = await openServices(loadConfig({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl }, {}));
    const keys = await newKeyPair();
    const sim = await startChildSim({
      sites: 40,
      latencyMs: 150,
      preconnect: { publicKeyPem: keys.publicKeyPem, server: await seed.settings.installationUrl() },
    });
    closers.push(() => sim.close());
    const recs = await seedSites(seed, 40, (i) => ({ url: sim.sites[i]!.url, name: `Sim ${i + 1}`, admin_username: sim.sites[i]!.admin }));
    await seed.store.write((tx) => {
      for (const r of recs) tx.putBlob('secrets', r.id, { private_key_pem: keys.privateKeyPem, http_pass: null, regverify: null });
    });
    await closeServices(seed);

    const { a, b, token } = await twoProcesses(fleet, { SITEFLEET_QUEUE_THRESHOLD: '5', SITEFLEET_CHILD_CONCURRENCY: '4' });
    const q = (await client(a.url, token)('/sites/sync', { method: 'POST' })).body as { job_id: string };
    expect(q.job_id).toMatch(/^sync_/);
    const store = await fleet.open();
    const job = () => Promise.resolve(jobState(store, [...store.all<JobRecord>('jobs')][0]!));
    const mid = await until(job, (j) => j.done.length >= 8);
    // Both runners look for work every second; one holds the claim and no site has been contacted twice.
    for (let i = 1; i <= 40; i++) expect(sim.requests(i)).toBeLessThanOrEqual(1);
    const ownerPid = Number(mid.owner!.split('-')[0]);
    const [owner, other] = ownerPid === a.child.pid ? [a, b] : [b, a];
    expect(ownerPid).toBe(owner.child.pid);
    const killedAt = Date.now();
    await owner.stop('SIGKILL');
    const recorded = (await job()).done.slice();
    const taken = await until(job, (j) => j.owner !== null && j.owner !== mid.owner);
    const takeoverMs = Date.now() - killedAt;
    expect(Number(taken.owner!.split('-')[0])).toBe(other.child.pid);
    const end = await until(
      () => client(other.url, token)(`/jobs/${q.job_id}`),
      (r) => r.body?.data?.status === 'completed',
    );
    expect(end.body.data).toMatchObject({ processed: 40, succeeded: 40 });
    await store.sync(); // the other process's last commit may still be on its way to this store's NOTIFY
    const last = await job();
    expect(new Set(last.done).size).toBe(40);
    expect(last.attempts).toBe(2);
    for (const id of recorded) expect(sim.requests(id), `site ${id} was recorded before the kill`).toBe(1);
    const total = Array.from({ length: 40 }, (_, i) => sim.requests(i + 1)).reduce((x, y) => x + y, 0);
    expect(total - 40).toBeLessThanOrEqual(12);
    process.stdout.write(`job takeover after SIGKILL: ${takeoverMs} ms\n`);
    await store.close();
  });
});
