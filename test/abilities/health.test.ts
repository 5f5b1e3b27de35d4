// Site health and update history through the registry, over the child simulator (issue 28): a probe of the home page,
// wp-login.php and extra paths; what a broken update does to them (WordPress's critical-error page, PHP error text, a
// missing title); the content marker; the response-time baseline; who may probe; every update attempt in the history,
// its filters and paging. (The probe's own bounds: test/health-probe.test.ts; the doors: test/health-rest.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';

let h: AbilityHarness;
let ids: number[];

/** A simulated site (1-based) with a pending plugin update, and that plugin's slug. */
function pluginUpdate(k: number): string {
  const p = h.sim.state(k).plugins.find((x) => x.updateVersion);
  if (!p) throw new Error(`simulated site ${k} has no plugin update pending`);
  return p.slug;
}
function siteWithPluginUpdates(n: number, not: number[] = []): number {
  for (let i = 1; i <= h.sim.sites.length; i++)
    if (!not.includes(i) && h.sim.state(i).plugins.filter((p) => p.updateVersion).length >= n) return i;
  throw new Error('no simulated site fits');
}

beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 8 } });
  ids = (await h.addSimSites()).map((s) => s.id);
  await h.call('sync-sites-v1', {});
});
afterAll(() => h.close());

describe('check-site-health-v1 and get-site-health-v1', () => {
  it('probes the home page and wp-login.php, learns the title as the marker, and stores the result', async () => {
    const before = await h.call('get-site-health-v1', { site_id_or_domain: ids[0]! }, h.as.viewer);
    expect(before).toMatchObject({ site_id: ids[0], health: null, title: null, settings: { urls: [], keyword: '' } });
    const first = await h.call('check-site-health-v1', { site_id_or_domain: ids[0]! });
    expect(first.health).toMatchObject({ status: 'healthy', summary: 'healthy', marker: { source: 'none', found: false } });
    expect(first.health!.pages.map((p) => [p.kind, p.http_status, p.ok])).toEqual([
      ['home', 200, true],
      ['login', 200, true],
    ]);
    expect(first.health!.pages[1]!.url).toBe(`${h.sim.sites[0]!.url}wp-login.php`);
    expect(first.title).toBe('Simulated site 1');
    const second = await h.call('check-site-health-v1', { site_id_or_domain: ids[0]! });
    expect(second.health!.marker).toEqual({ text: 'Simulated site 1', source: 'title', found: true });
    const stored = await h.call('get-site-health-v1', { site_id_or_domain: h.sim.sites[0]!.url }, h.as.readKey);
    expect(stored.health).toEqual(second.health);
    expect(stored.baseline_ms).not.toBeNull();
  });

  it('is an outgoing call: viewers, read keys and the read-only process get the stored result only', async () => {
    const requests = h.sim.requests(1);
    for (const who of [h.as.viewer, h.as.readKey, h.as.readOnlyLocal])
      expect(await h.fails('check-site-health-v1', { site_id_or_domain: ids[0]! }, who)).toMatchObject({
        code: 'svc_permission_denied',
        status: 403,
      });
    expect(h.sim.requests(1)).toBe(requests);
    expect(await h.fails('check-site-health-v1', { site_id_or_domain: 99999 })).toMatchObject({ code: 'svc_site_not_found' });
    expect(await h.fails('get-site-health-v1', { site_id_or_domain: 'nowhere.test' })).toMatchObject({ code: 'svc_site_not_found' });
  });

  it('probes the extra paths set with update-site-v1; a missing one makes the site unhealthy', async () => {
    await h.call('update-site-v1', { site_id_or_domain: ids[1]!, health_urls: ['/sample-page/'] });
    const good = await h.call('check-site-health-v1', { site_id_or_domain: ids[1]! });
    expect(good.settings.urls).toEqual(['/sample-page/']);
    expect(good.health!.pages.map((p) => [p.kind, p.url, p.ok])).toEqual([
      ['home', h.sim.sites[1]!.url, true],
      ['login', `${h.sim.sites[1]!.url}wp-login.php`, true],
      ['extra', `${h.sim.sites[1]!.url}sample-page/`, true],
    ]);
    await h.call('update-site-v1', { site_id_or_domain: ids[1]!, health_urls: ['/sample-page/', '/shop/'] });
    const bad = await h.call('check-site-health-v1', { site_id_or_domain: ids[1]! });
    expect(bad.health).toMatchObject({ status: 'unhealthy' });
    expect(bad.health!.pages[3]).toMatchObject({ kind: 'extra', http_status: 404, ok: false, problem: 'http_status' });
    expect(bad.health!.summary).toContain('/shop/ http_status (HTTP 404)');
    // A path that looks like an address is still a path on the site: the probe never leaves it.
    await h.call('update-site-v1', { site_id_or_domain: ids[1]!, health_urls: ['/http://elsewhere.test/x'] });
    const odd = await h.call('check-site-health-v1', { site_id_or_domain: ids[1]! });
    expect(odd.health!.pages[2]).toMatchObject({ url: `${h.sim.sites[1]!.url}http://elsewhere.test/x`, http_status: 404 });
    await h.call('update-site-v1', { site_id_or_domain: ids[1]!, health_urls: [] });
  });

  it('refuses an extra URL that is not a path on the site, and more than 10 of them', async () => {
    for (const bad of ['https://elsewhere.test/', '//elsewhere.test/x', 'shop/', '/a b'])
      expect(await h.fails('update-site-v1', { site_id_or_domain: ids[1]!, health_urls: [bad] })).toMatchObject({
        code: 'svc_invalid_health_url',
        status: 400,
      });
    const ten = Array.from({ length: 10 }, (_, i) => `/p${i}/`);
    expect((await h.call('update-site-v1', { site_id_or_domain: ids[1]!, health_urls: ten })).id).toBe(ids[1]);
    expect((await h.call('get-site-health-v1', { site_id_or_domain: ids[1]! })).settings.urls).toEqual(ten);
    expect(await h.fails('update-site-v1', { site_id_or_domain: ids[1]!, health_urls: [...ten, '/p10/'] })).toMatchObject({ status: 400 });
    expect((await h.call('get-site-health-v1', { site_id_or_domain: ids[1]! })).settings.urls).toEqual(ten);
    await h.call('update-site-v1', { site_id_or_domain: ids[1]!, health_urls: [] });
  });

  it('a keyword set per site is the marker; missing from the home page, the site is unhealthy', async () => {
    await h.call('update-site-v1', { site_id_or_domain: ids[2]!, health_keyword: 'just another wordpress' });
    const found = await h.call('check-site-health-v1', { site_id_or_domain: ids[2]! });
    expect(found.health!.marker).toEqual({ text: 'just another wordpress', source: 'keyword', found: true });
    await h.call('update-site-v1', { site_id_or_domain: ids[2]!, health_keyword: 'Checkout' });
    const missing = await h.call('check-site-health-v1', { site_id_or_domain: ids[2]! });
    expect(missing.health).toMatchObject({ status: 'unhealthy', marker: { text: 'Checkout', found: false } });
    expect(missing.health!.pages[0]).toMatchObject({ problem: 'content_missing', http_status: 200 });
    await h.call('update-site-v1', { site_id_or_domain: ids[2]!, health_keyword: '' });
  });
});

