// "Open WP Admin" over the HTTP doors on simulated children: POST /sites/{id}/admin-login (REST) and the abilities
// door hand a write caller a one-time link on sitefleet's address; opened, it redirects to the child's signed login,
// which lands in wp-admin as the site's admin; a second use is 410; a viewer or read key gets no link.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildSim, type ChildSim } from '../src/child/simulator/server.js';
import { expectError } from './support/fixtures.js';
import { startServer, type TestServer } from './support/server.js';

let sim: ChildSim;
let s: TestServer;
let id: number;

beforeAll(async () => {
  sim = await startChildSim({ sites: 1, seed: 8 });
  s = await startServer();
  const info = sim.sites[0]!;
  id = (await s.rest('/sites/add', { method: 'POST', json: { url: info.url, admin: info.admin, admin_password: info.password } })).body.data
    .id;
});
afterAll(async () => {
  await s?.close();
  await sim?.close();
});

/** A browser with a cookie jar, following redirects by hand: each hop's status and where it went. */
async function open(url: string): Promise<{ hops: Array<[number, string]>; status: number; body: string }> {
  const jar = new Map<string, string>();
  const hops: Array<[number, string]> = [];
  for (let i = 0; i < 10; i++) {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const r = await request(url, { headers: cookie ? { cookie } : {} });
    for (const c of ([] as string[]).concat(r.headers['set-cookie'] ?? [])) {
      const [pair] = c.split(';');
      jar.set(pair!.slice(0, pair!.indexOf('=')), pair!.slice(pair!.indexOf('=') + 1));
    }
    hops.push([r.statusCode, url]);
    if (r.statusCode < 300 || r.statusCode >= 400) return { hops, status: r.statusCode, body: await r.body.text() };
    await r.body.dump();
    url = new URL(String(r.headers.location), url).href;
  }
  throw new Error('too many redirects');
}

describe('Open WP Admin over REST and the abilities door', () => {
  it('REST: a one-time link that lands in wp-admin as the admin; the second use is 410', async () => {
    const r = await s.rest(`/sites/${id}/admin-login`, { method: 'POST', token: s.creds.key.write });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ site_id: id, site_url: sim.sites[0]!.url, expires_in_s: 30 });
    expect(r.body.data.url).toMatch(new RegExp(`^${s.url}/admin-login/[A-Za-z0-9_-]{43}$`));
    const page = await open(r.body.data.url);
    expect(page.hops.map(([st, u]) => [st, new URL(u).pathname])).toEqual([
      [302, expect.stringMatching(/^\/admin-login\//)],
      [302, '/s/1/'],
      [200, '/s/1/wp-admin/index.php'],
    ]);
    expect(new URL(page.hops[1]![1]).searchParams.get('login_required')).toBe('1');
    expect(page.body).toContain(`Howdy, <span class="display-name">${sim.sites[0]!.admin}</span>`);
    const again = await request(r.body.data.url);
    expect(again.statusCode).toBe(410);
    expect(again.headers.location).toBeUndefined();
    expect(await again.body.json()).toMatchObject({ code: 'svc_admin_login_link_invalid' });
  });

  it('the abilities door: an administrator gets one; a viewer and a read key get none', async () => {
    const r = await s.ability('get-admin-login-url-v1', { site_id_or_domain: id });
    expect(r.status).toBe(200);
    expect((await open(r.body.url)).status).toBe(200);
    expectError(
      await s.ability('get-admin-login-url-v1', { site_id_or_domain: id }, { auth: s.creds.viewer }),
      403,
      'svc_permission_denied',
    );
    expectError(await s.rest(`/sites/${id}/admin-login`, { method: 'POST', token: s.creds.key.read }), 403, 'svc_permission_denied');
  });
});
