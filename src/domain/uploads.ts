// Plugin and theme zips uploaded to sitefleet, checked (zip-check.ts) before they are kept, and served to the child
// sites from a signed, expiring, single-purpose link on sitefleet's public address: /packages/ID.EXPIRY.SIGNATURE.zip,
// an HMAC-SHA256 over "package-download|ID|EXPIRY" with a secret of the data dir. The link downloads that one zip,
// for LINK_TTL_S, and nothing else; it is made for each site's install as it starts. Uploads are kept KEEP_S.
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ServiceError } from '../core/errors.js';
import type { Config } from '../config.js';
import type { PackageType } from './package-source.js';
import { inspectPackageZip, ZIP_BOUNDS, type ZipBounds } from '../core/zip-check.js';

/** The largest zip taken (the multipart cap and the base64 bound). */
export const MAX_PACKAGE_BYTES = 50 * 1024 * 1024;
/** How long a download link works after it is made (one site's install starts with a fresh one). */
export const LINK_TTL_S = 3600;
/** How long an upload is kept for installs. */
export const KEEP_S = 24 * 3600;

export interface UploadRecord {
  upload_id: string;
  type: PackageType;
  folder: string;
  name: string;
  version: string;
  size: number;
  unpacked_bytes: number;
  entries: number;
  created_at: string;
  expires_at: string;
}

const ID = /^[0-9a-f]{32}$/;

export class PackageUploads {
  /** Where children reach this server (SITEFLEET_PUBLIC_URL, else the HTTP door's address); null: no HTTP door here. */
  publicBase: string | null = null;
  /** Tests move time. */
  now: () => number = () => Date.now();
  bounds: ZipBounds = ZIP_BOUNDS;
  private secretCache: Buffer | null = null;

  constructor(private readonly config: Config) {}

  private get dir(): string {
    return join(this.config.dataDir, 'packages');
  }

  /** The data dir's signing secret, made on first use (several processes on one data dir share it). */
  private secret(): Buffer {
    if (this.secretCache) return this.secretCache;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const file = join(this.dir, '.secret');
    try {
      this.secretCache = readFileSync(file);
    } catch {
      try {
        writeFileSync(file, randomBytes(32), { mode: 0o600, flag: 'wx' });
      } catch {
        /* another process made it first */
      }
      this.secretCache = readFileSync(file);
    }
    return this.secretCache;
  }

  private sign(id: string, expires: number): Buffer {
    return createHmac('sha256', this.secret()).update(`package-download|${id}|${expires}`).digest();
  }

  /** Checks the zip (400 svc_invalid_package) and keeps it; old uploads are dropped on the way. */
  async save(zip: Buffer, type: PackageType): Promise<UploadRecord> {
    if (zip.length > MAX_PACKAGE_BYTES)
      throw new ServiceError('svc_upload_too_large', `The uploaded file is larger than ${MAX_PACKAGE_BYTES / 1024 / 1024} MB.`, 413);
    const pkg = await inspectPackageZip(zip, type, this.bounds);
    this.sweep();
    const id = randomUUID().replace(/-/g, '');
    const now = this.now();
    const rec: UploadRecord = {
      upload_id: id,
      type,
      folder: pkg.folder,
      name: pkg.name,
      version: pkg.version,
      size: zip.length,
      unpacked_bytes: pkg.unpacked_bytes,
      entries: pkg.entries,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + KEEP_S * 1000).toISOString(),
    };
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(this.dir, `${id}.zip`), zip, { mode: 0o600 });
    writeFileSync(join(this.dir, `${id}.json`), JSON.stringify(rec), { mode: 0o600 });
    return rec;
  }

  /** An upload still kept, or 404 svc_upload_not_found. */
  get(id: string): UploadRecord {
    const notFound = () =>
      new ServiceError('svc_upload_not_found', `No upload ${id.slice(0, 40)} (uploads are kept ${KEEP_S / 3600} hours).`, 404);
    if (!ID.test(id)) throw notFound();
    let rec: UploadRecord;
    try {
      rec = JSON.parse(readFileSync(join(this.dir, `${id}.json`), 'utf8')) as UploadRecord;
    } catch {
      throw notFound();
    }
    if (Date.parse(rec.expires_at) <= this.now()) throw notFound();
    return rec;
  }

  /** A fresh download link for one upload; 400 when this process has no public address to give the children. */
  link(id: string): string {
    if (!this.publicBase)
      throw new ServiceError(
        'svc_upload_not_served',
        'This process serves no HTTP door, so child sites cannot download an upload from it: install through `sitefleet serve`.',
        400,
      );
    const expires = Math.floor(this.now() / 1000) + LINK_TTL_S;
    return `${this.publicBase}/packages/${id}.${expires}.${this.sign(id, expires).toString('base64url')}.zip`;
  }

  /** The file a download link names, or null when the link is malformed, forged, expired or its upload gone. */
  open(token: string): { path: string; size: number } | null {
    const m = /^([0-9a-f]{32})\.(\d{1,12})\.([A-Za-z0-9_-]{43})\.zip$/.exec(token);
    if (!m) return null;
    const [, id, exp, sig] = m;
    const expires = Number(exp);
    if (expires * 1000 <= this.now()) return null;
    const given = Buffer.from(sig!, 'base64url');
    const want = this.sign(id!, expires);
    if (given.length !== want.length || !timingSafeEqual(given, want)) return null;
    try {
      this.get(id!);
      const path = join(this.dir, `${id}.zip`);
      return { path, size: statSync(path).size };
    } catch {
      return null;
    }
  }

  /** Drops uploads past their keep time. */
  private sweep(): void {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    for (const n of names) {
      const m = /^([0-9a-f]{32})\.json$/.exec(n);
      if (!m) continue;
      try {
        this.get(m[1]!);
      } catch {
        rmSync(join(this.dir, `${m[1]}.zip`), { force: true });
        rmSync(join(this.dir, n), { force: true });
      }
    }
  }
}
