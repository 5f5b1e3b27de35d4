// Where sitefleet may connect: never to loopback, private, link-local, CGNAT, multicast or unspecified
// addresses unless the operator allows it (--allow-private-sites), so that an API key holder cannot make
// the server probe its own network. Checked on the address a name resolves to, at every connection
// (a DNS lookup hook), and on IP literals before dialling. An IPv6 address that carries an IPv4 address (mapped,
// compatible, translated, NAT64, 6to4) is judged by the IPv4 address it leads to, and the IPv6 ranges no site can
// legitimately live in (local-use NAT64, Teredo, site-local, discard-only) are refused whole.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { ServiceError } from '../core/errors.js';

const BLOCKED = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  BLOCKED.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  // Site-local (deprecated by RFC 3879, still routed inside a site by some stacks): private in all but name.
  ['fec0::', 10],
  // Discard-only (RFC 6666).
  ['100::', 64],
  // Local-use NAT64 (RFC 8215): a translator inside the operator's own network, with the IPv4 address at a prefix
  // length only that network knows; nothing public lives there.
  ['64:ff9b:1::', 48],
  // Teredo (RFC 4380): a host running a Teredo client sends to the embedded (obfuscated) IPv4 address itself over
  // UDP, the public relays are gone and no web site is served from one. Refused whole rather than unwrapped.
  ['2001::', 32],
] as const)
  BLOCKED.addSubnet(net, bits, 'ipv6');

/** An IPv6 address in any spelling (embedded dotted IPv4, "::", upper case) as its eight 16-bit groups. */
function groupsOf(v6: string): number[] {
  // The WHATWG URL parser reads every IPv6 spelling and writes it as hex groups with at most one "::".
  const [head, tail] = new URL(`http://[${v6}]/`).hostname.slice(1, -1).split('::') as [string, string?];
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = part(head);
  const t = part(tail);
  return [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
}

const dotted = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;

/**
 * The IPv4 address an IPv6 address leads to, when it embeds one: IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96
 * (deprecated; :: and ::1 land in 0.0.0.0/8), IPv4-translated ::ffff:0:0:0/96 (RFC 6145), the NAT64 well-known
 * prefix 64:ff9b::/96 (RFC 6052; DNS64 hands these out for every IPv4-only site, so a public one must pass) and
 * 6to4 2002::/16 (RFC 3056). 'refuse' for the rest of 64:ff9b::/32, which RFC 6052 reserves to the /96 form.
 */
function embeddedIPv4(g: number[]): string | 'refuse' | null {
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && (g[5] === 0 || g[5] === 0xffff)) return dotted(g[6]!, g[7]!);
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return dotted(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b) return zero(2, 6) ? dotted(g[6]!, g[7]!) : 'refuse';
  if (g[0] === 0x2002) return dotted(g[1]!, g[2]!);
  return null;
}

/** Is this address one sitefleet must not dial by default? (An IPv6 address embedding an IPv4 one is judged as that.) */
export function isPrivateAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 4) return BLOCKED.check(bare, 'ipv4');
  if (family !== 6) return false;
  // A zone (fe80::1%eth0) names a link: local by definition.
  if (bare.includes('%')) return true;
  const g = groupsOf(bare);
  if (BLOCKED.check(g.map((x) => x.toString(16)).join(':'), 'ipv6')) return true;
  const v4 = embeddedIPv4(g);
  return v4 === 'refuse' || (v4 !== null && BLOCKED.check(v4, 'ipv4'));
}

export const BLOCKED_CODE = 'ERR_SITEFLEET_ADDRESS_NOT_ALLOWED';

/** The refusal names the host the caller gave, never the address it resolved to (that would map internal names). */
export function blockedError(host: string): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(
    `${host} is refused: it is a private or local address, which sitefleet connects to only when started with --allow-private-sites`,
  );
  e.code = BLOCKED_CODE;
  return e;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

export type LookupFunction = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/** Wraps a dns.lookup-shaped resolver so that it refuses blocked addresses (both the single and the `all` form). */
export function guardLookup(resolve: LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options }, (err, address: string | LookupAddress[], family?: number) => {
      if (err) return callback(err, address);
      const list = Array.isArray(address) ? address.map((a) => a.address) : [address];
      const bad = list.find(isPrivateAddress);
      if (bad) return callback(blockedError(hostname), address);
      callback(null, address, family);
    });
  };
}

/** The dns.lookup for net/tls/undici: the system resolver, guarded. */
export const guardedLookup: LookupFunction = guardLookup(dnsLookup as LookupFunction);

/** For IP literals, which net.connect dials without a lookup. Throws the blocked error. */
export function assertAllowedHost(hostname: string): void {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (isIP(bare) && isPrivateAddress(bare)) throw blockedError(hostname);
  if (bare.toLowerCase() === 'localhost' || bare.toLowerCase().endsWith('.localhost')) throw blockedError(hostname);
}

/**
 * A URL sitefleet will send to (a webhook receiver, a chat hook): absolute http(s), no credentials in it, and a host
 * the address policy allows (a name is checked again as it resolves). Answers the normalised URL; a 400 otherwise.
 */
export function outgoingUrl(raw: string, what: string, allowPrivate: boolean): string {
  let url: URL;
  const bad = () => new ServiceError('svc_invalid_url', `Invalid ${what} URL: use an absolute http:// or https:// URL.`, 400);
  try {
    url = new URL(raw.trim());
  } catch {
    throw bad();
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad();
  if (url.username || url.password) throw new ServiceError('svc_invalid_url', `A ${what} URL must not carry a user or password.`, 400);
  if (!allowPrivate) {
    try {
      assertAllowedHost(url.hostname);
    } catch (e) {
      throw new ServiceError('svc_address_not_allowed', (e as Error).message, 400);
    }
  }
  return url.href;
}
