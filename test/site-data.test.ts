// The stored-data side of plugins and themes: the fleet-wide abandoned index at 5,000 sites (no per-request
// reading of every site's file, follows changes at once), the two-year boundary, and the TLS certificate check.
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import type { SitePlugin, SiteTheme } from '../src/child/snapshot.js';
import { ENTRIES_MAX, HORIZON_DAYS, abandonedCutoff, abandonedEntry } from '../src/domain/site-data.js';
import { certificateStatus } from '../src/domain/tls.js';
import { BLOB_READ_BATCH, type Store } from '../src/store/engine.js';
import type { SiteData, SiteRecord } from '../src/store/records.js';
import { seedSites, startServer, tempDir, type TestServer } from './support/server.js';

const DAY = 86_400_000;
const plugin = (slug: string, last_updated: string | null, active = false): SitePlugin => ({
  slug,
  name: `Plugin ${slug}`,
  version: '1.0',
  active,
  update_version: null,
  last_updated,
  must_use: false,
});
const theme = (slug: string, last_updated: string | null, active = false): SiteTheme => ({
  slug,
  name: `Theme ${slug}`,
  version: '2.0',
  active,
  update_version: null,
  last_updated,
});
const data = (plugins: SitePlugin[], themes: SiteTheme[] = []): SiteData => ({
  plugins,
  themes,
  security: [],
  changes: [],
  users: [],
  synced_at: new Date().toISOString(),
});

