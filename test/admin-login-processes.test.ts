// "Open WP Admin" links across two `sitefleet serve` processes on one store, as behind a proxy: a link made by one
// works once through the other, and of two concurrent uses of one link (one at each process) exactly one logs in.
// The default lane runs it on one data dir (lowdb); the PostgreSQL lane (vitest.pg.config.ts) on one database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildSim, type ChildSim } from '../src/child/simulator/server.js';
import { cli, lastLine, serveProcess } from './support/process.js';
import { testFleetStore } from './support/server.js';

type Serve = Awaited<ReturnType<typeof serveProcess>>;
let sim: ChildSim;
let a: Serve;
let b: Serve;
let token: string;
let siteId: number;

beforeAll(async () => {
  sim = await startChildSim({ sites: 1, seed: 29 });
  const fleet = await testFleetStore();
  token = lastLine((await cli(['keys', 'create', '--name', 'k', ...fleet.args])).stdout);
  [a, b] = await Promise.all([
    serveProcess([...fleet.args, '--allow-private-sites']),
    serveProcess([...fleet.args, '--allow-private-sites']),
  ]);
  const s = sim.sites[0]!;
  const added = await rest(a, '/sites/add', { url: s.url, admin: s.admin, admin_password: s.password });
  expect(added.status).toBe(200);
  siteId = added.body.data.id;
}, 60_000);
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await sim?.close();
});

async function rest(p: Serve, path: string, json?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${p.url}/wp-json/svc/v2${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  return { status: res.status, body: await res.json() };
}

/** A link made by `p`, as it answers it (on its own address). */
async function linkFrom(p: Serve): Promise<string> {
  const r = await rest(p, `/sites/${siteId}/admin-login`);
  expect(r.status).toBe(200);
  return r.body.data.url;
}

/** The same link's token, opened on `p` (the proxy's other backend); the redirect is not followed. */
const openAt = (p: Serve, link: string) => fetch(`${p.url}${new URL(link).pathname}`, { redirect: 'manual' });

describe('Open WP Admin links across two serve processes on one store', () => {
  it("a link made by one process logs in once through the other, into the site's wp-admin as its admin", async () => {
    const link = await linkFrom(a);
    expect(link.startsWith(`${a.url}/admin-login/`)).toBe(true);
    const used = await openAt(b, link);
    expect(used.status).toBe(302);
    const signed = new URL(used.headers.get('location')!);
    expect(signed.origin + signed.pathname).toBe(sim.sites[0]!.url);
    expect(signed.searchParams.get('login_required')).toBe('1');
    // The child's signed login sets its session and sends the browser to wp-admin.
    const login = await fetch(signed, { redirect: 'manual' });
    expect(login.status).toBe(302);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const dashboard = await fetch(new URL(login.headers.get('location')!, signed), { headers: { cookie } });
    expect(await dashboard.text()).toContain(`Howdy, <span class="display-name">${sim.sites[0]!.admin}</span>`);
    // Used: refused by both, and nothing is signed.
    for (const p of [a, b]) {
      const again = await openAt(p, link);
      expect(again.status).toBe(410);
      expect(again.headers.get('location')).toBeNull();
      expect(await again.json()).toMatchObject({ code: 'svc_admin_login_link_invalid' });
    }
  });

  it('of two concurrent uses of one link, one at each process, exactly one gets the login', async () => {
    const links = await Promise.all(Array.from({ length: 20 }, (_, i) => linkFrom(i % 2 ? a : b)));
    for (const link of links) {
      const answers = await Promise.all([openAt(a, link), openAt(b, link)]);
      expect(answers.map((r) => r.status).sort()).toEqual([302, 410]);
      await Promise.all(answers.map((r) => r.body?.cancel()));
    }
  });
});
