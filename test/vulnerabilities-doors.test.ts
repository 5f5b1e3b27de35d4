// Known vulnerabilities through every door (issue 30): the fixtures' table of expected matches on the simulator
// (seed 1, sites 1–3) answered by REST, the abilities door and MCP, from either feed shape; and the import command.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';

const run = promisify(execFile);
const FIX = join(import.meta.dirname, 'fixtures', 'vulnerabilities');
const CLI = join(import.meta.dirname, '..', 'dist', 'cli.js');
const expected = JSON.parse(readFileSync(join(FIX, 'expected-matches.json'), 'utf8')) as {
  records: Array<{ ref: string; wordfenceId: string }>;
  expectations: Array<{ where: string; slug: string; affectedBy: string[]; fixedIn: Record<string, string | null> }>;
};
const refOfId = new Map(expected.records.map((r) => [r.wordfenceId, r.ref]));
/** A record's Wordfence ref, whichever feed it came from (WPVulnerability entries carry the Wordfence id as an alias). */
const refOf = (r: { id: string; aliases: string[] }) => refOfId.get(r.id) ?? refOfId.get(r.aliases.find((a) => refOfId.has(a)) ?? '')!;
const table = (n: number) =>
  expected.expectations
    .filter((e) => e.where === `simulator seed 1, site ${n}`)
    .flatMap((e) => e.affectedBy.map((ref) => `${ref} ${e.slug}`))
    .sort();
const rows = (items: Array<{ id: string; aliases: string[]; install: { slug: string } }>) =>
  items.map((i) => `${refOf(i)} ${i.install.slug}`).sort();

describe('vulnerabilities through every door (simulator seed 1)', () => {
  let f: Fleet;
  let mcp: McpTestClient;

  beforeAll(async () => {
    f = await startFleet({ sim: { sites: 3, seed: 1 } });
    await registerSites(f);
    mcp = await connectMcp(f.s);
  });
  afterAll(async () => {
    await mcp?.close();
    await f?.close();
  });

  for (const source of ['wordfence', 'wpvulnerability'] as const) {
    it(`${source}: REST, the abilities door and MCP answer the table for every site`, async () => {
      const file = source === 'wordfence' ? join(FIX, 'wordfence-production.json') : join(FIX, 'wpvulnerability');
      await f.s.services.vulnerabilities.importFile(file, source);
      for (const n of [1, 2, 3]) {
        const rest = await f.s.rest(`/sites/${n}/vulnerabilities`);
        expect(rest.status).toBe(200);
        expect(rows(rest.body.data), `REST site ${n}`).toEqual(table(n));
        expect(rest.body.site).toMatchObject({ id: n });
        const door = await f.s.ability('get-site-vulnerabilities-v1', { site_id_or_domain: n }, { method: 'GET' });
        expect(door.status).toBe(200);
        expect(rows(door.body.items), `abilities door site ${n}`).toEqual(table(n));
        const tool = await mcp.call('get-site-vulnerabilities-v1', { site_id_or_domain: n });
        expect(tool.isError).toBe(false);
        expect(rows(tool.body.items), `MCP site ${n}`).toEqual(table(n));
      }
      const fleet = await f.s.rest('/vulnerabilities?per_page=100');
      expect(fleet.status).toBe(200);
      const refs = new Set<string>((fleet.body.data as Array<{ id: string; aliases: string[] }>).map(refOf));
      expect([...refs].sort()).toEqual([...new Set([1, 2, 3].flatMap((n) => table(n).map((r) => r.split(' ')[0]!)))].sort());
      expect(fleet.body.feed.source).toBe(source);
      for (const item of fleet.body.data) expect(item.attribution.feed).toMatch(source === 'wordfence' ? /Wordfence/ : /WPVulnerability/);
    });
  }

  it('answers the views conditionally: 304 while nothing changed, a new answer once another feed goes live or a site syncs', async () => {
    await f.s.services.vulnerabilities.importFile(join(FIX, 'wordfence-production.json'), 'wordfence');
    const fleetUrl = '/vulnerabilities?per_page=100&installs_per_record=100';
    const first = await f.s.rest(fleetUrl);
    const etag = first.headers.get('etag')!;
    expect(etag).toBeTruthy();
    expect((await f.s.rest(fleetUrl, { headers: { 'if-none-match': etag } })).status).toBe(304);
    const site1 = await f.s.rest('/sites/1/vulnerabilities');
    expect(rows(site1.body.data)).toContain('WF-13 elementor');
    // Another feed: no collection changed, the feed's generation did.
    await f.s.services.vulnerabilities.importFile(join(FIX, 'wpvulnerability'), 'wpvulnerability');
    const other = await f.s.rest(fleetUrl, { headers: { 'if-none-match': etag } });
    expect(other.status).toBe(200);
    expect(other.body.feed.source).toBe('wpvulnerability');
    // A site updated outside sitefleet and synced: its install leaves both views.
    await f.s.services.vulnerabilities.importFile(join(FIX, 'wordfence-production.json'), 'wordfence');
    const before = await f.s.rest(fleetUrl);
    const elementor = f.sim.state(1).plugins.find((p) => p.slug.startsWith('elementor/'))!;
    elementor.version = '99.0.0';
    f.sim.state(1).rev++;
    expect((await f.s.rest('/sites/1/sync', { method: 'POST', json: {} })).status).toBe(200);
    expect(rows((await f.s.rest('/sites/1/vulnerabilities')).body.data)).not.toContain('WF-13 elementor');
    const after = await f.s.rest(fleetUrl, { headers: { 'if-none-match': before.headers.get('etag')! } });
    expect(after.status).toBe(200);
    const installsOf = (b: { data: Array<{ id: string; aliases: string[]; installs: Array<{ site_id: number; slug: string }> }> }) =>
      b.data.flatMap((r) => r.installs.map((i) => `${refOf(r)} ${i.site_id} ${i.slug}`));
    expect(installsOf(before.body)).toContain('WF-13 1 elementor');
    expect(installsOf(after.body)).not.toContain('WF-13 1 elementor');
  });

  it('REST filters, refuses a bad filter, and the fix previews per site', async () => {
    await f.s.services.vulnerabilities.importFile(join(FIX, 'wordfence-production.json'), 'wordfence');
    // The fleet's security view counts them on the abilities door and MCP alike.
    const door = await f.s.ability('get-security-issues-v1', {}, { method: 'GET' });
    const tool = await mcp.call('get-security-issues-v1', {});
    expect(door.body.vulnerabilities.by_severity.critical).toBe(2);
    expect(tool.body.vulnerabilities).toEqual(door.body.vulnerabilities);
    const high = await f.s.rest('/vulnerabilities?severity=critical');
    expect((high.body.data as Array<{ id: string; aliases: string[] }>).map(refOf).sort()).toEqual(['WF-12', 'WF-17']);
    const bad = await f.s.rest('/vulnerabilities?severity=huge');
    expect(bad.status).toBe(400);
    const missing = await f.s.rest('/sites/999/vulnerabilities');
    expect(missing.status).toBe(404);
    const unconfirmed = await f.s.rest('/vulnerabilities/fix', { method: 'POST', json: {} });
    expect(unconfirmed.status).toBe(400);
    const preview = await f.s.rest('/vulnerabilities/fix', { method: 'POST', json: { dry_run: true } });
    expect(preview.status).toBe(200);
    expect(preview.body.data.sites.map((s: { site_id: number }) => s.site_id)).toEqual([1, 2, 3]);
    const readOnly = await f.s.rest('/vulnerabilities/fix', { method: 'POST', json: { dry_run: true }, token: f.s.creds.key.read });
    expect(readOnly.status).toBe(403);
    const refresh = await f.s.rest('/vulnerabilities/refresh', { method: 'POST', json: {} });
    expect(refresh.status).toBe(409);
    expect(refresh.body.code).toBe('svc_feed_not_configured');
  });
});

