// The vulnerability abilities through the registry on the child simulator (seed 1, sites 1–3), the fixture Wordfence
// feed served by a local HTTP server: the refresh (unconfigured, fetched, not modified), the fleet and per-site views
// against the fixtures' table of expected matches (filters, paging), the fix's dry run and a confirmed fix, and each
// refusal (unknown site, bad filter, read-only callers where the ability writes).
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';

const FIX = join(import.meta.dirname, '..', 'fixtures', 'vulnerabilities');
const expected = JSON.parse(readFileSync(join(FIX, 'expected-matches.json'), 'utf8')) as {
  records: Array<{ ref: string; wordfenceId: string; cve: string | null }>;
  expectations: Array<{
    where: string;
    slug: string;
    affectedBy: string[];
    informationalOnly: string[];
    fixedIn: Record<string, string | null>;
    offeredUpdate?: string | null;
  }>;
};
const refOfId = new Map(expected.records.map((r) => [r.wordfenceId, r.ref]));
const ref = (i: { id: string }) => refOfId.get(i.id)!;
const KEY = 'abil-key-123456';

/** Site n's non-informational matches as in the table: ref, feed slug, fixed-in, offered update. */
const siteTable = (n: number) =>
  expected.expectations
    .filter((e) => e.where === `simulator seed 1, site ${n}`)
    .flatMap((e) => e.affectedBy.map((r) => ({ ref: r, slug: e.slug, fixed: e.fixedIn[r] ?? null, offered: e.offeredUpdate ?? null })))
    .sort((a, b) => (a.ref + a.slug < b.ref + b.slug ? -1 : 1));
const fleetRefs = [...new Set([1, 2, 3].flatMap((n) => siteTable(n).map((r) => r.ref)))].sort();

let h: AbilityHarness;
let feed: Server;
let feedUrl = '';
let fetched = 0;

beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 3, seed: 1 } });
  await h.addSimSites(3);
  const body = readFileSync(join(FIX, 'wordfence-production.json'));
  feed = createServer((req, res) => {
    fetched++;
    if (req.headers.authorization !== `Bearer ${KEY}`) return void res.writeHead(401).end();
    if (req.headers['if-none-match'] === '"f1"') return void res.writeHead(304).end();
    res.writeHead(200, { 'content-type': 'application/json', etag: '"f1"' }).end(body);
  });
  await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
  feedUrl = `http://127.0.0.1:${(feed.address() as { port: number }).port}/production`;
});
afterAll(async () => {
  await h?.close();
  await new Promise((r) => feed?.close(r));
});

describe('refresh-vulnerability-feed-v1', () => {
  it('with no source configured: refused (409) without any fetch; the views answer empty', async () => {
    expect(await h.fails('refresh-vulnerability-feed-v1', {})).toMatchObject({ code: 'svc_feed_not_configured', status: 409 });
    expect(fetched).toBe(0);
    const empty = await h.call('list-vulnerabilities-v1', { page: 1, per_page: 20, include_informational: true });
    expect(empty).toMatchObject({ items: [], total: 0, feed: { source: null, records: 0 } });
    expect((await h.call('get-site-vulnerabilities-v1', { site_id_or_domain: 1, include_informational: true })).items).toEqual([]);
  });

  it('a read key, a viewer and read-only mode may not refresh (it writes and calls out)', async () => {
    // No scheduled refresh (0 = off): the job runner's would race the refreshes these tests ask for.
    await h.call('update-settings-v1', {
      vulnerability_source: 'wordfence',
      vulnerability_api_key: KEY,
      vulnerability_feed_url: feedUrl,
      vulnerability_refresh_hours: 0,
    });
    for (const who of [h.as.readKey, h.as.viewer, h.as.readOnlyLocal])
      expect(await h.fails('refresh-vulnerability-feed-v1', {}, who)).toMatchObject({ code: 'svc_permission_denied', status: 403 });
    expect(fetched).toBe(0);
  });

  it('fetches and imports the feed (20 records), then a second refresh is not modified; extra input is refused', async () => {
    const first = await h.call('refresh-vulnerability-feed-v1', {}, h.as.writeKey);
    expect(first).toMatchObject({ status: 'updated', feed: { source: 'wordfence', records: 20, skipped: 0, last_error: null } });
    expect(first.feed.imported_at).toEqual(expect.any(String));
    const again = await h.call('refresh-vulnerability-feed-v1', {});
    expect(again).toMatchObject({ status: 'not_modified', feed: { records: 20, imported_at: first.feed.imported_at } });
    expect(await h.fails('refresh-vulnerability-feed-v1', { force: true })).toMatchObject({ code: 'ability_invalid_input', status: 400 });
  });
});

