// Adding a site from the console in a real browser: the form takes the URL, the administrator and the password,
// shows the child's refusal of a wrong password, adds the site with the right one, and the password is kept nowhere
// (not in the data dir, not in the server's logs, not in the browser's storage, not in the emptied field).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startChildSim, type ChildSim } from '../../src/child/simulator/server.js';
import { launchBrowser, openPageAs, shot, startConsoleServer, type ConsoleServer } from './support.js';

let srv: ConsoleServer;
let child: ChildSim;
let browser: Browser;

beforeAll(async () => {
  // Logs at info (one line per request), so that the test can read what the server would write.
  srv = await startConsoleServer({ sites: 1, env: { SITEFLEET_LOG: 'info' } });
  child = await startChildSim({ sites: 1, seed: 41 });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await child?.close();
  await srv?.close();
});

/**
 * Every file's text under `dir`. The serve is running: a file listed may be gone when read (the commit lock, a staged
 * file renamed into place, whose target is read under its own name); it is passed over.
 */
function filesUnder(dir: string): string {
  return readdirSync(dir)
    .map((f) => join(dir, f))
    .map((p) => {
      try {
        return statSync(p).isDirectory() ? filesUnder(p) : readFileSync(p, 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '';
        throw e;
      }
    })
    .join('\n');
}

describe('adding a site from the console', () => {
  it("shows the child's refusal of a wrong password, adds the site with the right one, and keeps neither password", async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.admin);
    const site = child.sites[0]!;
    const wrong = 'not-the-password-4711';
    await page.getByRole('link', { name: 'Add a site' }).click();
    await page.getByRole('heading', { name: 'Add a site', level: 1 }).waitFor();
    await page.getByLabel('Site URL').fill(site.url);
    await page.getByLabel('Administrator user name').fill(site.admin);
    await page.getByLabel('Administrator password').fill(wrong);
    await page.getByRole('button', { name: 'Add site' }).click();

    const alert = page.locator('#add-site-result [role=alert]');
    await expect.poll(() => alert.textContent()).toContain('The site refused the connection.');
    const said = (await alert.textContent())!;
    expect(said).toContain('Please verify that your Admin Username and Password are correct'); // the child's own words
    expect(said).toContain('svc_child_refused');
    expect(await page.getByLabel('Administrator password').inputValue()).toBe('');
    await shot(page, 'add-site-refused');
    expect((await srv.rest('/sites/count')).body.total).toBe(1);

    await page.getByLabel('Administrator password').fill(site.password);
    await page.getByRole('button', { name: 'Add site' }).click();
    await page.waitForURL(/#\/sites\/\d+$/);
    const id = Number(page.url().split('#/sites/')[1]);
    await page.getByRole('heading', { level: 1 }).filter({ hasText: 'connected' }).waitFor();
    const added = await srv.rest(`/sites/${id}`);
    expect(added.status).toBe(200);
    expect(added.body.data.url.replace(/\/$/, '')).toBe(site.url.replace(/\/$/, ''));
    await shot(page, 'add-site-added');

    const storage = await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } }));
    for (const password of [wrong, site.password]) {
      expect(filesUnder(srv.dataDir), 'data dir').not.toContain(password);
      expect(srv.output(), 'server logs').not.toContain(password);
      expect(storage, 'browser storage').not.toContain(password);
    }
    expect(srv.output()).toMatch(/"msg":"request".*add-site-v1/); // the logs did see the calls
    await ctx.close();
  });

  it('is not offered to a viewer, and its page says who may add sites', async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.viewer);
    expect(await page.getByRole('link', { name: 'Add a site' }).count()).toBe(0);
    await page.goto(`${srv.url}/console#/sites/new`);
    await page.getByText('Only an administrator adds sites.').waitFor();
    expect(await page.getByLabel('Administrator password').count()).toBe(0);
    await ctx.close();
  });
});
