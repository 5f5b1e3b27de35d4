// The console's Notifications page in a real browser: an administrator adds a Slack channel (its URL to a loopback
// receiver) and a webhook channel (its signing secret shown once), test-sends one, edits it, adds a rule, sees the
// delivery log (a failed test with its reason), and deletes a channel after confirming; a viewer sees the page, with
// hook URLs masked, and no form or button that changes anything.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchBrowser, openPageAs, shot, startConsoleServer, type ConsoleServer } from './support.js';
import { startReceiver, type HttpReceiver } from '../support/receivers.js';
import { NOTIFICATION_EVENTS } from '../../src/store/notification-records.js';

let srv: ConsoleServer;
let browser: Browser;
let rx: HttpReceiver;

beforeAll(async () => {
  srv = await startConsoleServer({ sites: 1 });
  browser = await launchBrowser();
  rx = await startReceiver();
});
afterAll(async () => {
  await browser?.close();
  await srv?.close();
  await rx?.close();
});

describe('the Notifications page', () => {
  it('adds, test-sends, edits and deletes channels, adds a rule, and shows the delivery log', async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.admin);
    try {
      await page.getByRole('link', { name: 'Notifications' }).click();
      await page.getByRole('heading', { name: 'Notifications', level: 1 }).waitFor();
      await page.getByText('No channels yet.').waitFor();
      await page.getByText('Add a channel').click();
      const form = page.getByRole('form', { name: 'Add a channel' });
      await form.getByLabel('Name', { exact: true }).fill('Ops Slack');
      await form.getByLabel('Type').selectOption('slack');
      await form.getByLabel('URL (slack, discord, teams, webhook)').fill(`${rx.url}/services/T0/B0/SECRETPART`);
      await form.getByRole('button', { name: 'Add channel' }).click();
      await page.getByText('Channel Ops Slack created.').waitFor();
      await page.getByRole('cell', { name: 'Ops Slack', exact: true }).waitFor();

      await page.getByRole('button', { name: 'Test Ops Slack' }).click();
      await page.getByText('Test message delivered on Ops Slack.').waitFor();
      expect(rx.got.at(-1)!.json.text).toBe('Test notification from sitefleet (Ops Slack)');

      // A webhook channel: its signing secret is shown this once, and never in the page again.
      await page.getByText('Add a channel').click(); // the section was drawn again
      await form.getByLabel('Name', { exact: true }).fill('Pager');
      await form.getByLabel('Type').selectOption('webhook');
      await form.getByLabel('URL (slack, discord, teams, webhook)').fill(`${rx.url}/hook`);
      await form.getByRole('button', { name: 'Add channel' }).click();
      const shown = await page.getByText(/Signing secret \(shown this once\): whsec_/).textContent();
      const secret = /whsec_\w+/.exec(shown ?? '')![0];
      await page.reload();
      await page.getByRole('cell', { name: 'Pager', exact: true }).waitFor();
      expect(await page.content()).not.toContain(secret);

      // Edit: a new URL to a receiver that refuses; the test fails with the reason, in the notice and the log.
      await page.getByText('Edit', { exact: true }).first().click();
      const edit = page.getByRole('form', { name: 'Edit Ops Slack' });
      await edit.getByLabel('Name', { exact: true }).fill('Ops chat');
      await edit.getByLabel('New URL').fill(`${rx.url}/gone/T0/B0/X`);
      rx.answer = (res, r) => {
        if (r.path.startsWith('/gone')) {
          res.statusCode = 404;
          res.end('no_team');
        } else res.end('ok');
      };
      await edit.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Channel Ops chat saved.').waitFor();
      await page.getByRole('button', { name: 'Test Ops chat' }).click();
      await page.getByText('Test on Ops chat failed: HTTP 404: no_team').waitFor();
      await page.getByRole('table', { name: 'Delivery log' }).getByRole('cell', { name: 'HTTP 404: no_team' }).waitFor();

      await page.getByText('Add a rule').click();
      const rule = page.getByRole('form', { name: 'Add a rule' });
      // Every event the server knows is offered, in its order (the page reads them from the session).
      const offered = await rule
        .locator('fieldset input[type=checkbox]')
        .evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value));
      expect(offered).toEqual([...NOTIFICATION_EVENTS]);
      await rule.getByLabel('Rule name').fill('Uptime');
      await rule.getByLabel('tls.expiring').check();
      await rule.getByRole('button', { name: 'Add rule' }).click();
      await page.getByText('Rule created.').waitFor();
      await page.getByRole('cell', { name: 'site.down, site.up, tls.expiring' }).waitFor();
      await shot(page, 'notifications');
      expect((await srv.rest('/notifications/rules')).body.data[0]).toMatchObject({
        name: 'Uptime',
        events: ['site.down', 'site.up', 'tls.expiring'],
      });

      await page.getByRole('button', { name: 'Delete Pager' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete channel' }).click();
      await page.getByText('Channel Pager deleted.').waitFor();
      expect((await srv.rest('/notifications/channels')).body.total).toBe(1);
    } finally {
      await ctx.close();
    }
  });

  it('a viewer sees channels (hook URLs masked), rules and the log, but nothing that changes them', async () => {
    const { ctx, page } = await openPageAs(browser, srv.url, srv.viewer);
    try {
      await page.goto(`${srv.url}/console#/notifications`);
      await page.getByRole('table', { name: 'Channels' }).getByRole('cell', { name: 'Ops chat', exact: true }).waitFor();
      expect(await page.content()).not.toContain('/gone/T0/B0/X');
      expect(await page.getByRole('button', { name: 'Test Ops chat' }).count()).toBe(0);
      expect(await page.getByRole('button', { name: 'Delete Ops chat' }).count()).toBe(0);
      expect(await page.getByText('Add a channel').count()).toBe(0);
      expect(await page.getByText('Add a rule').count()).toBe(0);
    } finally {
      await ctx.close();
    }
  });
});
