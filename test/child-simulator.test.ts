// test/child-simulator.test.ts — the simulated WordPress sites: deterministic from the seed, realistic spread, addressing.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildSim, type ChildSim, type SimSiteState } from '../src/child/index.js';

const DAY = 86_400;
let a: ChildSim;
let b: ChildSim;
beforeAll(async () => {
  [a, b] = await Promise.all([startChildSim({ sites: 50, seed: 5 }), startChildSim({ sites: 50, seed: 5 })]);
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
});

const withoutUrl = (s: SimSiteState) => ({ ...s, siteUrl: '' });

describe('generated state', () => {
  it('is a function of the seed and the site number', async () => {
    expect(withoutUrl(a.state(17))).toEqual(withoutUrl(b.state(17)));
    expect(a.sites[16]!.password).toBe(b.sites[16]!.password);
    const other = await startChildSim({ sites: 20, seed: 6 });
    try {
      expect(other.state(17).plugins).not.toEqual(a.state(17).plugins);
    } finally {
      await other.close();
    }
  });

  it('looks like a fleet: 10–40 plugins, 3–8 themes with one active, an admin, posts, changes', () => {
    const now = Date.now() / 1000;
    const all = a.sites.map((s) => a.state(s.index));
    for (const s of all) {
      expect(s.childVersion).toBe('6.1');
      expect(s.plugins.filter((p) => !p.mu).length).toBeGreaterThanOrEqual(10);
      expect(s.plugins.filter((p) => !p.mu).length).toBeLessThanOrEqual(40);
      expect(s.themes.length).toBeGreaterThanOrEqual(3);
      expect(s.themes.length).toBeLessThanOrEqual(9);
      expect(s.themes.filter((t) => t.active)).toHaveLength(1);
      expect(s.users[0]).toMatchObject({ login: 'admin', role: 'administrator' });
      expect(s.posts.length).toBeGreaterThan(0);
      expect(s.changes.length).toBeGreaterThan(0);
    }
    const plugins = all.flatMap((s) => s.plugins);
    expect(plugins.some((p) => p.updateVersion)).toBe(true);
    expect(plugins.some((p) => !p.active)).toBe(true);
    expect(plugins.some((p) => p.lastUpdated < now - 730 * DAY)).toBe(true);
    expect(all.some((s) => s.themes.some((t) => t.parent))).toBe(true);
  });
});

describe('addressing', () => {
  it('serves sites under /s/<n>/, counts their requests, and answers 404 elsewhere', async () => {
    const before = a.requests(3);
    const front = await request(`${a.sites[2]!.url}`, {
      method: 'POST',
      body: 'test=yes',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(front.statusCode).toBe(200);
    expect(await front.body.text()).toContain('Simulated site 3');
    const get = await request(`${a.baseUrl}/s/3/`);
    await get.body.dump();
    expect(a.requests(3)).toBe(before + 2);
    for (const path of ['/s/51/', '/s/0/', '/elsewhere']) {
      const res = await request(`${a.baseUrl}${path}`, { method: 'POST', body: '' });
      await res.body.dump();
      expect(res.statusCode, path).toBe(404);
    }
    expect(() => a.state(51)).toThrow(RangeError);
  });
});
