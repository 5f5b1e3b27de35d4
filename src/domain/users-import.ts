// CSV import of users (import-users-v1, REST POST /users/import). Rows stream out of csv-parse and are imported a
// bounded number at a time, so memory stays flat whatever the file's length; each row is validated and imported
// on its own, and a bad row fails alone with its line number (the physical line it starts on).
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { CsvError, Info, Parser } from 'csv-parse';
import type { z } from 'zod';
import type { SkippedSite } from '../core/results.js';
import { ServiceError } from '../core/errors.js';
import { clip } from '../child/snapshot.js';
import { log } from '../log.js';
import type { SiteRecord } from '../store/records.js';
import { skipNote, type FleetCall, type SiteSelectorService } from './selectors.js';
import type { SiteService } from './sites.js';
import type { TagService } from './tags.js';
import type { Config } from '../config.js';
import { USER_ROLES, generatePassword, isEmail, type UserRole } from './users.js';

/** The spec's ten columns, in order. */
export const CSV_COLUMNS = [
  'username',
  'email',
  'first_name',
  'last_name',
  'user_url',
  'password',
  'send_password',
  'role',
  'select_sites',
  'select_groups',
] as const;
/** Upload cap of the REST import, and of CSV text given to the ability. */
export const MAX_CSV_BYTES = 20 * 1024 * 1024;
/** Rows one import reads; past it the rest of the file is not imported (and says so). */
export const MAX_IMPORT_ROWS = 50_000;
/** Failed rows listed in an answer (the first ones, by line); all are counted. */
export const MAX_FAILURES_LISTED = 100;
/** Sites listed per failed row (failed_sites, created_sites); the rest are counted in more_sites. */
const MAX_SITES_LISTED = 20;
// A user row is a few hundred bytes; a record this long is an unclosed quote swallowing the file.
const MAX_ROW_BYTES = 64 * 1024;
// Binary files (a spreadsheet saved as .xlsx, UTF-16 text) are told apart from CSV by their first bytes.
const SNIFF_BYTES = 8 * 1024;
// Codes after which a site is not tried again within one import: it would fail the same way, row after row.
const SITE_DOWN = new Set([
  'svc_child_unreachable',
  'svc_child_timeout',
  'svc_child_not_detected',
  'svc_child_auth_failed',
  'svc_site_keys_missing',
]);

/**
 * A CSV file the REST door is streaming (multipart csv_file). Built by the door only, never from JSON input.
 * `lateFields` settles once the whole upload has been read, with the form fields that came after the file.
 */
export class CsvUpload {
  constructor(
    readonly stream: Readable,
    readonly lateFields: Promise<Record<string, string>> = Promise.resolve({}),
  ) {}
}

type SiteNote = { site_id: number; site_url: string };
export interface ImportFailure {
  line_number: number;
  username: string;
  email: string;
  error: string;
  /** Sites the child refused or could not be reached on (rows that got as far as the children). */
  failed_sites?: Array<SiteNote & { code: string; message: string }>;
  /** Sites the user was created on although others failed. */
  created_sites?: Array<SiteNote & { user_id: number }>;
  /** Sites of this row left out of failed_sites and created_sites (each lists at most 20). */
  more_sites?: number;
}

export interface ImportResult {
  total: number;
  success_count: number;
  failed_count: number;
  /** The first MAX_FAILURES_LISTED failed rows by line number. */
  failed_users: ImportFailure[];
  /** More rows failed than failed_users lists (failed_count has them all). */
  failed_users_truncated: boolean;
  /** Set when the import stopped before the end of the file (an unreadable record, the row cap): nothing from that line on was imported. */
  stopped?: { line_number: number; reason: string };
  /** Sites named by rows but left out because they are disconnected or suspended. */
  skipped_sites: z.infer<typeof SkippedSite>[];
}

