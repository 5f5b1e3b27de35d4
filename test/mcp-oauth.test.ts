// OAuth 2.1 for MCP over HTTP (issue 33 item 5), end to end: a real authorization server (oidc-provider) on loopback,
// the MCP SDK client's own OAuth flow (protected-resource metadata, dynamic client registration, PKCE, sign-in and
// consent on the server's pages, the code exchanged for a JWT access token), and sitefleet verifying that token
// (issuer, audience, expiry on a clock the test moves, signature by the server's published keys) and mapping its
// scopes to permissions and toolsets. API keys keep working beside it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SignJWT, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CLOCK_TOLERANCE_S, MAX_TOKEN_CHARS, OAUTH_FETCH_MAX_BYTES } from '../src/domain/oauth.js';
import { MCP_HEADERS, MCP_INITIALIZE } from './support/fixtures.js';
import { machineToken, startAuthServer, TestOAuthClient, type AuthServer } from './support/oidc.js';
import { startServer, type TestServer } from './support/server.js';

const TTL = 60;
const MACHINE = { id: 'fleet-robot', secret: 'robot-secret-robot-secret-robot-secret' };
let as: AuthServer;
let s: TestServer;

beforeAll(async () => {
  as = await startAuthServer({
    accessTokenTtl: TTL,
    machineClient: MACHINE,
    // The authorization server's policy: a client registered as "reader" may only read.
    scopesFor: (name) =>
      name === 'reader' ? 'sitefleet:read' : 'sitefleet:read sitefleet:write sitefleet:toolset:tags sitefleet:toolset:sites',
  });
  s = await startServer({ config: { oauthIssuer: as.issuer } });
});
afterAll(async () => {
  await s?.close();
  await as?.close();
});

/** Connects through the SDK's OAuth flow: the first attempt signs in (UnauthorizedError), finishAuth, then connect. */
async function connectOAuth(url: string, auth: TestOAuthClient): Promise<Client> {
  const transport = () => new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider: auth, fetch: auth.fetch });
  const first = transport();
  const probe = new Client({ name: 'oauth-test', version: '1.0.0' });
  try {
    await probe.connect(first);
    return probe; // tokens held already
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  await first.finishAuth(auth.code!);
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(transport());
  return client;
}

/** An initialize over plain HTTP with this bearer token: the status and the challenge. */
async function initializeWith(url: string, token: string | null) {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { ...MCP_HEADERS, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: MCP_INITIALIZE,
  });
  return { status: res.status, challenge: res.headers.get('www-authenticate') ?? '', body: await res.text() };
}

const names = async (c: Client) => (await c.listTools()).tools.map((t) => t.name);

