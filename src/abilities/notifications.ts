// Notification abilities: channels (where messages go), rules (which events go where, when), and the delivery log.
// A channel's secret (SMTP password, webhook signing secret) is answered once, when it is made; a chat hook URL is a
// bearer secret too: whole only to callers that may write, scheme and host to the others.
import { z } from 'zod';
import { defineAbility } from './context.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { Page, paginate, perPage } from '../core/paging.js';
import type { Principal } from '../core/principal.js';
import { DEFAULT_RATE_PER_MINUTE, MAX_RECIPIENTS, TLS_DAYS, TLS_DAYS_MAX } from '../domain/notifications/service.js';
import {
  CHANNEL_TYPES,
  NOTIFICATION_EVENTS,
  type ChannelRecord,
  type NotificationDeliveryRecord,
  type RuleRecord,
} from '../store/notification-records.js';
import { Confirm, DryRun, paged, undescribed } from './schemas.js';
import { secretUrlFor } from '../core/secret-url.js';

const base = { category: 'svc-notifications', toolset: 'notifications' } as const;
const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };
const Int = z.number().int();
const Id = Int.min(1);

const Security = z.enum(['tls', 'starttls', 'none']);
const SmtpIn = z
  .object({
    host: z.string().min(1).max(253),
    port: Int.min(1).max(65535).default(587),
    security: Security.default('starttls').describe('tls (from the start, port 465), starttls (required) or none.'),
    username: z.string().max(200).default(''),
    from: z.string().min(3).max(200).describe('The sender address.'),
  })
  .strict();
/** A change to smtp settings: only the fields given (no defaults, which would overwrite the stored ones). */
const SmtpPatch = z
  .object({
    host: z.string().min(1).max(253),
    port: Int.min(1).max(65535),
    security: Security,
    username: z.string().max(200),
    from: z.string().min(3).max(200),
  })
  .partial()
  .strict();
const Recipients = z.array(z.string().max(254)).max(MAX_RECIPIENTS);
const Rate = Int.min(1).max(600).describe(`Messages per minute at most (default ${DEFAULT_RATE_PER_MINUTE}); past it, deliveries wait.`);

const Channel = z.object({
  id: Int,
  name: z.string(),
  type: z.enum(CHANNEL_TYPES),
  url: z.string().describe('slack, discord, teams, webhook: whole for callers that may write, else scheme and host only; "" for email.'),
  url_masked: z.boolean(),
  smtp: z.object({ host: z.string(), port: Int, security: Security, username: z.string(), from: z.string() }).nullable(),
  has_password: z.boolean().describe('An SMTP password is stored (it is never answered).'),
  recipients: z.array(z.string()),
  rate_per_minute: Int,
  created_at: z.string(),
  updated_at: z.string(),
});

const channelView = (c: ChannelRecord, p: Principal): z.input<typeof Channel> => {
  const raw = c.type === 'email' ? '' : c.type === 'webhook' ? c.url : c.secret;
  const shown = raw === '' ? { url: '', url_masked: false } : secretUrlFor(p, raw);
  return {
    id: c.id,
    name: c.name,
    type: c.type,
    ...shown,
    smtp: c.smtp,
    has_password: c.type === 'email' && c.secret !== '',
    recipients: c.recipients,
    rate_per_minute: c.rate_per_minute,
    created_at: c.created_at,
    updated_at: c.updated_at,
  };
};

const Delivery = z.object({
  id: Int,
  channel_id: Int,
  rule_id: Int.nullable(),
  kind: z.enum(['immediate', 'digest', 'test']),
  status: z.enum(['collecting', 'pending', 'delivered', 'failed']),
  events: z.array(z.string()).describe('The events in the message (a digest has many).'),
  subject: z.string(),
  recipients: z.array(z.string()),
  event_count: Int,
  attempts: Int,
  last_http_status: Int.nullable(),
  last_error: z.string().nullable(),
  created_at: z.string(),
  delivered_at: z.string().nullable(),
  next_attempt_at: z.string().nullable().describe('When it is sent or retried (a digest: when its window closes).'),
});

