// Writing answers: the {code, message, data:{status}} error envelope, and the JSON body parser errors
// translated into it (malformed JSON → 400 rest_invalid_json, too large → 413).
import express, { type ErrorRequestHandler, type Request, type Response } from 'express';
import { ServiceError, toServiceError } from '../core/errors.js';

export function sendError(res: Response, e: unknown): void {
  const err = toServiceError(e);
  res.status(err.status).json(err.toBody());
}

/** Whether a request says it carries a body (a length other than 0, or a chunked one). */
export function hasBody(req: Request): boolean {
  const len = req.headers['content-length'];
  return (len !== undefined && len !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** JSON bodies of any declared type up to `limit`; an empty body is no input. */
export function jsonBody(limit: string) {
  return express.json({ limit, type: (req) => /\bjson\b/i.test(String(req.headers['content-type'] ?? '')) });
}

export const bodyErrors: ErrorRequestHandler = (err, _req, res, next) => {
  const e = err as { type?: string; message?: string; limit?: number };
  if (e.type === 'entity.parse.failed') {
    return sendError(
      res,
      new ServiceError('rest_invalid_json', 'Invalid JSON body passed.', 400, {
        json_error_code: 4,
        json_error_message: 'Syntax error',
      }),
    );
  }
  if (e.type === 'entity.too.large') {
    return sendError(res, new ServiceError('svc_request_too_large', `Request body larger than ${e.limit} bytes.`, 413));
  }
  if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') {
    return sendError(res, new ServiceError('rest_invalid_json', e.message ?? 'Unsupported body encoding.', 415));
  }
  next(err);
};
