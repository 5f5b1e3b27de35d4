// Text the store can keep: no NUL character and no unpaired UTF-16 surrogate. PostgreSQL's jsonb refuses both (issue 35),
// and neither is text anyone means to send, so every door refuses them (the registry checks each input), text from child
// sites is cleaned of them, and both store engines refuse a record or blob that still holds one.

/** Deepest nesting checked; no input or record of ours comes near it, and it bounds the walk (a cycle ends here). */
export const MAX_TEXT_DEPTH = 64;

import { errors } from './errors.js';

// Without the `u` flag a regex sees UTF-16 code units: a high surrogate not followed by a low one, or a low one not
// preceded by a high one, is unpaired.
const UNPAIRED = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNPAIRED_ALL = new RegExp(UNPAIRED.source, 'g');
// eslint-disable-next-line no-control-regex -- finding NUL is the point
const BAD = /[\u0000\ud800-\udfff]/;
const BAD_ALL = new RegExp(BAD.source, 'g');

const hex = (c: string) => `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;

/** What is wrong with a string for the store ("holds a NUL character (U+0000)"), or null when nothing is. */
export function textFault(s: string): string | null {
  if (!BAD.test(s)) return null; // the common case: one scan, no surrogate at all
  if (s.includes('\u0000')) return 'holds a NUL character (U+0000), which text may not contain';
  const m = UNPAIRED.exec(s);
  return m ? `holds an unpaired surrogate (${hex(m[0])}), which is not valid Unicode text` : null;
}

/** Where a fault is in a value: its path of keys and indexes, and what is wrong there. */
export interface TextFault {
  path: Array<string | number>;
  fault: string;
}

/** Arrays and plain objects (JSON's own shapes) are looked into; class instances (an upload stream) are not. */
function isPlain(value: unknown): value is object {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return Array.isArray(value) || proto === Object.prototype || proto === null;
}

/**
 * Whether `value` holds a string (value or object key) the store cannot keep, or nests deeper than MAX_TEXT_DEPTH: the
 * walk every write pays, so it allocates nothing (the path is found only when there is a fault).
 */
function hasTextFault(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return BAD.test(value) && textFault(value) !== null;
  if (!isPlain(value)) return false;
  if (depth >= MAX_TEXT_DEPTH) return true;
  if (Array.isArray(value)) {
    for (const v of value) if (hasTextFault(v, depth + 1)) return true;
    return false;
  }
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    if ((BAD.test(k) && textFault(k) !== null) || hasTextFault((value as Record<string, unknown>)[k], depth + 1)) return true;
  }
  return false;
}

/** The first string (value or object key) in `value` that the store cannot keep, or null. */
export function findTextFault(value: unknown): TextFault | null {
  return hasTextFault(value, 0) ? locate(value, []) : null;
}

function locate(value: unknown, path: Array<string | number>): TextFault | null {
  if (typeof value === 'string') {
    const fault = textFault(value);
    return fault ? { path, fault } : null;
  }
  if (!isPlain(value)) return null;
  if (path.length >= MAX_TEXT_DEPTH) return { path, fault: `is nested more than ${MAX_TEXT_DEPTH} levels deep` };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const f = locate(value[i], [...path, i]);
      if (f) return f;
    }
    return null;
  }
  for (const [k, v] of Object.entries(value)) {
    const keyFault = textFault(k);
    if (keyFault) return { path, fault: `has a key "${printable(k)}" that ${keyFault}` };
    const f = locate(v, [...path, k]);
    if (f) return f;
  }
  return null;
}

/** A key shown in a message: NULs and surrogates spelled as \uXXXX, so that the message itself is clean text. */
export function printable(s: string): string {
  return s.replace(BAD_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** `s` without NUL characters and with every unpaired surrogate replaced by U+FFFD (what a UTF-8 decoder would do). */
export function cleanText(s: string): string {
  if (!BAD.test(s)) return s;
  return s.replaceAll('\u0000', '').replace(UNPAIRED_ALL, '\ufffd');
}

/** `value` with every string and object key cleaned (cleanText); values without a fault are returned as they are. */
export function cleanTexts<T>(value: T, depth = 0): T {
  if (typeof value === 'string') return cleanText(value) as T;
  if (!isPlain(value) || depth > MAX_TEXT_DEPTH) return value;
  if (Array.isArray(value)) return value.map((v: unknown) => cleanTexts(v, depth + 1)) as T;
  const out: Record<string, unknown> = {};
  // defineProperty, not assignment: a key "__proto__" (JSON.parse makes it an own key) stays a key.
  for (const [k, v] of Object.entries(value)) {
    Object.defineProperty(out, cleanText(k), { value: cleanTexts(v, depth + 1), enumerable: true, writable: true, configurable: true });
  }
  return out as T;
}

/**
 * Refuses an ability's input that holds text the store cannot keep, naming the parameter (`input[tags][0]` for the
 * abilities API and MCP, `tags[0]` for REST) and the problem: 400, whichever door it came through.
 */
export function assertStorableInput(ability: string, input: unknown): void {
  const f = findTextFault(input);
  if (!f) return;
  const label = (root: string, path: Array<string | number>) => path.reduce<string>((acc, k) => `${acc}[${String(k)}]`, root);
  const [first, ...rest] = f.path;
  const param = first === undefined ? undefined : String(first);
  throw errors.abilityInput(
    ability,
    `${label('input', f.path)} ${f.fault}.`,
    param,
    `${param === undefined ? 'input' : label(param, rest)} ${f.fault}.`,
  );
}
