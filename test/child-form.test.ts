// test/child-form.test.ts — PHP http_build_query encoding and $_POST-style decoding of form bodies (§2.2, §7.2).
import { describe, expect, it } from 'vitest';
import { decodeForm, FormLimitError, encodeForm, rawurldecode, rawurlencode, urldecode } from '../src/child/form.js';

describe('encodeForm', () => {
  it('writes scalars like http_build_query: booleans 1/0, null and undefined left out, numbers in decimal', () => {
    expect(encodeForm({ a: true, b: false, c: null, d: undefined, e: 42, f: -1.5, g: '' })).toBe('a=1&b=0&e=42&f=-1.5&g=');
  });

  it('percent-encodes like PHP urlencode: space as +, and ~ * ! ( ) too', () => {
    expect(encodeForm({ s: "a b~c*d!e(f)g'h-i_j.k" })).toBe('s=a+b%7Ec%2Ad%21e%28f%29g%27h-i_j.k');
    expect(encodeForm({ u: 'é€' })).toBe('u=%C3%A9%E2%82%AC');
  });

  it('percent-encodes + / = inside base64 values so the child does not read a space', () => {
    expect(encodeForm({ mainwpsignature: 'ab+/cd==' })).toBe('mainwpsignature=ab%2B%2Fcd%3D%3D');
  });

  it('nests objects and lists with percent-encoded brackets', () => {
    expect(encodeForm({ extra: { email: 'a@b.c', first_name: 'Ann Lee', skip: null }, list: ['x', true] })).toBe(
      'extra%5Bemail%5D=a%40b.c&extra%5Bfirst_name%5D=Ann+Lee&list%5B0%5D=x&list%5B1%5D=1',
    );
  });

  it('survives a lone surrogate instead of throwing', () => {
    expect(encodeForm({ p: 'x\ud800y' })).toBe('p=x%EF%BF%BDy');
  });
});

describe('decodeForm', () => {
  it('round-trips what the encoder writes, nesting included', () => {
    const body = encodeForm({ user: 'admin', n: 5, flag: false, extra: { email: 'a+b@c.d', deep: { k: 'v & w' } }, list: ['a', 'b'] });
    expect(decodeForm(body)).toEqual({
      user: 'admin',
      n: '5',
      flag: '0',
      extra: { email: 'a+b@c.d', deep: { k: 'v & w' } },
      list: { 0: 'a', 1: 'b' },
    });
  });

  it('reads + as a space, keeps a stray %, and lets the last duplicate win', () => {
    expect(decodeForm('a=1+2&b=100%&c=%zz&a=3')).toEqual({ a: '3', b: '100%', c: '%zz' });
  });

  it('appends for [] and mixes explicit keys like PHP', () => {
    expect(decodeForm('l[]=a&l[]=b&l[7]=c&l[]=d')).toEqual({ l: { 0: 'a', 1: 'b', 7: 'c', 8: 'd' } });
  });

  it('handles names PHP rewrites, and ignores an empty name', () => {
    expect(decodeForm('a.b=1&c d=2&e[x=3&=4&f[g]h=5')).toEqual({ a_b: '1', c_d: '2', e_x: '3', f: { g: '5' } });
  });

  it("keeps every value of a repeated key with repeated: 'all' (OpenAPI's form/explode), lists and brackets alike", () => {
    expect(decodeForm('k=1&k=2&l[]=a&l=b&m[x]=1&m[x]=2&n=1', { repeated: 'all' })).toEqual({
      k: { 0: '1', 1: '2' },
      l: { 0: 'a', 1: 'b' },
      m: { x: { 0: '1', 1: '2' } },
      n: '1',
    });
  });

  it('refuses more fields than maxFields and deeper keys than maxDepth, just past each; PHP drops past 64 levels', () => {
    expect(() => decodeForm('a=1&b=2', { maxFields: 2 })).not.toThrow();
    expect(() => decodeForm('a=1&b=2&c=3', { maxFields: 2 })).toThrow(FormLimitError);
    expect(() => decodeForm('a[x][y]=1', { maxDepth: 2 })).not.toThrow();
    expect(() => decodeForm('a[x][y][z]=1', { maxDepth: 2 })).toThrow(expect.objectContaining({ bound: 'depth', field: 'a' }));
    expect(decodeForm(`a${'[x]'.repeat(65)}=1&b=2`)).toEqual({ b: '2' });
  });

  it('cannot be used to pollute prototypes', () => {
    const form = decodeForm('__proto__[polluted]=1&constructor[prototype][polluted]=1');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(form)).toEqual(['__proto__', 'constructor']);
  });
});

describe('userpwd double encoding (§7.2)', () => {
  const passwords = ['%41', 'a b+c&d=e', '100%+sure', 'pa$$w0rd/é€', '  spaced  '.trim()];

  it('survives form decoding plus the child’s extra rawurldecode', () => {
    for (const password of passwords) {
      const form = decodeForm(encodeForm({ userpwd: rawurlencode(password) }));
      expect(rawurldecode(form.userpwd as string)).toBe(password);
    }
  });

  it('is needed: a single encoding loses %41 to "A"', () => {
    const form = decodeForm(encodeForm({ userpwd: '%41' }));
    expect(rawurldecode(form.userpwd as string)).toBe('A');
  });

  it('rawurldecode keeps + while urldecode turns it into a space', () => {
    expect(rawurldecode('a+b%20c')).toBe('a+b c');
    expect(urldecode('a+b%20c')).toBe('a b c');
  });
});
