// `sitefleet migrate`: creates and versions the schema, moves a lowdb fleet into PostgreSQL with counts checked (a
// server on the database then answers the same lists as the server on the data dir did), and refuses a non-empty
// target unless --force.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PG_FORMAT } from '../../src/store/pg-store.js';
import { cli, lastLine, serveProcess } from '../support/process.js';
import { freshDatabase, testPgUrl } from '../support/postgres.js';
import { seedSites, startServer, tempDir } from '../support/server.js';

const server = testPgUrl()!;

describe('sitefleet migrate', () => {
  it('creates the schema once and says so, and refuses a URL that is not postgres://', async () => {
    const url = await freshDatabase(server);
    const first = await cli(['migrate', '--database-url', url]);
    expect(first).toMatchObject({ code: 0, stdout: `Schema migrated from format 0 to ${PG_FORMAT}.\n` });
    const again = await cli(['migrate'], { SITEFLEET_DATABASE_URL: url });
    expect(again).toMatchObject({ code: 0, stdout: `Schema is at format ${PG_FORMAT}; nothing to do.\n` });
    const bad = await cli(['migrate', '--database-url', 'mysql://x/y']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--database-url must be a postgres:\/\/ URL/);
    const noFrom = await cli(['migrate', '--to', url]);
    expect(noFrom.code).toBe(2);
    expect(noFrom.stderr).toMatch(/--to needs --from DATA_DIR/);
    const serveBad = await cli(['serve', '--database-url', 'http://x'], {});
    expect(serveBad.code).toBe(1);
    expect(serveBad.stderr).toMatch(/--database-url must be a postgres:\/\/ or postgresql:\/\/ URL/);
  });

  it('moves a lowdb fleet with counts checked; the same lists come back from PostgreSQL', async () => {
    // A lowdb fleet with something in every collection and both blob kinds.
    const dir = tempDir();
    const s = await startServer({ dataDir: dir });
    const sites = await seedSites(s.services, 260);
    await s.services.store.write((tx) => {
      for (const r of sites.slice(0, 30)) tx.putBlob('secrets', r.id, { private_key_pem: `k${r.id}`, http_pass: null, regverify: null });
      for (const r of sites.slice(0, 12))
        tx.putBlob('site-data', r.id, { plugins: [], themes: [], security: [], changes: [], users: [], synced_at: '2026-01-01T00:00:00Z' });
    });
    for (let i = 0; i < 5; i++) expect((await s.rest('/tags/add', { method: 'POST', json: { name: `t${i}` } })).status).toBe(200);
    const removed = await s.rest('/tags/5/remove', { method: 'DELETE' });
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect((await s.rest('/clients/add', { method: 'POST', json: { name: 'Acme', email: 'a@acme.test' } })).status).toBe(200);
    expect((await s.rest('/sites/3/edit', { method: 'PUT', json: { tags: [1, 2], client_id: 1 } })).status).toBe(200);
    await s.services.jobs.enqueue('check', [1, 2]);
    await s.services.jobs.stop();
    const paths = ['/sites?per_page=100&page=3', '/tags?per_page=100', '/clients', '/sites/count', '/tags/1/sites'];
    const before = await Promise.all(paths.map((p) => s.rest(p)));
    const counts = {
      sites: s.services.store.count('sites'),
      keys: s.services.store.count('keys'),
      users: s.services.store.count('users'),
      jobs: s.services.store.count('jobs'),
    };
    const token = s.creds.key.read_write;
    await s.close();

    const url = await freshDatabase(server);
    const moved = await cli(['migrate', '--from', dir, '--to', url]);
    expect(moved.stderr).toBe('');
    expect(moved.code).toBe(0);
    expect(moved.stdout).toMatch(/counts checked/);
    expect(moved.stdout).toMatch(/sites\s+260 → 260/);
    expect(moved.stdout).toMatch(/tags\s+4 → 4/);
    expect(moved.stdout).toMatch(/secrets\s+30 → 30/);
    expect(moved.stdout).toMatch(/site-data\s+12 → 12/);
    expect(moved.stdout).toContain(`keys       ${String(counts.keys).padStart(7)} → ${counts.keys}`);
    expect(moved.stdout).toContain(`jobs       ${String(counts.jobs).padStart(7)} → ${counts.jobs}`);

    const p = await serveProcess(['--database-url', url, '--data-dir', tempDir()]);
    try {
      for (const [i, path] of paths.entries()) {
        const res = await fetch(`${p.url}/wp-json/svc/v2${path}`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status, path).toBe(200);
        expect(await res.json(), path).toEqual(before[i]!.body);
      }
      // Ids go on from the lowdb counters: the deleted tag 5's id is not handed out again.
      const add = await fetch(`${p.url}/wp-json/svc/v2/tags/add`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'new' }),
      });
      expect(((await add.json()) as { data: { id: number } }).data.id).toBe(6);
    } finally {
      await p.stop();
    }

    // A second copy into the same (now non-empty) database is refused and changes nothing; --force replaces it.
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const rows = async () =>
      (await c.query(`SELECT kind, count(*)::int AS n FROM sitefleet_rows WHERE data IS NOT NULL GROUP BY kind ORDER BY kind`)).rows;
    const held = await rows();
    const refused = await cli(['migrate', '--from', dir, '--to', url]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/already holds \d+ sitefleet rows; nothing was copied\. Add --force to replace them\./);
    expect(await rows()).toEqual(held);
    const forced = await cli(['migrate', '--from', dir, '--to', url, '--force']);
    expect(forced.code).toBe(0);
    expect((await rows()).find((r) => r.kind === 'tags').n).toBe(4);
    await c.end();
    const notDir = await cli(['migrate', '--from', tempDir(), '--to', url]);
    expect(notDir.code).toBe(1);
    expect(notDir.stderr).toMatch(/is not a sitefleet data dir/);
    expect(lastLine(notDir.stderr)).not.toMatch(/at .*\.js/);
  });
});
