// Upstream's GET /settings/emails and PUT/PATCH /settings/emails/{mail_type}/edit, answered from the notification rules
// that send to e-mail channels: "uptime" is the e-mail rules with site.down or site.up, "daily_digest" the e-mail rules
// that gather a daily digest. Each answers in upstream's shape {heading, type, subject, recipients, disable}; the
// recipients are those the rules send to (a rule's own, else its channel's). An edit writes `disable` (the rules'
// enabled flag) and `recipients` on those rules, through update-notification-rule-v1 (its checks and its audit); a
// key that is present is written as given (upstream keeps the old value for false or "": disable:false could never turn
// an e-mail back on). sitefleet sends no site-health or licence e-mails, and its subjects are per event: those are
// refused (501) before anything is written.
import { z } from 'zod';
import { listNotificationChannels, listNotificationRules, updateNotificationRule } from '../../abilities/notifications.js';
import { ServiceError } from '../../core/errors.js';
import { EDIT, READ, route, type RestArgs, type RestRoute, type RowRunner } from '../rest-door.js';
import { ok } from './answers.js';

const TYPES = ['daily_digest', 'uptime', 'site_health', 'deactivated_license_alert'] as const;
type MailType = (typeof TYPES)[number];
const HEADINGS: Record<MailType, string> = {
  daily_digest: 'Daily Digest',
  uptime: 'Uptime Monitoring',
  site_health: 'Site Health Monitoring',
  deactivated_license_alert: 'Deactivated License Alert',
};
/** What sitefleet's e-mails of each kind are titled ({site}, {count}: filled per message). */
const SUBJECTS: Record<MailType, string> = {
  daily_digest: 'sitefleet digest: {count} events',
  uptime: 'Site down: {site} / Site up again: {site}',
  site_health: '',
  deactivated_license_alert: '',
};
const NOT_SENT: Partial<Record<MailType, string>> = {
  site_health: 'sitefleet has no site-health monitoring e-mail',
  deactivated_license_alert: 'sitefleet has no licences',
};

const Email = z.object({
  heading: z.string(),
  type: z.enum(TYPES),
  subject: z.string(),
  recipients: z.string().describe('Comma-separated: the addresses the matching rules send to.'),
  disable: z.union([z.literal(0), z.literal(1)]).describe('1 when no enabled rule sends this e-mail.'),
});

type Rule = z.output<typeof listNotificationRules.output>['items'][number];
type Channel = z.output<typeof listNotificationChannels.output>['items'][number];

const rulesRow = route(READ, '/settings/emails', listNotificationRules, { output: (r) => r });
const channelsRow = route(READ, '/settings/emails', listNotificationChannels, { output: (r) => r });
const ruleEditRow = route(EDIT, '/settings/emails/:mail_type/edit', updateNotificationRule, {
  input: (a) => a.args,
  args: { rule_id: z.number(), enabled: z.boolean(), recipients: z.array(z.string()) },
  output: (r) => r,
});

const wants = (type: MailType, r: Rule): boolean =>
  type === 'uptime' ? r.events.includes('site.down') || r.events.includes('site.up') : type === 'daily_digest' && r.mode === 'daily';

async function state(a: RestArgs, run: RowRunner): Promise<{ rules: Rule[]; channels: Map<number, Channel> }> {
  const rules = ((await run(rulesRow, { ...a, args: {} })) as { items: Rule[] }).items;
  const channels = ((await run(channelsRow, { ...a, args: {} })) as { items: Channel[] }).items;
  return { rules, channels: new Map(channels.map((c) => [c.id, c])) };
}

function view(type: MailType, rules: Rule[], channels: Map<number, Channel>): z.input<typeof Email> {
  const mine = rules.filter((r) => channels.get(r.channel_id)?.type === 'email' && wants(type, r));
  const to = new Set(mine.flatMap((r) => (r.recipients.length ? r.recipients : (channels.get(r.channel_id)?.recipients ?? []))));
  return {
    heading: HEADINGS[type],
    type,
    subject: SUBJECTS[type],
    recipients: [...to].sort().join(','),
    disable: mine.some((r) => r.enabled) ? 0 : 1,
  };
}