describe('abandoned lists at 5,000 sites', () => {
  const N = 5_000;
  let s: TestServer;
  let reads: MockInstance<Store['readBlobs']>;

  beforeAll(async () => {
    s = await startServer();
    const sites = await seedSites(s.services, N, (i) => ({
      url: `https://fleet${i + 1}.example.com/`,
      last_sync: new Date().toISOString(),
    }));
    await s.services.store.write((tx) => {
      for (const site of sites) {
        tx.putBlob(
          'site-data',
          site.id,
          data(
            [plugin('old/old.php', '2019-05-01'), plugin('fresh/fresh.php', null, true), plugin('aaa/aaa.php', null)],
            [theme('oldtheme', '2018-01-01'), theme('current', null, true)],
          ),
        );
      }
    });
    // The index reads the sites' data in batches (store.readBlobs): count the sites read, and the largest batch.
    reads = vi.spyOn(s.services.store, 'readBlobs');
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  const list = (input: Record<string, unknown> = {}) => s.ability('get-abandoned-plugins-v1', input, { method: 'GET' });

  const sitesRead = () => reads.mock.calls.reduce((n, c) => n + c[1].length, 0);

  it("reads each site's data once, in batches of at most BLOB_READ_BATCH, then answers from memory", async () => {
    const first = await list();
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(N);
    expect(first.body.items).toHaveLength(50);
    expect(first.body.items[0]).toEqual({
      site_id: 1,
      site_url: 'https://fleet1.example.com/',
      slug: 'old/old.php',
      name: 'Plugin old/old.php',
      version: '1.0',
      last_updated: '2019-05-01',
    });
    expect(sitesRead()).toBe(N);
    expect(reads).toHaveBeenCalledTimes(Math.ceil(N / BLOB_READ_BATCH));
    expect(Math.max(...reads.mock.calls.map((c) => c[1].length))).toBe(BLOB_READ_BATCH);
    reads.mockClear();
    const started = performance.now();
    for (let page = 1; page <= 20; page++) {
      const r = await list({ page: page * 5, per_page: 50 });
      expect(r.body.items[0].site_id).toBe((page * 5 - 1) * 50 + 1);
    }
    const themes = await s.ability('get-abandoned-themes-v1', { per_page: 100 }, { method: 'GET' });
    expect(themes.body.total).toBe(N);
    expect(reads).not.toHaveBeenCalled();
    // Twenty-one requests over HTTP in well under a second on a loaded machine: nothing is read from disk.
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('re-reads only the site whose data changed, and forgets a removed site', async () => {
    const id = 1234;
    await s.services.store.write((tx) => {
      tx.putBlob('site-data', id, data([plugin('old/old.php', '2019-05-01'), plugin('zzz/zzz.php', '2020-02-02')]));
      s.services.sites.patch(tx, id, { last_sync: new Date(Date.now() + 1000).toISOString() });
    });
    reads.mockClear();
    const r = await list({ site_id_or_domain: id });
    expect(r.body.items.map((i: { slug: string }) => i.slug)).toEqual(['old/old.php', 'zzz/zzz.php']);
    expect(sitesRead()).toBe(1);
    expect((await list()).body.total).toBe(N + 1);
    await s.ability('delete-site-v1', { site_id_or_domain: 7, confirm: true });
    reads.mockClear();
    const after = await list({ per_page: 100 });
    expect(after.body.total).toBe(N);
    expect(after.body.items.some((i: { site_id: number }) => i.site_id === 7)).toBe(false);
    expect(reads).not.toHaveBeenCalled();
  });

  it('searches by slug or name across the fleet', async () => {
    const r = await list({ search: 'ZZZ' });
    expect(r.body).toMatchObject({ total: 1, items: [{ site_id: 1234, slug: 'zzz/zzz.php' }] });
  });
});

describe("the abandoned index's entries", () => {
  const site = { id: 1 } as SiteRecord;
  const period = String(Math.floor((Date.now() - 730 * DAY) / (HORIZON_DAYS * DAY)));
  it('one frozen entry for the sites with the same abandoned items, one for the sites with none; past ENTRIES_MAX each still its own items', () => {
    const old = (slug: string, version = '1.0') => ({ ...plugin(slug, '2015-01-01'), version });
    const a = abandonedEntry(site, data([old('x'), old('y'), plugin('fresh', '2099-01-01')], [theme('t', '2014-01-01')]), period);
    expect(abandonedEntry(site, data([old('y'), old('x')], [theme('t', '2014-01-01')]), period)).toBe(a);
    expect(Object.isFrozen(a) && Object.isFrozen(a.plugins) && Object.isFrozen(a.themes)).toBe(true);
    expect(a.plugins.map((i) => i.slug)).toEqual(['x', 'y']);
    expect(abandonedEntry(site, data([old('x'), old('y', '1.1')], [theme('t', '2014-01-01')]), period)).not.toBe(a);
    expect(abandonedEntry(site, data([old('x'), old('y')]), period)).not.toBe(a);
    const none = abandonedEntry(site, data([plugin('fresh', '2099-01-01')]), period);
    expect(none).toBe(abandonedEntry(site, null, period));
    expect(none).toEqual({ plugins: [], themes: [] });
    const made = Array.from({ length: ENTRIES_MAX + 10 }, (_, i) => [old(`q${i % 31}`), old(`r${i}`)]);
    const got = made.map((p) => abandonedEntry(site, data(p), period));
    for (const [i, e] of got.entries())
      expect(
        e.plugins.map((x) => x.slug),
        `site ${i}`,
      ).toEqual(made[i]!.map((x) => x.slug).sort());
  });
});

describe('the two-year boundary', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
    const [site] = await seedSites(s.services, 1);
    const cutoff = abandonedCutoff();
    const dayAfter = new Date(Date.parse(cutoff) + DAY).toISOString().slice(0, 10);
    // Beyond the index's horizon (HORIZON_DAYS): not kept until the period it can turn abandoned in.
    const later = new Date(Date.parse(cutoff) + (HORIZON_DAYS + 70) * DAY).toISOString().slice(0, 10);
    await s.services.store.write((tx) => {
      tx.putBlob(
        'site-data',
        site!.id,
        data([
          plugin('edge/edge.php', cutoff),
          plugin('young/young.php', dayAfter),
          plugin('later/later.php', later),
          plugin('none/none.php', null),
        ]),
      );
      s.services.sites.patch(tx, site!.id, { last_sync: new Date().toISOString() });
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('counts an item last updated exactly two years (730 days) ago, and not one a day younger', async () => {
    expect(abandonedCutoff(Date.parse('2026-03-01T12:00:00Z'))).toBe('2024-03-01');
    const r = await s.rest('/sites/1/plugins/abandoned');
    expect(r.body).toMatchObject({ success: 1, total: 1, data: [{ slug: 'edge/edge.php', last_updated: abandonedCutoff() }] });
  });

  it("moves the fleet's list with the day: an item turns abandoned a day later, and not before", async () => {
    const slugs = async () =>
      ((await s.ability('get-abandoned-plugins-v1', {}, { method: 'GET' })).body.items as Array<{ slug: string }>).map((i) => i.slug);
    const today = Date.now();
    try {
      expect(await slugs()).toEqual(['edge/edge.php']);
      s.services.siteData.now = () => today + DAY;
      expect(await slugs()).toEqual(['edge/edge.php', 'young/young.php']);
      s.services.siteData.now = () => today;
      expect(await slugs()).toEqual(['edge/edge.php']);
      // Past the horizon the entries are derived again from the stored data: an item further out turns up on its day.
      s.services.siteData.now = () => today + (HORIZON_DAYS + 69) * DAY;
      expect(await slugs()).toEqual(['edge/edge.php', 'young/young.php']);
      s.services.siteData.now = () => today + (HORIZON_DAYS + 70) * DAY;
      expect(await slugs()).toEqual(['edge/edge.php', 'later/later.php', 'young/young.php']);
      s.services.siteData.now = () => today;
      expect(await slugs()).toEqual(['edge/edge.php']);
    } finally {
      s.services.siteData.now = Date.now;
    }
  });
});

describe('TLS certificate status', () => {
  let openssl = true;
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
  } catch {
    openssl = false;
  }
  const needsOpenssl = openssl ? 'with a certificate made by openssl' : 'SKIPPED: openssl is not installed, no certificate can be made';

  const dir = tempDir('sitefleet-tls-');
  let server: HttpsServer | undefined;
  let wrongName: HttpsServer | undefined;
  let silent: TcpServer;
  let cert = '';
  let wrongCert = '';
  const port = (x: { address(): unknown }) => (x.address() as AddressInfo).port;
  const listen = (x: HttpsServer | TcpServer) => new Promise<void>((r) => x.listen(0, '127.0.0.1', () => r()));

  function makeCert(name: string, san: string): { key: string; cert: string } {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, `${name}.key`),
        '-out',
        join(dir, `${name}.pem`),
        '-days',
        '30',
        '-subj',
        '/CN=sitefleet-test',
        '-addext',
        `subjectAltName=${san}`,
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, `${name}.key`), 'utf8'), cert: readFileSync(join(dir, `${name}.pem`), 'utf8') };
  }

  beforeAll(async () => {
    silent = createTcpServer(() => {
      /* accepts, never speaks TLS */
    });
    await listen(silent);
    if (!openssl) {
      console.warn('site-data.test.ts: openssl not found; the https certificate cases are skipped.');
      return;
    }
    const good = makeCert('good', 'IP:127.0.0.1,DNS:localhost');
    cert = good.cert;
    server = createHttpsServer(good, (_req, res) => res.end('ok'));
    await listen(server);
    const other = makeCert('other', 'DNS:other.example');
    wrongCert = other.cert;
    wrongName = createHttpsServer(other, (_req, res) => res.end('ok'));
    await listen(wrongName);
  });
  afterAll(() => {
    server?.close();
    wrongName?.close();
    silent.close();
  });

  const expiry = (pem: string) => new Date(new X509Certificate(pem).validTo).toISOString().slice(0, 10);

  it.skipIf(!openssl)(`reports a self-signed certificate as not valid, with its expiry date (${needsOpenssl})`, async () => {
    const s = await startServer();
    try {
      await seedSites(s.services, 1, () => ({ url: `https://127.0.0.1:${port(server!)}/` }));
      const r = await s.ability('get-site-security-v1', { site_id_or_domain: 1 });
      expect(r.status).toBe(200);
      expect(r.body.ssl_status).toEqual({ valid: false, expires: expiry(cert), error: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
      const rest = await s.rest('/sites/1/security');
      expect(rest.body.data.ssl_status).toMatchObject({ valid: false, expires: expiry(cert) });
    } finally {
      await s.close();
    }
  });

  it.skipIf(!openssl)(
    `reports a trusted certificate for the right name as valid, and the wrong name as not (${needsOpenssl})`,
    async () => {
      expect(await certificateStatus(`https://127.0.0.1:${port(server!)}/`, { ca: cert, allowPrivate: true })).toEqual({
        valid: true,
        expires: expiry(cert),
        error: null,
      });
      expect(await certificateStatus(`https://localhost:${port(server!)}/blog/`, { ca: cert, allowPrivate: true })).toMatchObject({
        valid: true,
      });
      const wrong = await certificateStatus(`https://127.0.0.1:${port(wrongName!)}/`, { ca: wrongCert, allowPrivate: true });
      expect(wrong).toMatchObject({ valid: false, expires: expiry(wrongCert), error: 'ERR_TLS_CERT_ALTNAME_INVALID' });
    },
  );

  it('says an http: site is never valid, without connecting', async () => {
    expect(await certificateStatus('http://127.0.0.1:9/')).toEqual({ valid: false, expires: null, error: 'not served over https' });
  });

  it('never throws: nothing listening, a host that never answers, a bad URL', async () => {
    const closed = await certificateStatus('https://127.0.0.1:9/', { allowPrivate: true });
    expect(closed).toMatchObject({ valid: false, expires: null });
    expect(closed.error).toBe('ECONNREFUSED');
    const started = Date.now();
    expect(await certificateStatus(`https://127.0.0.1:${port(silent)}/`, { timeoutMs: 300, allowPrivate: true })).toEqual({
      valid: false,
      expires: null,
      error: 'timeout',
    });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await certificateStatus('not a url')).toMatchObject({ valid: false, expires: null });
  });
});
