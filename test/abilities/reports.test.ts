// Client reports through the registry: the content of a period read from known history (update history, incidents
// and check counts, the vulnerability log, security findings, the audit log, costs), white-label branding with every
// user text escaped, a real SMTP server that receives the sent report, the archive, schedules claimed once, and each
// bad input. Time is the services' clocks, moved by the tests; nothing sleeps.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ReportService } from '../../src/domain/reports/service.js';
import { LIST_MAX } from '../../src/domain/reports/content.js';
import type { UpdateHistoryRecord } from '../../src/store/health-records.js';
import type { IncidentRecord, MonitorRecord } from '../../src/store/monitor-records.js';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { startSmtp, type SmtpSink } from '../support/receivers.js';

let h: AbilityHarness;
let smtp: SmtpSink;
let clock = Date.parse('2026-03-02T09:00:00Z');
let clientId: number;
let sites: Array<{ id: number; url: string }>;
const r = () => h.services.reports;

const history = (over: Partial<UpdateHistoryRecord>): Omit<UpdateHistoryRecord, 'id'> => ({
  site_id: sites[0]!.id,
  site_url: sites[0]!.url,
  type: 'plugin',
  slug: 'rc-alpha/rc-alpha.php',
  name: 'RC Alpha',
  from: '1.0.0',
  to: '1.1.0',
  outcome: 'updated',
  reason: '',
  code: '',
  actor: { kind: 'user', id: 1, name: 'admin' },
  at: '2026-02-10T10:00:00Z',
  duration_ms: 1200,
  safe: true,
  probe: null,
  ...over,
});

const emailChannel = (port = smtp.port) =>
  h.call('add-notification-channel-v1', {
    name: 'Reports mail',
    type: 'email',
    smtp: { host: '127.0.0.1', port, security: 'none', username: '', from: 'Agency <reports@agency.example>' },
    recipients: ['team@agency.example'],
  });

beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 3, seed: 5 } });
  r().now = () => clock;
  sites = await h.addSimSites(3);
  smtp = await startSmtp();
  const c = await h.call('add-client-v1', { name: 'Acme & Co', email: 'owner@acme.example', selected_sites: [sites[0]!.id, sites[1]!.id] });
  clientId = c.id;
  await h.call('update-site-v1', { site_id_or_domain: sites[0]!.id, name: 'Shop <script>alert(1)</script>' });
  // Known history in February 2026 (the report's period), and some outside it or on another client's site.
  // Inserted as stored (the history's own trim would drop entries older than 180 days of the real clock).
  const seed = (entries: Array<Omit<UpdateHistoryRecord, 'id'>>) =>
    h.services.store.write((tx) => entries.forEach((e) => tx.insert<UpdateHistoryRecord>('update_history', e)));
  await seed([
    history({}),
    history({
      slug: 'rc-beta/rc-beta.php',
      name: 'RC Beta',
      from: '2.0.0',
      to: '2.1.0',
      outcome: 'rolled_back',
      reason: 'home fatal_error (HTTP 500)',
      at: '2026-02-12T10:00:00Z',
    }),
    history({
      site_id: sites[1]!.id,
      site_url: sites[1]!.url,
      type: 'core',
      slug: 'wordpress',
      name: 'WordPress',
      from: '6.4.2',
      to: '6.4.3',
      at: '2026-02-20T03:00:00Z',
    }),
    history({ name: 'Too early', at: '2026-01-31T22:59:59Z' }),
    history({ site_id: sites[2]!.id, site_url: sites[2]!.url, name: 'Other client', at: '2026-02-11T10:00:00Z' }),
  ]);
  const feb10 = Date.parse('2026-02-10T00:00:00Z') / 1000;
  await h.services.store.write((tx) => {
    tx.insert<IncidentRecord>('incidents', {
      site_id: sites[1]!.id,
      started_at: '2026-02-14T08:00:00Z',
      ended_at: '2026-02-14T08:30:00Z',
      cause: 'http_status',
      message: 'HTTP 503',
      http_code: 503,
      down_count: 6,
    });
    const m = h.services.monitors.record(sites[1]!.id);
    const days = [
      [feb10, 287, 1, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      [feb10 + 86_400, 288, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    ];
    tx.put<MonitorRecord>('monitors', {
      ...(m ?? {
        id: sites[1]!.id,
        settings: {},
        status: 'up',
        last_check: null,
        down_since: null,
        open_incident: null,
        recent: [],
        hours: [],
      }),
      days,
    } as MonitorRecord);
  });
  r().now = () => Date.parse('2026-02-18T12:00:00Z');
  await r().logVulnerability({
    event: 'vulnerability.found',
    data: {
      vulnerability: { key: 'wf:1', title: 'RC Alpha <= 1.1.0 XSS', severity: 'high' },
      installs: [{ site: { id: sites[0]!.id, url: sites[0]!.url }, type: 'plugin', slug: 'rc-alpha', version: '1.1.0', fixed_in: '1.2.0' }],
    },
  });
  r().now = () => Date.parse('2026-02-25T12:00:00Z');
  await r().logVulnerability({
    event: 'vulnerability.fixed',
    data: {
      vulnerability: { key: 'wf:1', title: 'RC Alpha <= 1.1.0 XSS', severity: 'high' },
      installs: [
        { site: { id: sites[0]!.id, url: sites[0]!.url }, type: 'plugin', slug: 'rc-alpha', old_version: '1.1.0', version: '1.2.0' },
      ],
    },
  });
  r().now = () => clock;
  // A change through the dashboard in February, on one of the client's sites.
  h.services.audit.now = () => Date.parse('2026-02-21T09:30:00Z');
  await h.call('update-site-v1', { site_id_or_domain: sites[1]!.id, notes: 'moved to new host' });
  h.services.audit.now = Date.now;
  await h.call('add-cost-v1', {
    name: 'Managed hosting',
    price: 40,
    payment_type: 'subscription',
    product_type: 'hosting',
    renewal_type: 'monthly',
    sites: [sites[0]!.id, sites[1]!.id],
  });
});
afterAll(async () => {
  await h.close();
  await smtp.close();
});
beforeEach(async () => {
  clock = Date.parse('2026-03-02T09:00:00Z');
  await h.services.store.write((tx) => {
    for (const col of ['notification_channels', 'client_reports', 'report_settings'] as const)
      for (const x of [...tx.all(col)]) tx.delete(col, x.id);
  });
});

