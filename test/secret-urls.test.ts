// Hook URLs are bearer secrets (issue 35, finding 8): Slack, Teams and Discord webhook URLs — any webhook URL — are
// shown whole only to callers that may write (an administrator, a write key); a read key, a viewer, a read-only MCP
// session and the console's viewer see the scheme and host, the rest masked — on every door. (The rule:
// test/abilities/monitors.test.ts.)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildMcpServer } from '../src/mcp/server.js';
import { consoleSession } from './support/console.js';
import { startServer, type TestServer } from './support/server.js';

const HOOKS = [
  ['https://hooks.slack.com/services/T0001/B0001/slacksecret123', 'https://hooks.slack.com/***'],
  ['https://example.webhook.office.com/webhookb2/teams-secret@tenant/IncomingWebhook/abc/def', 'https://example.webhook.office.com/***'],
  ['https://discord.com/api/webhooks/123456/discord-secret-token', 'https://discord.com/***'],
  ['http://receiver.example:8080/hook?token=query-secret', 'http://receiver.example:8080/***'],
] as const;
const SECRETS = /slacksecret123|teams-secret|discord-secret-token|query-secret/;

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
  for (const [url] of HOOKS) expect((await s.rest('/webhooks/add', { method: 'POST', json: { url } })).status).toBe(200);
});
afterAll(async () => {
  await s.close();
});

/** The URLs of a webhook list, in the order added, with whether each was masked. */
const urls = (items: Array<{ url: string; url_masked: boolean }>) => items.map((w) => [w.url, w.url_masked]);
const whole = HOOKS.map(([url]) => [url, false]);
const masked = HOOKS.map(([, m]) => [m, true]);

it('REST: GET /webhooks shows the URLs whole to a read_write key, masked to a read key', async () => {
  expect(urls((await s.rest('/webhooks')).body.data)).toEqual(whole);
  const read = await s.rest('/webhooks', { token: s.creds.key.read });
  expect(urls(read.body.data)).toEqual(masked);
  expect(JSON.stringify(read.body)).not.toMatch(SECRETS);
});

it('abilities door: an administrator sees them whole; a viewer and a read key masked', async () => {
  const list = (auth?: string) => s.ability('list-webhooks-v1', {}, { method: 'GET', ...(auth ? { auth } : {}) });
  expect(urls((await list()).body.items)).toEqual(whole);
  for (const auth of [s.creds.viewer, `Bearer ${s.creds.key.read}`]) {
    const r = await list(auth);
    expect(urls(r.body.items)).toEqual(masked);
    expect(JSON.stringify(r.body)).not.toMatch(SECRETS);
  }
});

it('MCP: a read key over HTTP and a read-only stdio session see them masked; a full stdio session whole', async () => {
  const http = new Client({ name: 'read-key', version: '1' });
  await http.connect(
    new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${s.creds.key.read}` } },
    }),
  );
  const stdio = async (readOnly: boolean) => {
    const [a, b] = InMemoryTransport.createLinkedPair();
    await buildMcpServer(s.registry, { principal: { kind: 'local', name: 'stdio', readOnly }, readOnly }, s.services).connect(a);
    const c = new Client({ name: 'stdio', version: '1' });
    await c.connect(b);
    return c;
  };
  const [ro, rw] = [await stdio(true), await stdio(false)];
  try {
    const list = async (c: Client) => {
      const r = await c.callTool({ name: 'list-webhooks-v1', arguments: {} });
      expect(r.isError).toBeFalsy();
      return r;
    };
    for (const c of [http, ro]) {
      const r = await list(c);
      expect(urls((r.structuredContent as any).items)).toEqual(masked);
      expect(JSON.stringify(r)).not.toMatch(SECRETS);
    }
    expect(urls(((await list(rw)).structuredContent as any).items)).toEqual(whole);
  } finally {
    await Promise.all([http.close(), ro.close(), rw.close()]);
  }
});

it('console: a viewer sees them masked, an administrator whole', async () => {
  const viewer = await (await consoleSession(s, s.creds.viewer)).run('list-webhooks-v1', {});
  expect(viewer.status).toBe(200);
  expect(urls(viewer.body.items)).toEqual(masked);
  expect(JSON.stringify(viewer.body)).not.toMatch(SECRETS);
  const admin = await (await consoleSession(s, s.creds.admin)).run('list-webhooks-v1', {});
  expect(urls(admin.body.items)).toEqual(whole);
});
