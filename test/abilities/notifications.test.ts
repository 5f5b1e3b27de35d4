// Notification channels, rules and the delivery log through the registry: a real SMTP server receives the e-mail, a
// loopback HTTP receiver the Slack, Discord, Teams and webhook payloads; bad far ends (unreachable, wrong password,
// private address, hang, 10 MB answer) each end as a clear error in the delivery log. Time is the service's clock,
// moved by the tests; nothing sleeps.
import { createHmac } from 'node:crypto';
import { hostname } from 'node:os';
import { lookup } from 'node:dns/promises';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isPrivateAddress } from '../../src/child/address-policy.js';
import { NotificationService } from '../../src/domain/notifications/service.js';
import { DIGEST_ITEMS } from '../../src/domain/notifications/messages.js';
import { MAX_ANSWER_BYTES } from '../../src/domain/notifications/senders.js';
import { syncFailedEvent } from '../../src/domain/notifications/events.js';
import { openStore } from '../../src/store/open.js';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { until } from '../support/wait.js';
import { localCert, startReceiver, startSmtp, type HttpReceiver, type SmtpSink } from '../support/receivers.js';

let h: AbilityHarness;
let rx: HttpReceiver;
let smtp: SmtpSink;
let clock = Date.parse('2026-03-02T09:00:00Z');
const RETRY_MS = 1000;

beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 3, seed: 11 }, config: { webhookRetryMs: String(RETRY_MS) } });
  h.services.notifications.now = () => clock;
  await h.addSimSites(3);
  rx = await startReceiver();
  smtp = await startSmtp({ auth: { user: 'alerts', pass: 's3cret-pass' } });
});
afterAll(async () => {
  await h.close();
  await rx.close();
  await smtp.close();
});
afterEach(async () => {
  rx.answer = (res) => res.end('ok');
  rx.got.length = 0;
  await h.services.notifications.settled();
  // Each test starts with no rules, no channels and an empty log.
  await h.services.store.write((tx) => {
    for (const col of ['notification_rules', 'notification_channels', 'notification_deliveries'] as const)
      for (const r of [...tx.all(col)]) tx.delete(col, r.id);
  });
});

const n = () => h.services.notifications;
const smtpChannel = (extra: Record<string, unknown> = {}) =>
  h.call('add-notification-channel-v1', {
    name: 'On-call mail',
    type: 'email',
    smtp: { host: '127.0.0.1', port: smtp.port, security: 'none', username: 'alerts', from: 'Fleet <fleet@example.com>' },
    password: 's3cret-pass',
    recipients: ['oncall@example.com', 'boss@example.com'],
    ...extra,
  });
const hook = (type: 'slack' | 'discord' | 'teams' | 'webhook', path = `/${type}`) =>
  h.call('add-notification-channel-v1', { name: `${type} hook`, type, url: `${rx.url}${path}/T000/B000/XXXX` });
const siteOf = (id: number) => {
  const s = h.services.sites.get(id)!;
  return { id: s.id, name: s.name, url: s.url };
};
const failed = (id: number) => syncFailedEvent(siteOf(id), { code: 'svc_child_unreachable', message: 'connect ECONNREFUSED' }, clock);

