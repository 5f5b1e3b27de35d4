// Shapes the store keeps for notifications: channels (where messages go, with their secret), rules (which events go
// where), and the delivery log (one record per message to one place, with its retries and its claim).

export const CHANNEL_TYPES = ['email', 'slack', 'discord', 'teams', 'webhook'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

/**
 * The events the domain emits (events.ts says where each comes from): uptime, syncs, update results (the update
 * history), vulnerabilities, what a sync shows changed outside the dashboard, TLS certificates, background jobs.
 */
export const NOTIFICATION_EVENTS = [
  'site.down',
  'site.up',
  'site.sync_failed',
  'update.failed',
  'update.rolled_back',
  'update.rollback_failed',
  'vulnerability.found',
  'vulnerability.fixed',
  'user.admin_created',
  'plugin.installed_outside',
  'tls.expiring',
  'job.finished',
] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];

/** How an e-mail channel reaches its SMTP server. `tls`: TLS from the first byte (465); `starttls`: upgrade, required. */
export interface SmtpSettings {
  host: string;
  port: number;
  security: 'tls' | 'starttls' | 'none';
  username: string;
  from: string;
}

export interface ChannelRecord {
  id: number;
  name: string;
  type: ChannelType;
  /** E-mail only. */
  smtp: SmtpSettings | null;
  /** Default recipients (e-mail): a rule may name its own. */
  recipients: string[];
  /**
   * The secret: the SMTP password (email), the incoming-webhook URL (slack, discord, teams: the URL is the credential),
   * the signing secret (webhook). Never answered whole after creation, never logged.
   */
  secret: string;
  /** webhook only: the receiver's URL (the secret signs the body). */
  url: string;
  /** Messages per minute at most; past it, deliveries wait for the next minute. */
  rate_per_minute: number;
  created_at: string;
  updated_at: string;
}

export interface QuietHours {
  /** "HH:MM" local time; from > to spans midnight. */
  from: string;
  to: string;
  time_zone: string;
}

export interface RuleRecord {
  id: number;
  name: string;
  enabled: boolean;
  events: NotificationEvent[];
  /** Which sites: all, or those with any of these tags, clients or ids. */
  sites: { all: boolean; tag_ids: number[]; client_ids: number[]; site_ids: number[] };
  channel_id: number;
  /** E-mail recipients for this rule (empty: the channel's). */
  recipients: string[];
  mode: 'immediate' | 'hourly' | 'daily';
  quiet_hours: QuietHours | null;
  /** tls.expiring: a certificate counts as expiring within this many days (absent on rules made before: TLS_DAYS). */
  tls_days?: number;
  created_at: string;
}

/** One event as the log keeps it in a message: what happened, to which site, when. */
export interface EventItem {
  event: NotificationEvent | 'notification.test';
  /** Stable identity of the happening (an incident, a job, a certificate's expiry): a place hears of it once. */
  key: string;
  at: string;
  site: { id: number; name: string; url: string } | null;
  title: string;
  text: string;
  data: Record<string, unknown>;
}

export interface NotificationDeliveryRecord {
  id: number;
  channel_id: number;
  rule_id: number | null;
  /** Where it goes (e-mail addresses; empty for chat and webhooks). */
  recipients: string[];
  /** Dedupe key: the same happening to the same place is stored once. */
  dedupe: string;
  kind: 'immediate' | 'digest' | 'test';
  /** collecting: a digest still gathering events until `next_attempt_at`. */
  status: 'collecting' | 'pending' | 'delivered' | 'failed';
  /** Events in the message (a digest keeps at most DIGEST_ITEMS; `dropped` counts the rest). */
  items: EventItem[];
  dropped: number;
  attempts: number;
  /** Epoch ms: when it is due (a digest: when its window closes). */
  next_attempt_at: number;
  /** Epoch ms of the last attempt's start (0: none): the channel's rate counts these. */
  last_attempt_at: number;
  claim_owner: string | null;
  claim_until: number;
  last_error: string | null;
  last_http_status: number | null;
  created_at: string;
  delivered_at: string | null;
}
