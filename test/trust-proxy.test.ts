// --trust-proxy (issue 27 defect 8): behind a proxy the failed-login throttle counts each real client (the address
// X-Forwarded-For names, walked from the right past trusted hops), so that one client with a revoked key no longer
// locks every user out; a peer that is not trusted names no one (spoofing the header escapes nothing); the request log
// prints the client; a bad list is refused at start.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { clientAddress } from '../src/core/client-address.js';
import { MCP_HEADERS, MCP_INITIALIZE } from './support/fixtures.js';
import { captureLogs } from './support/logs.js';
import { cli } from './support/process.js';
import { seedSites, startServer, tempDir, type TestServer } from './support/server.js';

const trust = (list: string) => loadConfig({ trustProxy: list }, {}).trustProxy;

describe('the client address', () => {
  const local = trust('127.0.0.1, 10.0.0.0/8, ::1, fd00::/8');

  it('is the peer itself when nothing is trusted, whatever X-Forwarded-For says', () => {
    expect(clientAddress('127.0.0.1', '203.0.113.7', [])).toBe('127.0.0.1');
    expect(clientAddress('::ffff:127.0.0.1', '203.0.113.7', [])).toBe('127.0.0.1');
    expect(clientAddress('198.51.100.1', '203.0.113.7', local)).toBe('198.51.100.1');
  });

  it('is the right-most address that is not trusted, walking from the right', () => {
    expect(clientAddress('127.0.0.1', '203.0.113.7', local)).toBe('203.0.113.7');
    expect(clientAddress('::ffff:127.0.0.1', '1.1.1.1, 203.0.113.7, 10.1.2.3', local)).toBe('203.0.113.7');
    expect(clientAddress('::1', ['1.1.1.1', '203.0.113.7,10.0.0.9', 'fd00::5'], local)).toBe('203.0.113.7');
    expect(clientAddress('127.0.0.1', ' [2001:DB8:0::7]:4711 , 10.0.0.1', local)).toBe('2001:db8::7');
    expect(clientAddress('127.0.0.1', '203.0.113.7:51234', local)).toBe('203.0.113.7');
    expect(clientAddress('127.0.0.1', '::ffff:203.0.113.7', local)).toBe('203.0.113.7');
  });

  it('stops at an element that is not an address and keeps the last one it believed', () => {
    expect(clientAddress('127.0.0.1', 'unknown', local)).toBe('127.0.0.1');
    expect(clientAddress('127.0.0.1', '203.0.113.7, garbage, 10.0.0.2', local)).toBe('10.0.0.2');
    expect(clientAddress('127.0.0.1', 'fe80::1%eth0', local)).toBe('127.0.0.1');
    expect(clientAddress('127.0.0.1', '', local)).toBe('127.0.0.1');
    // Every hop trusted: the furthest one is as far as anything can be believed.
    expect(clientAddress('127.0.0.1', '10.0.0.3, 10.0.0.2', local)).toBe('10.0.0.3');
  });
});

describe('--trust-proxy values', () => {
  it('takes addresses and CIDRs of both families, comma-separated, and none by default', () => {
    expect(trust('127.0.0.1,10.0.0.0/8 , ::1,fd00::/8,0.0.0.0/0')).toEqual([
      '127.0.0.1/32',
      '10.0.0.0/8',
      '::1/128',
      'fd00::/8',
      '0.0.0.0/0',
    ]);
    expect(loadConfig({}, {}).trustProxy).toEqual([]);
    expect(loadConfig({}, { SITEFLEET_TRUST_PROXY: '192.168.0.0/16' }).trustProxy).toEqual(['192.168.0.0/16']);
    expect(loadConfig({ trustProxy: '10.0.0.1' }, { SITEFLEET_TRUST_PROXY: '192.168.0.0/16' }).trustProxy).toEqual(['10.0.0.1/32']);
  });

  it.each([
    ['proxy.example', /"proxy\.example" is not an IPv4 or IPv6 address/],
    ['127.1', /"127\.1" is not an IPv4 or IPv6 address/],
    ['10.0.0.0/33', /prefix length that is not 0 to 32/],
    ['fd00::/129', /prefix length that is not 0 to 128/],
    ['10.0.0.0/-1', /prefix length/],
    ['10.0.0.0/', /prefix length/],
    ['10.0.0.0/8/8', /prefix length/],
    ['10.0.0.1/8', /sets bits past its \/8 prefix/],
    ['fd00::1/8', /sets bits past its \/8 prefix/],
    ['fe80::1%eth0', /not an IPv4 or IPv6 address/],
    ['*', /not an IPv4 or IPv6 address/],
  ])('refuses %s with a clear error', (value, message) => {
    expect(() => trust(value)).toThrow(message);
    expect(() => trust(value)).toThrow(/--trust-proxy/);
  });

  it('refuses more than 100 entries (each is checked on every request from a proxy)', () => {
    expect(() => trust(Array.from({ length: 101 }, (_, i) => `10.0.0.${i}`).join(','))).toThrow(/--trust-proxy takes at most 100 entries/);
    expect(trust(Array.from({ length: 100 }, (_, i) => `10.0.0.${i}`).join(','))).toHaveLength(100);
  });

  it('stops serve from starting, flag or environment, and names the bad entry', async () => {
    const flag = await cli(['serve', '--port', '0', '--data-dir', tempDir(), '--trust-proxy', '127.0.0.1,nginx']);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toMatch(/--trust-proxy: "nginx" is not an IPv4 or IPv6 address/);
    const env = await cli(['serve', '--port', '0', '--data-dir', tempDir()], { SITEFLEET_TRUST_PROXY: '10.0.0.0/4' });
    expect(env.code).toBe(1);
    expect(env.stderr).toMatch(/"10\.0\.0\.0\/4" sets bits past its \/4 prefix/);
  });
});