describe('e-mail channel (a real SMTP server)', () => {
  it('sends a test e-mail with subject, text and HTML parts to the recipients, through SMTP auth', async () => {
    const c = await smtpChannel();
    expect(c).toMatchObject({ type: 'email', has_password: true, url: '', secret: null });
    expect(JSON.stringify(c)).not.toContain('s3cret-pass');
    const before = smtp.mails.length;
    const d = await h.call('test-notification-channel-v1', { channel_id: c.id });
    expect(d).toMatchObject({ status: 'delivered', attempts: 1, last_error: null, kind: 'test' });
    const mail = smtp.mails[before]!;
    expect(mail.subject).toBe('Test notification from sitefleet (On-call mail)');
    expect(mail.from?.value[0]).toMatchObject({ address: 'fleet@example.com', name: 'Fleet' });
    expect(mail.envelopeTo.sort()).toEqual(['boss@example.com', 'oncall@example.com']);
    expect(mail.text).toContain('This email channel works');
    expect(mail.html).toContain('<h2');
    expect(mail.html).toContain('Test notification from sitefleet (On-call mail)');
  });

  it('mails a site.sync_failed event from a rule to its own recipients, escaping the site name in HTML', async () => {
    const c = await smtpChannel();
    await h.call('add-notification-rule-v1', {
      name: 'all down',
      events: ['site.sync_failed'],
      channel_id: c.id,
      recipients: ['ops@example.com'],
    });
    const before = smtp.mails.length;
    await n().emit(
      syncFailedEvent({ ...siteOf(1), name: 'Shop <b>&</b>' }, { code: 'svc_child_unreachable', message: 'connect ECONNREFUSED' }, clock),
    );
    await n().settled();
    const mail = smtp.mails[before]!;
    expect(mail.envelopeTo).toEqual(['ops@example.com']);
    expect(mail.subject).toMatch(/^Sync failed: /);
    expect(mail.text).toContain('could not be synced: connect ECONNREFUSED (svc_child_unreachable)');
    expect(mail.html).toContain('Sync failed: Shop &lt;b&gt;&amp;&lt;/b&gt;');
    expect(mail.html).not.toContain('<b>&</b>');
    expect(n().deliveries()[0]).toMatchObject({ status: 'delivered', recipients: ['ops@example.com'] });
  });

  it('logs a wrong password as an auth error, and does not retry a test-send', async () => {
    const c = await smtpChannel({ password: 'wrong' });
    const d = await h.call('test-notification-channel-v1', { channel_id: c.id });
    expect(d.status).toBe('failed');
    expect(d.attempts).toBe(1);
    expect(d.last_error).toMatch(/^smtp auth: the server at 127\.0\.0\.1:\d+ refused the username or password/);
    expect(d.last_error).not.toContain('wrong');
  });

  it('logs an unreachable SMTP server as a connection error', async () => {
    const closed = await startSmtp();
    await closed.close();
    const c = await smtpChannel({
      smtp: { host: '127.0.0.1', port: closed.port, security: 'none', username: '', from: 'fleet@example.com' },
      password: undefined,
    });
    const d = await h.call('test-notification-channel-v1', { channel_id: c.id });
    expect(d.status).toBe('failed');
    expect(d.last_error).toMatch(/^smtp connection: cannot connect to 127\.0\.0\.1:\d+/);
  });

  const cert = localCert();
  it.skipIf(!cert)('upgrades with STARTTLS and checks the certificate against the host name', async () => {
    const tlsSmtp = await startSmtp({ auth: { user: 'alerts', pass: 'pw' }, tls: cert! });
    const trusted = new NotificationService(h.services.store, h.services.config, { tlsCa: cert!.cert, now: () => clock });
    const untrusted = new NotificationService(h.services.store, h.services.config, { now: () => clock });
    try {
      const c = await smtpChannel({
        smtp: { host: 'localhost', port: tlsSmtp.port, security: 'starttls', username: 'alerts', from: 'fleet@example.com' },
        password: 'pw',
      });
      expect(await trusted.testChannel(c.id)).toMatchObject({ status: 'delivered' });
      expect(tlsSmtp.mails).toHaveLength(1);
      const bad = await untrusted.testChannel(c.id);
      expect(bad.status).toBe('failed');
      expect(bad.last_error).toMatch(/^smtp tls: .*(self[- ]signed|certificate)/i);
      expect(tlsSmtp.mails).toHaveLength(1);
    } finally {
      await trusted.stop();
      await untrusted.stop();
      await tlsSmtp.close();
    }
  });
});

