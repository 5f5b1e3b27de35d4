// Two `sitefleet serve` processes on one PostgreSQL database behind a real nginx (Debian's, started here with its own
// prefix and config on a loopback port; round-robin upstream; X-Forwarded-For set by nginx, the README's proxy setup):
// with --trust-proxy 127.0.0.1 the failed-login throttle counts each client, so a client hammering with a revoked key
// waits while another still gets in (issue 27 defect 8), and a console login holds across 100 requests that land on
// both processes (defect 6). Each client gets its own source address on loopback (127.0.0.2, 127.0.0.3).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, lastLine, serveProcess } from '../support/process.js';
import { tempDir, testFleetStore } from '../support/server.js';
import { until } from '../support/wait.js';

/** Debian's nginx (apt-get install nginx-light: the CI lane installs it), or one on PATH. */
function findNginx(): string | null {
  for (const p of ['/usr/sbin/nginx', '/usr/local/sbin/nginx']) if (existsSync(p)) return p;
  const which = spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' });
  return which.status === 0 && which.stdout.trim() ? which.stdout.trim() : null;
}

const NGINX = findNginx();
// In CI a missing nginx is a broken lane, not a reason to skip the proof.
if (!NGINX && process.env.CI === 'true') throw new Error('nginx is not installed; the CI lane installs nginx-light (.ci/run).');
if (!NGINX) console.warn('test/pg/reverse-proxy.test.ts skipped: no nginx binary here (apt-get install nginx-light).');

const LIMIT = 5;
type Serve = Awaited<ReturnType<typeof serveProcess>>;
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
});

