// "Open WP Admin" in headless Chromium against a real WordPress + MainWP Child site: the console's button opens a tab
// that goes through sitefleet's one-time link and the child's own signed login (login_required) to wp-admin's
// dashboard, logged in as the site's administrator; the same link opened again is 410 and logs nobody in; a viewer's
// console offers no button and the ability refuses a viewer and a read key. (Chromium: Debian's, which this lane's
// global setup installs when missing, as the browser lane's does.)
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPageAs, shot } from '../browser/support.js';
import { expectError } from '../support/fixtures.js';
import { startServer, type TestServer } from '../support/server.js';
import { realSite, serverWithRealSite, wpJson } from './kit.js';

const K = 2;
let s: TestServer;
let id: number;
let browser: Browser;

/** The console login of a Basic credential the test server made. */
const personOf = (basic: string) => {
  const [name, password] = Buffer.from(basic.slice('Basic '.length), 'base64').toString().split(':') as [string, string];
  return { name, password };
};

beforeAll(async () => {
  ({ s, id } = await serverWithRealSite(K, () => startServer()));
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe('Open WP Admin on a real site, in Chromium', () => {
  it("the console's button lands on wp-admin's dashboard logged in as the site's admin; the link works once", async () => {
    const site = realSite(K);
    const me = wpJson<{ display_name: string }>(
      K,
      `$u = get_user_by('login', '${site.admin}'); return ['display_name' => $u->display_name];`,
    );
    const { ctx, page } = await openPageAs(browser, s.url, personOf(s.creds.admin));
    try {
      const links: string[] = [];
      ctx.on('request', (r) => {
        if (r.url().includes('/admin-login/')) links.push(r.url());
      });
      await page.goto(`${s.url}/console#/sites/${id}`);
      const [tab] = await Promise.all([ctx.waitForEvent('page'), page.getByRole('button', { name: 'Open WP Admin' }).click()]);
      await tab.waitForURL((u) => u.origin === new URL(site.url).origin && /\/wp-admin\/(index\.php)?$/.test(u.pathname), {
        timeout: 30_000,
      });
      await expect.poll(() => tab.title(), { timeout: 15_000 }).toMatch(/^Dashboard ‹ /);
      expect((await tab.locator('#wpadminbar .display-name').first().textContent())?.trim()).toBe(me.display_name);
      await shot(tab, 'real-site-admin-login-dashboard');
      expect(links).toHaveLength(1);
      expect(links[0]!.startsWith(`${s.url}/admin-login/`)).toBe(true);

      // Once only: in a browser with no WordPress session, the same link is refused and goes nowhere.
      const fresh = await browser.newContext();
      try {
        const again = await fresh.newPage();
        const r = await again.goto(links[0]!);
        expect(r!.status()).toBe(410);
        expect(again.url()).toBe(links[0]);
        expect(await again.textContent('body')).toContain('svc_admin_login_link_invalid');
        const admin = await again.goto(`${site.url}wp-admin/`);
        expect(admin!.ok()).toBe(true);
        expect(new URL(again.url()).pathname).toMatch(/\/wp-login\.php$/); // not logged in: WordPress asks for a login
      } finally {
        await fresh.close();
      }
    } finally {
      await ctx.close();
    }
  });

  it("a viewer's console offers no Open WP Admin button, and a viewer and a read key get no link", async () => {
    const { ctx, page } = await openPageAs(browser, s.url, personOf(s.creds.viewer));
    try {
      await page.goto(`${s.url}/console#/sites/${id}`);
      await page.locator('dl.facts').first().waitFor(); // the site's page is drawn (the admin's has the button: above)
      expect(await page.getByRole('button', { name: 'Open WP Admin' }).count()).toBe(0);
    } finally {
      await ctx.close();
    }
    expectError(
      await s.ability('get-admin-login-url-v1', { site_id_or_domain: id }, { auth: s.creds.viewer }),
      403,
      'svc_permission_denied',
    );
    expectError(await s.rest(`/sites/${id}/admin-login`, { method: 'POST', token: s.creds.key.read }), 403, 'svc_permission_denied');
  });
});
