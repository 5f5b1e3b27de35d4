// The console's Vulnerabilities page in a real browser: the fixture feed (test/fixtures/vulnerabilities, the shared
// synthetic Wordfence feed) imported with `sitefleet vulnerabilities import` into a simulator fleet (seed 1, the
// fixture table's sites); a slug filter lists exactly the table's records with their attribution; an administrator
// runs the one-call fix (safe mode) after its confirmation and sees the results per site; a viewer sees the list but
// no fix button.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { cli } from '../support/process.js';
import { launchBrowser, openPageAs, shot, startConsoleServer, type ConsoleServer } from './support.js';

const FIX = join(import.meta.dirname, '..', 'fixtures', 'vulnerabilities');
const expected = JSON.parse(readFileSync(join(FIX, 'expected-matches.json'), 'utf8')) as {
  records: Array<{ ref: string; wordfenceId: string }>;
  expectations: Array<{ where: string; slug: string; affectedBy: string[] }>;
};
const idOf = new Map(expected.records.map((r) => [r.ref, r.wordfenceId]));
/** The feed ids the fixture table says affect `slug` on the simulator's sites 1–3 (seed 1). */
const idsFor = (slug: string) =>
  [
    ...new Set(
      expected.expectations
        .filter((e) => e.where.startsWith('simulator seed 1, site ') && e.slug === slug)
        .flatMap((e) => e.affectedBy.map((ref) => idOf.get(ref)!)),
    ),
  ].sort();

let srv: ConsoleServer;
let browser: Browser;

beforeAll(async () => {
  srv = await startConsoleServer({ sites: 3, seed: 1 });
  browser = await launchBrowser();
  const r = await cli(['vulnerabilities', 'import', join(FIX, 'wordfence-production.json'), '--data-dir', srv.dataDir]);
  expect(r.code, r.stderr).toBe(0);
});
afterAll(async () => {
  await browser?.close();
  await srv?.close();
});

describe('the Vulnerabilities page', () => {
  it('lists exactly the records of a filter, with references and attribution; the fix runs and answers per site', async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.admin);
    try {
      // The overview's count links to the page.
      await page.getByRole('link', { name: /in all$/ }).click();
      await page.getByRole('heading', { name: 'Vulnerabilities', level: 1 }).waitFor();
      await expect.poll(() => page.getByRole('region', { name: 'Feed' }).textContent()).toMatch(/Sourcewordfence/);
      await page.getByLabel('Slug').fill('elementor');
      await page.getByRole('button', { name: 'Filter' }).click();
      const want = idsFor('elementor');
      expect(want.length).toBe(2);
      await page.getByRole('heading', { name: `${want.length} vulnerabilities`, level: 2 }).waitFor();
      const ids = await page.locator('article.vuln dl dd code').allTextContents();
      expect(ids.sort()).toEqual(want);
      expect(page.url()).toContain('#/vulnerabilities?slug=elementor');
      // Each record carries its attribution; links open elsewhere without handing over this page.
      const first = page.locator('article.vuln').first();
      await expect.poll(() => first.textContent()).toMatch(/Copyright 2099 Example Feed Vendor \(SYNTHETIC\)/);
      const external = first.locator('a[target="_blank"]');
      expect(await external.count()).toBeGreaterThan(0);
      for (const rel of await external.evaluateAll((as) => as.map((a) => a.getAttribute('rel')))) expect(rel).toContain('noopener');

      await page.getByRole('button', { name: 'Fix vulnerabilities' }).click();
      const dialog = page.getByRole('dialog');
      await expect.poll(() => dialog.textContent()).toMatch(/Safe mode/);
      await dialog.getByRole('button', { name: 'Update sites' }).click();
      const results = page.getByRole('table', { name: 'Fix results per site' });
      await results.waitFor();
      await shot(page, 'vulnerabilities-fix');
      const rows = await results.locator('tbody tr').allTextContents();
      expect(rows).toHaveLength(3);
      // Site 1's wordpress-seo update fixes WF-16; site 2 offers contact-form-7 4.1.0, short of the fix (5.0.0).
      expect(rows.find((r) => r.startsWith('Shop 01'))).toMatch(/Yoast SEO|wordpress-seo/);
      expect(rows.find((r) => r.startsWith('Shop 02'))).toMatch(/contact-form-7 4\.0\.1: offered_update_not_fixed \(fixed in 5\.0\.0\)/);
      const after = await srv.rest('/vulnerabilities?slug=wordpress-seo');
      expect(after.body.total).toBe(0);
    } finally {
      await ctx.close();
    }
  });

  it('a viewer sees the list but no fix button', async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.viewer);
    try {
      await page.goto(`${srv.url}/console#/vulnerabilities?slug=smush`);
      await page.getByRole('heading', { name: '1 vulnerabilities', level: 2 }).waitFor();
      expect(await page.locator('article.vuln dl dd code').allTextContents()).toEqual(idsFor('smush'));
      expect(await page.getByRole('button', { name: 'Fix vulnerabilities' }).count()).toBe(0);
    } finally {
      await ctx.close();
    }
  });
});