async function freePort(): Promise<number> {
  const srv = createServer().listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** nginx in the foreground with everything (config, pid, logs, temp files) in its own temp prefix. */
async function startNginx(upstreams: string[]): Promise<{ url: string; stop(): Promise<void> }> {
  const prefix = tempDir('sitefleet-nginx-');
  mkdirSync(join(prefix, 'tmp'));
  const port = await freePort();
  writeFileSync(
    join(prefix, 'nginx.conf'),
    `daemon off;
worker_processes 1;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path tmp/body; proxy_temp_path tmp/proxy; fastcgi_temp_path tmp/fastcgi;
  uwsgi_temp_path tmp/uwsgi; scgi_temp_path tmp/scgi;
  upstream sitefleet { ${upstreams.map((u) => `server ${u};`).join(' ')} keepalive 8; }
  server {
    listen 127.0.0.1:${port};
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host $http_host;
    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    location / { proxy_pass http://sitefleet; }
  }
}
`,
  );
  const child: ChildProcess = spawn(NGINX!, ['-p', `${prefix}/`, '-c', 'nginx.conf', '-e', 'stderr'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await fetch(`${url}/console/`).then(
      (r) => r.status,
      () => 0,
    );
    if (up) break;
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(
        `nginx did not start: ${err} ${existsSync(join(prefix, 'error.log')) ? readFileSync(join(prefix, 'error.log'), 'utf8') : ''}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGQUIT'); // graceful: the workers finish and exit with the master
        await once(child, 'exit');
      }
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}

/** A client with its own loopback source address, so that nginx (and so X-Forwarded-For) tells it apart. */
function clientAt(address: string, base: string) {
  const agent = new Agent({ localAddress: address });
  closers.push(() => agent.close());
  return async (path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) => {
    const res = await request(`${base}${path}`, {
      dispatcher: agent,
      method: (init.method ?? (init.body === undefined ? 'GET' : 'POST')) as 'GET',
      headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.body.text();
    const json = String(res.headers['content-type'] ?? '').startsWith('application/json');
    return { status: res.statusCode, headers: res.headers, body: json && text ? (JSON.parse(text) as any) : text };
  };
}

/** The request log lines a process wrote (JSON lines on stderr). */
function requestLines(p: Serve): Array<Record<string, unknown>> {
  return p
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === 'request');
}

describe.skipIf(!NGINX)('two serve processes behind nginx (round robin, X-Forwarded-For, --trust-proxy 127.0.0.1)', () => {
  let a: Serve;
  let b: Serve;
  let proxy: string;
  let token: string;
  let revoked: string;
  let password: string;

  beforeAll(async () => {
    const fleet = await testFleetStore();
    expect(fleet.databaseUrl).toMatch(/^postgres/);
    closers.push(async () => rmSync(fleet.dataDir, { recursive: true, force: true }));
    token = lastLine((await cli(['keys', 'create', '--name', 'ops', ...fleet.args])).stdout);
    const gone = await cli(['keys', 'create', '--name', 'old-script', ...fleet.args]);
    revoked = lastLine(gone.stdout);
    const id = /API key (\d+)/.exec(gone.stdout)![1]!;
    expect((await cli(['keys', 'revoke', id, ...fleet.args])).code).toBe(0);
    password = lastLine((await cli(['users', 'create', '--name', 'ops', ...fleet.args])).stdout);
    const env = { SITEFLEET_LOGIN_FAILURE_LIMIT: String(LIMIT), SITEFLEET_LOG: 'info' };
    [a, b] = await Promise.all([
      serveProcess([...fleet.args, '--trust-proxy', '127.0.0.1'], env),
      serveProcess([...fleet.args, '--trust-proxy', '127.0.0.1'], env),
    ]);
    closers.push(
      () => a.stop(),
      () => b.stop(),
    );
    const nginx = await startNginx([a.url, b.url].map((u) => new URL(u).host));
    closers.push(() => nginx.stop());
    proxy = nginx.url;
  });

  it('throttles the client hammering with a revoked key, and only that client', async () => {
    const bad = clientAt('127.0.0.3', proxy);
    const good = clientAt('127.0.0.2', proxy);
    // The bad client also names a new address of its own on each try: nginx appends the real one, which is what counts.
    const statuses: number[] = [];
    for (let i = 0; i < 4 * (LIMIT + 1); i++) {
      const r = await bad('/wp-json/svc/v2/sites', {
        headers: { authorization: `Bearer ${revoked}`, 'x-forwarded-for': `198.51.100.${i}` },
      });
      statuses.push(r.status);
    }
    // Each process keeps its own count: within 2 × (limit + 1) tries both have blocked it; from then on, 429 only.
    expect(statuses.slice(0, LIMIT + 1)).toEqual(Array<number>(LIMIT + 1).fill(401));
    expect(statuses.slice(2 * (LIMIT + 1))).toEqual(Array<number>(2 * (LIMIT + 1)).fill(429));
    // It waits with a valid key too, on every door, whichever process answers.
    for (let i = 0; i < 4; i++) {
      expect((await bad('/wp-json/svc/v2/sites', { headers: { authorization: `Bearer ${token}` } })).status).toBe(429);
      expect((await bad('/console/api/login', { body: { name: 'ops', password } })).status).toBe(429);
    }

    // Everyone else gets in, on both processes: REST, abilities, MCP over HTTP and the console.
    for (let i = 0; i < 6; i++) {
      expect((await good('/wp-json/svc/v2/sites', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      expect(
        (await good('/wp-json/wp-abilities/v1/abilities/svc/list-sites-v1/run', { headers: { authorization: `Bearer ${token}` } })).status,
      ).toBe(200);
    }
    const mcp = await good('/mcp', {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' },
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      },
    });
    expect(mcp.status).toBe(200);
    expect((await good('/console/api/login', { body: { name: 'ops', password } })).status).toBe(200);

    // Both processes logged each client by its own address.
    for (const p of [a, b]) {
      const lines = requestLines(p);
      expect(lines.filter((l) => l.client === '127.0.0.3' && l.status === 429).length).toBeGreaterThan(0);
      expect(lines.filter((l) => l.client === '127.0.0.2' && l.status === 200).length).toBeGreaterThan(0);
      // Every refusal went to the bad client's own address (none to the proxy's, 127.0.0.1).
      expect(lines.filter((l) => (l.status === 401 || l.status === 429) && l.client !== '127.0.0.3')).toEqual([]);
    }
  });

  it('keeps a console session across 100 requests that land on both processes, and ends it everywhere at logout', async () => {
    const person = clientAt('127.0.0.4', proxy);
    const login = await person('/console/api/login', { body: { name: 'ops', password } });
    expect(login.status).toBe(200);
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    const csrf = login.body.csrf_token as string;
    const served = (p: Serve) => requestLines(p).filter((l) => l.client === '127.0.0.4' && l.who === 'ops').length;
    const before = [served(a), served(b)];
    for (let i = 0; i < 100; i++) {
      // Reads and, every tenth request, a write (which needs the session's CSRF token, held in the store as well).
      const r =
        i % 10 === 9
          ? await person('/console/api/run/add-tag-v1', {
              body: { input: { name: `proxied-${i}` } },
              headers: { cookie, 'x-csrf-token': csrf },
            })
          : await person('/console/api/session', { headers: { cookie } });
      expect(r.status, `request ${i}: ${JSON.stringify(r.body)}`).toBe(200);
    }
    // Round robin: each process answered about half of them (a line is written as its response ends: wait for the last).
    const each = await until(
      () => [served(a) - before[0]!, served(b) - before[1]!],
      ([x, y]) => x! + y! >= 100,
      5000,
    );
    expect(each[0]! + each[1]!).toBe(100);
    for (const n of each) expect(n).toBeGreaterThanOrEqual(40);

    expect((await person('/console/api/logout', { body: {}, headers: { cookie, 'x-csrf-token': csrf } })).status).toBe(200);
    for (let i = 0; i < 4; i++) {
      expect(await person('/console/api/session', { headers: { cookie } })).toMatchObject({
        status: 401,
        body: { code: 'svc_console_login_required' },
      });
    }
  });
});
