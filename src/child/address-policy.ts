// Where sitefleet may connect: never to loopback, private, link-local, CGNAT, multicast or unspecified
// addresses unless the operator allows it (--allow-private-sites), so that an API key holder cannot make
// the server probe its own network. Checked on the address a name resolves to, at every connection
// (a DNS lookup hook), and on IP literals before dialling.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

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
] as const)
  BLOCKED.addSubnet(net, bits, 'ipv6');

/** Is this address one sitefleet must not dial by default? (IPv4-mapped IPv6 is judged as IPv4.) */
export function isPrivateAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped) return BLOCKED.check(mapped[1]!, 'ipv4');
  const family = isIP(bare);
  if (family === 4) return BLOCKED.check(bare, 'ipv4');
  if (family === 6) return BLOCKED.check(bare, 'ipv6');
  return false;
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

/** A dns.lookup for net/tls/undici that refuses blocked addresses (both the single and the `all` form). */
export function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options }, (err, address: string | LookupAddress[], family?: number) => {
    if (err) return callback(err, address);
    const list = Array.isArray(address) ? address.map((a) => a.address) : [address];
    const bad = list.find(isPrivateAddress);
    if (bad) return callback(blockedError(hostname), address);
    callback(null, address, family);
  });
}

/** For IP literals, which net.connect dials without a lookup. Throws the blocked error. */
export function assertAllowedHost(hostname: string): void {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (isIP(bare) && isPrivateAddress(bare)) throw blockedError(hostname);
  if (bare.toLowerCase() === 'localhost' || bare.toLowerCase().endsWith('.localhost')) throw blockedError(hostname);
}