describe('chat channels (their incoming-webhook formats)', () => {
  it('posts Slack Block Kit, a Discord embed and a Teams Adaptive Card', async () => {
    for (const type of ['slack', 'discord', 'teams'] as const) {
      const c = await hook(type);
      const d = await h.call('test-notification-channel-v1', { channel_id: c.id });
      expect(d).toMatchObject({ status: 'delivered', last_http_status: 200 });
    }
    const [slack, discord, teams] = rx.got;
    expect(slack!.path).toBe('/slack/T000/B000/XXXX');
    expect(slack!.headers['content-type']).toBe('application/json');
    expect(slack!.json).toEqual({
      text: 'Test notification from sitefleet (slack hook)',
      blocks: [
        { type: 'header', text: { type: 'plain_text', text: 'Test notification from sitefleet (slack hook)' } },
        { type: 'section', text: { type: 'mrkdwn', text: expect.stringContaining('This slack channel works') } },
      ],
    });
    expect(discord!.json).toMatchObject({
      username: 'sitefleet',
      content: 'Test notification from sitefleet (discord hook)',
      embeds: [
        { title: 'Test notification from sitefleet (discord hook)', color: 0x2271b1, description: expect.stringContaining('works') },
      ],
      allowed_mentions: { parse: [] },
    });
    expect(teams!.json).toMatchObject({
      type: 'message',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          content: {
            type: 'AdaptiveCard',
            version: '1.4',
            body: [
              { type: 'TextBlock', text: 'Test notification from sitefleet (teams hook)', weight: 'Bolder', color: 'Accent', wrap: true },
              { type: 'TextBlock', text: expect.stringContaining('This teams channel works'), wrap: true },
            ],
          },
        },
      ],
    });
  });

  it('colours a Discord embed red for a failure', async () => {
    const c = await hook('discord');
    await h.call('add-notification-rule-v1', { name: 'r', events: ['site.sync_failed'], channel_id: c.id });
    await n().emit(failed(2));
    await n().settled();
    expect(rx.got[0]!.json.embeds[0].color).toBe(0xd63638);
  });

  it('signs webhook deliveries with the secret shown once, and never answers it again', async () => {
    const c = await hook('webhook');
    expect(c.secret).toMatch(/^whsec_[0-9a-f]{48}$/);
    await h.call('add-notification-rule-v1', { name: 'r', events: ['site.sync_failed'], channel_id: c.id });
    await n().emit(failed(1));
    await n().settled();
    const got = rx.got[0]!;
    const sig = `sha256=${createHmac('sha256', c.secret!).update(got.body).digest('hex')}`;
    expect(got.headers['x-sitefleet-signature']).toBe(sig);
    expect(got.headers['x-sitefleet-event']).toBe('site.sync_failed');
    expect(got.json).toMatchObject({ event: 'site.sync_failed', site: { id: 1 }, error: { code: 'svc_child_unreachable' } });
    const listed = await h.call('list-notification-channels-v1', {});
    expect(JSON.stringify(listed)).not.toContain(c.secret!);
  });

  it('shows a hook URL whole to callers that may write and masked to the others', async () => {
    const c = await hook('slack');
    const whole = `${rx.url}/slack/T000/B000/XXXX`;
    expect((await h.call('list-notification-channels-v1', {}, h.as.admin)).items[0]).toMatchObject({ url: whole, url_masked: false });
    for (const p of [h.as.viewer, h.as.readKey, h.as.readOnlyLocal]) {
      const item = (await h.call('list-notification-channels-v1', {}, p)).items[0]!;
      expect(item).toMatchObject({ url: `${rx.url}/***`, url_masked: true });
      expect(JSON.stringify(item)).not.toContain('XXXX');
    }
    expect(c.url).toBe(whole);
  });

  it('refuses a bad channel: wrong fields for its type, a URL with credentials, a bad recipient', async () => {
    expect((await h.fails('add-notification-channel-v1', { name: 'x', type: 'slack' })).code).toBe('svc_invalid_channel');
    expect((await h.fails('add-notification-channel-v1', { name: 'x', type: 'slack', url: 'ftp://x.example/' })).code).toBe(
      'svc_invalid_url',
    );
    expect((await h.fails('add-notification-channel-v1', { name: 'x', type: 'discord', url: 'https://u:p@x.example/' })).code).toBe(
      'svc_invalid_url',
    );
    expect(
      (await h.fails('add-notification-channel-v1', { name: 'x', type: 'slack', url: 'https://x.example/', recipients: ['a@b.example'] }))
        .code,
    ).toBe('svc_invalid_channel');
    expect((await smtpChannel({ recipients: ['not-an-address'] }).catch((e) => e)).code).toBe('svc_invalid_recipients');
    expect((await smtpChannel({ recipients: [] }).catch((e) => e)).code).toBe('svc_invalid_recipients');
    expect((await h.fails('add-notification-channel-v1', { name: 'x', type: 'pager', url: 'https://x.example/' })).code).toBe(
      'ability_invalid_input',
    );
    expect(n().listChannels()).toHaveLength(0);
  });

  it('updates a channel: a new URL replaces the secret, smtp settings merge, a viewer may not', async () => {
    const c = await hook('slack');
    const u = await h.call('update-notification-channel-v1', { channel_id: c.id, url: `${rx.url}/slack/NEW`, rate_per_minute: 5 });
    expect(u).toMatchObject({ url: `${rx.url}/slack/NEW`, rate_per_minute: 5 });
    const m = await smtpChannel();
    const m2 = await h.call('update-notification-channel-v1', { channel_id: m.id, smtp: { port: 2525 } });
    expect(m2.smtp).toMatchObject({ host: '127.0.0.1', port: 2525, username: 'alerts' });
    expect((await h.fails('update-notification-channel-v1', { channel_id: c.id, name: 'y' }, h.as.viewer)).code).toBe(
      'svc_permission_denied',
    );
    expect((await h.fails('update-notification-channel-v1', { channel_id: 999, name: 'y' })).code).toBe('svc_channel_not_found');
  });
});