describe('preview-client-report-v1', () => {
  it("reports last month of a client's sites from known history, escaped, and writes and sends nothing", async () => {
    const before = smtp.mails.length;
    const p = await h.call('preview-client-report-v1', { client_id: clientId }, h.as.readKey);
    expect(p.period).toMatchObject({ from: '2026-02-01', to: '2026-02-28', time_zone: 'UTC' });
    expect(p.title).toBe('Website report — February 2026');
    expect(p.summary).toMatchObject({
      sites: 2,
      updates: 3,
      updates_by_outcome: { updated: 2, rolled_back: 1 },
      incidents: 1,
      vulnerabilities_found: 1,
      vulnerabilities_fixed: 1,
      changes: 1,
      costs_monthly: 80,
    });
    expect(p.summary.uptime_pct).toBe(99.83);
    expect(p.text).toContain('RC Alpha (plugin) | 1.0.0 → 1.1.0 | updated');
    expect(p.text).toContain('RC Beta (plugin) | 2.0.0 → 2.1.0 | rolled back: home fatal_error (HTTP 500)');
    expect(p.text).toContain('WordPress (core) | 6.4.2 → 6.4.3 | updated');
    expect(p.text).not.toContain('Too early');
    expect(p.text).not.toContain('Other client');
    expect(p.text).toContain('RC Alpha <= 1.1.0 XSS (high) | rc-alpha 1.1.0 | 1.2.0');
    expect(p.text).toMatch(/update site .*notes: moved to new host/);
    expect(p.text).toContain('Managed hosting | hosting | monthly | 80.00');
    expect(p.text).toContain('1 incident, 30 min down in all.');
    for (const doc of [p.html!, p.page!]) {
      expect(doc).toContain('Shop &lt;script&gt;alert(1)&lt;/script&gt;');
      expect(doc).not.toContain('<script>');
      expect(doc).toContain('Acme &amp; Co');
      expect(doc).toContain('RC Alpha &lt;= 1.1.0 XSS');
    }
    expect(p.page).toContain('@media print');
    expect(p.page).toContain("default-src 'none'");
    expect((await h.call('list-client-reports-v1', {})).total).toBe(0);
    expect(smtp.mails.length).toBe(before);
  });

  it('bounds every list and says how many more', async () => {
    const many = Array.from({ length: LIST_MAX + 7 }, (_, i) => history({ name: `Bulk ${i}`, at: `2026-02-0${1 + (i % 9)}T12:00:00Z` }));
    await h.services.store.write((tx) => many.forEach((e) => tx.insert<UpdateHistoryRecord>('update_history', e)));
    const p = await h.call('preview-client-report-v1', { client_id: clientId, format: 'text' });
    expect(p.summary.updates).toBe(LIST_MAX + 10);
    expect(p.text).toContain('and 10 more');
    expect(p.html).toBeUndefined();
    await h.services.store.write((tx) => {
      for (const e of [...tx.all<UpdateHistoryRecord>('update_history')]) if (e.name.startsWith('Bulk ')) tx.delete('update_history', e.id);
    });
  });

  it('reports a tag or a set of sites, and takes from/to dates in a time zone', async () => {
    const p = await h.call('preview-client-report-v1', {
      site_ids: [sites[1]!.id],
      from: '2026-02-20',
      to: '2026-02-20',
      time_zone: 'Europe/Paris',
      format: 'summary',
    });
    // 03:00 UTC is 04:00 in Paris on 20 February: in the day.
    expect(p.summary).toMatchObject({ sites: 1, updates: 1 });
    expect(p.period).toMatchObject({ from_at: '2026-02-19T23:00:00.000Z', to_at: '2026-02-20T23:00:00.000Z' });
    const tag = await h.call('add-tag-v1', { name: 'reports-tag' });
    await h.call('update-site-v1', { site_id_or_domain: sites[2]!.id, tags: [tag.id] });
    const t = await h.call('preview-client-report-v1', { tag_id: tag.id, format: 'summary' });
    expect(t.summary).toMatchObject({ sites: 1, updates: 1 });
  });

  it('refuses bad input with clear errors', async () => {
    expect((await h.fails('preview-client-report-v1', { client_id: 999 })).code).toBe('svc_client_not_found');
    expect((await h.fails('preview-client-report-v1', { tag_id: 999 })).code).toBe('svc_tag_not_found');
    expect((await h.fails('preview-client-report-v1', { site_ids: [999] })).code).toBe('svc_site_not_found');
    expect((await h.fails('preview-client-report-v1', {})).code).toBe('svc_invalid_target');
    expect((await h.fails('preview-client-report-v1', { client_id: clientId, tag_id: 1 })).code).toBe('svc_invalid_target');
    const bad = async (i: Record<string, unknown>) => (await h.fails('preview-client-report-v1', { client_id: clientId, ...i })).message;
    expect(await bad({ from: '2026-02-30', to: '2026-03-01' })).toMatch(/Invalid from: "2026-02-30"/);
    expect(await bad({ from: '2026-02-10', to: '2026-02-01' })).toMatch(/is after to/);
    expect(await bad({ from: '2025-02-28', to: '2026-03-01' })).toMatch(/367 days long; a report covers at most 366 days/);
    expect(await bad({ from: '2026-03-01', to: '2026-03-03' })).toMatch(/after today/);
    expect(await bad({ from: '2026-02-01' })).toMatch(/both from and to/);
    expect(await bad({ period: 'last_week', from: '2026-02-01', to: '2026-02-02' })).toMatch(/not both/);
    expect((await h.fails('preview-client-report-v1', { client_id: clientId, time_zone: 'Mars/Olympus' })).code).toBe(
      'svc_invalid_time_zone',
    );
    expect((await h.fails('preview-client-report-v1', { client_id: clientId, period: 'last_year' })).code).toBe('ability_invalid_input');
    // The longest period allowed is answered.
    expect(
      (await h.call('preview-client-report-v1', { client_id: clientId, from: '2025-03-01', to: '2026-02-28', format: 'summary' })).summary
        .sites,
    ).toBe(2);
  });
});