describe('what a broken update does, as the probe sees it', () => {
  it("fatal: WordPress's critical-error page on the home and login pages", async () => {
    const k = siteWithPluginUpdates(1);
    const slug = pluginUpdate(k);
    await h.call('check-site-health-v1', { site_id_or_domain: ids[k - 1]! });
    h.sim.breakOnUpdate(k, slug, 'fatal');
    // Plain mode: safe mode would put it back at once (safe-updates.test.ts).
    await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [slug], safe: false });
    const r = await h.call('check-site-health-v1', { site_id_or_domain: ids[k - 1]! });
    expect(r.health!.status).toBe('unhealthy');
    expect(r.health!.pages.map((p) => [p.kind, p.http_status, p.problem])).toEqual([
      ['home', 500, 'fatal_error'],
      ['login', 500, 'fatal_error'],
    ]);
    h.sim.setFrontEnd(k, null);
    expect((await h.call('check-site-health-v1', { site_id_or_domain: ids[k - 1]! })).health!.status).toBe('healthy');
  });

  it('no_title: 200 everywhere, but the home page lacks the site title (the content marker)', async () => {
    const k = 5;
    await h.call('check-site-health-v1', { site_id_or_domain: ids[k - 1]! }); // learns the title
    h.sim.setFrontEnd(k, { effect: 'no_title', by: 'rc-alpha 1.3.0' });
    const r = await h.call('check-site-health-v1', { site_id_or_domain: ids[k - 1]! });
    expect(r.health).toMatchObject({ status: 'unhealthy', marker: { source: 'title', found: false } });
    expect(r.health!.pages.map((p) => [p.kind, p.http_status, p.problem])).toEqual([
      ['home', 200, 'content_missing'],
      ['login', 200, null],
    ]);
    h.sim.setFrontEnd(k, null);
  });

  it("php_error: PHP's fatal error text in a page that answers 200", async () => {
    const k = 6;
    h.sim.setFrontEnd(k, { effect: 'php_error', by: 'broken-plugin' });
    const r = await h.call('check-site-health-v1', { site_id_or_domain: ids[k - 1]! });
    expect(r.health!.pages[0]).toMatchObject({
      http_status: 200,
      problem: 'php_error',
      message: 'PHP fatal error text on the page (HTTP 200).',
    });
    h.sim.setFrontEnd(k, null);
  });

  it('a site that does not answer is unhealthy with the cause', async () => {
    h.sim.setFault(7, { type: 'down' });
    const r = await h.call('check-site-health-v1', { site_id_or_domain: ids[6]! });
    expect(r.health!.pages[0]).toMatchObject({ http_status: 0, problem: 'unreachable' });
    h.sim.setFault(7, null);
  });

  it("is slow (degraded, not unhealthy) when the home page takes far longer than the site's baseline", async () => {
    const k = 8;
    for (let n = 0; n < 3; n++) await h.call('check-site-health-v1', { site_id_or_domain: ids[k - 1]! });
    const base = (await h.call('get-site-health-v1', { site_id_or_domain: ids[k - 1]! })).baseline_ms!;
    expect(base).toBeLessThan(300);
    h.sim.setFault(k, { type: 'latency', ms: base * 3 + 1200 });
    const r = await h.call('check-site-health-v1', { site_id_or_domain: ids[k - 1]! });
    h.sim.setFault(k, null);
    expect(r.health).toMatchObject({ status: 'degraded', slow: true, baseline_ms: base });
    expect(r.health!.summary).toMatch(/^degraded: slow: home \d+ ms against a baseline of \d+ ms$/);
  });
});