describe('bad far ends: each a clear error in the log, nothing else stalls', () => {
  it('refuses a channel URL at a private address, and a name that resolves to one when it sends', async () => {
    const strict = await openAbilities({ config: { allowPrivateSites: false } });
    try {
      const e = await strict.fails('add-notification-channel-v1', { name: 'x', type: 'slack', url: 'http://127.0.0.1:9/hook' });
      expect(e.code).toBe('svc_address_not_allowed');
      const e2 = await strict.fails('add-notification-channel-v1', {
        name: 'x',
        type: 'email',
        smtp: { host: '10.0.0.5', port: 25, security: 'none', username: '', from: 'a@b.example' },
        recipients: ['c@d.example'],
      });
      expect(e2.code).toBe('svc_address_not_allowed');
      const name = hostname();
      const addr = await lookup(name).catch(() => null);
      if (addr && isPrivateAddress(addr.address)) {
        const c = await strict.call('add-notification-channel-v1', {
          name: 'x',
          type: 'teams',
          url: `http://${name}:${new URL(rx.url).port}/t`,
        });
        const d = await strict.call('test-notification-channel-v1', { channel_id: c.id });
        expect(d.status).toBe('failed');
        expect(d.last_error).toMatch(/^blocked: .* is refused: it is a private or local address/);
        expect(d.last_error).not.toContain('127.0.0.1');
        const m = await strict.call('add-notification-channel-v1', {
          name: 'm',
          type: 'email',
          smtp: { host: name, port: smtp.port, security: 'none', username: '', from: 'a@b.example' },
          recipients: ['c@d.example'],
        });
        expect((await strict.call('test-notification-channel-v1', { channel_id: m.id })).last_error).toMatch(/^blocked: /);
        expect(rx.got).toHaveLength(0);
      }
    } finally {
      await strict.close();
    }
  });

  it('ends a receiver that hangs at the timeout while another channel delivers at once', async () => {
    const quick = new NotificationService(h.services.store, h.services.config, { now: () => clock, timeoutMs: 300 });
    try {
      const hang = await hook('slack', '/hang');
      const fine = await hook('discord', '/fine');
      rx.answer = (res, r) => {
        if (!r.path.startsWith('/hang')) res.end('ok');
      };
      const started = Date.now();
      const [slow, fast] = await Promise.all([
        quick.testChannel(hang.id),
        (async () => {
          const d = await quick.testChannel(fine.id);
          return { d, ms: Date.now() - started };
        })(),
      ]);
      expect(fast.d.status).toBe('delivered');
      expect(fast.ms).toBeLessThan(300);
      expect(slow.status).toBe('failed');
      expect(slow.last_error).toBe('timeout: No answer within 300 ms.');
    } finally {
      await quick.stop();
    }
  });

  it('ends an SMTP server that takes the connection and never greets at the timeout, while a chat channel delivers', async () => {
    const sockets = new Set<Socket>();
    const mute = createNetServer((sock) => void sockets.add(sock)); // accepts, says nothing
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
    const quick = new NotificationService(h.services.store, h.services.config, { now: () => clock, timeoutMs: 1500 });
    try {
      const mail = await smtpChannel({
        smtp: { host: '127.0.0.1', port: (mute.address() as AddressInfo).port, security: 'none', username: '', from: 'fleet@example.com' },
        password: undefined,
      });
      const chat = await hook('slack', '/fine');
      const started = Date.now();
      const [slow, fast] = await Promise.all([
        quick.testChannel(mail.id),
        (async () => {
          const d = await quick.testChannel(chat.id);
          return { d, ms: Date.now() - started };
        })(),
      ]);
      expect(fast.d.status).toBe('delivered');
      expect(fast.ms).toBeLessThan(1000);
      expect(slow.status).toBe('failed');
      expect(slow.last_error).toMatch(
        /^smtp (timeout: no answer from 127\.0\.0\.1:\d+ within 1500 ms|connection: .*(timeout|Greeting never received))/i,
      );
      const took = Date.now() - started;
      expect(took).toBeGreaterThanOrEqual(1400);
      expect(took).toBeLessThan(6_000);
    } finally {
      await quick.stop();
      for (const sock of sockets) sock.destroy();
      await new Promise((r) => mute.close(r));
    }
  });

  it(`refuses an answer over ${MAX_ANSWER_BYTES} bytes (a 10 MB answer) without reading it all`, async () => {
    const c = await hook('teams');
    let sent = 0;
    rx.answer = (res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const push = () => {
        while (sent < 10 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', push);
        }
        res.end();
      };
      res.on('error', () => {});
      push();
    };
    const d = await h.call('test-notification-channel-v1', { channel_id: c.id });
    expect(d).toMatchObject({ status: 'failed', last_http_status: 200 });
    expect(d.last_error).toBe(`The receiver's answer is larger than ${MAX_ANSWER_BYTES} bytes: refused.`);
  });

  it('logs an HTTP error status with the start of what the receiver said', async () => {
    const c = await hook('slack');
    rx.answer = (res) => {
      res.statusCode = 404;
      res.end('no_team');
    };
    const d = await h.call('test-notification-channel-v1', { channel_id: c.id });
    expect(d).toMatchObject({ status: 'failed', last_http_status: 404, last_error: 'HTTP 404: no_team' });
  });
});

