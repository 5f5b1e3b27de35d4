// src/child/envelope.ts — the `<mainwp>base64(JSON)</mainwp>` reply envelope: encode (child side), find and decode (§3).
import { cleanTexts } from '../core/storable-text.js';
import { ChildError, NO_MARKER_MESSAGE, childErrorFromReply } from './child-error.js';

const OPEN = '<mainwp>';
const CLOSE = '</mainwp>';

/** PHP json_encode() with default flags: `/` escaped as `\/` and non-ASCII as \uXXXX (only ever inside strings). */
export function phpJson(value: unknown): string {
  const json = JSON.stringify(value).replaceAll('/', '\\/');
  return /[\u007f-\uffff]/.test(json)
    ? json.replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
    : json;
}

export function encodeEnvelope(value: unknown): string {
  return `${OPEN}${Buffer.from(phpJson(value)).toString('base64')}${CLOSE}`;
}

/** The base64 text between the first `<mainwp>` and the next `</mainwp>`, or null; other output around it is ignored. */
export function findEnvelope(body: Buffer): string | null {
  const start = body.indexOf(OPEN);
  if (start < 0) return null;
  const end = body.indexOf(CLOSE, start + OPEN.length);
  if (end < 0) return null;
  return body.toString('latin1', start + OPEN.length, end);
}

/**
 * A JSON escape of NUL or of a surrogate (`\u0000`, `\ud800`): the only ways a JSON text can put into its strings what
 * the store cannot keep (raw NUL is invalid JSON; UTF-8 decoding never yields a lone surrogate). Paired surrogates
 * match too and are kept by the cleaning; this is only the cheap test that decides whether to clean.
 */
const SUSPECT_ESCAPE = /\\u(0000|d[89a-f])/i;

/**
 * The JSON value of child text: a child's strings (plugin names, versions, user names…) go everywhere sitefleet keeps
 * or shows them, so NUL characters are dropped and unpaired surrogates become U+FFFD here, once, for every reply.
 */
export function parseChildJson(text: string): unknown {
  const value = JSON.parse(text) as unknown;
  return SUSPECT_ESCAPE.test(text) ? cleanTexts(value) : value;
}

/** The JSON value inside an envelope payload; an empty, non-base64, non-JSON or PHP-serialised payload is a bad reply. */
export function decodeEnvelope(payload: string): unknown {
  // Node's base64 decoder skips foreign characters like PHP's; whatever is not JSON afterwards fails below.
  const text = Buffer.from(payload, 'base64').toString('utf8');
  if (text.trim() === '') throw new ChildError('bad_reply', 'Invalid reply from the child site: empty envelope.');
  if (/^(a|s|i|b|O|d):|^N;/.test(text)) {
    throw new ChildError('bad_reply', 'The MainWP Child plugin on this site is too old (PHP-serialised reply); update it to 4.5 or newer.');
  }
  try {
    return parseChildJson(text);
  } catch {
    throw new ChildError('bad_reply', 'Invalid reply from the child site: the envelope does not hold JSON.');
  }
}

export interface HttpReply {
  status: number;
  location: string | null;
  body: Buffer;
}

/**
 * Classifies one HTTP reply (§3.2, §3.4): no envelope → no_marker (HTTP status ignored otherwise, as the dashboard does);
 * envelope with a string `error` → child_error / auth_failed; anything else → the decoded value for the caller to validate.
 */
export function openReply(reply: HttpReply): unknown {
  const payload = findEnvelope(reply.body);
  if (payload === null) {
    let hint = ` (HTTP ${reply.status})`;
    if (reply.status >= 300 && reply.status < 400) {
      hint = ` (HTTP ${reply.status}: the site redirects to ${reply.location ?? 'another address'}; update the site URL)`;
    } else if (reply.body.includes('wsidchk')) {
      hint = ' (blocked by Imunify360: whitelist the dashboard IP on the child site)';
    }
    throw new ChildError('no_marker', NO_MARKER_MESSAGE + hint);
  }
  const value = decodeEnvelope(payload);
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const { error, error_code: code } = value as { error?: unknown; error_code?: unknown };
    if (typeof error === 'string') throw childErrorFromReply(error, typeof code === 'string' ? code : undefined);
  }
  return value;
}
