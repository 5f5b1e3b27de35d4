// Known vulnerabilities (issue 30): the comparator, both feed shapes against the fixtures' table of expected matches,
// the streamed import (bounded, refusing a cut feed and keeping the previous data), the HTTP refresh with conditional
// requests, and the views and the fix through the registry on the child simulator (seed 1, sites 1–3).
import { readFileSync, readdirSync, writeFileSync, createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { compareParsed, compareVersions, partsOf } from '../src/domain/vulnerabilities/version.js';
import { FeedIndex, pluginSlug, type InstalledItem } from '../src/domain/vulnerabilities/matching.js';
import {
  MAX_RECORD_BYTES,
  normaliseWpvulnerability,
  streamWordfenceFeed,
  type SoftwareType,
  type VulnRecord,
} from '../src/domain/vulnerabilities/records.js';
import type { VulnEvent } from '../src/domain/vulnerabilities/service.js';
import type { FeedState } from '../src/domain/vulnerabilities/feed-store.js';
import { testFleetStore } from './support/server.js';
import { openAbilities, type AbilityHarness } from './support/abilities.js';
import { startChildSim } from '../src/child/simulator/server.js';
import { loadConfig } from '../src/config.js';
import { closeServices, openServices } from '../src/domain/index.js';
import { openStore } from '../src/store/open.js';
import { buildRegistry } from '../src/abilities/index.js';
import { until } from './support/wait.js';

const FIX = join(import.meta.dirname, 'fixtures', 'vulnerabilities');
const WF_FILE = join(FIX, 'wordfence-production.json');
const expected = JSON.parse(readFileSync(join(FIX, 'expected-matches.json'), 'utf8')) as {
  records: Array<{ ref: string; wordfenceId: string; cve: string | null; informational: boolean }>;
  expectations: Array<{
    where: string;
    type: SoftwareType;
    slug: string;
    version: string;
    affectedBy: string[];
    informationalOnly: string[];
    fixedIn: Record<string, string | null>;
    offeredUpdate?: string | null;
    offeredUpdateClears?: Record<string, boolean>;
  }>;
};
const refOfId = new Map(expected.records.map((r) => [r.wordfenceId, r.ref]));

async function* chunks(text: string, size = 4096) {
  for (let i = 0; i < text.length; i += size) yield text.slice(i, i + size);
}

async function wordfenceRecords(): Promise<VulnRecord[]> {
  const out: VulnRecord[] = [];
  await streamWordfenceFeed(createReadStream(WF_FILE, { highWaterMark: 1024 }), (r) => void out.push(r), 1e9);
  return out;
}

function wpvRecords(): VulnRecord[] {
  const dir = join(FIX, 'wpvulnerability');
  return readdirSync(dir).flatMap((f) => {
    const m = /^(plugin|theme|core)-(.+)\.json$/.exec(f)!;
    return normaliseWpvulnerability(JSON.parse(readFileSync(join(dir, f), 'utf8')), { type: m[1] as SoftwareType, slug: m[2]! });
  });
}

const indexOf = (records: VulnRecord[]) => {
  const idx = new FeedIndex();
  for (const r of records) idx.add(r, 1);
  return idx;
};
const item = (e: (typeof expected.expectations)[number]): InstalledItem => ({
  type: e.type,
  slug: e.slug,
  ref: e.slug,
  name: e.slug,
  version: e.version,
  offered: e.offeredUpdate ?? null,
});

describe('the comparator (wordfence-cli rules, a missing component is 0)', () => {
  it.each([
    ['1.2', '1.2.0', 0],
    ['1.5', '1.5.0', 0],
    ['7.12.1', '7.2', 1],
    ['2.0.0', '2.0.0-rc2', 1],
    ['2.0.0-beta1', '2.0.0-rc2', -1],
    ['1.0-dev', '1.0', -1],
    ['1.0.0pl1', '1.0.0', 1],
    ['6.9-alpha-60123', '6.9', -1],
    ['6.9-RC1', '6.9-beta3', 1],
    ['1.0.0.1', '1.0.0', 1],
    ['v1.2', '1.2', 0],
    ['2024.10.01', '2024.9.30', 1],
    ['1.0rc1', '1.0.rc.1', 0],
    ['99999999999999999999.1', '99999999999999999998.9', 1],
  ])('%s vs %s → %i', (a, b, want) => {
    expect(compareVersions(a, b)).toBe(want);
    expect(compareVersions(b, a)).toBe(-want || 0);
  });

  // Versions of every tier and length: words, pl, leading zeros, six parts, numbers past 2^53.
  const GRID = [
    '1',
    '1.0',
    '1.0.0',
    '1.0.0.0.0.1',
    '1.0-dev',
    '1.0-alpha',
    '1.0a',
    '1.0-beta2',
    '1.0-RC1',
    '1.0rc',
    '1.0pl1',
    '1.0.foo',
    '1.0.bar',
    '01.2',
    '1.2',
    '1.10',
    '1.2.3.4.5',
    '1.2.3.4.5.6',
    '1.2.3.4.5.6.7',
    '2',
    '20260101.1',
    '99999999999999999999.1',
    '99999999999999999998.9',
    '1.0.99999999999999999999',
    '6.9-alpha-60123',
    '6.9',
    '6.9-RC1',
  ];

  it('compares by keys as it does by parts, for every pair of versions of every kind', () => {
    for (const a of GRID) for (const b of GRID) expect(compareVersions(a, b), `${a} vs ${b}`).toBe(compareParsed(partsOf(a), partsOf(b)));
  });

  it('matches versions and bounds of any length as a range-by-range check does (table and fallback alike)', () => {
    const idx = new FeedIndex();
    const ranges: Array<{ key: string; from: string | null; fromInc: boolean; to: string | null; toInc: boolean }> = [];
    let n = 0;
    // One slug whose bounds all fit the table, one with a six-part bound and one with a number past 2^53 (no table).
    for (const [slug, extra] of [
      ['short', '1.2'],
      ['long', '1.2.3.4.5.6'],
      ['huge', '99999999999999999998.9'],
    ] as const) {
      const bounds = [null, '1.0', '1.0-RC1', '1.2', extra, '6.9'];
      for (const from of bounds)
        for (const to of bounds)
          for (const inc of [true, false]) {
            const key = `t:${n++}`;
            const r = { from, from_inclusive: inc, to, to_inclusive: !inc };
            ranges.push({ key: `${slug}|${key}`, from, fromInc: inc, to, toInc: !inc });
            idx.add(
              {
                key,
                informational: false,
                cvss: null,
                software: [{ type: 'plugin', slug, name: slug, ranges: [r], patched: false, patched_versions: [] }],
              } as unknown as VulnRecord,
              1,
            );
          }
    }
    for (const slug of ['short', 'long', 'huge'])
      for (const v of GRID) {
        const got = idx.match({ type: 'plugin', slug, ref: slug, name: slug, version: v, offered: null }).map((h) => h.key);
        const want = ranges
          .filter((r) => r.key.startsWith(`${slug}|`))
          .filter((r) => {
            const lo = r.from === null ? 1 : compareParsed(partsOf(v), partsOf(r.from));
            const hi = r.to === null ? -1 : compareParsed(partsOf(v), partsOf(r.to));
            return (lo > 0 || (lo === 0 && r.fromInc)) && (hi < 0 || (hi === 0 && r.toInc));
          })
          .map((r) => r.key.split('|')[1]);
        expect(got, `${slug} ${v}`).toEqual(want);
      }
  });

  it('names plugins by their folder, single-file plugins by their file name', () => {
    expect(pluginSlug('akismet/akismet.php')).toBe('akismet');
    expect(pluginSlug('hello.php')).toBe('hello');
  });
});

describe('both feed shapes give the table of expected matches', () => {
  it('Wordfence: every expectation, affected, informational and fixed-in, exactly', async () => {
    const records = await wordfenceRecords();
    expect(records).toHaveLength(20);
    const idx = indexOf(records);
    for (const e of expected.expectations) {
      const hits = idx.match(item(e));
      const refs = (inf: boolean) =>
        hits
          .filter((h) => h.informational === inf)
          .map((h) => refOfId.get(h.key.replace('wordfence:', ''))!)
          .sort();
      expect(refs(false), `${e.where} ${e.type}:${e.slug} ${e.version}`).toEqual([...e.affectedBy].sort());
      expect(refs(true), `${e.where} ${e.slug} informational`).toEqual([...e.informationalOnly].sort());
      const fixed = Object.fromEntries(
        hits.filter((h) => !h.informational).map((h) => [refOfId.get(h.key.replace('wordfence:', ''))!, h.fixed_in]),
      );
      expect(fixed, `${e.where} ${e.slug} fixedIn`).toEqual(e.fixedIn);
      for (const [ref, clears] of Object.entries(e.offeredUpdateClears ?? {})) {
        expect(
          hits.find((h) => refOfId.get(h.key.replace('wordfence:', '')) === ref)!.offered_clears,
          `${e.slug} offered clears ${ref}`,
        ).toBe(clears);
      }
    }
  });

  it('WPVulnerability: the same matches (no informational records there), fixed-in wherever the shape names it', () => {
    const idx = indexOf(wpvRecords());
    for (const e of expected.expectations) {
      const hits = idx.match(item(e));
      const refs = hits.map((h) => wpvRef(h.key)).sort();
      expect([...new Set(refs)], `${e.where} ${e.type}:${e.slug} ${e.version}`).toEqual([...e.affectedBy].sort());
      if (e.type !== 'core')
        // `le X` names no fix in this shape (reference §3.2); `lt X` names X.
        for (const h of hits) if (h.fixed_in !== null) expect(h.fixed_in, `${e.slug} fixedIn`).toBe(e.fixedIn[wpvRef(h.key)]);
    }
  });
});

let wpvAliases: Map<string, string> | null = null;
function wpvRef(key: string): string {
  wpvAliases ??= new Map(wpvRecords().map((r) => [r.key, refOfId.get(r.aliases.find((a) => refOfId.has(a))!)!]));
  return wpvAliases.get(key)!;
}

describe('the streamed Wordfence reader', () => {
  it('refuses a feed cut short, one that is not an object, and a record over the bound', async () => {
    const text = readFileSync(WF_FILE, 'utf8');
    await expect(streamWordfenceFeed(chunks(text.slice(0, text.length - 200)), () => {}, 1e9)).rejects.toMatchObject({
      code: 'svc_feed_invalid',
    });
    await expect(streamWordfenceFeed(chunks('[1,2]'), () => {}, 1e9)).rejects.toMatchObject({ code: 'svc_feed_invalid' });
    await expect(streamWordfenceFeed(chunks(''), () => {}, 1e9)).rejects.toMatchObject({ code: 'svc_feed_invalid' });
    await expect(streamWordfenceFeed(chunks(`${text} {}`), () => {}, 1e9)).rejects.toMatchObject({ code: 'svc_feed_invalid' });
    const huge = `{"x": {"id": "x", "title": "${'a'.repeat(2 * MAX_RECORD_BYTES)}"}}`;
    await expect(streamWordfenceFeed(chunks(huge, 65536), () => {}, 1e9)).rejects.toThrow(/larger than/);
    await expect(streamWordfenceFeed(chunks(text), () => {}, 1000)).rejects.toThrow(/larger than 1000 bytes/);
  });

  it('skips and counts a bad record rather than refusing the feed', async () => {
    const feed = JSON.parse(readFileSync(WF_FILE, 'utf8')) as Record<string, Record<string, unknown>>;
    const first = Object.keys(feed)[0]!;
    feed[first] = { ...feed[first], software: 'nope' };
    const got: VulnRecord[] = [];
    const stats = await streamWordfenceFeed(chunks(JSON.stringify(feed)), (r) => void got.push(r), 1e9);
    expect(stats).toMatchObject({ records: 19, skipped: 1 });
    expect(stats.skipped_reasons[0]).toMatch(/software missing/);
  });

  it('holds one record at a time: 40 MB of feed grows the heap by far less than the feed', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const base = (JSON.parse(readFileSync(WF_FILE, 'utf8')) as Record<string, unknown>)['00000000-2099-4000-8000-000000000106'];
    const one = JSON.stringify(base);
    const n = Math.ceil((40 * 1024 * 1024) / one.length);
    async function* generated() {
      yield '{';
      for (let i = 0; i < n; i++) {
        const id = `gen-${i}`;
        yield `${i ? ',' : ''}"${id}":${one.replace('"00000000-2099-4000-8000-000000000106"', `"${id}"`)}`;
      }
      yield '}';
    }
    gc();
    const before = process.memoryUsage().heapUsed;
    let peak = 0;
    let count = 0;
    const stats = await streamWordfenceFeed(
      generated(),
      () => {
        if (++count % 2000 === 0) {
          gc();
          peak = Math.max(peak, process.memoryUsage().heapUsed - before);
        }
      },
      1e9,
    );
    expect(stats.records).toBe(n);
    expect(stats.bytes).toBeGreaterThan(35 * 1024 * 1024);
    // The whole document parsed at once takes several times its size; streamed, a few MB.
    expect(peak).toBeLessThan(16 * 1024 * 1024);
  });
});

