// get-security-issues-v1: the fleet's sites with security issues from their last sync, worst first, from an index
// that follows syncs and removals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';

let f: Fleet;
let ids: number[];

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 6, seed: 11 } });
  ids = (await registerSites(f)).map((s) => s.id);
  expect((await f.s.rest('/sites/sync', { method: 'POST' })).status).toBe(200);
});
afterAll(async () => {
  await f?.close();
});

const issues = (input: Record<string, unknown> = {}, auth?: string) =>
  f.s.ability('get-security-issues-v1', input, { method: 'GET', auth });

describe('get-security-issues-v1', () => {
  it('lists every site with issues, as get-site-security-v1 reports them, most high-severity first', async () => {
    const r = await issues({ per_page: 100 });
    expect(r.status).toBe(200);
    const expected = [];
    for (const id of ids) {
      const one = (await f.s.ability('get-site-security-v1', { site_id_or_domain: id }, { method: 'GET' })).body;
      if (one.total_issues) expected.push({ site_id: id, issues: one.security_issues });
    }
    expect(expected.length).toBeGreaterThan(0);
    expect(r.body.total).toBe(expected.length);
    expect(r.body.items.map((i: { site_id: number }) => i.site_id).sort()).toEqual(expected.map((e) => e.site_id).sort());
    for (const item of r.body.items) {
      const want = expected.find((e) => e.site_id === item.site_id)!.issues;
      expect(item.issues).toEqual(want);
      for (const sev of ['high', 'medium', 'low'])
        expect(item[sev], sev).toBe(want.filter((i: { severity: string }) => i.severity === sev).length);
    }
    const keys = r.body.items.map((i: { high: number; medium: number; low: number }) => [i.high, i.medium, i.low]);
    expect(keys).toEqual([...keys].sort((a, b) => b[0] - a[0] || b[1] - a[1] || b[2] - a[2]));
  });

  it('filters by the least severity and pages', async () => {
    const all = (await issues({ per_page: 100 })).body;
    const high = (await issues({ per_page: 100, min_severity: 'high' })).body;
    expect(high.items.every((i: { high: number }) => i.high > 0)).toBe(true);
    expect(high.total).toBe(all.items.filter((i: { high: number }) => i.high > 0).length);
    const second = (await issues({ page: 2, per_page: 1 })).body;
    expect(second).toMatchObject({ page: 2, per_page: 1, total: all.total });
    expect(second.items).toEqual(all.items.slice(1, 2));
    expect((await issues({ page: 99 })).body).toMatchObject({ items: [], total: all.total });
  });

  it('keeps medium and worse, and shows each site as its record is now (an edit after the index was built)', async () => {
    const all = (await issues({ per_page: 100 })).body;
    const medium = (await issues({ per_page: 100, min_severity: 'medium' })).body;
    const want = all.items.filter((i: { high: number; medium: number }) => i.high + i.medium > 0);
    expect(medium.items).toEqual(want);
    expect(medium.total).toBe(want.length);
    const first = all.items[0];
    const r = await f.s.rest(`/sites/${first.site_id}/edit`, { method: 'POST', json: { name: 'Renamed after the index' } });
    expect(r.status).toBe(200);
    const after = (await issues({ per_page: 100 })).body;
    const shown = after.items.find((i: { site_id: number }) => i.site_id === first.site_id);
    expect(shown).toEqual({ ...first, site_name: 'Renamed after the index' });
    expect(after.items.map((i: { site_id: number }) => i.site_id)).toEqual(all.items.map((i: { site_id: number }) => i.site_id));
  });

  it('refuses a bad page size, an unknown severity and an unknown field, naming them', async () => {
    expect(await issues({ per_page: 101 })).toMatchObject({
      status: 400,
      body: { code: 'ability_invalid_input', message: expect.stringContaining('per_page') },
    });
    expect(await issues({ min_severity: 'critical' })).toMatchObject({
      status: 400,
      body: { code: 'ability_invalid_input', message: expect.stringContaining('min_severity') },
    });
    expect(await issues({ severity: 'high' })).toMatchObject({
      status: 400,
      body: { code: 'ability_invalid_input', message: expect.stringContaining('severity') },
    });
  });

  it('is open to viewers, and follows a removed site at once', async () => {
    const before = (await issues({ per_page: 100 }, f.s.creds.viewer)).body;
    expect(before.total).toBeGreaterThan(0);
    const gone = before.items[0].site_id;
    expect((await f.s.ability('delete-site-v1', { site_id_or_domain: gone, confirm: true })).status).toBe(200);
    const after = (await issues({ per_page: 100 })).body;
    expect(after.total).toBe(before.total - 1);
    expect(after.items.some((i: { site_id: number }) => i.site_id === gone)).toBe(false);
  });
});