describe('generate-client-report-v1 and the archive', () => {
  it('sends the report to the client and the extra recipients over a real SMTP server, and archives it', async () => {
    const ch = await emailChannel();
    await h.call('update-report-settings-v1', { client_id: clientId, recipients: ['pm@acme.example'] });
    const before = smtp.mails.length;
    const g = await h.call('generate-client-report-v1', { client_id: clientId, recipients: ['cc@agency.example'] });
    expect(g).toMatchObject({ status: 'sent', attempts: 1, last_error: null, channel_id: ch.id, scheduled: false, created_by: 'admin' });
    expect(g.recipients).toEqual(['owner@acme.example', 'pm@acme.example', 'cc@agency.example']);
    const mail = smtp.mails[before]!;
    expect(mail.subject).toBe('sitefleet: Website report — February 2026');
    expect(mail.envelopeTo.sort()).toEqual(['cc@agency.example', 'owner@acme.example', 'pm@acme.example']);
    expect(mail.from?.value[0]).toMatchObject({ address: 'reports@agency.example', name: 'Agency' });
    expect(mail.text).toContain('RC Beta (plugin) | 2.0.0 → 2.1.0 | rolled back');
    expect(mail.html).toContain('6.4.2 → 6.4.3');
    expect(mail.html).toContain('Shop &lt;script&gt;');
    expect(mail.html).not.toContain('<script>');
    const list = await h.call('list-client-reports-v1', { client_id: clientId });
    expect(list.total).toBe(1);
    expect(list.items[0]).toMatchObject({ id: g.id, status: 'sent', summary: { updates: 3 } });
    const one = await h.call('get-client-report-v1', { report_id: g.id, format: 'page' });
    expect(one.page).toContain('RC Beta');
    expect(one.html).toBeUndefined();
  });

  it('archives without sending when send is false; a read key may preview but not generate', async () => {
    const g = await h.call('generate-client-report-v1', { client_id: clientId, send: false });
    expect(g).toMatchObject({ status: 'generated', send: false, recipients: [], attempts: 0 });
    expect((await h.fails('generate-client-report-v1', { client_id: clientId, send: false }, h.as.readKey)).status).toBe(403);
    expect((await h.fails('get-client-report-v1', { report_id: 9999 })).code).toBe('svc_report_not_found');
  });

  it('refuses to send without an e-mail channel or recipients, and a chat channel for reports; archives nothing', async () => {
    expect((await h.fails('generate-client-report-v1', { client_id: clientId })).code).toBe('svc_no_email_channel');
    const slack = await h.call('add-notification-channel-v1', { name: 's', type: 'slack', url: 'http://127.0.0.1:9/hook' });
    expect((await h.fails('update-report-settings-v1', { client_id: clientId, channel_id: slack.id })).code).toBe('svc_invalid_channel');
    // A chat channel is passed over: still no e-mail channel.
    expect((await h.fails('generate-client-report-v1', { client_id: clientId })).code).toBe('svc_no_email_channel');
    await emailChannel();
    expect((await h.fails('generate-client-report-v1', { site_ids: [sites[0]!.id] })).code).toBe('svc_no_recipients');
    expect((await h.fails('generate-client-report-v1', { client_id: clientId, recipients: ['not-an-address'] })).code).toBe(
      'svc_invalid_recipients',
    );
    expect((await h.fails('generate-client-report-v1', { client_id: clientId, send: false, recipients: ['a@b.example'] })).code).toBe(
      'svc_invalid_input',
    );
    expect((await h.call('list-client-reports-v1', {})).total).toBe(0);
  });

  it('records an SMTP failure in the archive (an on-demand report is not retried)', async () => {
    const closed = await startSmtp();
    await closed.close();
    await emailChannel();
    const ch = await emailChannel(closed.port);
    await h.call('update-report-settings-v1', { channel_id: ch.id }); // the agency's channel, over the first one
    const g = await h.call('generate-client-report-v1', { client_id: clientId });
    expect(g.channel_id).toBe(ch.id);
    expect(g.status).toBe('failed');
    expect(g.last_error).toMatch(/^smtp connection: cannot connect to 127\.0\.0\.1:/);
    expect(await r().tick(clock + 86_400_000)).toEqual([]);
  });
});

