// Findings of the attack review (issue #18), one describe each: every test here failed on the code before its fix.
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempName } from '../src/store/durable-file.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';

/** Makes the next write of `file` (in this process) hit a full disk: its temp name points at /dev/full. */
function fullDiskFor(file: string): () => void {
  const tmp = tempName(file);
  symlinkSync('/dev/full', tmp);
  return () => rmSync(tmp, { force: true });
}

/** Makes every write of `file` fail until undone: a directory stands at its temp name. */
function brokenDiskFor(file: string): () => void {
  const tmp = tempName(file);
  mkdirSync(tmp);
  return () => rmSync(tmp, { recursive: true, force: true });
}

async function until<T>(get: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a commit that cannot reach the disk (finding 3)', () => {
  let f: Fleet;
  beforeAll(async () => {
    f = await startFleet({ sim: { sites: 3 } });
    await registerSites(f, 3);
  });
  afterAll(async () => { await f.close(); });

  it('leaves the site, its keys and its data in place when removing it fails, and says nothing was changed', async () => {
    const dir = f.s.dataDir;
    expect(existsSync(join(dir, 'secrets', '3.json'))).toBe(true);
    expect(existsSync(join(dir, 'site-data', '3.json'))).toBe(true);
    const undo = fullDiskFor(join(dir, 'sites.0.json'));
    let r;
    try {
      r = await f.s.rest('/sites/3/remove', { method: 'DELETE' });
    } finally { undo(); }
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
    } finally { undo(); }
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
  afterAll(async () => { await f.close(); });

  it('ends once the disk takes writes again, instead of staying processing until a restart', async () => {
    const q = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [1, 2, 3] });
    expect(q.body.queued).toBe(true);
    const id = q.body.job_id as string;
    const running = await until(() => f.s.rest(`/jobs/${id}`), (r) => r.body?.data?.status === 'processing');
    expect(running.body.data.status).toBe('processing');
    // Every commit fails while the children answer: the per-site records, the final write and the hand-back.
    const undo = brokenDiskFor(join(f.s.dataDir, 'meta.json'));
    await new Promise((r) => setTimeout(r, 1500));
    undo();
    const done = await until(() => f.s.rest(`/jobs/${id}`), (r) => r.body?.data?.status === 'completed');
    expect(done.body.data).toMatchObject({ status: 'completed', processed: 3, succeeded: 3 });
  });
});
