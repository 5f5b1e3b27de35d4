// The web console's door over HTTP (the browser lane drives the pages themselves): the shell and its files, login
// into a session cookie, CSRF, what a viewer may do, the shared login throttle, expiry, logout, live job streams
// and their bounds, and --no-console.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../src/app/http.js';
import { LOGIN_WINDOW_MS, LOGINS_PER_ADDRESS, LOGINS_PER_USER, MAX_STREAMS_PER_USER } from '../src/console/door.js';
import { MAX_SESSIONS_PER_USER } from '../src/domain/console-sessions.js';
import { rmSync } from 'node:fs';
import { seedSites, startServer, tempDir, type TestServer } from './support/server.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { serveProcess, untilOutput } from './support/process.js';
import { until as waitFor } from './support/wait.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer({ config: { loginFailureLimit: '1000' } });
  await seedSites(s.services, 3);
});
afterAll(async () => {
  await s?.close();
});

const nameAndPassword = (basicHeader: string) => {
  const [name, ...rest] = Buffer.from(basicHeader.slice(6), 'base64').toString().split(':');
  return { name: name!, password: rest.join(':') };
};

interface Session {
  cookie: string;
  csrf: string;
  body: any;
}

async function post(base: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/console/api${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

async function login(base: string, basicHeader: string): Promise<Session> {
  const r = await post(base, '/login', nameAndPassword(basicHeader));
  expect(r.status).toBe(200);
  return { cookie: r.headers.get('set-cookie')!.split(';')[0]!, csrf: r.body.csrf_token, body: r.body };
}

const run = (base: string, sess: Session, name: string, input?: unknown, extra: Record<string, string> = {}) =>
  post(base, `/run/${name}`, input === undefined ? {} : { input }, { Cookie: sess.cookie, 'X-CSRF-Token': sess.csrf, ...extra });

describe('the shell', () => {
  it('serves the page and its files with a strict content security policy, and / redirects to it', async () => {
    const page = await fetch(`${s.url}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(await page.text()).toContain('/console/assets/app.js');
    const js = await fetch(`${s.url}/console/assets/app.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    const root = await fetch(`${s.url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/console');
  });

  it('serves nothing outside its assets folder, and 404s unknown console paths', async () => {
    for (const path of [
      '/console/assets/../door.ts',
      '/console/assets/%2e%2e/door.ts',
      '/console/assets/..%2f..%2fpackage.json',
      '/console/nothing',
    ]) {
      const r = await fetch(`${s.url}${path}`);
      expect(r.status, path).toBe(404);
      expect((await r.json()).code).toBe('rest_no_route');
    }
  });

  it('is announced by serve with its address, and --no-console leaves it out', async () => {
    const dir = tempDir();
    try {
      const on = await serveProcess(['--data-dir', dir]);
      // Printed right after "listening on", possibly in a later chunk of the output: wait for the line itself.
      await untilOutput(on.child, on.stdout, /web console: /, { ms: 10_000, what: 'serve', errors: on.stderr });
      expect(on.stdout()).toContain(`web console: ${on.url}/console\n`);
      expect(on.stdout()).toContain(`Web console: ${on.url}/console (log in as admin with the password above)`);
      expect((await fetch(`${on.url}/console`)).status).toBe(200);
      expect(await on.stop()).toBe(0);
      const off = await serveProcess(['--data-dir', dir, '--no-console']);
      expect(off.stdout()).not.toMatch(/console/i);
      expect((await fetch(`${off.url}/console`)).status).toBe(401);
      expect(await off.stop()).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is not there with --no-console: /console and / ask for credentials like any unknown path', async () => {
    const off = await listen(s.services, s.registry, '127.0.0.1', 0, { console: false });
    try {
      for (const path of ['/console', '/', '/console/api/session'])
        expect((await fetch(`${off.url}${path}`, { redirect: 'manual' })).status, path).toBe(401);
    } finally {
      await off.close();
    }
  });
});

describe('login', () => {
  it('makes an HttpOnly, SameSite=Strict cookie with an expiry, and says who is in and what the registry offers', async () => {
    const r = await post(s.url, '/login', nameAndPassword(s.creds.admin));
    expect(r.status).toBe(200);
    expect(r.headers.get('set-cookie')).toMatch(
      /^sitefleet_console=[A-Za-z0-9_-]{43}; Path=\/console; Max-Age=28800; HttpOnly; SameSite=Strict$/,
    );
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.body.user).toEqual({ name: 'admin', role: 'administrator' });
    expect(r.body.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(r.body.abilities.find((a: { name: string }) => a.name === 'delete-tag-v1')).toMatchObject({
      readonly: false,
      destructive: true,
      inputs: ['tag_id', 'confirm', 'dry_run'],
    });
    expect(r.body.modules).toEqual({ logs: true, 'cost-tracker': true });
  });

  it('refuses a wrong password, a malformed body, an unknown field and a form encoding, each with its code', async () => {
    const { name } = nameAndPassword(s.creds.admin);
    const wrong = await post(s.url, '/login', { name, password: 'nope' });
    expect(wrong).toMatchObject({ status: 401, body: { code: 'incorrect_password' } });
    expect(wrong.headers.get('set-cookie')).toBeNull();
    expect(await post(s.url, '/login', { name })).toMatchObject({
      status: 400,
      body: { code: 'svc_invalid_input', data: { params: { password: expect.any(String) } } },
    });
    expect(await post(s.url, '/login', { name, password: 'x', remember: true })).toMatchObject({
      status: 400,
      body: { code: 'svc_invalid_input', message: expect.stringContaining('remember') },
    });
    expect(await post(s.url, '/login', { name: 'x'.repeat(201), password: 'x' })).toMatchObject({
      status: 400,
      body: { code: 'svc_invalid_input' },
    });
    expect(await post(s.url, '/login', '{"name":', {})).toMatchObject({ status: 400, body: { code: 'rest_invalid_json' } });
    expect(await post(s.url, '/login', 'name=admin&password=x', { 'Content-Type': 'application/x-www-form-urlencoded' })).toMatchObject({
      status: 415,
      body: { code: 'svc_unsupported_media_type' },
    });
    const big = await post(s.url, '/login', { name, password: 'x'.repeat(1024 * 1024) });
    expect(big).toMatchObject({ status: 413, body: { code: 'svc_request_too_large' } });
  });

  it('is throttled with Basic auth: failures on either door count for both, and a right password waits too', async () => {
    const t = await startServer({ config: { loginFailureLimit: '3' } });
    try {
      const { name, password } = nameAndPassword(t.creds.admin);
      for (let i = 0; i < 2; i++) expect((await post(t.url, '/login', { name, password: 'wrong' })).status).toBe(401);
      for (let i = 0; i < 2; i++)
        expect(
          (await t.ability('list-sites-v1', {}, { method: 'GET', auth: `Basic ${Buffer.from(`${name}:bad`).toString('base64')}` })).status,
        ).toBe(401);
      const blocked = await post(t.url, '/login', { name, password });
      expect(blocked).toMatchObject({ status: 429, body: { code: 'svc_too_many_attempts' } });
      expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await t.ability('list-sites-v1', {}, { method: 'GET' })).status).toBe(429);
    } finally {
      await t.close();
    }
  });
});

describe('a login from a page of another origin (login CSRF)', () => {
  const creds = () => nameAndPassword(s.creds.viewer);
  const refused = { status: 403, body: { code: 'svc_csrf_refused' } };

  it('is refused when the browser says the page is on another port or a sibling subdomain (same site)', async () => {
    const port = Number(new URL(s.url).port) + 1;
    const forged = await post(s.url, '/login', creds(), { Origin: `http://127.0.0.1:${port}`, 'Sec-Fetch-Site': 'same-site' });
    expect(forged).toMatchObject(refused);
    expect(forged.headers.get('set-cookie')).toBeNull();
    expect(await post(s.url, '/login', creds(), { 'Sec-Fetch-Site': 'cross-site' })).toMatchObject(refused);
  });

  it('is refused on its Origin alone (a browser that sends no Sec-Fetch-Site), including the opaque "null"', async () => {
    for (const origin of [`http://127.0.0.1:${Number(new URL(s.url).port) + 1}`, 'http://child.example.com', 'null', 'not a url']) {
      const r = await post(s.url, '/login', creds(), { Origin: origin });
      expect(r, origin).toMatchObject(refused);
      expect(r.headers.get('set-cookie')).toBeNull();
    }
  });

  it('is refused as text/plain (the type a page may post without asking), even with JSON in it', async () => {
    for (const type of ['text/plain;json', 'text/plain; charset=utf-8', 'application/x-json', 'application/json-seq']) {
      const r = await post(s.url, '/login', JSON.stringify(creds()), { 'Content-Type': type });
      expect(r, type).toMatchObject({ status: 415, body: { code: 'svc_unsupported_media_type' } });
    }
  });

  it("is taken from the console's own page (same origin), and a write from another origin is refused even with its token", async () => {
    const own = await post(s.url, '/login', creds(), {
      Origin: s.url,
      'Sec-Fetch-Site': 'same-origin',
      'Content-Type': 'application/json; charset=utf-8',
    });
    expect(own.status).toBe(200);
    const sess = await login(s.url, s.creds.admin);
    const foreign = `http://localhost:${Number(new URL(s.url).port) + 1}`;
    expect(await run(s.url, sess, 'add-tag-v1', { name: 'csrf-origin' }, { Origin: foreign })).toMatchObject(refused);
    expect(await run(s.url, sess, 'add-tag-v1', { name: 'csrf-origin' }, { 'Sec-Fetch-Site': 'same-site' })).toMatchObject(refused);
    expect((await s.rest('/tags?search=csrf-origin')).body.total).toBe(0);
  });
});

describe('bounds per user', () => {
  const as = (name: string, password: string) => `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;

  it("keeps MAX_SESSIONS_PER_USER sessions a user: one more ends that user's own oldest, never another user's", async () => {
    const t = await startServer();
    try {
      const other = await login(t.url, t.creds.viewer);
      const { user, password } = await t.services.auth.createUser('busy', 'viewer');
      const mine: Session[] = [];
      for (let i = 0; i < MAX_SESSIONS_PER_USER; i++) mine.push(await login(t.url, as(user.name, password)));
      // The login throttle would refuse the next one now (tested below): move past its window.
      const later = Date.now() + LOGIN_WINDOW_MS + 1000;
      t.services.consoleSessions.now = () => later;
      const newest = await login(t.url, as(user.name, password));
      const alive = async (x: Session) => (await fetch(`${t.url}/console/api/session`, { headers: { Cookie: x.cookie } })).status;
      expect(await alive(mine[0]!)).toBe(401);
      expect(await alive(mine[1]!)).toBe(200);
      expect(await alive(newest)).toBe(200);
      expect(await alive(other)).toBe(200);
      expect(t.services.consoleSessions.countOf(user.id)).toBe(MAX_SESSIONS_PER_USER);
    } finally {
      await t.close();
    }
  });

  it('throttles successful logins per user: LOGINS_PER_USER in the window, the next waits; another user does not', async () => {
    const t = await startServer();
    try {
      const { user, password } = await t.services.auth.createUser('eager', 'viewer');
      for (let i = 0; i < LOGINS_PER_USER; i++) await login(t.url, as(user.name, password));
      const over = await post(t.url, '/login', { name: user.name, password });
      expect(over).toMatchObject({
        status: 429,
        body: { code: 'svc_too_many_attempts', message: expect.stringContaining('Too many logins') },
      });
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(over.headers.get('set-cookie')).toBeNull();
      expect((await post(t.url, '/login', nameAndPassword(t.creds.viewer))).status).toBe(200);
      // After the window, the user logs in again.
      const later = Date.now() + LOGIN_WINDOW_MS + 1000;
      t.services.consoleSessions.now = () => later;
      expect((await post(t.url, '/login', { name: user.name, password })).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('throttles successful logins per address: LOGINS_PER_ADDRESS in the window from one address, whatever the users', async () => {
    const t = await startServer();
    try {
      const users = await Promise.all([1, 2, 3, 4].map((i) => t.services.auth.createUser(`many-${i}`, 'viewer')));
      const each = Math.ceil(LOGINS_PER_ADDRESS / users.length);
      expect(each).toBeLessThan(LOGINS_PER_USER);
      let made = 0;
      for (const { user, password } of users)
        for (let i = 0; i < each && made < LOGINS_PER_ADDRESS; i++, made++) await login(t.url, as(user.name, password));
      const over = await post(t.url, '/login', nameAndPassword(t.creds.admin));
      expect(over).toMatchObject({ status: 429, body: { code: 'svc_too_many_attempts' } });
    } finally {
      await t.close();
    }
  });
});

describe('a session', () => {
  it('is needed for every API path, and a forged or unknown cookie is none', async () => {
    for (const cookie of [undefined, 'sitefleet_console=abc', `sitefleet_console=${'A'.repeat(43)}`]) {
      const r = await fetch(`${s.url}/console/api/session`, { headers: cookie ? { Cookie: cookie } : {} });
      expect(r.status).toBe(401);
      expect((await r.json()).code).toBe('svc_console_login_required');
    }
    expect((await post(s.url, '/run/list-sites-v1', {})).status).toBe(401);
    expect((await fetch(`${s.url}/console/api/no-such`)).status).toBe(401);
  });

  it('runs abilities as its user through the registry: results, input errors and unknown abilities as the doors answer them', async () => {
    const sess = await login(s.url, s.creds.admin);
    const list = await run(s.url, sess, 'list-sites-v1', { per_page: 2 });
    expect(list).toMatchObject({ status: 200, body: { total: 3, per_page: 2 } });
    expect(list.body.items).toHaveLength(2);
    expect(await run(s.url, sess, 'list-sites-v1', { per_page: 101 })).toMatchObject({
      status: 400,
      body: { code: 'ability_invalid_input' },
    });
    expect(await run(s.url, sess, 'list-sites-v1', { color: 'red' })).toMatchObject({
      status: 400,
      body: { code: 'ability_invalid_input', message: expect.stringContaining('color') },
    });
    expect(await run(s.url, sess, 'no-such-v1')).toMatchObject({ status: 404, body: { code: 'rest_ability_not_found' } });
    expect(
      await post(s.url, '/run/list-sites-v1', { input: {}, extra: 1 }, { Cookie: sess.cookie, 'X-CSRF-Token': sess.csrf }),
    ).toMatchObject({ status: 400, body: { code: 'svc_invalid_input' } });
    const tag = await run(s.url, sess, 'add-tag-v1', { name: 'from-console' });
    expect(tag.status).toBe(200);
    expect((await s.rest(`/tags/${tag.body.id}`)).body.data.name).toBe('from-console');
    expect(await run(s.url, sess, 'delete-tag-v1', { tag_id: tag.body.id })).toMatchObject({
      status: 400,
      body: { code: 'svc_confirmation_required' },
    });
    expect((await s.rest(`/tags/${tag.body.id}`)).status).toBe(200);
  });

  it("refuses a write without its CSRF token, with another session's token, or from another site", async () => {
    const a = await login(s.url, s.creds.admin);
    const b = await login(s.url, s.creds.admin);
    expect(await run(s.url, a, 'add-tag-v1', { name: 'csrf-1' }, { 'X-CSRF-Token': '' })).toMatchObject({
      status: 403,
      body: { code: 'svc_csrf_token_invalid' },
    });
    expect(await run(s.url, a, 'add-tag-v1', { name: 'csrf-2' }, { 'X-CSRF-Token': b.csrf })).toMatchObject({
      status: 403,
      body: { code: 'svc_csrf_token_invalid' },
    });
    expect(await run(s.url, a, 'add-tag-v1', { name: 'csrf-3' }, { 'Sec-Fetch-Site': 'cross-site' })).toMatchObject({
      status: 403,
      body: { code: 'svc_csrf_refused' },
    });
    expect(await post(s.url, '/logout', {}, { Cookie: a.cookie })).toMatchObject({ status: 403, body: { code: 'svc_csrf_token_invalid' } });
    expect((await s.rest('/tags?search=csrf-')).body.total).toBe(0);
  });

  it('lets a viewer read and nothing more: the registry refuses the write', async () => {
    const v = await login(s.url, s.creds.viewer);
    expect(v.body.user.role).toBe('viewer');
    expect((await run(s.url, v, 'list-sites-v1')).status).toBe(200);
    expect(await run(s.url, v, 'add-tag-v1', { name: 'by-viewer' })).toMatchObject({
      status: 403,
      body: { code: 'svc_permission_denied' },
    });
    expect(await run(s.url, v, 'sync-sites-v1', {})).toMatchObject({ status: 403, body: { code: 'svc_permission_denied' } });
    expect((await s.rest('/tags?search=by-viewer')).body.total).toBe(0);
  });

  it('ends at logout: the old cookie opens nothing and the browser is told to drop it', async () => {
    const sess = await login(s.url, s.creds.admin);
    const out = await post(s.url, '/logout', {}, { Cookie: sess.cookie, 'X-CSRF-Token': sess.csrf });
    expect(out).toMatchObject({ status: 200, body: { logged_out: true } });
    expect(out.headers.get('set-cookie')).toMatch(/^sitefleet_console=; Path=\/console; Max-Age=0; HttpOnly; SameSite=Strict$/);
    expect((await fetch(`${s.url}/console/api/session`, { headers: { Cookie: sess.cookie } })).status).toBe(401);
  });

  it('ends when its user is deleted or their role changes (however the change was written)', async () => {
    const { user, password } = await s.services.auth.createUser('short-lived', 'administrator');
    const creds = `Basic ${Buffer.from(`${user.name}:${password}`).toString('base64')}`;
    const first = await login(s.url, creds);
    await s.services.auth.setRole(user.name, 'viewer');
    expect(await run(s.url, first, 'add-tag-v1', { name: 'demoted' })).toMatchObject({
      status: 401,
      body: { code: 'svc_console_login_required' },
    });
    // A role written straight into the store (a restore, another tool) ends the session too: it was made for the old role.
    const second = await login(s.url, creds);
    expect(second.body.user.role).toBe('viewer');
    await s.services.store.write((tx) => tx.put('users', { ...user, role: 'administrator' }));
    expect((await fetch(`${s.url}/console/api/session`, { headers: { Cookie: second.cookie } })).status).toBe(401);
    const third = await login(s.url, creds);
    await s.services.auth.deleteUser(user.name);
    expect(await run(s.url, third, 'list-sites-v1')).toMatchObject({ status: 401, body: { code: 'svc_console_login_required' } });
    expect(s.services.consoleSessions.countOf(user.id)).toBe(0);
  });

  it('expires after its lifetime (8 hours by default)', async () => {
    const sess = await login(s.url, s.creds.viewer);
    const clock = s.services.consoleSessions;
    const start = Date.now();
    try {
      clock.now = () => start + 28_800_000 - 60_000;
      expect((await fetch(`${s.url}/console/api/session`, { headers: { Cookie: sess.cookie } })).status).toBe(200);
      clock.now = () => start + 28_800_000 + 1000;
      const r = await fetch(`${s.url}/console/api/session`, { headers: { Cookie: sess.cookie } });
      expect(r.status).toBe(401);
      expect((await r.json()).message).toBe('Your console session has ended; log in again.');
    } finally {
      clock.now = () => Date.now();
    }
  });
});

describe('live job progress', () => {
  let f: Fleet;
  beforeAll(async () => {
    f = await startFleet({ sim: { sites: 4, latencyMs: 150 }, config: { queueThreshold: '2', childConcurrency: '1' } });
    await registerSites(f);
  });
  afterAll(async () => {
    await f?.close();
  });

  async function events(res: Response, until: string): Promise<Array<{ event: string; data: any }>> {
    const out: Array<{ event: string; data: any }> = [];
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return out;
      buf += value;
      let end;
      while ((end = buf.indexOf('\n\n')) !== -1) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const event = /^event: (.+)$/m.exec(block)?.[1];
        const data = /^data: (.+)$/m.exec(block)?.[1];
        if (event && data) out.push({ event, data: JSON.parse(data) });
        if (event === until) {
          await reader.cancel();
          return out;
        }
      }
    }
  }

  it("streams a job's status as it changes until it ends, bounded per user", async () => {
    const sess = await login(f.s.url, f.s.creds.admin);
    const started = await run(f.s.url, sess, 'sync-sites-v1', {});
    expect(started.body).toMatchObject({ queued: true, job_id: expect.stringMatching(/^sync_/) });
    const url = `${f.s.url}/console/api/jobs/${started.body.job_id}/events`;
    const opened = await Promise.all(Array.from({ length: MAX_STREAMS_PER_USER }, () => fetch(url, { headers: { Cookie: sess.cookie } })));
    for (const r of opened) {
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    }
    const over = await fetch(url, { headers: { Cookie: sess.cookie } });
    expect(over.status).toBe(429);
    expect((await over.json()).code).toBe('svc_too_many_streams');
    const seen = await events(opened[0]!, 'end');
    for (const r of opened.slice(1)) await r.body!.cancel();
    const jobs = seen.filter((e) => e.event === 'job').map((e) => e.data.processed);
    expect(jobs.length).toBeGreaterThanOrEqual(3);
    expect(jobs).toEqual([...jobs].sort((a, b) => a - b));
    expect(seen.at(-1)).toMatchObject({ event: 'end', data: { status: 'completed', processed: 4, total: 4 } });
    expect(
      (await f.s.rest(`/jobs/${started.body.job_id}`)).body.status ?? (await f.s.rest(`/jobs/${started.body.job_id}`)).body.data?.status,
    ).toBe('completed');
    // Closed streams give their places back: as soon as the server has seen them close (asked again until then, bounded).
    const again = await waitFor(
      () => fetch(url, { headers: { Cookie: sess.cookie } }),
      (res) => {
        if (res.status === 200) return true;
        void res.body?.cancel();
        return false;
      },
      10_000,
    );
    expect(again.status).toBe(200);
    expect((await events(again, 'end')).at(-1)!.event).toBe('end');
  });

  it("bounds streams per user across the user's sessions, and another user still gets one", async () => {
    const a = await login(f.s.url, f.s.creds.admin);
    const b = await login(f.s.url, f.s.creds.admin);
    const v = await login(f.s.url, f.s.creds.viewer);
    const started = await run(f.s.url, a, 'sync-sites-v1', {});
    const url = `${f.s.url}/console/api/jobs/${started.body.job_id}/events`;
    const half = MAX_STREAMS_PER_USER / 2;
    const opened = await Promise.all(
      [...Array.from({ length: half }, () => a), ...Array.from({ length: half }, () => b)].map((x) =>
        fetch(url, { headers: { Cookie: x.cookie } }),
      ),
    );
    for (const r of opened) expect(r.status).toBe(200);
    const over = await fetch(url, { headers: { Cookie: b.cookie } });
    expect(over.status).toBe(429);
    expect(await over.json()).toMatchObject({ code: 'svc_too_many_streams', data: { limit: MAX_STREAMS_PER_USER } });
    const viewers = await fetch(url, { headers: { Cookie: v.cookie } });
    expect(viewers.status).toBe(200);
    for (const r of [...opened, viewers]) await r.body!.cancel();
  });

  it('tells a stream whose session ended, and closes it', async () => {
    const { user, password } = await f.s.services.auth.createUser('streamer', 'administrator');
    const sess = await login(f.s.url, `Basic ${Buffer.from(`${user.name}:${password}`).toString('base64')}`);
    const started = await run(f.s.url, sess, 'sync-sites-v1', {});
    expect(started.body.queued).toBe(true);
    const res = await fetch(`${f.s.url}/console/api/jobs/${started.body.job_id}/events`, { headers: { Cookie: sess.cookie } });
    expect(res.status).toBe(200);
    await f.s.services.auth.deleteUser(user.name);
    const seen = await events(res, 'expired');
    expect(seen.at(-1)).toMatchObject({ event: 'expired', data: { code: 'svc_console_login_required' } });
  });

  it('answers an unknown job and a missing session as JSON errors, not streams', async () => {
    const sess = await login(f.s.url, f.s.creds.viewer);
    const unknown = await fetch(`${f.s.url}/console/api/jobs/sync_nope/events`, { headers: { Cookie: sess.cookie } });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).code).toBe('svc_job_not_found');
    expect((await fetch(`${f.s.url}/console/api/jobs/sync_nope/events`)).status).toBe(401);
  });
});
