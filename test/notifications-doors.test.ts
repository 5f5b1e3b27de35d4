// Notifications through the doors: REST v2 under /notifications (envelopes, masking by key, errors as statuses), the
// abilities door, and MCP tools. The rules themselves are tested per ability in test/abilities/notifications.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from './support/server.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';
import { startReceiver, type HttpReceiver } from './support/receivers.js';

let s: TestServer;
let rx: HttpReceiver;
let mcp: McpTestClient;

beforeAll(async () => {
  s = await startServer();
  rx = await startReceiver();
  mcp = await connectMcp(s);
});
afterAll(async () => {
  await mcp.close();
  await s.close();
  await rx.close();
});

describe('REST /notifications', () => {
  it('adds, lists (masked for a read key), tests, and deletes a channel', async () => {
    const add = await s.rest('/notifications/channels/add', {
      method: 'POST',
      json: { name: 'Team Slack', type: 'slack', url: `${rx.url}/services/T1/B1/SECRETPART` },
    });
    expect(add.status).toBe(200);
    expect(add.body).toMatchObject({ success: 1, message: 'Notification channel created.', data: { type: 'slack', url_masked: false } });
    const id = add.body.data.id;
    const asRead = await s.rest('/notifications/channels', { token: s.creds.key.read });
    expect(asRead.body).toMatchObject({ success: 1, total: 1, data: [{ id, url: `${rx.url}/***`, url_masked: true }] });
    expect(JSON.stringify(asRead.body)).not.toContain('SECRETPART');
    const test = await s.rest(`/notifications/channels/${id}/test`, { method: 'POST' });
    expect(test.body).toMatchObject({ success: 1, data: { status: 'delivered', kind: 'test' } });
    expect(rx.got.at(-1)!.json.text).toBe('Test notification from sitefleet (Team Slack)');
    const log = await s.rest('/notifications/deliveries?status=delivered');
    expect(log.body).toMatchObject({ success: 1, total: 1, data: [{ channel_id: id, status: 'delivered' }] });
    const del = await s.rest(`/notifications/channels/${id}/remove`, { method: 'DELETE' });
    expect(del.body).toMatchObject({ success: 1, message: 'Notification channel deleted.' });
    const again = await s.rest(`/notifications/channels/${id}/remove`, { method: 'DELETE' });
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('svc_channel_not_found');
  });

  it('answers a failed test-send with success 0 and the reason', async () => {
    rx.answer = (res) => {
      res.statusCode = 410;
      res.end('channel_is_archived');
    };
    try {
      const add = await s.rest('/notifications/channels/add', { method: 'POST', json: { name: 'D', type: 'discord', url: `${rx.url}/d` } });
      const test = await s.rest(`/notifications/channels/${add.body.data.id}/test`, { method: 'POST' });
      expect(test.status).toBe(200);
      expect(test.body).toMatchObject({ success: 0, data: { status: 'failed', last_error: 'HTTP 410: channel_is_archived' } });
    } finally {
      rx.answer = (res) => res.end('ok');
    }
  });

  it('adds, edits and removes a rule; refuses a read key and bad input with clear statuses', async () => {
    const ch = await s.rest('/notifications/channels/add', { method: 'POST', json: { name: 'T', type: 'teams', url: `${rx.url}/t` } });
    const add = await s.rest('/notifications/rules/add', {
      method: 'POST',
      json: { name: 'Down alerts', events: ['site.down', 'site.up'], channel_id: ch.body.data.id, mode: 'hourly' },
    });
    expect(add.body).toMatchObject({ success: 1, data: { name: 'Down alerts', mode: 'hourly', sites: { all: true } } });
    const id = add.body.data.id;
    const edit = await s.rest(`/notifications/rules/${id}/edit`, { method: 'PUT', json: { enabled: false } });
    expect(edit.body).toMatchObject({ success: 1, data: { enabled: false } });
    const denied = await s.rest('/notifications/rules/add', {
      method: 'POST',
      token: s.creds.key.read,
      json: { name: 'x', events: ['site.down'], channel_id: ch.body.data.id },
    });
    expect(denied.status).toBe(403);
    const bad = await s.rest('/notifications/rules/add', { method: 'POST', json: { name: 'x', events: ['site.down'], channel_id: 999 } });
    expect([bad.status, bad.body.code]).toEqual([404, 'svc_channel_not_found']);
    const inUse = await s.rest(`/notifications/channels/${ch.body.data.id}/remove`, { method: 'DELETE' });
    expect([inUse.status, inUse.body.code]).toEqual([409, 'svc_channel_in_use']);
    expect((await s.rest('/notifications/rules')).body.total).toBe(1);
    const rm = await s.rest(`/notifications/rules/${id}/remove`, { method: 'DELETE' });
    expect(rm.body).toMatchObject({ success: 1, message: 'Notification rule deleted.' });
  });
});