describe('protected-resource metadata', () => {
  it('is public at both well-known paths and names the authorization server, and /mcp points at it on a 401', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const res = await fetch(`${s.url}${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        resource: `${s.url}/mcp`,
        authorization_servers: [as.issuer],
        scopes_supported: ['sitefleet:read', 'sitefleet:write'],
        bearer_methods_supported: ['header'],
        resource_name: 'sitefleet MCP',
      });
    }
    const none = await initializeWith(s.url, null);
    expect(none.status).toBe(401);
    expect(none.challenge).toBe(`Bearer resource_metadata="${s.url}/.well-known/oauth-protected-resource/mcp"`);
    // Every other path still needs credentials.
    expect((await fetch(`${s.url}/.well-known/openid-configuration`)).status).toBe(401);
  });

  it('names the public URL behind a proxy, and is not served with OAuth off', async () => {
    const proxied = await startServer({
      config: { oauthIssuer: as.issuer },
      env: { SITEFLEET_PUBLIC_URL: 'https://fleet.example.com/sf' },
    });
    const plain = await startServer();
    try {
      const meta = await (await fetch(`${proxied.url}/.well-known/oauth-protected-resource/mcp`)).json();
      expect(meta.resource).toBe('https://fleet.example.com/sf/mcp');
      expect((await initializeWith(proxied.url, null)).challenge).toContain(
        'resource_metadata="https://fleet.example.com/sf/.well-known/oauth-protected-resource/mcp"',
      );
      expect((await fetch(`${plain.url}/.well-known/oauth-protected-resource`)).status).toBe(401);
      expect((await initializeWith(plain.url, null)).challenge).toBe('Bearer');
    } finally {
      await proxied.close();
      await plain.close();
    }
  });
});

describe('the SDK client signing in', () => {
  it('registers, signs in, lists tools and calls one with its access token; API keys keep working', async () => {
    const auth = new TestOAuthClient('desktop');
    const c = await connectOAuth(s.url, auth);
    try {
      expect(auth.registered?.client_id).toEqual(expect.any(String));
      const tools = await names(c);
      expect(tools).toContain('add-tag-v1');
      expect(tools).not.toContain('list-api-keys-v1'); // never an administrator
      const made: any = await c.callTool({ name: 'add-tag-v1', arguments: { name: 'oauth-made' } });
      expect(made.isError).toBeFalsy();
      expect(made.structuredContent).toMatchObject({ name: 'oauth-made' });
      const entry = (await s.services.audit.list({ action: 'add-tag-v1' }, 1, 1)).items[0]!;
      expect(entry).toMatchObject({ who_kind: 'oauth', who_name: `${auth.registered!.client_id}:alice`, door: 'mcp' });
    } finally {
      await c.close();
    }
    const keyed = await initializeWith(s.url, s.creds.key.read);
    expect(keyed.status).toBe(200);
    // The token is for /mcp only: the REST door does not take it.
    const rest = await fetch(`${s.restBase}/sites/count`, { headers: { authorization: `Bearer ${auth.tokens()!.access_token}` } });
    expect(rest.status).toBe(401);
  });

  it('refuses an expired token (the clock moved past its life) and takes a fresh one', async () => {
    const auth = new TestOAuthClient('desktop');
    const c = await connectOAuth(s.url, auth);
    try {
      expect((await c.callTool({ name: 'count-sites-v1', arguments: {} })).isError).toBeFalsy();
      s.services.oauth.now = () => Date.now() + (TTL + CLOCK_TOLERANCE_S + 5) * 1000;
      const raw = await initializeWith(s.url, auth.tokens()!.access_token);
      expect(raw.status).toBe(401);
      expect(raw.challenge).toMatch(/error="invalid_token", error_description="The access token is not valid: it has expired\."/);
      await expect(c.callTool({ name: 'count-sites-v1', arguments: {} })).rejects.toBeInstanceOf(UnauthorizedError);
    } finally {
      s.services.oauth.now = Date.now;
      await c.close();
    }
    // The SDK signed in again on the 401; the new code gives a fresh token.
    auth.forgetTokens();
    const again = await connectOAuth(s.url, auth);
    expect((await again.callTool({ name: 'count-sites-v1', arguments: {} })).isError).toBeFalsy();
    await again.close();
  });

  it('refuses a token for another audience (another MCP server of the same authorization server)', async () => {
    const other = await startServer({ config: { oauthIssuer: as.issuer } });
    try {
      const auth = new TestOAuthClient('desktop');
      (await connectOAuth(other.url, auth)).close();
      const token = auth.tokens()!.access_token;
      expect((await initializeWith(other.url, token)).status).toBe(200);
      const here = await initializeWith(s.url, token);
      expect(here.status).toBe(401);
      expect(here.challenge).toContain('it is for another audience');
    } finally {
      await other.close();
    }
  });

  it('refuses a token from another issuer, and one signed by a key the authorization server does not publish', async () => {
    const stranger = await startAuthServer({ machineClient: MACHINE });
    try {
      const foreign = await machineToken(stranger, MACHINE, `${s.url}/mcp`, 'sitefleet:read');
      const r = await initializeWith(s.url, foreign);
      expect(r.status).toBe(401);
      expect(r.challenge).toContain('error="invalid_token"');
    } finally {
      await stranger.close();
    }
    // Right issuer and audience, wrong key.
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT({ scope: 'sitefleet:read sitefleet:write', client_id: 'x' })
      .setProtectedHeader({ alg: 'ES256', kid: 'test-key', typ: 'at+jwt' })
      .setIssuer(as.issuer)
      .setAudience(`${s.url}/mcp`)
      .setSubject('mallory')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    const f = await initializeWith(s.url, forged);
    expect(f.status).toBe(401);
    expect(f.challenge).toContain('its signature does not verify');
  });

  it('stops a revoked client: its token ends with its life, and it cannot sign in again', async () => {
    const auth = new TestOAuthClient('desktop');
    const c = await connectOAuth(s.url, auth);
    // The client's registration is deleted at the authorization server (RFC 7592), as its owner or an admin would.
    const info = auth.registration!;
    const del = await fetch(info.registration_client_uri!, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${info.registration_access_token}` },
    });
    expect(del.status).toBe(204);
    try {
      // A JWT access token is checked here without asking the authorization server: it lasts until it expires.
      expect((await c.callTool({ name: 'count-sites-v1', arguments: {} })).isError).toBeFalsy();
      s.services.oauth.now = () => Date.now() + (TTL + CLOCK_TOLERANCE_S + 5) * 1000;
      await expect(c.callTool({ name: 'count-sites-v1', arguments: {} })).rejects.toThrow(/invalid_client|client is invalid|answered 400/i);
    } finally {
      s.services.oauth.now = Date.now;
      await c.close();
    }
    auth.forgetTokens();
    await expect(connectOAuth(s.url, auth)).rejects.toThrow(/invalid_client|client is invalid|answered 400/i);
  });
});

