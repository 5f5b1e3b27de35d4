// Where sitefleet may connect: loopback, private and link-local addresses are refused unless the
// operator allows them, checked on the resolved address at every connection.
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { guardedLookup, isPrivateAddress } from '../src/child/address-policy.js';
import { startChildSim } from '../src/child/simulator/server.js';
import { startServer, tempDir } from './support/server.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

describe('address policy', () => {
  it('knows private, loopback, link-local and mapped addresses from public ones', () => {
    for (const ip of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '[::1]',
    ]) {
      expect(isPrivateAddress(ip), ip).toBe(true);
    }
    for (const ip of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:1.1.1.1'])
      expect(isPrivateAddress(ip), ip).toBe(false);
  });

  it('refuses a name that resolves to loopback at lookup time', async () => {
    const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => guardedLookup('localhost', {}, (e) => resolve(e)));
    expect(err?.code).toBe('ERR_SITEFLEET_ADDRESS_NOT_ALLOWED');
    const all = await new Promise<NodeJS.ErrnoException | null>((resolve) => guardedLookup('localhost', { all: true }, (e) => resolve(e)));
    expect(all?.code).toBe('ERR_SITEFLEET_ADDRESS_NOT_ALLOWED');
  });

  it('does not even open a TLS handshake to a private address', async () => {
    const { certificateStatus } = await import('../src/domain/tls.js');
    const r = await certificateStatus('https://127.0.0.1:9/');
    expect(r).toMatchObject({ valid: false, expires: null });
    expect(r.error).toMatch(/--allow-private-sites/);
  });

  it('refuses to add a loopback or private site by default, without dialling it', async () => {
    const s = await startServer({ config: { allowPrivateSites: false } });
    closers.push(() => s.close());
    for (const url of [
      'http://127.0.0.1:9/',
      'http://10.0.0.1/',
      'http://[::1]:8080/',
      'http://localhost:9/',
      'http://169.254.169.254/latest/',
    ]) {
      const r = await s.ability('add-site-v1', { url, admin: 'admin' });
      expect(r.status, url).toBe(400);
      expect(r.body.code, url).toBe('svc_address_not_allowed');
      expect(r.body.message).toMatch(/--allow-private-sites/);
    }
  });

  it('refuses a name that resolves to a private address when it connects (not only literal addresses)', async (t) => {
    // The machine's own name resolves (via /etc/hosts) to a loopback or private address on most hosts.
    const name = hostname();
    const addrs = await lookup(name, { all: true }).catch(() => []);
    if (!addrs.length || !addrs.every((a) => isPrivateAddress(a.address))) return t.skip();
    const s = await startServer({ config: { allowPrivateSites: false } });
    closers.push(() => s.close());
    const r = await s.ability('add-site-v1', { url: `http://${name}:9/`, admin: 'admin' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('svc_address_not_allowed');
    expect(r.body.message).toContain(name);
    // It says that the name is refused, never where it points (#18 finding 11: a write key could map internal names).
    for (const a of addrs) expect(JSON.stringify(r.body)).not.toContain(a.address);
  });

  it('checks again at every connection: a site added while allowed is refused once the operator forbids it', async () => {
    const sim = await startChildSim({ sites: 1 });
    closers.push(() => sim.close());
    const dir = tempDir();
    const lax = await startServer({ dataDir: dir });
    const info = sim.sites[0]!;
    expect((await lax.ability('add-site-v1', { url: info.url, admin: info.admin, admin_password: info.password })).status).toBe(200);
    await lax.close();
    const strict = await startServer({ dataDir: dir, config: { allowPrivateSites: false } });
    closers.push(() => strict.close());
    const before = sim.requests(1);
    const r = await strict.ability('sync-sites-v1', { site_ids_or_domains: [1] });
    expect(r.body.errors[0]).toMatchObject({ code: 'svc_address_not_allowed', status: 400 });
    const check = await strict.ability('check-site-v1', { site_id_or_domain: 1 });
    expect(check.body).toMatchObject({ reachable: false, http_status: 0 });
    expect(sim.requests(1)).toBe(before);
  });
});
