// Conditional GETs and the answer cache (issue 19): ETag + Cache-Control on GET answers of the REST and abilities
// doors, 304 for a matching If-None-Match, and a changed ETag after any write that changes the answer — in this
// process or another one on the same data dir.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  AnswerCache,
  MAX_ENTRY_BYTES,
  matches,
  PAGE_CACHE_BYTES,
  PAGE_CACHE_ENTRIES,
  storeFingerprint,
  type Representation,
} from '../src/http/conditional.js';
import { seedSites, startServer, type TestServer } from './support/server.js';
import { CLI } from './support/process.js';
import { captureLogs } from './support/logs.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
  await seedSites(s.services, 120);
});
afterAll(async () => {
  await s.close();
});

const LIST = '/sites?per_page=100';

describe('REST conditional GETs', () => {
  it('sends an ETag and Cache-Control, and 304 with no body for a matching If-None-Match', async () => {
    const a = await s.rest(LIST);
    expect(a.status).toBe(200);
    expect(a.body.data ?? a.body).toBeTruthy();
    const etag = a.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(a.headers.get('cache-control')).toBe('private, no-cache');
    const b = await s.rest(LIST, { headers: { 'if-none-match': etag } });
    expect(b.status).toBe(304);
    expect(b.body).toBeNull();
    expect(b.headers.get('etag')).toBe(etag);
    // A list of tags, weak or not, matches; another tag does not.
    expect((await s.rest(LIST, { headers: { 'if-none-match': `"x", W/${etag}` } })).status).toBe(304);
    const other = await s.rest(LIST, { headers: { 'if-none-match': '"nope"' } });
    expect(other.status).toBe(200);
    expect(other.body).toEqual(a.body);
    // Another query is another answer with another tag.
    const page2 = await s.rest('/sites?per_page=100&page=2', { headers: { 'if-none-match': etag } });
    expect(page2.status).toBe(200);
    expect(page2.headers.get('etag')).not.toBe(etag);
    expect(page2.headers.get('x-wp-total')).toBe('120');
  });

  it('changes the ETag after a write here that changes the answer, and keeps it after one that does not', async () => {
    const etag = (await s.rest(LIST)).headers.get('etag')!;
    const edit = await s.rest('/sites/5/edit', { method: 'POST', json: { name: 'Renamed five' } });
    expect(edit.status).toBe(200);
    const after = await s.rest(LIST, { headers: { 'if-none-match': etag } });
    expect(after.status).toBe(200);
    expect(after.headers.get('etag')).not.toBe(etag);
    expect(JSON.stringify(after.body)).toContain('Renamed five');
    // A write elsewhere (a new tag) leaves the site list as it was: same tag, 304.
    const now = after.headers.get('etag')!;
    expect((await s.rest('/tags/add', { method: 'POST', json: { name: 'unrelated' } })).status).toBeLessThan(300);
    expect((await s.rest(LIST, { headers: { 'if-none-match': now } })).status).toBe(304);
  });

  it('changes the ETag after a write by another process on the same data dir', async () => {
    if (s.databaseUrl) return; // the pg lane's second process would need the same database URL (covered by the lowdb run)
    const before = await s.rest('/sites/7');
    const etag = before.headers.get('etag')!;
    const listTag = (await s.rest(LIST)).headers.get('etag')!;
    expect((await s.rest(LIST, { headers: { 'if-none-match': listTag } })).status).toBe(304);
    const client = new Client({ name: 'other-process', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'mcp', '--data-dir', s.dataDir],
        env: { ...process.env, SITEFLEET_LOG: 'warn' } as Record<string, string>,
      }),
    );
    try {
      const r = await client.callTool({ name: 'update-site-v1', arguments: { site_id_or_domain: 7, name: 'Seven elsewhere' } });
      expect(r.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    const one = await s.rest('/sites/7', { headers: { 'if-none-match': etag } });
    expect(one.status).toBe(200);
    expect(one.body.data.name).toBe('Seven elsewhere');
    const list = await s.rest(LIST, { headers: { 'if-none-match': listTag } });
    expect(list.status).toBe(200);
    expect(JSON.stringify(list.body)).toContain('Seven elsewhere');
  });

  it('answers HEAD with the headers and no body, and errors without an ETag', async () => {
    const head = await fetch(`${s.restBase}${LIST}`, { method: 'HEAD', headers: { authorization: `Bearer ${s.creds.key.read}` } });
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBeTruthy();
    expect(await head.text()).toBe('');
    const bad = await s.rest('/sites?per_page=abc');
    expect(bad.status).toBe(400);
    expect(bad.headers.get('etag')).toBeNull();
    const missing = await s.rest('/sites/99999');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('etag')).toBeNull();
  });

  it('answers a GET with a body as the URL alone: the body is never read (issue #35), so no cached answer can differ', async () => {
    const plain = await s.rest('/sites?per_page=5');
    expect(plain.body.data.items ?? plain.body.data).toBeTruthy();
    // fetch sends no body with GET; node:http does, as some clients do. GET takes no body: its search is not read.
    const { request } = await import('node:http');
    const u = new URL(`${s.restBase}/sites?per_page=5`);
    const body = 'search=site11';
    const answer = await new Promise<{ status: number; etag: string | undefined; text: string }>((resolve, reject) => {
      const req = request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname + u.search,
          method: 'GET',
          headers: {
            authorization: `Bearer ${s.creds.key.read}`,
            'content-type': 'application/x-www-form-urlencoded',
            'content-length': String(body.length),
          },
        },
        (res) => {
          let t = '';
          res.on('data', (d) => {
            t += d;
          });
          res.on('end', () => resolve({ status: res.statusCode!, etag: res.headers.etag, text: t }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(answer.status).toBe(200);
    expect(answer.etag).toBe(plain.headers.get('etag'));
    expect(JSON.parse(answer.text)).toEqual(plain.body);
  });
});

describe('abilities door conditional GETs', () => {
  it('a GET run of list-sites-v1: ETag, 304, and a new ETag after a write', async () => {
    const q = 'input[per_page]=100';
    const a = await s.ability('list-sites-v1', undefined, { method: 'GET', query: q });
    expect(a.status).toBe(200);
    const etag = a.headers.get('etag')!;
    expect(a.headers.get('cache-control')).toBe('private, no-cache');
    const url = `${s.abilitiesBase}/abilities/svc/list-sites-v1/run?${q}`;
    const again = await fetch(url, { headers: { authorization: s.creds.admin, 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    // Site 1 is on the first page (the list is ordered by URL).
    expect((await s.rest('/sites/1/edit', { method: 'POST', json: { name: 'One new' } })).status).toBe(200);
    const changed = await fetch(url, { headers: { authorization: s.creds.admin, 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(await changed.text()).toContain('One new');
    // A viewer gets the same answer (its own cache entry) and a bad input is still refused.
    const viewer = await fetch(url, { headers: { authorization: s.creds.viewer } });
    expect(viewer.status).toBe(200);
    const bad = await s.ability('list-sites-v1', undefined, { method: 'GET', query: 'input[per_page]=1000' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('etag')).toBeNull();
  });

  it('discovery answers are conditional too', async () => {
    for (const path of ['', '/abilities', '/abilities/svc/list-sites-v1', '/categories', '/categories/svc-sites']) {
      const a = await fetch(`${s.abilitiesBase}${path}`, { headers: { authorization: s.creds.admin } });
      expect(a.status, path).toBe(200);
      const etag = a.headers.get('etag')!;
      expect(etag, path).toBeTruthy();
      const b = await fetch(`${s.abilitiesBase}${path}`, { headers: { authorization: s.creds.admin, 'if-none-match': etag } });
      expect(b.status, path).toBe(304);
    }
  });

  it('a GET run of an ability whose answer is not store-pure is still conditional', async () => {
    const a = await s.ability('list-tags-v1', undefined, { method: 'GET' });
    expect(a.status).toBe(200);
    const url = `${s.abilitiesBase}/abilities/svc/list-tags-v1/run`;
    const b = await fetch(url, { headers: { authorization: s.creds.admin, 'if-none-match': a.headers.get('etag')! } });
    expect(b.status).toBe(304);
    await s.rest('/tags/add', { method: 'POST', json: { name: 'another-tag' } });
    const c = await fetch(url, { headers: { authorization: s.creds.admin, 'if-none-match': a.headers.get('etag')! } });
    expect(c.status).toBe(200);
  });
});

describe('the cached fast path keeps every check', () => {
  it('a revoked key is refused even for an answer it had cached; other keys still get it', async () => {
    const k = await s.services.auth.createKey('short-lived', 'read');
    const get = (token: string, etag?: string) =>
      fetch(`${s.restBase}${LIST}`, { headers: { authorization: `Bearer ${token}`, ...(etag ? { 'if-none-match': etag } : {}) } });
    const first = await get(k.token);
    expect(first.status).toBe(200);
    expect((await get(k.token, first.headers.get('etag')!)).status).toBe(304);
    await s.services.auth.revokeKey(k.key.id);
    expect((await get(k.token)).status).toBe(401);
    expect((await get(k.token, first.headers.get('etag')!)).status).toBe(401);
    expect((await get(s.creds.key.read)).status).toBe(200);
  });

  it('a write-only key may not read a page another key has cached', async () => {
    expect((await s.rest(LIST, { token: s.creds.key.read })).status).toBe(200);
    expect((await s.rest(LIST, { token: s.creds.key.write })).status).toBe(403);
  });

  it('an address past the failed-login limit waits (429) even for an answer cached for a valid key', async () => {
    const t = await startServer({ config: { loginFailureLimit: '3' } });
    try {
      await seedSites(t.services, 3);
      const get = (token: string) => fetch(`${t.restBase}/sites`, { headers: { authorization: `Bearer ${token}` } });
      expect((await get(t.creds.key.read)).status).toBe(200);
      expect((await get(t.creds.key.read)).status).toBe(200); // from the cache
      for (let i = 0; i < 4; i++) expect((await get(`sf_000000000000_${'x'.repeat(32)}`)).status).toBe(401);
      const after = await get(t.creds.key.read);
      expect(after.status).toBe(429);
      expect(after.headers.get('retry-after')).toBeTruthy();
    } finally {
      await t.close();
    }
  });

  it('logs a request answered from the cache like any other, with nosniff', async () => {
    await s.rest(LIST);
    let res: Response | undefined;
    const logs = await captureLogs(async () => {
      res = await fetch(`${s.restBase}${LIST}`, { headers: { authorization: `Bearer ${s.creds.key.read_write}` } });
    });
    expect(res!.status).toBe(200);
    expect(res!.headers.get('x-content-type-options')).toBe('nosniff');
    const line = logs
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((l) => l.msg === 'request' || l.message === 'request');
    expect(line).toMatchObject({ method: 'GET', path: '/wp-json/svc/v2/sites', status: 200, who: 'rw' });
  });

  it('HEAD on an ability run answers the same before and after its GET answer is cached', async () => {
    const url = `${s.abilitiesBase}/abilities/svc/list-sites-v1/run?input[per_page]=7`;
    const before = await fetch(url, { method: 'HEAD', headers: { authorization: s.creds.admin } });
    expect((await fetch(url, { headers: { authorization: s.creds.admin } })).status).toBe(200);
    const after = await fetch(url, { method: 'HEAD', headers: { authorization: s.creds.admin } });
    expect(after.status).toBe(before.status);
  });
});

describe('what empties the answer cache', () => {
  it('a monitor or audit write keeps the store fingerprint; a site or tag write changes it', async () => {
    const store = s.services.store;
    const fp = storeFingerprint(store);
    const settings = await s.rest('/monitors/9/settings', { method: 'PUT', json: { keyword: 'cache-test' } });
    expect(settings.status).toBe(200);
    expect(store.version('monitors')).toBeGreaterThan(0);
    // A refused call writes the audit log only.
    expect((await s.rest('/sites/9/edit', { method: 'POST', json: { name: 1 } })).status).toBe(400);
    expect(storeFingerprint(store)).toBe(fp);
    expect((await s.rest('/sites/9/edit', { method: 'POST', json: { name: 'Nine, renamed' } })).status).toBe(200);
    const afterSite = storeFingerprint(store);
    expect(afterSite).not.toBe(fp);
    expect((await s.rest('/tags/add', { method: 'POST', json: { name: 'fingerprinted' } })).status).toBeLessThan(300);
    expect(storeFingerprint(store)).not.toBe(afterSite);
  });
});

describe('the answer cache is bounded', () => {
  const rep = (bytes: number): Representation => ({ body: Buffer.alloc(bytes, 120), etag: '"e"', headers: [] });

  it(`keeps at most ${PAGE_CACHE_ENTRIES} answers, dropping the least recently used`, () => {
    const c = new AnswerCache();
    for (let i = 0; i <= PAGE_CACHE_ENTRIES; i++) c.set(`k${i}`, 'g1', rep(10));
    expect(c.entries).toBe(PAGE_CACHE_ENTRIES);
    expect(c.get('k0', 'g1')).toBeUndefined();
    expect(c.get(`k${PAGE_CACHE_ENTRIES}`, 'g1')).toBeDefined();
  });

  it(`keeps at most ${PAGE_CACHE_BYTES} bytes and no answer over ${MAX_ENTRY_BYTES} bytes`, () => {
    const c = new AnswerCache();
    const n = Math.floor(PAGE_CACHE_BYTES / MAX_ENTRY_BYTES) + 1;
    for (let i = 0; i < n; i++) c.set(`k${i}`, 'g', rep(MAX_ENTRY_BYTES - 10));
    expect(c.bytes).toBeLessThanOrEqual(PAGE_CACHE_BYTES);
    expect(c.entries).toBe(n - 1);
    c.set('big', 'g', rep(MAX_ENTRY_BYTES + 1));
    expect(c.get('big', 'g')).toBeUndefined();
  });

  it('drops an answer of another store fingerprint on sight', () => {
    const c = new AnswerCache();
    c.set('k', 'g1', rep(100));
    expect(c.get('k', 'g2')).toBeUndefined();
    expect(c.entries).toBe(0);
    expect(c.bytes).toBe(0);
  });

  it('lets go of every answer of a fingerprint the store has left once an answer of another is kept', () => {
    const c = new AnswerCache();
    for (let i = 0; i < 10; i++) c.set(`k${i}`, 'g1', rep(1000));
    expect(c.entries).toBe(10);
    c.set('k0', 'g2', rep(500));
    expect([c.entries, c.bytes]).toEqual([1, 502]);
    expect(c.get('k0', 'g2')?.body.length).toBe(500);
    // Answers of one fingerprint stay together; an answer of the one just left clears them (a request that began
    // before the write), and is itself gone at the next answer kept for the newer one: nothing stale is ever sent.
    c.set('k1', 'g2', rep(500));
    c.set('k9', 'g1', rep(100));
    expect([c.get('k0', 'g2'), c.get('k1', 'g2')]).toEqual([undefined, undefined]);
    c.set('k2', 'g2', rep(500));
    expect([c.entries, c.get('k9', 'g1'), c.get('k2', 'g2')?.body.length]).toEqual([1, undefined, 500]);
  });

  it('reads If-None-Match lists', () => {
    expect(matches('"a", "b"', '"b"')).toBe(true);
    expect(matches('W/"b"', '"b"')).toBe(true);
    expect(matches('*', '"b"')).toBe(true);
    expect(matches('"a"', '"b"')).toBe(false);
    expect(matches(undefined, '"b"')).toBe(false);
  });
});
