// Read-only means it on every door (issue 35, finding 2): list-updates-v1 and get-site-updates-v1 are read-only, and
// their `refresh: true` — a sync of the sites: signed child calls, store writes, sync_failed events — is refused with
// 403 to a read key, a viewer, an MCP read key, a read-only MCP session and a console viewer, before any child call or
// store write (the simulator counts its requests). A caller that may write still refreshes. (The rule itself:
// test/abilities/updates.test.ts.)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildMcpServer } from '../src/mcp/server.js';
import { COLLECTION_NAMES } from '../src/store/engine.js';
import { consoleSession } from './support/console.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';

let f: Fleet;
let ids: number[];
beforeAll(async () => {
  f = await startFleet({ sim: { sites: 3, seed: 7 } });
  ids = (await registerSites(f)).map((s) => s.id);
});
afterAll(async () => {
  await f?.close();
});

const childRequests = () => f.sim.sites.reduce((n, _s, k) => n + f.sim.requests(k + 1), 0);
const storeVersion = () => COLLECTION_NAMES.map((c) => f.s.services.store.version(c)).join('.');
const DENIED = /refresh: true syncs the sites, which needs write permission/;

/** Runs `attempt` and checks that it was refused with 403 and that no child was called and nothing was written. */
async function refusedQuietly(attempt: () => Promise<{ status: number; code?: string; message?: string }>): Promise<void> {
  const [calls, version] = [childRequests(), storeVersion()];
  const r = await attempt();
  expect(r).toMatchObject({ status: 403, code: 'svc_permission_denied', message: expect.stringMatching(DENIED) });
  expect(childRequests()).toBe(calls);
  expect(storeVersion()).toBe(version);
}

const rest = async (path: string, token: string) => {
  const r = await f.s.rest(path, { token });
  return { status: r.status, code: r.body?.code, message: r.body?.message };
};

it('REST: a read key gets 403 for GET /updates?refresh=1 and /updates/{id}?refresh=true, and nothing is called', async () => {
  const read = f.s.creds.key.read;
  await refusedQuietly(() => rest('/updates?refresh=1', read));
  await refusedQuietly(() => rest(`/updates/${ids[0]}?refresh=true`, read));
  // Without refresh the same key reads what is stored.
  expect((await f.s.rest('/updates', { token: read })).status).toBe(200);
  expect((await f.s.rest(`/updates/${ids[0]}`, { token: read })).status).toBe(200);
});

it('abilities door: a viewer and a read key get 403 for refresh over GET and POST', async () => {
  for (const auth of [f.s.creds.viewer, `Bearer ${f.s.creds.key.read}`]) {
    for (const method of ['GET', 'POST'] as const) {
      for (const [name, input] of [
        ['list-updates-v1', { refresh: true }],
        ['get-site-updates-v1', { site_id_or_domain: ids[0], refresh: true }],
      ] as const) {
        await refusedQuietly(async () => {
          const r = await f.s.ability(name, input, { method, auth });
          return { status: r.status, code: r.body?.code, message: r.body?.message };
        });
      }
    }
  }
});

it('MCP over HTTP with a read key, and a read-only stdio session: the tool call is an error (403)', async () => {
  const http = new Client({ name: 'read-key', version: '1' });
  await http.connect(
    new StreamableHTTPClientTransport(new URL(`${f.s.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${f.s.creds.key.read}` } },
    }),
  );
  const [a, b] = InMemoryTransport.createLinkedPair();
  await buildMcpServer(f.s.registry, { principal: { kind: 'local', name: 'stdio', readOnly: true }, readOnly: true }, f.s.services).connect(
    a,
  );
  const stdio = new Client({ name: 'read-only', version: '1' });
  await stdio.connect(b);
  try {
    for (const client of [http, stdio]) {
      // The tools stay listed (they are read-only); only their refresh is refused.
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['list-updates-v1', 'get-site-updates-v1']));
      for (const [name, args] of [
        ['list-updates-v1', { refresh: true }],
        ['get-site-updates-v1', { site_id_or_domain: ids[0], refresh: true }],
      ] as const) {
        await refusedQuietly(async () => {
          const r = await client.callTool({ name, arguments: args });
          expect(r.isError).toBe(true);
          const body = r.structuredContent as { code: string; message: string; data: { status: number } };
          return { status: body.data.status, code: body.code, message: body.message };
        });
      }
      const plain = await client.callTool({ name: 'list-updates-v1', arguments: {} });
      expect(plain.isError).toBeFalsy();
    }
  } finally {
    await http.close();
    await stdio.close();
  }
});

it('console: a viewer running list-updates-v1 with refresh is refused (403), nothing called', async () => {
  const viewer = await consoleSession(f.s, f.s.creds.viewer);
  await refusedQuietly(async () => {
    const r = await viewer.run('list-updates-v1', { refresh: true });
    return { status: r.status, code: r.body.code, message: r.body.message };
  });
});

it('a caller that may write (a read_write key, an administrator) still refreshes: the children are asked', async () => {
  let calls = childRequests();
  const r = await f.s.rest('/updates?refresh=1', { token: f.s.creds.key.read_write });
  expect(r.status).toBe(200);
  expect(r.body.errors).toEqual([]);
  expect(childRequests()).toBeGreaterThanOrEqual(calls + ids.length);
  calls = childRequests();
  const one = await f.s.ability('get-site-updates-v1', { site_id_or_domain: ids[0], refresh: true }, { method: 'GET' });
  expect(one.status).toBe(200);
  expect(childRequests()).toBeGreaterThan(calls);
});
