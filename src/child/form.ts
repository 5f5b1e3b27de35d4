// src/child/form.ts — PHP-compatible form bodies: http_build_query encoding and $_POST-style bracket decoding.

/** A value the encoder accepts: null/undefined are left out, booleans become 1/0, arrays and objects nest with brackets. */
export type FormInput = string | number | boolean | null | undefined | readonly FormInput[] | { readonly [key: string]: FormInput };

/** What PHP puts in $_POST: strings, and ordered maps for bracket keys (lists are maps with "0", "1", ... keys). */
export type FormField = string | FormMap;
export interface FormMap {
  [key: string]: FormField;
}

// PHP's urlencode() leaves only [A-Za-z0-9_.-] alone and writes a space as '+'; rawurlencode() also keeps '~'
// and writes a space as %20. Working on UTF-8 bytes (not encodeURIComponent) also copes with lone surrogates.
const HEX = Array.from({ length: 256 }, (_, b) => '%' + b.toString(16).toUpperCase().padStart(2, '0'));
function isUnreserved(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x2d || b === 0x2e || b === 0x5f;
}

function percentEncode(s: string, raw: boolean): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    if (isUnreserved(b) || (raw && b === 0x7e)) out += String.fromCharCode(b);
    else if (b === 0x20 && !raw) out += '+';
    else out += HEX[b];
  }
  return out;
}

/** PHP urlencode(). */
export function urlencode(s: string): string {
  return percentEncode(s, false);
}

/** PHP rawurlencode(): the inner layer of the double-encoded `userpwd` (§7.2). */
export function rawurlencode(s: string): string {
  return percentEncode(s, true);
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

// Lenient like PHP: a '%' not followed by two hex digits stays as it is, and invalid UTF-8 never throws.
function percentDecode(s: string, plusIsSpace: boolean): string {
  if (!s.includes('%') && !(plusIsSpace && s.includes('+'))) return s;
  const bytes = Buffer.from(s, 'utf8');
  const out = Buffer.allocUnsafe(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b === 0x25 && i + 2 < bytes.length) {
      const hi = hexValue(bytes[i + 1]!);
      const lo = hexValue(bytes[i + 2]!);
      if (hi >= 0 && lo >= 0) {
        out[n++] = hi * 16 + lo;
        i += 2;
        continue;
      }
    }
    out[n++] = b === 0x2b && plusIsSpace ? 0x20 : b;
  }
  return out.toString('utf8', 0, n);
}

/** PHP urldecode(): '+' is a space. */
export function urldecode(s: string): string {
  return percentDecode(s, true);
}

/** PHP rawurldecode(): '+' stays '+'. The child applies it once more to `mainwpsignature` and `userpwd`. */
export function rawurldecode(s: string): string {
  return percentDecode(s, false);
}

function appendPairs(parts: string[], key: string, value: FormInput): void {
  if (value === null || value === undefined) return;
  if (typeof value === 'boolean') parts.push(`${key}=${value ? '1' : '0'}`);
  else if (typeof value === 'number') parts.push(`${key}=${urlencode(String(value))}`);
  else if (typeof value === 'string') parts.push(`${key}=${urlencode(value)}`);
  else if (Array.isArray(value)) value.forEach((item, i) => appendPairs(parts, `${key}%5B${i}%5D`, item));
  else for (const [k, v] of Object.entries(value)) appendPairs(parts, `${key}%5B${urlencode(k)}%5D`, v);
}

/** PHP http_build_query($data, '', '&'). */
export function encodeForm(data: { readonly [key: string]: FormInput }): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(data)) appendPairs(parts, urlencode(k), v);
  return parts.join('&');
}

// PHP's max_input_nesting_level: deeper keys are dropped, unless DecodeOptions.maxDepth asks for a refusal.
const PHP_MAX_DEPTH = 64;

