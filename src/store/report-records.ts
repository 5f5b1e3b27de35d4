// Shapes the store keeps for client reports: report settings (the agency's branding as record 0; a client's overrides,
// time zone, extra recipients and schedule under the client's id), the archive (one record per generated report, its
// content kept as the model it was rendered from, so that an archived report renders as it was sent), and the
// vulnerability log (when each vulnerability was found on or left a site), which the reports read.

export const WEEKDAY_NAMES = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type WeekdayName = (typeof WEEKDAY_NAMES)[number];

export interface Branding {
  /** The agency's (or the client's override) name shown as the report's sender. */
  name: string;
  /** An https URL or a data: URL of a PNG, JPEG, GIF or WebP image; '' = none. */
  logo: string;
  /** #RRGGBB. */
  primary_color: string;
  accent_color: string;
  /** Plain text (line breaks kept). */
  footer: string;
}

export type ReportSchedule =
  { frequency: 'monthly'; day: number; time: string } | { frequency: 'weekly'; weekday: WeekdayName; time: string };

export interface ReportSettingsRecord {
  /** 0: the agency's defaults; else the client's id. */
  id: number;
  /** The agency: every field; a client: only what it overrides. */
  branding: Partial<Branding>;
  /** IANA zone for the client's periods and schedule ('' = UTC). */
  time_zone: string;
  /** Sent a copy of every report of the client, besides the client's own e-mail. */
  recipients: string[];
  /** The e-mail channel reports go out on (null: the agency's, else the first e-mail channel). */
  channel_id: number | null;
  schedule: ReportSchedule | null;
  /** When the schedule was set: due times before it are not sent. */
  schedule_since: string | null;
  updated_at: string;
}

export type ReportScope = { kind: 'client'; id: number } | { kind: 'tag'; id: number } | { kind: 'sites'; ids: number[] };

export interface ClientReportRecord {
  id: number;
  scope: ReportScope;
  client_id: number | null;
  title: string;
  /** The period, inclusive local dates, and its UTC instants [from, to). */
  period: { from: string; to: string; time_zone: string; from_at: string; to_at: string };
  /** What was rendered (ReportModel, domain/reports/content.ts), branding included. */
  content: unknown;
  subject: string;
  send: boolean;
  recipients: string[];
  channel_id: number | null;
  status: 'generated' | 'sending' | 'sent' | 'failed';
  last_error: string | null;
  attempts: number;
  /** Scheduled reports: `schedule:<client id>:<period from>`, claimed once across processes; null on demand. */
  schedule_key: string | null;
  claim_owner: string | null;
  claim_until: number;
  next_attempt_at: number;
  created_by: string;
  created_at: string;
  sent_at: string | null;
}

export interface VulnerabilityLogRecord {
  id: number;
  at: string;
  event: 'found' | 'fixed';
  site_id: number;
  site_url: string;
  key: string;
  title: string;
  severity: string | null;
  type: string;
  slug: string;
  /** found: the vulnerable version installed; fixed: the version it left. */
  version: string | null;
  /** found: the first fixed version (if any); fixed: the version now installed. */
  fixed_in: string | null;
}
