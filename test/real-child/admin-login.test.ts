// "Open WP Admin" on a real WordPress + MainWP Child site: the link sitefleet hands a write caller, opened by a client
// with a cookie jar following redirects as a browser does, goes through the child's own signed login
// (login_required) and lands on wp-admin's dashboard logged in as the site's administrator; a second use of the same
// link is 410 and logs nobody in; a viewer and a read key get no link.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/fixtures.js';
import { startServer, type TestServer } from '../support/server.js';
import { realSite, serverWithRealSite, wpJson } from './kit.js';

const K = 2;
let s: TestServer;
let id: number;

beforeAll(async () => {
  ({ s, id } = await serverWithRealSite(K, () => startServer()));
});
afterAll(async () => {
  await s?.close();
});

/** A browser: a cookie jar (names only; every cookie sent everywhere on these hosts) and redirects followed by hand. */
async function browse(url: string): Promise<{ hops: Array<[number, string]>; status: number; body: string }> {
  const jar = new Map<string, string>();
  const hops: Array<[number, string]> = [];
  for (let i = 0; i < 10; i++) {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const r = await request(url, { headers: cookie ? { cookie } : {} });
    for (const c of ([] as string[]).concat(r.headers['set-cookie'] ?? [])) {
      const pair = c.split(';')[0]!;
      const eq = pair.indexOf('=');
      jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    hops.push([r.statusCode, url]);
    if (r.statusCode < 300 || r.statusCode >= 400) return { hops, status: r.statusCode, body: await r.body.text() };
    await r.body.dump();
    url = new URL(String(r.headers.location), url).href;
  }
  throw new Error(`too many redirects: ${JSON.stringify(hops)}`);
}

describe('Open WP Admin on a real site', () => {
  it("lands on wp-admin's dashboard logged in as the site's admin; the second use of the link fails", async () => {
    const site = realSite(K);
    const r = await s.rest(`/sites/${id}/admin-login`, { method: 'POST', token: s.creds.key.write });
    expect(r.status).toBe(200);
    const url: string = r.body.data.url;
    expect(url.startsWith(`${s.url}/admin-login/`)).toBe(true);
    const page = await browse(url);
    const paths = page.hops.map(([st, u]) => [st, new URL(u).origin, new URL(u).pathname]);
    expect(paths[0]).toEqual([302, s.url, expect.stringMatching(/^\/admin-login\//)]);
    expect(paths[1]![0]).toBe(302);
    expect(new URL(page.hops[1]![1]).searchParams.get('login_required')).toBe('1');
    expect(page.status).toBe(200);
    expect(new URL(page.hops.at(-1)![1]).pathname).toMatch(/\/wp-admin\/(index\.php)?$/);
    expect(page.body).toMatch(/<title>Dashboard &lsaquo; /);
    const me = wpJson<{ display_name: string }>(
      K,
      `$u = get_user_by('login', '${site.admin}'); return ['display_name' => $u->display_name];`,
    );
    expect(page.body).toContain(`<span class="display-name">${me.display_name}</span>`);
    // Once only: no redirect, no login.
    const again = await browse(url);
    expect(again.hops).toHaveLength(1);
    expect(again.status).toBe(410);
    expect(JSON.parse(again.body)).toMatchObject({ code: 'svc_admin_login_link_invalid' });
  });

  it('a viewer and a read key get no link', async () => {
    expectError(
      await s.ability('get-admin-login-url-v1', { site_id_or_domain: id }, { auth: s.creds.viewer }),
      403,
      'svc_permission_denied',
    );
    expectError(await s.rest(`/sites/${id}/admin-login`, { method: 'POST', token: s.creds.key.read }), 403, 'svc_permission_denied');
  });
});
