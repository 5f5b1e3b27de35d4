// Test support: a real sitefleet HTTP server on an ephemeral loopback port over a temp data dir,
// with credentials of every kind, and small clients for the three HTTP doors.
import { rmSync } from 'node:fs';
import { boot } from '../../src/app/boot.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { Registry } from '../../src/core/registry.js';
import type { Services } from '../../src/domain/index.js';
import type { SiteRecord } from '../../src/store/records.js';
import { checkRestAnswer } from './openapi-check.js';
import type { Store } from '../../src/store/engine.js';
import { openStore } from '../../src/store/open.js';
import { freshDatabase, testPgUrl } from './postgres.js';
import { tempDir } from './temp.js';

export { tempDir };

export interface Creds {
  /** Bearer tokens by key permission. */
  key: { read_write: string; read: string; write: string; delete: string };
  /** HTTP Basic headers. */
  admin: string;
  viewer: string;
}

export interface TestServer {
  url: string;
  dataDir: string;
  /** Set when the test runs on the PostgreSQL engine (the pg lane): the server's own database. */
  databaseUrl?: string;
  services: Services;
  registry: Registry<Services>;
  creds: Creds;
  restBase: string;
  abilitiesBase: string;
  /** fetch against the REST door with a Bearer token (default: the read_write key); the answer is checked against the OpenAPI document. */
  rest(
    path: string,
    init?: RequestInit & { token?: string | null; json?: unknown },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** Run an ability over the abilities door. GET/DELETE put input in the bracketed query string. */
  ability(
    name: string,
    input?: unknown,
    opts?: { method?: string; auth?: string | null; query?: string },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

export const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

/** PHP-style bracket query: {a:1, b:[1,2], c:{d:'x'}} → input[a]=1&input[b][]=1&input[b][]=2&input[c][d]=x */
export function bracketQuery(input: unknown, prefix = 'input'): string {
  if (input === undefined || input === null) return '';
  if (Array.isArray(input))
    return input
      .map((v) => bracketQuery(v, `${prefix}[]`))
      .filter(Boolean)
      .join('&');
  if (typeof input === 'object') {
    return Object.entries(input as Record<string, unknown>)
      .map(([k, v]) => bracketQuery(v, `${prefix}[${k}]`))
      .filter(Boolean)
      .join('&');
  }
  return `${prefix}=${encodeURIComponent(String(input))}`;
}

async function readJson(res: Response): Promise<any> {
  const text = await res.text();
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return text;
  }
}

/**
 * Where a test keeps its fleet: a temp data dir, and in the pg lane (SITEFLEET_TEST_PG_URL set by its global setup) a
 * fresh database as well, which then holds the fleet. `args` are the CLI flags that point a process at it.
 */
export interface TestFleetStore {
  dataDir: string;
  databaseUrl?: string;
  args: string[];
  open(): Promise<Store>;
}

export async function testFleetStore(dataDir = tempDir()): Promise<TestFleetStore> {
  const pg = testPgUrl();
  const databaseUrl = pg ? await freshDatabase(pg) : undefined;
  return {
    dataDir,
    databaseUrl,
    args: ['--data-dir', dataDir, ...(databaseUrl ? ['--database-url', databaseUrl] : [])],
    open: () => openStore({ dataDir, databaseUrl: databaseUrl ?? null }),
  };
}

export async function startServer(
  opts: {
    dataDir?: string;
    databaseUrl?: string;
    config?: Partial<Record<keyof Config, string | boolean>>;
    /** SITEFLEET_* variables the config is read with (none by default: the process's own are ignored). */
    env?: Record<string, string>;
  } = {},
): Promise<TestServer> {
  const dataDir = opts.dataDir ?? tempDir();
  const pg = testPgUrl();
  const databaseUrl = opts.databaseUrl ?? (pg && !opts.dataDir ? await freshDatabase(pg) : undefined);
  const config = loadConfig(
    { host: '127.0.0.1', port: '0', dataDir, databaseUrl, allowPrivateSites: true, ...opts.config },
    opts.env ?? {},
  );
  const { services, registry, http: served, close } = await boot(config, { http: { port: 0 }, jobTickMs: 100 });
  const http = served!;
  const auth = services.auth;
  // A reopened data dir already has these users: the second server gets fresh ones.
  const taken = new Set(auth.listUsers().map((u) => u.name));
  const fresh = (name: string) => (taken.has(name) ? `${name}-${taken.size}` : name);
  const adminName = fresh('admin');
  const viewerName = fresh('viewer');
  const creds: Creds = {
    key: {
      read_write: (await auth.createKey('rw', 'read_write')).token,
      read: (await auth.createKey('ro', 'read')).token,
      write: (await auth.createKey('wo', 'write')).token,
      delete: (await auth.createKey('del', 'delete')).token,
    },
    admin: basic(adminName, (await auth.createUser(adminName, 'administrator')).password),
    viewer: basic(viewerName, (await auth.createUser(viewerName, 'viewer')).password),
  };
  const restBase = `${http.url}${config.restPrefix}`;
  const abilitiesBase = `${http.url}${config.abilitiesPrefix}`;
  return {
    url: http.url,
    dataDir,
    databaseUrl,
    services,
    registry,
    creds,
    restBase,
    abilitiesBase,
    async rest(path, init = {}) {
      const headers = new Headers(init.headers);
      const token = init.token === undefined ? creds.key.read_write : init.token;
      if (token) headers.set('authorization', `Bearer ${token}`);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set('content-type', 'application/json');
        body = JSON.stringify(init.json);
      }
      const res = await fetch(`${restBase}${path}`, { ...init, headers, body });
      const answer = { status: res.status, body: await readJson(res), headers: res.headers };
      // Every answer matches what the OpenAPI document says this route answers (test/support/openapi-check.ts).
      if (config.restPrefix === '/wp-json/svc/v2')
        checkRestAnswer((init.method ?? 'GET').toUpperCase(), path, answer.status, answer.body, answer.headers);
      return answer;
    },
    async ability(name, input, o = {}) {
      const method = o.method ?? 'POST';
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      const auth = o.auth === undefined ? creds.admin : o.auth;
      if (auth) headers.authorization = auth;
      let url = `${abilitiesBase}/abilities/svc/${name}/run`;
      let body: string | undefined;
      if (method === 'GET' || method === 'DELETE') {
        const q = o.query ?? bracketQuery(input);
        if (q) url += `?${q}`;
      } else {
        body = JSON.stringify({ input: input ?? {} });
      }
      const res = await fetch(url, { method, headers, body });
      return { status: res.status, body: await readJson(res), headers: res.headers };
    },
    async close() {
      await close();
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Adds sites through the store's own API (no child traffic): for tests of the registry alone. */
export async function seedSites(
  services: Services,
  n: number,
  make: (i: number) => Partial<SiteRecord> = () => ({}),
): Promise<SiteRecord[]> {
  // Made before the write: a write function may run more than once (PostgreSQL), and `make` may count.
  const made = Array.from({ length: n }, (_, i) => make(i));
  return services.store.write((tx) =>
    made.map((extra, i) =>
      services.sites.insert(tx, {
        url: `https://site${i + 1}.example.com/`,
        name: `Site ${i + 1}`,
        admin_username: 'admin',
        wp_version: '6.8',
        php_version: '8.2',
        child_version: '6.1',
        ...extra,
      }),
    ),
  );
}
