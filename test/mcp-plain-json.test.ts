// Over streamable HTTP a call that needs no stream is answered as plain JSON; progress, log lines and elicitation
// still go on the request's event stream. Raw HTTP for the framing, the SDK client for the flows.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { MCP_HEADERS } from './support/fixtures.js';
import { until } from './support/wait.js';

let f: Fleet;
let sid = '';
const headers = () => ({
  ...MCP_HEADERS,
  authorization: `Bearer ${f.s.creds.key.read_write}`,
  'mcp-session-id': sid,
  'mcp-protocol-version': '2025-06-18',
});
let nextId = 10;
async function post(method: string, params: Record<string, unknown>, extra: Record<string, string> = {}) {
  const r = await fetch(`${f.s.url}/mcp`, {
    method: 'POST',
    headers: { ...headers(), ...extra },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  });
  return { status: r.status, type: r.headers.get('content-type') ?? '', session: r.headers.get('mcp-session-id'), text: await r.text() };
}

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 3 } });
  await registerSites(f, 3);
  const init = await fetch(`${f.s.url}/mcp`, {
    method: 'POST',
    headers: { ...MCP_HEADERS, authorization: `Bearer ${f.s.creds.key.read_write}` },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  sid = init.headers.get('mcp-session-id')!;
  await init.text();
  await fetch(`${f.s.url}/mcp`, {
    method: 'POST',
    headers: headers(),
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
});
afterAll(async () => {
  await f?.close();
});

it('answers a tools/call without a progress token as plain JSON, with the session id', async () => {
  const r = await post('tools/call', { name: 'count-sites-v1', arguments: {} });
  expect([r.status, r.type, r.session]).toEqual([200, 'application/json', sid]);
  expect(JSON.parse(r.text)).toEqual({
    jsonrpc: '2.0',
    id: nextId - 1,
    result: { content: [{ type: 'text', text: '{"total":3}' }], structuredContent: { total: 3 } },
  });
  for (const [method, params] of [
    ['tools/list', {}],
    ['resources/read', { uri: 'sitefleet://sites/1' }],
    ['prompts/get', { name: 'troubleshoot-site', arguments: { site: '1' } }],
  ] as const) {
    const x = await post(method, params);
    expect([x.status, x.type], method).toEqual([200, 'application/json']);
    expect(JSON.parse(x.text).result, method).toBeTruthy();
  }
  const err = await post('tools/call', { name: 'no-such-tool-v1', arguments: {} });
  expect(JSON.parse(err.text).error).toMatchObject({ code: -32602, message: 'Unknown tool: no-such-tool-v1' });
  // Params the SDK's schema refuses get its error, plainly.
  for (const params of [{ name: 42 }, { name: 'count-sites-v1', arguments: [] }]) {
    const bad = await post('tools/call', params);
    expect([bad.status, bad.type], JSON.stringify(params)).toEqual([200, 'application/json']);
    expect(JSON.parse(bad.text), JSON.stringify(params)).toMatchObject({ id: nextId - 1, error: { code: expect.any(Number) } });
  }
});

it('streams a call that carries a progress token: the progress, then the answer', async () => {
  const r = await post('tools/call', { name: 'sync-sites-v1', arguments: { site_ids_or_domains: [1, 2] }, _meta: { progressToken: 'p1' } });
  expect([r.status, r.type]).toEqual([200, 'text/event-stream']);
  const events = r.text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)));
  expect(events.filter((e) => e.method === 'notifications/progress').map((e) => e.params.progress)).toEqual([1, 2]);
  expect(events.at(-1).result.structuredContent).toMatchObject({ total_synced: 2 });
});

it('answers a destructive call with confirm or dry_run plainly even from a client that can be asked', async () => {
  const tag = JSON.parse((await post('tools/call', { name: 'add-tag-v1', arguments: { name: 'plain' } })).text).result.structuredContent;
  const preview = await post('tools/call', { name: 'delete-tag-v1', arguments: { tag_id: tag.id, dry_run: true } });
  expect([preview.type, JSON.parse(preview.text).result.structuredContent.dry_run]).toEqual(['application/json', true]);
  const confirmed = await post('tools/call', { name: 'delete-tag-v1', arguments: { tag_id: tag.id, confirm: true } });
  expect([confirmed.type, JSON.parse(confirmed.text).result.structuredContent.deleted]).toEqual(['application/json', true]);
});

