// Checks an uploaded plugin or theme zip before any site sees it: a real zip (end of central directory, every entry's
// local header where the directory says), no encryption and no zip64, one top folder with a directory-slug name, no
// entry that climbs out (`..`, absolute paths, backslashes, drive letters), bounded entries and unpacked bytes (every
// entry is really inflated and counted, so a zip that lies about its sizes is caught), and a plugin header in a PHP
// file of the top folder, or a theme's style.css with "Theme Name:". Reads only what it is given; writes nothing.
import { createInflateRaw } from 'node:zlib';
import { ServiceError } from './errors.js';
/** What a package is (domain/package-source.ts names it too). */
export type PackageType = 'plugin' | 'theme';

export interface ZipBounds {
  /** Entries at most. */
  maxEntries: number;
  /** Bytes of all entries unpacked, at most (the zip-bomb bound). */
  maxUnpackedBytes: number;
}
export const ZIP_BOUNDS: ZipBounds = { maxEntries: 10_000, maxUnpackedBytes: 200 * 1024 * 1024 };

export interface ZipPackage {
  /** The one top folder: where the package installs. */
  folder: string;
  name: string;
  version: string;
  /** Plugins: the main file (folder/file.php); themes: the folder. */
  main: string;
  entries: number;
  unpacked_bytes: number;
}

interface Entry {
  name: string;
  method: number;
  flags: number;
  compressed: number;
  size: number;
  offset: number;
}

const refuse = (why: string) => new ServiceError('svc_invalid_package', `The zip is refused: ${why}`, 400);
const SLUG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
/** WordPress reads a plugin or theme header in the first 8 KB of the file. */
const HEADER_BYTES = 8192;

function entriesOf(buf: Buffer, bounds: ZipBounds): Entry[] {
  // End of central directory: 22 bytes plus a comment of up to 65,535.
  const from = Math.max(0, buf.length - 22 - 65_535);
  let eocd = -1;
  for (let i = buf.length - 22; i >= from; i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw refuse('it is not a zip file (no end of central directory).');
  const count = buf.readUInt16LE(eocd + 10);
  const cdSize = buf.readUInt32LE(eocd + 12);
  const cdOffset = buf.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdOffset === 0xffffffff) throw refuse('zip64 archives are not taken.');
  if (count === 0) throw refuse('it is empty.');
  if (count > bounds.maxEntries) throw refuse(`it has ${count} entries, more than ${bounds.maxEntries}.`);
  if (cdOffset + cdSize > eocd) throw refuse('its central directory lies outside the file.');
  const out: Entry[] = [];
  let p = cdOffset;
  for (let n = 0; n < count; n++) {
    if (p + 46 > eocd || buf.readUInt32LE(p) !== 0x02014b50) throw refuse('its central directory is damaged.');
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    const e: Entry = {
      flags: buf.readUInt16LE(p + 8),
      method: buf.readUInt16LE(p + 10),
      compressed: buf.readUInt32LE(p + 20),
      size: buf.readUInt32LE(p + 24),
      offset: buf.readUInt32LE(p + 42),
      name: buf.toString('utf8', p + 46, p + 46 + nameLen),
    };
    if (e.compressed === 0xffffffff || e.size === 0xffffffff || e.offset === 0xffffffff) throw refuse('zip64 entries are not taken.');
    out.push(e);
    p += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

/** The entry's stored bytes, after checking its local header. */
function dataOf(buf: Buffer, e: Entry): Buffer {
  const h = e.offset;
  if (h + 30 > buf.length || buf.readUInt32LE(h) !== 0x04034b50)
    throw refuse(`the entry ${e.name} has no local header where the directory says.`);
  const start = h + 30 + buf.readUInt16LE(h + 26) + buf.readUInt16LE(h + 28);
  if (start + e.compressed > buf.length) throw refuse(`the entry ${e.name} runs past the end of the file.`);
  return buf.subarray(start, start + e.compressed);
}

/** Inflates an entry, counting: past `budget` bytes it stops (the zip-bomb bound); answers the first `keep` bytes. */
function inflate(data: Buffer, e: Entry, budget: number, keep: number, limit: number): Promise<{ bytes: number; head: Buffer }> {
  if (e.method === 0) {
    if (data.length > budget) return Promise.reject(refuse(`it unpacks to more than ${limit} bytes (a zip bomb?).`));
    return Promise.resolve({ bytes: data.length, head: data.subarray(0, keep) });
  }
  if (e.method !== 8) return Promise.reject(refuse(`the entry ${e.name} uses compression method ${e.method} (only stored and deflate).`));
  return new Promise((resolve, reject) => {
    const z = createInflateRaw();
    let bytes = 0;
    const head: Buffer[] = [];
    let kept = 0;
    z.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (kept < keep) {
        head.push(chunk.subarray(0, keep - kept));
        kept += Math.min(chunk.length, keep - kept);
      }
      if (bytes > budget) {
        z.destroy();
        reject(refuse(`it unpacks to more than ${limit} bytes (a zip bomb?).`));
      }
    });
    z.on('error', () => reject(refuse(`the entry ${e.name} is not valid deflate data.`)));
    z.on('end', () => resolve({ bytes, head: Buffer.concat(head) }));
    z.end(data);
  });
}

