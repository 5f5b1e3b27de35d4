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
import { WEEKDAY_NAMES, type ClientReportRecord } from '../store/report-records.js';
import { paged } from './schemas.js';

const base = { category: 'svc-notifications', toolset: 'notifications' } as const;
const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };
const Int = z.number().int();
const Id = Int.min(1);
const Recipients = z.array(z.string().max(254)).max(MAX_RECIPIENTS);

const Target = {
  client_id: Id.optional().describe('A client: its sites, its e-mail, its branding and time zone.'),
  tag_id: Id.optional().describe("A tag's sites."),
  site_ids: z.array(Id).min(1).max(MAX_REPORT_SITES).optional().describe('These sites.'),
};
const PeriodIn = {
  period: z.enum(PERIOD_PRESETS).optional().describe('Default last_month (in the time zone).'),
  from: z.string().max(10).optional().describe('YYYY-MM-DD, with to (inclusive).'),
  to: z.string().max(10).optional(),
  time_zone: z.string().min(1).max(64).optional().describe("IANA zone; default the client's (else UTC)."),
};
const Format = z
  .enum(['all', 'summary', 'html', 'text', 'page'])
  .default('all')
  .describe('Which renders to answer: html (e-mail), text, page (printable), all, or the summary only.');

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

const Errors =
  'Errors: 400 svc_invalid_target (give one of client_id, tag_id, site_ids), svc_invalid_period, svc_invalid_time_zone, svc_too_many_sites; 404 svc_client_not_found, svc_tag_not_found, svc_site_not_found.';

export const previewClientReport = defineAbility({
  ...base,
  name: 'preview-client-report-v1',
  label: 'Preview client report',
  description: `Render a report (updates, uptime and incidents, vulnerabilities, security, changes, costs) of a client, a tag or sites over a period, without archiving or sending it. Period: a preset or from/to, at most ${MAX_PERIOD_DAYS} days. ${Errors}`,
  input: z.object({ ...Target, ...PeriodIn, format: Format }),
  output: z.object({ ...Renders, title: z.string(), period: PeriodOut, summary: Summary }),
  annotations: ro,
  acceptsPost: true,
  execute: (i, ctx) => {
    const { model, period } = ctx.reports.build(i, i);
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
  description: `Generate a report into the archive and, with send (default true), e-mail it to the client's address, its extra recipients and recipients, on channel_id or the default e-mail channel. The answer says sent or failed (last_error). Use preview-client-report-v1 to look first. ${Errors} 409 svc_no_email_channel; 400 svc_no_recipients, svc_invalid_channel.`,
  input: z.object({
    ...Target,
    ...PeriodIn,
    send: z.boolean().default(true),
    recipients: Recipients.optional().describe('Extra recipients of this report.'),
    channel_id: Id.optional().describe('The e-mail channel to send on.'),
  }),
  output: Report,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: true },
  acceptsPost: true,
  execute: async (i, ctx) =>
    reportView(
      await ctx.reports.generate(i, i, { send: i.send, recipients: i.recipients, channel_id: i.channel_id, by: ctx.principal.name }),
    ),
});

export const listClientReports = defineAbility({
  ...base,
  name: 'list-client-reports-v1',
  label: 'List client reports',
  description:
    "The archive of generated and sent client reports, newest first, with each one's status and summary. Error: 404 svc_client_not_found.",
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
  description:
    'One archived report, rendered as it was sent: the HTML e-mail, its text and the printable page. Error: 404 svc_report_not_found.',
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
    logo: z.string().max(MAX_LOGO_CHARS).nullable().describe(`https URL or image data: URL (≤ ${MAX_LOGO_CHARS} characters); "" none.`),
    primary_color: Hex.nullable(),
    accent_color: Hex.nullable(),
    footer: z.string().max(MAX_FOOTER_CHARS).nullable(),
  })
  .partial()
  .strict()
  .describe("White-label fields; for a client, null puts back the agency's.");
const Schedule = z.discriminatedUnion('frequency', [
  z.object({ frequency: z.literal('monthly'), day: Int.min(1).max(28), time: z.string().max(5).default('08:00') }).strict(),
  z.object({ frequency: z.literal('weekly'), weekday: z.enum(WEEKDAY_NAMES), time: z.string().max(5).default('08:00') }).strict(),
]);
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
  description:
    "Report settings: the agency's white-label branding, or (client_id) a client's overrides, time zone, extra recipients, channel and schedule with its next run. Error: 404 svc_client_not_found.",
  input: z.object({ client_id: Id.optional() }),
  output: Settings,
  annotations: ro,
  execute: (i, ctx) => settingsView(ctx.reports.settings(i.client_id ?? null)),
});

export const updateReportSettings = defineAbility({
  ...base,
  name: 'update-report-settings-v1',
  label: 'Update report settings',
  description:
    "Change report settings (only the fields given): without client_id the agency's branding, time zone, recipients and channel; with it the client's overrides and schedule (monthly on a day 1-28 or weekly on a weekday, at HH:MM in its time zone; null stops it). Errors: 400 svc_invalid_branding, svc_invalid_time_zone, svc_invalid_recipients, svc_invalid_schedule, svc_invalid_channel; 404 svc_client_not_found, svc_channel_not_found.",
  input: z.object({
    client_id: Id.optional(),
    branding: BrandingIn.optional(),
    time_zone: z.string().max(64).optional().describe('IANA zone; "" = UTC.'),
    recipients: Recipients.optional().describe('Extra recipients of every report.'),
    channel_id: Id.nullable().optional().describe('The e-mail channel reports go out on.'),
    schedule: Schedule.nullable().optional(),
  }),
  output: Settings,
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ client_id, ...patch }, ctx) =>
    settingsView(
      await ctx.reports.updateSettings(client_id ?? null, {
        ...patch,
        branding: patch.branding as Partial<Record<string, string>> | undefined,
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
