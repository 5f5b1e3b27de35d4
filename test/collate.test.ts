// Natural order keys (core/collate.ts): a string's key sorts as people count ("site2" before "site10").
import { expect, it } from 'vitest';
import { naturalKey } from '../src/core/collate.js';

/** What a key means: each run of digits, leading zeros dropped, left-padded to 20. */
const meaning = (s: string) => s.replace(/\d+/g, (d) => d.replace(/^0+(?=\d)/, '').padStart(20, '0'));

it('pads each run of digits to 20, drops leading zeros but one, and leaves the rest as it was', () => {
  expect(naturalKey('site2.example.com')).toBe(`site${'0'.repeat(19)}2.example.com`);
  expect(naturalKey('clinic.example.com')).toBe('clinic.example.com');
  expect(naturalKey('')).toBe('');
  expect(naturalKey('007')).toBe(`${'0'.repeat(19)}7`);
  expect(naturalKey('000')).toBe('0'.repeat(20));
  expect(naturalKey('9'.repeat(25))).toBe('9'.repeat(25)); // longer than 20: kept whole, after every shorter number
  const sorted = ['site10', 'site2', 'site01', 'site1a', 'Site3'].sort((a, b) => (naturalKey(a) < naturalKey(b) ? -1 : 1));
  expect(sorted).toEqual(['Site3', 'site01', 'site1a', 'site2', 'site10']);
  // Random strings of digits, zeros, letters and other characters (non-ASCII digits are not digits): the same keys.
  let x = 5;
  const rand = (n: number) => (x = (x * 1103515245 + 12345) % 2 ** 31) % n;
  const chars = ['0', '0', '1', '9', '5', 'a', '.', '/', ':', '٣', '-', 'é'];
  for (let k = 0; k < 2000; k++) {
    const s = Array.from({ length: rand(40) }, () => chars[rand(chars.length)]).join('') + (k % 7 ? '' : '0'.repeat(rand(30)));
    expect(naturalKey(s), JSON.stringify(s)).toBe(meaning(s));
  }
});
