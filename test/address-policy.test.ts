// Where sitefleet may connect: loopback, private and link-local addresses are refused unless the
// operator allows them, checked on the resolved address at every connection.
import { Resolver } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { guardLookup, guardedLookup, isPrivateAddress, type LookupFunction } from '../src/child/address-policy.js';
import { startChildSim } from '../src/child/simulator/server.js';
import { startDnsServer } from './support/dns-server.js';
import { startServer, tempDir } from './support/server.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

/**
 * IPv6 spellings of private IPv4 addresses (issue 35 finding 7), each with the IPv4 address it leads to (or the
 * range refused whole): behind NAT64, on a 6to4 or Teredo host, or on a stack that still speaks the deprecated forms,
 * dialling them reaches the metadata address and private networks.
 */
const EMBEDDED_PRIVATE: Array<[string, string]> = [
  ['::ffff:a9fe:a9fe', 'IPv4-mapped, hex'],
  ['::ffff:169.254.169.254', 'IPv4-mapped, dotted'],
  ['0:0:0:0:0:FFFF:7F00:1', 'IPv4-mapped, long form, upper case'],
  ['::a9fe:a9fe', 'IPv4-compatible (deprecated)'],
  ['::7f00:1', 'IPv4-compatible loopback'],
  ['::10.0.0.1', 'IPv4-compatible, dotted'],
  ['::ffff:0:a9fe:a9fe', 'IPv4-translated (RFC 6145)'],
  ['::ffff:0:192.168.1.1', 'IPv4-translated, dotted'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 well-known prefix'],
  ['64:ff9b::127.0.0.1', 'NAT64, dotted'],
  ['64:ff9b::a00:1', 'NAT64 of 10.0.0.1'],
  ['64:ff9b:1::a9fe:a9fe', 'local-use NAT64 (RFC 8215), refused whole'],
  ['64:ff9b:1:a9fe:a9:fe00::', 'local-use NAT64 at /48, refused whole'],
  ['64:ff9b:0:0:1::', 'NAT64 well-known /32 outside its /96'],
  ['2002:a9fe:a9fe::', '6to4 of 169.254.169.254'],
  ['2002:7f00:1::1', '6to4 of 127.0.0.1'],
  ['2002:c0a8:101:1::1', '6to4 of 192.168.1.1'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo, refused whole'],
  ['2001::5ef5:79fd', 'Teredo, refused whole'],
  ['fec0::1', 'site-local (deprecated)'],
  ['100::1', 'discard-only'],
  ['fe80::1%eth0', 'link-local with a zone'],
];

/** The same forms around public IPv4 addresses are reachable sites (DNS64 gives every IPv4-only site a 64:ff9b:: name). */
const EMBEDDED_PUBLIC = [
  '64:ff9b::808:808',
  '64:ff9b::93.184.216.34',
  '2002:808:808::1',
  '::ffff:0:808:808',
  '::808:808',
  '::ffff:808:808',
];

/** A dns.lookup that asks a DNS server of the test's own (a real resolver over UDP) for AAAA and A records. */
function lookupVia(server: string): LookupFunction {
  const resolver = new Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([server]);
  return (hostname, options, callback) => {
    resolver.resolve6(hostname, (err6, v6) => {
      resolver.resolve4(hostname, (err4, v4) => {
        const all = [
          ...(err6 ? [] : v6.map((address) => ({ address, family: 6 }))),
          ...(err4 ? [] : v4.map((address) => ({ address, family: 4 }))),
        ];
        if (!all.length) return callback(err6 ?? err4, '');
        if (options.all) return callback(null, all);
        callback(null, all[0]!.address, all[0]!.family);
      });
    });
  };
}

describe('IPv6 spellings of IPv4 addresses (issue 35 finding 7)', () => {
  it.each(EMBEDDED_PRIVATE)('refuses %s (%s)', (ip) => {
    expect(isPrivateAddress(ip)).toBe(true);
    expect(isPrivateAddress(`[${ip}]`)).toBe(true);
  });

  it.each(EMBEDDED_PUBLIC)('lets %s through (it leads to a public IPv4 address)', (ip) => {
    expect(isPrivateAddress(ip)).toBe(false);
  });

  it('keeps public IPv6 addresses outside these ranges reachable', () => {
    for (const ip of ['2606:4700::1111', '2a00:1450:4001:80b::200e', '2001:4860:4860::8888', '2003::1', '64:ff9a::1'])
      expect(isPrivateAddress(ip), ip).toBe(false);
  });

  it('refuses each spelling as an add-site or webhook URL, without dialling it', async () => {
    const s = await startServer({ config: { allowPrivateSites: false } });
    closers.push(() => s.close());
    for (const [ip] of EMBEDDED_PRIVATE.filter(([ip]) => !ip.includes('%'))) {
      const url = `http://[${ip}]:9/`;
      const site = await s.ability('add-site-v1', { url, admin: 'admin' });
      expect(site.status, url).toBe(400);
      expect(site.body.code, url).toBe('svc_address_not_allowed');
      const hook = await s.rest('/webhooks/add', { method: 'POST', json: { url: `${url}hook` } });
      expect(hook.status, url).toBe(400);
      expect(hook.body.code, url).toBe('svc_address_not_allowed');
    }
    expect([...s.services.store.all('sites')]).toHaveLength(0);
    expect([...s.services.store.all('webhooks')]).toHaveLength(0);
  });

  it('refuses a webhook or chat channel URL that is not absolute http(s) or carries credentials, storing nothing', async () => {
    const s = await startServer({ config: { allowPrivateSites: false } });
    closers.push(() => s.close());
    for (const url of ['not a url', 'ftp://hooks.example/x', 'javascript:alert(1)', 'https://user:pw@hooks.example/x']) {
      const hook = await s.rest('/webhooks/add', { method: 'POST', json: { url } });
      expect([hook.status, hook.body.code], url).toEqual([400, 'svc_invalid_url']);
      const channel = await s.ability('add-notification-channel-v1', { name: 'c', type: 'slack', url });
      expect([channel.status, channel.body.code], url).toEqual([400, 'svc_invalid_url']);
    }
    expect((await s.rest('/webhooks/add', { method: 'POST', json: { url: 'https://user:pw@hooks.example/x' } })).body.message).toContain(
      'must not carry a user or password',
    );
    expect([...s.services.store.all('webhooks')]).toHaveLength(0);
    expect([...s.services.store.all('notification_channels')]).toHaveLength(0);
  });

  it('refuses a name whose DNS answer is any of these spellings, and passes public answers', async () => {
    const records = new Map<string, string[]>();
    EMBEDDED_PRIVATE.filter(([ip]) => !ip.includes('%')).forEach(([ip], i) => records.set(`evil${i}.test`, [ip]));
    EMBEDDED_PUBLIC.forEach((ip, i) => records.set(`good${i}.test`, [ip]));
    // Asked for all its addresses, one bad one among good ones refuses the name (the connection may pick any of them).
    records.set('mixed.test', ['2606:4700::1111', '93.184.216.34', '64:ff9b::a9fe:a9fe']);
    const dns = await startDnsServer(records);
    closers.push(() => dns.close());
    const guarded = guardLookup(lookupVia(dns.server));
    const ask = (name: string, all: boolean) =>
      new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
        guarded(name, { all }, (err, address) => resolve({ err, address })),
      );
    for (const name of [...records.keys()]) {
      for (const all of name === 'mixed.test' ? [true] : [false, true]) {
        const { err, address } = await ask(name, all);
        if (name.startsWith('good')) {
          expect(err, name).toBeNull();
          expect(address, name).toBeTruthy();
        } else {
          expect(err?.code, `${name} → ${records.get(name)!.join(',')}`).toBe('ERR_SITEFLEET_ADDRESS_NOT_ALLOWED');
          expect(err?.message).toContain(name);
        }
      }
    }
  });
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
