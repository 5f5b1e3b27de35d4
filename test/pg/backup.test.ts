// `sitefleet backup` / `restore` on the PostgreSQL engine (issue 27, defect 10): a backup taken while a serve writes,
// restored into a fresh database; one format for both engines (a data dir's backup into PostgreSQL and back); a
// database holding a fleet refused without --force, a cut-off file rolled back, a serving database refused.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, lastLine, serveProcess } from '../support/process.js';
import { freshDatabase, testPgUrl } from '../support/postgres.js';
import { tempDir } from '../support/server.js';
import { until } from '../support/wait.js';

const server = testPgUrl()!;
const stops: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const s of stops) await s();
});

async function tags(url: string, token: string): Promise<string[]> {
  const r = await fetch(`${url}/wp-json/svc/v2/tags?per_page=100`, { headers: { authorization: `Bearer ${token}` } });
  expect(r.status).toBe(200);
  return ((await r.json()) as { data: Array<{ name: string }> }).data.map((t) => t.name).sort();
}

async function rowCounts(url: string): Promise<Array<{ kind: string; n: number }>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(`SELECT kind, count(*)::int AS n FROM sitefleet_rows WHERE data IS NOT NULL GROUP BY kind ORDER BY kind`)).rows;
  } finally {
    await c.end();
  }
}

