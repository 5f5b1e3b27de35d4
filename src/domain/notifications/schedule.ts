// When a rule's message may go: the close of its digest window (hourly or daily, UTC) and the end of its quiet hours
// (local time in the rule's time zone). Pure functions of an epoch-ms clock.
import { ServiceError } from '../../core/errors.js';
import type { QuietHours, RuleRecord } from '../../store/notification-records.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** When the digest window that `now` falls in closes (the next full UTC hour or midnight). */
export function windowEnd(mode: Exclude<RuleRecord['mode'], 'immediate'>, now: number): number {
  const size = mode === 'hourly' ? HOUR : DAY;
  return Math.floor(now / size) * size + size;
}

const HHMM = /^([01]\d|2[0-3]):([0-5]\d)$/;

export function checkQuietHours(q: QuietHours): QuietHours {
  if (!HHMM.test(q.from) || !HHMM.test(q.to))
    throw new ServiceError('svc_invalid_quiet_hours', 'Quiet hours take "HH:MM" (24-hour) for from and to.', 400);
  if (q.from === q.to) throw new ServiceError('svc_invalid_quiet_hours', 'Quiet hours need from and to to differ.', 400);
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: q.time_zone });
  } catch {
    throw new ServiceError('svc_invalid_quiet_hours', `Unknown time zone "${q.time_zone}": use an IANA name such as Europe/Paris.`, 400);
  }
  return q;
}

/** Minutes since local midnight in `timeZone` at `now`. */
function localMinutes(now: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(now);
  const h = Number(parts.find((p) => p.type === 'hour')?.value ?? 0);
  const m = Number(parts.find((p) => p.type === 'minute')?.value ?? 0);
  return h * 60 + m;
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** `at` itself when it is outside the quiet hours, else the first minute after they end. */
export function afterQuietHours(q: QuietHours | null, at: number): number {
  if (!q) return at;
  const cur = localMinutes(at, q.time_zone);
  const from = minutesOf(q.from);
  const to = minutesOf(q.to);
  const quiet = from < to ? cur >= from && cur < to : cur >= from || cur < to;
  if (!quiet) return at;
  const wait = (to - cur + 24 * 60) % (24 * 60);
  // To the start of the minute quiet hours end (seconds of the current minute taken off).
  return at - (at % 60_000) + wait * 60_000;
}