describe('list-update-history-v1', () => {
  it('records each update attempt: updated and failed, from, to, who, when, how long', async () => {
    const k = siteWithPluginUpdates(2, [1, 2, 3, 5, 6, 7, 8]);
    const [ok, bad] = h.sim
      .state(k)
      .plugins.filter((p) => p.updateVersion)
      .slice(0, 2);
    const [okFrom, okTo] = [ok!.version, ok!.updateVersion];
    h.sim.failUpdate(k, bad!.slug, 'Download failed. Not Found');
    const startedAt = new Date().toISOString();
    await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [ok!.slug, bad!.slug] }, h.as.writeKey);
    const r = await h.call('list-update-history-v1', { site_id_or_domain: ids[k - 1]!, since: startedAt }, h.as.viewer);
    expect(r.total).toBe(2);
    const byOutcome = Object.fromEntries(r.entries.map((e) => [e.outcome, e]));
    expect(byOutcome.updated).toMatchObject({
      site_id: ids[k - 1],
      type: 'plugin',
      slug: ok!.slug,
      from: okFrom,
      to: okTo,
      reason: '',
      actor: { kind: 'key', name: 'write' },
      safe: true,
      probe: { before: 'healthy', after: 'healthy', summary: 'healthy' },
    });
    // A failed update is not probed after (nothing changed): the probe before is its evidence.
    expect(byOutcome.failed).toMatchObject({
      slug: bad!.slug,
      code: 'svc_update_failed',
      reason: 'Download failed. Not Found',
      probe: { before: 'healthy', after: null },
    });
    expect(Date.parse(byOutcome.updated!.at)).toBeGreaterThanOrEqual(Date.parse(startedAt));
    expect(byOutcome.updated!.duration_ms).toBeGreaterThanOrEqual(0);
    h.sim.failUpdate(k, bad!.slug, null);
    // Per item, by outcome, fleet-wide.
    const item = await h.call('list-update-history-v1', { type: 'plugin', slug: bad!.slug, outcomes: ['failed'] });
    expect(item.entries.map((e) => e.site_id)).toEqual([ids[k - 1]]);
    const fleet = await h.call('list-update-history-v1', { outcomes: ['updated'], per_page: 100 });
    expect(fleet.entries.every((e) => e.outcome === 'updated')).toBe(true);
    expect(fleet.entries.some((e) => e.slug === ok!.slug && e.site_id === ids[k - 1])).toBe(true);
  });

  it('answers newest first, paged, with time bounds; refuses a bad date and an unknown site', async () => {
    const all = await h.call('list-update-history-v1', { per_page: 100 });
    expect(all.total).toBeGreaterThanOrEqual(3);
    const ids_ = all.entries.map((e) => e.id);
    expect(ids_).toEqual([...ids_].sort((a, b) => b - a));
    const p2 = await h.call('list-update-history-v1', { per_page: 1, page: 2 });
    expect(p2).toMatchObject({ total: all.total, page: 2, per_page: 1, entries: [{ id: ids_[1] }] });
    expect((await h.call('list-update-history-v1', { until: '2000-01-01' })).total).toBe(0);
    expect((await h.call('list-update-history-v1', { since: '2000-01-01T00:00:00Z' })).total).toBe(all.total);
    expect(await h.fails('list-update-history-v1', { since: 'yesterday' })).toMatchObject({ code: 'svc_invalid_date', status: 400 });
    expect(await h.fails('list-update-history-v1', { since: '2026-02-01', until: '2026-01-01' })).toMatchObject({
      code: 'svc_invalid_date',
    });
    expect(await h.fails('list-update-history-v1', { site_id_or_domain: 99999 })).toMatchObject({ code: 'svc_site_not_found' });
    expect(await h.fails('list-update-history-v1', { per_page: 101 })).toMatchObject({ status: 400 });
  });
});