const deliveryView = (d: NotificationDeliveryRecord): z.input<typeof Delivery> => ({
  id: d.id,
  channel_id: d.channel_id,
  rule_id: d.rule_id,
  kind: d.kind,
  status: d.status,
  events: [...new Set(d.items.map((i) => i.event))],
  subject: d.items.length === 1 && d.kind !== 'digest' ? d.items[0]!.title : `${d.items.length + d.dropped} events`,
  recipients: d.recipients,
  event_count: d.items.length + d.dropped,
  attempts: d.attempts,
  last_http_status: d.last_http_status,
  last_error: d.last_error,
  created_at: d.created_at,
  delivered_at: d.delivered_at,
  next_attempt_at:
    (d.status === 'pending' || d.status === 'collecting') && d.next_attempt_at ? new Date(d.next_attempt_at).toISOString() : null,
});

const ChannelErrors =
  'Errors: svc_invalid_url, svc_address_not_allowed (a private or local address), svc_invalid_smtp, svc_invalid_recipients, svc_invalid_channel (400).';

export const listNotificationChannels = defineAbility({
  ...base,
  name: 'list-notification-channels-v1',
  label: 'List notification channels',
  description:
    'Notification channels (email, slack, discord, teams, webhook). Secrets are never answered; hook URLs only to callers that may write.',
  input: z.object({}),
  output: z.object({ items: z.array(Channel), total: Int }),
  annotations: ro,
  execute: (_i, ctx) => {
    const all = ctx.notifications.listChannels();
    return { items: all.map((c) => channelView(c, ctx.principal)), total: all.length };
  },
});

export const addNotificationChannel = defineAbility({
  ...base,
  name: 'add-notification-channel-v1',
  label: 'Add notification channel',
  description:
    'Add a channel: email (smtp, password, recipients), slack / discord / teams (incoming-webhook url) or webhook (a url that gets signed JSON; its signing secret is in this answer only). ' +
    ChannelErrors +
    ' 409 svc_channel_limit.',
  input: z
    .object({
      name: z.string().min(1).max(100),
      type: z.enum(CHANNEL_TYPES),
      url: z.string().min(1).max(2000).optional().describe('slack, discord, teams, webhook.'),
      smtp: SmtpIn.optional().describe('email.'),
      password: z.string().max(500).optional().describe('email: the SMTP password (stored, never answered).'),
      recipients: Recipients.optional().describe('email: default recipients.'),
      rate_per_minute: Rate.optional(),
    })
    .strict(),
  output: Channel.extend({ secret: z.string().nullable().describe('webhook: the signing secret, shown only here.') }),
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: false },
  execute: async (i, ctx) => {
    const { channel, secret } = await ctx.notifications.addChannel(i);
    return { ...channelView(channel, ctx.principal), secret };
  },
});

export const updateNotificationChannel = defineAbility({
  ...base,
  name: 'update-notification-channel-v1',
  label: 'Update notification channel',
  description: `Change a channel: only the fields given (as in add-notification-channel-v1); smtp is merged. ${ChannelErrors} 404 svc_channel_not_found.`,
  input: z
    .object({
      channel_id: Id,
      name: z.string().min(1).max(100).optional(),
      url: z.string().min(1).max(2000).optional(),
      smtp: SmtpPatch.optional(),
      password: z.string().max(500).optional(),
      recipients: Recipients.optional(),
      ...undescribed({ rate_per_minute: Rate.optional() }),
    })
    .strict(),
  output: Channel,
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ channel_id, ...patch }, ctx) => channelView(await ctx.notifications.updateChannel(channel_id, patch), ctx.principal),
});

