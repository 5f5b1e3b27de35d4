// security_only update policies (issue 30: "an update policy can be limited to security fixes"), through the registry
// over the child simulator (seed 1, sites 1–3) with the fixture Wordfence feed imported: the dry run lists only the
// pending updates whose new version leaves a known vulnerability matched on that site, with the records they fix; a
// window run applies exactly those; refusals (a flag that is not a boolean, security_only with nothing it can fix).
import { join } from 'node:path';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { until } from '../support/wait.js';

const FIX = join(import.meta.dirname, '..', 'fixtures', 'vulnerabilities');
let h: AbilityHarness;
let ids: number[];
let clock = Date.parse('2026-11-26T00:00:00Z');
const ALL_DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });

beforeAll(async () => {
  const port = await freePort();
  h = await openAbilities({ sim: { sites: 3, seed: 1, port }, config: { packageSource: `http://127.0.0.1:${port}/__sim/dir/` } });
  h.services.policies.now = () => clock;
  ids = (await h.addSimSites()).map((s) => s.id);
  await h.call('sync-sites-v1', {});
  await h.services.vulnerabilities.importFile(join(FIX, 'wordfence-production.json'), 'wordfence');
});
afterAll(() => h.close());

/** The fixture table's security fixes on the simulator (expected-matches.json, offeredUpdateClears true). */
const FIXES = ['1:core:wordpress', '1:plugin:wordpress-seo/wp-seo.php', '3:core:wordpress', '3:theme:oceanwp'];

describe('security_only', () => {
  it('the dry run lists only the updates that fix a known vulnerability on the site, with the records they fix', async () => {
    const p = await h.call('add-update-policy-v1', {
      name: 'Security',
      all_sites: true,
      core: 'major',
      security_only: true,
      days: [...ALL_DAYS],
      start: '02:00',
      end: '04:00',
    });
    expect(p.updates.security_only).toBe(true);
    expect((await h.call('list-update-policies-v1', {})).items[0]!.updates.security_only).toBe(true);
    const v = await h.call('preview-update-policy-v1', { policy_id: p.id });
    expect(v.security_only).toBe(true);
    const w = v.next_window!;
    expect(w.would_update.map((i) => `${ids.indexOf(i.site_id) + 1}:${i.type}:${i.slug}`).sort()).toEqual(FIXES);
    // Each with the records it fixes, as the vulnerability views name them.
    const site1 = await h.call('get-site-vulnerabilities-v1', { site_id_or_domain: ids[0]! });
    const keyOf = (item: string) => site1.items.filter((x) => x.install.item === item).map((x) => x.key);
    const seo = w.would_update.find((i) => i.slug === 'wordpress-seo/wp-seo.php')!;
    expect(seo.fixes).toEqual(keyOf('wordpress-seo/wp-seo.php'));
    expect(seo.fixes!.length).toBeGreaterThan(0);
    // Pending but not a security fix: smush on site 1 (no record), contact-form-7 on site 2 (4.1.0 is still affected).
    const all = await h.call('list-updates-v1', { per_page: 200 });
    expect(all.updates.some((u) => u.site_id === ids[0] && u.slug === 'smush/wp-smush.php')).toBe(true);
    expect(all.updates.some((u) => u.site_id === ids[1] && u.slug === 'contact-form-7/wp-contact-form-7.php')).toBe(true);
    // A policy that is not security_only would update them too.
    const plain = await h.call('update-update-policy-v1', { policy_id: p.id, security_only: false });
    expect(plain.updates.security_only).toBe(false);
    const wide = (await h.call('preview-update-policy-v1', { policy_id: p.id })).next_window!;
    expect(wide.would_update_total).toBeGreaterThan(FIXES.length);
    expect(wide.would_update.every((i) => i.fixes === undefined)).toBe(true);
    await h.call('update-update-policy-v1', { policy_id: p.id, security_only: true });
  });

  it('a window run applies exactly the security fixes, and leaves the other updates pending', async () => {
    const p = (await h.call('list-update-policies-v1', {})).items.find((x) => x.name === 'Security')!;
    clock = Date.parse('2026-11-26T02:30:00Z');
    const [run] = await h.services.policies.tick(clock);
    const job = await until(
      () => h.services.jobs.find(run!.job_id),
      (j) => j?.status === 'completed' || j?.status === 'failed',
    );
    expect(job!.status).toBe('completed');
    const hist = (await h.call('list-update-history-v1', { per_page: 100 })).entries.filter((e) => e.actor.kind === 'policy');
    expect(hist.map((e) => `${ids.indexOf(e.site_id) + 1}:${e.type}:${e.slug}`).sort()).toEqual(FIXES);
    expect(hist.every((e) => e.outcome === 'updated' && e.actor.id === p.id)).toBe(true);
    expect(h.sim.state(1).plugins.find((x) => x.slug === 'smush/wp-smush.php')!.updateVersion).not.toBeNull();
    expect(h.sim.state(2).plugins.find((x) => x.slug === 'contact-form-7/wp-contact-form-7.php')!.updateVersion).not.toBeNull();
    clock = Date.parse('2026-11-26T00:00:00Z');
  });

  it('refuses a flag that is not a boolean, and security_only with nothing it could fix', async () => {
    const base = { name: 'X', all_sites: true, days: ['mon'], start: '01:00', end: '02:00' };
    expect(await h.fails('add-update-policy-v1', { ...base, security_only: 'maybe' })).toMatchObject({ status: 400 });
    expect(
      await h.fails('add-update-policy-v1', { ...base, security_only: true, core: 'none', plugins: false, themes: false }),
    ).toMatchObject({
      status: 400,
      code: 'svc_invalid_input',
      message: expect.stringMatching(/^security_only updates core, plugins or themes/),
    });
    expect((await h.call('list-update-policies-v1', {})).total).toBe(1);
  });
});
