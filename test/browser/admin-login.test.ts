// "Open WP Admin" in a real browser against simulated children: the button on a site's page opens a tab that goes
// through sitefleet's one-time link and the child's signed login to wp-admin's dashboard, logged in as the site's
// admin; the same link opened again is refused; a viewer is offered no button.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchBrowser, openPageAs, shot, startConsoleServer, type ConsoleServer } from './support.js';

let srv: ConsoleServer;
let browser: Browser;

beforeAll(async () => {
  srv = await startConsoleServer({ sites: 2, env: { SITEFLEET_LOG: 'info' } }); // info: the use's log line
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await srv?.close();
});

describe('Open WP Admin', () => {
  it("opens the site's wp-admin logged in as its admin; the link works once", async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.admin);
    try {
      const links: string[] = [];
      ctx.on('request', (r) => {
        if (r.url().includes('/admin-login/')) links.push(r.url());
      });
      await page.goto(`${srv.url}/console#/sites/2`);
      const [tab] = await Promise.all([ctx.waitForEvent('page'), page.getByRole('button', { name: 'Open WP Admin' }).click()]);
      await tab.waitForURL(`${srv.sim.sites[1]!.url}wp-admin/index.php`);
      await expect.poll(() => tab.title()).toMatch(/^Dashboard/);
      expect(await tab.locator('#wpadminbar .display-name').textContent()).toBe(srv.sim.sites[1]!.admin);
      await shot(tab, 'admin-login-dashboard');
      expect(links).toHaveLength(1);
      expect(srv.output()).toContain('admin login link used');
      const again = await ctx.newPage();
      const r = await again.goto(links[0]!);
      expect(r!.status()).toBe(410);
      expect(again.url()).toBe(links[0]);
      expect(await again.textContent('body')).toContain('svc_admin_login_link_invalid');
    } finally {
      await ctx.close();
    }
  });

  it('a viewer is offered no Open WP Admin button', async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.viewer);
    try {
      await page.goto(`${srv.url}/console#/sites/2`);
      // The site's page is drawn: both of its facts blocks (the admin's page has the button: above).
      await page.locator('dl.facts').nth(1).waitFor();
      expect(await page.getByRole('button', { name: 'Open WP Admin' }).count()).toBe(0);
    } finally {
      await ctx.close();
    }
  });
});
