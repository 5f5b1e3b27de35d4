// A report's period and schedule in a client's time zone: local calendar dates (inclusive) turned into UTC instants
// [from, to), the presets (last month, this month, last week, this week), and when a monthly or weekly schedule is due.
// Pure functions of an epoch-ms clock.
import { ServiceError } from '../../core/errors.js';
import { offsetMinutes } from '../../core/site-time.js';
import { WEEKDAY_NAMES, type ReportSchedule } from '../../store/report-records.js';

/** The longest period a report covers (a year, leap day included). */
export const MAX_PERIOD_DAYS = 366;
export const PERIOD_PRESETS = ['last_month', 'this_month', 'last_week', 'this_week'] as const;
export type PeriodPreset = (typeof PERIOD_PRESETS)[number];

const DAY = 86_400_000;

export interface Period {
  /** Local dates, inclusive. */
  from: string;
  to: string;
  time_zone: string;
  /** UTC instants: the local midnight starting `from`, and the one after `to`. */
  from_at: number;
  to_at: number;
}

const badPeriod = (m: string) => new ServiceError('svc_invalid_period', m, 400);

/** An IANA name ('' and 'UTC' are UTC); anything else is refused. */
export function checkZone(zone: string): string {
  const z = zone.trim() || 'UTC';
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: z });
  } catch {
    throw new ServiceError('svc_invalid_time_zone', `Unknown time zone "${z.slice(0, 64)}": use an IANA name such as Europe/Paris.`, 400);
  }
  return z;
}

/** The UTC instant of local wall-clock ms `wall` in `zone` (two rounds settle the offset across DST changes). */
export function instantOfWall(wall: number, zone: string): number {
  let u = wall - offsetMinutes(zone, wall) * 60_000;
  u = wall - offsetMinutes(zone, u) * 60_000;
  return u;
}

/** Local wall-clock ms of instant `at` in `zone` (read as if UTC). */
export const wallOf = (at: number, zone: string) => at + offsetMinutes(zone, at) * 60_000;

const dayOf = (wall: number) => new Date(wall).toISOString().slice(0, 10);

function parseDay(v: string, what: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  const t = m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!) : NaN;
  if (!m || Number.isNaN(t) || dayOf(t) !== v) throw badPeriod(`Invalid ${what}: "${v.slice(0, 40)}". Give a date as YYYY-MM-DD.`);
  return t;
}

function make(fromWall: number, toWall: number, zone: string): Period {
  return {
    from: dayOf(fromWall),
    to: dayOf(toWall),
    time_zone: zone,
    from_at: instantOfWall(fromWall, zone),
    to_at: instantOfWall(toWall + DAY, zone),
  };
}

/** A preset relative to `now` in `zone`. */
export function presetPeriod(p: PeriodPreset, zone: string, now: number): Period {
  const today = Math.floor(wallOf(now, zone) / DAY) * DAY;
  const d = new Date(today);
  const monthStart = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const weekStart = today - ((d.getUTCDay() + 6) % 7) * DAY; // Monday
  switch (p) {
    case 'last_month': {
      const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 1);
      return make(start, monthStart - DAY, zone);
    }
    case 'this_month':
      return make(monthStart, today, zone);
    case 'last_week':
      return make(weekStart - 7 * DAY, weekStart - DAY, zone);
    case 'this_week':
      return make(weekStart, today, zone);
  }
}

/** From and to (inclusive local dates); refused when reversed, longer than MAX_PERIOD_DAYS or ending after today. */
export function datesPeriod(from: string, to: string, zone: string, now: number): Period {
  const f = parseDay(from, 'from');
  const t = parseDay(to, 'to');
  if (f > t) throw badPeriod(`from (${from}) is after to (${to}).`);
  const days = (t - f) / DAY + 1;
  if (days > MAX_PERIOD_DAYS) throw badPeriod(`The period is ${days} days long; a report covers at most ${MAX_PERIOD_DAYS} days.`);
  const today = Math.floor(wallOf(now, zone) / DAY) * DAY;
  if (t > today) throw badPeriod(`to (${to}) is after today (${dayOf(today)} in ${zone}).`);
  return make(f, t, zone);
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * The latest instant at or before `now` when `s` was due in `zone`, and the period that run reports on: a monthly
 * schedule reports the calendar month before its day, a weekly one the seven days before its weekday.
 */
export function lastDue(s: ReportSchedule, zone: string, now: number): { due: number; period: Period } {
  const wall = wallOf(now, zone);
  const today = Math.floor(wall / DAY) * DAY;
  const at = minutesOf(s.time) * 60_000;
  if (s.frequency === 'weekly') {
    const want = WEEKDAY_NAMES.indexOf(s.weekday);
    let day = today - ((((new Date(today).getUTCDay() + 6) % 7) - want + 7) % 7) * DAY;
    if (instantOfWall(day + at, zone) > now) day -= 7 * DAY;
    return { due: instantOfWall(day + at, zone), period: make(day - 7 * DAY, day - DAY, zone) };
  }
  const d = new Date(today);
  let y = d.getUTCFullYear();
  let m = d.getUTCMonth();
  let day = Date.UTC(y, m, s.day);
  if (instantOfWall(day + at, zone) > now) {
    m -= 1;
    day = Date.UTC(y, m, s.day);
  }
  const runMonth = new Date(day);
  y = runMonth.getUTCFullYear();
  m = runMonth.getUTCMonth();
  return { due: instantOfWall(day + at, zone), period: make(Date.UTC(y, m - 1, 1), Date.UTC(y, m, 1) - DAY, zone) };
}

/** The next instant after `now` when `s` is due. */
export function nextDue(s: ReportSchedule, zone: string, now: number): number {
  // The last due time of a moment a period later is the next one (monthly: 32 days on; weekly: 7).
  const ahead = lastDue(s, zone, now + (s.frequency === 'weekly' ? 7 : 32) * DAY).due;
  if (s.frequency === 'weekly') return ahead;
  // 32 days on may skip a month: step back while the due before it is still after now.
  let best = ahead;
  for (let probe = ahead - DAY; probe > now; probe -= DAY) {
    const d = lastDue(s, zone, probe).due;
    if (d <= now) break;
    best = d;
    probe = d;
  }
  return best;
}
