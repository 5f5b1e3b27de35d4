// The console's Reports page in a real browser: an administrator previews a client's report of this month (an update
// made through REST is in it), sends it (a real SMTP server receives it), sees it in the archive and opens its
// printable page in a new tab, styled by its own page policy; a viewer may preview but has no Archive or Send button.
// SITEFLEET_DOCS_SHOT=1 also writes the README's screenshot of the printable page (docs/report-page.jpg).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchBrowser, openPageAs, shot, startConsoleServer, type ConsoleServer } from './support.js';
import { startSmtp, type SmtpSink } from '../support/receivers.js';

let srv: ConsoleServer;
let browser: Browser;
let smtp: SmtpSink;

beforeAll(async () => {
  srv = await startConsoleServer({ sites: 2 });
  browser = await launchBrowser();
  smtp = await startSmtp();
  const slug = srv.sim.state(1).plugins.find((p) => p.updateVersion)!.slug;
  expect((await srv.rest(`/updates/1/update/plugins?slug=${encodeURIComponent(slug)}`, { method: 'POST' })).status).toBe(200);
  expect(
    (await srv.rest('/clients/add', { json: { name: 'Acme Shops', email: 'owner@acme.example', selected_sites: [1, 2] } })).status,
  ).toBe(200);
  await srv.rest('/notifications/channels/add', {
    json: {
      name: 'Mail',
      type: 'email',
      smtp: { host: '127.0.0.1', port: smtp.port, security: 'none', from: 'Pixel & Co <reports@pixel.example>' },
      recipients: ['team@pixel.example'],
    },
  });
  await srv.rest('/reports/settings/edit', {
    json: {
      branding: {
        name: 'Pixel & Co',
        primary_color: '#1e3a5f',
        accent_color: '#e07a1f',
        footer: 'Pixel & Co · hello@pixel.example · +33 1 23 45 67 89',
      },
    },
  });
});
afterAll(async () => {
  await browser?.close();
  await srv?.close();
  await smtp?.close();
});

describe('the Reports page', () => {
  it('previews, sends, lists and opens the printable page of a report', async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.admin);
    try {
      await page.getByRole('link', { name: 'Reports' }).click();
      await page.getByRole('heading', { name: 'Client reports', level: 1 }).waitFor();
      await page.getByText('No reports yet.').waitFor();
      await page.getByLabel('Period').selectOption('this_month');
      await page.getByRole('button', { name: 'Preview' }).click();
      await expect.poll(() => page.locator('pre.report-text').textContent()).toMatch(/UPDATES\n1 update: 1 updated\./);
      await page.getByLabel('Also send to').fill('pm@acme.example');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.getByText(/Report \d+ sent\./).waitFor();
      expect(smtp.mails.at(-1)!.envelopeTo.sort()).toEqual(['owner@acme.example', 'pm@acme.example']);
      expect(smtp.mails.at(-1)!.subject).toMatch(/^Pixel & Co: Website report — /);
      const archive = page.getByRole('table', { name: 'Client reports' });
      await archive.getByText('sent', { exact: true }).waitFor();
      const [tab] = await Promise.all([ctx.waitForEvent('page'), archive.getByRole('link', { name: 'Printable page' }).click()]);
      await tab.waitForLoadState();
      await tab.getByRole('heading', { name: 'Updates', level: 2 }).waitFor();
      // The page's own styles apply (its header takes the agency's colour), and it has no script.
      expect(await tab.locator('header').evaluate((e) => getComputedStyle(e).backgroundColor)).toBe('rgb(30, 58, 95)');
      expect(await tab.locator('script').count()).toBe(0);
      await tab.setViewportSize({ width: 960, height: 1100 });
      await shot(tab, 'report-page', false);
      if (process.env.SITEFLEET_DOCS_SHOT === '1')
        await tab.screenshot({ path: new URL('../../docs/report-page.jpg', import.meta.url).pathname, type: 'jpeg', quality: 70 });
    } finally {
      await ctx.close();
    }
  });

  it('a viewer may preview but has no Archive or Send button', async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.viewer);
    try {
      await page.goto(`${srv.url}/console#/reports`);
      await page.getByRole('button', { name: 'Preview' }).waitFor();
      expect(await page.getByRole('button', { name: 'Send' }).count()).toBe(0);
      expect(await page.getByRole('button', { name: 'Archive' }).count()).toBe(0);
    } finally {
      await ctx.close();
    }
  });
});
