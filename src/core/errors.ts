// The one error type every layer throws; doors turn it into their own envelope.

export class ServiceError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly data: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ServiceError';
  }

  toBody(): { code: string; message: string; data: Record<string, unknown> } {
    return { code: this.code, message: this.message, data: { status: this.status, ...this.data } };
  }
}

/** Anything thrown that is not a ServiceError becomes a 500 that names no internals. */
export function asServiceError(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  return new ServiceError('svc_internal_error', 'Internal error. See the server log.', 500);
}

export const notFound = (code: string, message: string) => new ServiceError(code, message, 404);
export const badInput = (message: string, data: Record<string, unknown> = {}) =>
  new ServiceError('svc_invalid_input', message, 400, data);
