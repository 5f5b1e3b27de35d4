// The REST envelopes as zod schemas, for rows to declare what their `output` answers (the OpenAPI document and
// the route index are generated from them; every REST answer of the test suite is validated against them).
import { z } from 'zod';
import { ItemError } from '../../abilities/schemas.js';

export const Int = z.number().int();
/** The simple site view of per-site answers (REST v2 reference §0.4). */
export const SimpleSite = z.object({ id: Int, name: z.string(), url: z.string(), client_id: Int.nullable() });
/** A flag argument the door reads itself: true/false, 1/0 (strings in any case) as WordPress, and upstream's yes/no. */
export const Flag = (description: string) =>
  z
    .union([z.boolean(), z.enum(['1', '0', 'true', 'false', 'yes', 'no'])])
    .optional()
    .describe(description);
/** A comma-separated list or an array. */
export const ListArg = <T extends z.ZodType>(item: T, description: string) =>
  z
    .union([z.array(item), z.string()])
    .optional()
    .describe(description);

/** {success: 1, ...shape} */
export const ok = <S extends z.ZodRawShape>(shape: S) => z.object({ success: z.literal(1), ...shape });
/** {success: 1 | 0, ...shape}: actions where nothing happening is answered with success 0. */
export const okOrNot = <S extends z.ZodRawShape>(shape: S) => z.object({ success: z.union([z.literal(1), z.literal(0)]), ...shape });
/** {success: 1, total, data: [item]} */
export const listed = <T extends z.ZodType, S extends z.ZodRawShape = Record<never, never>>(item: T, extra?: S) =>
  ok({ total: Int, data: z.array(item), ...((extra ?? {}) as S) });
/** {success: 1, message, data} */
export const done = <T extends z.ZodType, S extends z.ZodRawShape = Record<never, never>>(data: T, extra?: S) =>
  ok({ message: z.string(), data, ...((extra ?? {}) as S) });
/** A batch over every matched site that went to the background: where to follow it. */
export const Queued = ok({ message: z.string(), job_id: z.string().optional(), status_url: z.string().optional(), total: Int.optional() });
export const Errors = z.array(ItemError).optional();

/** Child-site failures (domain/child-sites.ts childFailure, requireUsable) of a route whose ability talks to sites. */
export const CHILD_ERRORS: Readonly<Record<number, readonly string[]>> = {
  409: ['svc_site_suspended', 'svc_site_disconnected', 'svc_site_keys_missing'],
  502: [
    'svc_child_unreachable',
    'svc_child_auth_failed',
    'svc_child_not_detected',
    'svc_child_bad_reply',
    'svc_child_error',
    'svc_child_wrong_site',
  ],
  504: ['svc_child_timeout'],
};
