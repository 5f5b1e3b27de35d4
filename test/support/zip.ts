// Test support: a zip file built in memory (local headers, central directory, end record), stored or deflated, with
// knobs for hostile zips: a declared size that lies, the encryption flag.
import { crc32, deflateRawSync } from 'node:zlib';

export interface ZipEntry {
  name: string;
  data?: string | Buffer;
  /** Default deflate; 'store' keeps the bytes as they are. */
  method?: 'store' | 'deflate';
  /** The uncompressed size the headers claim (default the real one). */
  declaredSize?: number;
  encrypted?: boolean;
}

export function makeZip(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const raw = Buffer.isBuffer(e.data) ? e.data : Buffer.from(e.data ?? '');
    const dir = e.name.endsWith('/');
    const method = dir || e.method === 'store' ? 0 : 8;
    const body = method === 8 ? deflateRawSync(raw) : raw;
    const name = Buffer.from(e.name);
    const crc = crc32(raw);
    const size = e.declaredSize ?? raw.length;
    const flags = e.encrypted ? 1 : 0;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(flags, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(flags, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    centrals.push(central, name);
    offset += 30 + name.length + body.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

/** A plugin zip as wordpress.org builds them: one folder, the main file with its header. */
export const pluginZip = (slug: string, version: string, name = `Up ${slug}`) =>
  makeZip([
    { name: `${slug}/` },
    { name: `${slug}/${slug}.php`, data: `<?php\n/*\n * Plugin Name: ${name}\n * Version: ${version}\n */\n` },
    { name: `${slug}/readme.txt`, data: `=== ${name} ===\n` },
  ]);
export const themeZip = (slug: string, version: string) =>
  makeZip([
    { name: `${slug}/style.css`, data: `/*\nTheme Name: Up ${slug}\nVersion: ${version}\n*/\n` },
    { name: `${slug}/index.php`, data: '<?php // Silence.\n' },
  ]);
