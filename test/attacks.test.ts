// Findings of the attack review (issue #18), one describe each: every test here failed on the code before its fix.
import { existsSync, mkdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempName } from '../src/store/durable-file.js';
import { FailureCounter, LoginThrottle } from '../src/http/auth.js';
import { JOURNAL_MAX, LowdbStore, Store } from '../src/store/store.js';
import type { JobRecord } from '../src/store/records.js';
import { startServer, tempDir } from './support/server.js';
import { connectMcp } from './support/mcp.js';
import { MAX_SUBSCRIPTIONS } from '../src/mcp/server.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { until as waitUntil } from './support/wait.js';
import { logged } from './support/logs.js';

/** Makes the next write of `file` (in this process) hit a full disk: its temp name points at /dev/full. */
function fullDiskFor(file: string): () => void {
  const tmp = tempName(file);
  symlinkSync('/dev/full', tmp);
  return () => rmSync(tmp, { force: true });
}

/** Makes every write of `file` fail until undone: a directory stands at its temp name (once no write is using it). */
async function brokenDiskFor(file: string): Promise<() => void> {
  const tmp = tempName(file);
  for (;;) {
    try {
      mkdirSync(tmp);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      await new Promise((r) => setTimeout(r, 1));
    }
  }
  return () => rmSync(tmp, { recursive: true, force: true });
}

const until = <T>(fn: () => Promise<T> | T, ok: (v: T) => boolean, ms = 10_000) => waitUntil(fn, ok, ms);

describe('a commit that cannot reach the disk (finding 3)', () => {
  let f: Fleet;
  beforeAll(async () => {
    f = await startFleet({ sim: { sites: 3 } });
    await registerSites(f, 3);
  });
  afterAll(async () => {
    await f.close();
  });

  it('leaves the site, its keys and its data in place when removing it fails, and says nothing was changed', async () => {
    const dir = f.s.dataDir;
    expect(existsSync(join(dir, 'secrets', '3.json'))).toBe(true);
    expect(existsSync(join(dir, 'site-data', '3.json'))).toBe(true);
    const undo = fullDiskFor(join(dir, 'sites.0.json'));
    let r;
    try {
      r = await f.s.rest('/sites/3/remove', { method: 'DELETE' });
    } finally {
      undo();
    }
    expect(r.status).toBe(503);
    expect(r.body.code).toBe('svc_store_unavailable');
    expect(r.body.message).toMatch(/disk is full; nothing was changed/);
    expect(existsSync(join(dir, 'secrets', '3.json'))).toBe(true);
    expect(existsSync(join(dir, 'site-data', '3.json'))).toBe(true);
    expect((await f.s.rest('/sites/3')).status).toBe(200);
    const sync = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [3] });
    expect(sync.body.total_synced).toBe(1);
    // And once the disk has room again, the same removal goes through, keys and all.
    const again = await f.s.rest('/sites/3/remove', { method: 'DELETE' });
    expect(again.status).toBe(200);
    expect(existsSync(join(dir, 'secrets', '3.json'))).toBe(false);
  });

  it('a full disk while adding a site keeps no half-registered site', async () => {
    const dir = f.s.dataDir;
    const undo = fullDiskFor(join(dir, 'meta.json'));
    const info = f.sim.sites[2]!;
    let r;
    try {
      r = await f.s.rest('/sites/add', { method: 'POST', json: { url: info.url, admin: info.admin, admin_password: info.password } });
    } finally {
      undo();
    }
    expect(r.status).toBe(503);
    const list = await f.s.rest('/sites?per_page=100');
    expect(list.body.data.map((s: { url: string }) => s.url)).not.toContain(info.url.replace(/\/$/, ''));
  });
});

