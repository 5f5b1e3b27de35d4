// Client report abilities: preview (read-only: nothing written, nothing sent), generate (into the archive, and sent on
// an e-mail channel with send), the archive (list, get one with its renders) and the report settings (the agency's
// white-label branding; a client's overrides, time zone, extra recipients and schedule).
import { z } from 'zod';
import { defineAbility } from './context.js';
import { Page, paginate, perPage } from '../core/paging.js';
import { MAX_RECIPIENTS } from '../domain/notifications/service.js';
import { MAX_PERIOD_DAYS, PERIOD_PRESETS } from '../domain/reports/period.js';
import { MAX_FOOTER_CHARS, MAX_LOGO_CHARS, MAX_REPORT_SITES } from '../domain/reports/service.js';
import type { ReportModel } from '../domain/reports/content.js';
import { WEEKDAY_NAMES, type ClientReportRecord, type ReportSchedule } from '../store/report-records.js';
import { paged } from './schemas.js';

const base = { category: 'svc-notifications', toolset: 'notifications' } as const;
const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };
const Int = z.number().int();
const Id = Int.min(1);
const Recipients = z.array(z.string().max(254)).max(MAX_RECIPIENTS);

const Target = {
  client_id: Id.optional(),
  tag_id: Id.optional(),
  site_ids: z.array(Id).max(MAX_REPORT_SITES).optional(),
};
const PeriodIn = {
  period: z.enum(PERIOD_PRESETS).optional(),
  from: z.string().max(10).optional().describe('YYYY-MM-DD'),
  to: z.string().max(10).optional(),
  time_zone: z.string().min(1).max(64).optional(),
};
const Format = z.enum(['all', 'summary', 'html', 'text', 'page']).default('all');

const PeriodOut = z.object({ from: z.string(), to: z.string(), time_zone: z.string(), from_at: z.string(), to_at: z.string() });
const Summary = z.object({
  sites: Int,
  updates: Int,
  updates_by_outcome: z.record(z.string(), Int),
  uptime_pct: z.number().nullable(),
  incidents: Int,
  vulnerabilities_found: Int,
  vulnerabilities_fixed: Int,
  security_findings: Int,
  changes: Int,
  costs_monthly: z.number().nullable(),
});
const Renders = {
  subject: z.string(),
  html: z.string().optional().describe('The HTML e-mail.'),
  text: z.string().optional().describe("The e-mail's text part."),
  page: z.string().optional().describe('The standalone printable HTML page (print it to PDF from a browser).'),
};

const summaryOf = (m: ReportModel): z.input<typeof Summary> => ({
  sites: m.sites.total,
  updates: m.updates.total,
  updates_by_outcome: m.updates.by_outcome,
  uptime_pct: m.uptime.uptime_pct,
  incidents: m.uptime.incidents_total,
  vulnerabilities_found: m.vulnerabilities.found_total,
  vulnerabilities_fixed: m.vulnerabilities.fixed_total,
  security_findings: m.security.high + m.security.medium + m.security.low,
  changes: m.changes.total,
  costs_monthly: m.costs?.monthly ?? null,
});

type Fmt = z.output<typeof Format>;
const rendersOf = (r: { subject: string; html: string; text: string; page: string }, f: Fmt) => ({
  subject: r.subject,
  ...(f === 'all' || f === 'html' ? { html: r.html } : {}),
  ...(f === 'all' || f === 'text' ? { text: r.text } : {}),
  ...(f === 'all' || f === 'page' ? { page: r.page } : {}),
});

const Report = z.object({
  id: Int,
  title: z.string(),
  subject: z.string(),
  scope: z.object({ kind: z.enum(['client', 'tag', 'sites']), id: Int.optional(), ids: z.array(Int).optional() }),
  client_id: Int.nullable(),
  period: PeriodOut,
  status: z.enum(['generated', 'sending', 'sent', 'failed']).describe('generated (not sent), sending, sent, failed (last_error says why).'),
  send: z.boolean(),
  recipients: z.array(z.string()),
  channel_id: Int.nullable(),
  attempts: Int,
  last_error: z.string().nullable(),
  scheduled: z.boolean(),
  created_by: z.string(),
  created_at: z.string(),
  sent_at: z.string().nullable(),
  summary: Summary,
});
const reportView = (r: ClientReportRecord): z.input<typeof Report> => ({
  id: r.id,
  title: r.title,
  subject: r.subject,
  scope: r.scope,
  client_id: r.client_id,
  period: r.period,
  status: r.status,
  send: r.send,
  recipients: r.recipients,
  channel_id: r.channel_id,
  attempts: r.attempts,
  last_error: r.last_error,
  scheduled: r.schedule_key !== null,
  created_by: r.created_by,
  created_at: r.created_at,
  sent_at: r.sent_at,
  summary: summaryOf(r.content as ReportModel),
});

export const previewClientReport = defineAbility({
  ...base,
  name: 'preview-client-report-v1',
  label: 'Preview client report',
  description: `Report of a client, tag or site_ids (updates, uptime, vulnerabilities, security, changes, costs) over period or from/to, ≤ ${MAX_PERIOD_DAYS} days; nothing kept or sent.`,
  input: z.object({ ...Target, ...PeriodIn, format: Format }),
  output: z.object({ ...Renders, title: z.string(), period: PeriodOut, summary: Summary }),
  annotations: ro,
  acceptsPost: true,
  execute: async (i, ctx) => {
    const { model, period } = await ctx.reports.build(i, i);
    const r = ctx.reports.render(model);
    return {
      ...rendersOf(r, i.format),
      title: model.title,
      period: {
        from: period.from,
        to: period.to,
        time_zone: period.time_zone,
        from_at: new Date(period.from_at).toISOString(),
        to_at: new Date(period.to_at).toISOString(),
      },
      summary: summaryOf(model),
    };
  },
});

