// The scope sweep (issue 32), generated from the registry: every ability × every role × a site (tag, client, job) in
// the caller's scope and one outside it, through the abilities door, REST, MCP and the console's endpoint. Nothing
// outside the scope is readable, countable, searchable or changeable, and each refusal is exactly the answer for a thing
// that does not exist. One server, one fixture; new abilities and routes join by themselves.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allAbilities } from '../src/abilities/index.js';
import { allowedMethods, annotationMethod, type Ability } from '../src/core/ability.js';
import type { JsonSchema } from '../src/core/input.js';
import type { Principal } from '../src/core/principal.js';
import { jsonSchemaOf } from '../src/core/registry.js';
import { restRoutes } from '../src/http/rest-routes.js';
import { buildMcpServer } from '../src/mcp/server.js';
import type { SiteRecord } from '../src/store/records.js';
import type { IncidentRecord } from '../src/store/monitor-records.js';
import { startChildSim, type ChildSim } from '../src/child/simulator/server.js';
import { consoleSession, type ConsoleSession } from './support/console.js';
import { basic, startServer, type TestServer } from './support/server.js';
import { jobEnded } from './support/wait.js';

/** What every outside thing is named with: no answer to a scoped caller may contain it (nor the outside site's URL). */
const MARK = 'outsider';

let s: TestServer;
let sim: ChildSim;
let outUrl = '';
/** Whether a (lower-cased) answer names anything outside the scope. */
const leaks = (text: string) => text.toLowerCase().includes(MARK) || text.includes(outUrl);
const ids = { siteIn: 0, siteOut: 0, siteMissing: 0, clientIn: 0, clientOut: 0, tagIn: 0, tagOut: 0 };
let jobOut = '';
const JOB_MISSING = 'sync_00000000-0000-4000-8000-000000000000';

interface Role {
  name: string;
  principal: Principal;
  /** HTTP Basic for users, Bearer for the key. */
  auth: string;
  user: boolean;
}
const roles: Role[] = [];
let admin: Role;
let adminKeyToken = '';
const adminToken = () => adminKeyToken;

