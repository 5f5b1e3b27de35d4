// Test support: a real DNS server on a loopback UDP port that answers A and AAAA queries from a table (name → addresses),
// for tests of what sitefleet does with the addresses a name resolves to. NXDOMAIN for a name it does not know.
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { isIP } from 'node:net';

/** An address as the bytes a DNS record carries (4 for IPv4, 16 for IPv6 in any spelling). */
function addressBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  const [head, tail] = new URL(`http://[${ip}]/`).hostname.slice(1, -1).split('::') as [string, string?];
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = part(head);
  const t = part(tail);
  const groups = [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(g, i * 2));
  return out;
}

export async function startDnsServer(records: Map<string, string[]>): Promise<{ server: string; close(): Promise<void> }> {
  const socket = createSocket('udp4');
  socket.on('message', (query, peer) => {
    if (query.length < 12) return;
    let at = 12;
    const labels: string[] = [];
    while (at < query.length && query[at] !== 0) {
      labels.push(query.subarray(at + 1, at + 1 + query[at]!).toString('ascii'));
      at += 1 + query[at]!;
    }
    const questionEnd = at + 5; // the terminating zero, QTYPE, QCLASS
    if (questionEnd > query.length) return;
    const type = query.readUInt16BE(at + 1);
    const known = records.get(labels.join('.').toLowerCase());
    const family = type === 28 ? 6 : type === 1 ? 4 : 0;
    const answers = (known ?? []).filter((a) => isIP(a) === family).map(addressBytes);
    const header = Buffer.alloc(12);
    header.writeUInt16BE(query.readUInt16BE(0), 0);
    header.writeUInt16BE(known ? 0x8180 : 0x8183, 2); // a response, recursion available; NXDOMAIN when unknown
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    const rrs = answers.map((rdata) => {
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      rr.writeUInt16BE(type, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(60, 6);
      rr.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([rr, rdata]);
    });
    socket.send(Buffer.concat([header, query.subarray(12, questionEnd), ...rrs]), peer.port, peer.address);
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  return {
    server: `127.0.0.1:${socket.address().port}`,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
