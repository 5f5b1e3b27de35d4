// REST v2 notification routes (sitefleet's own, no upstream counterpart): channels, rules and the delivery log
// under /notifications.
import {
  addNotificationChannel,
  addNotificationRule,
  deleteNotificationChannel,
  deleteNotificationRule,
  listNotificationChannels,
  listNotificationDeliveries,
  listNotificationRules,
  testNotificationChannel,
  updateNotificationChannel,
  updateNotificationRule,
} from '../../abilities/notifications.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestRoute } from '../rest-door.js';
import { pathId, pick } from './args.js';
import { done, listed, okOrNot } from './answers.js';

const CHANNEL_FIELDS = ['name', 'url', 'smtp', 'password', 'recipients', 'rate_per_minute'] as const;
const RULE_FIELDS = ['name', 'enabled', 'events', 'sites', 'channel_id', 'recipients', 'mode', 'quiet_hours', 'tls_days'] as const;
const CHANNEL_NOT_FOUND = { 404: ['svc_channel_not_found'] };
const RULE_NOT_FOUND = { 404: ['svc_rule_not_found'] };
/** What a rule's content may be refused for. */
const RULE_ERRORS = {
  400: ['svc_invalid_sites', 'svc_invalid_recipients', 'svc_invalid_quiet_hours', 'svc_invalid_tls_days'],
  404: ['svc_channel_not_found', 'svc_tag_not_found', 'svc_client_not_found', 'svc_site_not_found'],
};

const channelsList = route(READ, '/notifications/channels', listNotificationChannels, {
  answers: listed(listNotificationChannels.output.shape.items.element),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const channelAdd = route(CREATE, '/notifications/channels/add', addNotificationChannel, {
  input: (a) => pick(a, 'type', ...CHANNEL_FIELDS),
  answers: done(addNotificationChannel.output),
  errors: {
    400: ['svc_invalid_url', 'svc_address_not_allowed', 'svc_invalid_smtp', 'svc_invalid_recipients', 'svc_invalid_channel'],
    409: ['svc_channel_limit'],
  },
  example: {
    request: { name: 'Team Slack', type: 'slack', url: 'https://hooks.slack.com/services/T000/B000/XXXX' },
    response: {
      success: 1,
      message: 'Notification channel created.',
      data: {
        id: 1,
        name: 'Team Slack',
        type: 'slack',
        url: 'https://hooks.slack.com/services/T000/B000/XXXX',
        url_masked: false,
        smtp: null,
        has_password: false,
        recipients: [],
        rate_per_minute: 30,
        created_at: '2026-01-05T10:00:00Z',
        updated_at: '2026-01-05T10:00:00Z',
        secret: null,
      },
    },
  },
  output: (r) => ({
    success: 1,
    message: r.secret ? 'Notification channel created. Keep the secret: it is not shown again.' : 'Notification channel created.',
    data: r,
  }),
});
const channelEdit = route(EDIT, '/notifications/channels/:id/edit', updateNotificationChannel, {
  input: (a) => ({ channel_id: pathId(a), ...pick(a, ...CHANNEL_FIELDS) }),
  answers: done(updateNotificationChannel.output),
  errors: {
    ...CHANNEL_NOT_FOUND,
    400: ['svc_invalid_url', 'svc_address_not_allowed', 'svc_invalid_smtp', 'svc_invalid_recipients', 'svc_invalid_channel'],
  },
  output: (r) => ({ success: 1, message: 'Notification channel updated.', data: r }),
});
const channelRemove = route([...REMOVE, 'POST'], '/notifications/channels/:id/remove', deleteNotificationChannel, {
  input: (a) => ({ channel_id: pathId(a), confirm: true }),
  answers: done(deleteNotificationChannel.output.shape.channel),
  errors: { ...CHANNEL_NOT_FOUND, 409: ['svc_channel_in_use'] },
  output: (r) => ({ success: 1, message: 'Notification channel deleted.', data: r.channel }),
});
const channelTest = route(CREATE, '/notifications/channels/:id/test', testNotificationChannel, {
  input: (a) => ({ channel_id: pathId(a), ...pick(a, 'recipients') }),
  answers: okOrNot({ data: testNotificationChannel.output }),
  errors: { ...CHANNEL_NOT_FOUND, 400: ['svc_invalid_recipients'] },
  output: (r) => ({ success: r.status === 'delivered' ? 1 : 0, data: r }),
});

const rulesList = route(READ, '/notifications/rules', listNotificationRules, {
  answers: listed(listNotificationRules.output.shape.items.element),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const ruleAdd = route(CREATE, '/notifications/rules/add', addNotificationRule, {
  input: (a) => pick(a, ...RULE_FIELDS),
  answers: done(addNotificationRule.output),
  errors: { ...RULE_ERRORS, 409: ['svc_rule_limit'] },
  output: (r) => ({ success: 1, message: 'Notification rule created.', data: r }),
});
const ruleEdit = route(EDIT, '/notifications/rules/:id/edit', updateNotificationRule, {
  input: (a) => ({ rule_id: pathId(a), ...pick(a, ...RULE_FIELDS) }),
  answers: done(updateNotificationRule.output),
  errors: { ...RULE_ERRORS, 404: [...RULE_ERRORS[404], ...RULE_NOT_FOUND[404]] },
  output: (r) => ({ success: 1, message: 'Notification rule updated.', data: r }),
});
const ruleRemove = route([...REMOVE, 'POST'], '/notifications/rules/:id/remove', deleteNotificationRule, {
  input: (a) => ({ rule_id: pathId(a), confirm: true }),
  answers: done(deleteNotificationRule.output.shape.rule),
  errors: RULE_NOT_FOUND,
  output: (r) => ({ success: 1, message: 'Notification rule deleted.', data: r.rule }),
});

const deliveriesList = route(READ, '/notifications/deliveries', listNotificationDeliveries, {
  input: (a) => pick(a, 'channel_id', 'rule_id', 'status', 'page', 'per_page'),
  answers: listed(listNotificationDeliveries.output.shape.items.element),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});

export const notificationRoutes: readonly RestRoute[] = [
  channelsList,
  channelAdd,
  channelEdit,
  channelRemove,
  channelTest,
  rulesList,
  ruleAdd,
  ruleEdit,
  ruleRemove,
  deliveriesList,
];
