// Client reports through the doors: REST v2 under /reports (envelopes, a read key may preview but not generate, errors
// as statuses, the archive paged), the abilities door, and MCP tools with their hints (preview read-only, generate not).
// What a report says is tested per ability in test/abilities/reports.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from './support/server.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';
import { startSmtp, type SmtpSink } from './support/receivers.js';

let s: TestServer;
let mcp: McpTestClient;
let smtp: SmtpSink;
let clientId: number;

beforeAll(async () => {
  s = await startServer();
  mcp = await connectMcp(s);
  smtp = await startSmtp();
  const c = await s.rest('/clients/add', { method: 'POST', json: { name: 'Door client', email: 'door@client.example' } });
  clientId = c.body.data.id;
});
afterAll(async () => {
  await mcp.close();
  await s.close();
  await smtp.close();
});

describe('REST /reports', () => {
  it('previews for a read key, refuses it a generate, sends for a write key and lists the archive', async () => {
    const p = await s.rest(`/reports/preview?client_id=${clientId}&period=this_month&format=summary`, { token: s.creds.key.read });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ success: 1, data: { summary: { sites: 0 }, period: { time_zone: 'UTC' } } });
    expect(p.body.data.html).toBeUndefined();
    const refused = await s.rest('/reports/generate', { method: 'POST', token: s.creds.key.read, json: { client_id: clientId } });
    expect(refused.status).toBe(403);
    const none = await s.rest('/reports/generate', { method: 'POST', json: { client_id: clientId } });
    expect(none.status).toBe(409);
    expect(none.body.code).toBe('svc_no_email_channel');
    await s.rest('/notifications/channels/add', {
      method: 'POST',
      json: {
        name: 'Mail',
        type: 'email',
        smtp: { host: '127.0.0.1', port: smtp.port, security: 'none', from: 'reports@agency.example' },
        recipients: ['team@agency.example'],
      },
    });
    const before = smtp.mails.length;
    const g = await s.rest('/reports/generate', { method: 'POST', json: { client_id: clientId, period: 'last_month' } });
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({ success: 1, message: 'Report sent.', data: { status: 'sent', recipients: ['door@client.example'] } });
    expect(smtp.mails.length).toBe(before + 1);
    const list = await s.rest(`/reports?client_id=${clientId}&per_page=1`);
    expect(list.body).toMatchObject({ success: 1, total: 1, data: [{ id: g.body.data.id, status: 'sent' }] });
    const one = await s.rest(`/reports/${g.body.data.id}?format=page`, { token: s.creds.key.read });
    expect(one.body.data.page).toMatch(/^<!doctype html>/);
    expect((await s.rest('/reports/999')).status).toBe(404);
    const bad = await s.rest('/reports/preview', { method: 'POST', json: { client_id: clientId, from: '2026-02-01', to: '2025-02-01' } });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('svc_invalid_period');
  });

  it('reads and edits report settings; a schedule needs a client', async () => {
    const e = await s.rest('/reports/settings/edit', {
      method: 'PUT',
      json: { branding: { name: 'Pixel & Co', primary_color: '#112233' } },
    });
    expect(e.body).toMatchObject({
      success: 1,
      data: { client_id: null, effective_branding: { name: 'Pixel & Co', primary_color: '#112233' } },
    });
    const c = await s.rest('/reports/settings/edit', {
      method: 'POST',
      json: { client_id: clientId, time_zone: 'Europe/Paris', schedule: { frequency: 'weekly', weekday: 'mon', time: '07:00' } },
    });
    expect(c.body.data).toMatchObject({ client_id: clientId, time_zone: 'Europe/Paris', schedule: { frequency: 'weekly' } });
    expect(c.body.data.next_run_at).toMatch(/T0[56]:00:00Z$/);
    const read = await s.rest(`/reports/settings?client_id=${clientId}`, { token: s.creds.key.read });
    expect(read.body.data.effective_branding.name).toBe('Pixel & Co');
    const bad = await s.rest('/reports/settings/edit', {
      method: 'PUT',
      json: { schedule: { frequency: 'weekly', weekday: 'mon', time: '07:00' } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('svc_invalid_schedule');
  });
});

describe('MCP', () => {
  it('hints preview as read-only and generate as a write that reaches out', async () => {
    const tools = (await mcp.client.listTools()).tools;
    const hint = (n: string) => tools.find((t) => t.name === n)!.annotations;
    expect(hint('preview-client-report-v1')).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    expect(hint('generate-client-report-v1')).toMatchObject({ readOnlyHint: false, destructiveHint: false, openWorldHint: true });
    expect(hint('list-client-reports-v1')!.readOnlyHint).toBe(true);
    const p = await mcp.call('preview-client-report-v1', { client_id: clientId, format: 'text' });
    expect(p.isError).toBe(false);
    expect(p.body.text).toContain('UPDATES');
    const bad = await mcp.call('preview-client-report-v1', { client_id: 4242 });
    expect(bad).toMatchObject({ isError: true, body: { code: 'svc_client_not_found' } });
  });
});
