// Notifications from a real WordPress site going down and up: its web server is stopped and started again, and a rule
// sends site.down and site.up to an e-mail channel (a real SMTP server, the mail parsed) and a Slack channel (a
// loopback HTTP receiver): exactly one down and one up message reach each.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMonitoring } from '../../src/domain/index.js';
import { startServer, type TestServer } from '../support/server.js';
import { startReceiver, startSmtp, type HttpReceiver, type SmtpSink } from '../support/receivers.js';
import { realSite, resetSite, startSitesAgain, stopSitePhp } from './kit.js';
import { until } from '../support/wait.js';

const K = 4;
const INTERVAL_S = 2;
let s: TestServer;
let smtp: SmtpSink;
let slack: HttpReceiver;
let id: number;

beforeAll(async () => {
  resetSite(K);
  smtp = await startSmtp();
  slack = await startReceiver();
  s = await startServer({ config: { monitorIntervalS: String(INTERVAL_S), monitorFlushMs: '200' } });
});
afterAll(async () => {
  startSitesAgain(); // whatever happened, the site is back for the next run
  await s?.close();
  await smtp?.close();
  await slack?.close();
});

const slackTexts = () => slack.got.map((g) => g.json?.text as string);
const mailSubjects = () => smtp.mails.map((m) => m.subject ?? '');

describe('a real site stopped and started again', () => {
  it('is added, monitored and up; rules send its downs and ups to e-mail and Slack', async () => {
    const site = realSite(K);
    const r = await s.ability('add-site-v1', { url: site.url, admin: site.admin, admin_password: site.password, name: 'Real notified' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    id = r.body.id ?? r.body.site?.id;
    const mail = await s.ability('add-notification-channel-v1', {
      name: 'On-call mail',
      type: 'email',
      smtp: { host: '127.0.0.1', port: smtp.port, security: 'none', from: 'Fleet <fleet@example.com>' },
      recipients: ['oncall@example.com'],
    });
    expect(mail.status, JSON.stringify(mail.body)).toBe(200);
    const chat = await s.ability('add-notification-channel-v1', { name: 'Slack', type: 'slack', url: `${slack.url}/services/T0/B0/X` });
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
    for (const c of [mail.body, chat.body]) {
      const rule = await s.ability('add-notification-rule-v1', {
        name: `uptime to ${c.name}`,
        events: ['site.down', 'site.up'],
        channel_id: c.id,
      });
      expect(rule.status, JSON.stringify(rule.body)).toBe(200);
    }
    startMonitoring(s.services);
    await until(
      async () => (await s.rest(`/monitors/${id}`)).body.data,
      (d) => d.last_status === 'up',
    );
  });

  it('one down message on each when its web server stops', async () => {
    await stopSitePhp(K);
    await until(
      () => [mailSubjects(), slackTexts()],
      ([m, c]) => m.length >= 1 && c.length >= 1,
    );
    expect(mailSubjects()).toEqual(['Site down: Real notified']);
    expect(slackTexts()).toEqual(['Site down: Real notified']);
    expect(smtp.mails[0]!.envelopeTo).toEqual(['oncall@example.com']);
    expect(smtp.mails[0]!.text).toMatch(/is down since .* \(connection: /);
  });

  it('one up message on each when it is back, and nothing more', async () => {
    startSitesAgain();
    await until(
      () => [mailSubjects(), slackTexts()],
      ([m, c]) => m.length >= 2 && c.length >= 2,
    );
    // A few more monitor rounds: the site stays up, nothing else is sent.
    const checks = async () => (await s.rest(`/monitors/${id}/heartbeat?period=24h`)).body.data?.length ?? 0;
    const seen = await checks();
    await until(checks, (n) => n >= seen + 2);
    await s.services.notifications.settled();
    expect(mailSubjects()).toEqual(['Site down: Real notified', 'Site up again: Real notified']);
    expect(slackTexts()).toEqual(['Site down: Real notified', 'Site up again: Real notified']);
    const log = await s.ability('list-notification-deliveries-v1', { per_page: 20 }, { method: 'GET' });
    expect(log.body.items.map((d: { status: string }) => d.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
  });
});