/** CRLF and lone CR become LF before csv-parse (its line count is off for CRLF inside quotes); refuses binary files. */
class NormaliseText extends Transform {
  private pendingCR = false;
  private sniffed = 0;

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    if (this.sniffed < SNIFF_BYTES) {
      const head = chunk.subarray(0, SNIFF_BYTES - this.sniffed);
      const utf16 =
        this.sniffed === 0 && head.length >= 2 && ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff));
      if (utf16) return callback(new ServiceError('svc_invalid_file_type', 'The file is UTF-16 text; save it as CSV UTF-8.', 400));
      if (head.includes(0))
        return callback(
          new ServiceError('svc_invalid_file_type', 'The file is not CSV text (it holds binary data); save it as CSV UTF-8.', 400),
        );
      this.sniffed += head.length;
    }
    const out = Buffer.allocUnsafe(chunk.length + 1);
    let n = 0;
    let i = 0;
    if (this.pendingCR) {
      out[n++] = 0x0a;
      this.pendingCR = false;
      if (chunk[0] === 0x0a) i = 1;
    }
    for (; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (b !== 0x0d) out[n++] = b;
      else if (i + 1 === chunk.length) this.pendingCR = true;
      else {
        out[n++] = 0x0a;
        if (chunk[i + 1] === 0x0a) i++;
      }
    }
    callback(null, out.subarray(0, n));
  }

  override _flush(callback: TransformCallback): void {
    callback(null, this.pendingCR ? Buffer.from([0x0a]) : undefined);
  }
}

type ParsedRecord = { record: string[]; info: Info } | { fatal: CsvError };

/**
 * csv-parse whose fatal error (an unclosed quote, an oversized record) arrives as a last item after the records
 * before it: a plain Parser errors, which makes a stream consumer drop records already parsed. Made when a CSV is first
 * read: csv-parse is imported then, not at start (every process, each CLI command, paid about 25 ms for it).
 */
let RecordParser: (new () => Parser) | undefined;
async function recordParser(): Promise<Parser> {
  if (!RecordParser) {
    const { Parser: Base } = await import('csv-parse');
    RecordParser = class extends Base {
      constructor() {
        super({
          bom: true,
          info: true,
          record_delimiter: '\n',
          relax_column_count: true,
          relax_quotes: true,
          ltrim: true,
          skip_empty_lines: true,
          max_record_size: MAX_ROW_BYTES,
        });
      }

      override _transform(chunk: Buffer, enc: BufferEncoding, callback: TransformCallback): void {
        super._transform(chunk, enc, (err?: Error | null) => this.settle(err, callback));
      }

      override _flush(callback: TransformCallback): void {
        super._flush((err?: Error | null) => this.settle(err, callback));
      }

      private settle(err: Error | null | undefined, callback: TransformCallback): void {
        if (err) {
          this.push({ fatal: err });
          this.push(null);
        }
        callback();
      }
    };
  }
  return new RecordParser();
}

type Row = { line: number; fields: string[] } | { line: number; fatal: string };

const newlines = (s: string): number => {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
};

/**
 * Records of a CSV byte stream with the line each starts on; source errors (413, upload cut) are thrown. When the
 * reader stops early (a fatal record, the row cap, a cancelled call) the source is not destroyed but drained, so an
 * upload still reaches its end (or its size cap) and the request can be answered.
 */
async function* csvRows(source: Readable): AsyncGenerator<Row> {
  // The source's errors are heard from the start, also while csv-parse is first loaded.
  let early: Error | null = null;
  const hold = (e: Error) => {
    early ??= e;
  };
  source.on('error', hold);
  const parser = await recordParser();
  source.off('error', hold);
  const normalise = new NormaliseText();
  let lastEnd = 0;
  let lastEmpty = 0;
  source.on('error', (e) => parser.destroy(e));
  if (early) parser.destroy(early);
  normalise.on('error', (e) => parser.destroy(e));
  source.pipe(normalise).pipe(parser);
  try {
    for await (const item of parser as AsyncIterable<ParsedRecord>) {
      if ('fatal' in item) {
        const e = item.fatal as CsvError & { lines?: number; empty_lines?: number };
        const line = lastEnd + 1 + Math.max(0, (e.empty_lines ?? lastEmpty) - lastEmpty);
        const why =
          e.code === 'CSV_QUOTE_NOT_CLOSED'
            ? 'A quoted field opened here is never closed'
            : e.code === 'CSV_MAX_RECORD_SIZE'
              ? `The row is longer than ${MAX_ROW_BYTES / 1024} KB (an unclosed quote?)`
              : `Unreadable CSV (${e.message})`;
        yield { line, fatal: `${why}: this line and the rest of the file were not imported.` };
        return;
      }
      const { record, info } = item;
      lastEnd = info.lines;
      lastEmpty = info.empty_lines;
      // ",,,,,,,,," lines are what spreadsheets export for empty rows: blank lines, not bad rows.
      if (record.every((f) => f.trim() === '')) continue;
      yield { line: info.lines - record.reduce((n, f) => n + newlines(f), 0), fields: record };
    }
  } finally {
    if (!source.readableEnded && !source.destroyed) {
      source.unpipe(normalise);
      source.resume();
    }
  }
}

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off', '']);
/** true / false in the words spreadsheets use; undefined for anything else. */
export function csvFlag(v: string): boolean | undefined {
  const w = v.trim().toLowerCase();
  return TRUE_WORDS.has(w) ? true : FALSE_WORDS.has(w) ? false : undefined;
}

