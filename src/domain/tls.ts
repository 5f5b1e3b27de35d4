// The TLS certificate a site presents, as sitefleet sees it: one handshake to the site's host (no HTTP request,
// no child involved), trusted against Node's CA store (plus NODE_EXTRA_CA_CERTS). Never throws.
import { isIP } from 'node:net';
import { connect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { assertAllowedHost, guardedLookup } from '../child/address-policy.js';

export interface TlsStatus {
  /** The chain is trusted, the name matches the host, and the certificate is within its dates. */
  valid: boolean;
  /** notAfter as YYYY-MM-DD (UTC); null when no certificate was seen (http: site, nothing answered). */
  expires: string | null;
  /** Why it is not valid (Node's code, e.g. DEPTH_ZERO_SELF_SIGNED_CERT, or the connection error); null when valid. */
  error: string | null;
}

export interface TlsCheckOptions {
  /** Whole handshake budget (default 5 s): a security read must not hang on a dead host. */
  timeoutMs?: number;
  /** Extra trusted CAs (tests). */
  ca?: ConnectionOptions['ca'];
  /** Reach loopback and private addresses too (address-policy.ts; default false). */
  allowPrivate?: boolean;
}

const day = (d: string): string | null => {
  const ms = Date.parse(d);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString().slice(0, 10);
};

export function certificateStatus(siteUrl: string, opts: TlsCheckOptions = {}): Promise<TlsStatus> {
  let url: URL;
  try {
    url = new URL(siteUrl);
  } catch {
    return Promise.resolve({ valid: false, expires: null, error: 'invalid URL' });
  }
  if (url.protocol !== 'https:') return Promise.resolve({ valid: false, expires: null, error: 'not served over https' });
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port ? Number(url.port) : 443;
  return new Promise<TlsStatus>((resolve) => {
    let socket: TLSSocket | undefined;
    let settled = false;
    const finish = (s: TlsStatus) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket?.destroy();
      resolve(s);
    };
    const timer = setTimeout(() => finish({ valid: false, expires: null, error: 'timeout' }), opts.timeoutMs ?? 5_000);
    try {
      if (!opts.allowPrivate) assertAllowedHost(host);
      // rejectUnauthorized off so that an untrusted certificate is still read (its dates); `authorized` says
      // whether the chain and the host name check passed.
      socket = connect({
        host,
        port,
        servername: isIP(host) ? undefined : host,
        rejectUnauthorized: false,
        ca: opts.ca,
        ...(opts.allowPrivate ? {} : { lookup: guardedLookup }),
      });
    } catch (e) {
      return finish({ valid: false, expires: null, error: (e as Error).message });
    }
    const s = socket;
    s.once('secureConnect', () => {
      const cert = s.getPeerCertificate();
      const expires = cert && cert.valid_to ? day(cert.valid_to) : null;
      const error = s.authorized ? null : String(s.authorizationError ?? 'certificate not trusted');
      finish({ valid: s.authorized && expires !== null, expires, error });
    });
    s.once('error', (e: NodeJS.ErrnoException) => finish({ valid: false, expires: null, error: e.code ?? e.message }));
  });
}
