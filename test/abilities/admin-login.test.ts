// get-admin-login-url-v1 through the registry: who gets a link, the link's one use (it sends the browser to the
// simulated child's signed login, which opens a wp-admin session), its expiry and bound, and its absence from MCP
// unless the admin-login toolset is asked for.
import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { AdminLoginService, LINK_TTL_MS, MAX_OPEN_LINKS, type AdminLoginUse } from '../../src/domain/admin-logins.js';
import { buildMcpServer } from '../../src/mcp/server.js';

let h: AbilityHarness;
let ids: number[];
const BASE = 'https://fleet.example';

beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 2, seed: 4 } });
  ids = (await h.addSimSites(2)).map((s) => s.id);
});
afterAll(() => h.close());

const tokenOf = (url: string) => url.slice(`${BASE}/admin-login/`.length);

/** Opens the child's signed login URL like a browser: its redirect, its cookie, then wp-admin. */
async function browse(signed: string): Promise<{ status: number; body: string }> {
  const first = await request(signed, { method: 'GET' });
  await first.body.dump();
  if (first.statusCode !== 302) return { status: first.statusCode, body: '' };
  const cookie = String(first.headers['set-cookie'] ?? '').split(';')[0]!;
  const admin = await request(String(first.headers.location), { headers: { cookie } });
  return { status: admin.statusCode, body: await admin.body.text() };
}

describe('get-admin-login-url-v1', () => {
  it('without an HTTP door there is no public address to serve a link from: refused', async () => {
    expect(await h.fails('get-admin-login-url-v1', { site_id_or_domain: ids[0]! })).toMatchObject({
      code: 'svc_admin_login_not_served',
      status: 400,
    });
  });

  it("a write caller gets a one-time link; used, it is the child's signed login, which lands in wp-admin as the admin", async () => {
    h.services.adminLogins.publicBase = BASE;
    const uses: AdminLoginUse[] = [];
    h.services.adminLogins.onUse((u) => uses.push(u));
    const r = await h.call('get-admin-login-url-v1', { site_id_or_domain: ids[1]! }, h.as.writeKey);
    expect(r).toMatchObject({ site_id: ids[1], site_url: h.sim.sites[1]!.url, expires_in_s: LINK_TTL_MS / 1000 });
    expect(r.url).toMatch(/^https:\/\/fleet\.example\/admin-login\/[A-Za-z0-9_-]{43}$/);
    const before = h.sim.requests(2);
    const signed = await h.services.adminLogins.use(tokenOf(r.url), '127.0.0.1');
    expect(h.sim.requests(2)).toBe(before); // making the signed URL calls no site
    const u = new URL(signed!);
    expect(u.origin + u.pathname).toBe(h.sim.sites[1]!.url);
    expect(Object.fromEntries(u.searchParams)).toMatchObject({ login_required: '1', user: h.sim.sites[1]!.admin, where: 'index.php' });
    const page = await browse(signed!);
    expect(page.status).toBe(200);
    expect(page.body).toContain('<h1>Dashboard</h1>');
    expect(page.body).toContain(`Howdy, <span class="display-name">${h.sim.sites[1]!.admin}</span>`);
    expect(uses).toEqual([
      expect.objectContaining({ site_id: ids[1], actor: { kind: 'key', id: (h.as.writeKey as { id: number }).id, name: 'write' } }),
    ]);
    // Once only.
    expect(await h.services.adminLogins.use(tokenOf(r.url), '127.0.0.1')).toBeNull();
    expect(uses).toHaveLength(1);
  });

  it('a forged or tampered signature logs nobody in (the simulated child checks it as the real one does)', async () => {
    const r = await h.call('get-admin-login-url-v1', { site_id_or_domain: ids[0]! });
    const u = new URL((await h.services.adminLogins.use(tokenOf(r.url), '127.0.0.1'))!);
    u.searchParams.set('where', 'users.php'); // signed over index.php
    expect((await browse(u.href)).status).not.toBe(302);
    const plain = await request(`${h.sim.sites[0]!.url}wp-admin/`);
    await plain.body.dump();
    expect(plain.statusCode).toBe(302); // to wp-login.php: no session
  });

  it('a viewer, a read key and read-only mode get no link', async () => {
    for (const who of [h.as.viewer, h.as.readKey, h.as.readOnlyLocal])
      expect(await h.fails('get-admin-login-url-v1', { site_id_or_domain: ids[0]! }, who)).toMatchObject({
        code: 'svc_permission_denied',
        status: 403,
      });
    expect(await h.fails('get-admin-login-url-v1', { site_id_or_domain: 'nowhere.example' })).toMatchObject({ code: 'svc_site_not_found' });
  });

  it(`expires after ${LINK_TTL_MS / 1000} s; at most ${MAX_OPEN_LINKS} links wait to be used`, async () => {
    let now = Date.now() + 60 * LINK_TTL_MS; // past every link the tests above left in the store
    const links = new AdminLoginService(h.services.store, h.services.sites, h.services.children, () => now);
    links.publicBase = BASE;
    const site = h.services.sites.get(ids[0]!)!;
    const late = await links.issue(site, h.as.admin);
    now += LINK_TTL_MS;
    expect(await links.use(tokenOf(late.url), '127.0.0.1')).toBeNull();
    // Issued together, so that the store groups them into a few commits.
    await Promise.all(Array.from({ length: MAX_OPEN_LINKS }, () => links.issue(site, h.as.admin)));
    await expect(links.issue(site, h.as.admin)).rejects.toMatchObject({ code: 'svc_too_many_admin_logins', status: 429 });
    now += LINK_TTL_MS; // the waiting ones expire and make room
    const fresh = await links.issue(site, h.as.admin);
    expect(h.services.store.count('admin_logins')).toBe(1); // the expired ones went in that write
    expect(await links.use(tokenOf(fresh.url), '127.0.0.1')).toMatch(/login_required=1/);
    expect(h.services.store.count('admin_logins')).toBe(0);
    for (const bad of ['', 'x', 'a'.repeat(43), `${tokenOf(fresh.url)}x`]) expect(await links.use(bad, '127.0.0.1')).toBeNull();
  });

  it('the store keeps only a hash of the token; of two concurrent uses exactly one gets the login', async () => {
    const r = await h.call('get-admin-login-url-v1', { site_id_or_domain: ids[0]! });
    const token = tokenOf(r.url);
    const stored = JSON.stringify([...h.services.store.all('admin_logins')]);
    expect(stored).toContain(createHash('sha256').update(token).digest('hex'));
    expect(stored).not.toContain(token);
    const uses = await Promise.all(Array.from({ length: 8 }, () => h.services.adminLogins.use(token, '127.0.0.1')));
    expect(uses.filter((u) => u !== null)).toHaveLength(1);
  });

  it('MCP offers it only when the admin-login toolset is named', async () => {
    const tools = async (toolsets?: string[]) => {
      const [a, b] = InMemoryTransport.createLinkedPair();
      await buildMcpServer(h.registry, { principal: { kind: 'local', name: 'stdio' }, toolsets }, h.services).connect(a);
      const client = new Client({ name: 't', version: '1' });
      await client.connect(b);
      const names = (await client.listTools()).tools.map((t) => t.name);
      await client.close();
      return names;
    };
    const all = await tools();
    expect(all).toContain('install-plugins-v1');
    expect(all).not.toContain('get-admin-login-url-v1');
    expect(await tools(['admin-login'])).toEqual(['get-admin-login-url-v1']);
  });
});
