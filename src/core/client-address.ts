// Who a request comes from: the peer's address, or — when the peer is a proxy the operator trusts (--trust-proxy) —
// the client its X-Forwarded-For names. The throttle counts failures per this address and the request log prints it.
import { BlockList, isIP } from 'node:net';

/** One matcher per trust list (the config is frozen, so the list's identity is stable for the life of the process). */
const matchers = new WeakMap<readonly string[], BlockList>();

function matcher(trusted: readonly string[]): BlockList {
  let m = matchers.get(trusted);
  if (!m) {
    m = new BlockList();
    for (const entry of trusted) {
      const [addr, bits] = entry.split('/') as [string, string];
      m.addSubnet(addr, Number(bits), isIP(addr) === 4 ? 'ipv4' : 'ipv6');
    }
    matchers.set(trusted, m);
  }
  return m;
}

/** An IPv4-mapped IPv6 address (`::ffff:1.2.3.4` as a dual-stack socket reports IPv4 peers, or `::ffff:102:304`) as IPv4. */
function plain(ip: string): string {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (dotted) return dotted[1]!;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (!hex) return ip;
  const [hi, lo] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

/** One X-Forwarded-For element as an address (`[v6]:port` and `v4:port` lose the port), or null if it is none. */
function hopAddress(element: string): string | null {
  let s = element.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(s);
  if (bracketed) s = bracketed[1]!;
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(s)) s = s.slice(0, s.indexOf(':'));
  const family = isIP(s);
  if (family === 4) return s;
  // The URL parser writes every spelling of an IPv6 address the same way (a throttle key is one per address).
  if (family === 6 && !s.includes('%')) return plain(new URL(`http://[${s}]/`).hostname.slice(1, -1));
  return null;
}

/**
 * The client address of a request. Without a trusted peer it is the peer itself, whatever the request's headers say.
 * From a trusted peer, X-Forwarded-For is walked from the right (the element the nearest proxy added) past every
 * trusted address: the first untrusted one is the client. An element that is not an address stops the walk at the
 * last address believed, so garbage in the header can never turn into a fresh throttle key. Each element costs one
 * check, over a header the server bounds at 16 KB.
 */
export function clientAddress(peer: string | undefined, forwardedFor: string | string[] | undefined, trusted: readonly string[]): string {
  let client = plain(peer ?? '');
  if (!trusted.length || forwardedFor === undefined || !isIP(client)) return client;
  const list = matcher(trusted);
  const check = (ip: string) => list.check(ip, isIP(ip) === 4 ? 'ipv4' : 'ipv6');
  if (!check(client)) return client;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hopAddress(hops[i]!);
    if (!hop) return client;
    client = hop;
    if (!check(hop)) return hop;
  }
  return client;
}
