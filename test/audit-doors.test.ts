// The audit log through every door (issue 32): a change through REST, the abilities door, MCP over HTTP and the
// console is recorded once with its door and client address; logins and failed logins too; `sitefleet audit verify`
// names a hand-edited entry and exits non-zero. And an open MCP session follows a key's new rights at once.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditRecord } from '../src/domain/audit.js';
import { cli } from './support/process.js';
import { until } from './support/wait.js';
import { startServer, type TestServer } from './support/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
});
afterAll(() => s?.close());

const LOOPBACK = /^(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1)$/;
const entries = async (action: string) => (await s.services.audit.list({ action }, 1, 200)).items;

async function connectHttp(token: string): Promise<Client> {
  const client = new Client({ name: 'sitefleet-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  return client;
}

function nameAndPassword(basic: string) {
  const [name, password] = Buffer.from(basic.slice(6), 'base64').toString('utf8').split(':');
  return { name, password };
}

async function consolePost(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${s.url}/console/api${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

describe('a change through each door is recorded once, with its door and address', () => {
  it('REST (a key), abilities (a user), MCP over HTTP (a key), the console (a user)', async () => {
    expect((await s.rest('/tags/add', { method: 'POST', json: { name: 'via-rest' } })).status).toBe(200);
    expect((await s.ability('add-tag-v1', { name: 'via-abilities' })).status).toBe(200);
    const c = await connectHttp(s.creds.key.read_write);
    try {
      expect((await c.callTool({ name: 'add-tag-v1', arguments: { name: 'via-mcp' } })).isError).toBeFalsy();
    } finally {
      await c.close();
    }
    const login = await consolePost('/login', nameAndPassword(s.creds.admin));
    expect(login.status).toBe(200);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const ran = await consolePost(
      '/run/add-tag-v1',
      { input: { name: 'via-console' } },
      { Cookie: cookie, 'X-CSRF-Token': login.body.csrf_token },
    );
    expect(ran.status).toBe(200);

    const byName = async (n: string) => (await entries('add-tag-v1')).filter((e) => (e.input as { name?: string }).name === n);
    for (const [name, door, kind] of [
      ['via-rest', 'rest', 'key'],
      ['via-abilities', 'abilities', 'user'],
      ['via-mcp', 'mcp', 'key'],
      ['via-console', 'console', 'user'],
    ] as const) {
      const found = await byName(name);
      expect(found, name).toHaveLength(1);
      expect(found[0]).toMatchObject({ door, who_kind: kind, outcome: 'ok', address: expect.stringMatching(LOOPBACK) });
    }
    expect((await entries('login')).find((e) => e.door === 'console')).toMatchObject({ who_kind: 'user', outcome: 'ok' });
    expect(await s.services.audit.verify()).toMatchObject({ ok: true });
  });

  it('records failed logins with the account they named, on the API doors and the console', async () => {
    const bad = 'sf_0123456789ab_' + 'A'.repeat(32);
    expect((await s.rest('/sites/count', { token: bad })).status).toBe(401);
    expect((await consolePost('/login', { name: 'nobody', password: 'wrong' })).status).toBe(401);
    // The API doors record a failure without holding up the 401: wait for it.
    const failed = await until(
      () => entries('login-failed'),
      (f) => f.some((e) => e.door === 'rest'),
      5_000,
    );
    expect(failed.find((e) => e.door === 'rest')).toMatchObject({
      who_kind: 'key',
      who_name: '0123456789ab',
      address: expect.stringMatching(LOOPBACK),
      outcome: 'svc_rest_authentication_error',
      status: 401,
    });
    expect(failed.find((e) => e.door === 'console')).toMatchObject({ who_kind: 'user', who_name: 'nobody' });
    expect(JSON.stringify(failed)).not.toContain('wrong');
  });

  it('serves the log on REST-less doors: abilities and MCP, to administrators only', async () => {
    const r = await s.ability('list-audit-log-v1', undefined, { method: 'GET', query: 'input[action]=add-tag-v1&input[per_page]=2' });
    expect(r.status).toBe(200);
    expect(r.body.items).toHaveLength(2);
    expect(r.body.items[0].id).toBeGreaterThan(r.body.items[1].id);
    expect((await s.ability('list-audit-log-v1', undefined, { method: 'GET', auth: s.creds.viewer })).status).toBe(403);
  });
});

describe('an open MCP session', () => {
  it("takes a key's new rights on its next request", async () => {
    const made = await s.services.auth.createKey('session-admin', 'read_write', { admin: true });
    const c = await connectHttp(made.token);
    try {
      expect((await c.listTools()).tools.map((t) => t.name)).toContain('list-api-keys-v1');
      expect((await c.callTool({ name: 'list-api-keys-v1', arguments: {} })).isError).toBeFalsy();
      await s.services.auth.updateKey(made.key.id, { admin: false });
      expect((await c.listTools()).tools.map((t) => t.name)).not.toContain('list-api-keys-v1');
      await expect(c.callTool({ name: 'list-api-keys-v1', arguments: {} })).rejects.toMatchObject({ code: -32602 });
      await s.services.auth.revokeKey(made.key.id);
      await expect(c.listTools()).rejects.toThrow();
    } finally {
      await c.close().catch(() => {});
    }
  });
});

describe('sitefleet audit verify', () => {
  it('exits 0 on a whole log, and 1 naming the first hand-edited entry', async () => {
    if (s.databaseUrl) return; // the lowdb files are what this test edits; the pg lane has its own test
    const ok = await cli(['audit', 'verify', '--data-dir', s.dataDir]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/Audit log whole: \d+ entries/);
    const file = join(
      s.dataDir,
      readdirSync(s.dataDir).find((f) => /^audit\.0\.json$/.test(f))!,
    );
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { records: AuditRecord[] };
    const victim = doc.records.find((e) => e.action === 'add-tag-v1')!;
    victim.who_name = 'somebody else';
    writeFileSync(file, JSON.stringify(doc));
    const bad = await cli(['audit', 'verify', '--data-dir', s.dataDir]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(`broken at entry ${victim.id}: edited`);
  });
});

describe('cached answers', () => {
  it('are not emptied by an entry written only to the audit log (a refusal, a failed login), but are by a change', async () => {
    const { storeFingerprint } = await import('../src/http/conditional.js');
    const before = storeFingerprint(s.services.store);
    expect((await s.rest('/tags/add', { method: 'POST', token: s.creds.key.read, json: { name: 'refused' } })).status).toBe(403);
    await s.services.audit.login({ door: 'rest', address: '127.0.0.1', account: 'key:0123456789ab', ok: false });
    expect(storeFingerprint(s.services.store)).toBe(before);
    await s.rest('/tags/add', { method: 'POST', json: { name: 'a change' } });
    expect(storeFingerprint(s.services.store)).not.toBe(before);
  });
});