const list = (v: string) =>
  v
    .split(';')
    .map((x) => x.trim())
    .filter(Boolean);
const quoted = (names: string[]) => names.map((n) => `"${n}"`).join(', ');

type ValidRow = {
  username: string;
  email: string;
  password: string;
  send_password: boolean;
  role: UserRole;
  first_name: string;
  last_name: string;
  user_url: string;
  sites: SiteRecord[];
};

function summary(r: ImportResult, skipped: Map<number, z.infer<typeof SkippedSite>>): ImportResult {
  return { ...r, failed_users: [...r.failed_users], skipped_sites: [...skipped.values()].slice(0, MAX_FAILURES_LISTED) };
}

/** CSV imports of WordPress users onto the sites each row names. */
export class UserImportService {
  constructor(
    private readonly config: Config,
    private readonly sites: SiteService,
    private readonly tags: TagService,
    private readonly selectors: SiteSelectorService,
  ) {}

  /** One row's checks, in the order the reference gives; the first failure is the row's error. */
  private validateRow(fields: string[], skipped: Map<number, z.infer<typeof SkippedSite>>): ValidRow | string {
    const extra = fields.slice(CSV_COLUMNS.length);
    if (fields.length < CSV_COLUMNS.length || extra.some((f) => f.trim() !== '')) {
      return `Expected ${CSV_COLUMNS.length} columns (${CSV_COLUMNS.join(', ')}); found ${fields.length}.`;
    }
    const [username, email, first_name, last_name, user_url, password, sendPassword, roleText, siteList, groupList] = fields.map((f) =>
      f.trim(),
    ) as string[];
    if (!username) return 'Username is required.';
    if (username.length > 60) return 'Username must be at most 60 characters.';
    if (!email) return 'Email is required.';
    if (!isEmail(email!)) return `Invalid email format: "${email}".`;
    const role = (roleText!.toLowerCase() || 'subscriber') as UserRole;
    if (!USER_ROLES.includes(role))
      return `Invalid role "${roleText}". Allowed roles: administrator, subscriber, editor, author, contributor.`;
    const send = csvFlag(sendPassword!);
    if (send === undefined) return `Invalid send_password "${sendPassword}": use true or false.`;
    const siteRefs = list(siteList!);
    const groupNames = list(groupList!);
    if (siteRefs.length === 0 && groupNames.length === 0) return 'Either select_sites or select_groups must be provided.';
    const ids = new Set<number>();
    const unknownSites: string[] = [];
    const unknownGroups: string[] = [];
    for (const ref of siteRefs) {
      const s = this.sites.find(ref);
      if (s) ids.add(s.id);
      else unknownSites.push(ref);
    }
    for (const name of groupNames) {
      const t = this.tags.findByName(name);
      if (t) t.site_ids.forEach((id) => ids.add(id));
      else unknownGroups.push(name);
    }
    if (unknownSites.length || unknownGroups.length) {
      return [
        unknownSites.length ? `Unknown site${unknownSites.length > 1 ? 's' : ''} ${quoted(unknownSites)} in select_sites.` : '',
        unknownGroups.length ? `Unknown group${unknownGroups.length > 1 ? 's' : ''} ${quoted(unknownGroups)} in select_groups.` : '',
      ]
        .filter(Boolean)
        .join(' ');
    }
    const sites: SiteRecord[] = [];
    const left: string[] = [];
    for (const id of ids) {
      const s = this.sites.get(id);
      if (!s) continue;
      const note = skipNote(s);
      if (note) {
        skipped.set(s.id, note);
        left.push(s.url);
      } else sites.push(s);
    }
    if (sites.length === 0) {
      return left.length
        ? `No valid websites found for this user: every selected site is disconnected or suspended (${left.join(', ')}).`
        : 'No valid websites found for this user: the selected groups have no sites.';
    }
    return {
      username: username!,
      email: email!,
      password: password || generatePassword(),
      send_password: send,
      role,
      first_name: first_name!,
      last_name: last_name!,
      user_url: user_url!,
      sites,
    };
  }

