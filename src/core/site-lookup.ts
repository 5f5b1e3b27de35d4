// How a site is named by callers: a numeric id, or a URL / domain in any spelling
// ("Example.com", "https://www.example.com/", "example.com/blog"). Abilities reference §2.1.

/** The comparable form of a URL or domain: lower case, no scheme, no leading www., no trailing slashes. */
export function siteKey(urlOrDomain: string): string {
  return urlOrDomain
    .trim()
    .toLowerCase()
    .replace(/^[a-z][a-z0-9+.-]*:\/\//, '')
    .replace(/^www\./, '')
    .replace(/\/+$/, '');
}

/** A positive integer or a string of digits names an id; anything else is a domain. */
export function asSiteId(v: number | string): number | null {
  if (typeof v === 'number') return Number.isInteger(v) ? v : null;
  return /^\s*\d+\s*$/.test(v) ? Number(v) : null;
}

/** Storage form of a site URL: lower-case scheme and host, port and path kept, one trailing slash. */
export function normaliseSiteUrl(raw: string): string | null {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  if (!u.hostname) return null;
  const path = u.pathname.replace(/\/+$/, '');
  return `${u.protocol}//${u.host.toLowerCase()}${path}/`;
}