describe('get-site-vulnerabilities-v1', () => {
  it('each site lists exactly the table’s matches with fixed-in and the offered update; a viewer may read', async () => {
    for (const n of [1, 2, 3]) {
      const r = await h.call('get-site-vulnerabilities-v1', { site_id_or_domain: n, include_informational: false }, h.as.viewer);
      expect(r.site).toMatchObject({ id: n, url: h.sim.sites[n - 1]!.url, client_id: null });
      expect(r.total).toBe(r.items.length);
      const got = r.items
        .map((i) => ({ ref: ref(i), slug: i.install.slug, fixed: i.install.fixed_in, offered: i.install.update_version }))
        .sort((a, b) => (a.ref + a.slug < b.ref + b.slug ? -1 : 1));
      expect(got, `site ${n}`).toEqual(siteTable(n));
      for (const i of r.items) expect(i).toMatchObject({ source: 'wordfence', informational: false, install: { site_id: n } });
      // Most severe first.
      const scores = r.items.map((i) => i.cvss?.score ?? -1);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
    }
  });

  it('informational records only when asked (site 1: WF-19 on classic-editor)', async () => {
    const r = await h.call('get-site-vulnerabilities-v1', { site_id_or_domain: 1, include_informational: true }, h.as.readKey);
    expect(r.items.filter((i) => i.informational).map((i) => [ref(i), i.install.slug])).toEqual([['WF-19', 'classic-editor']]);
    expect(r.total).toBe(siteTable(1).length + 1);
  });

  it('an unknown site is 404; a bad flag is 400', async () => {
    expect(await h.fails('get-site-vulnerabilities-v1', { site_id_or_domain: 9999 })).toMatchObject({
      code: 'svc_site_not_found',
      status: 404,
    });
    expect(await h.fails('get-site-vulnerabilities-v1', { site_id_or_domain: 'no-such-site.example' })).toMatchObject({
      code: 'svc_site_not_found',
      status: 404,
    });
    expect(await h.fails('get-site-vulnerabilities-v1', { site_id_or_domain: 1, include_informational: 'yes' })).toMatchObject({
      code: 'ability_invalid_input',
      status: 400,
    });
  });
});

