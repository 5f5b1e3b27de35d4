// test/child-envelope.test.ts — the <mainwp> envelope: encoding, finding it among junk, and classifying replies (§3).
import { describe, expect, it } from 'vitest';
import { ChildError, NO_MARKER_MESSAGE } from '../src/child/child-error.js';
import { encodeEnvelope, openReply } from '../src/child/envelope.js';

const reply = (body: string, status = 200, location: string | null = null) => ({ status, location, body: Buffer.from(body, 'latin1') });

function failure(body: string, status = 200, location: string | null = null): ChildError {
  try {
    openReply(reply(body, status, location));
  } catch (err) {
    expect(err).toBeInstanceOf(ChildError);
    return err as ChildError;
  }
  throw new Error('expected a ChildError');
}

describe('encodeEnvelope', () => {
  it('matches the worked examples of §3.5', () => {
    expect(encodeEnvelope({ result: 'success' })).toBe('<mainwp>eyJyZXN1bHQiOiJzdWNjZXNzIn0=</mainwp>');
    expect(encodeEnvelope({ deactivated: true })).toBe('<mainwp>eyJkZWFjdGl2YXRlZCI6dHJ1ZX0=</mainwp>');
    expect(
      encodeEnvelope({ error: 'Authentication failed! Please deactivate and re-activate the MainWP Child plugin on this site.' }),
    ).toBe(
      '<mainwp>eyJlcnJvciI6IkF1dGhlbnRpY2F0aW9uIGZhaWxlZCEgUGxlYXNlIGRlYWN0aXZhdGUgYW5kIHJlLWFjdGl2YXRlIHRoZSBNYWluV1AgQ2hpbGQgcGx1Z2luIG9uIHRoaXMgc2l0ZS4ifQ==</mainwp>',
    );
  });

  it('escapes / and non-ASCII the way PHP json_encode does', () => {
    const payload = encodeEnvelope({ url: 'http://x/é' }).slice(8, -9);
    expect(Buffer.from(payload, 'base64').toString()).toBe('{"url":"http:\\/\\/x\\/\\u00e9"}');
  });
});

describe('openReply', () => {
  it('finds the envelope after PHP notices and a BOM, and ignores the HTTP status', () => {
    const body = '\ufeff<b>Notice</b>: Undefined index: x in /var/www/x.php on line 3<br />' + encodeEnvelope({ ok: 1, list: [] });
    expect(openReply(reply(body, 500))).toEqual({ ok: 1, list: [] });
  });

  it('takes the first envelope up to the next closing marker', () => {
    expect(openReply(reply(encodeEnvelope({ a: 1 }) + encodeEnvelope({ b: 2 })))).toEqual({ a: 1 });
  });

  it('reports a body without the marker as no_marker with the dashboard text', () => {
    expect(failure('0', 400)).toMatchObject({ kind: 'no_marker', message: `${NO_MARKER_MESSAGE} (HTTP 400)` });
    expect(failure('<mainwp>abc', 200).kind).toBe('no_marker');
  });

  it('names Imunify360 and redirects', () => {
    expect(failure('<html>wsidchk</html>').message).toContain('Imunify360');
    expect(failure('', 301, 'https://www.site.test/').message).toContain('redirects to https://www.site.test/');
  });

  it('turns an error reply into child_error with plain text and the code', () => {
    const err = failure(
      encodeEnvelope({
        error: 'Public key already set. Please deactivate &amp; reactivate <strong>now</strong>.',
        error_code: 'REG_ERROR2',
      }),
    );
    expect(err).toMatchObject({ kind: 'child_error', childCode: 'REG_ERROR2' });
    expect(err.message).toMatch(/^ERROR: Public key already set\. Please deactivate & reactivate now\. /);
    // Deactivating no longer clears a link since child 5.3: the message says what does.
    expect(err.message).toContain('Clear Connection Data');
  });

  it('classifies signature trouble as auth_failed', () => {
    expect(
      failure(encodeEnvelope({ error: 'Authentication failed! Please deactivate and re-activate the MainWP Child plugin on this site.' }))
        .kind,
    ).toBe('auth_failed');
    expect(
      failure(
        encodeEnvelope({
          error: 'Authentication failed! Please deactivate &amp; re-activate the MainWP Child plugin on this child site and try again.',
          error_code: 'PARSE_ERROR1',
        }),
      ),
    ).toMatchObject({
      kind: 'auth_failed',
      childCode: 'PARSE_ERROR1',
    });
    expect(
      failure(
        encodeEnvelope({
          error:
            'To use OPENSSL_ALGO_SHA1 OpenSSL signature algorithm. Please deactivate &amp; reactivate the MainWP Child plugin on the child site and try again.',
        }),
      ).kind,
    ).toBe('auth_failed');
  });

  it('leaves an error object (theme_action) to the caller', () => {
    expect(openReply(reply(encodeEnvelope({ error: { is_activated_theme: 'x' } })))).toEqual({ error: { is_activated_theme: 'x' } });
  });

  it('rejects empty, non-base64, non-JSON and PHP-serialised payloads as bad_reply', () => {
    expect(failure('<mainwp></mainwp>').kind).toBe('bad_reply');
    expect(failure('<mainwp>!!not base64!!</mainwp>').kind).toBe('bad_reply');
    expect(failure(`<mainwp>${Buffer.from('{"a":').toString('base64')}</mainwp>`).kind).toBe('bad_reply');
    expect(failure(`<mainwp>${Buffer.from('a:1:{s:1:"a";i:1;}').toString('base64')}</mainwp>`).message).toContain('too old');
  });
});

describe('child text the store cannot keep', () => {
  it('drops NUL characters and turns unpaired surrogates into U+FFFD, in values and keys at any depth; keeps the rest', () => {
    const payload = Buffer.from(
      '{"plugins":[{"name":"a\\u0000b \\ud800 \\udc00x \\ud83d\\ude00"}],"k\\u0000":{"deep":["\\udbff"]},"lit":"\\\\u0000"}',
    ).toString('base64');
    expect(openReply(reply(`<mainwp>${payload}</mainwp>`))).toEqual({
      plugins: [{ name: 'ab \ufffd \ufffdx 😀' }],
      k: { deep: ['\ufffd'] },
      lit: '\\u0000',
    });
  });

  it('keeps a key named __proto__ a key while cleaning', () => {
    const payload = Buffer.from('{"__proto__":{"polluted":"\\u0000yes"}}').toString('base64');
    const value = openReply(reply(`<mainwp>${payload}</mainwp>`)) as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((value as { polluted?: unknown }).polluted).toBeUndefined();
  });
});