describe('retries, rate and claims', () => {
  it('retries a failed delivery with backoff (×5) on the clock, then delivers', async () => {
    const c = await hook('slack');
    await h.call('add-notification-rule-v1', { name: 'r', events: ['site.sync_failed'], channel_id: c.id });
    let fails = 2;
    rx.answer = (res) => {
      if (fails-- > 0) res.statusCode = 500;
      res.end('x');
    };
    const t0 = clock;
    await n().emit(failed(1));
    await n().settled();
    let d = n().deliveries()[0]!;
    expect(d).toMatchObject({ status: 'pending', attempts: 1, last_error: 'HTTP 500: x', next_attempt_at: t0 + RETRY_MS });
    await n().sweep(); // not due yet
    await n().settled();
    expect(rx.got).toHaveLength(1);
    clock = t0 + RETRY_MS;
    await n().sweep();
    await n().settled();
    d = n().deliveries()[0]!;
    expect(d).toMatchObject({ status: 'pending', attempts: 2, next_attempt_at: clock + RETRY_MS * 5 });
    clock += RETRY_MS * 5;
    await n().sweep();
    await n().settled();
    expect(n().deliveries()[0]).toMatchObject({ status: 'delivered', attempts: 3, last_error: null });
    expect(rx.got).toHaveLength(3);
    const log = await h.call('list-notification-deliveries-v1', { channel_id: c.id });
    expect(log.items[0]).toMatchObject({ status: 'delivered', attempts: 3, events: ['site.sync_failed'], next_attempt_at: null });
  });

  it('gives up after 5 attempts with the last error', async () => {
    const c = await hook('slack');
    await h.call('add-notification-rule-v1', { name: 'r', events: ['site.sync_failed'], channel_id: c.id });
    rx.answer = (res) => {
      res.statusCode = 503;
      res.end();
    };
    await n().emit(failed(3));
    for (let i = 0; i < 6; i++) {
      await n().settled();
      clock += RETRY_MS * 5 ** 5;
      await n().sweep();
    }
    await n().settled();
    expect(n().deliveries()[0]).toMatchObject({ status: 'failed', attempts: 5, last_error: 'HTTP 503' });
    expect(rx.got).toHaveLength(5);
  });

  it('holds a channel to its rate per minute: the rest wait for the next minute', async () => {
    const c = await h.call('add-notification-channel-v1', { name: 's', type: 'slack', url: `${rx.url}/s`, rate_per_minute: 2 });
    await h.call('add-notification-rule-v1', { name: 'r', events: ['site.sync_failed'], channel_id: c.id });
    const t0 = clock;
    for (const id of [1, 2, 3]) await n().emit(failed(id));
    await n().settled();
    expect(rx.got).toHaveLength(2);
    const waiting = n().deliveries({ status: 'pending' });
    expect(waiting).toHaveLength(1);
    expect(waiting[0]!.next_attempt_at).toBe(t0 + 60_000);
    expect(waiting[0]!.attempts).toBe(0);
    clock = t0 + 60_000;
    await n().sweep();
    await n().settled();
    expect(rx.got).toHaveLength(3);
  });

  it('sends each delivery once when two processes sweep the same store', async () => {
    const c = await hook('slack');
    await h.call('add-notification-rule-v1', { name: 'r', events: ['site.sync_failed'], channel_id: c.id });
    // Queued while the receiver fails, so that both processes find them due at once.
    rx.answer = (res) => {
      res.statusCode = 500;
      res.end();
    };
    for (const id of [1, 2, 3]) await n().emit(failed(id));
    await n().settled();
    rx.answer = (res) => res.end('ok');
    rx.got.length = 0;
    const store2 = await openStore(h.services.config);
    const other = new NotificationService(store2, h.services.config, { now: () => clock, owner: 'other-process' });
    try {
      clock += RETRY_MS;
      await Promise.all([n().sweep(), other.sweep()]);
      await Promise.all([n().settled(), other.settled()]);
      await h.services.store.sync();
      expect(rx.got).toHaveLength(3);
      expect(new Set(rx.got.map((g) => g.json.text)).size).toBe(3);
      expect(
        n()
          .deliveries()
          .every((d) => d.status === 'delivered' && d.attempts === 2),
      ).toBe(true);
    } finally {
      await other.stop();
      await store2.close();
    }
  });
});

