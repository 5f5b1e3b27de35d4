// The health probe's bounds against a real HTTP server on loopback: redirects followed by hand up to
// PROBE_MAX_REDIRECTS (one more fails), bytes read up to PROBE_MAX_BYTES (a marker just past them counts as missing),
// the time bound, the address policy on every hop, and the site's HTTP auth kept to the site's own origin.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HealthProber, PROBE_MAX_BYTES, PROBE_MAX_REDIRECTS, siteTitleOf, pageTitle } from '../src/domain/health-probe.js';

let server: Server;
let other: Server;
let base: string;
let otherBase: string;
const seen: Array<{ url: string; auth: string | undefined }> = [];
const prober = new HealthProber({ allowPrivate: true, connections: 4 });

const listen = (s: Server) =>
  new Promise<string>((r) => s.listen(0, '127.0.0.1', () => r(`http://127.0.0.1:${(s.address() as AddressInfo).port}`)));

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    const url = req.url ?? '/';
    seen.push({ url, auth: req.headers.authorization });
    const hops = /^\/hops\/(\d+)$/.exec(url);
    if (hops) {
      const n = Number(hops[1]);
      if (n === 0) return res.end('<html><head><title>Arrived &#8211; here</title></head><body>MARK</body></html>');
      res.writeHead(302, { location: `/hops/${n - 1}` });
      return res.end();
    }
    const pad = /^\/pad\/(\d+)$/.exec(url);
    if (pad) return res.end('x'.repeat(Number(pad[1])) + 'MARK');
    if (url === '/hang') return; // never answers
    if (url === '/away') {
      res.writeHead(301, { location: `${otherBase}/landing` });
      return res.end();
    }
    if (url === '/ftp') {
      res.writeHead(302, { location: 'ftp://127.0.0.1/x' });
      return res.end();
    }
    res.writeHead(404);
    res.end('nothing');
  });
  other = createServer((req, res) => {
    seen.push({ url: `other${req.url}`, auth: req.headers.authorization });
    res.end('<title>Other</title>');
  });
  base = await listen(server);
  otherBase = await listen(other);
});
afterAll(async () => {
  await prober.close();
  server.closeAllConnections();
  other.closeAllConnections();
  await new Promise((r) => server.close(r));
  await new Promise((r) => other.close(r));
});

const page = (path: string, marker = '', extra: { timeoutMs?: number; httpUser?: string; httpPass?: string } = {}) =>
  prober.page({ url: `${base}${path}`, marker, sslVerify: true, ...extra });

describe('the health probe of one page', () => {
  it(`follows up to ${PROBE_MAX_REDIRECTS} redirects by hand; one more is too many`, async () => {
    const ok = await page(`/hops/${PROBE_MAX_REDIRECTS}`, 'mark');
    expect(ok).toMatchObject({
      ok: true,
      redirects: PROBE_MAX_REDIRECTS,
      http_status: 200,
      final_url: `${base}/hops/0`,
      marker_found: true,
    });
    expect(ok.title).toBe('Arrived – here');
    const over = await page(`/hops/${PROBE_MAX_REDIRECTS + 1}`);
    expect(over).toMatchObject({ ok: false, problem: 'too_many_redirects', http_status: 302, redirects: PROBE_MAX_REDIRECTS });
  });

  it(`reads at most ${PROBE_MAX_BYTES} bytes: a marker ending at the bound is found, one byte later it is missing`, async () => {
    const within = await page(`/pad/${PROBE_MAX_BYTES - 4}`, 'MARK');
    expect(within).toMatchObject({ ok: true, marker_found: true, bytes: PROBE_MAX_BYTES });
    const past = await page(`/pad/${PROBE_MAX_BYTES - 3}`, 'MARK');
    expect(past).toMatchObject({ ok: false, problem: 'content_missing', bytes: PROBE_MAX_BYTES, marker_found: false });
  });

  it('gives up at its time bound, with the cause', async () => {
    const r = await page('/hang', '', { timeoutMs: 300 });
    expect(r).toMatchObject({ ok: false, problem: 'timeout', http_status: 0 });
    expect(r.ms).toBeLessThan(3000);
  });

  it("sends the site's HTTP auth to the site's own origin only, never to where a redirect points", async () => {
    seen.length = 0;
    const r = await page('/away', '', { httpUser: 'u', httpPass: 'p' });
    expect(r).toMatchObject({ ok: true, redirects: 1, final_url: `${otherBase}/landing` });
    expect(seen).toEqual([
      { url: '/away', auth: `Basic ${Buffer.from('u:p').toString('base64')}` },
      { url: 'other/landing', auth: undefined },
    ]);
  });

  it('refuses a redirect to something other than HTTP(S)', async () => {
    expect(await page('/ftp')).toMatchObject({ ok: false, problem: 'http_status', message: 'HTTP 302 to a non-HTTP address.' });
  });

  it('goes through the address policy: without --allow-private-sites a loopback page is refused, nothing sent', async () => {
    const strict = new HealthProber({ allowPrivate: false, connections: 1 });
    seen.length = 0;
    const r = await strict.page({ url: `${base}/hops/0`, marker: '', sslVerify: true });
    await strict.close();
    expect(r).toMatchObject({ ok: false, problem: 'blocked', http_status: 0 });
    expect(seen).toEqual([]);
  });

  it("takes the site's title from WordPress's <title>: the part before the separator", () => {
    expect(siteTitleOf(pageTitle('<title>Real Child 1 &#8211; real-child kit</title>'))).toBe('Real Child 1');
    expect(siteTitleOf(pageTitle('<title>Shop | Tools &amp; More</title>'))).toBe('Shop');
    expect(siteTitleOf(pageTitle('<title>  Only   a title </title>'))).toBe('Only a title');
    expect(siteTitleOf(pageTitle('<p>no title</p>'))).toBeNull();
  });
});
