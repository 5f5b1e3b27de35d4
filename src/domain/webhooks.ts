// Notifications by signed webhook: a site going down or up, a failed sync. Each event becomes one delivery per
// subscribed webhook, stored first (the delivery log), then sent: POST of a JSON body with
// X-Sitefleet-Signature: sha256=<hex HMAC-SHA256 of the body with the webhook's secret>. A failure is retried with
// backoff (retryMs, ×5 each time, MAX_ATTEMPTS in all). Any process running the sender may send a due delivery
// once it has claimed it in the store, so two processes never send the same attempt.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { LazyAgent } from '../child/undici.js';
import { assertAllowedHost, guardedLookup, outgoingUrl } from '../child/address-policy.js';
import { clip } from '../child/snapshot.js';
import { ServiceError, errors } from '../core/errors.js';
import type { Config } from '../config.js';
import { log } from '../log.js';
import type { DeliveryRecord, WebhookEvent, WebhookRecord } from '../store/monitor-records.js';
import type { Store } from '../store/store.js';
import { VERSION } from '../version.js';
import { classify } from './uptime-check.js';
import { PROCESS_OWNER } from './leases.js';

export const MAX_WEBHOOKS = 50;
export const MAX_ATTEMPTS = 5;
/** Deliveries kept in the log (newest); older finished ones are deleted. */
export const DELIVERIES_KEPT = 1000;
export const SEND_TIMEOUT_MS = 10_000;
/** Deliveries waiting at once, over all webhooks: past it, new events are dropped (and logged) rather than queued. */
export const MAX_PENDING = 5000;
const CLAIM_MS = SEND_TIMEOUT_MS * 3;

export const sign = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

const isoNow = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

