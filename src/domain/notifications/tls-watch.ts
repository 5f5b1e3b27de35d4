// The TLS watch: every few hours, while some enabled rule wants tls.expiring, one handshake to each https site
// (tls.ts: no HTTP request, no child) to read when its certificate ends; a certificate within the furthest rule's
// tls_days is one tls.expiring event (its key is the site and the expiry date: a renewed certificate is news again,
// the same one is not). Bounded: TLS_WATCH_CONCURRENCY handshakes at once, each within its timeout.
import { log } from '../../log.js';
import type { SiteRecord } from '../../store/records.js';
import { certificateStatus, type TlsCheckOptions } from '../tls.js';
import { tlsEvent } from './events.js';
import type { NotificationService } from './service.js';

export const TLS_WATCH_EVERY_MS = 6 * 3_600_000;
export const TLS_WATCH_CONCURRENCY = 4;
const DAY = 86_400_000;

export class TlsWatch {
  private last = 0;
  private running: Promise<number> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly n: NotificationService,
    private readonly sites: () => Iterable<SiteRecord>,
    private readonly tls: TlsCheckOptions,
    private readonly everyMs = TLS_WATCH_EVERY_MS,
  ) {}

  /** Check every https site now; resolves with the events announced (0 when no rule wants them). */
  run(): Promise<number> {
    this.running ??= this.check().finally(() => (this.running = null));
    return this.running;
  }

  private async check(): Promise<number> {
    this.last = this.n.now();
    const horizon = this.n.tlsHorizonDays();
    if (!horizon) return 0;
    const todo = [...this.sites()].filter((s) => !s.suspended && s.url.startsWith('https:'));
    let announced = 0;
    const next = async (): Promise<void> => {
      for (let s = todo.shift(); s; s = todo.shift()) {
        const cert = await certificateStatus(s.url, this.tls);
        if (!cert.expires) continue;
        const daysLeft = Math.floor((Date.parse(`${cert.expires}T00:00:00Z`) - this.n.now()) / DAY);
        if (daysLeft > horizon) continue;
        await this.n.emit(tlsEvent({ id: s.id, name: s.name, url: s.url }, { ...cert, expires: cert.expires }, daysLeft));
        announced++;
      }
    };
    await Promise.all(Array.from({ length: TLS_WATCH_CONCURRENCY }, next));
    return announced;
  }

  /** Run when the last check is older than `everyMs` (the clock is the notification service's). */
  tick(): Promise<number> | null {
    if (this.n.now() - this.last < this.everyMs) return null;
    return this.run();
  }

  start(everyMs = 60_000): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick()?.catch((e) => log('error', 'TLS watch failed', { err: String(e) })), everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => {});
  }
}