describe("upstream's /settings/monitoring, from the fleet's monitor settings", () => {
  it('reads and edits them in upstream names and labels, the same settings /monitors/settings answers', async () => {
    const get = await s.rest('/settings/monitoring');
    expect(get.body).toMatchObject({ success: 1, data: { mainwp_uptime_monitoring_type: 'http' } });
    const edit = await s.rest('/settings/monitoring/edit', {
      method: 'PUT',
      json: {
        mainwp_uptime_monitoring_interval: '10m',
        mainwp_uptime_monitoring_timeout: '2min',
        mainwp_uptime_monitoring_up_status_codes: ['200', '301'],
        mainwp_uptime_monitoring_down_confirmation_check: 1,
        mainwp_uptime_monitoring_method: 'get',
      },
    });
    expect(edit.body).toMatchObject({
      success: 1,
      data: {
        mainwp_uptime_monitoring_interval: '10m',
        mainwp_uptime_monitoring_timeout: '2min',
        mainwp_uptime_monitoring_up_status_codes: ['200', '301'],
        mainwp_uptime_monitoring_down_confirmation_check: 1,
        mainwp_uptime_monitoring_retries: 1,
        mainwp_uptime_monitoring_method: 'get',
      },
    });
    const fleet = await s.rest('/monitors/settings');
    expect(fleet.body.data).toMatchObject({ interval_s: 600, timeout_s: 120, expected_status: [200, 301], retries: 1, method: 'get' });
  });

  it('refuses a bad label with 400 and site-health keys with 501, changing nothing', async () => {
    const before = (await s.rest('/monitors/settings')).body.data;
    const bad = await s.rest('/settings/monitoring/edit', { method: 'PUT', json: { mainwp_uptime_monitoring_interval: 'often' } });
    expect([bad.status, bad.body.code]).toEqual([400, 'svc_invalid_interval']);
    const health = await s.rest('/settings/monitoring/edit', {
      method: 'PUT',
      json: { mainwp_uptime_monitoring_interval: '5m', mainwp_sitehealth_threshold: 80 },
    });
    expect([health.status, health.body.code]).toEqual([501, 'svc_not_supported']);
    expect(health.body.message).toContain('mainwp_sitehealth_threshold');
    expect((await s.rest('/monitors/settings')).body.data).toEqual(before);
    const ro = await s.rest('/settings/monitoring/edit', {
      method: 'PUT',
      token: s.creds.key.read,
      json: { mainwp_uptime_monitoring_keyword: 'x' },
    });
    expect(ro.status).toBe(403);
  });
});

