// Console sessions live in the store (either engine; the pg lane runs this file on PostgreSQL): a login survives a
// restart, two `serve` processes on one store know the same sessions and the same logout, a user's deletion or role
// change ends them everywhere, and the store holds only a hash of each session token.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { closeServices, openServices } from '../src/domain/index.js';
import { cli, lastLine, serveProcess } from './support/process.js';
import { startServer, testFleetStore, type TestFleetStore } from './support/server.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
});

interface Session {
  token: string;
  cookie: string;
  csrf: string;
}

async function api(base: string, path: string, init: { body?: unknown; cookie?: string; csrf?: string } = {}) {
  const headers: Record<string, string> = {};
  if (init.cookie) headers.Cookie = init.cookie;
  if (init.csrf) headers['X-CSRF-Token'] = init.csrf;
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${base}/console/api${path}`, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}

async function login(base: string, name: string, password: string): Promise<Session> {
  const r = await api(base, '/login', { body: { name, password } });
  expect(r.status).toBe(200);
  const cookie = r.headers.get('set-cookie')!.split(';')[0]!;
  return { token: cookie.split('=')[1]!, cookie, csrf: r.body.csrf_token };
}

const whoAmI = (base: string, s: Session) => api(base, '/session', { cookie: s.cookie });
const addTag = (base: string, s: Session, name: string) =>
  api(base, '/run/add-tag-v1', { body: { input: { name } }, cookie: s.cookie, csrf: s.csrf });

/** Every byte the fleet's store holds: the data dir's files, or every row of the PostgreSQL database. */
async function everythingStored(fleet: TestFleetStore): Promise<string> {
  if (fleet.databaseUrl) {
    const c = new pg.Client({ connectionString: fleet.databaseUrl });
    await c.connect();
    try {
      const rows = await c.query<{ t: string }>(`SELECT kind || ' ' || id || ' ' || coalesce(data::text, '') AS t FROM sitefleet_rows`);
      return rows.rows.map((r) => r.t).join('\n');
    } finally {
      await c.end();
    }
  }
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const f of readdirSync(dir)) {
      const p = join(dir, f);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(readFileSync(p, 'utf8'));
    }
  };
  walk(fleet.dataDir);
  return out.join('\n');
}

describe('console sessions in the store', () => {
  it('survive a restart: the same cookie and CSRF token work on the server started again', async () => {
    const fleet = await testFleetStore();
    closers.push(async () => rmSync(fleet.dataDir, { recursive: true, force: true }));
    const first = await startServer({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl });
    const { user, password } = await first.services.auth.createUser('restarter', 'administrator');
    const sess = await login(first.url, user.name, password);
    await first.close();
    const second = await startServer({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl });
    closers.push(() => second.close());
    expect(await whoAmI(second.url, sess)).toMatchObject({ status: 200, body: { user: { name: 'restarter' }, csrf_token: sess.csrf } });
    expect((await addTag(second.url, sess, 'after-restart')).status).toBe(200);
  });

  it('keep only a hash of the session token, never the token or its CSRF token', async () => {
    const fleet = await testFleetStore();
    closers.push(async () => rmSync(fleet.dataDir, { recursive: true, force: true }));
    const s = await startServer({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl });
    closers.push(() => s.close());
    const { user, password } = await s.services.auth.createUser('hashed', 'viewer');
    const sess = await login(s.url, user.name, password);
    const stored = await everythingStored(fleet);
    expect(stored).toContain(createHash('sha256').update(sess.token).digest('hex'));
    expect(stored).not.toContain(sess.token);
    expect(stored).not.toContain(sess.csrf);
    expect(stored).not.toContain(password.replace(/ /g, ''));
  });
});

describe('two serve processes on one store', () => {
  it('know the same session, and a logout, a deletion or a role change on one ends it on the other at once', async () => {
    const fleet = await testFleetStore();
    closers.push(async () => rmSync(fleet.dataDir, { recursive: true, force: true }));
    const made = await cli(['users', 'create', '--name', 'ops', ...fleet.args]);
    expect(made.code).toBe(0);
    const password = lastLine(made.stdout);
    const demotedPassword = lastLine((await cli(['users', 'create', '--name', 'demoted', ...fleet.args])).stdout);
    // A third administrator, so that deleting ops below does not remove the last one (refused: svc_last_administrator).
    expect((await cli(['users', 'create', '--name', 'keeper', ...fleet.args])).code).toBe(0);
    const [a, b] = await Promise.all([
      serveProcess([...fleet.args, '--allow-private-sites']),
      serveProcess([...fleet.args, '--allow-private-sites']),
    ]);
    closers.push(
      () => a.stop(),
      () => b.stop(),
    );

    // Logged in on A, the person is known on B, request after request, reads and writes alike.
    const sess = await login(a.url, 'ops', password);
    for (let i = 0; i < 20; i++) {
      const [p, q] = i % 2 ? [a, b] : [b, a];
      expect((await whoAmI(p.url, sess)).status, `request ${i}`).toBe(200);
      expect((await addTag(q.url, sess, `both-${i}`)).status, `write ${i}`).toBe(200);
    }
    // Logged out on B: A refuses the cookie on its very next request.
    expect((await api(b.url, '/logout', { body: {}, cookie: sess.cookie, csrf: sess.csrf })).status).toBe(200);
    expect(await whoAmI(a.url, sess)).toMatchObject({ status: 401, body: { code: 'svc_console_login_required' } });
    expect((await whoAmI(b.url, sess)).status).toBe(401);

    // A role change from the command line (another process) ends them in both, and leaves none stored.
    const demoted = await login(a.url, 'demoted', demotedPassword);
    expect((await whoAmI(b.url, demoted)).status).toBe(200);
    const changed = await cli(['users', 'set-role', 'demoted', '--role', 'viewer', ...fleet.args]);
    expect(changed).toMatchObject({ code: 0, stdout: 'User "demoted" is now viewer; their console sessions ended.\n' });
    const services = await openServices(loadConfig({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl }, {}));
    try {
      expect(services.consoleSessions.countOf(services.auth.listUsers().find((u) => u.name === 'demoted')!.id)).toBe(0);
    } finally {
      await closeServices(services);
    }
    expect((await whoAmI(a.url, demoted)).status).toBe(401);
    expect((await whoAmI(b.url, demoted)).status).toBe(401);

    // So does deleting a user from the command line (a third process).
    const again = await login(b.url, 'ops', password);
    expect((await whoAmI(a.url, again)).status).toBe(200);
    expect((await cli(['users', 'delete', 'ops', ...fleet.args])).code).toBe(0);
    expect(await whoAmI(a.url, again)).toMatchObject({ status: 401, body: { code: 'svc_console_login_required' } });
    expect((await whoAmI(b.url, again)).status).toBe(401);
  });
});
