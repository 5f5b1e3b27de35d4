// Notification channels, rules and the delivery log. An event (site down, sync failed, …) is matched against the
// enabled rules; each rule that wants it adds it to one delivery for its place (channel + recipients): a message of
// its own (immediate) or the rule's open digest. Deliveries live in the store first, then a sender claims each one in
// a store transaction (claim_owner/claim_until, as webhooks do), so that of several `serve` processes on one store
// exactly one sends a given attempt; a failure is retried with backoff (retryMs × 5 per attempt, MAX_ATTEMPTS).
// The clock is `now` (tests move it); nothing here sleeps.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { ServiceError } from '../../core/errors.js';
import type { Config } from '../../config.js';
import { log } from '../../log.js';
import type { Store, Tx } from '../../store/engine.js';
import type {
  ChannelRecord,
  ChannelType,
  EventItem,
  NotificationDeliveryRecord,
  NotificationEvent,
  QuietHours,
  RuleRecord,
  SmtpSettings,
} from '../../store/notification-records.js';
import type { SiteRecord } from '../../store/records.js';
import { VERSION } from '../../version.js';
import { PROCESS_OWNER } from '../leases.js';
import { sign } from '../webhooks.js';
import { assertAllowedHost, outgoingUrl } from '../../child/address-policy.js';
import { DIGEST_ITEMS, ITEM_TEXT_MAX, chatPayload, clip, compose, emailParts } from './messages.js';
import { afterQuietHours, checkQuietHours, windowEnd } from './schedule.js';
import { SEND_TIMEOUT_MS, Senders, type SendResult } from './senders.js';

export const MAX_CHANNELS = 50;
export const MAX_RULES = 200;
export const MAX_ATTEMPTS = 5;
/** Finished deliveries kept in the log (newest); older ones are deleted. */
export const DELIVERIES_KEPT = 1000;
/** Deliveries waiting at once (pending or collecting): past it, new messages are dropped and logged, not queued. */
export const MAX_PENDING = 5000;
/** Recipients of one e-mail channel or rule. */
export const MAX_RECIPIENTS = 50;
export const DEFAULT_RATE_PER_MINUTE = 30;
/** Attempts sent at once by one process: a hanging receiver holds one slot for its timeout, never the others. */
export const SEND_CONCURRENCY = 8;
/** tls.expiring: a rule hears of a certificate that expires within this many days, unless it says otherwise. */
export const TLS_DAYS = 14;
export const TLS_DAYS_MAX = 365;