describe('backup and restore on PostgreSQL', () => {
  it('backs up a database while serve writes to it; the restored database serves what was acknowledged before', async () => {
    const url = await freshDatabase(server);
    expect((await cli(['migrate', '--database-url', url])).code).toBe(0);
    const token = lastLine((await cli(['keys', 'create', '--name', 'k', '--database-url', url])).stdout);
    const p = await serveProcess(['--database-url', url]);
    stops.push(() => p.stop());
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const add = (name: string) =>
      fetch(`${p.url}/wp-json/svc/v2/tags/add`, { method: 'POST', headers, body: JSON.stringify({ name }) }).then((r) => r.status);
    for (let i = 0; i < 10; i++) expect(await add(`before-${i}`)).toBe(200);
    let writing = true;
    const during = (async () => {
      let i = 0;
      while (writing) expect(await add(`during-${i++}`)).toBe(200);
    })();
    const file = join(tempDir(), 'pg.jsonl');
    const b = await cli(['backup', '--to', file, '--database-url', url]);
    writing = false;
    await during;
    expect(b.code, b.stderr).toBe(0);
    expect(b.stdout).toMatch(/Backed up postgres:\/\/.* \(data format 3\)/);
    expect(readFileSync(file, 'utf8').split('\n')[0]).toMatch(/"engine":"postgres"/);

    // Restoring over the database the serve runs on is refused, even with --force (once its monitors hold a lease).
    await until(async () => (await rowCounts(url)).some((r) => r.kind === 'leases'), Boolean, 10_000);
    const busy = await cli(['restore', '--from', file, '--database-url', url, '--force']);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/in use by a running sitefleet serve/);

    const target = await freshDatabase(server);
    const r = await cli(['restore', '--from', file, '--database-url', target]);
    expect(r.code, r.stderr).toBe(0);
    const q = await serveProcess(['--database-url', target]);
    stops.push(() => q.stop());
    const restored = await tags(q.url, token);
    for (let i = 0; i < 10; i++) expect(restored).toContain(`before-${i}`);
    expect(restored.length).toBeLessThanOrEqual((await tags(p.url, token)).length);
    expect(q.stdout()).not.toMatch(/First start/);
  });

  it('takes a data dir’s backup into PostgreSQL and a PostgreSQL backup into a data dir', async () => {
    const dir = tempDir();
    const token = lastLine((await cli(['keys', 'create', '--name', 'k', '--data-dir', dir])).stdout);
    const s = await serveProcess(['--data-dir', dir]);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    for (const name of ['a', 'b', 'c'])
      await fetch(`${s.url}/wp-json/svc/v2/tags/add`, { method: 'POST', headers, body: JSON.stringify({ name }) });
    expect(await s.stop()).toBe(0);
    const fromDir = join(tempDir(), 'dir.jsonl');
    expect((await cli(['backup', '--to', fromDir, '--data-dir', dir])).code).toBe(0);

    const url = await freshDatabase(server);
    const into = await cli(['restore', '--from', fromDir, '--database-url', url]);
    expect(into.code, into.stderr).toBe(0);
    const onPg = await serveProcess(['--database-url', url]);
    expect(await tags(onPg.url, token)).toEqual(['a', 'b', 'c']);
    expect(await onPg.stop()).toBe(0);

    const fromPg = join(tempDir(), 'pg.jsonl');
    expect((await cli(['backup', '--to', fromPg, '--database-url', url])).code).toBe(0);
    const back = join(tempDir(), 'back');
    expect((await cli(['restore', '--from', fromPg, '--data-dir', back])).code).toBe(0);
    const onDir = await serveProcess(['--data-dir', back]);
    stops.push(() => onDir.stop());
    expect(await tags(onDir.url, token)).toEqual(['a', 'b', 'c']);
  });

  it('takes a data-format-2 backup with its tag membership moved onto the sites, and refuses format 1', async () => {
    // A backup as data format 2 wrote it: the tags list their sites (one out of order, one naming a site that is gone).
    const file = join(tempDir(), 'format2.jsonl');
    const lines = [
      { sitefleet_backup: 1, data_format: 2, engine: 'lowdb', created_at: '2026-11-20T00:00:00.000Z', counters: { sites: 3, tags: 2 } },
      ...[1, 2, 3].map((id) => ({ kind: 'sites', id, data: { id, url: `https://s${id}.test/`, name: `s${id}` } })),
      { kind: 'tags', id: 1, data: { id: 1, name: 'odd', color: null, site_ids: [3, 1], created_at: '', updated_at: '' } },
      { kind: 'tags', id: 2, data: { id: 2, name: 'gone', color: null, site_ids: [9, 1], created_at: '', updated_at: '' } },
      { end: true, rows: 5 },
    ];
    writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const url = await freshDatabase(server);
    const r = await cli(['restore', '--from', file, '--database-url', url]);
    expect(r.code, r.stderr).toBe(0);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const rows = (await c.query(`SELECT kind, id, data FROM sitefleet_rows WHERE data IS NOT NULL ORDER BY kind, id`)).rows;
      expect(rows.map((x) => [x.kind, x.id, x.data.tag_ids ?? x.data.site_ids ?? null])).toEqual([
        ['sites', 1, [1, 2]],
        ['sites', 2, null],
        ['sites', 3, [1]],
        ['tags', 1, null],
        ['tags', 2, null],
      ]);
    } finally {
      await c.end();
    }
    // Format 1 (unsalted key hashes) is not taken: it goes through a data dir.
    writeFileSync(file, [{ ...lines[0], data_format: 1 }, ...lines.slice(1)].map((l) => JSON.stringify(l)).join('\n') + '\n');
    const old = await cli(['restore', '--from', file, '--database-url', await freshDatabase(server)]);
    expect(old.code).toBe(1);
    expect(old.stderr).toMatch(/holds data format 1; PostgreSQL takes formats 2 and 3 only\. Restore it into a data dir/);
  });

  it('refuses a database holding a fleet without --force, and a cut-off file changes nothing', async () => {
    const a = await freshDatabase(server);
    await cli(['keys', 'create', '--name', 'in-a', '--database-url', a]);
    const file = join(tempDir(), 'a.jsonl');
    expect((await cli(['backup', '--to', file, '--database-url', a])).code).toBe(0);
    const b = await freshDatabase(server);
    await cli(['keys', 'create', '--name', 'in-b', '--database-url', b]);
    const held = await rowCounts(b);

    const refused = await cli(['restore', '--from', file, '--database-url', b]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/already holds a fleet \(\d+ rows\); nothing was restored\. Add --force/);
    expect(await rowCounts(b)).toEqual(held);

    const lines = readFileSync(file, 'utf8').trim().split('\n');
    const cut = join(tempDir(), 'cut.jsonl');
    writeFileSync(cut, lines.slice(0, -1).join('\n') + '\n');
    const broken = await cli(['restore', '--from', cut, '--database-url', b, '--force']);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/cut off before its end line/);
    expect((await cli(['keys', 'list', '--database-url', b])).stdout).toMatch(/\tin-b\t/);

    const forced = await cli(['restore', '--from', file, '--database-url', b, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    const listed = (await cli(['keys', 'list', '--database-url', b])).stdout;
    expect(listed).toMatch(/\tin-a\t/);
    expect(listed).not.toMatch(/\tin-b\t/);
  });
});