export const deleteNotificationChannel = defineAbility({
  ...base,
  name: 'delete-notification-channel-v1',
  label: 'Delete notification channel',
  description:
    'Delete a channel; its waiting deliveries fail. Errors: 409 svc_channel_in_use while a rule sends to it; 404 svc_channel_not_found.',
  input: z.object({ channel_id: Id, confirm: Confirm, dry_run: DryRun }),
  output: z.object({ deleted: z.boolean(), dry_run: z.boolean(), channel: Channel }),
  annotations: { readonly: false, destructive: true, idempotent: true, openWorld: false },
  acceptsPost: true,
  execute: async (i, ctx) => {
    refuseBothFlags(i);
    const c = ctx.notifications.channel(i.channel_id);
    if (i.dry_run) return { deleted: false, dry_run: true, channel: channelView(c, ctx.principal) };
    requireConfirm(i);
    return { deleted: true, dry_run: false, channel: channelView(await ctx.notifications.removeChannel(c.id), ctx.principal) };
  },
});

export const testNotificationChannel = defineAbility({
  ...base,
  name: 'test-notification-channel-v1',
  label: 'Test notification channel',
  description:
    'Send a test message on a channel now (one attempt, no retry); returns its delivery: delivered, or failed with last_error (connection, timeout, auth, HTTP status, address refused).',
  input: z
    .object({ channel_id: Id, recipients: Recipients.optional().describe("email: send to these instead of the channel's.") })
    .strict(),
  output: Delivery,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: true },
  execute: async (i, ctx) => deliveryView(await ctx.notifications.testChannel(i.channel_id, i.recipients)),
});

// ---- rules ------------------------------------------------------------------------------------------------

const HHMM = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'HH:MM (24-hour)');
// The add ability describes its fields; the update ability takes the same shapes undescribed (its description points
// at add-notification-rule-v1), so the MCP tool list does not carry each explanation twice.
const QuietHoursShape = z.object({ from: HHMM, to: HHMM, time_zone: z.string().min(1).max(64).default('UTC') }).strict();
const QuietHours = QuietHoursShape.describe('Messages due in these local hours wait for their end (from > to spans midnight).');
const SitesShape = z
  .object({
    all: z.boolean().optional(),
    tag_ids: z.array(Id).max(100).optional(),
    client_ids: z.array(Id).max(100).optional(),
    site_ids: z.array(Id).max(1000).optional(),
  })
  .strict();
const Sites = SitesShape.describe('All sites (the default), or the sites with any of these tags, clients or ids.');
const Rule = z.object({
  id: Int,
  name: z.string(),
  enabled: z.boolean(),
  events: z.array(z.enum(NOTIFICATION_EVENTS)),
  sites: z.object({ all: z.boolean(), tag_ids: z.array(Int), client_ids: z.array(Int), site_ids: z.array(Int) }),
  channel_id: Int,
  recipients: z.array(z.string()),
  mode: z.enum(['immediate', 'hourly', 'daily']),
  quiet_hours: z.object({ from: z.string(), to: z.string(), time_zone: z.string() }).nullable(),
  tls_days: Int,
  created_at: z.string(),
});
const ruleView = (r: RuleRecord): z.input<typeof Rule> => ({ ...r, tls_days: r.tls_days ?? TLS_DAYS });
const TlsDaysShape = Int.min(1).max(TLS_DAYS_MAX);
const Events = z.array(z.enum(NOTIFICATION_EVENTS)).min(1).max(NOTIFICATION_EVENTS.length);
const ModeShape = z.enum(['immediate', 'hourly', 'daily']);
const Mode = ModeShape.describe('immediate, or an hourly / daily digest (closing on the UTC hour / midnight).');
const RuleErrors =
  'Errors: 404 svc_channel_not_found, svc_tag_not_found, svc_client_not_found, svc_site_not_found; 400 svc_invalid_sites, svc_invalid_recipients, svc_invalid_quiet_hours, svc_invalid_tls_days.';

export const listNotificationRules = defineAbility({
  ...base,
  name: 'list-notification-rules-v1',
  label: 'List notification rules',
  description: 'Notification rules: which events, for which sites, go to which channel and recipients, immediately or as a digest.',
  input: z.object({}),
  output: z.object({ items: z.array(Rule), total: Int }),
  annotations: ro,
  execute: (_i, ctx) => {
    const all = ctx.notifications.listRules();
    return { items: all.map(ruleView), total: all.length };
  },
});

