// A child site's wall clock: the two dates WordPress keeps for a post, from one of them and the site's time zone.
import { describe, expect, it } from 'vitest';
import { gmtFromLocal, localFromGmt, offsetMinutes, zoneOf } from '../src/core/site-time.js';

describe('site time', () => {
  it('reads WordPress time zone settings: a city name wins, else the offset', () => {
    expect(zoneOf('Europe/Paris', '1')).toBe('Europe/Paris');
    expect(zoneOf('', '5.5')).toBe('+05:30');
    expect(zoneOf('', -3)).toBe('-03:00');
    expect(zoneOf('UTC+2', '2')).toBe('+02:00');
    expect(zoneOf(undefined, undefined)).toBeNull();
    expect(zoneOf('', 'nonsense')).toBeNull();
  });

  it('converts a local date to GMT and back, across daylight saving time', () => {
    expect(gmtFromLocal('2026-01-15 12:00:00', 'Europe/Paris')).toBe('2026-01-15 11:00:00');
    expect(gmtFromLocal('2026-07-15 12:00:00', 'Europe/Paris')).toBe('2026-07-15 10:00:00');
    expect(localFromGmt('2026-07-15 10:00:00', 'Europe/Paris')).toBe('2026-07-15 12:00:00');
    expect(gmtFromLocal('2026-07-15 12:00:00', '+05:30')).toBe('2026-07-15 06:30:00');
    expect(localFromGmt('2026-07-15 23:00:00', '-03:00')).toBe('2026-07-15 20:00:00');
    expect(gmtFromLocal('2020-03-04 05:06:07', '+00:00')).toBe('2020-03-04 05:06:07');
  });

  it('treats an unknown zone as UTC rather than failing', () => {
    expect(offsetMinutes('Not/AZone', Date.now())).toBe(0);
  });
});