describe('list-vulnerabilities-v1', () => {
  const all = () => h.call('list-vulnerabilities-v1', { page: 1, per_page: 100, include_informational: false }, h.as.readKey);

  it('one entry per record across the fleet, most severe first, with its installs', async () => {
    const r = await all();
    expect(r.total).toBe(fleetRefs.length);
    expect(r.items.map(ref).sort()).toEqual(fleetRefs);
    expect(r).toMatchObject({ page: 1, per_page: 100, feed: { source: 'wordfence', records: 20 } });
    const scores = r.items.map((i) => i.cvss?.score ?? -1);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    for (const item of r.items) {
      const sites = [1, 2, 3].filter((n) => siteTable(n).some((t) => t.ref === ref(item)));
      expect(
        item.installs.map((i) => i.site_id),
        ref(item),
      ).toEqual(sites);
      expect(item).toMatchObject({ sites_affected: sites.length, installs_total: sites.length });
      expect(item.fixable).toBe(item.installs.some((i) => i.fixed_in !== null));
      expect(item.attribution.feed).toBe('Wordfence Intelligence');
    }
    expect(r.items.find((i) => ref(i) === 'WF-11')).toMatchObject({ updates_pending: 2, fixable: true });
    expect(r.items.find((i) => ref(i) === 'WF-15')).toMatchObject({ updates_pending: 0, fixable: false });
  });

  it('filters by severity, site, slug (feed slug or plugin file), fixable and informational', async () => {
    const full = await all();
    const high = await h.call('list-vulnerabilities-v1', { severity: 'high' }, h.as.viewer);
    expect(high.items.map(ref)).toEqual(full.items.filter((i) => i.severity === 'high' || i.severity === 'critical').map(ref));
    expect(high.total).toBeGreaterThan(0);
    expect(high.total).toBeLessThan(full.total);
    expect((await h.call('list-vulnerabilities-v1', { severity: 'critical' })).items.map(ref).sort()).toEqual(['WF-12', 'WF-17']);
    for (const n of [1, 2, 3]) {
      const bySite = await h.call('list-vulnerabilities-v1', { site: n, per_page: 100 });
      expect(bySite.items.map(ref).sort(), `site ${n}`).toEqual([...new Set(siteTable(n).map((t) => t.ref))].sort());
      for (const i of bySite.items) expect(i.installs.every((x) => x.site_id === n)).toBe(true);
    }
    const smush = await h.call('list-vulnerabilities-v1', { slug: 'smush' });
    expect(smush.items.map((i) => [ref(i), i.installs.map((x) => x.version)])).toEqual([['WF-15', ['8.19.5', '6.15.6']]]);
    const seo = await h.call('list-vulnerabilities-v1', { slug: 'wordpress-seo/wp-seo.php' });
    expect(seo.items.map((i) => [ref(i), i.installs[0]!.fixed_in, i.installs[0]!.update_pending])).toEqual([['WF-16', '7.17.0', true]]);
    expect((await h.call('list-vulnerabilities-v1', { fixable: false })).items.map(ref)).toEqual(['WF-15']);
    const fixable = await h.call('list-vulnerabilities-v1', { fixable: true, per_page: 100 });
    expect(fixable.items.map(ref).sort()).toEqual(fleetRefs.filter((r) => r !== 'WF-15'));
    expect((await h.call('list-vulnerabilities-v1', { site: 2, slug: 'elementor' })).total).toBe(0);
    const withInfo = await h.call('list-vulnerabilities-v1', { include_informational: true, per_page: 100 });
    expect(withInfo.total).toBe(fleetRefs.length + 1);
    expect(withInfo.items.find((i) => ref(i) === 'WF-19')).toMatchObject({ informational: true, sites_affected: 1 });
  });

  it('installs_per_record lists that many installs (0: counts only); past 100 is refused', async () => {
    const one = await h.call('list-vulnerabilities-v1', { installs_per_record: 1, per_page: 100 });
    const wf11 = one.items.find((i) => ref(i) === 'WF-11')!;
    expect(wf11.installs).toHaveLength(1);
    expect(wf11.installs_total).toBeGreaterThan(1);
    const none = await h.call('list-vulnerabilities-v1', { installs_per_record: 0, per_page: 100 });
    expect(none.items.every((i) => i.installs.length === 0 && i.installs_total > 0)).toBe(true);
    expect(await h.fails('list-vulnerabilities-v1', { installs_per_record: 101 })).toMatchObject({ status: 400 });
  });

  it("the fleet's security view counts the same vulnerabilities by severity, installs and sites", async () => {
    const full = await all();
    const sec = await h.call('get-security-issues-v1', { per_page: 1 }, h.as.viewer);
    const bySeverity = { critical: 0, high: 0, medium: 0, low: 0, none: 0, unscored: 0 };
    for (const i of full.items) bySeverity[i.severity ?? 'unscored']++;
    const installs = [1, 2, 3].flatMap((n) => siteTable(n));
    expect(sec.vulnerabilities).toEqual({
      vulnerabilities: fleetRefs.length,
      sites: [1, 2, 3].filter((n) => siteTable(n).length).length,
      installs: installs.length,
      by_severity: bySeverity,
    });
    expect(sec.vulnerabilities.by_severity.critical).toBe(2);
  });

  it('pages: pages of 3 put together are the whole list; past the end is empty', async () => {
    const full = await all();
    const keys: string[] = [];
    for (const page of [1, 2, 3]) {
      const p = await h.call('list-vulnerabilities-v1', { page, per_page: 3 });
      expect(p).toMatchObject({ page, per_page: 3, total: full.total });
      keys.push(...p.items.map((i) => i.key));
    }
    expect(keys).toEqual(full.items.map((i) => i.key));
    expect((await h.call('list-vulnerabilities-v1', { page: 9, per_page: 3 })).items).toEqual([]);
  });

  it('refuses a bad filter (400) and an unknown site (404)', async () => {
    for (const bad of [
      { severity: 'urgent' },
      { fixable: 'on' }, // a flag not clearly true or false ("true" and 1 are read as true)
      { slug: '' },
      { slug: 'x'.repeat(201) },
      { per_page: 1000 },
      { page: 0 },
      { include_informational: 2 },
    ])
      expect(await h.fails('list-vulnerabilities-v1', bad), JSON.stringify(bad)).toMatchObject({
        code: 'ability_invalid_input',
        status: 400,
      });
    expect(await h.fails('list-vulnerabilities-v1', { site: 9999 })).toMatchObject({ code: 'svc_site_not_found', status: 404 });
  });
});

