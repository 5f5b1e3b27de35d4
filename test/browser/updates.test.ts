// The console's Updates page in a real browser against the real update abilities and simulated children: the list is
// list-updates-v1's answer; one plugin update previewed (dry run), cancelled, then applied, and the child's version
// moves; every pending theme applied as a background job whose progress and per-item results (one failure included)
// arrive live; a viewer sees the list and no control that writes. Screenshots go to artifacts/browser/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, openPageAs, shot, startConsoleServer, type ConsoleServer } from './support.js';

let srv: ConsoleServer;
let browser: Browser;

interface Pending {
  site_id: number;
  site_url: string;
  site_name: string;
  type: string;
  slug: string;
  name: string;
  current_version: string | null;
  new_version: string;
  language?: string;
}
interface ListAnswer {
  updates: Pending[];
  summary: Record<string, number>;
  total: number;
}

beforeAll(async () => {
  // 20 sites, 2 child calls at a time and 80 ms a call: a run over more than 5 sites (update-all-v1's bound) is a
  // job of a second or two, long enough to see it move. Site 4 is suspended (its items are skipped, not updated).
  srv = await startConsoleServer({ sites: 20, latencyMs: 80, env: { SITEFLEET_CHILD_CONCURRENCY: '2' } });
  await srv.rest('/sites/4/suspend', { method: 'POST' });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await srv?.close();
});