describe('rules', () => {
  it('sends an event only for the sites a rule names (tag, client, id), and never twice to the same place', async () => {
    const c = await hook('slack');
    const tag = await h.call('add-tag-v1', { name: 'Shops' });
    await h.call('update-site-v1', { site_id_or_domain: 2, tags: [tag.id] });
    await h.call('add-notification-rule-v1', {
      name: 'by tag',
      events: ['site.sync_failed'],
      channel_id: c.id,
      sites: { tag_ids: [tag.id] },
    });
    await h.call('add-notification-rule-v1', { name: 'by id', events: ['site.sync_failed'], channel_id: c.id, sites: { site_ids: [2] } });
    await h.call('add-notification-rule-v1', { name: 'other event', events: ['site.down'], channel_id: c.id });
    await n().emit(failed(1)); // no rule for site 1
    const e2 = failed(2);
    await n().emit(e2);
    await n().emit(e2); // the same happening again (another process heard it too)
    await n().settled();
    expect(rx.got).toHaveLength(1);
    expect(rx.got[0]!.json.text).toBe(`Sync failed: ${siteOf(2).name}`);
  });

  it('sends one happening to each distinct place: other recipients on the same channel are another place', async () => {
    const c = await smtpChannel();
    await h.call('add-notification-rule-v1', { name: 'a', events: ['site.sync_failed'], channel_id: c.id });
    await h.call('add-notification-rule-v1', {
      name: 'b',
      events: ['site.sync_failed'],
      channel_id: c.id,
      recipients: ['boss@example.com', 'oncall@example.com'],
    });
    await h.call('add-notification-rule-v1', {
      name: 'c',
      events: ['site.sync_failed'],
      channel_id: c.id,
      recipients: ['cto@example.com'],
    });
    const before = smtp.mails.length;
    await n().emit(failed(1));
    await n().settled();
    expect(smtp.mails.slice(before).map((m) => m.envelopeTo.sort().join(','))).toEqual(
      expect.arrayContaining(['boss@example.com,oncall@example.com', 'cto@example.com']),
    );
    expect(smtp.mails.length - before).toBe(2);
  });

  it('gathers an hourly digest and sends it once when the hour closes, bounded to the items it lists', async () => {
    const c = await hook('webhook');
    const rule = await h.call('add-notification-rule-v1', {
      name: 'digest',
      events: ['site.sync_failed'],
      channel_id: c.id,
      mode: 'hourly',
    });
    clock = Date.parse('2026-03-02T10:15:00Z');
    for (let i = 0; i < DIGEST_ITEMS + 5; i++) await n().emit({ ...failed(1), key: `burst:${i}` });
    await n().emit({ ...failed(1), key: 'burst:0' }); // a repeat: not counted twice
    await n().sweep();
    await n().settled();
    expect(rx.got).toHaveLength(0);
    const open = await h.call('list-notification-deliveries-v1', { rule_id: rule.id });
    expect(open.items).toHaveLength(1);
    expect(open.items[0]).toMatchObject({
      kind: 'digest',
      status: 'collecting',
      event_count: DIGEST_ITEMS + 5,
      next_attempt_at: '2026-03-02T11:00:00.000Z',
    });
    clock = Date.parse('2026-03-02T11:00:00Z');
    await n().sweep();
    await n().settled();
    expect(rx.got).toHaveLength(1);
    expect(rx.got[0]!.json).toMatchObject({ event: 'notification.digest', dropped: 5 });
    expect(rx.got[0]!.json.items).toHaveLength(DIGEST_ITEMS);
    expect(rx.got[0]!.headers['x-sitefleet-event']).toBe('notification.digest');
  });

  it('holds an immediate message during quiet hours until they end (in the rule time zone)', async () => {
    const c = await hook('slack');
    await h.call('add-notification-rule-v1', {
      name: 'quiet',
      events: ['site.sync_failed'],
      channel_id: c.id,
      quiet_hours: { from: '22:00', to: '07:00', time_zone: 'Europe/Paris' },
    });
    clock = Date.parse('2026-03-02T22:30:00Z'); // 23:30 in Paris (UTC+1)
    await n().emit(failed(1));
    await n().settled();
    expect(rx.got).toHaveLength(0);
    expect(n().deliveries()[0]!.next_attempt_at).toBe(Date.parse('2026-03-03T06:00:00Z')); // 07:00 Paris
    clock = Date.parse('2026-03-03T06:00:00Z');
    await n().sweep();
    await n().settled();
    expect(rx.got).toHaveLength(1);
  });

  it('refuses bad rules: unknown channel, tag or time zone, both all and some sites, recipients on a chat channel', async () => {
    const c = await hook('slack');
    const base = { name: 'r', events: ['site.down'] as Array<'site.down'>, channel_id: c.id };
    expect((await h.fails('add-notification-rule-v1', { ...base, channel_id: 999 })).code).toBe('svc_channel_not_found');
    expect((await h.fails('add-notification-rule-v1', { ...base, sites: { tag_ids: [999] } })).code).toBe('svc_tag_not_found');
    expect((await h.fails('add-notification-rule-v1', { ...base, sites: { all: true, site_ids: [1] } })).code).toBe('svc_invalid_sites');
    expect((await h.fails('add-notification-rule-v1', { ...base, recipients: ['a@b.example'] })).code).toBe('svc_invalid_recipients');
    expect(
      (await h.fails('add-notification-rule-v1', { ...base, quiet_hours: { from: '22:00', to: '07:00', time_zone: 'Mars/Olympus' } })).code,
    ).toBe('svc_invalid_quiet_hours');
    expect((await h.fails('add-notification-rule-v1', { ...base, events: ['site.exploded'] })).code).toBe('ability_invalid_input');
    expect((await h.fails('add-notification-rule-v1', { ...base, events: [] })).code).toBe('ability_invalid_input');
    expect(n().listRules()).toHaveLength(0);
  });

  it('updates, lists and deletes rules; a channel in use cannot be deleted', async () => {
    const c = await hook('slack');
    const r = await h.call('add-notification-rule-v1', { name: 'r', events: ['site.down'], channel_id: c.id });
    expect(r).toMatchObject({
      enabled: true,
      mode: 'immediate',
      sites: { all: true, tag_ids: [], client_ids: [], site_ids: [] },
      quiet_hours: null,
    });
    const u = await h.call('update-notification-rule-v1', {
      rule_id: r.id,
      enabled: false,
      events: ['site.down', 'site.up'],
      mode: 'daily',
    });
    expect(u).toMatchObject({ enabled: false, events: ['site.down', 'site.up'], mode: 'daily' });
    expect((await h.call('list-notification-rules-v1', {})).total).toBe(1);
    expect((await h.fails('delete-notification-channel-v1', { channel_id: c.id, confirm: true })).code).toBe('svc_channel_in_use');
    expect((await h.fails('delete-notification-rule-v1', { rule_id: r.id })).code).toBe('svc_confirmation_required');
    expect(await h.call('delete-notification-rule-v1', { rule_id: r.id, dry_run: true })).toMatchObject({ deleted: false, dry_run: true });
    expect(await h.call('delete-notification-rule-v1', { rule_id: r.id, confirm: true })).toMatchObject({ deleted: true });
    expect(await h.call('delete-notification-channel-v1', { channel_id: c.id, confirm: true })).toMatchObject({ deleted: true });
    expect((await h.fails('delete-notification-rule-v1', { rule_id: r.id, confirm: true })).code).toBe('svc_rule_not_found');
    expect((await h.fails('update-notification-rule-v1', { rule_id: r.id, name: 'x' })).code).toBe('svc_rule_not_found');
  });

  it('disables a rule whose only tag is deleted rather than widening it to every site', async () => {
    const c = await hook('slack');
    const tag = await h.call('add-tag-v1', { name: 'Gone soon' });
    const r = await h.call('add-notification-rule-v1', {
      name: 'r',
      events: ['site.down'],
      channel_id: c.id,
      sites: { tag_ids: [tag.id] },
    });
    await h.call('delete-tag-v1', { tag_id: tag.id, confirm: true });
    expect(n().rule(r.id)).toMatchObject({ enabled: false, sites: { all: false, tag_ids: [] } });
  });
});