describe('white-label settings', () => {
  it("renders the agency's branding, a client's overrides, and escapes the footer", async () => {
    await h.call('update-report-settings-v1', {
      branding: {
        name: 'Pixel & Co',
        primary_color: '#112233',
        accent_color: '#445566',
        footer: 'Pixel & Co <hello@pixel.example>\nParis',
        logo: 'https://pixel.example/logo.png',
      },
    });
    await h.call('update-report-settings-v1', { client_id: clientId, branding: { primary_color: '#aa0000' }, time_zone: 'Europe/Paris' });
    const s = await h.call('get-report-settings-v1', { client_id: clientId });
    expect(s.effective_branding).toMatchObject({ name: 'Pixel & Co', primary_color: '#aa0000', accent_color: '#445566' });
    expect(s.branding).toEqual({ primary_color: '#aa0000' });
    const p = await h.call('preview-client-report-v1', { client_id: clientId, format: 'all' });
    expect(p.period.time_zone).toBe('Europe/Paris');
    expect(p.subject).toBe('Pixel & Co: Website report — February 2026');
    expect(p.html).toContain('background:#aa0000');
    expect(p.page).toContain('--primary:#aa0000');
    expect(p.page).toContain('<img src="https://pixel.example/logo.png" alt="Pixel &amp; Co"');
    expect(p.page).toContain('Pixel &amp; Co &lt;hello@pixel.example&gt;<br>Paris');
    expect(p.text).toContain('Pixel & Co <hello@pixel.example>\nParis');
    // A tag's report has the agency's colours; null puts the client's back.
    await h.call('update-report-settings-v1', { client_id: clientId, branding: { primary_color: null } });
    expect((await h.call('get-report-settings-v1', { client_id: clientId })).effective_branding.primary_color).toBe('#112233');
  });

  it('takes a small image data: URL as the logo and refuses scripts, big logos, bad colours and zones', async () => {
    const png = `data:image/png;base64,${Buffer.from('png').toString('base64')}`;
    expect((await h.call('update-report-settings-v1', { branding: { logo: png } })).effective_branding.logo).toBe(png);
    const bad = async (i: Record<string, unknown>) => (await h.fails('update-report-settings-v1', i)).code;
    expect(await bad({ branding: { logo: 'javascript:alert(1)' } })).toBe('svc_invalid_branding');
    expect(await bad({ branding: { logo: 'data:text/html;base64,PHNjcmlwdD4=' } })).toBe('svc_invalid_branding');
    expect(await bad({ branding: { logo: `data:image/png;base64,${'A'.repeat(65_537)}` } })).toBe('ability_invalid_input');
    expect(await bad({ branding: { logo: `data:image/png;base64,${'A'.repeat(65_500)}"` } })).toBe('svc_invalid_branding');
    expect(await bad({ branding: { primary_color: 'red' } })).toBe('ability_invalid_input');
    expect(await bad({ time_zone: 'Nowhere/City' })).toBe('svc_invalid_time_zone');
    expect(await bad({ client_id: 999, time_zone: 'UTC' })).toBe('svc_client_not_found');
    expect(await bad({ schedule: { frequency: 'weekly', weekday: 'mon', time: '08:00' } })).toBe('svc_invalid_schedule');
    expect(await bad({ client_id: clientId, schedule: { frequency: 'monthly', day: 31, time: '08:00' } })).toBe('ability_invalid_input');
    expect(await bad({ client_id: clientId, schedule: { frequency: 'monthly', day: 1, time: '25:00' } })).toBe('svc_invalid_schedule');
    expect(await bad({ client_id: clientId, schedule: { frequency: 'monthly', time: '08:00' } })).toBe('svc_invalid_schedule');
    expect(await bad({ client_id: clientId, schedule: { frequency: 'weekly', day: 3, time: '08:00' } })).toBe('svc_invalid_schedule');
    expect(await bad({ client_id: clientId, recipients: ['x'] })).toBe('svc_invalid_recipients');
    expect(await bad({ channel_id: 999 })).toBe('svc_channel_not_found');
  });
});