  /**
   * Imports the users of a CSV (text, or an upload being streamed). Rows are read only as fast as they are imported
   * (at most `childConcurrency` rows in flight), so the upload is throttled instead of buffered. A site that cannot be
   * reached is not dialled again for later rows. Throws 400 for a file that is not CSV text or has no rows; an upload
   * cut short (413 over the cap, a broken connection) throws with what was imported until then in `data`.
   */
  async fromCsv(call: FleetCall, source: string | CsvUpload, hasHeader: boolean): Promise<ImportResult> {
    const upload = typeof source === 'string' ? null : source;
    const stream = upload ? upload.stream : Readable.from([Buffer.from(source as string, 'utf8')]);
    // A has_header field may follow the file in the form: then it is known only once the upload is read.
    const header: Promise<{ value: boolean; invalid?: string }> = upload
      ? upload.lateFields.then(
          (f) => {
            if (f.has_header === undefined) return { value: hasHeader };
            const v = csvFlag(f.has_header);
            return v === undefined ? { value: hasHeader, invalid: f.has_header } : { value: v };
          },
          () => ({ value: hasHeader }),
        )
      : Promise.resolve({ value: hasHeader });

    const result: ImportResult = {
      total: 0,
      success_count: 0,
      failed_count: 0,
      failed_users: [],
      failed_users_truncated: false,
      skipped_sites: [],
    };
    const skipped = new Map<number, z.infer<typeof SkippedSite>>();
    const down = new Map<number, ServiceError>();
    // Rows finish out of order: keep the first MAX_FAILURES_LISTED by line (a sorted, bounded list).
    const fail = (f: ImportFailure) => {
      result.failed_count++;
      const list = result.failed_users;
      if (list.length === MAX_FAILURES_LISTED) {
        result.failed_users_truncated = true;
        if (f.line_number > list[list.length - 1]!.line_number) return;
        list.pop();
      }
      let i = list.length;
      while (i > 0 && list[i - 1]!.line_number > f.line_number) i--;
      list.splice(i, 0, f);
    };

    const importRow = async (line: number, fields: string[]): Promise<void> => {
      const row = this.validateRow(fields, skipped);
      if (typeof row === 'string')
        return fail({ line_number: line, username: fields[0]?.trim() ?? '', email: fields[1]?.trim() ?? '', error: row });
      const outcomes = await Promise.all(
        row.sites.map(async (site) => {
          const known = down.get(site.id);
          if (known) return { site, error: known };
          try {
            const created = await this.selectors.onChild(site, (c, creds) =>
              c.createUser(
                creds,
                {
                  user_login: row.username,
                  user_pass: row.password,
                  user_email: row.email,
                  user_url: row.user_url,
                  first_name: row.first_name,
                  last_name: row.last_name,
                  role: row.role,
                },
                row.send_password,
              ),
            );
            return { site, user_id: created.user_id };
          } catch (e) {
            const error = e as ServiceError;
            if (SITE_DOWN.has(error.code)) down.set(site.id, error);
            return { site, error };
          }
        }),
      );
      const failed = outcomes.filter((o): o is { site: SiteRecord; error: ServiceError } => 'error' in o);
      if (failed.length === 0) {
        result.success_count++;
        return;
      }
      const created = outcomes.filter((o): o is { site: SiteRecord; user_id: number } => 'user_id' in o);
      const listedFailed = failed.slice(0, MAX_SITES_LISTED);
      const listedCreated = created.slice(0, MAX_SITES_LISTED);
      const more = failed.length - listedFailed.length + created.length - listedCreated.length;
      fail({
        line_number: line,
        username: row.username,
        email: row.email,
        error: clip(
          failed.length === 1 && outcomes.length === 1
            ? failed[0]!.error.message
            : `Failed on ${failed.length} of ${outcomes.length} sites: ${[...new Set(failed.map((o) => o.error.message))].join('; ')}`,
          1000,
        ),
        failed_sites: listedFailed.map((o) => ({ site_id: o.site.id, site_url: o.site.url, code: o.error.code, message: o.error.message })),
        ...(created.length
          ? { created_sites: listedCreated.map((o) => ({ site_id: o.site.id, site_url: o.site.url, user_id: o.user_id })) }
          : {}),
        ...(more ? { more_sites: more } : {}),
      });
    };

    const inFlight = new Set<Promise<void>>();
    // Rows run in parallel, but a row naming the same username or e-mail as an earlier one waits for it, so
    // that the first row in the file wins (WordPress refuses the second).
    const lastBy = new Map<string, Promise<void>>();
    let processed = 0;
    const start = (line: number, fields: string[]): void => {
      result.total++;
      const keys = [`u:${(fields[0] ?? '').trim().toLowerCase()}`, `e:${(fields[1] ?? '').trim().toLowerCase()}`];
      const earlier = Promise.all(keys.map((k) => lastBy.get(k)));
      const p: Promise<void> = earlier
        .then(() => importRow(line, fields))
        .catch((e: unknown) => {
          // The row itself is not logged: it holds a password.
          log('error', 'import row failed', { line, err: (e as Error).stack ?? String(e) });
          fail({ line_number: line, username: fields[0] ?? '', email: fields[1] ?? '', error: 'Internal error. See the server log.' });
        })
        .then(async () => {
          inFlight.delete(p);
          for (const k of keys) if (lastBy.get(k) === p) lastBy.delete(k);
          if (++processed % 100 === 0) await call.progress?.({ done: processed, total: result.total });
        });
      for (const k of keys) lastBy.set(k, p);
      inFlight.add(p);
    };

    let first: { line: number; fields: string[] } | null = null;
    let seenFirst = false;
    let rows = 0;
    try {
      for await (const row of csvRows(stream)) {
        if ('fatal' in row) {
          result.total++;
          fail({ line_number: row.line, username: '', email: '', error: row.fatal });
          result.stopped = { line_number: row.line, reason: row.fatal };
          continue;
        }
        if (++rows > MAX_IMPORT_ROWS) {
          const reason = `An import reads at most ${MAX_IMPORT_ROWS.toLocaleString('en-US')} rows: this line and the rest of the file were not imported. Split the file.`;
          result.total++;
          fail({ line_number: row.line, username: '', email: '', error: reason });
          result.stopped = { line_number: row.line, reason };
          break;
        }
        if (!seenFirst) {
          // Held until has_header is known; one record, whatever the file's length.
          seenFirst = true;
          first = row;
          continue;
        }
        start(row.line, row.fields);
        if (inFlight.size >= this.config.childConcurrency) await Promise.race(inFlight);
        if (call.signal?.aborted) break;
      }
      // The rest of an upload is drained, not read: wait for its end, so that one over the size cap is refused (413).
      if (upload) await finished(stream);
    } catch (e) {
      await Promise.all(inFlight);
      const err =
        e instanceof ServiceError ? e : new ServiceError('svc_upload_interrupted', 'The upload ended before the whole file arrived.', 400);
      throw new ServiceError(err.code, err.message, err.status, { ...err.data, ...summary(result, skipped) });
    }
    if (first && !call.signal?.aborted) {
      const h = await header;
      if (h.invalid !== undefined) {
        result.total++;
        fail({
          line_number: first.line,
          username: '',
          email: '',
          error: `has_header "${h.invalid}" is not true or false, so line ${first.line} was neither skipped nor imported.`,
        });
      } else if (!h.value) start(first.line, first.fields);
    }
    await Promise.all(inFlight);
    if (result.total === 0) {
      throw new ServiceError(
        'svc_csv_empty',
        seenFirst ? 'The CSV file has a header line but no user rows.' : 'The CSV file has no rows.',
        400,
      );
    }
    return summary(result, skipped);
  }
}
