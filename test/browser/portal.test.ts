// The client portal in a real browser: a `client` user (bound to one client by its scope) logs into the console and
// sees that client's sites, their uptime and incidents — nothing of another client's site seeded in the same fleet,
// neither in the page nor in any answer the page received — and no control that writes or leads elsewhere. Called
// directly with the portal user's session, the console's endpoint refuses a write and answers another client's site
// exactly as a site that does not exist (the registry's scope, checked here from the portal's side).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { cli } from '../support/process.js';
import { launchBrowser, shot, startConsoleServer, type ConsoleServer } from './support.js';

let srv: ConsoleServer;
let browser: Browser;
let portalUser: { name: string; password: string };
/** Sim sites 1 and 2 belong to Acme (the portal user's client), 3 to Globex, 4 to no client. */
const ids: Record<number, number> = {};
let acmeId: number;
let globexReport: number;

/** An ability run through the abilities door as the administrator (seeding, and what the page must agree with). */
async function ability(name: string, input: Record<string, unknown>): Promise<any> {
  const basic = `Basic ${Buffer.from(`${srv.admin.name}:${srv.admin.password}`).toString('base64')}`;
  const url = `${srv.url}/wp-json/wp-abilities/v1/abilities/svc/${name}/run`;
  // The abilities door's method follows the ability: GET with the input as JSON in the query for a read.
  const read = /^(list|get|count)-/.test(name);
  const res = await fetch(read ? `${url}?input=${encodeURIComponent(JSON.stringify(input))}` : url, {
    method: read ? 'GET' : 'POST',
    headers: { Authorization: basic, ...(read ? {} : { 'Content-Type': 'application/json' }) },
    body: read ? undefined : JSON.stringify({ input }),
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

const bare = (url: string) => url.replace(/\/+$/, '');
const site = (n: number) => srv.sim.sites.find((s) => s.index === n)!;

beforeAll(async () => {
  // A queue threshold of 1: a sync of two sites is a background job (one of Acme's sites, one of Globex's).
  srv = await startConsoleServer({ sites: 4, env: { SITEFLEET_QUEUE_THRESHOLD: '1' } });
  const listed = await ability('list-sites-v1', { per_page: 100 });
  for (const s of srv.sim.sites) ids[s.index] = listed.items.find((x: { url: string }) => bare(x.url) === bare(s.url)).id;
  acmeId = (await ability('add-client-v1', { name: 'Acme Bakery' })).id;
  const globex = (await ability('add-client-v1', { name: 'Globex Hardware', note: 'globex-private-note' })).id;
  await ability('update-site-v1', { site_id_or_domain: ids[1], client_id: acmeId });
  await ability('update-site-v1', { site_id_or_domain: ids[2], client_id: acmeId });
  await ability('update-site-v1', { site_id_or_domain: ids[3], client_id: globex });
  await ability('update-site-v1', { site_id_or_domain: ids[3], name: 'Globex Store' });
  await ability('update-site-v1', { site_id_or_domain: ids[4], name: 'Agency Own Site' });
  // An incident on an Acme site (down, then up again), one on Globex's site left open.
  srv.sim.setFault(2, { type: 'http500' });
  srv.sim.setFault(3, { type: 'http500' });
  for (const n of [2, 3]) expect((await ability('check-monitor-v1', { site_id_or_domain: ids[n] })).uptime_status).toBe('down');
  srv.sim.setFault(2, null);
  expect((await ability('check-monitor-v1', { site_id_or_domain: ids[2] })).uptime_status).toBe('up');
  expect((await ability('check-monitor-v1', { site_id_or_domain: ids[1] })).uptime_status).toBe('up');
  expect((await ability('list-incidents-v1', { site_id_or_domain: ids[2] })).total).toBe(1);
  expect((await ability('list-incidents-v1', { site_id_or_domain: ids[3], state: 'open' })).total).toBe(1);
  // An archived report of each client (the reports feature, #31).
  for (const client_id of [acmeId, globex]) await ability('generate-client-report-v1', { client_id, period: 'this_month', send: false });
  globexReport = (await ability('list-client-reports-v1', { client_id: globex })).items[0].id;
  // The portal user, made as the README says.
  const out = await cli(['users', 'create', '--name', 'acme', '--role', 'client', '--clients', String(acmeId), '--data-dir', srv.dataDir]);
  portalUser = { name: 'acme', password: out.stdout.trim().split('\n').pop()!.trim() };
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await srv?.close();
});

/** Everything of the other client (and of the site in no client) that must never reach the portal user's browser. */
const outside = () => [
  'Globex',
  'globex-private-note',
  'Agency Own Site',
  bare(site(3).url),
  bare(site(4).url),
  `"site_id":${ids[3]},`,
  `"id":${ids[3]},`,
];

async function portalPage(): Promise<{ page: Page; answers: string[]; close: () => Promise<void> }> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  const answers: string[] = [];
  const pending: Promise<void>[] = [];
  page.on('response', (r) => {
    if (r.url().includes('/console/api/'))
      pending.push(
        r.text().then(
          (t) => void answers.push(t),
          () => {},
        ),
      );
  });
  await page.goto(`${srv.url}/console`);
  await page.getByLabel('User').fill(portalUser.name);
  await page.getByLabel('Application password').fill(portalUser.password);
  await page.getByLabel('Application password').press('Enter');
  await page.getByRole('heading', { name: 'Acme Bakery', level: 1 }).waitFor();
  return {
    page,
    answers,
    close: async () => {
      await Promise.all(pending);
      await ctx.close();
    },
  };
}

describe('the client portal', () => {
  it("shows exactly its client's sites, their uptime and incidents, and nothing of another client", async () => {
    const { page, answers, close } = await portalPage();
    try {
      const cards = page.locator('section.portal-site');
      await expect.poll(() => cards.count()).toBe(2);
      const shown = await cards.evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.siteId)).sort((a, b) => a - b));
      expect(shown).toEqual([ids[1], ids[2]].sort((a, b) => a - b));
      const two = page.locator(`section.portal-site[data-site-id="${ids[2]}"]`);
      const text = (await two.textContent())!;
      expect(text).toContain('Shop 02');
      expect(text).toContain('Connected');
      // The same facts the administrator reads from the registry.
      const full = await ability('get-site-v1', { site_id_or_domain: ids[2], include_stats: true });
      const pendingCount = full.stats.plugin_updates + full.stats.theme_updates + (full.stats.wp_update_available ? 1 : 0);
      expect(text).toContain(`WordPress${full.wp_version}`);
      expect(text).toContain(`Pending updates${pendingCount}`);
      expect(full.last_sync).not.toBeNull();
      expect(text).not.toContain('Last syncnever');
      expect(text).toMatch(/Uptime\s*Up 24 h \d+\.\d\d %/);
      expect(text).toContain('Incidents (1)');
      const incidents = page.getByRole('table', { name: 'Incidents of Shop 02' });
      expect(await incidents.textContent()).toContain('http_status (HTTP 500)');
      expect(await page.locator(`section.portal-site[data-site-id="${ids[1]}"]`).textContent()).toContain('No incidents.');
      // Its client's one report; opened, its text (as text) names the client and its sites.
      await page.getByRole('heading', { name: 'Reports (1)', level: 2 }).waitFor();
      await page.locator('details.portal-report summary').click();
      const report = page.locator('details.portal-report pre.report-text');
      await expect.poll(() => report.textContent()).toContain('Acme Bakery');
      expect(await report.textContent()).toContain('Shop 02');
      await shot(page, 'portal');

      // No write controls and nowhere else to go: the one button is "Log out", the one link in the nav is the portal.
      expect(await page.locator('#main button, #main form, #main input, #main select, #main textarea').count()).toBe(0);
      expect(await page.locator('button').allTextContents()).toEqual(['Log out']);
      expect(await page.locator('#nav a').allTextContents()).toEqual(['Your sites']);
      expect(await page.locator('#main a').count()).toBe(0);
      for (const hash of [
        '#/clients',
        '#/audit',
        '#/notifications',
        '#/jobs',
        '#/tags',
        `#/sites/${ids[1]}`,
        `#/sites/${ids[3]}`,
        '#/sites/new',
      ]) {
        await page.goto(`${srv.url}/console${hash}`);
        await page.getByRole('heading', { name: 'Not found', level: 1 }).waitFor();
      }

      // Nothing of Globex or of the agency's own site in the page or in any answer it received.
      await page.goto(`${srv.url}/console#/`);
      await page.getByRole('heading', { name: 'Acme Bakery', level: 1 }).waitFor();
      await expect.poll(() => cards.count()).toBe(2);
      const html = await page.content();
      for (const s of outside()) expect(html).not.toContain(s);
    } finally {
      await close();
    }
    expect(answers.length).toBeGreaterThan(5);
    for (const a of answers) for (const s of outside()) expect(a, a.slice(0, 300)).not.toContain(s);
  });

  it("refuses a write and answers another client's site as one that does not exist, through the console endpoint", async () => {
    const job = async (sites: number[]) => {
      const r = await ability('sync-sites-v1', { site_ids_or_domains: sites });
      expect(r.queued).toBe(true);
      await expect.poll(async () => (await ability('get-batch-job-status-v1', { job_id: r.job_id })).status).toBe('completed');
      return r.job_id as string;
    };
    const acmeJob = await job([ids[1]!, ids[2]!]);
    const globexJob = await job([ids[3]!, ids[4]!]);
    const NO_JOB = 'sync_00000000-0000-4000-8000-000000000000';
    const { page, close } = await portalPage();
    try {
      /** The console endpoint called as the page would, with the portal user's cookie and CSRF token. */
      const call = (name: string, input: unknown) =>
        page.evaluate(
          async ([name, input]) => {
            const session = await (await fetch('/console/api/session')).json();
            const res = await fetch(`/console/api/run/${name}`, {
              method: 'POST',
              headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': session.csrf_token },
              body: JSON.stringify({ input }),
            });
            return { status: res.status, body: await res.json() };
          },
          [name, input] as const,
        );
      const missing = 987_654;
      // Reads: the other client's site, the site in no client and a site that does not exist answer alike.
      for (const [ability, input] of [
        ['get-site-v1', (id: number) => ({ site_id_or_domain: id })],
        ['get-site-uptime-v1', (id: number) => ({ site_id_or_domain: id })],
        ['list-incidents-v1', (id: number) => ({ site_id_or_domain: id })],
        ['get-site-client-v1', (id: number) => ({ site_id_or_domain: id })],
      ] as const) {
        const none = await call(ability, input(missing));
        expect(none.status, ability).toBe(404);
        for (const n of [3, 4]) {
          const other = await call(ability, input(ids[n]!));
          expect(other.status, `${ability} site ${n}`).toBe(none.status);
          expect(other.body.code).toBe(none.body.code);
          expect(other.body.message.replace(String(ids[n]), 'ID')).toBe(none.body.message.replace(String(missing), 'ID'));
        }
        expect((await call(ability, input(ids[1]!))).status, ability).toBe(200);
      }
      // Jobs: its client's job is seen; another's answers as one that does not exist, on the run endpoint and the
      // live event stream alike.
      const noJob = await call('get-batch-job-status-v1', { job_id: NO_JOB });
      expect(noJob.status).toBe(404);
      const otherJob = await call('get-batch-job-status-v1', { job_id: globexJob });
      expect(otherJob.status).toBe(404);
      expect(otherJob.body.code).toBe(noJob.body.code);
      expect(otherJob.body.message.replace(globexJob, 'ID')).toBe(noJob.body.message.replace(NO_JOB, 'ID'));
      expect((await call('get-batch-job-status-v1', { job_id: acmeJob })).status).toBe(200);
      const stream = (id: string) =>
        page.evaluate(async (id) => {
          const res = await fetch(`/console/api/jobs/${encodeURIComponent(id)}/events`);
          return { status: res.status, body: res.status === 200 ? null : await res.json() };
        }, id);
      const [streamNone, streamOther] = [await stream(NO_JOB), await stream(globexJob)];
      expect(streamOther.status).toBe(404);
      expect(streamOther.body.code).toBe(streamNone.body.code);
      expect(streamOther.body.message.replace(globexJob, 'ID')).toBe(streamNone.body.message.replace(NO_JOB, 'ID'));
      // Another client's report answers as a missing one.
      const noReport = await call('get-client-report-v1', { report_id: 98_765, format: 'summary' });
      const otherReport = await call('get-client-report-v1', { report_id: globexReport, format: 'summary' });
      expect(noReport.status).toBe(404);
      expect(otherReport.status).toBe(404);
      expect(otherReport.body.code).toBe(noReport.body.code);
      expect(otherReport.body.message.replace(String(globexReport), 'ID')).toBe(noReport.body.message.replace('98765', 'ID'));
      expect((await call('list-client-reports-v1', {})).body.total).toBe(1);
      // Lists and counts see the one client only.
      expect((await call('list-sites-v1', { per_page: 100 })).body.total).toBe(2);
      expect((await call('count-sites-v1', {})).body.total).toBe(2);
      expect((await call('list-clients-v1', {})).body.items.map((c: { name: string }) => c.name)).toEqual(['Acme Bakery']);
      expect((await call('list-incidents-v1', { state: 'any' })).body.total).toBe(1);
      // Writes: refused on its own sites, on another client's and on one that does not exist, all with the same answer.
      const writes: [string, (id: number) => unknown][] = [
        ['sync-sites-v1', (id) => ({ site_ids_or_domains: [id] })],
        ['check-monitor-v1', (id) => ({ site_id_or_domain: id })],
        ['suspend-site-v1', (id) => ({ site_id_or_domain: id })],
        ['update-site-v1', (id) => ({ site_id_or_domain: id, name: 'renamed' })],
      ];
      for (const [ability, input] of writes) {
        const answers = await Promise.all([ids[1]!, ids[3]!, missing].map((id) => call(ability, input(id))));
        for (const a of answers) {
          expect(a.status, ability).toBe(403);
          expect(a.body).toEqual(answers[0]!.body);
        }
      }
      for (const [ability, input] of [
        ['add-client-v1', { name: 'Intruder' }],
        ['update-client-v1', { client_id_or_email: acmeId, name: 'Renamed' }],
        ['list-audit-log-v1', {}],
        ['list-dashboard-users-v1', {}],
      ] as const) {
        expect((await call(ability, input)).status, ability).toBe(403);
      }
      // Nothing changed.
      expect((await ability('get-site-v1', { site_id_or_domain: ids[1] })).name).toBe('Shop 01');
      expect((await ability('get-client-v1', { client_id_or_email: acmeId })).name).toBe('Acme Bakery');
    } finally {
      await close();
    }
  });
});
