// What a notification says, in each channel's own format: an e-mail (subject, text, HTML), a Slack, Discord or Teams
// incoming-webhook payload, a signed webhook body. One message carries one event (immediate) or many (a digest).
// Each format's own limits are kept here, next to the code that keeps them.
import type { ChannelType, EventItem } from '../../store/notification-records.js';

/** An event's text in a message, at most (a child's error can be long). */
export const ITEM_TEXT_MAX = 1000;
/** Events listed in one digest message; the rest are counted ("and 12 more"). */
export const DIGEST_ITEMS = 200;

export const clip = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** Red for bad news, green for good, blue for the rest (Discord's integer colours; Teams' and Slack's names). */
function tone(items: EventItem[]): 'bad' | 'good' | 'info' {
  const bad: string[] = [
    'site.down',
    'site.sync_failed',
    'update.failed',
    'update.rolled_back',
    'update.rollback_failed',
    'vulnerability.found',
    'user.admin_created',
    'plugin.installed_outside',
    'tls.expiring',
  ];
  if (items.some((i) => bad.includes(i.event))) return 'bad';
  if (items.some((i) => i.event === 'job.finished' && i.data.job && (i.data.job as { status?: string }).status !== 'completed'))
    return 'bad';
  if (items.every((i) => i.event === 'site.up' || i.event === 'vulnerability.fixed')) return 'good';
  return 'info';
}

export interface Message {
  subject: string;
  /** Plain text: one paragraph per event. */
  text: string;
  items: EventItem[];
  dropped: number;
}

export function compose(items: EventItem[], dropped = 0, digest = false): Message {
  const n = items.length + dropped;
  const subject = clip(!digest && items.length === 1 ? items[0]!.title : `sitefleet digest: ${n} event${n === 1 ? '' : 's'}`, 200);
  const lines = items.map((i) => `${i.title}\n${clip(i.text, ITEM_TEXT_MAX)}\n${i.at}`);
  if (dropped) lines.push(`…and ${dropped} more event${dropped === 1 ? '' : 's'} not listed.`);
  return { subject, text: lines.join('\n\n'), items, dropped };
}

export function emailParts(m: Message, agency = 'sitefleet'): { subject: string; text: string; html: string } {
  const rows = m.items
    .map(
      (i) =>
        `<tr><td style="padding:8px 0;border-bottom:1px solid #ddd"><strong>${escapeHtml(i.title)}</strong><br>` +
        `${escapeHtml(clip(i.text, ITEM_TEXT_MAX))}<br><small style="color:#666">${escapeHtml(i.at)}</small></td></tr>`,
    )
    .join('');
  const more = m.dropped ? `<p>…and ${m.dropped} more not listed.</p>` : '';
  const html =
    `<!doctype html><html><body style="font-family:sans-serif;color:#222">` +
    `<h2 style="margin:0 0 12px">${escapeHtml(m.subject)}</h2><table style="border-collapse:collapse;width:100%">${rows}</table>${more}` +
    `<p style="color:#888;font-size:12px">Sent by ${escapeHtml(agency)}.</p></body></html>`;
  return { subject: m.subject, text: `${m.text}\n\n-- \nSent by ${agency}.`, html };
}

/** Slack incoming webhook: `text` (the notification fallback) and Block Kit blocks (header ≤ 150, section ≤ 3000). */
export function slackPayload(m: Message): Record<string, unknown> {
  return {
    text: m.subject,
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: clip(m.subject, 150) } },
      { type: 'section', text: { type: 'mrkdwn', text: clip(m.text, 3000) } },
    ],
  };
}

/** Discord webhook: content ≤ 2000, one embed (title ≤ 256, description ≤ 4096, colour as an integer). */
export function discordPayload(m: Message): Record<string, unknown> {
  const color = { bad: 0xd63638, good: 0x00a32a, info: 0x2271b1 }[tone(m.items)];
  return {
    username: 'sitefleet',
    content: clip(m.subject, 2000),
    embeds: [{ title: clip(m.subject, 256), description: clip(m.text, 4096), color, timestamp: m.items[0]?.at }],
    allowed_mentions: { parse: [] },
  };
}

/** Microsoft Teams (Workflows "post to a channel when a webhook request is received"): a message with an Adaptive Card. */
export function teamsPayload(m: Message): Record<string, unknown> {
  const color = { bad: 'Attention', good: 'Good', info: 'Accent' }[tone(m.items)];
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          body: [
            { type: 'TextBlock', text: m.subject, weight: 'Bolder', size: 'Medium', color, wrap: true },
            ...m.items
              .slice(0, 50)
              .map((i) => ({ type: 'TextBlock', text: `**${i.title}**\n\n${clip(i.text, ITEM_TEXT_MAX)}`, wrap: true })),
            ...(m.items.length > 50 || m.dropped
              ? [{ type: 'TextBlock', text: `…and ${m.items.length - 50 + m.dropped} more.`, isSubtle: true, wrap: true }]
              : []),
          ],
        },
      },
    ],
  };
}

/** Signed webhook body: the event as today's webhooks send it (one event), or a digest's list. */
export function webhookPayload(m: Message, deliveryId: string): Record<string, unknown> {
  if (m.items.length === 1 && !m.dropped) {
    const i = m.items[0]!;
    return { id: deliveryId, event: i.event, created_at: i.at, site: i.site, title: i.title, text: i.text, ...i.data };
  }
  return {
    id: deliveryId,
    event: 'notification.digest',
    created_at: m.items[m.items.length - 1]?.at ?? null,
    items: m.items.map((i) => ({ event: i.event, created_at: i.at, site: i.site, title: i.title, text: i.text, ...i.data })),
    dropped: m.dropped,
  };
}

/** The JSON a chat or webhook channel POSTs. */
export function chatPayload(type: Exclude<ChannelType, 'email'>, m: Message, deliveryId: string): Record<string, unknown> {
  switch (type) {
    case 'slack':
      return slackPayload(m);
    case 'discord':
      return discordPayload(m);
    case 'teams':
      return teamsPayload(m);
    case 'webhook':
      return webhookPayload(m, deliveryId);
  }
}