// Splits `name[a][][b]` like PHP: the base name, then one segment per bracket pair ('' means "append").
function splitKey(key: string): { name: string; path: string[] } {
  const open = key.indexOf('[');
  const close = open < 0 ? -1 : key.indexOf(']', open);
  // PHP turns '.' and ' ' in the base name into '_', and so an unmatched '[' as well.
  if (open < 0 || close < 0) return { name: key.replace(/[. []/g, '_'), path: [] };
  const name = key.slice(0, open).replace(/[. ]/g, '_');
  const path: string[] = [];
  let pos = open;
  while (pos < key.length && key[pos] === '[') {
    const end = key.indexOf(']', pos);
    if (end < 0) break;
    path.push(key.slice(pos + 1, end));
    pos = end + 1;
  }
  return { name, path };
}

const INDEX = /^(0|[1-9]\d*)$/;

export interface DecodeOptions {
  /**
   * 'last': the last of a repeated key wins (PHP's $_POST, what a child reads). 'all': a repeated key gives the list of
   * its values (`k=1&k=2` → k: {0: '1', 1: '2'}), as OpenAPI's form/explode encoding means it.
   */
  repeated?: 'last' | 'all';
  /** Refuse (throw FormLimitError) more fields than this. */
  maxFields?: number;
  /** Refuse (throw FormLimitError) a key with more bracket pairs than this (else PHP's: deeper keys are dropped). */
  maxDepth?: number;
}

/** A form past a bound of DecodeOptions: the caller answers it with its own 4xx. `field`: the base name at fault. */
export class FormLimitError extends Error {
  constructor(
    readonly bound: 'fields' | 'depth',
    readonly field: string,
  ) {
    super(`form past its ${bound} bound`);
    this.name = 'FormLimitError';
  }
}

/**
 * Parses an application/x-www-form-urlencoded body (or query string) into what PHP would put in $_POST. Linear in the
 * body's length: each map keeps its next list index (PHP's nNextFreeElement) instead of scanning its keys per `[]`.
 */
export function decodeForm(body: string, opts: DecodeOptions = {}): FormMap {
  const all = opts.repeated === 'all';
  const maxFields = opts.maxFields ?? Infinity;
  const result: FormMap = Object.create(null);
  const next = new Map<FormMap, number>();
  const put = (map: FormMap, key: string, value: FormField) => {
    map[key] = value;
    if (INDEX.test(key)) next.set(map, Math.max(next.get(map) ?? 0, Number(key) + 1));
  };
  const append = (map: FormMap, value: FormField) => put(map, String(next.get(map) ?? 0), value);
  let fields = 0;
  let from = 0;
  while (from <= body.length) {
    let to = body.indexOf('&', from);
    if (to < 0) to = body.length;
    const pair = body.slice(from, to);
    from = to + 1;
    if (pair === '') continue;
    if (++fields > maxFields) throw new FormLimitError('fields', '');
    const eq = pair.indexOf('=');
    const { name, path } = splitKey(urldecode(eq < 0 ? pair : pair.slice(0, eq)));
    if (path.length > (opts.maxDepth ?? PHP_MAX_DEPTH)) {
      if (opts.maxDepth !== undefined) throw new FormLimitError('depth', name);
      continue;
    }
    if (name === '') continue;
    const value = urldecode(eq < 0 ? '' : pair.slice(eq + 1));
    let map = result;
    let key = name;
    for (const segment of path) {
      let child = map[key];
      if (child === undefined || typeof child === 'string') {
        const scalar = child;
        child = Object.create(null) as FormMap;
        // PHP drops `k=1` when `k[]=2` follows; with every value kept, it is the list's first.
        if (all && scalar !== undefined) put(child, '0', scalar);
        put(map, key, child);
      }
      map = child;
      key = segment === '' ? String(next.get(map) ?? 0) : segment;
    }
    const had = map[key];
    if (all && had !== undefined && path[path.length - 1] !== '') {
      // A repeated key: every value is kept, in order.
      if (typeof had === 'string') {
        const list = Object.create(null) as FormMap;
        put(list, '0', had);
        append(list, value);
        put(map, key, list);
      } else append(had, value);
    } else put(map, key, value);
  }
  return result;
}