describe('the fleet: import, views, fix and events through the registry (simulator seed 1, sites 1–3)', () => {
  let h: AbilityHarness;
  let feed: Server;
  let feedUrl = '';
  const seen: Array<{ auth?: string; inm?: string }> = [];
  const events: VulnEvent[] = [];
  let dir = '';

  beforeAll(async () => {
    h = await openAbilities({ sim: { sites: 3, seed: 1 } });
    h.services.vulnerabilities.eventListeners.add((e) => void events.push(e));
    await h.addSimSites(3);
    dir = mkdtempSync(join(tmpdir(), 'sitefleet-vulns-'));
    const body = readFileSync(WF_FILE);
    feed = createServer((req, res) => {
      if (req.url === '/hook') return void res.writeHead(204).end();
      seen.push({ auth: req.headers.authorization, inm: req.headers['if-none-match'] as string | undefined });
      if (req.headers.authorization !== 'Bearer test-key-123456') return void res.writeHead(401).end();
      if (req.headers['if-none-match'] === '"v1"') return void res.writeHead(304).end();
      res.writeHead(200, { 'content-type': 'application/json', etag: '"v1"' }).end(body);
    });
    await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
    feedUrl = `http://127.0.0.1:${(feed.address() as { port: number }).port}/production`;
    // The events reach the notification channels: a webhook subscribed to both (its deliveries are logged).
    await h.call('add-webhook-v1', {
      url: `http://127.0.0.1:${(feed.address() as { port: number }).port}/hook`,
      events: ['vulnerability.found', 'vulnerability.fixed'],
    });
  });
  afterAll(async () => {
    await h?.close();
    await new Promise((r) => feed?.close(r));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const siteTable = (n: number) =>
    expected.expectations
      .filter((e) => e.where === `simulator seed 1, site ${n}` && e.affectedBy.length)
      .flatMap((e) => e.affectedBy.map((ref) => ({ ref, slug: e.slug, fixed: e.fixedIn[ref] ?? null })));

  it('refresh: configured in the settings (key never shown), fetched with the Bearer key, then a 304 keeps the data', async () => {
    const none = await h.fails('refresh-vulnerability-feed-v1', {});
    expect(none.code).toBe('svc_feed_not_configured');
    // No schedule yet: the job runner's tick would start a refresh of its own as soon as a feed is configured (the
    // scheduled refresh has its own test below).
    const set = await h.call('update-settings-v1', {
      vulnerability_source: 'wordfence',
      vulnerability_api_key: 'test-key-123456',
      vulnerability_feed_url: feedUrl,
      vulnerability_refresh_hours: 0,
    });
    expect(set).toMatchObject({ vulnerability_source: 'wordfence', vulnerability_api_key_set: true });
    expect(JSON.stringify(set)).not.toContain('test-key-123456');
    // Two at once: the second waits for the first, then asks again with its ETag (together, both imported the feed, and
    // on PostgreSQL one could read the index of the other's generation before it was committed: a 503).
    const asked = seen.length;
    const [first, again] = await Promise.all([h.call('refresh-vulnerability-feed-v1', {}), h.call('refresh-vulnerability-feed-v1', {})]);
    expect(first).toMatchObject({ status: 'updated', feed: { source: 'wordfence', records: 20 } });
    expect(again.status).toBe('not_modified');
    expect(seen.slice(asked)).toEqual([
      { auth: 'Bearer test-key-123456', inm: undefined },
      { auth: 'Bearer test-key-123456', inm: '"v1"' },
    ]);
    await h.call('update-settings-v1', { vulnerability_api_key: 'wrong-key-000000' });
    expect((await h.fails('refresh-vulnerability-feed-v1', {})).code).toBe('svc_feed_auth_failed');
  });

  it('each site lists exactly the table’s matches, fixed-in versions included; informational ones only on request', async () => {
    for (const n of [1, 2, 3]) {
      const r = await h.call('get-site-vulnerabilities-v1', { site_id_or_domain: n });
      const got = r.items.map((i) => ({ ref: refOfId.get(i.id)!, slug: i.install.slug, fixed: i.install.fixed_in }));
      const sort = (l: typeof got) => [...l].sort((a, b) => (a.ref + a.slug < b.ref + b.slug ? -1 : 1));
      expect(sort(got), `site ${n}`).toEqual(sort(siteTable(n)));
      for (const i of r.items) expect(i.attribution.copyrights).toEqual(expect.any(Object));
    }
    const withInfo = await h.call('get-site-vulnerabilities-v1', { site_id_or_domain: 1, include_informational: true });
    expect(withInfo.items.filter((i) => i.informational).map((i) => refOfId.get(i.id))).toEqual(['WF-19']);
  });

  it('the fleet view groups by record, filters, and carries the attribution', async () => {
    const all = await h.call('list-vulnerabilities-v1', { per_page: 100 });
    expect(all.total).toBe(new Set([1, 2, 3].flatMap((n) => siteTable(n).map((r) => r.ref))).size);
    const wf15 = all.items.find((i) => refOfId.get(i.id) === 'WF-15')!;
    expect(wf15).toMatchObject({ sites_affected: 2, fixable: false, updates_pending: 0 });
    expect(wf15.attribution.feed).toBe('Wordfence Intelligence');
    expect(Object.keys(wf15.attribution.copyrights)).toEqual(expect.arrayContaining(['defiant', 'mitre']));
    const critical = await h.call('list-vulnerabilities-v1', { severity: 'critical' });
    expect(critical.items.map((i) => refOfId.get(i.id)).sort()).toEqual(['WF-12', 'WF-17']);
    const bySlug = await h.call('list-vulnerabilities-v1', { slug: 'elementor' });
    expect(bySlug.items.map((i) => refOfId.get(i.id)).sort()).toEqual(['WF-13', 'WF-14']);
    const site2 = await h.call('list-vulnerabilities-v1', { site: 2, fixable: false });
    expect(site2.items.map((i) => refOfId.get(i.id))).toEqual(['WF-15']);
    const wf16 = all.items.find((i) => refOfId.get(i.id) === 'WF-16')!;
    expect(wf16.installs[0]).toMatchObject({
      site_id: 1,
      version: '7.16.2',
      fixed_in: '7.17.0',
      update_version: '7.17.0',
      update_pending: true,
    });
    const page2 = await h.call('list-vulnerabilities-v1', { per_page: 2, page: 2 });
    expect(page2.items.map((i) => i.key)).toEqual(all.items.slice(2, 4).map((i) => i.key));
  });

  it('a feed cut short is refused and the previous data kept', async () => {
    const cut = join(dir, 'cut.json');
    const text = readFileSync(WF_FILE, 'utf8');
    writeFileSync(cut, text.slice(0, Math.floor(text.length / 2)));
    await expect(h.services.vulnerabilities.importFile(cut, 'wordfence')).rejects.toMatchObject({ code: 'svc_feed_invalid' });
    expect((await h.services.vulnerabilities.status()).records).toBe(20);
    expect((await h.call('get-site-vulnerabilities-v1', { site_id_or_domain: 3 })).total).toBe(5);
  });

  it('the fix updates what the offered update fixes, says why not for the rest, and the events tell', async () => {
    const preview = await h.call('fix-vulnerabilities-v1', { dry_run: true });
    const s1 = preview.sites.find((s) => s.site_id === 1)!;
    expect(s1.planned.map((p) => `${p.slug}→${p.to}`).sort()).toEqual(['wordpress-seo→7.17.0', 'wordpress→6.8.2']);
    expect(s1.not_fixable).toMatchObject([{ slug: 'elementor', reason: 'no_update_offered', fixed_in: '1.5.6' }]);
    const s2 = preview.sites.find((s) => s.site_id === 2)!;
    expect(s2.not_fixable.find((p) => p.slug === 'contact-form-7')).toMatchObject({
      reason: 'offered_update_not_fixed',
      update_version: '4.1.0',
    });
    expect(s2.not_fixable.find((p) => p.slug === 'smush')).toMatchObject({ reason: 'no_fix_known' });
    expect((await h.fails('fix-vulnerabilities-v1', {})).code).toBe('svc_confirmation_required');

    events.length = 0;
    const r = await h.call('fix-vulnerabilities-v1', { sites: [1], confirm: true });
    expect(r.sites[0]!.updated.map((u) => `${u.slug} ${u.new_version}`).sort()).toEqual([
      'wordpress 6.8.2',
      'wordpress-seo/wp-seo.php 7.17.0',
    ]);
    const after = await h.call('get-site-vulnerabilities-v1', { site_id_or_domain: 1 });
    expect(after.items.map((i) => refOfId.get(i.id))).toEqual(['WF-13']);
    const fixed = events
      .filter((e) => e.event === 'vulnerability.fixed')
      .map((e) => refOfId.get((e.data.vulnerability as { id: string }).id))
      .sort();
    expect(fixed).toEqual(['WF-11', 'WF-16']);
    // The webhook service queued its deliveries' write when it heard the events (above): a write queued now lands after it.
    await h.services.store.write(() => undefined);
    const logged = () => h.services.webhooks.deliveries(undefined, 100).map((d) => d.event);
    expect(logged().filter((e) => e === 'vulnerability.fixed')).toHaveLength(2);
    expect(logged()).toContain('vulnerability.found');
  });

  it('refuses a bad feed URL or key, and never answers the key', async () => {
    expect((await h.fails('update-settings-v1', { vulnerability_feed_url: 'ftp://feed.example/x' })).code).toBe('svc_invalid_url');
    expect((await h.fails('update-settings-v1', { vulnerability_feed_url: 'https://user:pw@feed.example/x' })).code).toBe(
      'svc_invalid_url',
    );
    expect((await h.fails('update-settings-v1', { vulnerability_api_key: 'has a space in it' })).code).toBe('svc_invalid_input');
    expect((await h.fails('update-settings-v1', { vulnerability_refresh_hours: 169 })).code).toBe('ability_invalid_input');
    const shown = await h.call('get-settings-v1', {});
    expect(JSON.stringify(shown)).not.toMatch(/test-key|wrong-key/);
  });

  it('the scheduled refresh is claimed once per interval (a store write), whoever asks', async () => {
    const v = h.services.vulnerabilities;
    const before = seen.length;
    await h.call('update-settings-v1', { vulnerability_api_key: 'test-key-123456', vulnerability_refresh_hours: 1 });
    // Due at once (never refreshed on a schedule): the job runner's tick claims it and asks the feed.
    await until(
      () => seen.length,
      (n) => n > before,
    );
    await v.scheduled;
    const last = Date.parse(v.settings().last_scheduled_refresh!);
    expect(last).toBeGreaterThan(0);
    const asked = seen.length;
    expect(await v.scheduledRefresh(last + 30 * 60_000)).toBe(false);
    const claims = await Promise.all([v.scheduledRefresh(last + 61 * 60_000), v.scheduledRefresh(last + 61 * 60_000)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    await v.scheduled;
    expect(seen.length - asked).toBe(1);
    expect(seen.at(-1)).toEqual({ auth: 'Bearer test-key-123456', inm: '"v1"' });
    await h.call('update-settings-v1', { vulnerability_refresh_hours: 0 });
  });
});

describe('a feed stored before the vulnerability-feed blob kind', () => {
  it('is read where it is (index and buckets in vulnerabilities blobs), and the next import moves it', async () => {
    const sim = await startChildSim({ sites: 1, seed: 1 });
    const fleet = await testFleetStore();
    const config = loadConfig({ dataDir: fleet.dataDir, databaseUrl: fleet.databaseUrl, allowPrivateSites: true }, {});
    let services = await openServices(config);
    try {
      const info = sim.sites[0]!;
      const site = await services.children.add({ url: info.url, admin: info.admin, admin_password: info.password, ssl_verify: false });
      await services.vulnerabilities.importFile(WF_FILE, 'wordfence');
      const ids = async () => (await services.vulnerabilities.ofSite(site.id, true)).items.map((i) => refOfId.get(i.id)).sort();
      const want = await ids();
      expect(want.length).toBeGreaterThan(0);
      // Rewrite it as the previous layout stored it: every blob of the generation under 'vulnerabilities'.
      const s = services.store;
      const { blob_kind, ...legacy } = s.getBlob<FeedState>('vulnerabilities', 0)!;
      expect(blob_kind).toBe('vulnerability-feed');
      const base = legacy.generation * 10_000;
      const moved = new Map<number, unknown>();
      for (let i = 0; i <= legacy.buckets; i++) moved.set(base + i, await s.readBlob('vulnerability-feed', base + i));
      await s.write((tx) => {
        for (const [id, v] of moved) {
          tx.putBlob('vulnerabilities', id, v);
          tx.putBlob('vulnerability-feed', id, null);
        }
        tx.putBlob('vulnerabilities', 0, legacy);
      });
      await closeServices(services);
      services = await openServices(config);
      expect(await ids()).toEqual(want);
      await services.vulnerabilities.importFile(WF_FILE, 'wordfence');
      expect((await services.vulnerabilities.status()).blob_kind).toBe('vulnerability-feed');
      for (const id of moved.keys()) expect(services.store.getBlob('vulnerabilities', id)).toBeNull();
      expect(await ids()).toEqual(want);
    } finally {
      await closeServices(services);
      await sim.close();
    }
  });
});

/** `n` simulated sites (seed 1) added to fresh services on a data dir of their own, the Wordfence fixture imported. */
async function simFleetWithFeed(n: number, name: string) {
  const sim = await startChildSim({ sites: n, seed: 1 });
  const dataDir = mkdtempSync(join(tmpdir(), `sitefleet-vulns-${name}-`));
  const config = loadConfig({ dataDir, allowPrivateSites: true }, {});
  const services = await openServices(config);
  const sites: Array<{ id: number }> = [];
  for (const info of sim.sites)
    sites.push(await services.children.add({ url: info.url, admin: info.admin, admin_password: info.password, ssl_verify: false }));
  await services.vulnerabilities.importFile(WF_FILE, 'wordfence');
  /** A site's stored matches' stamp (shard 0). */
  const stamp = (id: number) =>
    services.store.getBlob<{ sites: Record<string, { stamp: string }> }>('vulnerability-matches', 0)?.sites[id]?.stamp;
  return { sim, dataDir, config, services, sites, stamp };
}

describe('read-only views (no job runner: only the calls below match)', () => {
  it('re-match in memory but store nothing and send nothing; the next persisting round stores', async () => {
    const sim = await startChildSim({ sites: 1, seed: 1 });
    const dataDir = mkdtempSync(join(tmpdir(), 'sitefleet-vulns-ro-'));
    const services = await openServices(loadConfig({ dataDir, allowPrivateSites: true }, {}));
    try {
      const info = sim.sites[0]!;
      const site = await services.children.add({ url: info.url, admin: info.admin, admin_password: info.password, ssl_verify: false });
      const sent: VulnEvent[] = [];
      services.vulnerabilities.eventListeners.add((e) => void sent.push(e));
      await services.vulnerabilities.importFile(WF_FILE, 'wordfence');
      expect(sent.filter((e) => e.event === 'vulnerability.found')).toHaveLength(3);
      const stored = () =>
        services.store.getBlob<{ sites: Record<string, { stamp: string }> }>('vulnerability-matches', 0)!.sites[site.id]!.stamp;
      const before = stored();
      await services.children.apply(await services.children.fetchSync(services.sites.get(site.id)!));
      expect((await services.vulnerabilities.ofSite(site.id, false)).items).toHaveLength(3);
      await services.vulnerabilities.list({ include_informational: false, installs_per_record: 10, page: 1, per_page: 20 });
      expect(stored()).toBe(before);
      await services.vulnerabilities.reconcile();
      expect(stored()).not.toBe(before);
      expect(sent).toHaveLength(3); // the same matches after the sync: nothing new found, nothing fixed
    } finally {
      await closeServices(services);
      await sim.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a fleet that never imported a feed keeps nothing per site and answers no matches; an import matches every site', async () => {
    const sim = await startChildSim({ sites: 2, seed: 1 });
    const dataDir = mkdtempSync(join(tmpdir(), 'sitefleet-vulns-none-'));
    const services = await openServices(loadConfig({ dataDir, allowPrivateSites: true }, {}));
    try {
      const sites: Array<{ id: number }> = [];
      for (const info of sim.sites)
        sites.push(await services.children.add({ url: info.url, admin: info.admin, admin_password: info.password, ssl_verify: false }));
      await services.vulnerabilities.reconcile();
      expect(services.vulnerabilities.keptSites()).toBe(0);
      expect((await services.vulnerabilities.ofSite(sites[0]!.id, true)).items).toEqual([]);
      expect(await services.vulnerabilities.severityCounts()).toMatchObject({ vulnerabilities: 0, sites: 0, installs: 0 });
      expect(services.store.getBlob('vulnerability-matches', 0)).toBeNull();
      await services.vulnerabilities.importFile(WF_FILE, 'wordfence');
      expect(services.vulnerabilities.keptSites()).toBe(2);
      expect((await services.vulnerabilities.ofSite(sites[0]!.id, false)).items.length).toBeGreaterThan(0);
    } finally {
      await closeServices(services);
      await sim.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a round after a site changed puts right stored matches another process overwrote, though their site did not change', async () => {
    const { sim, dataDir, config, services, sites, stamp } = await simFleetWithFeed(2, 'other');
    try {
      const good = stamp(sites[1]!.id);
      expect(good).toBeTruthy();
      // Another process (a store of its own on the data dir) writes a wrong stamp for site 2's matches.
      const other = await openStore(config);
      await other.write((tx) => {
        const shard = structuredClone(other.getBlob<{ sites: Record<string, { stamp: string }> }>('vulnerability-matches', 0)!);
        shard.sites[sites[1]!.id]!.stamp = 'stale';
        tx.putBlob('vulnerability-matches', 0, shard);
      });
      await other.close();
      // Site 1 is synced (the sites move): the next round compares every stored stamp whose shard was rewritten.
      await services.children.apply(await services.children.fetchSync(services.sites.get(sites[0]!.id)!));
      await services.store.sync();
      expect(stamp(sites[1]!.id)).toBe('stale');
      await services.vulnerabilities.reconcile();
      expect(stamp(sites[1]!.id)).toBe(good);
    } finally {
      await closeServices(services);
      await sim.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a round after a site edit looks at that site alone (no pass over the fleet); a removed site leaves the views', async () => {
    const { sim, dataDir, services, sites, stamp } = await simFleetWithFeed(3, 'changed');
    try {
      const before = sites.map((x) => stamp(x.id));
      const listed = vi.spyOn(services.store, 'all');
      await services.sites.edit(sites[0]!.id, { notes: 'edited' });
      await services.vulnerabilities.reconcile();
      expect(listed.mock.calls.filter(([col]) => col === 'sites')).toEqual([]);
      const after = sites.map((x) => stamp(x.id));
      expect([after[0] === before[0], after.slice(1)]).toEqual([false, before.slice(1)]);
      // Removed: gone from what this process keeps, and from the shard the next write of it makes.
      const items = (await services.vulnerabilities.ofSite(sites[1]!.id, false)).items.length;
      expect(items).toBeGreaterThan(0);
      await services.store.write((tx) => tx.delete('sites', sites[1]!.id));
      await services.sites.edit(sites[2]!.id, { notes: 'edited' });
      await services.vulnerabilities.reconcile();
      expect(listed.mock.calls.filter(([col]) => col === 'sites')).toEqual([]);
      expect([stamp(sites[1]!.id), stamp(sites[2]!.id) === before[2]]).toEqual([undefined, false]);
    } finally {
      await closeServices(services);
      await sim.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('every read (the views, the security view, a policy preview, the counts) while the stored matches are stale: no store write, and the right answer', async () => {
    const sim = await startChildSim({ sites: 1, seed: 1 });
    // On the lane's engine (PostgreSQL in the pg lane).
    const fleet = await testFleetStore();
    const dataDir = fleet.dataDir;
    const services = await openServices(loadConfig({ dataDir, databaseUrl: fleet.databaseUrl, allowPrivateSites: true }, {}));
    const registry = buildRegistry(services);
    try {
      const info = sim.sites[0]!;
      const site = await services.children.add({ url: info.url, admin: info.admin, admin_password: info.password, ssl_verify: false });
      await services.vulnerabilities.importFile(WF_FILE, 'wordfence');
      const { key } = await services.auth.createKey('read', 'read');
      const reader = { kind: 'key' as const, id: key.id, name: key.name, permissions: 'read' as const };
      const v = (await services.auth.createUser('viewer', 'viewer')).user;
      const viewer = { kind: 'user' as const, id: v.id, name: v.name, role: 'viewer' as const };
      const readOnlyLocal = { kind: 'local' as const, name: 'stdio' as const, readOnly: true };
      const admin = { kind: 'local' as const, name: 'stdio' as const };
      const policy = await registry.call(
        'add-update-policy-v1',
        {
          name: 'Security',
          all_sites: true,
          core: 'major',
          security_only: true,
          days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'],
          start: '02:00',
          end: '04:00',
        },
        { principal: admin, coerce: false },
      );
      // A sync moves the site's stamp: what is stored is stale until the job runner's next round (none runs here).
      await services.children.apply(await services.children.fetchSync(services.sites.get(site.id)!));
      const stamp = () =>
        services.store.getBlob<{ sites: Record<string, { stamp: string }> }>('vulnerability-matches', 0)!.sites[site.id]!.stamp;
      const stale = stamp();
      const writes = vi.spyOn(services.store, 'write');
      // The table's matches of simulator site 1 (seed 1): the records, and the (record, item) installs.
      const rows = expected.expectations.filter((e) => e.where === 'simulator seed 1, site 1');
      const refs = [...new Set(rows.flatMap((e) => e.affectedBy))].sort();
      const installs = rows.reduce((n, e) => n + e.affectedBy.length, 0);
      expect(refs.length).toBeGreaterThan(0);
      for (const principal of [reader, viewer, readOnlyLocal]) {
        const list = await registry.call('list-vulnerabilities-v1', { per_page: 100 }, { principal, coerce: false });
        expect(list.items.map((i) => refOfId.get(i.id)).sort()).toEqual(refs);
      }
      const one = await registry.call('get-site-vulnerabilities-v1', { site_id_or_domain: site.id }, { principal: reader, coerce: false });
      expect(one.items.map((i) => refOfId.get(i.id)).sort()).toEqual(refs);
      const security = await registry.call('get-security-issues-v1', {}, { principal: reader, coerce: false });
      expect(security.vulnerabilities).toMatchObject({ vulnerabilities: refs.length, sites: 1, installs });
      const preview = await registry.call('preview-update-policy-v1', { policy_id: policy.id }, { principal: reader, coerce: false });
      expect(preview.security_only).toBe(true);
      expect(await services.vulnerabilities.counts()).toEqual({ vulnerabilities: refs.length, sites: 1, installs });
      expect(writes).not.toHaveBeenCalled();
      expect(stamp()).toBe(stale);
      // The job runner's round (a write already) stores them.
      await services.vulnerabilities.reconcile();
      expect(writes).toHaveBeenCalledTimes(1);
      expect(stamp()).not.toBe(stale);
      writes.mockRestore();
    } finally {
      await closeServices(services);
      await sim.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
