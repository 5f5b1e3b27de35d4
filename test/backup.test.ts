// Upgrading safely (issue 27, defects 10 and 11): a format upgrade copies what it rewrites aside first; `backup` and
// `restore` of a data dir, consistent while `serve` writes; restore and `migrate --from` refuse a fleet a serve holds.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Store } from '../src/store/store.js';
import { TagService } from '../src/domain/tags.js';
import type { SiteRecord, TagRecord } from '../src/store/records.js';
import { readLeases } from '../src/store/backup.js';
import { liveHolders } from '../src/domain/leases.js';
import { cli, lastLine, serveProcess } from './support/process.js';
import { tempDir } from './support/server.js';
import { until } from './support/wait.js';

const STORE_JS = fileURLToPath(new URL('../dist/store/store.js', import.meta.url));
const stops: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const s of stops) await s();
});

/** A data dir as format 1 left it: one key with an unsalted hash. Answers its bearer token. */
async function formatOneDir(dir: string): Promise<string> {
  const store = await Store.open(dir);
  const secret = 'A'.repeat(32);
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
  const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8'));
  writeFileSync(join(dir, 'meta.json'), JSON.stringify({ ...meta, format: 1 }));
  return `sf_abcdefabcdef_${secret}`;
}

describe('a data format upgrade', () => {
  it('copies the files it rewrites aside first, says where in the log, and copying them back undoes it', async () => {
    const dir = tempDir();
    await formatOneDir(dir);
    const before = { meta: readFileSync(join(dir, 'meta.json'), 'utf8'), keys: readFileSync(join(dir, 'keys.json'), 'utf8') };
    const r = await cli(['keys', 'list', '--data-dir', dir], { SITEFLEET_LOG: 'info' });
    expect(r.code).toBe(0);
    const line = r.stderr.split('\n').find((l) => l.includes('data format upgrade'));
    expect(line).toBeDefined();
    const logged = JSON.parse(line!) as { copied_to: string; from: number; to: number; files: string[] };
    expect(logged).toMatchObject({ from: 1, to: 3, files: ['meta.json', 'keys.json'] });
    expect(logged.copied_to.startsWith(join(dir, 'before-format-3-'))).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')).format).toBe(3);
    expect(readFileSync(join(dir, 'keys.json'), 'utf8')).not.toBe(before.keys);
    expect(readFileSync(join(logged.copied_to, 'meta.json'), 'utf8')).toBe(before.meta);
    expect(readFileSync(join(logged.copied_to, 'keys.json'), 'utf8')).toBe(before.keys);
    // The copy is not mistaken for data: the upgraded fleet opens with its one key.
    expect((await cli(['keys', 'list', '--data-dir', dir])).stdout).toMatch(/^1\told\tread_write\tactive/m);
  });

  it('moves tag membership from the tags onto the sites (2 → 3), taking in the journal a writer left first', async () => {
    const dir = tempDir();
    // What a format-2 writer left: every commit still in its journal (it exited without closing the store, so nothing
    // was compacted), the tags listing their sites (one list out of order, naming a site that is gone), the last commit
    // a site joining a tag.
    const code = `
      const s = await (await import(${JSON.stringify(STORE_JS)})).Store.open(${JSON.stringify(dir)});
      const tag = (name, site_ids) => ({ name, color: null, site_ids, created_at: '', updated_at: '' });
      await s.write((tx) => {
        for (let i = 1; i <= 4; i++) tx.insert('sites', { url: 'https://s' + i + '.test/', name: 's' + i });
        tx.insert('tags', tag('odd', [1, 3]));
        tx.insert('tags', tag('most', [4, 2, 1, 99]));
      });
      await s.write((tx) => tx.put('tags', { ...tx.get('tags', 1), site_ids: [1, 3, 4] }));
      process.exit(0);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: 'inherit' });
    expect(await new Promise((r) => child.once('exit', r))).toBe(0);
    expect(statSync(join(dir, 'journal.log')).size).toBeGreaterThan(0);
    const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8'));
    writeFileSync(join(dir, 'meta.json'), JSON.stringify({ ...meta, format: 2 }));

    const r = await cli(['keys', 'list', '--data-dir', dir], { SITEFLEET_LOG: 'info' });
    expect(r.code, r.stderr).toBe(0);
    const logged = JSON.parse(r.stderr.split('\n').find((l) => l.includes('data format upgrade'))!) as {
      copied_to: string;
      files: string[];
    };
    expect(logged.files.sort()).toEqual(['meta.json', 'sites.0.json', 'tags.json']);
    // The copy aside is the fleet as format 2 kept it, journal taken in: what the older sitefleet reads.
    const asideTags = JSON.parse(readFileSync(join(logged.copied_to, 'tags.json'), 'utf8')).records as Array<{ site_ids: number[] }>;
    expect(asideTags.map((t) => t.site_ids)).toEqual([
      [1, 3, 4],
      [4, 2, 1, 99],
    ]);
    const store = await Store.open(dir);
    try {
      expect([...store.all<SiteRecord>('sites')].map((x) => [x.id, x.tag_ids])).toEqual([
        [1, [1, 2]],
        [2, [2]],
        [3, [1]],
        [4, [1, 2]],
      ]);
      for (const t of store.all<TagRecord>('tags')) expect(t).not.toHaveProperty('site_ids');
      const tags = new TagService(store);
      expect([tags.get(1)!.site_ids, tags.get(2)!.site_ids]).toEqual([
        [1, 3, 4],
        [1, 2, 4],
      ]);
      expect(JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')).format).toBe(3);
    } finally {
      await store.close();
    }
  });

  it('is preceded by nothing when the data dir is current', async () => {
    const dir = tempDir();
    await cli(['keys', 'create', '--name', 'k', '--data-dir', dir]);
    const r = await cli(['keys', 'list', '--data-dir', dir], { SITEFLEET_LOG: 'info' });
    expect(r.stderr).not.toMatch(/data format upgrade/);
    expect(readdirSync(dir).filter((f) => f.startsWith('before-format-'))).toEqual([]);
  });
});

describe('sitefleet backup and restore (data dir)', () => {
  it('backs up while serve writes, and the restored fleet serves the keys, users and every tag acknowledged before', async () => {
    const dir = tempDir();
    const token = lastLine((await cli(['keys', 'create', '--name', 'k', '--data-dir', dir])).stdout);
    const p = await serveProcess(['--data-dir', dir]);
    stops.push(() => p.stop());
    const password = /password:\s+(.+)/.exec(p.stdout())![1]!.trim();
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const add = (name: string) =>
      fetch(`${p.url}/wp-json/svc/v2/tags/add`, { method: 'POST', headers, body: JSON.stringify({ name }) }).then((r) => r.status);
    expect(await Promise.all(Array.from({ length: 20 }, (_, i) => add(`before-${i}`)))).toEqual(Array(20).fill(200));
    // Writes keep coming while the backup runs.
    let writing = true;
    const during = (async () => {
      let i = 0;
      while (writing) expect(await add(`during-${i++}`)).toBe(200);
      return i;
    })();
    const file = join(tempDir(), 'fleet.jsonl');
    const b = await cli(['backup', '--to', file, '--data-dir', dir]);
    writing = false;
    expect(await during).toBeGreaterThan(0);
    expect(b.code, b.stderr).toBe(0);
    expect(b.stdout).toMatch(/Backed up .* \(data format 3\) to .*fleet\.jsonl/);
    expect((readFileSync(file).length > 0 && (await import('node:fs')).statSync(file).mode & 0o777).toString(8)).toBe('600');
    expect(readdirSync(dir).filter((f) => f.startsWith('.backup-'))).toEqual([]); // its snapshot is gone

    const target = join(tempDir(), 'restored');
    const r = await cli(['restore', '--from', file, '--data-dir', target]);
    expect(r.code, r.stderr).toBe(0);
    const q = await serveProcess(['--data-dir', target]);
    stops.push(() => q.stop());
    expect(q.stdout()).not.toMatch(/First start/); // the users came back
    const tags = (await (await fetch(`${q.url}/wp-json/svc/v2/tags?per_page=100`, { headers })).json()) as {
      data: Array<{ id: number; name: string }>;
    };
    const names = tags.data.map((t) => t.name);
    for (let i = 0; i < 20; i++) expect(names).toContain(`before-${i}`);
    // A consistent snapshot: the tags it holds are exactly ids 1..n, the "during" ones a prefix of those written.
    expect(tags.data.map((t) => t.id).sort((a, b) => a - b)).toEqual(Array.from({ length: tags.data.length }, (_, i) => i + 1));
    const basic = `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
    expect((await fetch(`${q.url}/wp-json/wp-abilities/v1/abilities`, { headers: { authorization: basic } })).status).toBe(200);
    // Ids go on from the backup's counters, never reused.
    const next = (await (
      await fetch(`${q.url}/wp-json/svc/v2/tags/add`, { method: 'POST', headers, body: '{"name":"after"}' })
    ).json()) as {
      data: { id: number };
    };
    expect(next.data.id).toBeGreaterThan(tags.data.length);
  });

  it('refuses to restore over a fleet without --force, and with it keeps the old one beside it', async () => {
    const dir = tempDir();
    await cli(['keys', 'create', '--name', 'first', '--data-dir', dir]);
    const file = join(tempDir(), 'b.jsonl');
    expect((await cli(['backup', '--to', file, '--data-dir', dir])).code).toBe(0);
    const again = await cli(['backup', '--to', file, '--data-dir', dir]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/exists already/);
    const other = join(tempDir(), 'fleet'); // inside a temp dir: the fleet moved aside beside it goes with it
    await cli(['keys', 'create', '--name', 'second', '--data-dir', other]);
    const refused = await cli(['restore', '--from', file, '--data-dir', other]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/is not empty; nothing was restored\. Add --force/);
    expect((await cli(['keys', 'list', '--data-dir', other])).stdout).toMatch(/\tsecond\t/);
    const forced = await cli(['restore', '--from', file, '--data-dir', other, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    const aside = /moved to (\S+)/.exec(forced.stdout)![1]!;
    expect((await cli(['keys', 'list', '--data-dir', other])).stdout).toMatch(/\tfirst\t/);
    expect((await cli(['keys', 'list', '--data-dir', aside])).stdout).toMatch(/\tsecond\t/);
  });

  it('restores nothing from a cut-off or foreign file', async () => {
    const dir = tempDir();
    await cli(['keys', 'create', '--name', 'k', '--data-dir', dir]);
    const file = join(tempDir(), 'b.jsonl');
    await cli(['backup', '--to', file, '--data-dir', dir]);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    const cut = join(tempDir(), 'cut.jsonl');
    writeFileSync(cut, lines.slice(0, -1).join('\n') + '\n');
    const target = join(tempDir(), 'never');
    const r = await cli(['restore', '--from', cut, '--data-dir', target]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not a complete sitefleet backup .*cut off before its end line/);
    expect(existsSync(target)).toBe(false);
    const foreign = join(tempDir(), 'x.json');
    writeFileSync(foreign, '{"hello":1}\n');
    expect((await cli(['restore', '--from', foreign, '--data-dir', target])).stderr).toMatch(/not a sitefleet backup header/);
    expect(existsSync(target)).toBe(false);
  });

  it('refuses a backup of a data dir that does not exist', async () => {
    const missing = join(tempDir(), 'typo');
    const r = await cli(['backup', '--to', join(tempDir(), 'b.jsonl'), '--data-dir', missing]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/typo does not exist\. Check --data-dir/);
    expect(existsSync(missing)).toBe(false);
  });
});

describe('a data dir a serve holds', () => {
  it('is not restored over, and migrate --from refuses it unless --force', async () => {
    const dir = join(tempDir(), 'fleet'); // inside a temp dir: the fleet the last restore moves aside goes with it
    const p = await serveProcess(['--data-dir', dir]);
    stops.push(() => p.stop());
    const file = join(tempDir(), 'b.jsonl');
    expect((await cli(['backup', '--to', file, '--data-dir', dir])).code).toBe(0);
    // The serve's monitors renew its member lease every 2 s; wait for the first one to be on disk (in the journal until
    // a compaction, as the refusal reads it).
    await until(
      async () => liveHolders(await readLeases({ dataDir: dir, databaseUrl: null })).map((h) => h.pid),
      (pids) => pids.includes(p.child.pid!),
      10_000,
    );
    const r = await cli(['restore', '--from', file, '--data-dir', dir, '--force']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`in use by a running sitefleet serve \\(pid ${p.child.pid}\\)`));
    const m = await cli(['migrate', '--from', dir, '--to', 'postgres://nobody@127.0.0.1:1/none']);
    expect(m.code).toBe(1);
    expect(m.stderr).toMatch(/in use by a running sitefleet serve .*Copying it now would miss its next writes.*add --force/);
    // Forced, it goes on to the copy (which then fails here only because there is no database at that address).
    const forced = await cli(['migrate', '--from', dir, '--to', 'postgres://nobody@127.0.0.1:1/none', '--force']);
    expect(forced.stderr).toMatch(/Cannot reach the database/);
    // Once the serve has stopped (and let go of its lease), restore goes ahead.
    expect(await p.stop()).toBe(0);
    const after = await cli(['restore', '--from', file, '--data-dir', dir, '--force']);
    expect(after.code, after.stderr).toBe(0);
  });
});
