// Result parts that services produce and abilities show as they are: one item's error in a call over many
// items, and a selected site left out. Declared here, below the services, so that both layers share one schema.
import { z } from 'zod';

/** One item (site, slug, user...) that failed in a call over many; the call itself succeeds. */
export const ItemError = z.object({
  identifier: z.union([z.number(), z.string()]),
  code: z.string(),
  message: z.string(),
  status: z.number().int().optional(),
});
export type ItemError = z.infer<typeof ItemError>;

/** A selected site left out because it is disconnected or suspended. */
export const SkippedSite = z.object({
  site_id: z.number().int(),
  site_url: z.string(),
  status: z.enum(['disconnected', 'suspended']),
  message: z.string(),
});
export type SkippedSite = z.infer<typeof SkippedSite>;

/**
 * The job id of an ability result that is a queued job's answer (`queued: true` with its `job_id`), else null: each
 * door renders its own pointer to it.
 */
export function queuedJob(result: unknown): string | null {
  if (!result || typeof result !== 'object' || Array.isArray(result)) return null;
  const r = result as { queued?: unknown; job_id?: unknown };
  return r.queued === true && typeof r.job_id === 'string' ? r.job_id : null;
}