const REVOKED = 'sf_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

describe('the failed-login throttle behind a trusted proxy', () => {
  let s: TestServer;
  let revoked: string;
  beforeAll(async () => {
    s = await startServer({ config: { loginFailureLimit: '3', trustProxy: '127.0.0.1' } });
    await seedSites(s.services, 2);
    const made = await s.services.auth.createKey('gone', 'read_write');
    await s.services.auth.revokeKey(made.key.id);
    revoked = made.token;
  });
  afterAll(() => s.close());

  const rest = (from: string, token: string) =>
    fetch(`${s.restBase}/sites`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': from } });

  it('throttles the client with a revoked key and lets another client in, on every door', async () => {
    const bad = '203.0.113.7';
    const good = '198.51.100.9';
    // The good client's answer is cached, so later requests meet the fast path before express.
    expect((await rest(good, s.creds.key.read)).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await rest(`10.9.9.9, ${bad}`, revoked)).status).toBe(401);
    const blocked = await rest(bad, revoked);
    expect(blocked.status).toBe(429);
    // The throttled client waits even with a valid key, the cached answer included (the fast path counts it too).
    expect((await rest(bad, s.creds.key.read)).status).toBe(429);

    // Everyone else gets in: REST (fast path and express), abilities, MCP over HTTP, the console.
    expect((await rest(good, s.creds.key.read)).status).toBe(200);
    expect((await rest(good, s.creds.key.read_write)).status).toBe(200);
    const ability = await fetch(`${s.abilitiesBase}/abilities/svc/list-sites-v1/run`, {
      headers: { authorization: s.creds.admin, 'x-forwarded-for': good },
    });
    expect(ability.status).toBe(200);
    const mcp = (from: string) =>
      fetch(`${s.url}/mcp`, {
        method: 'POST',
        headers: { ...MCP_HEADERS, authorization: `Bearer ${s.creds.key.read_write}`, 'x-forwarded-for': from },
        body: MCP_INITIALIZE,
      });
    expect((await mcp(good)).status).toBe(200);
    expect((await mcp(bad)).status).toBe(429);
    const [name, password] = Buffer.from(s.creds.admin.slice(6), 'base64').toString().split(':') as [string, string];
    const login = (from: string) =>
      fetch(`${s.url}/console/api/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
        body: JSON.stringify({ name, password }),
      });
    expect((await login(good)).status).toBe(200);
    expect((await login(bad)).status).toBe(429);
  });

  it('counts a client failing on the console and on the abilities door as one', async () => {
    const who = '192.0.2.44';
    const wrong = `Basic ${Buffer.from('nobody:wrong').toString('base64')}`;
    const ability = () =>
      fetch(`${s.abilitiesBase}/abilities/svc/list-sites-v1/run`, { headers: { authorization: wrong, 'x-forwarded-for': who } });
    const login = () =>
      fetch(`${s.url}/console/api/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': who },
        body: JSON.stringify({ name: 'nobody2', password: 'wrong' }),
      });
    expect((await ability()).status).toBe(401);
    expect((await login()).status).toBe(401);
    expect((await ability()).status).toBe(401);
    expect((await login()).status).toBe(401);
    expect((await rest(who, s.creds.key.read)).status).toBe(429);
  });

  it("logs the client's address on each request", async () => {
    const logs = await captureLogs(async () => {
      await (await rest('198.51.100.23', s.creds.key.read)).text();
      await (await fetch(`${s.restBase}/sites/count`, { headers: { authorization: `Bearer ${s.creds.key.read}` } })).text();
      await new Promise((r) => setImmediate(r)); // the line is written as the response ends
    });
    const lines = logs
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request');
    expect(lines.find((l) => String(l.path).endsWith('/sites'))).toMatchObject({ client: '198.51.100.23', status: 200 });
    // The log names the whole path, the door's prefix included (not the router's `/sites`).
    expect(lines.map((l) => l.path)).toContain(new URL(`${s.restBase}/sites/count`).pathname);
    expect(lines.find((l) => String(l.path).endsWith('/sites/count'))).toMatchObject({ client: '127.0.0.1', status: 200 });
  });
});

describe('X-Forwarded-For from a peer that is not trusted', () => {
  for (const [label, trustProxy] of [
    ['by default', undefined],
    ['when only other proxies are trusted', '10.0.0.0/8,::1'],
  ] as const) {
    it(`is ignored ${label}: a caller naming a new address on each try is still throttled`, async () => {
      const t = await startServer({ config: { loginFailureLimit: '3', ...(trustProxy ? { trustProxy } : {}) } });
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 6; i++) {
          const r = await fetch(`${t.restBase}/sites`, {
            headers: { authorization: `Bearer ${REVOKED}`, 'x-forwarded-for': `203.0.113.${i}` },
          });
          statuses.push(r.status);
        }
        expect(statuses.slice(0, 4)).toEqual([401, 401, 401, 401]);
        expect(statuses.slice(4)).toEqual([429, 429]);
        // And it is the peer's address that waits, whatever it names next.
        const valid = await fetch(`${t.restBase}/sites`, {
          headers: { authorization: `Bearer ${t.creds.key.read}`, 'x-forwarded-for': '198.51.100.200' },
        });
        expect(valid.status).toBe(429);
        const logs = await captureLogs(async () => {
          await fetch(`${t.restBase}/sites`, { headers: { authorization: `Bearer ${REVOKED}`, 'x-forwarded-for': '198.51.100.201' } });
        });
        expect(logs).toContain('"client":"127.0.0.1"');
        expect(logs).not.toContain('198.51.100.201');
      } finally {
        await t.close();
      }
    });
  }
});