describe('a job whose writes fail (finding 4)', () => {
  let f: Fleet;
  beforeAll(async () => {
    f = await startFleet({ sim: { sites: 3, latencyMs: 400 }, config: { queueThreshold: '2' } });
    await registerSites(f, 3);
  });
  afterAll(async () => {
    await f.close();
  });

  it('ends once the disk takes writes again, instead of staying processing until a restart', async () => {
    const q = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [1, 2, 3] });
    expect(q.body.queued).toBe(true);
    const id = q.body.job_id as string;
    const running = await until(
      () => f.s.rest(`/jobs/${id}`),
      (r) => r.body?.data?.status === 'processing',
    );
    expect(running.body.data.status).toBe('processing');
    // Every commit fails while the children answer: the per-site records, the final write and the hand-back.
    const failed = logged(new RegExp(`"msg":"job failed","job":"${id}"`));
    // A records-only commit appends to journal.log (an open handle) and leaves meta.json alone: have the store take
    // every commit into the shards while the disk is broken, so that each one writes meta.json and meets it. A commit
    // with a blob (the same child key again) empties the journal first.
    const lowdb = f.s.services.store as LowdbStore;
    lowdb.journalMax = 0;
    const key = await lowdb.readBlob('secrets', 1);
    await lowdb.write((tx) => tx.putBlob('secrets', 1, key));
    const undoDisk = await brokenDiskFor(join(f.s.dataDir, 'meta.json'));
    const undo = () => {
      undoDisk();
      lowdb.journalMax = JOURNAL_MAX;
    };
    // The disk stays broken until the job has failed on it (its records and final write refused) and its hand-back, queued
    // as it logs, is refused too (a write queued behind it is), not for a span of time.
    let behind: string;
    try {
      await failed;
      const { store } = f.s.services;
      const row = [...store.all<JobRecord>('jobs')].find((j) => j.job_id === id)!;
      behind = await store
        .write((tx) => tx.put('jobs', tx.get<JobRecord>('jobs', row.id)!))
        .then(
          () => 'kept',
          () => 'refused',
        );
    } finally {
      undo();
    }
    expect(behind).toBe('refused');
    const done = await until(
      () => f.s.rest(`/jobs/${id}`),
      (r) => r.body?.data?.status === 'completed',
    );
    expect(done.body.data).toMatchObject({ status: 'completed', processed: 3, succeeded: 3 });
  });
});