describe('the vulnerability log', () => {
  it("hears the vulnerability service's found events (one entry per site listed)", async () => {
    const before = h.services.store.count('vulnerability_log');
    for (const l of h.services.vulnerabilities.eventListeners)
      l({
        event: 'vulnerability.found',
        data: {
          vulnerability: { key: 'wf:2', title: 'Beta SQLi', severity: 'critical' },
          sites_total: 2,
          installs: [sites[1]!, sites[2]!].map((x) => ({
            site: { id: x.id, url: x.url, name: '' },
            type: 'plugin',
            slug: 'rc-beta',
            version: '2.0.0',
            fixed_in: null,
          })),
        },
      });
    await expect.poll(() => h.services.store.count('vulnerability_log')).toBe(before + 2);
    const rows = [...h.services.store.all<{ id: number; key: string; site_id: number; event: string }>('vulnerability_log')].filter(
      (v) => v.key === 'wf:2',
    );
    expect(rows.map((v) => [v.site_id, v.event])).toEqual([
      [sites[1]!.id, 'found'],
      [sites[2]!.id, 'found'],
    ]);
  });
});

describe('a removed client', () => {
  it('takes its report settings with it; its archived reports stay', async () => {
    const c = await h.call('add-client-v1', { name: 'Leaving', email: 'leaving@client.example' });
    await h.call('update-report-settings-v1', { client_id: c.id, schedule: { frequency: 'weekly', weekday: 'fri', time: '09:00' } });
    const g = await h.call('generate-client-report-v1', { client_id: c.id, send: false });
    await h.call('delete-client-v1', { client_id_or_email: c.id, confirm: true });
    expect(h.services.store.get('report_settings', c.id)).toBeUndefined();
    expect((await h.fails('get-report-settings-v1', { client_id: c.id })).code).toBe('svc_client_not_found');
    expect((await h.call('get-client-report-v1', { report_id: g.id, format: 'summary' })).client_id).toBe(c.id);
    expect((await h.call('list-client-reports-v1', { client_id: c.id })).total).toBe(1);
  });
});