export const generateClientReport = defineAbility({
  ...base,
  name: 'generate-client-report-v1',
  label: 'Generate client report',
  description: `Archive a report; with send (default) e-mail it to the client and recipients. Error: 409 svc_no_email_channel.`,
  input: z.object({
    ...Target,
    ...PeriodIn,
    send: z.boolean().default(true),
    recipients: Recipients.optional(),
  }),
  output: Report,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: true },
  acceptsPost: true,
  execute: async (i, ctx) =>
    reportView(await ctx.reports.generate(i, i, { send: i.send, recipients: i.recipients, by: ctx.principal.name })),
});

export const listClientReports = defineAbility({
  ...base,
  name: 'list-client-reports-v1',
  label: 'List client reports',
  description: 'Archived client reports, newest first, paged.',
  input: z.object({
    client_id: Id.optional(),
    status: z.enum(['generated', 'sending', 'sent', 'failed']).optional(),
    page: Page,
    per_page: perPage(20),
  }),
  output: paged(Report),
  annotations: ro,
  execute: (i, ctx) => {
    const all = ctx.reports.list(i);
    return { items: paginate(all, i.page, i.per_page).map(reportView), page: i.page, per_page: i.per_page, total: all.length };
  },
});

export const getClientReport = defineAbility({
  ...base,
  name: 'get-client-report-v1',
  label: 'Get client report',
  description: 'An archived report with its renders (e-mail, text, page).',
  input: z.object({ report_id: Id, format: Format }),
  output: Report.extend(Renders),
  annotations: ro,
  execute: (i, ctx) => {
    const r = ctx.reports.get(i.report_id);
    return { ...reportView(r), ...rendersOf(ctx.reports.render(r.content as ReportModel), i.format) };
  },
});

const Hex = z.string().regex(/^#[0-9a-fA-F]{6}$/, '#RRGGBB');
const BrandingOut = z.object({
  name: z.string(),
  logo: z.string(),
  primary_color: z.string(),
  accent_color: z.string(),
  footer: z.string(),
});
const BrandingIn = z
  .object({
    name: z.string().max(100).nullable(),
    logo: z.string().max(MAX_LOGO_CHARS).nullable(),
    primary_color: Hex.nullable(),
    accent_color: Hex.nullable(),
    footer: z.string().max(MAX_FOOTER_CHARS).nullable(),
  })
  .partial()
  .strict();
const Schedule = z
  .object({
    frequency: z.enum(['monthly', 'weekly']),
    day: Int.min(1).max(28).optional(),
    weekday: z.enum(WEEKDAY_NAMES).optional(),
    time: z.string().max(5),
  })
  .strict();
const Settings = z.object({
  client_id: Int.nullable(),
  branding: z.record(z.string(), z.string()).describe("The agency's branding, or the client's overrides."),
  effective_branding: BrandingOut,
  time_zone: z.string(),
  recipients: z.array(z.string()),
  channel_id: Int.nullable(),
  schedule: z
    .object({ frequency: z.enum(['monthly', 'weekly']), day: Int.optional(), weekday: z.enum(WEEKDAY_NAMES).optional(), time: z.string() })
    .nullable(),
  next_run_at: z.string().nullable(),
  updated_at: z.string(),
});
const settingsView = (s: ReturnType<import('../domain/reports/service.js').ReportService['settings']>): z.input<typeof Settings> => ({
  client_id: s.id || null,
  branding: s.branding as Record<string, string>,
  effective_branding: s.effective_branding,
  time_zone: s.time_zone,
  recipients: s.recipients,
  channel_id: s.channel_id,
  schedule: s.schedule,
  next_run_at: s.next_run_at,
  updated_at: s.updated_at,
});

export const getReportSettings = defineAbility({
  ...base,
  name: 'get-report-settings-v1',
  label: 'Get report settings',
  description: 'Report settings of the agency (branding), or of a client (overrides, zone, recipients, schedule and its next run).',
  input: z.object({ client_id: Id.optional() }),
  output: Settings,
  annotations: ro,
  execute: (i, ctx) => settingsView(ctx.reports.settings(i.client_id ?? null)),
});

export const updateReportSettings = defineAbility({
  ...base,
  name: 'update-report-settings-v1',
  label: 'Update report settings',
  description: "Set report branding (agency's, or client_id's overrides), zone, recipients, schedule.",
  input: z.object({
    client_id: Id.optional(),
    branding: BrandingIn.optional(),
    time_zone: z.string().max(64).optional(),
    recipients: Recipients.optional(),
    channel_id: Id.nullable().optional(),
    schedule: Schedule.nullable().optional(),
  }),
  output: Settings,
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ client_id, ...patch }, ctx) =>
    settingsView(
      await ctx.reports.updateSettings(client_id ?? null, {
        ...patch,
        branding: patch.branding as Partial<Record<string, string>> | undefined,
        schedule: patch.schedule as ReportSchedule | null | undefined,
      }),
    ),
});

export const reportAbilities = [
  previewClientReport,
  generateClientReport,
  listClientReports,
  getClientReport,
  getReportSettings,
  updateReportSettings,
] as const;
