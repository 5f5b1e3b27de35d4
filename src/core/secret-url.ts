// URLs that are secrets: a chat hook URL (Slack, Teams, Discord) or any webhook receiver's carries its credential in the
// path or query — whoever holds it can post there. Only a caller that may write sees one whole; others see the scheme
// and host, the rest masked.
import { mayConfigure, type Principal } from './principal.js';

export const MASK = '***';

/** The scheme and host (with port) of a URL, its path, query and fragment replaced by MASK. */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}/${MASK}`;
  } catch {
    return MASK;
  }
}

/**
 * A secret-bearing URL as `p` may see it: whole for an administrator, a write key or a local process that is not
 * read-only (who may change it anyway); masked for a read key, a delete key, a viewer, a manager, a scoped key or a
 * read-only MCP session.
 */
export function secretUrlFor(p: Principal, url: string): { url: string; url_masked: boolean } {
  return mayConfigure(p) ? { url, url_masked: false } : { url: maskUrl(url), url_masked: true };
}
