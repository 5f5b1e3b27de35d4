// The console's Policies page in a real browser: an administrator adds a policy with the form (security fixes only),
// previews its next window, pauses it, sees the update history (an update made through REST, filtered by outcome), and
// deletes the policy after confirming; a viewer sees policies and history but no form and no buttons that change them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchBrowser, openPageAs, shot, startConsoleServer, type ConsoleServer } from './support.js';

let srv: ConsoleServer;
let browser: Browser;

beforeAll(async () => {
  srv = await startConsoleServer({ sites: 2 });
  browser = await launchBrowser();
  const slug = srv.sim.state(1).plugins.find((p) => p.updateVersion)!.slug;
  const r = await srv.rest(`/updates/1/update/plugins?slug=${encodeURIComponent(slug)}`, { method: 'POST' });
  expect(r.status).toBe(200);
});
afterAll(async () => {
  await browser?.close();
  await srv?.close();
});

describe('the Policies page', () => {
  it('adds, previews, pauses and deletes a policy; shows the update history', async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.admin);
    try {
      await page.getByRole('link', { name: 'Policies' }).click();
      await page.getByRole('heading', { name: 'Update policies', level: 1 }).waitFor();
      await page.getByText('No policies yet.').waitFor();
      await page.getByText('Add a policy').click();
      await page.getByLabel('Name').fill('Weeknights');
      await page.getByLabel('Security fixes only').check();
      await page.getByRole('button', { name: 'Add policy' }).click();
      await page.getByText('Update policy created.').waitFor();
      await page.getByRole('cell', { name: 'Weeknights', exact: true }).waitFor();
      await page.getByRole('cell', { name: 'core (minor), plugins, themes, translations — security fixes only' }).waitFor();
      expect((await srv.rest('/updates/policies')).body.data[0].updates.security_only).toBe(true);
      expect(await page.getByRole('cell', { name: 'mon, tue, wed, thu, fri 02:00–05:00 (site time)' }).count()).toBe(1);
      await page.getByRole('button', { name: 'Preview Weeknights' }).click();
      const dialog = page.getByRole('dialog');
      await expect.poll(() => dialog.getByRole('heading').textContent()).toBe('Next window of Weeknights');
      await expect.poll(() => dialog.textContent()).toMatch(/on 2 site\(s\)\./);
      await expect.poll(() => dialog.textContent()).toMatch(/\(security fixes only\)/);
      await shot(page, 'policies-preview');
      await dialog.getByRole('button', { name: 'Close' }).click();
      await page.getByRole('button', { name: 'Pause Weeknights' }).click();
      await page.getByRole('button', { name: 'Resume Weeknights' }).waitFor();
      expect((await srv.rest('/updates/policies')).body.data[0].paused).toBe(true);
      // The history: the REST update made before, by the admin key.
      await page.getByRole('table', { name: 'Update history' }).getByText('updated').first().waitFor();
      await page.getByRole('link', { name: 'rolled_back' }).click();
      await page.getByText('No update attempts recorded.').waitFor();
      await page.getByRole('button', { name: 'Delete Weeknights' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete policy' }).click();
      await page.getByText('Policy Weeknights deleted.').waitFor();
      expect((await srv.rest('/updates/policies')).body.total).toBe(0);
    } finally {
      await ctx.close();
    }
  });

  it('a viewer sees the page but no form and no buttons that change a policy', async () => {
    await srv.rest('/updates/policies/add', {
      method: 'POST',
      json: { name: 'Seen', all_sites: true, days: ['sun'], start: '01:00', end: '02:00' },
    });
    const { ctx, page } = await openPageAs(browser, srv.url, srv.viewer);
    try {
      await page.goto(`${srv.url}/console#/policies`);
      await page.getByRole('cell', { name: 'Seen', exact: true }).waitFor();
      expect(await page.getByRole('button', { name: 'Preview Seen' }).count()).toBe(1);
      expect(await page.getByRole('button', { name: 'Pause Seen' }).count()).toBe(0);
      expect(await page.getByRole('button', { name: 'Delete Seen' }).count()).toBe(0);
      expect(await page.getByText('Add a policy').count()).toBe(0);
    } finally {
      await ctx.close();
    }
  });
});
