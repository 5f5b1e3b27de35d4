// The console's audit log page in a real browser: an administrator sees the changes and logins, filters them; a
// viewer is offered no such page, and the server refuses it if asked anyway.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchBrowser, openPageAs, shot, startConsoleServer, type ConsoleServer } from './support.js';

let srv: ConsoleServer;
let browser: Browser;

beforeAll(async () => {
  srv = await startConsoleServer({ sites: 1 });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await srv?.close();
});

describe('the audit log page', () => {
  it('shows an administrator the changes and logins, newest first, and filters them', async () => {
    expect((await srv.rest('/tags/add', { method: 'POST', json: { name: 'audited-in-browser' } })).status).toBe(200);
    const { ctx, page } = await openPageAs(browser, srv.url, srv.admin);
    try {
      await page.getByRole('link', { name: 'Audit log' }).click();
      await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
      const table = page.getByRole('table', { name: 'Audit log' });
      await expect.poll(() => table.textContent()).toContain('audited-in-browser');
      expect(await table.textContent()).toContain('login');
      await shot(page, 'audit-log');
      await page.getByLabel('Action').fill('login');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/#\/audit\?action=login$/);
      await expect.poll(() => page.getByRole('heading', { name: /entries$/ }).textContent()).toBe('1 entries');
      expect(await table.textContent()).not.toContain('add-tag-v1');
    } finally {
      await ctx.close();
    }
  });

  it('is not offered to a viewer, and refused when asked for by its address', async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.viewer);
    try {
      expect(await page.getByRole('link', { name: 'Audit log' }).count()).toBe(0);
      await page.goto(`${srv.url}/console#/audit`);
      await expect.poll(() => page.locator('#main').textContent()).toContain('svc_permission_denied');
      expect(await page.getByRole('table', { name: 'Audit log' }).count()).toBe(0);
    } finally {
      await ctx.close();
    }
  });
});