export const addNotificationRule = defineAbility({
  ...base,
  name: 'add-notification-rule-v1',
  label: 'Add notification rule',
  description: `Send events of some or all sites to a channel (tls.expiring: within tls_days, default ${TLS_DAYS}). The same happening reaches one place once, however many rules match. ${RuleErrors}`,
  input: z
    .object({
      name: z.string().min(1).max(100),
      enabled: z.boolean().default(true),
      events: Events,
      sites: Sites.optional(),
      channel_id: Id,
      recipients: Recipients.optional().describe("email: these instead of the channel's."),
      mode: Mode.default('immediate'),
      quiet_hours: QuietHours.nullable().optional(),
      tls_days: TlsDaysShape.optional(),
    })
    .strict(),
  output: Rule,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: false },
  execute: async (i, ctx) => ruleView(await ctx.notifications.addRule(i)),
});

export const updateNotificationRule = defineAbility({
  ...base,
  name: 'update-notification-rule-v1',
  label: 'Update notification rule',
  description: `Change a rule: only the fields given, as in add-notification-rule-v1. ${RuleErrors} 404 svc_rule_not_found.`,
  input: z
    .object({
      rule_id: Id,
      name: z.string().min(1).max(100).optional(),
      enabled: z.boolean().optional(),
      events: Events.optional(),
      sites: SitesShape.optional(),
      channel_id: Id.optional(),
      recipients: Recipients.optional(),
      mode: ModeShape.optional(),
      quiet_hours: QuietHoursShape.nullable().optional(),
      tls_days: TlsDaysShape.optional(),
    })
    .strict(),
  output: Rule,
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ rule_id, ...patch }, ctx) => ruleView(await ctx.notifications.updateRule(rule_id, patch)),
});

export const deleteNotificationRule = defineAbility({
  ...base,
  name: 'delete-notification-rule-v1',
  label: 'Delete notification rule',
  description: 'Delete a rule; deliveries it made stay in the log. Error: 404 svc_rule_not_found.',
  input: z.object({ rule_id: Id, confirm: Confirm, dry_run: DryRun }),
  output: z.object({ deleted: z.boolean(), dry_run: z.boolean(), rule: Rule }),
  annotations: { readonly: false, destructive: true, idempotent: true, openWorld: false },
  acceptsPost: true,
  execute: async (i, ctx) => {
    refuseBothFlags(i);
    const r = ctx.notifications.rule(i.rule_id);
    if (i.dry_run) return { deleted: false, dry_run: true, rule: ruleView(r) };
    requireConfirm(i);
    return { deleted: true, dry_run: false, rule: ruleView(await ctx.notifications.removeRule(r.id)) };
  },
});

export const listNotificationDeliveries = defineAbility({
  ...base,
  name: 'list-notification-deliveries-v1',
  label: 'List notification deliveries',
  description:
    'The delivery log, newest first: each message to a channel (immediate, digest, test) with its status (collecting, pending, delivered, failed), attempts and last error.',
  input: z.object({
    channel_id: Id.optional(),
    rule_id: Id.optional(),
    status: z.enum(['collecting', 'pending', 'delivered', 'failed']).optional(),
    page: Page,
    per_page: perPage(20),
  }),
  output: paged(Delivery),
  annotations: ro,
  execute: (i, ctx) => {
    const all = ctx.notifications.deliveries(i);
    return { items: paginate(all, i.page, i.per_page).map(deliveryView), page: i.page, per_page: i.per_page, total: all.length };
  },
});

export const notificationAbilities = [
  listNotificationChannels,
  addNotificationChannel,
  updateNotificationChannel,
  deleteNotificationChannel,
  testNotificationChannel,
  listNotificationRules,
  addNotificationRule,
  updateNotificationRule,
  deleteNotificationRule,
  listNotificationDeliveries,
] as const;