const flag = (v: unknown): boolean => {
  if (['1', 'true', 1, true].includes(v as never)) return true;
  if (['0', 'false', 0, false].includes(v as never)) return false;
  throw new ServiceError('svc_invalid_input', 'disable takes true or false (1 or 0).', 400, { params: { disable: 'Invalid flag.' } });
};

const emailsGet: RestRoute = {
  methods: READ,
  path: '/settings/emails',
  module: listNotificationRules.module,
  handler: async (a, run) => {
    const { rules, channels } = await state(a, run);
    return { success: 1, data: TYPES.map((t) => view(t, rules, channels)) };
  },
  doc: {
    summary: 'E-mail settings',
    description:
      "Upstream's four e-mails, answered from the notification rules on e-mail channels: uptime (rules with site.down or site.up), daily_digest (daily digest rules). site_health and deactivated_license_alert are never sent (disable 1).",
    answers: ok({ data: z.array(Email) }),
  },
};

const emailsEdit: RestRoute = {
  methods: EDIT,
  path: '/settings/emails/:mail_type/edit',
  module: updateNotificationRule.module,
  handler: async (a, run) => {
    const type = a.params.mail_type as MailType;
    if (!TYPES.includes(type))
      throw new ServiceError('svc_invalid_input', `Email type does not exist: use one of ${TYPES.join(', ')}.`, 400, {
        params: { mail_type: 'Unknown e-mail type.' },
      });
    const unsent = NOT_SENT[type];
    if (unsent) throw new ServiceError('svc_not_supported', `Not supported by sitefleet: ${unsent}. Nothing was changed.`, 501);
    const given = (k: string) => a.args[k] !== undefined;
    const fixed = ['heading', 'subject'].filter(given);
    if (fixed.length)
      throw new ServiceError(
        'svc_not_supported',
        `Not supported by sitefleet: ${fixed.join(', ')} — its e-mails are titled per event. Nothing was changed.`,
        501,
      );
    const patch: Record<string, unknown> = {};
    if (given('disable')) patch.enabled = !flag(a.args.disable);
    if (given('recipients')) {
      const raw = a.args.recipients;
      const list = Array.isArray(raw) ? raw.map(String) : String(raw).split(',');
      patch.recipients = list.map((r) => r.trim()).filter(Boolean);
    }
    const { rules, channels } = await state(a, run);
    const mine = rules.filter((r) => channels.get(r.channel_id)?.type === 'email' && wants(type, r));
    if (!mine.length)
      throw new ServiceError(
        'svc_no_rule',
        `No rule sends the ${type} e-mail: add an e-mail channel (POST /notifications/channels/add) and a rule (POST /notifications/rules/add) first.`,
        409,
      );
    let now = rules;
    if (Object.keys(patch).length) {
      for (const r of mine) await run(ruleEditRow, { ...a, args: { rule_id: r.id, ...patch } });
      now = (await state(a, run)).rules;
    }
    const { type: _t, ...data } = view(type, now, channels);
    void _t;
    return { success: 1, message: 'Email settings updated successfully.', data };
  },
  doc: {
    summary: 'Edit an e-mail setting',
    description:
      "uptime or daily_digest: `disable` (true/false) turns their rules off or on, `recipients` (comma-separated) sets the rules' recipients. A key present is written as given. heading, subject, site_health and deactivated_license_alert: 501, nothing written. No such rule: 409 svc_no_rule.",
    args: {
      mail_type: z.enum(TYPES),
      disable: z.union([z.boolean(), z.enum(['1', '0', 'true', 'false']), z.literal(0), z.literal(1)]).optional(),
      recipients: z.union([z.string(), z.array(z.string())]).optional(),
      heading: z.unknown().optional().describe('Refused (501).'),
      subject: z.unknown().optional().describe('Refused (501).'),
    },
    answers: ok({ message: z.string(), data: Email.omit({ type: true }) }),
    errors: { 400: ['svc_invalid_input', 'svc_invalid_recipients'], 409: ['svc_no_rule'], 501: ['svc_not_supported'] },
  },
};

export const settingsEmailsRoutes: readonly RestRoute[] = [emailsGet, emailsEdit];
