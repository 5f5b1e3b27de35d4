// Hostile or broken children: each misbehaviour is one per-site error with a code naming it, and the
// store keeps the last good data of that site.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimFault } from '../src/child/simulator/server.js';
import { expectBadTextCleaned, registerSites, startFleet, type Fleet } from './support/fleet.js';

let f: Fleet;
beforeAll(async () => {
  f = await startFleet({ sim: { sites: 2 }, config: { childTimeoutMs: '1500' } });
  await registerSites(f, 2);
});
afterAll(async () => {
  await f.close();
});

const cases: Array<[string, SimFault, RegExp]> = [
  ['a reply over the size cap', { type: 'huge' }, /svc_child_bad_reply/],
  ['a reply that drips slower than the time cap', { type: 'slow_drip' }, /svc_child_timeout|svc_child_bad_reply/],
  ['no answer at all', { type: 'timeout' }, /svc_child_timeout/],
  ['invalid JSON inside the envelope', { type: 'garbage_json' }, /svc_child_bad_reply/],
  ['fields of the wrong types', { type: 'wrong_types' }, /svc_child_bad_reply/],
  ['a redirect to another host', { type: 'redirect', to: 'http://127.0.0.1:9/' }, /svc_child_not_detected|svc_child_unreachable/],
  ['an HTML page instead of an envelope', { type: 'html' }, /svc_child_not_detected/],
  ['a fatal error page', { type: 'http500' }, /svc_child_not_detected/],
  ['a reply about another site', { type: 'other_site' }, /svc_child_wrong_site/],
];

describe('a misbehaving child', () => {
  it.each(cases)(
    '%s is one per-site error and the last good data stays',
    async (_what, fault, code) => {
      const good = (await f.s.services.children.siteData(1))!;
      expect(good.plugins.length).toBeGreaterThan(0);
      f.sim.setFault(1, fault);
      try {
        const r = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [1, 2] });
        expect(r.status).toBe(200);
        expect(r.body.total_synced).toBe(1);
        expect(r.body.errors).toHaveLength(1);
        expect(r.body.errors[0].code).toMatch(code);
        expect(await f.s.services.children.siteData(1)).toEqual(good);
        expect((await f.s.rest('/sites/1')).body.data.status).toBe('disconnected');
      } finally {
        f.sim.setFault(1, null);
      }
      const back = await f.s.ability('sync-sites-v1', { site_ids_or_domains: [1] });
      expect(back.body.total_synced).toBe(1);
    },
    30_000,
  );
});

describe('a child whose texts hold NUL characters and unpaired surrogates', () => {
  it('syncs with its texts cleaned (NUL dropped, unpaired surrogate as U+FFFD), and the site beside it syncs too', async () => {
    await expectBadTextCleaned(f, [1], [2]);
  }, 30_000);
});