function header(text: string, field: string): string {
  // WordPress's get_file_data(): an optional "<?php" on the line, comment marks, the field, a colon.
  const m = new RegExp(`^(?:[ \\t]*<\\?php)?[ \\t/*#@]*${field}:(.*)$`, 'mi').exec(text);
  return m ? m[1]!.replace(/\s*(?:\*\/|\?>).*/, '').trim() : '';
}

/** Checks a package zip of `type`; throws 400 svc_invalid_package naming the first problem. */
export async function inspectPackageZip(buf: Buffer, type: PackageType, bounds: ZipBounds = ZIP_BOUNDS): Promise<ZipPackage> {
  const entries = entriesOf(buf, bounds);
  const tops = new Set<string>();
  for (const e of entries) {
    if (e.flags & 1) throw refuse(`the entry ${e.name} is encrypted.`);
    const n = e.name;
    if (!n || n.includes('\\') || n.includes('\0') || n.startsWith('/') || /^[A-Za-z]:/.test(n))
      throw refuse(`the entry "${n.slice(0, 200)}" has an absolute or malformed path.`);
    if (n.split('/').some((part) => part === '..')) throw refuse(`the entry "${n.slice(0, 200)}" climbs out of its folder ("..").`);
    const top = n.split('/')[0]!;
    tops.add(top);
    if (!n.includes('/')) throw refuse(`the file "${n.slice(0, 200)}" lies outside a top folder.`);
  }
  if (tops.size !== 1) throw refuse(`it has ${tops.size} top folders (${[...tops].slice(0, 5).join(', ')}); a package has exactly one.`);
  const folder = [...tops][0]!;
  if (!SLUG.test(folder)) throw refuse(`its top folder "${folder.slice(0, 200)}" is not a plugin or theme folder name.`);
  // Every entry inflated and counted (sizes in the directory can lie); the header candidates' first bytes kept.
  let unpacked = 0;
  const heads = new Map<string, string>();
  for (const e of entries) {
    if (e.name.endsWith('/')) continue;
    const rest = e.name.slice(folder.length + 1);
    const candidate = type === 'plugin' ? /^[^/]+\.php$/i.test(rest) : rest === 'style.css';
    const { bytes, head } = await inflate(
      dataOf(buf, e),
      e,
      bounds.maxUnpackedBytes - unpacked,
      candidate ? HEADER_BYTES : 0,
      bounds.maxUnpackedBytes,
    );
    unpacked += bytes;
    if (candidate) heads.set(e.name, head.toString('utf8'));
  }
  for (const [file, text] of [...heads].sort(([a], [b]) => a.localeCompare(b))) {
    const name = header(text, type === 'plugin' ? 'Plugin Name' : 'Theme Name');
    if (name)
      return {
        folder,
        name: name.slice(0, 200),
        version: header(text, 'Version').slice(0, 50),
        main: type === 'plugin' ? file : folder,
        entries: entries.length,
        unpacked_bytes: unpacked,
      };
  }
  throw refuse(
    type === 'plugin'
      ? `no PHP file directly in ${folder}/ has a "Plugin Name:" header.`
      : `${folder}/style.css is missing or has no "Theme Name:" header.`,
  );
}
