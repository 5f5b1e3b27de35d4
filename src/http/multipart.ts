// Multipart uploads for the REST door (POST /users/import): busboy hands the file part over while it arrives, so a
// consumer reads it at its own pace and nothing is buffered; the part is capped in bytes (413 past the cap).
import type { Request, Response } from 'express';
import busboy from 'busboy';
import type { Readable } from 'node:stream';
import { ServiceError } from '../core/errors.js';
import { decodeForm, FormLimitError, type FormMap } from '../child/form.js';
import { boundErrors, MAX_INPUT_DEPTH, MAX_INPUT_FIELDS } from '../core/input.js';

export interface Upload {
  /** The file part's bytes, as they arrive. Destroyed with a 413 ServiceError when it outgrows the cap. */
  file: Readable;
  filename: string;
  /** Form fields sent before the file. */
  fields: Record<string, string>;
  /** Form fields sent after the file: settles once the whole body has been read (or could not be). */
  lateFields: Promise<Record<string, string>>;
}

// Past the cap plus this much, an answered request is cut instead of read to its end.
const DRAIN_BYTES = 1024 * 1024;
const MB = 1024 * 1024;

const noFile = (field: string, detail: string) =>
  new ServiceError(
    'svc_no_file_uploaded',
    `No CSV file uploaded: ${detail} Send multipart/form-data with the file in the field ${field}.`,
    400,
    { field },
  );

/**
 * Starts reading a multipart body and resolves as soon as the file part named `field` begins. Refuses (400
 * svc_no_file_uploaded) a body that is not multipart or has no such file part, (400 svc_invalid_multipart) a
 * malformed one, and (413 svc_upload_too_large) one whose Content-Length already says it is over the cap.
 * Whatever happens, once the answer is sent the rest of the body is drained (so the connection can carry the
 * answer and the next request), or the connection is cut if the client keeps sending far past the cap.
 */
export function readUpload(req: Request, res: Response, opts: { field: string; maxBytes: number }): Promise<Upload> {
  const { field, maxBytes } = opts;
  const tooLarge = () =>
    new ServiceError('svc_upload_too_large', `The uploaded file is larger than ${maxBytes / MB} MB.`, 413, { max_bytes: maxBytes });

  res.once('finish', () => {
    if (req.complete) return;
    req.unpipe();
    let drained = 0;
    req.on('data', (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > maxBytes + DRAIN_BYTES) req.destroy();
    });
    req.resume();
  });

  const type = String(req.headers['content-type'] ?? '');
  if (!/^multipart\/form-data\b/i.test(type)) {
    return Promise.reject(noFile(field, /json/i.test(type) ? 'the request body is JSON.' : `the request is ${type || 'not multipart'}.`));
  }
  if (Number(req.headers['content-length'] ?? 0) > maxBytes + DRAIN_BYTES) return Promise.reject(tooLarge());

  return new Promise<Upload>((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, limits: { fileSize: maxBytes, files: 10, fields: 50, parts: 60, fieldSize: 64 * 1024 } });
    } catch (e) {
      return reject(new ServiceError('svc_invalid_multipart', `Malformed multipart request: ${(e as Error).message}.`, 400));
    }
    const early: Record<string, string> = {};
    const late: Record<string, string> = {};
    let file: Readable | null = null;
    let other: string | null = null;
    let textField = false;
    let settleLate: (f: Record<string, string>) => void = () => {};
    const lateFields = new Promise<Record<string, string>>((r) => {
      settleLate = r;
    });

    bb.on('field', (name, value) => {
      if (name === field) textField = true;
      (file ? late : early)[name] = value;
    });
    bb.on('file', (name, stream, info) => {
      if (file || name !== field) {
        if (!file) other = name;
        stream.resume();
        return;
      }
      file = stream;
      stream.once('limit', () => stream.destroy(tooLarge()));
      // A file part that ends without reaching its end (over the cap, destroyed by its reader) leaves busboy waiting:
      // whoever waits for the late fields must not wait for ever.
      stream.once('close', () => {
        if (!stream.readableEnded) settleLate(late);
      });
      resolve({ file: stream, filename: info.filename ?? '', fields: early, lateFields });
    });
    bb.once('close', () => {
      settleLate(late);
      if (!file) {
        reject(
          noFile(
            field,
            textField
              ? `${field} was sent as a text field, not as a file.`
              : other
                ? `the file was sent in the field "${other}", not ${field}.`
                : `the form has no ${field} file.`,
          ),
        );
      }
    });
    bb.once('error', (e: Error) => {
      const err = new ServiceError('svc_invalid_multipart', `Malformed multipart request: ${e.message}.`, 400);
      settleLate(late);
      if (file) file.destroy(err);
      else reject(err);
    });
    // A client that goes away mid-upload: the reader of the file must not wait for bytes that will never come.
    req.once('close', () => {
      if (req.complete) return;
      const err = new ServiceError('svc_upload_interrupted', 'The upload ended before the whole file arrived.', 400);
      settleLate(late);
      if (file) file.destroy(err);
      else reject(err);
    });
    req.pipe(bb);
  });
}