it('streams every call once the client asked for log lines', async () => {
  await post('logging/setLevel', { level: 'warning' });
  const r = await post('tools/call', { name: 'count-sites-v1', arguments: {} });
  expect(r.type).toBe('text/event-stream');
});

it('keeps elicitation working through the SDK client (the question goes on the stream)', async () => {
  const c = new Client({ name: 'eli', version: '1' }, { capabilities: { elicitation: {} } });
  let asked = 0;
  c.setRequestHandler(ElicitRequestSchema, () => {
    asked++;
    return { action: 'accept', content: { confirm: true } };
  });
  await c.connect(
    new StreamableHTTPClientTransport(new URL(`${f.s.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${f.s.creds.key.read_write}` } },
    }),
  );
  try {
    const tag = await c.callTool({ name: 'add-tag-v1', arguments: { name: 'asked' } });
    const r = await c.callTool({ name: 'delete-tag-v1', arguments: { tag_id: (tag.structuredContent as { id: number }).id } });
    expect([asked, r.structuredContent]).toEqual([1, expect.objectContaining({ deleted: true })]);
  } finally {
    await c.close();
  }
});

it('leaves what the SDK transport refuses to it: a wrong Accept is 406, an unknown protocol version 400', async () => {
  const a = await post('tools/call', { name: 'count-sites-v1', arguments: {} }, { accept: 'application/json' });
  expect(a.status).toBe(406);
  const v = await post('tools/call', { name: 'count-sites-v1', arguments: {} }, { 'mcp-protocol-version': '1999-01-01' });
  expect(v.status).toBe(400);
});