describe("upstream's /settings/emails, from the rules on e-mail channels", () => {
  it('answers the four e-mails; uptime and daily_digest from their rules; an edit writes disable and recipients on them', async () => {
    const none = await s.rest('/settings/emails');
    expect(none.body).toMatchObject({ success: 1 });
    expect(none.body.data.map((e: { type: string; disable: number }) => [e.type, e.disable])).toEqual([
      ['daily_digest', 1],
      ['uptime', 1],
      ['site_health', 1],
      ['deactivated_license_alert', 1],
    ]);
    const noRule = await s.rest('/settings/emails/uptime/edit', { method: 'PUT', json: { disable: false } });
    expect([noRule.status, noRule.body.code]).toEqual([409, 'svc_no_rule']);
    const mail = await s.rest('/notifications/channels/add', {
      method: 'POST',
      json: {
        name: 'Mail',
        type: 'email',
        smtp: { host: '127.0.0.1', port: 2525, security: 'none', from: 'fleet@example.com' },
        recipients: ['ops@example.com'],
      },
    });
    const rule = await s.rest('/notifications/rules/add', {
      method: 'POST',
      json: { name: 'uptime mail', events: ['site.down', 'site.up'], channel_id: mail.body.data.id },
    });
    expect(rule.status).toBe(200);
    const get = await s.rest('/settings/emails');
    expect(get.body.data[1]).toEqual({
      heading: 'Uptime Monitoring',
      type: 'uptime',
      subject: 'Site down: {site} / Site up again: {site}',
      recipients: 'ops@example.com',
      disable: 0,
    });
    const off = await s.rest('/settings/emails/uptime/edit', {
      method: 'PATCH',
      json: { disable: true, recipients: 'a@example.com, b@example.com' },
    });
    expect(off.body).toEqual({
      success: 1,
      message: 'Email settings updated successfully.',
      data: {
        heading: 'Uptime Monitoring',
        subject: 'Site down: {site} / Site up again: {site}',
        recipients: 'a@example.com,b@example.com',
        disable: 1,
      },
    });
    expect((await s.rest(`/notifications/rules`)).body.data[0]).toMatchObject({
      enabled: false,
      recipients: ['a@example.com', 'b@example.com'],
    });
    // disable:false turns it back on (upstream cannot: false meant "keep").
    const on = await s.rest('/settings/emails/uptime/edit', { method: 'PUT', json: { disable: false } });
    expect(on.body.data.disable).toBe(0);
    await s.rest(`/notifications/rules/${rule.body.data.id}/remove`, { method: 'DELETE' });
    await s.rest(`/notifications/channels/${mail.body.data.id}/remove`, { method: 'DELETE' });
  });

  it('refuses an unknown type (400), heading, subject and the e-mails sitefleet never sends (501), a bad flag, a read key', async () => {
    const bad = await s.rest('/settings/emails/weekly/edit', { method: 'PUT', json: { disable: true } });
    expect([bad.status, bad.body.code]).toEqual([400, 'svc_invalid_input']);
    for (const [type, json] of [
      ['site_health', { disable: false }],
      ['uptime', { subject: 'Alert' }],
      ['daily_digest', { heading: 'Digest', disable: true }],
    ] as const) {
      const r = await s.rest(`/settings/emails/${type}/edit`, { method: 'PUT', json });
      expect([r.status, r.body.code]).toEqual([501, 'svc_not_supported']);
    }
    const flag = await s.rest('/settings/emails/uptime/edit', { method: 'PUT', json: { disable: 'maybe' } });
    expect([flag.status, flag.body.code]).toEqual([400, 'svc_invalid_input']);
    const ro = await s.rest('/settings/emails/uptime/edit', { method: 'PUT', token: s.creds.key.read, json: { disable: true } });
    expect(ro.status).toBe(403);
  });
});

describe('MCP and the abilities door', () => {
  it('lists the notification tools and runs them', async () => {
    const tools = (await mcp.client.listTools()).tools.map((t) => t.name);
    for (const name of [
      'list-notification-channels-v1',
      'add-notification-channel-v1',
      'update-notification-channel-v1',
      'delete-notification-channel-v1',
      'test-notification-channel-v1',
      'list-notification-rules-v1',
      'add-notification-rule-v1',
      'update-notification-rule-v1',
      'delete-notification-rule-v1',
      'list-notification-deliveries-v1',
    ])
      expect(tools).toContain(name);
    const made = await mcp.call('add-notification-channel-v1', { name: 'Hook', type: 'webhook', url: `${rx.url}/w` });
    expect(made.isError).toBe(false);
    expect(made.body.secret).toMatch(/^whsec_/);
    const bad = await mcp.call('update-notification-channel-v1', { channel_id: 12345, name: 'x' });
    expect(bad).toMatchObject({ isError: true, body: { code: 'svc_channel_not_found' } });
    const viaAbilities = await s.ability('list-notification-channels-v1', {}, { method: 'GET' });
    expect(viaAbilities.status).toBe(200);
    expect(viaAbilities.body.items.some((c: { name: string }) => c.name === 'Hook')).toBe(true);
    expect(JSON.stringify(viaAbilities.body)).not.toContain(made.body.secret);
  });
});