describe('schedules', () => {
  it('sends a monthly report once at its local time, across two processes, for the month before', async () => {
    await emailChannel();
    // Set on 15 March, 1st of the month at 08:00 in Paris (CEST from 29 March: 06:00 UTC on 1 April).
    clock = Date.parse('2026-03-15T10:00:00Z');
    const set = await h.call('update-report-settings-v1', {
      client_id: clientId,
      time_zone: 'Europe/Paris',
      schedule: { frequency: 'monthly', day: 1, time: '08:00' },
    });
    expect(set.next_run_at).toBe('2026-04-01T06:00:00Z');
    // The due time before the schedule was set (1 March) is not sent.
    expect(await r().tick(clock)).toEqual([]);
    expect(await r().tick(Date.parse('2026-04-01T05:59:59Z'))).toEqual([]);
    const other = new ReportService(
      h.services.store,
      h.services.config,
      h.services.sites,
      h.services.tags,
      h.services.clients,
      h.services.costs,
      h.services.settings,
      h.services.fleetSecurity,
      h.services.notifications,
      { owner: 'other-process' },
    );
    const before = smtp.mails.length;
    const at = Date.parse('2026-04-01T06:00:00Z');
    const [a, b] = await Promise.all([r().tick(at), other.tick(at)]);
    await other.stop();
    expect(a.length + b.length).toBe(1);
    const sent = [...a, ...b][0]!;
    expect(sent).toMatchObject({ status: 'sent', schedule_key: `schedule:${clientId}:2026-03-01`, created_by: 'schedule' });
    expect(sent.period).toMatchObject({ from: '2026-03-01', to: '2026-03-31', time_zone: 'Europe/Paris' });
    expect(smtp.mails.length).toBe(before + 1);
    expect(smtp.mails[before]!.subject).toBe('sitefleet: Website report — March 2026');
    expect(smtp.mails[before]!.envelopeTo).toEqual(['owner@acme.example']);
    // Later ticks of the same month send nothing more.
    expect(await r().tick(at + 3_600_000)).toEqual([]);
    expect((await h.call('list-client-reports-v1', { client_id: clientId })).items[0]).toMatchObject({ scheduled: true, status: 'sent' });
  });

  it('sends a weekly report for the seven days before, and retries a failed scheduled send', async () => {
    const closed = await startSmtp();
    await closed.close();
    const ch = await emailChannel(closed.port);
    clock = Date.parse('2026-03-02T09:00:00Z'); // a Monday
    await h.call('update-report-settings-v1', {
      client_id: clientId,
      channel_id: ch.id,
      schedule: { frequency: 'weekly', weekday: 'wed', time: '07:30' },
    });
    const due = Date.parse('2026-03-04T07:30:00Z');
    const [first] = await r().tick(due);
    expect(first).toMatchObject({ status: 'failed', attempts: 1 });
    expect(first!.period).toMatchObject({ from: '2026-02-25', to: '2026-03-03' });
    expect(first!.last_error).toMatch(/^smtp connection/);
    // The channel is fixed; the retry waits for its time, then sends once.
    await h.call('update-notification-channel-v1', { channel_id: ch.id, smtp: { port: smtp.port } });
    expect(await r().tick(due + 60_000)).toEqual([]);
    const before = smtp.mails.length;
    const [again] = await r().tick(due + r().retryMs);
    expect(again).toMatchObject({ id: first!.id, status: 'sent', attempts: 2, last_error: null });
    expect(smtp.mails.length).toBe(before + 1);
  });
});