/** An ability run through the abilities door as the administrator (what the page must agree with). */
async function ability(name: string, input: Record<string, unknown>): Promise<any> {
  const basic = `Basic ${Buffer.from(`${srv.admin.name}:${srv.admin.password}`).toString('base64')}`;
  const res = await fetch(`${srv.url}/wp-json/wp-abilities/v1/abilities/svc/${name}/run`, {
    method: 'POST',
    headers: { Authorization: basic, 'Content-Type': 'application/json' },
    body: JSON.stringify({ input }),
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

const bare = (url: string) => url.replace(/\/+$/, '');
const simIndex = (u: Pending) => srv.sim.sites.find((s) => bare(s.url) === bare(u.site_url))!.index;

const pageAs = (who: { name: string; password: string }, viewport?: { width: number; height: number }) =>
  openPageAs(browser, srv.url, who, viewport);

/** The rows of the pending-updates table as the page shows them: site, type, item (name + slug), installed, available. */
async function rowsOf(page: Page, checkbox: boolean): Promise<string[][]> {
  const table = page.getByRole('region', { name: 'Pending updates' }).getByRole('table');
  await table.waitFor();
  const rows = await table
    .locator('tbody tr')
    .evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td')).map((td) => td.innerText.replace(/\s+/g, ' ').trim())));
  return rows.map((r) => (checkbox ? r.slice(1) : r));
}
const expected = (list: Pending[]) =>
  list.map((u) => [
    u.site_name,
    u.type,
    `${u.name}${u.language ? ` (${u.language})` : ''} ${u.slug}`,
    u.current_version ?? '—',
    u.new_version,
  ]);

describe('the Updates page', () => {
  it('lists exactly what list-updates-v1 answers, by page and by type', async () => {
    const { ctx, page } = await pageAs(srv.admin);
    await page.getByRole('link', { name: 'Updates', exact: true }).click();
    await page.getByRole('heading', { name: 'Updates', level: 1 }).waitFor();
    const api: ListAnswer = await ability('list-updates-v1', { page: 1, per_page: 50 });
    expect(api.total).toBeGreaterThan(50); // more than a page, so the pager is tested too
    expect(await rowsOf(page, true)).toEqual(expected(api.updates));
    const s = api.summary;
    expect(await page.locator('#updates-summary').textContent()).toBe(
      `${s.total} pending: ${s.core} core, ${s.plugins} plugins, ${s.themes} themes, ${s.translations} translations.`,
    );
    expect(await page.locator('.pager-where').textContent()).toBe(`Page 1 of ${Math.ceil(api.total / 50)} (${api.total} updates)`);
    await shot(page, 'updates');

    await page.getByRole('link', { name: 'Next →' }).click();
    await expect.poll(() => page.locator('.pager-where').textContent()).toMatch(/^Page 2 of/);
    const api2: ListAnswer = await ability('list-updates-v1', { page: 2, per_page: 50 });
    expect(await rowsOf(page, true)).toEqual(expected(api2.updates));

    await page.getByLabel('Type', { exact: true }).selectOption('themes');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.locator('#updates-summary').textContent()).toMatch(/^\d+ pending\.$/);
    const themes: ListAnswer = await ability('list-updates-v1', { types: ['themes'], per_page: 50 });
    expect(themes.total).toBeGreaterThan(0);
    expect(await rowsOf(page, true)).toEqual(expected(themes.updates));
    expect(await page.locator('#updates-summary').textContent()).toBe(`${themes.total} pending.`);

    // A phone: no sideways scrolling of the page (the table scrolls in its own box).
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot(page, 'updates-phone', false);
    await ctx.close();
  });

  it("previews one plugin update with a dry run, cancels, then applies it: the child's version changes", async () => {
    const { ctx, page } = await pageAs(srv.admin);
    const plugins: ListAnswer = await ability('list-updates-v1', { types: ['plugins'], per_page: 50 });
    const u = plugins.updates.find((x) => x.site_id !== 4)!;
    const sim = () => srv.sim.state(simIndex(u)).plugins.find((p) => p.slug === u.slug)!;
    expect(sim()).toMatchObject({ version: u.current_version, updateVersion: u.new_version });
    const callsBefore = srv.sim.requests(simIndex(u));

    await page.goto(`${srv.url}/console#/updates?type=plugins`);
    const box = page.getByRole('checkbox', { name: `Select ${u.name} on ${u.site_name}`, exact: true });
    await box.check();
    await expect.poll(() => page.locator('#picked-count').textContent()).toBe('1 selected (on 1 site(s)).');
    await page.getByRole('button', { name: 'Preview and apply selected…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Apply the selected updates: 1 update(s) on 1 site(s)?' });
    await dialog.waitFor();
    expect(await dialog.getByRole('listitem').allTextContents()).toEqual([
      `${u.name} on ${u.site_name}: ${u.current_version} → ${u.new_version}`,
    ]);
    await shot(page, 'updates-preview');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => dialog.count()).toBe(0);
    // The dry run asked no child anything, and nothing changed.
    expect(srv.sim.requests(simIndex(u))).toBe(callsBefore);
    expect(sim().version).toBe(u.current_version);

    await page.getByRole('button', { name: 'Preview and apply selected…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Apply updates' }).click();
    await expect.poll(() => page.locator('#notice').textContent()).toBe('Updated 1; 0 failed; 0 skipped.');
    const updated = page.locator('#result-now .result-updated');
    expect(await updated.getByRole('heading').textContent()).toBe('Updated (1)');
    expect((await updated.locator('tbody tr').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim())).toEqual([
      `${u.site_name} plugin ${u.name} ${u.current_version} → ${u.new_version}`,
    ]);
    expect(await page.locator('#result-now .result-errors').textContent()).toContain('No failure.');
    // The child's own plugin is at the new version, the list no longer offers it, and the selection is spent.
    expect(sim()).toMatchObject({ version: u.new_version, updateVersion: null });
    const after: ListAnswer = await ability('list-updates-v1', { types: ['plugins'], per_page: 200 });
    expect(after.updates.some((x) => x.site_id === u.site_id && x.slug === u.slug)).toBe(false);
    expect(after.total).toBe(plugins.total - 1);
    expect(await box.count()).toBe(0);
    expect(await page.locator('#picked-count').textContent()).toBe('0 selected.');
    await shot(page, 'updates-result');
    await ctx.close();
  });

  it('applies items picked on two pages and two sites, each only where it was picked', async () => {
    const all: ListAnswer = await ability('list-updates-v1', { types: ['plugins'], per_page: 200 });
    const live = all.updates.filter((x) => x.site_id !== 4);
    const at = (u: Pending) => all.updates.findIndex((x) => x === u);
    // u1 on page 1 and u2 on page 2 (50 a page), u2's plugin also pending on u1's site: the run must leave that one.
    const pairs = live.flatMap((u1) =>
      live
        .filter(
          (u2) =>
            u2.site_id !== u1.site_id &&
            at(u1) < 50 &&
            at(u2) >= 50 &&
            at(u2) < 100 &&
            live.some((x) => x.site_id === u1.site_id && x.slug === u2.slug),
        )
        .map((u2) => [u1, u2] as const),
    );
    expect(pairs.length).toBeGreaterThan(0);
    const [u1, u2] = pairs[0]!;
    const bystander = live.find((x) => x.site_id === u1.site_id && x.slug === u2.slug)!;
    const version = (u: Pending) => srv.sim.state(simIndex(u)).plugins.find((p) => p.slug === u.slug)!.version;

    const { ctx, page } = await pageAs(srv.admin);
    await page.goto(`${srv.url}/console#/updates?type=plugins`);
    // The selection holds across pages.
    await page.getByRole('checkbox', { name: `Select ${u1.name} on ${u1.site_name}`, exact: true }).check();
    await page.getByRole('link', { name: 'Next →' }).click();
    await page.getByRole('checkbox', { name: `Select ${u2.name} on ${u2.site_name}`, exact: true }).check();
    await expect.poll(() => page.locator('#picked-count').textContent()).toBe('2 selected (on 2 site(s)).');
    await page.getByRole('button', { name: 'Preview and apply selected…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Apply the selected updates: 2 update(s) on 2 site(s)?' });
    await dialog.waitFor();
    expect((await dialog.getByRole('listitem').allTextContents()).sort()).toEqual(
      [u1, u2].map((u) => `${u.name} on ${u.site_name}: ${u.current_version} → ${u.new_version}`).sort(),
    );
    await dialog.getByRole('button', { name: 'Apply updates' }).click();
    await expect.poll(() => page.locator('#notice').textContent()).toBe('Updated 2; 0 failed; 0 skipped.');
    expect(version(u1)).toBe(u1.new_version);
    expect(version(u2)).toBe(u2.new_version);
    expect(version(bystander)).toBe(bystander.current_version);
    await ctx.close();
  });

  it('applies every pending theme as a background job, its progress and per-item results arriving live', async () => {
    const themes: ListAnswer = await ability('list-updates-v1', { types: ['themes'], per_page: 200 });
    const live = themes.updates.filter((x) => x.site_id !== 4);
    expect(new Set(live.map((x) => x.site_id)).size).toBeGreaterThan(5); // update-all-v1 queues over 5 sites
    const suspended = themes.updates.filter((x) => x.site_id === 4);
    expect(suspended.length).toBeGreaterThan(0);
    // One theme's package fails to install on its child: an error item, the rest updated.
    const bad = live[live.length - 1]!;
    srv.sim.failUpdate(simIndex(bad), bad.slug, 'Download failed. Not Found');

    const { ctx, page } = await pageAs(srv.admin);
    await page.goto(`${srv.url}/console#/updates?type=themes`);
    await page.getByRole('region', { name: 'Pending updates' }).getByRole('table').waitFor();
    await page.getByRole('button', { name: 'Update all pending themes…' }).click();
    const dialog = page.getByRole('dialog', {
      name: `Apply every pending theme update: ${live.length} update(s) on ${new Set(live.map((x) => x.site_id)).size} site(s)?`,
    });
    await dialog.waitFor();
    const lines = await dialog.getByRole('listitem').allTextContents();
    expect(lines.filter((l) => !l.startsWith('Skipped:'))).toHaveLength(live.length);
    expect(lines.filter((l) => l.startsWith('Skipped:'))).toHaveLength(suspended.length);
    await dialog.getByRole('button', { name: 'Apply updates' }).click();

    const job = page.locator('.job-box');
    await job.locator('.job-text').waitFor();
    const jobId = (await job.getAttribute('data-job-id'))!;
    expect(jobId).toMatch(/^update_/);
    await page.evaluate(() => {
      const el = document.querySelector('.job-box .job-text')!;
      const seen = [el.textContent!];
      (window as unknown as { seen: string[] }).seen = seen;
      new MutationObserver(() => seen.push(el.textContent!)).observe(el, { childList: true, characterData: true, subtree: true });
    });
    await page.waitForFunction(() => /^processing: [1-9]/.test(document.querySelector('.job-box .job-text')!.textContent!));
    await shot(page, 'updates-job-running');
    await page.locator('.job-box[data-job-status="completed"]').waitFor({ timeout: 30_000 });
    const seen = await page.evaluate(() => (window as unknown as { seen: string[] }).seen);
    const counts = seen
      .map((t) => /: (\d+) of (\d+)/.exec(t))
      .filter(Boolean)
      .map((m) => [Number(m![1]), Number(m![2])] as const);
    expect(
      counts.some(([n, total]) => n > 0 && n < total),
      seen.join(' | '),
    ).toBe(true);
    const sitesWithWork = new Set(live.map((x) => x.site_id)).size;
    await expect
      .poll(() => page.locator('#notice').textContent())
      .toBe(`Job ${jobId} completed: ${sitesWithWork - 1} of ${sitesWithWork} sites updated without error.`);

    // Per item: every live theme updated but the bad one, which failed with the child's reason; the suspended site's
    // themes skipped (from the run's own answer).
    const rest = (await srv.rest(`/jobs/${jobId}`)).body;
    const status = rest.data ?? rest;
    expect(status.status).toBe('completed');
    const itemRows = status.items as Array<{ status: string }>;
    expect(itemRows.filter((i) => i.status === 'updated')).toHaveLength(live.length - 1);
    expect(await job.locator('.result-updated h3').textContent()).toBe(`Updated (${live.length - 1})`);
    expect(await job.locator('.result-errors h3').textContent()).toBe(
      `Failed (${1 + status.errors.filter((e: { site_id: number }) => !itemRows.some((i) => i.status === 'failed' && (i as unknown as { site_id: number }).site_id === e.site_id)).length})`,
    );
    expect(await job.locator('.result-errors').textContent()).toContain(`${bad.name}Download failed. Not Found`);
    expect(await page.locator('#result-now').textContent()).toContain(`Not queued: 0 failed; ${suspended.length} skipped.`);
    expect(await page.locator('#result-now .result-skipped h3').textContent()).toBe(`Skipped (${suspended.length})`);
    expect(await page.locator('#result-now .result-skipped').textContent()).toContain(`Site suspended: Site 4 is suspended`);
    expect(await page.locator('#result-now .result-updated').count()).toBe(0);
    for (const t of live.filter((x) => x !== bad)) {
      expect(
        srv.sim.state(simIndex(t)).themes.find((x) => x.slug === t.slug),
        t.slug,
      ).toMatchObject({ version: t.new_version, updateVersion: null });
    }
    // The list reloads: what is left is the failed theme and the suspended site's.
    await expect.poll(async () => (await rowsOf(page, true)).length).toBe(1 + suspended.length);
    const left: ListAnswer = await ability('list-updates-v1', { types: ['themes'], per_page: 200 });
    expect(left.total).toBe(1 + suspended.length);
    await shot(page, 'updates-job');
    await ctx.close();
  });

  it('shows a viewer the list and no control that writes; the server refuses the run anyway', async () => {
    const { ctx, page } = await pageAs(srv.viewer);
    await page.getByRole('link', { name: 'Updates', exact: true }).click();
    const api: ListAnswer = await ability('list-updates-v1', { page: 1, per_page: 50 });
    expect(await rowsOf(page, false)).toEqual(expected(api.updates));
    expect(await page.getByRole('checkbox').count()).toBe(0);
    for (const name of [/Preview and apply/, /Update (all|everything) pending/, /Clear selection/])
      expect(await page.getByRole('button', { name }).count()).toBe(0);
    await shot(page, 'updates-viewer');
    const u = api.updates[0]!;
    const refused = await page.evaluate(
      async (input) => {
        const { csrf_token } = await (await fetch('/console/api/session')).json();
        const r = await fetch('/console/api/run/run-updates-v1', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf_token },
          body: JSON.stringify({ input }),
        });
        return { status: r.status, body: await r.json() };
      },
      { site_ids_or_domains: [u.site_id], specific_items: [u.slug] },
    );
    expect(refused).toMatchObject({ status: 403, body: { code: 'svc_permission_denied' } });
    expect((await ability('list-updates-v1', { page: 1, per_page: 50 })).updates).toEqual(api.updates);
    await ctx.close();
  });
});
