// A child site's wall clock: WordPress stores a post's local date (post_date) and its UTC date (post_date_gmt) and
// needs both when a date is set through the child (it creates posts as auto-drafts, whose unset GMT date WordPress
// would otherwise reset to "now"). A site's time zone is an IANA name or a fixed offset ("+05:30"), from its sync.

const MYSQL = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

/** Milliseconds of a `YYYY-MM-DD HH:MM:SS` read as if it were UTC; NaN when it is not one. */
function wallMs(s: string): number {
  const m = MYSQL.exec(s);
  return m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) : NaN;
}

const mysql = (ms: number): string => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Minutes east of UTC in `zone` at instant `ms` (0 for an unknown zone). */
export function offsetMinutes(zone: string, ms: number): number {
  const fixed = /^([+-])(\d{2}):(\d{2})$/.exec(zone);
  if (fixed) return (fixed[1] === '-' ? -1 : 1) * (Number(fixed[2]) * 60 + Number(fixed[3]));
  let f = formatters.get(zone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        hourCycle: 'h23',
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
      });
    } catch {
      return 0;
    }
    if (formatters.size > 500) formatters.clear();
    formatters.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  const wall = Date.UTC(+p.year!, +p.month! - 1, +p.day!, +p.hour!, +p.minute!, +p.second!);
  return Math.round((wall - Math.floor(ms / 1000) * 1000) / 60_000);
}

/** The UTC `YYYY-MM-DD HH:MM:SS` of a local one in `zone` (as WordPress's get_gmt_from_date does). */
export function gmtFromLocal(local: string, zone: string): string {
  const w = wallMs(local);
  // The offset depends on the instant, which depends on the offset: two rounds settle it (also across DST changes).
  let utc = w - offsetMinutes(zone, w) * 60_000;
  utc = w - offsetMinutes(zone, utc) * 60_000;
  return mysql(utc);
}

/** The local `YYYY-MM-DD HH:MM:SS` in `zone` of a UTC one. */
export function localFromGmt(gmt: string, zone: string): string {
  const u = wallMs(gmt);
  return mysql(u + offsetMinutes(zone, u) * 60_000);
}

/** A site's zone from WordPress's timezone_string and gmt_offset (hours, maybe fractional, maybe a string). */
export function zoneOf(timezoneString: string | undefined, gmtOffset: string | number | undefined): string | null {
  if (timezoneString && !/^UTC[+-]/.test(timezoneString)) return timezoneString;
  const h = Number(gmtOffset);
  if (gmtOffset === undefined || gmtOffset === '' || !Number.isFinite(h) || Math.abs(h) > 14) return null;
  const mins = Math.round(Math.abs(h) * 60);
  return `${h < 0 ? '-' : '+'}${String(Math.floor(mins / 60)).padStart(2, '0')}:${String(mins % 60).padStart(2, '0')}`;
}
