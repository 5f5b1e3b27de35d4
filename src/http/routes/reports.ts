// REST v2 client report routes (sitefleet's own, no upstream counterpart) under /reports: preview, generate (and send),
// the archive and one archived report, and the report settings (the agency's branding; a client's overrides and schedule).
import {
  generateClientReport,
  getClientReport,
  getReportSettings,
  listClientReports,
  previewClientReport,
  updateReportSettings,
} from '../../abilities/reports.js';
import { CREATE, EDIT, READ, route, type RestArgs } from '../rest-door.js';
import { pathId, pick } from './args.js';
import { done, listed, ok } from './answers.js';

const TARGET = ['client_id', 'tag_id', 'site_ids', 'period', 'from', 'to', 'time_zone'] as const;
const TARGET_ERRORS = {
  400: ['svc_invalid_target', 'svc_invalid_period', 'svc_invalid_time_zone', 'svc_too_many_sites'],
  404: ['svc_client_not_found', 'svc_tag_not_found', 'svc_site_not_found'],
};
const id = (a: RestArgs) => Number(pathId(a));

const list = route(READ, '/reports', listClientReports, {
  input: (a) => pick(a, 'client_id', 'status', 'page', 'per_page'),
  answers: listed(listClientReports.output.shape.items.element),
  errors: { 404: ['svc_client_not_found'] },
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const preview = route(['GET', 'POST'], '/reports/preview', previewClientReport, {
  input: (a) => pick(a, ...TARGET, 'format'),
  answers: ok({ data: previewClientReport.output }),
  errors: TARGET_ERRORS,
  output: (r) => ({ success: 1, data: r }),
});
const generate = route(CREATE, '/reports/generate', generateClientReport, {
  input: (a) => pick(a, ...TARGET, 'send', 'recipients'),
  answers: done(generateClientReport.output),
  errors: {
    400: [...TARGET_ERRORS[400], 'svc_no_recipients', 'svc_invalid_recipients', 'svc_invalid_input'],
    404: TARGET_ERRORS[404],
    409: ['svc_no_email_channel'],
  },
  example: {
    request: { client_id: 4, period: 'last_month', recipients: ['pm@client.example'] },
    response: {
      success: 1,
      message: 'Report sent.',
      data: {
        id: 12,
        title: 'Website report — October 2026',
        subject: 'Pixel & Co: Website report — October 2026',
        scope: { kind: 'client', id: 4 },
        client_id: 4,
        period: {
          from: '2026-10-01',
          to: '2026-10-31',
          time_zone: 'Europe/Paris',
          from_at: '2026-09-30T22:00:00Z',
          to_at: '2026-10-31T23:00:00Z',
        },
        status: 'sent',
        send: true,
        recipients: ['owner@client.example', 'pm@client.example'],
        channel_id: 1,
        attempts: 1,
        last_error: null,
        scheduled: false,
        created_by: 'admin',
        created_at: '2026-11-02T08:00:00Z',
        sent_at: '2026-11-02T08:00:01Z',
        summary: {
          sites: 3,
          updates: 14,
          updates_by_outcome: { updated: 13, rolled_back: 1 },
          uptime_pct: 99.97,
          incidents: 1,
          vulnerabilities_found: 1,
          vulnerabilities_fixed: 1,
          security_findings: 2,
          changes: 6,
          costs_monthly: 45,
        },
      },
    },
  },
  output: (r) => ({
    success: 1,
    message:
      r.status === 'sent'
        ? 'Report sent.'
        : r.status === 'failed'
          ? `Report archived, not sent: ${r.last_error ?? ''}`
          : 'Report generated.',
    data: r,
  }),
});
const settings = route(READ, '/reports/settings', getReportSettings, {
  input: (a) => pick(a, 'client_id'),
  answers: ok({ data: getReportSettings.output }),
  errors: { 404: ['svc_client_not_found'] },
  output: (r) => ({ success: 1, data: r }),
});
const settingsEdit = route(EDIT, '/reports/settings/edit', updateReportSettings, {
  input: (a) => pick(a, 'client_id', 'branding', 'time_zone', 'recipients', 'channel_id', 'schedule'),
  answers: done(updateReportSettings.output),
  errors: {
    400: ['svc_invalid_branding', 'svc_invalid_time_zone', 'svc_invalid_recipients', 'svc_invalid_schedule', 'svc_invalid_channel'],
    404: ['svc_client_not_found', 'svc_channel_not_found'],
  },
  output: (r) => ({ success: 1, message: 'Report settings saved.', data: r }),
});
const one = route(READ, '/reports/:id', getClientReport, {
  input: (a) => ({ report_id: id(a), ...pick(a, 'format') }),
  answers: ok({ data: getClientReport.output }),
  errors: { 404: ['svc_report_not_found'] },
  output: (r) => ({ success: 1, data: r }),
});

export const reportRoutes = [list, preview, generate, settings, settingsEdit, one];