// ---- form bodies on every REST route (WordPress reads $_POST: urlencoded or multipart, PHP bracket keys) ----

/** A form (an urlencoded body or a query string) as the doors read it: bounded, every value of a repeated key kept. */
export function readForm(text: string, where: 'body' | 'query'): Record<string, unknown> {
  try {
    return formArgs(decodeForm(text, { repeated: 'all', maxFields: MAX_INPUT_FIELDS, maxDepth: MAX_INPUT_DEPTH }));
  } catch (e) {
    if (e instanceof FormLimitError) throw e.bound === 'fields' ? boundErrors.fields(where) : boundErrors.depth(e.field);
    throw e;
  }
}

/** A PHP-style form map as JSON: sequential numeric keys (a[]=1&a[]=2) become lists, as PHP's json_encode does. */
export function formArgs(map: FormMap): Record<string, unknown> {
  const convert = (v: FormMap[string]): unknown => {
    if (typeof v === 'string') return v;
    const keys = Object.keys(v);
    if (keys.length > 0 && keys.every((k, i) => k === String(i))) return keys.map((k) => convert(v[k]!));
    return Object.fromEntries(keys.map((k) => [k, convert(v[k]!)]));
  };
  return convert(map) as Record<string, unknown>;
}

/**
 * The fields of a multipart/form-data body on a route that takes no upload, parsed like PHP's $_POST (bracket keys).
 * Bounded: `maxBytes` of fields in all, MAX_INPUT_FIELDS fields, 64 KB a field; a file part is refused (400).
 */
export function readFormFields(req: Request, maxBytes: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({
        headers: req.headers,
        limits: { files: 0, fields: MAX_INPUT_FIELDS, fieldSize: 64 * 1024, parts: MAX_INPUT_FIELDS + 1 },
      });
    } catch (e) {
      return reject(new ServiceError('svc_invalid_multipart', `Malformed multipart request: ${(e as Error).message}.`, 400));
    }
    const pairs: string[] = [];
    let bytes = 0;
    let failed: ServiceError | null = null;
    const fail = (e: ServiceError) => {
      if (!failed) {
        failed = e;
        req.unpipe(bb);
        req.resume();
        reject(e);
      }
    };
    bb.on('field', (name, value, info) => {
      bytes += name.length + value.length;
      if (info.valueTruncated) return fail(new ServiceError('svc_request_too_large', `Form field ${name} is larger than 64 KB.`, 413));
      if (bytes > maxBytes) return fail(new ServiceError('svc_request_too_large', `Request body larger than ${maxBytes} bytes.`, 413));
      pairs.push(`${encodeURIComponent(name)}=${encodeURIComponent(value)}`);
    });
    bb.on('filesLimit', () =>
      fail(new ServiceError('svc_no_file_expected', 'This route takes no file upload; send the fields only.', 400)),
    );
    bb.on('fieldsLimit', () => fail(boundErrors.fields('body')));
    bb.on('partsLimit', () => fail(new ServiceError('svc_request_too_large', `More than ${MAX_INPUT_FIELDS} form parts.`, 413)));
    bb.on('file', (_name, stream) => {
      stream.resume();
      fail(new ServiceError('svc_no_file_expected', 'This route takes no file upload; send the fields only.', 400));
    });
    bb.once('error', (e: Error) => fail(new ServiceError('svc_invalid_multipart', `Malformed multipart request: ${e.message}.`, 400)));
    bb.once('close', () => {
      if (failed) return;
      try {
        resolve(readForm(pairs.join('&'), 'body'));
      } catch (e) {
        reject(e);
      }
    });
    req.pipe(bb);
  });
}