describe('the failed-login throttle', () => {
  it('is not reset by one good login among the bad ones (finding 7)', async () => {
    const t = await startServer({ config: { loginFailureLimit: '30' } as never });
    try {
      const statuses: number[] = [];
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 29; i++) {
          statuses.push(
            (await fetch(`${t.restBase}/sites`, { headers: { authorization: 'Bearer sf_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } }))
              .status,
          );
        }
        statuses.push((await fetch(`${t.restBase}/sites`, { headers: { authorization: `Bearer ${t.creds.key.read_write}` } })).status);
      }
      expect(statuses.slice(0, 30).filter((x) => x === 401)).toHaveLength(29);
      expect(statuses[29]).toBe(200);
      expect(statuses).toContain(429);
      expect(statuses.filter((x) => x === 401).length).toBeLessThanOrEqual(31);
    } finally {
      await t.close();
    }
  });

  it('counts failures per account across addresses too', () => {
    const th = new LoginThrottle(3);
    for (let i = 0; i < 31; i++) th.failed(`10.0.0.${i}`, 'user:admin');
    expect(th.waitFor('10.9.9.9', 'user:admin')).toBeGreaterThan(0);
    expect(th.waitFor('10.9.9.9', 'user:other')).toBe(0);
  });

  it('never forgets a blocked address when a flood from 10,001 others fills its table (finding 8)', () => {
    const c = new FailureCounter(30);
    const now = Date.now();
    for (let i = 0; i < 40; i++) c.failed('203.0.113.7', now);
    expect(c.waitFor('203.0.113.7', now)).toBeGreaterThan(0);
    for (let i = 0; i < 10_001; i++) c.failed(`198.51.${i >> 8}.${i & 255}`, now + 1);
    expect(c.waitFor('203.0.113.7', now + 2)).toBeGreaterThan(0);
    expect(c.size).toBeLessThanOrEqual(10_000);
  });

  it('stays bounded when every entry is blocked, and keeps them all', () => {
    const c = new FailureCounter(1, 60_000, 100);
    const now = Date.now();
    for (let i = 0; i < 100; i++) {
      c.failed(`a${i}`, now);
      c.failed(`a${i}`, now);
    }
    for (let i = 0; i < 50; i++) c.failed(`b${i}`, now);
    expect(c.size).toBe(100);
    for (let i = 0; i < 100; i++) expect(c.waitFor(`a${i}`, now)).toBeGreaterThan(0);
  });
});

describe('API key hashes (finding 10)', () => {
  it('are salted per key, and a key made before salts existed keeps working after the migration', async () => {
    const dir = tempDir();
    const store = await Store.open(dir);
    const secret = 'A'.repeat(32);
    // A key as format 1 stored it: an unsalted sha256 of the secret.
    const { createHash } = await import('node:crypto');
    await store.write((tx) =>
      tx.insert('keys', {
        name: 'old',
        permissions: 'read_write',
        key_id: 'abcdefabcdef',
        secret_hash: createHash('sha256').update(secret).digest('hex'),
        created_at: new Date().toISOString(),
        revoked: false,
      }),
    );
    await store.close();
    const { readFileSync, writeFileSync } = await import('node:fs');
    const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8'));
    writeFileSync(join(dir, 'meta.json'), JSON.stringify({ ...meta, format: 1 }));
    const t = await startServer({ dataDir: dir });
    try {
      const ok = await fetch(`${t.restBase}/sites`, { headers: { authorization: `Bearer sf_abcdefabcdef_${secret}` } });
      expect(ok.status).toBe(200);
      const keys = JSON.parse(readFileSync(join(dir, 'keys.json'), 'utf8')).records as Array<{
        key_id: string;
        salt: string;
        secret_hash: string;
      }>;
      expect(keys.every((k) => /^[0-9a-f]{32}$/.test(k.salt))).toBe(true);
      expect(new Set(keys.map((k) => k.salt)).size).toBe(keys.length);
      const old = keys.find((k) => k.key_id === 'abcdefabcdef')!;
      expect(old.secret_hash).not.toBe(createHash('sha256').update(secret).digest('hex'));
      const wrong = await fetch(`${t.restBase}/sites`, { headers: { authorization: `Bearer sf_abcdefabcdef_${'B'.repeat(32)}` } });
      expect(wrong.status).toBe(401);
    } finally {
      await t.close();
    }
  });
});

describe('the Host header (finding 9)', () => {
  it('a malformed Host is no 500 on abilities discovery, and no Host is reflected into links', async () => {
    const t = await startServer();
    const { request } = await import('node:http');
    const get = (host: string) =>
      new Promise<{ status: number; link: string; body: string }>((resolve, reject) => {
        const u = new URL(`${t.abilitiesBase}/abilities?per_page=5`);
        const req = request(
          { host: u.hostname, port: u.port, path: u.pathname + u.search, headers: { host, authorization: t.creds.admin } },
          (res) => {
            let body = '';
            res.on('data', (c) => {
              body += c;
            });
            res.on('end', () => resolve({ status: res.statusCode!, link: String(res.headers.link ?? ''), body }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    try {
      for (const host of ['[::1', 'a b', 'exa mple.com:99999', '%%%']) {
        const r = await get(host);
        expect(r.status, host).toBeLessThan(500);
      }
      const evil = await get('evil.example');
      expect(evil.status).toBe(200);
      expect(evil.link).toContain(t.url);
      expect(evil.link + evil.body).not.toContain('evil.example');
    } finally {
      await t.close();
    }
  });
});

describe('a child that sends huge texts (finding 5)', () => {
  let f: Fleet;
  beforeAll(async () => {
    f = await startFleet({ sim: { sites: 2 } });
    await registerSites(f, 2);
  });
  afterAll(async () => {
    await f.close();
  });

  it('stores and echoes a 14 MB error text and a 6 MB version cut to a bound, and the site shard stays small', async () => {
    const shard = join(f.s.dataDir, 'sites.0.json');
    f.sim.setFault(1, { type: 'long_error', bytes: 14 * 1024 * 1024 });
    let r;
    try {
      r = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [1] });
    } finally {
      f.sim.setFault(1, null);
    }
    expect(r.body.errors[0].message.length).toBeLessThanOrEqual(1000);
    expect(r.body.errors[0].message).toMatch(/truncated by sitefleet/);
    const site = (await f.s.rest('/sites/1?full_data=1')).body.data;
    expect(JSON.stringify(site).length).toBeLessThan(10_000);
    expect(statSync(shard).size).toBeLessThan(50_000);

    f.sim.setFault(2, { type: 'long_text', bytes: 6 * 1024 * 1024 }); // twice (version and a name) within the 20 MiB reply cap
    try {
      const ok = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [2] });
      expect(ok.body.total_synced, JSON.stringify(ok.body.errors)).toBe(1);
    } finally {
      f.sim.setFault(2, null);
    }
    const two = (await f.s.rest('/sites/2?full_data=1')).body.data;
    expect(String(two.wp_version ?? two.wpversion ?? '').length).toBeLessThanOrEqual(2000);
    expect(statSync(shard).size).toBeLessThan(50_000);
    const plugins = (await f.s.rest('/sites/2/plugins')).body.data as Array<{ name: string }>;
    expect(Math.max(...plugins.map((p) => p.name.length))).toBeLessThanOrEqual(2000);
  });
});

describe('MCP job subscriptions (finding 6)', () => {
  let f: Fleet;
  beforeAll(async () => {
    f = await startFleet({ sim: { sites: 2 } });
    await registerSites(f, 2);
    await f.s.services.jobs.stop(); // jobs stay queued: they do not finish under the test
  });
  afterAll(async () => {
    await f.close();
  });

  it('holds one subscription per job however its id is percent-encoded, and at most MAX_SUBSCRIPTIONS jobs a session', async () => {
    const c = await connectMcp(f.s);
    try {
      const job = await f.s.services.jobs.enqueue('check', [1, 2]);
      const id = job.job_id;
      // 2,000 spellings of the same id: each subscribe is accepted, but they are one subscription.
      for (let i = 0; i < 2000; i++) {
        const spelled = [...id].map((ch, k) => ((i >> (k % 11)) & 1 ? `%${ch.charCodeAt(0).toString(16).padStart(2, '0')}` : ch)).join('');
        await c.client.subscribeResource({ uri: `sitefleet://jobs/${spelled}` });
      }
      const others = [];
      for (let i = 1; i < MAX_SUBSCRIPTIONS; i++) others.push(await f.s.services.jobs.enqueue('check', [1]));
      for (const j of others) await c.client.subscribeResource({ uri: `sitefleet://jobs/${j.job_id}` });
      const extra = await f.s.services.jobs.enqueue('check', [2]);
      await expect(c.client.subscribeResource({ uri: `sitefleet://jobs/${extra.job_id}` })).rejects.toThrow(/already follows 100 jobs/);
      // Unsubscribing one spelling frees the job's one place.
      await c.client.unsubscribeResource({ uri: `sitefleet://jobs/${encodeURIComponent(id).replace('s', '%73')}` });
      await c.client.subscribeResource({ uri: `sitefleet://jobs/${extra.job_id}` });
      await expect(c.client.subscribeResource({ uri: `sitefleet://jobs/${id}` })).rejects.toThrow(/already follows 100 jobs/);
    } finally {
      await c.close();
    }
  });

  it('refuses a job that does not exist', async () => {
    const c = await connectMcp(f.s);
    try {
      await expect(c.client.subscribeResource({ uri: 'sitefleet://jobs/sync_00000000-0000-4000-8000-000000000000' })).rejects.toThrow(
        /not found/i,
      );
    } finally {
      await c.close();
    }
  });
});

describe('CSV uploads that used to take the server down (findings 1, 2)', () => {
  let f: Fleet;
  beforeAll(async () => {
    f = await startFleet({ sim: { sites: 1 } });
    await registerSites(f, 1);
  });
  afterAll(async () => {
    await f.close();
  });

  const upload = (bytes: Uint8Array | string, signal?: AbortSignal) => {
    const form = new FormData();
    form.append('csv_file', new Blob([bytes as Uint8Array<ArrayBuffer> | string], { type: 'text/csv' }), 'users.csv');
    return f.s.rest('/users/import', { method: 'POST', body: form, signal });
  };

  it('a 20 MB file of 10 million one-field rows is answered in bounded size, and others are served meanwhile', async () => {
    const file = Buffer.alloc(10_000_000 * 2, 'a\n');
    expect(file.length).toBeLessThan(20 * 1024 * 1024);
    const heapBefore = process.memoryUsage().heapUsed;
    const pending = upload(file);
    // Another client keeps reading while the import runs: every read is answered.
    let reads = 0;
    let done = false;
    void pending.finally(() => {
      done = true;
    });
    while (!done) {
      const r = await f.s.rest('/sites?per_page=5');
      expect(r.status).toBe(200);
      reads++;
    }
    const r = await pending;
    expect(r.status).toBe(200);
    expect(reads).toBeGreaterThan(0);
    expect(r.body.failed_count).toBe(50_000); // 49,999 rows after the header, and the line where it stopped
    expect(r.body.failed_users).toHaveLength(100);
    expect(r.body.failed_users[0].line_number).toBe(2);
    expect(r.body.failed_users_truncated).toBe(true);
    expect(r.body.stopped).toMatchObject({ line_number: 50_001, reason: expect.stringMatching(/at most 50,000 rows/) });
    expect(JSON.stringify(r.body).length).toBeLessThan(100_000);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(300 * 1024 * 1024);
  }, 120_000);

  it('answers a file whose quote never closes, followed by a megabyte', async () => {
    const head = 'username,email,first_name,last_name,user_url,password,send_password,role,select_sites,select_groups\n';
    const body = head + 'bob,"bob@example.com,,,,,,,x,\n' + 'z'.repeat(1024 * 1024);
    const r = await upload(body, AbortSignal.timeout(20_000));
    expect(r.status).toBe(200);
    expect(r.body.stopped.reason).toMatch(/never closed|longer than 64 KB/);
    expect(r.body.success_count).toBe(0);
  });

  it('refuses (413) an upload of that kind over the 20 MB cap instead of hanging', async () => {
    const head = 'username,email,first_name,last_name,user_url,password,send_password,role,select_sites,select_groups\n';
    const body = Buffer.concat([Buffer.from(head + 'bob,"bob@example.com,'), Buffer.alloc(21 * 1000 * 1000, 'z')]);
    const r = await upload(body, AbortSignal.timeout(30_000));
    expect(r.status).toBe(413);
    expect(r.body.code).toBe('svc_upload_too_large');
  });
});