describe('events from the domain', () => {
  it('a failed sync of a real (simulated) site reaches a webhook channel', async () => {
    const c = await hook('webhook');
    await h.call('add-notification-rule-v1', { name: 'r', events: ['site.sync_failed'], channel_id: c.id });
    h.sim.setFault(1, { type: 'http500' });
    try {
      await h.call('sync-sites-v1', { site_ids_or_domains: [1] });
      // Delivered, not only stored: the store shows a delivery before its sender has started.
      await until(
        () => n().deliveries({ status: 'delivered' }),
        (l) => l.length > 0,
      );
      await n().settled();
      expect(rx.got).toHaveLength(1);
      expect(rx.got[0]!.json).toMatchObject({ event: 'site.sync_failed', site: { id: 1 } });
    } finally {
      h.sim.setFault(1, null);
    }
  });

  it('a background job that ends is one job.finished message, with its counts', async () => {
    const c = await hook('webhook');
    await h.call('add-notification-rule-v1', { name: 'jobs', events: ['job.finished'], channel_id: c.id });
    const before = await h.call('get-settings-v1', {});
    await h.call('update-settings-v1', { queue_threshold: 1 });
    h.sim.setFault(3, { type: 'http500' });
    try {
      const r = await h.call('sync-sites-v1', { site_ids_or_domains: [1, 2, 3] });
      expect(r).toMatchObject({ queued: true });
      const jobDeliveries = () =>
        n()
          .deliveries()
          .filter((d) => d.items[0]?.event === 'job.finished');
      await until(jobDeliveries, (l) => l.some((d) => d.status === 'delivered'));
      await n().settled();
      const got = rx.got.find((g) => g.json.event === 'job.finished')!;
      expect(got.json).toMatchObject({
        title: 'Job finished: sync of 3 sites',
        site: null,
        job: { type: 'sync', status: 'completed', sites: 3, succeeded: 2, failed: 1 },
      });
      expect(got.json.text).toMatch(/2 succeeded, 1 failed\. First error: /);
    } finally {
      h.sim.setFault(3, null);
      await h.call('update-settings-v1', { queue_threshold: before.queue_threshold });
    }
  });

  it('a site going down and up again is one down and one up message', async () => {
    const c = await hook('slack');
    await h.call('add-notification-rule-v1', { name: 'r', events: ['site.down', 'site.up'], channel_id: c.id });
    await h.services.monitors.updateSettings(2, { retries: 0 });
    const site = h.services.sites.get(2)!;
    await h.services.monitors.check(site);
    await h.services.monitors.flush([2]);
    h.sim.setFault(2, { type: 'down' });
    await h.services.monitors.check(site);
    await h.services.monitors.flush([2]);
    h.sim.setFault(2, null);
    await h.services.monitors.check(site);
    await h.services.monitors.flush([2]);
    await until(
      () => n().deliveries({ status: 'delivered' }),
      (l) => l.length >= 2,
    );
    await n().settled();
    expect(rx.got.map((g) => g.json.text)).toEqual([`Site down: ${site.name}`, `Site up again: ${site.name}`]);
  });
});