describe('scopes', () => {
  it('a read-only grant sees and runs only read tools', async () => {
    const auth = new TestOAuthClient('reader');
    const c = await connectOAuth(s.url, auth);
    try {
      const tools = await names(c);
      expect(tools).toContain('list-tags-v1');
      expect(tools).not.toContain('add-tag-v1');
      await expect(c.callTool({ name: 'add-tag-v1', arguments: { name: 'nope' } })).rejects.toMatchObject({ code: -32602 });
    } finally {
      await c.close();
    }
    expect([...s.services.store.all<{ id: number; name: string }>('tags')].map((t) => t.name)).not.toContain('nope');
  });

  it('toolset scopes narrow the tools to those toolsets, and a token without read or write is 403 insufficient_scope', async () => {
    const token = await machineToken(as, MACHINE, `${s.url}/mcp`, 'sitefleet:read sitefleet:toolset:tags');
    const init = await fetch(`${s.url}/mcp`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
      body: MCP_INITIALIZE,
    });
    expect(init.status).toBe(200);
    const sid = init.headers.get('mcp-session-id')!;
    await fetch(`${s.url}/mcp`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, 'mcp-session-id': sid },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    const list = await fetch(`${s.url}/mcp`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, 'mcp-session-id': sid },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    const tools = ((await list.json()) as { result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name);
    expect(tools.length).toBeGreaterThan(0);
    expect(tools.every((n) => s.registry.get(n)!.toolset === 'tags' && s.registry.get(n)!.annotations.readonly)).toBe(true);

    const bare = await machineToken(as, MACHINE, `${s.url}/mcp`, 'sitefleet:toolset:tags');
    const r = await initializeWith(s.url, bare);
    expect(r.status).toBe(403);
    expect(r.challenge).toContain('error="insufficient_scope"');
    expect(r.challenge).toContain('scope="sitefleet:read"');
  });
});

describe('bounds and a misbehaving authorization server', () => {
  it('refuses a token longer than 8 KB before reading it', async () => {
    const r = await initializeWith(s.url, 'x'.repeat(MAX_TOKEN_CHARS + 1));
    expect(r.status).toBe(401);
    expect(r.challenge).toContain('longer than 8192 characters');
    expect((await initializeWith(s.url, 'x'.repeat(MAX_TOKEN_CHARS))).challenge).toContain('not a signed JWT');
  });

  it('refuses tokens when the key set is over 256 KB, or the metadata names another issuer', async () => {
    let jwksBytes = 0;
    let issuerNamed = '';
    const fake = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/.well-known/oauth-authorization-server')
        return res.end(JSON.stringify({ issuer: issuerNamed, jwks_uri: `${issuer}/jwks` }));
      if (req.url === '/jwks') return res.end(JSON.stringify({ keys: [], pad: 'p'.repeat(jwksBytes) }));
      res.statusCode = 404;
      res.end('{}');
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
    const rs = await startServer({ config: { oauthIssuer: issuer } });
    try {
      const { privateKey } = await generateKeyPair('ES256');
      const token = await new SignJWT({ scope: 'sitefleet:read' })
        .setProtectedHeader({ alg: 'ES256', kid: 'k' })
        .setIssuer(issuer)
        .setAudience(`${rs.url}/mcp`)
        .setSubject('bob')
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
      issuerNamed = 'https://someone-else.example';
      expect((await initializeWith(rs.url, token)).challenge).toContain('names issuer https://someone-else.example');
      // A failure is not cached: the next token finds the fixed metadata.
      issuerNamed = issuer;
      jwksBytes = OAUTH_FETCH_MAX_BYTES + 1;
      const big = await initializeWith(rs.url, token);
      expect(big.status).toBe(401);
      expect(big.challenge).toContain(`more than ${OAUTH_FETCH_MAX_BYTES} bytes`);
    } finally {
      await rs.close();
      fake.closeAllConnections();
      await new Promise<void>((resolve) => fake.close(() => resolve()));
    }
  });
});
