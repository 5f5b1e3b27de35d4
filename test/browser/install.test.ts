// The console's Install page in a real browser: search the (simulated) directory, pick a plugin, preview it on two
// sites and confirm, and the children have it, active; a viewer can search but is offered no install.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startChildSim, type ChildSim } from '../../src/child/simulator/server.js';
import { launchBrowser, openPageAs, shot, startConsoleServer, type ConsoleServer } from './support.js';

let dir: ChildSim;
let srv: ConsoleServer;
let browser: Browser;

beforeAll(async () => {
  // Any simulator serves the stand-in directory; this one only that.
  dir = await startChildSim({ sites: 1 });
  srv = await startConsoleServer({ sites: 3, env: { SITEFLEET_PACKAGE_SOURCE: `${dir.baseUrl}/__sim/dir/` } });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await srv?.close();
  await dir?.close();
});

describe('the Install page', () => {
  it('searches the directory, previews the install on two sites, and installs on confirmation', async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.admin);
    try {
      await page.getByRole('link', { name: 'Install' }).click();
      await page.getByRole('heading', { name: 'Install', level: 1 }).waitFor();
      await page.getByLabel('Search', { exact: true }).fill('delta');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.getByRole('button', { name: 'Use sim-delta' }).click();
      await expect.poll(() => page.getByLabel('Slug').inputValue()).toBe('sim-delta');
      await page.getByLabel('Version').fill('1.0.0');
      await page.getByLabel('Sites (IDs or domains)').fill('1, 2');
      await page.getByLabel('Activate (plugins)').check();
      await page.getByRole('button', { name: 'Preview and install…' }).click();
      const dialog = page.getByRole('dialog');
      await expect.poll(() => dialog.getByRole('heading').textContent()).toBe('Install Sim Delta 1.0.0 on 2 site(s)?');
      await shot(page, 'install-preview');
      await dialog.getByRole('button', { name: 'Install' }).click();
      await page.getByText('2 installed, 0 failed, 0 skipped.').waitFor();
      await shot(page, 'install-done');
      for (const n of [1, 2])
        expect(srv.sim.state(n).plugins.find((p) => p.slug === 'sim-delta/sim-delta.php')).toMatchObject({
          version: '1.0.0',
          active: true,
        });
      expect(srv.sim.state(3).plugins.find((p) => p.slug === 'sim-delta/sim-delta.php')).toBeUndefined();
    } finally {
      await ctx.close();
    }
  });

  it('a viewer can search but is offered no install', async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.viewer);
    try {
      await page.goto(`${srv.url}/console#/install`);
      await page.getByText('Your role can search the directory but not install.').waitFor();
      expect(await page.getByRole('button', { name: 'Preview and install…' }).count()).toBe(0);
      await page.getByLabel('Search', { exact: true }).fill('form');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.getByRole('button', { name: 'Use contact-form-lite' }).waitFor();
    } finally {
      await ctx.close();
    }
  });
});
