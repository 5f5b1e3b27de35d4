// src/child/child-error.ts — the one error type of the connector, and how a child's error reply maps onto it (§3.3, §3.4).

export type ChildFailureKind =
  'transport' | 'timeout' | 'no_marker' | 'child_error' | 'auth_failed' | 'bad_reply' | 'too_large' | 'blocked';

/** The dashboard's NOMAINWP text; services store it as the site's sync error. */
export const NO_MARKER_MESSAGE =
  'MainWP Child plugin not detected or could not be reached! Ensure the MainWP Child plugin is installed and activated on the child site, and there are no security rules blocking requests.';

export class ChildError extends Error {
  override readonly name = 'ChildError';
  readonly kind: ChildFailureKind;
  /** The child's `error_code` (REG_ERROR7, PARSE_ERROR1, reconnect_failed, child_plugin_incompatible, ...). */
  readonly childCode?: string;

  constructor(kind: ChildFailureKind, message: string, childCode?: string) {
    super(message);
    this.kind = kind;
    if (childCode !== undefined) this.childCode = childCode;
  }
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#039': "'" };

/** Child messages are HTML (`&amp;`, `<br/>`, links); they are untrusted, so callers get plain text only. */
export function htmlToText(html: string): string {
  return html
    .replace(/<br\s*\/?>/gi, ' ')
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+|#039);/gi, (whole, name: string) => {
      const lower = name.toLowerCase();
      if (ENTITIES[lower] !== undefined) return ENTITIES[lower]!;
      const code = lower.startsWith('#x') ? parseInt(lower.slice(2), 16) : lower.startsWith('#') ? parseInt(lower.slice(1), 10) : NaN;
      return Number.isInteger(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    })
    .replace(/\s+/g, ' ')
    .trim();
}

// Codes and stable English fragments that mean "this key no longer opens the site" (§3.3): the user must reconnect.
const AUTH_CODES = new Set(['PARSE_ERROR1', 'PARSE_ERROR2']);
const AUTH_FRAGMENTS = ['Authentication failed', 'OPENSSL_ALGO_SHA1'];

// Since child 5.3 deactivating the plugin no longer clears a connection, whatever the child's text says (§7.8).
const LINKED_ADVICE =
  ' To link it to sitefleet, press "Clear Connection Data" under Settings → MainWP Child on the child site, or reconnect from the dashboard it is linked to.';

/** A ChildError for an `{error, error_code?}` reply; the message reads "ERROR: <text>" like the dashboard's sync error. */
export function childErrorFromReply(message: string, code: string | undefined): ChildError {
  const auth = (code !== undefined && AUTH_CODES.has(code)) || AUTH_FRAGMENTS.some((f) => message.includes(f));
  const linked = code === 'REG_ERROR2' || message.includes('already contains a link');
  return new ChildError(
    auth ? 'auth_failed' : 'child_error',
    `ERROR: ${htmlToText(message) || 'Undefined error'}${linked ? LINKED_ADVICE : ''}`,
    code,
  );
}