describe('fix-vulnerabilities-v1', () => {
  const plan = (s: { planned: Array<{ slug: string; to: string }> }) => s.planned.map((p) => `${p.slug}→${p.to}`).sort();
  const stuck = (s: { not_fixable: Array<{ slug: string; reason: string; fixed_in: string | null; update_version: string | null }> }) =>
    s.not_fixable.map((p) => [p.slug, p.reason, p.fixed_in, p.update_version]).sort();

  it('a dry run plans per site what the offered update fixes, says why not for the rest, and calls no site', async () => {
    const before = [1, 2, 3].map((n) => h.sim.requests(n));
    const r = await h.call('fix-vulnerabilities-v1', { dry_run: true });
    expect([1, 2, 3].map((n) => h.sim.requests(n))).toEqual(before);
    expect(r.dry_run).toBe(true);
    expect(r.sites.map((s) => s.site_id)).toEqual([1, 2, 3]);
    const [s1, s2, s3] = r.sites;
    expect(plan(s1!)).toEqual(['wordpress-seo→7.17.0', 'wordpress→6.8.2']);
    expect(stuck(s1!)).toEqual([['elementor', 'no_update_offered', '1.5.6', null]]);
    expect(plan(s2!)).toEqual([]);
    expect(stuck(s2!)).toEqual([
      ['contact-form-7', 'offered_update_not_fixed', '5.0.0', '4.1.0'],
      ['oceanwp', 'no_update_offered', '8.10.3', null],
      ['smush', 'no_fix_known', null, null],
    ]);
    expect(plan(s3!)).toEqual(['oceanwp→8.11.0', 'wordpress→6.8.2']);
    expect(stuck(s3!)).toEqual([
      ['elementor', 'no_update_offered', '9.17.7', null],
      ['smush', 'no_fix_known', null, null],
      ['wp-file-manager', 'no_update_offered', '7.2', null],
    ]);
    for (const s of r.sites) expect([s.updated, s.errors, s.skipped]).toEqual([[], [], []]);
    expect(r.summary).toEqual({ sites: 3, planned: 4, updated: 0, errors: 0, not_fixable: 7 });
  });

  it('a dry run narrows by record (feed id or CVE id), by slug and by site', async () => {
    const byCve = await h.call('fix-vulnerabilities-v1', { dry_run: true, vulnerabilities: ['CVE-2099-0116'] });
    expect(byCve.sites.map((s) => [s.site_id, plan(s)])).toEqual([[1, ['wordpress-seo→7.17.0']]]);
    const wf11 = expected.records.find((r) => r.ref === 'WF-11')!.wordfenceId;
    const byId = await h.call('fix-vulnerabilities-v1', { dry_run: true, vulnerabilities: [wf11] });
    expect(byId.sites.map((s) => [s.site_id, plan(s)])).toEqual([
      [1, ['wordpress→6.8.2']],
      [3, ['wordpress→6.8.2']],
    ]);
    const bySlug = await h.call('fix-vulnerabilities-v1', { dry_run: true, slug: 'oceanwp', sites: [3] });
    expect(bySlug.sites.map((s) => [s.site_id, plan(s), s.not_fixable])).toEqual([[3, ['oceanwp→8.11.0'], []]]);
    expect((await h.call('fix-vulnerabilities-v1', { dry_run: true, vulnerabilities: ['CVE-1999-0001'] })).summary).toMatchObject({
      sites: 0,
      planned: 0,
    });
  });

  it('refuses without confirm, with both dry_run and confirm, unknown sites, bad input, and read-only callers', async () => {
    const before = [1, 2, 3].map((n) => h.sim.requests(n));
    expect(await h.fails('fix-vulnerabilities-v1', {})).toMatchObject({ code: 'svc_confirmation_required', status: 400 });
    expect(await h.fails('fix-vulnerabilities-v1', { dry_run: true, confirm: true })).toMatchObject({
      code: 'svc_invalid_input',
      status: 400,
    });
    expect(await h.fails('fix-vulnerabilities-v1', { sites: [9999], dry_run: true })).toMatchObject({
      code: 'svc_site_not_found',
      status: 404,
    });
    expect(await h.fails('fix-vulnerabilities-v1', { dry_run: 'yes' })).toMatchObject({ code: 'ability_invalid_input', status: 400 });
    expect(await h.fails('fix-vulnerabilities-v1', { dry_run: true, vulnerabilities: [''] })).toMatchObject({
      code: 'ability_invalid_input',
    });
    for (const who of [h.as.readKey, h.as.viewer, h.as.readOnlyLocal])
      expect(await h.fails('fix-vulnerabilities-v1', { sites: [3], confirm: true }, who)).toMatchObject({
        code: 'svc_permission_denied',
        status: 403,
      });
    expect([1, 2, 3].map((n) => h.sim.requests(n))).toEqual(before);
  });

  it('confirmed on site 3: updates core and oceanwp; the site is left with only what no offered update fixes', async () => {
    const r = await h.call('fix-vulnerabilities-v1', { sites: [3], confirm: true }, h.as.writeKey);
    expect(r.dry_run).toBe(false);
    expect(r.sites[0]!.updated.map((u) => `${u.slug} ${u.new_version}`).sort()).toEqual(['oceanwp 8.11.0', 'wordpress 6.8.2']);
    expect(r.summary).toMatchObject({ sites: 1, planned: 2, updated: 2, errors: 0, not_fixable: 3 });
    const after = await h.call('get-site-vulnerabilities-v1', { site_id_or_domain: 3 });
    expect(after.items.map(ref).sort()).toEqual(['WF-14', 'WF-15', 'WF-17']);
    // Site 1 was not touched: still the table's matches.
    expect((await h.call('get-site-vulnerabilities-v1', { site_id_or_domain: 1 })).total).toBe(siteTable(1).length);
    expect((await h.call('list-vulnerabilities-v1', { site: 3, fixable: true })).items.map(ref).sort()).toEqual(['WF-14', 'WF-17']);
  });
});