const EMAIL = /^[^\s@<>(),;:"]+@[^\s@<>(),;:"]+\.[^\s@<>(),;:"]+$/;
const ENCODING = 'sha256';

export const CHANNEL_URL_HOSTS: Partial<Record<ChannelType, string>> = {
  slack: 'hooks.slack.com',
  discord: 'discord.com',
  teams: 'webhook.office.com or a logic.azure.com / powerplatform.com workflow URL',
};

const isoOf = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

export interface ChannelInput {
  name: string;
  type: ChannelType;
  /** slack, discord, teams, webhook. */
  url?: string;
  smtp?: SmtpSettings;
  password?: string;
  recipients?: string[];
  rate_per_minute?: number;
}

export interface RuleInput {
  name: string;
  enabled?: boolean;
  events: NotificationEvent[];
  sites?: Partial<RuleRecord['sites']>;
  channel_id: number;
  recipients?: string[];
  mode?: RuleRecord['mode'];
  quiet_hours?: QuietHours | null;
  tls_days?: number;
}

export interface NotificationOptions {
  now?: () => number;
  owner?: string;
  timeoutMs?: number;
  tlsCa?: string | Buffer;
}

/** A happening to announce: which event, which site (null: fleet-wide), what to say, and its stable key. */
export interface EventInput {
  event: NotificationEvent;
  key: string;
  site: { id: number; name: string; url: string } | null;
  title: string;
  text: string;
  data?: Record<string, unknown>;
}

export class NotificationService {
  now: () => number;
  readonly owner: string;
  private readonly senders: Senders;
  private readonly timeoutMs: number;
  private timer: NodeJS.Timeout | null = null;
  private sending = new Map<number, Promise<unknown>>();
  private sweeping: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    opts: NotificationOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.owner = opts.owner ?? PROCESS_OWNER;
    this.timeoutMs = opts.timeoutMs ?? SEND_TIMEOUT_MS;
    this.senders = new Senders({ allowPrivate: config.allowPrivateSites, timeoutMs: this.timeoutMs, tlsCa: opts.tlsCa });
  }

  // ---- channels -------------------------------------------------------------------------------------------

  listChannels(): ChannelRecord[] {
    return [...this.store.all<ChannelRecord>('notification_channels')].sort((a, b) => a.id - b.id);
  }

  channel(id: number): ChannelRecord {
    const c = this.store.get<ChannelRecord>('notification_channels', id);
    if (!c) throw new ServiceError('svc_channel_not_found', `No notification channel found with ID ${id}.`, 404);
    return c;
  }

  private checkUrl(raw: string, type: ChannelType): string {
    return outgoingUrl(raw, type, this.config.allowPrivateSites);
  }

  private checkRecipients(list: string[] | undefined): string[] {
    const out = [...new Set((list ?? []).map((r) => r.trim().toLowerCase()))];
    if (out.length > MAX_RECIPIENTS) throw new ServiceError('svc_invalid_recipients', `At most ${MAX_RECIPIENTS} recipients.`, 400);
    const bad = out.find((r) => !EMAIL.test(r) || r.length > 254);
    if (bad !== undefined) throw new ServiceError('svc_invalid_recipients', `"${bad}" is not an e-mail address.`, 400);
    return out;
  }

  private checkSmtp(s: SmtpSettings): SmtpSettings {
    const host = s.host.trim();
    if (!/^[A-Za-z0-9.-]+$|^\[?[0-9a-fA-F:.]+\]?$/.test(host))
      throw new ServiceError('svc_invalid_smtp', `Invalid SMTP host "${host}".`, 400);
    if (!this.config.allowPrivateSites) {
      try {
        assertAllowedHost(host);
      } catch (e) {
        throw new ServiceError('svc_address_not_allowed', (e as Error).message, 400);
      }
    }
    if (!EMAIL.test(s.from.replace(/^.*<(.+)>\s*$/, '$1')))
      throw new ServiceError('svc_invalid_smtp', `The sender "${s.from}" is not an e-mail address.`, 400);
    return { ...s, host };
  }

  /** The secret is answered by this call only (webhook signing secrets are made here). */
  async addChannel(input: ChannelInput): Promise<{ channel: ChannelRecord; secret: string | null }> {
    const at = isoOf(this.now());
    let rec: Omit<ChannelRecord, 'id'>;
    let shown: string | null = null;
    const base = {
      name: input.name.trim(),
      type: input.type,
      rate_per_minute: input.rate_per_minute ?? DEFAULT_RATE_PER_MINUTE,
      created_at: at,
      updated_at: at,
    };
    if (input.type === 'email') {
      if (!input.smtp)
        throw new ServiceError('svc_invalid_smtp', 'An e-mail channel needs smtp settings (host, port, security, from).', 400);
      if (input.url) throw new ServiceError('svc_invalid_channel', 'An e-mail channel takes smtp settings, not a url.', 400);
      const recipients = this.checkRecipients(input.recipients);
      if (!recipients.length) throw new ServiceError('svc_invalid_recipients', 'An e-mail channel needs at least one recipient.', 400);
      if (input.smtp.username && !input.password) throw new ServiceError('svc_invalid_smtp', 'An SMTP username needs its password.', 400);
      rec = { ...base, smtp: this.checkSmtp(input.smtp), recipients, secret: input.password ?? '', url: '' };
    } else {
      if (!input.url) throw new ServiceError('svc_invalid_channel', `A ${input.type} channel needs its url.`, 400);
      if (input.smtp || input.password || input.recipients?.length)
        throw new ServiceError('svc_invalid_channel', `A ${input.type} channel takes a url only (no smtp, password or recipients).`, 400);
      const url = this.checkUrl(input.url, input.type);
      if (input.type === 'webhook') {
        shown = `whsec_${randomBytes(24).toString('hex')}`;
        rec = { ...base, smtp: null, recipients: [], secret: shown, url };
      } else rec = { ...base, smtp: null, recipients: [], secret: url, url: '' };
    }
    const channel = await this.store.write((tx) => {
      if ([...tx.all('notification_channels')].length >= MAX_CHANNELS)
        throw new ServiceError('svc_channel_limit', `At most ${MAX_CHANNELS} notification channels; delete one first.`, 409);
      return tx.insert<ChannelRecord>('notification_channels', rec);
    });
    return { channel, secret: shown };
  }

  /** Change a channel; a secret given replaces the stored one (which is never read back). */
  async updateChannel(
    id: number,
    patch: Partial<Omit<ChannelInput, 'type' | 'smtp'>> & { smtp?: Partial<SmtpSettings> },
  ): Promise<ChannelRecord> {
    const cur = this.channel(id);
    const next: ChannelRecord = { ...cur, updated_at: isoOf(this.now()) };
    if (patch.name !== undefined) next.name = patch.name.trim();
    if (patch.rate_per_minute !== undefined) next.rate_per_minute = patch.rate_per_minute;
    if (cur.type === 'email') {
      if (patch.url !== undefined) throw new ServiceError('svc_invalid_channel', 'An e-mail channel takes smtp settings, not a url.', 400);
      if (patch.smtp) next.smtp = this.checkSmtp({ ...cur.smtp!, ...patch.smtp });
      if (patch.password !== undefined) next.secret = patch.password;
      if (patch.recipients !== undefined) {
        next.recipients = this.checkRecipients(patch.recipients);
        if (!next.recipients.length)
          throw new ServiceError('svc_invalid_recipients', 'An e-mail channel needs at least one recipient.', 400);
      }
    } else {
      if (patch.smtp || patch.password !== undefined || patch.recipients !== undefined)
        throw new ServiceError('svc_invalid_channel', `A ${cur.type} channel takes a url only (no smtp, password or recipients).`, 400);
      if (patch.url !== undefined) {
        const url = this.checkUrl(patch.url, cur.type);
        if (cur.type === 'webhook') next.url = url;
        else next.secret = url;
      }
    }
    return this.store.write((tx) => {
      if (!tx.get('notification_channels', id)) throw this.notFound(id);
      return tx.put<ChannelRecord>('notification_channels', next);
    });
  }

  private notFound(id: number) {
    return new ServiceError('svc_channel_not_found', `No notification channel found with ID ${id}.`, 404);
  }

  /** Refused while a rule sends to it (delete or move the rule first); its waiting deliveries fail. */
  async removeChannel(id: number): Promise<ChannelRecord> {
    return this.store.write((tx) => {
      const c = tx.get<ChannelRecord>('notification_channels', id);
      if (!c) throw this.notFound(id);
      const using = [...tx.all<RuleRecord>('notification_rules')].filter((r) => r.channel_id === id).map((r) => r.id);
      if (using.length)
        throw new ServiceError('svc_channel_in_use', `Rules ${using.join(', ')} send to this channel: delete or change them first.`, 409, {
          rule_ids: using,
        });
      tx.delete('notification_channels', id);
      for (const d of tx.all<NotificationDeliveryRecord>('notification_deliveries'))
        if (d.channel_id === id && (d.status === 'pending' || d.status === 'collecting'))
          tx.put<NotificationDeliveryRecord>('notification_deliveries', { ...d, status: 'failed', last_error: 'channel deleted' });
      return c;
    });
  }

  /** One attempt now, no retry: the delivery as it ended. */
  async testChannel(id: number, recipients?: string[]): Promise<NotificationDeliveryRecord> {
    const c = this.channel(id);
    const to = c.type === 'email' ? (recipients?.length ? this.checkRecipients(recipients) : c.recipients) : [];
    if (c.type !== 'email' && recipients?.length)
      throw new ServiceError('svc_invalid_recipients', `A ${c.type} channel has no recipients.`, 400);
    const now = this.now();
    const item: EventItem = {
      event: 'notification.test',
      key: `test:${randomUUID()}`,
      at: isoOf(now),
      site: null,
      title: `Test notification from sitefleet (${c.name})`,
      text: `This ${c.type} channel works: sitefleet can reach it.`,
      data: {},
    };
    const d = await this.store.write((tx) =>
      this.insertDelivery(tx, { channel_id: id, rule_id: null, recipients: to, dedupe: item.key, kind: 'test', items: [item] }, now),
    );
    return (await this.attempt(d.id, true)) ?? d;
  }

  // ---- rules ----------------------------------------------------------------------------------------------

  listRules(): RuleRecord[] {
    return [...this.store.all<RuleRecord>('notification_rules')].sort((a, b) => a.id - b.id);
  }

  rule(id: number): RuleRecord {
    const r = this.store.get<RuleRecord>('notification_rules', id);
    if (!r) throw new ServiceError('svc_rule_not_found', `No notification rule found with ID ${id}.`, 404);
    return r;
  }

  private checkRule(tx: Tx, r: Omit<RuleRecord, 'id'>): Omit<RuleRecord, 'id'> {
    const c = tx.get<ChannelRecord>('notification_channels', r.channel_id);
    if (!c) throw this.notFound(r.channel_id);
    if (c.type !== 'email' && r.recipients.length)
      throw new ServiceError('svc_invalid_recipients', `A ${c.type} channel has no recipients: leave recipients empty.`, 400);
    for (const t of r.sites.tag_ids)
      if (!tx.get('tags', t))
        throw new ServiceError('svc_tag_not_found', `No tag found with ID ${t}.`, 404, {}, { subject: { kind: 'tag', ref: t } });
    for (const cl of r.sites.client_ids)
      if (!tx.get('clients', cl))
        throw new ServiceError('svc_client_not_found', `No client found with ID ${cl}.`, 404, {}, { subject: { kind: 'client', ref: cl } });
    for (const s of r.sites.site_ids)
      if (!tx.get('sites', s))
        throw new ServiceError('svc_site_not_found', `No site found with ID ${s}.`, 404, {}, { subject: { kind: 'site', ref: s } });
    const chosen = r.sites.tag_ids.length + r.sites.client_ids.length + r.sites.site_ids.length;
    if (r.sites.all && chosen)
      throw new ServiceError('svc_invalid_sites', 'Choose all sites or some tags, clients and sites, not both.', 400);
    if (!r.sites.all && !chosen) throw new ServiceError('svc_invalid_sites', 'Choose all sites, or at least one tag, client or site.', 400);
    if (r.quiet_hours) checkQuietHours(r.quiet_hours);
    const days = r.tls_days ?? TLS_DAYS;
    if (!Number.isInteger(days) || days < 1 || days > TLS_DAYS_MAX)
      throw new ServiceError('svc_invalid_tls_days', `tls_days takes a whole number of days from 1 to ${TLS_DAYS_MAX}.`, 400);
    return r;
  }

  private ruleSites(s: Partial<RuleRecord['sites']> | undefined): RuleRecord['sites'] {
    const ids = (l?: number[]) => [...new Set(l ?? [])].sort((a, b) => a - b);
    const tag_ids = ids(s?.tag_ids);
    const client_ids = ids(s?.client_ids);
    const site_ids = ids(s?.site_ids);
    return { all: s?.all ?? !(tag_ids.length || client_ids.length || site_ids.length), tag_ids, client_ids, site_ids };
  }

  async addRule(input: RuleInput): Promise<RuleRecord> {
    const rec: Omit<RuleRecord, 'id'> = {
      name: input.name.trim(),
      enabled: input.enabled ?? true,
      events: [...new Set(input.events)],
      sites: this.ruleSites(input.sites),
      channel_id: input.channel_id,
      recipients: this.checkRecipients(input.recipients),
      mode: input.mode ?? 'immediate',
      quiet_hours: input.quiet_hours ?? null,
      tls_days: input.tls_days ?? TLS_DAYS,
      created_at: isoOf(this.now()),
    };
    return this.store.write((tx) => {
      if ([...tx.all('notification_rules')].length >= MAX_RULES)
        throw new ServiceError('svc_rule_limit', `At most ${MAX_RULES} notification rules; delete one first.`, 409);
      return tx.insert<RuleRecord>('notification_rules', this.checkRule(tx, rec));
    });
  }

  async updateRule(id: number, patch: Partial<RuleInput>): Promise<RuleRecord> {
    const cur = this.rule(id);
    const next: RuleRecord = {
      ...cur,
      ...(patch.name !== undefined ? { name: patch.name.trim() } : {}),
      ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
      ...(patch.events !== undefined ? { events: [...new Set(patch.events)] } : {}),
      ...(patch.sites !== undefined ? { sites: this.ruleSites(patch.sites) } : {}),
      ...(patch.channel_id !== undefined ? { channel_id: patch.channel_id } : {}),
      ...(patch.recipients !== undefined ? { recipients: this.checkRecipients(patch.recipients) } : {}),
      ...(patch.mode !== undefined ? { mode: patch.mode } : {}),
      ...(patch.quiet_hours !== undefined ? { quiet_hours: patch.quiet_hours } : {}),
      ...(patch.tls_days !== undefined ? { tls_days: patch.tls_days } : {}),
    };
    return this.store.write((tx) => {
      if (!tx.get('notification_rules', id)) throw new ServiceError('svc_rule_not_found', `No notification rule found with ID ${id}.`, 404);
      const { id: _id, ...rest } = next;
      void _id;
      return tx.put<RuleRecord>('notification_rules', { id, ...this.checkRule(tx, rest) });
    });
  }

  async removeRule(id: number): Promise<RuleRecord> {
    return this.store.write((tx) => {
      const r = tx.get<RuleRecord>('notification_rules', id);
      if (!r) throw new ServiceError('svc_rule_not_found', `No notification rule found with ID ${id}.`, 404);
      tx.delete('notification_rules', id);
      return r;
    });
  }

  /** Forget a removed site, tag or client in the rules that name it (same write as the removal). */
  forget(tx: Tx, kind: 'site_ids' | 'tag_ids' | 'client_ids', id: number): void {
    for (const r of tx.all<RuleRecord>('notification_rules')) {
      if (!r.sites[kind].includes(id)) continue;
      const sites = { ...r.sites, [kind]: r.sites[kind].filter((x) => x !== id) };
      // A rule left choosing nothing is disabled, never widened to every site.
      const empty = !sites.all && !sites.tag_ids.length && !sites.client_ids.length && !sites.site_ids.length;
      tx.put<RuleRecord>('notification_rules', { ...r, sites, enabled: empty ? false : r.enabled });
    }
  }

  // ---- events ---------------------------------------------------------------------------------------------

  /** Some enabled rule wants one of these events (a cheap check before work that only notifications need). */
  wants(...events: NotificationEvent[]): boolean {
    return this.listRules().some((r) => r.enabled && events.some((e) => r.events.includes(e)));
  }

  /** The most days ahead any enabled rule wants to hear of an expiring certificate (0: none wants it). */
  tlsHorizonDays(): number {
    let most = 0;
    for (const r of this.listRules()) if (r.enabled && r.events.includes('tls.expiring')) most = Math.max(most, r.tls_days ?? TLS_DAYS);
    return most;
  }

  private matches(tx: Tx, r: RuleRecord, e: EventInput): boolean {
    // A certificate further away than the rule's horizon is not news to it yet.
    if (e.event === 'tls.expiring' && Number(e.data?.days_left) > (r.tls_days ?? TLS_DAYS)) return false;
    const site = e.site;
    if (r.sites.all) return true;
    if (!site) return false;
    if (r.sites.site_ids.includes(site.id)) return true;
    const rec = tx.get<SiteRecord>('sites', site.id);
    if (rec?.client_id != null && r.sites.client_ids.includes(rec.client_id)) return true;
    for (const t of r.sites.tag_ids) if (rec?.tag_ids?.includes(t)) return true;
    return false;
  }

  /**
   * Announce a happening to every rule that wants it: one delivery per place (channel + recipients), never two for
   * the same happening (`key`), even when several rules or several processes announce it.
   */
  async emit(e: EventInput): Promise<number[]> {
    const rules = this.listRules().filter((r) => r.enabled && r.events.includes(e.event));
    if (!rules.length) return [];
    const now = this.now();
    // Bounded as stored: a child's error message can be long.
    const item: EventItem = {
      event: e.event,
      key: e.key,
      at: isoOf(now),
      site: e.site,
      title: clip(e.title, 200),
      text: clip(e.text, ITEM_TEXT_MAX),
      data: e.data ?? {},
    };
    const due = await this.store.write((tx) => {
      let waiting = 0;
      const byDedupe = new Map<string, NotificationDeliveryRecord>();
      for (const d of tx.all<NotificationDeliveryRecord>('notification_deliveries')) {
        if (d.status === 'pending' || d.status === 'collecting') waiting++;
        byDedupe.set(d.dedupe, d);
        // A digest's events: each is heard of at its place (a full digest only counts the rest).
        if (d.kind === 'digest') {
          const place = placeOf(d.channel_id, d.recipients);
          for (const i of d.items) byDedupe.set(onceKey(i.key, place, i), d);
        }
      }
      const made: number[] = [];
      for (const r of rules) {
        const live = tx.get<RuleRecord>('notification_rules', r.id);
        if (!live?.enabled || !this.matches(tx, live, e)) continue;
        const channel = tx.get<ChannelRecord>('notification_channels', live.channel_id);
        if (!channel) continue;
        const recipients = channel.type === 'email' ? (live.recipients.length ? live.recipients : channel.recipients) : [];
        const place = placeOf(channel.id, recipients);
        const once = onceKey(e.key, place);
        if (byDedupe.has(once)) continue; // this place hears (or heard) of it already
        if (waiting >= MAX_PENDING) {
          log('error', 'notification dropped: too many deliveries waiting', { event: e.event, pending: waiting, limit: MAX_PENDING });
          break;
        }
        if (live.mode === 'immediate') {
          const d = this.insertDelivery(
            tx,
            { channel_id: channel.id, rule_id: live.id, recipients, dedupe: once, kind: 'immediate', items: [item] },
            afterQuietHours(live.quiet_hours, now),
          );
          byDedupe.set(once, d);
          made.push(d.id);
          waiting++;
        } else {
          const end = afterQuietHours(live.quiet_hours, windowEnd(live.mode, now));
          const digestKey = `digest:${live.id}:${windowEnd(live.mode, now)}@${place}`;
          const open = byDedupe.get(digestKey);
          if (open && open.status === 'collecting') {
            const keep = open.items.length < DIGEST_ITEMS;
            byDedupe.set(
              digestKey,
              tx.put<NotificationDeliveryRecord>('notification_deliveries', {
                ...open,
                items: keep ? [...open.items, item] : open.items,
                dropped: keep ? open.dropped : open.dropped + 1,
              }),
            );
          } else if (!open) {
            const d = this.insertDelivery(
              tx,
              { channel_id: channel.id, rule_id: live.id, recipients, dedupe: digestKey, kind: 'digest', items: [item] },
              end,
              'collecting',
            );
            byDedupe.set(digestKey, d);
            waiting++;
          } else continue; // this window's digest has gone already (a late event of it): the next window takes it
          byDedupe.set(once, byDedupe.get(digestKey)!);
        }
      }
      this.trim(tx);
      return made;
    });
    for (const id of due) {
      const d = this.store.get<NotificationDeliveryRecord>('notification_deliveries', id);
      if (d && d.next_attempt_at <= this.now()) this.sendOne(id);
    }
    return due;
  }

  private insertDelivery(
    tx: Tx,
    d: Pick<NotificationDeliveryRecord, 'channel_id' | 'rule_id' | 'recipients' | 'dedupe' | 'kind' | 'items'>,
    at: number,
    status: NotificationDeliveryRecord['status'] = 'pending',
  ): NotificationDeliveryRecord {
    return tx.insert<NotificationDeliveryRecord>('notification_deliveries', {
      ...d,
      status,
      dropped: 0,
      attempts: 0,
      next_attempt_at: at,
      last_attempt_at: 0,
      claim_owner: null,
      claim_until: 0,
      last_error: null,
      last_http_status: null,
      created_at: isoOf(this.now()),
      delivered_at: null,
    });
  }

  private trim(tx: Tx): void {
    const all = [...tx.all<NotificationDeliveryRecord>('notification_deliveries')];
    if (all.length <= DELIVERIES_KEPT) return;
    const done = all.filter((d) => d.status === 'delivered' || d.status === 'failed').sort((a, b) => a.id - b.id);
    for (const d of done.slice(0, all.length - DELIVERIES_KEPT)) tx.delete('notification_deliveries', d.id);
  }

  /** Newest first. */
  deliveries(
    filter: { channel_id?: number; rule_id?: number; status?: NotificationDeliveryRecord['status'] } = {},
  ): NotificationDeliveryRecord[] {
    return [...this.store.all<NotificationDeliveryRecord>('notification_deliveries')]
      .filter(
        (d) =>
          (filter.channel_id === undefined || d.channel_id === filter.channel_id) &&
          (filter.rule_id === undefined || d.rule_id === filter.rule_id) &&
          (filter.status === undefined || d.status === filter.status),
      )
      .sort((a, b) => b.id - a.id);
  }

  // ---- sending --------------------------------------------------------------------------------------------

  private sendOne(id: number): void {
    if (this.sending.has(id) || this.sending.size >= SEND_CONCURRENCY) return;
    const p = this.attempt(id, false)
      .catch((e) => log('error', 'notification attempt failed', { delivery: id, err: String(e) }))
      .finally(() => this.sending.delete(id));
    this.sending.set(id, p);
  }

  /** Claim (within the channel's rate), send, record. Null when it is not due, someone holds it, or the rate is spent. */
  private async attempt(id: number, final: boolean): Promise<NotificationDeliveryRecord | null> {
    const claimed = await this.store.write((tx) => {
      const d = tx.get<NotificationDeliveryRecord>('notification_deliveries', id);
      const now = this.now();
      if (!d || d.status !== 'pending' || d.next_attempt_at > now || (d.claim_owner && d.claim_until > now)) return null;
      const c = tx.get<ChannelRecord>('notification_channels', d.channel_id);
      if (c) {
        // The channel's rate, over every process: attempts started in the last minute.
        const recent: number[] = [];
        for (const o of tx.all<NotificationDeliveryRecord>('notification_deliveries'))
          if (o.channel_id === c.id && o.last_attempt_at > now - 60_000) recent.push(o.last_attempt_at);
        if (recent.length >= c.rate_per_minute) {
          const free = Math.min(...recent) + 60_000;
          tx.put<NotificationDeliveryRecord>('notification_deliveries', { ...d, next_attempt_at: free });
          return null;
        }
      }
      return tx.put<NotificationDeliveryRecord>('notification_deliveries', {
        ...d,
        claim_owner: this.owner,
        claim_until: now + this.timeoutMs * 3,
        last_attempt_at: now,
      });
    });
    if (!claimed) return null;
    const channel = this.store.get<ChannelRecord>('notification_channels', claimed.channel_id);
    const result: SendResult = channel ? await this.send(channel, claimed) : { error: 'channel deleted', httpStatus: null };
    const out = await this.store.write((tx) => {
      const d = tx.get<NotificationDeliveryRecord>('notification_deliveries', id);
      if (!d || d.claim_owner !== this.owner) return d ?? null;
      const attempts = d.attempts + 1;
      const ok = result.error === null;
      const giveUp = !ok && (final || attempts >= MAX_ATTEMPTS || !channel);
      const now = this.now();
      return tx.put<NotificationDeliveryRecord>('notification_deliveries', {
        ...d,
        attempts,
        claim_owner: null,
        claim_until: 0,
        last_error: result.error,
        last_http_status: result.httpStatus,
        status: ok ? 'delivered' : giveUp ? 'failed' : 'pending',
        delivered_at: ok ? isoOf(now) : null,
        next_attempt_at: ok || giveUp ? 0 : now + this.config.webhookRetryMs * 5 ** (attempts - 1),
      });
    });
    if (result.error)
      log('warn', 'notification delivery failed', {
        delivery: id,
        channel: claimed.channel_id,
        type: channel?.type,
        attempt: claimed.attempts + 1,
        err: result.error,
      });
    return out;
  }

  private send(c: ChannelRecord, d: NotificationDeliveryRecord): Promise<SendResult> {
    const m = compose(d.items, d.dropped, d.kind === 'digest');
    if (c.type === 'email') return this.senders.mail(c.smtp!, c.secret, { to: d.recipients, ...emailParts(m) });
    const deliveryId = `${d.id}-${hash(d.dedupe).slice(0, 16)}`;
    const body = JSON.stringify(chatPayload(c.type, m, deliveryId));
    const headers: Record<string, string> = { 'user-agent': `sitefleet/${VERSION}` };
    if (c.type === 'webhook') {
      headers['x-sitefleet-event'] = d.items.length === 1 && !d.dropped ? d.items[0]!.event : 'notification.digest';
      headers['x-sitefleet-delivery'] = deliveryId;
      headers['x-sitefleet-signature'] = sign(c.secret, body);
    }
    return this.senders.post(c.type === 'webhook' ? c.url : c.secret, body, headers);
  }

  /** Close due digests and send every due delivery (any process's), up to SEND_CONCURRENCY at once. */
  sweep(): Promise<void> {
    if (this.sweeping) return this.sweeping;
    const run = async () => {
      const now = this.now();
      const closing = [...this.store.all<NotificationDeliveryRecord>('notification_deliveries')].filter(
        (d) => d.status === 'collecting' && d.next_attempt_at <= now,
      );
      if (closing.length)
        await this.store.write((tx) => {
          for (const c of closing) {
            const d = tx.get<NotificationDeliveryRecord>('notification_deliveries', c.id);
            if (d?.status === 'collecting') tx.put<NotificationDeliveryRecord>('notification_deliveries', { ...d, status: 'pending' });
          }
        });
      for (const d of this.store.all<NotificationDeliveryRecord>('notification_deliveries')) {
        if (this.sending.size >= SEND_CONCURRENCY) break;
        if (d.status === 'pending' && d.next_attempt_at <= now && !(d.claim_owner && d.claim_until > now)) this.sendOne(d.id);
      }
    };
    this.sweeping = run().finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  /** Resolves once every attempt in flight in this process has ended (tests). */
  async settled(): Promise<void> {
    while (this.sending.size) await Promise.allSettled([...this.sending.values()]);
  }

  start(everyMs = 1000): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sweep().catch((e) => log('error', 'notification sweep failed', { err: String(e) })), everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
    await this.settled();
    await this.senders.close();
  }
}

/** A place: a channel and, for e-mail, its recipients. */
const placeOf = (channelId: number, recipients: string[]) => `${channelId}:${[...recipients].sort().join(',')}`;
/** A digest's items are read back at every event of a burst: each item's hash is computed once (the item is kept). */
const itemHashes = new WeakMap<EventItem, string>();
const onceKey = (key: string, place: string, item?: EventItem) => {
  let h = item && itemHashes.get(item);
  if (!h) {
    h = hash(key);
    if (item) itemHashes.set(item, h);
  }
  return `event:${h}@${place}`;
};
const hash = (s: string) => createHash(ENCODING).update(s).digest('hex').slice(0, 32);