it('answers a session request the same before express as through it: bad JSON, another key, a foreign Host', async () => {
  const bad = await fetch(`${f.s.url}/mcp`, { method: 'POST', headers: headers(), body: '{"jsonrpc":' });
  expect(bad.status).toBe(400);
  expect(await bad.json()).toMatchObject({ code: 'rest_invalid_json', data: { status: 400 } });
  const other = await fetch(`${f.s.url}/mcp`, {
    method: 'POST',
    headers: { ...headers(), authorization: `Bearer ${f.s.creds.key.read}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} }),
  });
  expect(other.status).toBe(404);
  const wrongKey = await fetch(`${f.s.url}/mcp`, {
    method: 'POST',
    headers: { ...headers(), authorization: 'Bearer sf_000000000000_' + 'A'.repeat(32) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 98, method: 'tools/list', params: {} }),
  });
  expect(wrongKey.status).toBe(401);
  const { rawRequest } = await import('./support/fixtures.js');
  const foreign = await rawRequest(`${f.s.url}/mcp`, {
    method: 'POST',
    headers: { ...headers(), host: 'evil.example' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 97, method: 'tools/list', params: {} }),
  });
  expect(foreign.status).toBe(403);
});

it('keeps a session working after a plain call is cancelled (the SDK sends no answer for it)', async () => {
  const c = new Client({ name: 'cancel', version: '1' });
  await c.connect(
    new StreamableHTTPClientTransport(new URL(`${f.s.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${f.s.creds.key.read_write}` } },
    }),
  );
  try {
    // The site already asked finishes (a cancel starts no new site): its sync data lands in a write the test hears.
    const children = f.s.services.children;
    const landed = new Promise<void>((resolve) => {
      const hook = (_tx: unknown, siteId: number) => {
        if (siteId !== 1) return;
        children.snapshotHooks.delete(hook);
        setImmediate(resolve);
      };
      children.snapshotHooks.add(hook);
    });
    f.sim.setFault(1, { type: 'latency', ms: 1500 });
    const ac = new AbortController();
    const asked = f.sim.requests(1);
    const call = c.callTool({ name: 'sync-sites-v1', arguments: { site_ids_or_domains: [1] } }, undefined, { signal: ac.signal });
    // Cancelled once the site has the request (the simulator counts it on arrival, before its 1.5 s latency): the
    // call is in flight however fast or slow the machine is.
    while (f.sim.requests(1) === asked) await new Promise((x) => setImmediate(x));
    ac.abort('enough');
    await expect(call).rejects.toThrow();
    const r = await c.callTool({ name: 'count-sites-v1', arguments: {} });
    expect(r.structuredContent).toEqual({ total: 3 });
    await landed; // before the fleet closes
  } finally {
    f.sim.setFault(1, null);
    await c.close();
  }
});

it('refuses a second initialize in a session as the SDK transport does (400), on either path', async () => {
  const again = {
    jsonrpc: '2.0',
    id: 77,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  };
  // Before express (the fast path takes a JSON body of a known length) and through it (a chunked body).
  const fast = await fetch(`${f.s.url}/mcp`, { method: 'POST', headers: headers(), body: JSON.stringify(again) });
  expect([fast.status, await fast.json()]).toEqual([400, expect.objectContaining({ error: expect.objectContaining({ code: -32600 }) })]);
  const chunked = await fetch(`${f.s.url}/mcp`, {
    method: 'POST',
    headers: headers(),
    body: new Blob([JSON.stringify(again)]).stream(),
    duplex: 'half',
  } as RequestInit);
  expect([chunked.status, await chunked.json()]).toEqual([
    400,
    expect.objectContaining({ error: expect.objectContaining({ code: -32600 }) }),
  ]);
  // The session goes on.
  const r = await post('ping', {});
  expect([r.type, JSON.parse(r.text).result]).toEqual(['application/json', {}]);
});

it('refuses a JSON body that is not an object or array as express does, before express too', async () => {
  for (const body of ['"tools/call"', '42', 'null']) {
    const r = await fetch(`${f.s.url}/mcp`, { method: 'POST', headers: headers(), body });
    expect([r.status, await r.json()], body).toEqual([400, expect.objectContaining({ code: 'rest_invalid_json' })]);
  }
});

it('stops a plain call on notifications/cancelled (nothing is answered) and when its session closes: no site starts after', async () => {
  const g = await startFleet({ sim: { sites: 3 }, config: { childConcurrency: '1' } });
  try {
    await registerSites(g, 3);
    const key = { ...MCP_HEADERS, authorization: `Bearer ${g.s.creds.key.read_write}` };
    const init = await fetch(`${g.s.url}/mcp`, {
      method: 'POST',
      headers: key,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    const session = { ...key, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
    await init.text();
    const send = (body: unknown, signal?: AbortSignal) =>
      fetch(`${g.s.url}/mcp`, { method: 'POST', headers: session, body: JSON.stringify(body), signal });
    await (await send({ jsonrpc: '2.0', method: 'notifications/initialized' })).text();
    const before = [1, 2, 3].map((i) => g.sim.requests(i));
    g.sim.setFault(1, { type: 'latency', ms: 1500 });
    const http = new AbortController();
    const call = send(
      { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'sync-sites-v1', arguments: { site_ids_or_domains: [1, 2, 3] } } },
      http.signal,
    );
    // One site at a time: site 1 has the request (counted on arrival) and keeps it 1.5 s; sites 2 and 3 wait for it.
    while (g.sim.requests(1) === before[0]) await new Promise((x) => setImmediate(x));
    const cancelled = await send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5, reason: 'enough' } });
    expect(cancelled.status).toBe(202);
    // The call ends (its audit entry is written after it), having started no other site.
    await until(
      async () => (await g.s.services.audit.list({ action: 'sync-sites-v1' }, 1, 1)).total,
      (n) => n === 1,
    );
    expect([2, 3].map((i) => g.sim.requests(i) - before[i - 1]!)).toEqual([0, 0]);
    // No answer came: the exchange is still open until the client lets it go.
    const settled = await Promise.race([call.then(() => 'answered'), new Promise((x) => setImmediate(() => x('open')))]);
    expect(settled).toBe('open');
    http.abort();
    await call.catch(() => {});

    // A session closed during a plain call: the call is stopped too, and its caller told.
    const mid = [1, 2, 3].map((i) => g.sim.requests(i));
    const second = send({
      jsonrpc: '2.0',
      id: 6,
      method: 'tools/call',
      params: { name: 'sync-sites-v1', arguments: { site_ids_or_domains: [1, 2, 3] } },
    });
    while (g.sim.requests(1) === mid[0]) await new Promise((x) => setImmediate(x));
    const closed = await fetch(`${g.s.url}/mcp`, { method: 'DELETE', headers: session });
    expect(closed.status).toBe(200);
    const answer = await second;
    expect([answer.status, await answer.json()]).toEqual([
      200,
      { jsonrpc: '2.0', id: 6, error: { code: -32000, message: 'Session closed.' } },
    ]);
    await until(
      async () => (await g.s.services.audit.list({ action: 'sync-sites-v1' }, 1, 1)).total,
      (n) => n === 2,
    );
    expect([2, 3].map((i) => g.sim.requests(i) - mid[i - 1]!)).toEqual([0, 0]);
  } finally {
    g.sim.setFault(1, null);
    await g.close();
  }
});