export class WebhookService {
  private agent: LazyAgent;
  private timer: NodeJS.Timeout | null = null;
  private sending = new Set<Promise<void>>();
  private sweeping = false;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
  ) {
    this.agent = new LazyAgent({
      connections: 8,
      keepAliveTimeout: 4_000,
      headersTimeout: SEND_TIMEOUT_MS,
      bodyTimeout: SEND_TIMEOUT_MS,
      connect: config.allowPrivateSites ? {} : { lookup: guardedLookup },
    });
  }

  list(): WebhookRecord[] {
    return [...this.store.all<WebhookRecord>('webhooks')].sort((a, b) => a.id - b.id);
  }

  resolve(id: number): WebhookRecord {
    const w = this.store.get<WebhookRecord>('webhooks', id);
    if (!w) throw errors.webhookNotFound(id);
    return w;
  }

  /** Newest first. */
  deliveries(webhookId?: number, limit = 20): DeliveryRecord[] {
    const out = [...this.store.all<DeliveryRecord>('deliveries')].filter((d) => webhookId === undefined || d.webhook_id === webhookId);
    return out.sort((a, b) => b.id - a.id).slice(0, limit);
  }

  private checkUrl(raw: string): string {
    return outgoingUrl(raw, 'webhook', this.config.allowPrivateSites);
  }

  /** The secret is in the answer to this call only. */
  async create(input: {
    url: string;
    events: WebhookRecord['events'];
    description: string;
  }): Promise<{ webhook: WebhookRecord; secret: string }> {
    const url = this.checkUrl(input.url);
    const secret = `whsec_${randomBytes(24).toString('hex')}`;
    const webhook = await this.store.write((tx) => {
      if ([...tx.all('webhooks')].length >= MAX_WEBHOOKS) {
        throw new ServiceError('svc_webhook_limit', `At most ${MAX_WEBHOOKS} webhooks; delete one first.`, 409);
      }
      return tx.insert<WebhookRecord>('webhooks', {
        url,
        description: input.description,
        events: [...new Set(input.events)],
        secret,
        created_at: isoNow(),
      });
    });
    return { webhook, secret };
  }

  async remove(id: number): Promise<WebhookRecord> {
    return this.store.write((tx) => {
      const w = tx.get<WebhookRecord>('webhooks', id);
      if (!w) throw errors.webhookNotFound(id);
      tx.delete('webhooks', id);
      for (const d of tx.all<DeliveryRecord>('deliveries'))
        if (d.webhook_id === id && d.status === 'pending')
          tx.put<DeliveryRecord>('deliveries', { ...d, status: 'failed', last_error: 'webhook deleted' });
      return w;
    });
  }

  /** Queues the event for every webhook subscribed to it, and sends at once. */
  async emit(event: Exclude<WebhookEvent, 'webhook.test'>, data: Record<string, unknown>): Promise<void> {
    const hooks = this.list().filter((w) => w.events.includes(event));
    if (!hooks.length) return;
    const ids = await this.store.write((tx) => {
      let pending = 0;
      for (const d of tx.all<DeliveryRecord>('deliveries')) if (d.status === 'pending') pending++;
      const live = hooks.filter((w) => tx.get('webhooks', w.id));
      if (pending + live.length > MAX_PENDING) {
        log('error', 'webhook event dropped: too many deliveries waiting', { event, pending, limit: MAX_PENDING });
        return [];
      }
      const made = live.map((w) => this.newDelivery(tx, w.id, event, data).id);
      this.trim(tx);
      return made;
    });
    for (const id of ids) this.sendOne(id);
  }

  private newDelivery(
    tx: Parameters<Parameters<Store['write']>[0]>[0],
    webhookId: number,
    event: WebhookEvent,
    data: Record<string, unknown>,
  ): DeliveryRecord {
    const event_id = randomUUID();
    const created_at = isoNow();
    const body = JSON.stringify({ id: event_id, event, created_at, ...data });
    return tx.insert<DeliveryRecord>('deliveries', {
      webhook_id: webhookId,
      event,
      event_id,
      body,
      status: 'pending',
      attempts: 0,
      next_attempt_at: Date.now(),
      claim_owner: null,
      claim_until: 0,
      last_http_status: null,
      last_error: null,
      created_at,
      delivered_at: null,
    });
  }

  private trim(tx: Parameters<Parameters<Store['write']>[0]>[0]): void {
    const n = this.store.count('deliveries');
    if (n <= DELIVERIES_KEPT) return;
    const done = [...tx.all<DeliveryRecord>('deliveries')].filter((d) => d.status !== 'pending').sort((a, b) => a.id - b.id);
    for (const d of done.slice(0, n - DELIVERIES_KEPT)) tx.delete('deliveries', d.id);
  }

  /** One attempt now, answered (test-send): no retry. */
  async test(webhookId: number): Promise<DeliveryRecord> {
    this.resolve(webhookId);
    const d = await this.store.write((tx) => {
      const made = this.newDelivery(tx, webhookId, 'webhook.test', { message: 'A test delivery from sitefleet.' });
      this.trim(tx);
      return made;
    });
    return (await this.attempt(d.id, true)) ?? d;
  }

  private sendOne(id: number): void {
    const p = this.attempt(id, false).then(
      () => {},
      (e) => log('error', 'webhook attempt failed', { delivery: id, err: String(e) }),
    );
    this.sending.add(p);
    void p.finally(() => this.sending.delete(p));
  }

  /** Claim, send, record. Null when someone else holds it or it is not due. */
  private async attempt(id: number, final: boolean): Promise<DeliveryRecord | null> {
    const claimed = await this.store.write((tx) => {
      const d = tx.get<DeliveryRecord>('deliveries', id);
      const now = Date.now();
      if (!d || d.status !== 'pending' || d.next_attempt_at > now || (d.claim_owner && d.claim_until > now)) return null;
      return tx.put<DeliveryRecord>('deliveries', { ...d, claim_owner: PROCESS_OWNER, claim_until: now + CLAIM_MS });
    });
    if (!claimed) return null;
    const hook = this.store.get<WebhookRecord>('webhooks', claimed.webhook_id);
    let httpStatus: number | null = null;
    let error: string | null = null;
    if (!hook) error = 'webhook deleted';
    else {
      try {
        if (!this.config.allowPrivateSites) assertAllowedHost(new URL(hook.url).hostname);
        const res = await this.agent.request(hook.url, {
          method: 'POST',
          body: claimed.body,
          signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
          headers: {
            'content-type': 'application/json',
            'user-agent': `sitefleet/${VERSION}`,
            'x-sitefleet-event': claimed.event,
            'x-sitefleet-delivery': claimed.event_id,
            'x-sitefleet-signature': sign(hook.secret, claimed.body),
          },
        });
        httpStatus = res.statusCode;
        res.body.on('error', () => {});
        res.body.destroy(); // the receiver's answer is not read: only its status counts
        if (httpStatus < 200 || httpStatus > 299) error = `HTTP ${httpStatus}`;
      } catch (e) {
        const c = classify(e, false);
        error = clip(`${c.cause}: ${c.message}`, 300);
      }
    }
    const result = await this.store.write((tx) => {
      const d = tx.get<DeliveryRecord>('deliveries', id);
      if (!d || d.claim_owner !== PROCESS_OWNER) return d ?? null;
      const attempts = d.attempts + 1;
      const done = error === null;
      const giveUp = !done && (final || attempts >= MAX_ATTEMPTS || !hook);
      return tx.put<DeliveryRecord>('deliveries', {
        ...d,
        attempts,
        claim_owner: null,
        claim_until: 0,
        last_http_status: httpStatus,
        last_error: error,
        status: done ? 'delivered' : giveUp ? 'failed' : 'pending',
        delivered_at: done ? isoNow() : null,
        next_attempt_at: done || giveUp ? 0 : Date.now() + this.config.webhookRetryMs * 5 ** (attempts - 1),
      });
    });
    if (error)
      log('warn', 'webhook delivery failed', {
        delivery: id,
        webhook: claimed.webhook_id,
        event: claimed.event,
        attempt: claimed.attempts + 1,
        err: error,
      });
    return result;
  }

  /** Retry sweeper: sends deliveries whose next attempt is due (any process's). */
  start(everyMs = 500): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sweep(), everyMs);
    this.timer.unref();
  }

  private async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const now = Date.now();
      for (const d of this.store.all<DeliveryRecord>('deliveries')) {
        if (this.sending.size >= 16) break;
        if (d.status === 'pending' && d.next_attempt_at <= now && !(d.claim_owner && d.claim_until > now)) this.sendOne(d.id);
      }
    } finally {
      this.sweeping = false;
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.sending]);
    await this.agent.end();
  }
}