async function seed(): Promise<void> {
  const { services } = s;
  const clientIn = await services.clients.add({ name: 'Inside Co', email: 'in@example.com' });
  const clientOut = await services.clients.add({ name: `${MARK} Co`, email: `${MARK}@example.com` });
  const tagIn = await services.tags.add({ name: 'inside-tag' });
  const tagOut = await services.tags.add({ name: `${MARK}-tag` });
  // Two real children (the simulator), added and synced by an administrator: each has plugins, themes, updates,
  // users, posts, security findings and changes stored, so every read has something of the outside site to leak.
  const added: number[] = [];
  for (const [i, name, client] of [
    [0, 'Inside site', clientIn.id],
    [1, `${MARK} site`, clientOut.id],
  ] as const) {
    const info = sim.sites[i]!;
    const r = await s.ability('add-site-v1', { url: info.url, admin: info.admin, admin_password: info.password, name, client_id: client });
    if (r.status !== 200) throw new Error(`add-site: ${JSON.stringify(r.body)}`);
    added.push((r.body as { id: number }).id);
  }
  const [siteIn, siteOut] = added as [number, number];
  outUrl = sim.sites[1]!.url.replace(/^https?:\/\//, '');
  await services.sites.edit(siteIn, { tags: [tagIn.id] });
  await services.sites.edit(siteOut, { tags: [tagOut.id] });
  const sync = await s.ability('sync-sites-v1', { site_ids_or_domains: [] });
  if (sync.status !== 200) throw new Error(`sync: ${JSON.stringify(sync.body)}`);
  Object.assign(ids, {
    siteIn,
    siteOut,
    siteMissing: siteOut + 1000,
    clientIn: clientIn.id,
    clientOut: clientOut.id,
    tagIn: tagIn.id,
    tagOut: tagOut.id,
  });
  jobOut = (await services.jobs.enqueue('sync', [siteOut])).job_id;
  // The job only has to be there; once it has run, its sync cannot write the outside site during a sweep that checks
  // the site is left as it was (under load it ran late and did: a flake).
  await jobEnded(services.jobs, jobOut);
  const at = new Date().toISOString();
  await services.store.write((tx) => {
    tx.insert<IncidentRecord>('incidents', {
      site_id: siteOut,
      started_at: at,
      ended_at: null,
      cause: 'timeout',
      message: `${MARK} is down`,
      http_code: null,
      down_count: 3,
    });
  });
  await services.updateHistory.add([
    {
      site_id: siteOut,
      site_url: sim.sites[1]!.url,
      type: 'plugin',
      slug: `${MARK}-plugin/${MARK}.php`,
      name: `${MARK} plugin`,
      from: '1.0.0',
      to: '1.1.0',
      outcome: 'updated',
      reason: '',
      code: '',
      actor: { kind: 'user', id: 1, name: 'admin' },
      at,
      duration_ms: 3,
      safe: false,
      probe: null,
    },
  ]);

  const user = async (name: string, role: 'manager' | 'viewer' | 'client', scope: object) => {
    const { user, password } = await services.auth.createUser(name, role, scope);
    roles.push({ name, principal: { kind: 'user', id: user.id, name, role, scope: user.scope }, auth: basic(name, password), user: true });
  };
  await user('mgr', 'manager', { clients: [clientIn.id] });
  await user('tagviewer', 'viewer', { tags: [tagIn.id] });
  await user('portal', 'client', { clients: [clientIn.id] });
  const { key, token } = await services.auth.createKey('scoped', 'read_write', { scope: { sites: [ids.siteIn] } });
  roles.push({
    name: 'scoped key',
    principal: { kind: 'key', id: key.id, name: key.name, permissions: 'read_write', scope: key.scope },
    auth: `Bearer ${token}`,
    user: false,
  });
  adminKeyToken = (await services.auth.createKey('sweep admin', 'read_write', { admin: true })).token;
  admin = { name: 'admin', principal: { kind: 'user', id: 1, name: 'admin', role: 'administrator' }, auth: s.creds.admin, user: true };
}

/** A value that passes the schema (auth-sweep.test.ts's), so that what the call names is what answers. */
function example(sc: JsonSchema): unknown {
  if (sc.default !== undefined) return sc.default;
  if (sc.enum) return sc.enum[0];
  if (sc.anyOf) return example(sc.anyOf.find((b) => b.type !== 'null') ?? sc.anyOf[0]!);
  const t = Array.isArray(sc.type) ? sc.type[0] : sc.type;
  switch (t) {
    case 'integer':
    case 'number':
      return Math.max(1, Number(sc.minimum ?? 1));
    case 'boolean':
      return false;
    case 'array':
      return sc.items ? [example(sc.items)] : [];
    case 'object':
      return Object.fromEntries((sc.required ?? []).map((k) => [k, example(sc.properties![k]!)]));
    case 'string': {
      if (sc.pattern?.startsWith('^#')) return '#000000';
      if (sc.pattern?.startsWith('^(sync')) return JOB_MISSING;
      if (sc.pattern?.startsWith('^([01]')) return '02:00';
      if (sc.format === 'email') return 'a@example.com';
      return 'x'.repeat(Math.max(1, Number(sc.minLength ?? 1)));
    }
    default:
      return 'x';
  }
}

/** The fields that name one thing, and the in-scope, outside and missing values of each. */
type Kind = 'site' | 'sites' | 'client' | 'tag' | 'job';
const FIELDS: Record<string, Kind> = {
  site_id_or_domain: 'site',
  site_ids_or_domains: 'sites',
  websites: 'sites',
  client_id_or_email: 'client',
  tag_id: 'tag',
  job_id: 'job',
};
const values = (k: Kind) => {
  switch (k) {
    case 'site':
      return { inside: ids.siteIn as unknown, outside: ids.siteOut as unknown, missing: ids.siteMissing as unknown };
    case 'sites':
      return { inside: [ids.siteIn], outside: [ids.siteOut], missing: [ids.siteMissing] };
    case 'client':
      return { inside: ids.clientIn, outside: ids.clientOut, missing: ids.clientOut + 1000 };
    case 'tag':
      return { inside: ids.tagIn, outside: ids.tagOut, missing: ids.tagOut + 1000 };
    case 'job':
      return { inside: JOB_MISSING, outside: jobOut, missing: JOB_MISSING };
  }
};

/** An ability's thing-naming fields (those its input has). */
const namingFields = (a: Ability) => Object.keys(a.input.shape).filter((k) => k in FIELDS);

/** An answer with the outside and the missing thing's names made one, so that the two can be compared. */
function normal(answer: unknown, kind: Kind): string {
  const v = values(kind);
  const flat = (x: unknown) => (Array.isArray(x) ? String(x[0]) : String(x));
  let text = JSON.stringify(answer);
  for (const id of [flat(v.outside), flat(v.missing)]) text = text.replace(new RegExp(`(?<![\\w.-])${id}(?![\\w-]|\\.\\w)`, 'g'), '<REF>');
  return text;
}

// ---- the doors ----------------------------------------------------------------------------------------------

interface Answer {
  ok: boolean;
  body: unknown;
}

async function viaAbilities(role: Role, a: Ability, input: unknown): Promise<Answer> {
  const method = annotationMethod(a.annotations) === 'DELETE' ? 'POST' : allowedMethods(a)[0]!;
  const r = await s.ability(a.name, input, { method, auth: role.auth });
  return { ok: r.status < 300, body: { status: r.status, body: r.body } };
}

const mcpClients = new Map<string, Client>();
async function mcpFor(role: Role): Promise<Client> {
  let c = mcpClients.get(role.name);
  if (!c) {
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await buildMcpServer(s.registry, { principal: role.principal }, s.services).connect(serverSide);
    c = new Client({ name: 'sweep', version: '1' });
    await c.connect(clientSide);
    mcpClients.set(role.name, c);
  }
  return c;
}
async function viaMcp(role: Role, a: Ability, input: Record<string, unknown>): Promise<Answer> {
  const c = await mcpFor(role);
  try {
    const r = await c.callTool({ name: a.name, arguments: input });
    return { ok: r.isError !== true, body: r.isError ? r.structuredContent : r.structuredContent };
  } catch (e) {
    // A tool the session does not offer (its role may not run it): the same for any input.
    return { ok: false, body: { rpc: (e as Error).message } };
  }
}

const consoles = new Map<string, ConsoleSession>();
async function viaConsole(role: Role, a: Ability, input: unknown): Promise<Answer> {
  let c = consoles.get(role.name);
  if (!c) consoles.set(role.name, (c = await consoleSession(s, role.auth)));
  const r = await c.run(a.name, input);
  return { ok: r.status < 300, body: { status: r.status, body: r.body } };
}

type Door = (role: Role, a: Ability, input: Record<string, unknown>) => Promise<Answer>;
const DOORS: Array<[string, Door, (r: Role) => boolean]> = [
  ['abilities', viaAbilities, () => true],
  ['mcp', viaMcp, () => true],
  ['console', viaConsole, (r) => r.user],
];

beforeAll(async () => {
  sim = await startChildSim({ sites: 2, seed: 7 });
  s = await startServer({ config: { loginFailureLimit: '100000' } as never });
  await seed();
}, 60_000);
afterAll(async () => {
  for (const c of mcpClients.values()) await c.close();
  await s?.close();
  await sim?.close();
});

const outsideSnapshot = async () => {
  const st = s.services.store;
  return JSON.stringify([
    st.get<SiteRecord>('sites', ids.siteOut),
    st.get('clients', ids.clientOut),
    st.get('tags', ids.tagOut),
    await st.readBlob('site-data', ids.siteOut),
  ]);
};

describe('things outside the scope are answered as missing', () => {
  const naming = allAbilities.filter((a) => namingFields(a).length > 0);

  it('the sweep covers the site-taking abilities', () => {
    expect(naming.filter((a) => namingFields(a).includes('site_id_or_domain')).length).toBeGreaterThan(40);
  });

  for (const [door, via, serves] of DOORS) {
    it.each(naming.map((a) => [a.name, a] as const))(`${door}: %s refuses an outside thing exactly as a missing one`, async (_n, a) => {
      const before = await outsideSnapshot();
      const base = example(jsonSchemaOf(a.input, 'input')) as Record<string, unknown>;
      for (const field of namingFields(a)) {
        const kind = FIELDS[field]!;
        const v = values(kind);
        for (const role of roles.filter(serves)) {
          const outside = await via(role, a, { ...base, [field]: v.outside });
          const missing = await via(role, a, { ...base, [field]: v.missing });
          expect(normal(outside.body, kind), `${role.name} ${field}`).toBe(normal(missing.body, kind));
          expect(leaks(JSON.stringify(outside.body)), `${role.name} ${field}`).toBe(false);
        }
      }
      expect(JSON.parse(await outsideSnapshot())).toEqual(JSON.parse(before));
    });
  }

  it('an administrator does find the outside site (the sweep would see a leak)', async () => {
    const r = await viaAbilities(
      admin,
      allAbilities.find((a) => a.name === 'get-site-v1')!,
      { site_id_or_domain: ids.siteOut },
    );
    expect(r.ok).toBe(true);
    expect(JSON.stringify(r.body)).toContain(MARK);
  });

  it('each scoped role reads a site in its scope', async () => {
    const getSite = allAbilities.find((a) => a.name === 'get-site-v1')!;
    for (const [door, via, serves] of DOORS)
      for (const role of roles.filter(serves)) {
        const r = await via(role, getSite, { site_id_or_domain: ids.siteIn });
        expect(r.ok, `${door} ${role.name} ${JSON.stringify(r.body)}`).toBe(true);
      }
  });
});

describe('lists, counts, searches and fleet-wide runs see only the scope', () => {
  // Every ability that needs no thing named: its answer to a scoped caller never names an outside thing.
  const free = allAbilities.filter((a) => {
    const sc = jsonSchemaOf(a.input, 'input');
    return !(sc.required ?? []).some((k) => k in FIELDS);
  });

  for (const [door, via, serves] of DOORS) {
    it.each(free.map((a) => [a.name, a] as const))(`${door}: %s shows nothing outside the scope`, async (_n, a) => {
      const before = await outsideSnapshot();
      const input = example(jsonSchemaOf(a.input, 'input')) as Record<string, unknown>;
      // A search for the outside thing's name finds nothing either.
      const searches = 'search' in a.input.shape ? [input, { ...input, search: MARK }] : [input];
      for (const role of roles.filter(serves))
        for (const i of searches) {
          const r = await via(role, a, i);
          expect(leaks(JSON.stringify(r.body)), `${role.name} ${JSON.stringify(i)} ${JSON.stringify(r.body).slice(0, 300)}`).toBe(false);
        }
      expect(JSON.parse(await outsideSnapshot())).toEqual(JSON.parse(before));
    });
  }

  // A cache a scoped call fills (an index of the fleet) must not cut an administrator's later answer, nor the reverse.
  it.each(free.filter((a) => a.annotations.readonly).map((a) => [a.name, a] as const))(
    "%s: what a scoped call leaves cached does not change an administrator's answer",
    async (_n, a) => {
      const input = example(jsonSchemaOf(a.input, 'input')) as Record<string, unknown>;
      const touch = (n: string) => s.services.sites.edit(ids.siteOut, { notes: n }); // every sites index is stale again
      await touch('a');
      const first = leaks(JSON.stringify((await viaAbilities(admin, a, input)).body));
      await touch('b');
      for (const role of roles) await viaAbilities(role, a, input);
      const after = leaks(JSON.stringify((await viaAbilities(admin, a, input)).body));
      expect(after).toBe(first);
    },
  );

  it('counts count only the scope', async () => {
    for (const role of roles) {
      const sites = await viaAbilities(
        role,
        allAbilities.find((a) => a.name === 'count-sites-v1')!,
        {},
      );
      expect(sites.body, role.name).toMatchObject({ body: { total: 1 } });
      const clients = await viaAbilities(
        role,
        allAbilities.find((a) => a.name === 'count-clients-v1')!,
        {},
      );
      expect(clients.body, role.name).toMatchObject({ body: { total: 1 } });
    }
    const all = await viaAbilities(
      admin,
      allAbilities.find((a) => a.name === 'count-sites-v1')!,
      {},
    );
    expect(all.body).toMatchObject({ body: { total: 2 } });
  });
});

describe('REST: every route that names a thing', () => {
  const key = () => roles.find((r) => !r.user)!;
  const rows = restRoutes.filter((r) => r.ability && /:(\w+)/.test(r.path));
  const kindOf = (a: Ability): Kind | undefined => {
    const f = namingFields(a).find((x) => FIELDS[x] !== 'sites');
    return f ? FIELDS[f] : undefined;
  };

  it.each(rows.flatMap((r) => r.methods.map((m) => [m, r.path, r] as const)))(
    '%s %s answers an outside thing as a missing one',
    async (method, path, row) => {
      const kind = kindOf(row.ability!);
      if (!kind) return;
      const v = values(kind);
      const at = (ref: unknown) => path.replace(/:(\w+)/g, (_, n: string) => (/id_or|^id$|tag|job/.test(n) ? String(ref) : '1'));
      const call = async (ref: unknown) => {
        const r = await fetch(`${s.restBase}${at(ref)}`, {
          method,
          headers: { authorization: key().auth, 'content-type': 'application/json' },
          body: method === 'GET' || method === 'HEAD' ? undefined : '{}',
        });
        const text = await r.text();
        return { status: r.status, body: text ? (JSON.parse(text) as unknown) : null };
      };
      const before = await outsideSnapshot();
      const outside = await call(v.outside);
      const missing = await call(v.missing);
      expect(normal(outside, kind)).toBe(normal(missing, kind));
      expect(leaks(JSON.stringify(outside))).toBe(false);
      expect(JSON.parse(await outsideSnapshot())).toEqual(JSON.parse(before));
    },
  );

  it.each(restRoutes.filter((r) => r.ability && !/:/.test(r.path) && r.methods.includes('GET')).map((r) => [r.path] as const))(
    'GET %s lists nothing outside the scope',
    async (path) => {
      const r = await fetch(`${s.restBase}${path}`, { headers: { authorization: key().auth } });
      expect(leaks(await r.text())).toBe(false);
    },
  );
});

describe('MCP resources and completions', () => {
  it('resources and completions of a scoped session name nothing outside the scope', async () => {
    for (const role of roles) {
      const c = await mcpFor(role);
      const list = await c.readResource({ uri: 'sitefleet://sites' });
      expect(leaks(JSON.stringify(list))).toBe(false);
      const read = async (uri: string) =>
        c.readResource({ uri }).then(
          (r) => JSON.stringify(r),
          (e: Error) => `error: ${e.message}`,
        );
      const outside = await read(`sitefleet://sites/${ids.siteOut}`);
      const missing = await read(`sitefleet://sites/${ids.siteMissing}`);
      expect(normal(outside, 'site')).toBe(normal(missing, 'site'));
      expect(await read(`sitefleet://jobs/${jobOut}`)).toMatch(/^error:/);
      const done = await c.complete({ ref: { type: 'ref/resource', uri: 'sitefleet://sites/{id}' }, argument: { name: 'id', value: '' } });
      expect(leaks(JSON.stringify(done))).toBe(false);
      const byId = await c.complete({
        ref: { type: 'ref/resource', uri: 'sitefleet://sites/{id}' },
        argument: { name: 'id', value: '127' },
      });
      expect(leaks(JSON.stringify(byId)), role.name).toBe(false);
      const jobs = await c.complete({
        ref: { type: 'ref/resource', uri: 'sitefleet://jobs/{job_id}' },
        argument: { name: 'job_id', value: 'sync' },
      });
      expect(jobs.completion.values, role.name).not.toContain(jobOut);
      await expect(c.subscribeResource({ uri: `sitefleet://jobs/${jobOut}` }), role.name).rejects.toThrow();
    }
  });
});

describe('the cached answers and ETags', () => {
  it('an ETag differs by scope, and a cached answer for one scope never serves another', async () => {
    const [k1] = roles.filter((r) => !r.user);
    const other = await s.services.auth.createKey('other scope', 'read', { scope: { sites: [ids.siteOut] } });
    const get = (auth: string, etag?: string) =>
      fetch(`${s.restBase}/sites`, { headers: { authorization: auth, ...(etag ? { 'if-none-match': etag } : {}) } });
    const a = await get(k1!.auth);
    const etag = a.headers.get('etag')!;
    expect((await a.text()).toLowerCase()).not.toContain(MARK);
    const again = await get(k1!.auth, etag);
    expect(again.status).toBe(304);
    const b = await get(`Bearer ${other.token}`, etag);
    expect(b.status).toBe(200);
    expect(b.headers.get('etag')).not.toBe(etag);
    expect((await b.text()).toLowerCase()).toContain(MARK);
  });

  it('a scope change applies to the next request, cached answers included', async () => {
    const { key, token } = await s.services.auth.createKey('changing', 'read', { scope: { sites: [ids.siteIn] } });
    const list = async () => (await fetch(`${s.restBase}/sites`, { headers: { authorization: `Bearer ${token}` } })).text();
    expect((await list()).toLowerCase()).not.toContain(MARK);
    expect((await list()).toLowerCase()).not.toContain(MARK); // now from the cache
    await s.services.auth.updateKey(key.id, { scope: { sites: [ids.siteOut] } });
    expect((await list()).toLowerCase()).toContain(MARK);
    await s.services.auth.revokeKey(key.id);
    const r = await fetch(`${s.restBase}/sites`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(401);
  });
});

describe('an open MCP session over HTTP, and the upstream key routes', () => {
  it('follows a scope change and a revocation on its next request', async () => {
    const made = await s.rest('/rest-api/add-key', {
      method: 'POST',
      token: adminToken(),
      json: { description: 'session', permissions: 'read', scope: { sites: [ids.siteIn] } },
    });
    expect(made.status).toBe(200);
    expect(made.body.data.scope).toEqual({ clients: [], tags: [], sites: [ids.siteIn] });
    const c = new Client({ name: 'scoped session', version: '1' });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${made.body.token}` } },
      }),
    );
    const sites = async () => JSON.stringify((await c.callTool({ name: 'list-sites-v1', arguments: {} })).structuredContent);
    try {
      expect(leaks(await sites())).toBe(false);
      const edit = await s.rest(`/rest-api/edit-key/${made.body.data.id}`, {
        method: 'PUT',
        token: adminToken(),
        json: { scope: { sites: [ids.siteOut] } },
      });
      expect(edit.status).toBe(200);
      expect(leaks(await sites())).toBe(true); // the same session, its next request
      expect(leaks(JSON.stringify(await c.readResource({ uri: 'sitefleet://sites' })))).toBe(true);
      await s.rest(`/rest-api/delete-key/${made.body.data.id}`, { method: 'DELETE', token: adminToken() });
      await expect(sites()).rejects.toThrow();
    } finally {
      await c.close().catch(() => {});
    }
  });

  it('refuses a scope on an administrator key, and one naming a client that does not exist', async () => {
    const admin = await s.rest('/rest-api/add-key', {
      method: 'POST',
      token: adminToken(),
      json: { description: 'adm', permissions: 'read', admin: true, scope: { tags: [ids.tagIn] } },
    });
    expect(admin.status).toBe(400);
    expect(admin.body).toMatchObject({ code: 'svc_invalid_input', data: { params: { scope: expect.any(String) } } });
    const unknown = await s.rest('/rest-api/add-key', {
      method: 'POST',
      token: adminToken(),
      json: { description: 'x', permissions: 'read', scope: { clients: [ids.clientOut + 1000] } },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({
      code: 'svc_invalid_input',
      message: `Invalid scope: No client found with ID ${ids.clientOut + 1000}.`,
    });
  });
});
