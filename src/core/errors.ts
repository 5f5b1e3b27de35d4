// The one error type every layer throws, the catalogue of the errors several places raise, and the one way an
// unexpected error becomes an answer. Doors turn a ServiceError into their own envelope by its code and subject,
// never by its message.
import { log } from '../log.js';

/** What an error is about, for doors that answer in their own terms (REST's path ids); not part of the body. */
export interface Subject {
  kind: 'site' | 'tag' | 'client' | 'cost' | 'job' | 'user' | 'post';
  ref: number | string;
}

export class ServiceError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly data: Record<string, unknown> = {},
    /**
     * Not part of the body: what the error is about; for an invalid input, its bare reason, and the same reason with
     * the parameter named by itself (`a[b]`, as WordPress's REST API says) rather than inside `input[a][b]`.
     */
    readonly detail: { subject?: Subject; reason?: string; paramReason?: string } = {},
  ) {
    super(message);
    this.name = 'ServiceError';
  }

  toBody(): { code: string; message: string; data: Record<string, unknown> } {
    return { code: this.code, message: this.message, data: { status: this.status, ...this.data } };
  }
}

const logged = new WeakSet<object>();

/**
 * Anything thrown: a ServiceError as it is; anything else is a defect, logged once with its stack (wherever it is
 * caught first) and answered as a 500 that names no internals.
 */
export function toServiceError(err: unknown, where: Record<string, unknown> = {}): ServiceError {
  if (err instanceof ServiceError) return err;
  if (err && typeof err === 'object' && !logged.has(err)) {
    logged.add(err);
    log('error', 'unexpected error', { ...where, err: (err as Error).stack ?? String(err) });
  } else if (!err || typeof err !== 'object') log('error', 'unexpected error', { ...where, err: String(err) });
  return new ServiceError('svc_internal_error', 'Internal error. See the server log.', 500);
}

const isId = (ref: number | string) => typeof ref === 'number' || /^\s*\d+\s*$/.test(ref);

/** The errors raised in more than one place, each with its code, status and subject. */
export const errors = {
  siteNotFound: (ref: number | string) =>
    new ServiceError(
      'svc_site_not_found',
      isId(ref) ? `No site found with ID ${Number(ref)}.` : `No site found matching "${String(ref)}".`,
      404,
      {},
      { subject: { kind: 'site', ref } },
    ),
  tagNotFound: (id: number) =>
    new ServiceError('svc_tag_not_found', `No tag found with ID ${id}.`, 404, {}, { subject: { kind: 'tag', ref: id } }),
  clientNotFound: (ref: number | string) =>
    new ServiceError(
      'svc_client_not_found',
      isId(ref) ? `No client found with ID ${Number(ref)}.` : `No client found matching "${String(ref)}".`,
      404,
      {},
      { subject: { kind: 'client', ref } },
    ),
  costNotFound: (id: number) =>
    new ServiceError('svc_cost_not_found', `No cost found with ID ${id}.`, 404, {}, { subject: { kind: 'cost', ref: id } }),
  jobNotFound: (id: string) =>
    new ServiceError(
      'svc_job_not_found',
      'Batch job not found. Job may have expired (jobs are kept for 24 hours).',
      404,
      {},
      { subject: { kind: 'job', ref: id } },
    ),
  siteSuspended: (site: { id: number; url: string }) =>
    new ServiceError(
      'svc_site_suspended',
      `Site ${site.id} (${site.url}) is suspended; unsuspend it first.`,
      409,
      {},
      { subject: { kind: 'site', ref: site.id } },
    ),
  /** `meanwhile`: it was disconnected after the work was asked for (a queued reconnect or renewal). */
  siteDisconnected: (site: { id: number; url: string }, meanwhile = false) =>
    new ServiceError(
      'svc_site_disconnected',
      meanwhile
        ? `Site ${site.id} (${site.url}) was disconnected meanwhile; reconnect it instead.`
        : `Site ${site.id} (${site.url}) is disconnected; reconnect it first.`,
      409,
      {},
      { subject: { kind: 'site', ref: site.id } },
    ),
  siteExists: (url: string) => new ServiceError('svc_site_already_exists', 'A site with this URL already exists.', 409, { site_url: url }),
  webhookNotFound: (id: number) => new ServiceError('svc_webhook_not_found', `No webhook found with ID ${id}.`, 404),
  productTypeNotFound: (slug: string) => new ServiceError('svc_invalid_slug', `Product type "${slug}" does not exist.`, 404),
  paymentMethodNotFound: (slug: string) => new ServiceError('svc_invalid_slug', `Payment method "${slug}" does not exist.`, 404),
  /** None of the sites a call over several named exists; `errors` says why for each. */
  sitesNotFound: (itemErrors: unknown[]) => new ServiceError('svc_site_not_found', 'No valid sites found.', 404, { errors: itemErrors }),
  invalidInput: (message: string, data: Record<string, unknown> = {}) => new ServiceError('svc_invalid_input', message, 400, data),
  /**
   * An ability's input that fails its schema, in WordPress's words; `param` names the field when there is one, and
   * `paramReason` is the reason as told of that parameter alone (when it differs).
   */
  abilityInput: (ability: string, reason: string, param?: string, paramReason = reason) =>
    new ServiceError(
      'ability_invalid_input',
      `Ability "svc/${ability}" has invalid input. Reason: ${reason}`,
      400,
      param ? { params: { [param]: reason } } : {},
      { reason, paramReason },
    ),
};
