// Every route of the REST table and every ability of the registry, without credentials, with wrong
// ones, and with credentials that do not allow the call. Generated: new routes and abilities join by
// themselves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allAbilities } from '../src/abilities/index.js';
import { allowedMethods, annotationMethod } from '../src/core/ability.js';
import type { JsonSchema } from '../src/core/input.js';
import { jsonSchemaOf } from '../src/core/registry.js';
import { restRoutes } from '../src/http/rest-routes.js';
import { withDiscovery } from '../src/http/openapi.js';
import { checkRestAnswer } from './support/openapi-check.js';
import { basic, startServer, type TestServer } from './support/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer({ config: { loginFailureLimit: '100000' } as never });
});
afterAll(async () => {
  await s.close();
});

const SAMPLE: Record<string, string> = {
  id_or_domain: '1',
  id: '1',
  user_id: '1',
  post_id: '1',
  job_id: 'sync_00000000-0000-4000-8000-000000000000',
};
const pathOf = (p: string) => p.replace(/:(\w+)/g, (_, n: string) => SAMPLE[n] ?? '1');
// The door's own routes (the index, the OpenAPI document) too.
const routes = withDiscovery(restRoutes, { restPrefix: '', publicUrl: '' }).flatMap((r) => r.methods.map((m) => [m, r.path] as const));

async function call(method: string, url: string, auth?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (auth) headers.authorization = auth;
  const res = await fetch(url, { method, headers, body: method === 'GET' || method === 'HEAD' ? undefined : '{}' });
  const text = await res.text();
  const body = text ? JSON.parse(text) : null;
  // A REST answer matches what the OpenAPI document says the route answers with that status.
  if (url.startsWith(s.restBase)) checkRestAnswer(method, url.slice(s.restBase.length), res.status, body, res.headers);
  return { status: res.status, body };
}

/** A value that passes the schema, so that the permission check (after validation) is what answers. */
function example(s: JsonSchema): unknown {
  if (s.default !== undefined) return s.default;
  if (s.enum) return s.enum[0];
  if (s.anyOf) return example(s.anyOf.find((b) => b.type !== 'null') ?? s.anyOf[0]!);
  const t = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (t) {
    case 'integer':
    case 'number':
      return Math.max(1, Number(s.minimum ?? 1));
    case 'boolean':
      return false;
    case 'array':
      return s.items ? [example(s.items)] : [];
    case 'object':
      return Object.fromEntries((s.required ?? []).map((k) => [k, example(s.properties![k]!)]));
    case 'string': {
      if (s.pattern?.startsWith('^#')) return '#000000';
      if (s.pattern?.startsWith('^(sync')) return 'sync_00000000-0000-4000-8000-000000000000';
      if (s.pattern?.startsWith('^([01]')) return '02:00'; // HH:MM (update policy windows)
      if (s.format === 'email') return 'a@example.com';
      return 'x'.repeat(Math.max(1, Number(s.minLength ?? 1)));
    }
    default:
      return 'x';
  }
}

describe('REST: every route', () => {
  it.each(routes)('%s %s answers 401 without credentials and with a wrong key', async (method, path) => {
    const url = `${s.restBase}${pathOf(path)}`;
    for (const auth of [undefined, 'Bearer sf_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'Bearer nonsense', s.creds.admin]) {
      const r = await call(method, url, auth);
      expect(r.status, String(auth)).toBe(401);
      expect(r.body).toMatchObject({ code: expect.any(String), message: expect.any(String), data: { status: 401 } });
    }
  });

  it.each(routes)('%s %s refuses a key whose permission does not cover the method (403)', async (method, path) => {
    const url = `${s.restBase}${pathOf(path)}`;
    const wrong = method === 'GET' ? s.creds.key.write : s.creds.key.read;
    const r = await call(method, url, `Bearer ${wrong}`);
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('svc_permission_denied');
  });
});

describe('abilities: every ability', () => {
  const run = (name: string) => `${s.abilitiesBase}/abilities/svc/${name}/run`;
  it.each(allAbilities.map((a) => [a.name, a] as const))('%s answers 401 without credentials and with wrong ones', async (_n, a) => {
    const method = allowedMethods(a)[0]!;
    for (const auth of [
      undefined,
      basic('admin', 'wrong password'),
      basic('nobody', 'x'),
      'Bearer sf_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    ]) {
      const r = await call(method, run(a.name), auth);
      expect(r.status).toBe(401);
    }
  });

  it.each(allAbilities.filter((a) => !a.annotations.readonly).map((a) => [a.name, a] as const))(
    '%s is refused to a viewer and to a read-only key (403) and changes nothing',
    async (_n, a) => {
      const input = example(jsonSchemaOf(a.input, 'input'));
      const before = JSON.stringify([...s.services.store.all('tags')]) + s.services.store.count('sites');
      const method = annotationMethod(a.annotations) === 'DELETE' ? 'POST' : allowedMethods(a)[0]!;
      for (const auth of [s.creds.viewer, `Bearer ${s.creds.key.read}`]) {
        const r = await fetch(run(a.name), {
          method,
          headers: { authorization: auth, 'content-type': 'application/json' },
          body: JSON.stringify({ input }),
        });
        expect(r.status, `${auth.slice(0, 6)} ${JSON.stringify(input)}`).toBe(403);
        expect(((await r.json()) as { code: string }).code).toBe('svc_permission_denied');
      }
      expect(JSON.stringify([...s.services.store.all('tags')]) + s.services.store.count('sites')).toBe(before);
    },
  );
});

describe('discovery and MCP', () => {
  it('answers 401 on discovery and on /mcp without credentials', async () => {
    for (const path of [
      `${s.abilitiesBase}/abilities`,
      `${s.abilitiesBase}/categories`,
      `${s.abilitiesBase}/abilities/svc/list-sites-v1`,
    ]) {
      expect((await call('GET', path)).status).toBe(401);
    }
    const r = await fetch(`${s.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toBe('Bearer');
  });
});

describe('failed logins', () => {
  it('slows down an address after repeated failures (429 with Retry-After), also for a right password', async () => {
    const t = await startServer({ config: { loginFailureLimit: '5' } as never });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++)
        statuses.push((await call('GET', `${t.restBase}/sites`, 'Bearer sf_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).status);
      expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
      const res = await fetch(`${t.restBase}/sites`, { headers: { authorization: `Bearer ${t.creds.key.read_write}` } });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await res.json()) as { code: string }).code).toBe('svc_too_many_attempts');
    } finally {
      await t.close();
    }
  });
});