describe('sitefleet vulnerabilities import', () => {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sitefleet-vulns-cli-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('imports either shape, refuses a cut feed keeping the previous one, and explains its usage', async () => {
    const data = join(dir, 'data');
    const env = { ...process.env, SITEFLEET_LOG: 'silent' };
    const wf = await run('node', [CLI, 'vulnerabilities', 'import', join(FIX, 'wordfence-production.json'), '--data-dir', data], { env });
    expect(wf.stdout).toMatch(/^Imported 20 wordfence records \(0 skipped\)/);
    const cut = join(dir, 'cut.json');
    const text = readFileSync(join(FIX, 'wordfence-production.json'), 'utf8');
    writeFileSync(cut, text.slice(0, text.length - 10));
    const refused = await run('node', [CLI, 'vulnerabilities', 'import', cut, '--data-dir', data], { env }).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(refused).toMatchObject({ code: 1 });
    expect((refused as { stderr: string }).stderr).toMatch(/refused \(cut short.*previous data is kept/);
    const status = JSON.parse((await run('node', [CLI, 'vulnerabilities', 'status', '--data-dir', data], { env })).stdout);
    expect(status).toMatchObject({ source: 'wordfence', records: 20 });
    const wpv = await run(
      'node',
      [CLI, 'vulnerabilities', 'import', join(FIX, 'wpvulnerability'), '--source', 'wpvulnerability', '--data-dir', data],
      {
        env,
      },
    );
    expect(wpv.stdout).toMatch(/^Imported 2\d wpvulnerability records/);
    const usage = await run('node', [CLI, 'vulnerabilities', 'import', 'x', '--source', 'wpscan', '--data-dir', data], { env }).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(usage).toMatchObject({ code: 2 });
  });
});
