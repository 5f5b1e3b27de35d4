// The audit log on PostgreSQL with two `sitefleet serve` processes (issue 32): concurrent changes through both stay
// ONE hash chain — each entry follows exactly one other, none is lost — and `sitefleet audit verify` finds it whole,
// then names an entry edited in the database and exits 1.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { closeServices, openServices } from '../../src/domain/index.js';
import type { AuditRecord } from '../../src/domain/audit.js';
import { cli, lastLine, serveProcess } from '../support/process.js';
import { testFleetStore } from '../support/server.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
});

describe('the audit log behind two serve processes on one PostgreSQL database', () => {
  it('stays one chain under concurrent writes through both, and verify names an entry edited in the database', async () => {
    const fleet = await testFleetStore();
    expect(fleet.databaseUrl).toMatch(/^postgres:/);
    const token = lastLine((await cli(['keys', 'create', '--name', 'k', ...fleet.args])).stdout);
    const [a, b] = await Promise.all([serveProcess(fleet.args), serveProcess(fleet.args)]);
    closers.push(
      () => a.stop(),
      () => b.stop(),
    );
    const add = (base: string, name: string) =>
      fetch(`${base}/wp-json/svc/v2/tags/add`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
      }).then((r) => r.status);
    const N = 30;
    const statuses = await Promise.all(Array.from({ length: N }, (_, i) => [add(a.url, `a-${i}`), add(b.url, `b-${i}`)]).flat());
    expect(statuses.every((st) => st === 200)).toBe(true);

    const ok = await cli(['audit', 'verify', ...fleet.args]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);

    const s = await openServices(loadConfig({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl }, {}));
    let victim: AuditRecord;
    try {
      const all = (await s.audit.list({ action: 'add-tag-v1' }, 1, 200)).items;
      expect(all).toHaveLength(2 * N);
      // One chain per lane: within a lane, every entry's prev_hash is a distinct entry's hash (no two appended after the
      // same head).
      const chain = (await s.audit.list({}, 1, 200)).items;
      expect(new Set(chain.map((e) => `${e.lane ?? 0}:${e.prev_hash}`)).size).toBe(chain.length);
      expect(await s.audit.verify()).toMatchObject({ ok: true, entries: chain.length });
      victim = all[N]!;
    } finally {
      await closeServices(s);
    }

    const db = new pg.Client({ connectionString: fleet.databaseUrl });
    await db.connect();
    try {
      await db.query(`UPDATE sitefleet_rows SET data = jsonb_set(data, '{outcome}', '"svc_tampered"') WHERE kind = 'audit' AND id = $1`, [
        victim.id,
      ]);
    } finally {
      await db.end();
    }
    const bad = await cli(['audit', 'verify', ...fleet.args]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(`broken at entry ${victim.id}: edited`);
  });
});
