// Where the HTTP doors point a caller at a background job. Services and abilities answer a job's id only; a door
// renders its own pointer from it: here the REST status URL (the MCP door points at sitefleet://jobs/{job_id}).
import type { JobType } from '../store/records.js';
import { queuedJob } from '../core/results.js';

/** Job types with their own status route (upstream's settings tools); every job is also at /jobs/{job_id}. */
export const STATUS_PATHS: Partial<Record<JobType, string>> = {
  renew: '/settings/tools/renew-connections-status/',
  disconnect: '/settings/tools/disconnect-all-sites-status/',
};

/** The abilities whose jobs upstream points at their tool's own status route (the others: /jobs/{job_id}). */
const ABILITY_STATUS_PATHS: Readonly<Record<string, string | undefined>> = {
  'renew-connections-v1': STATUS_PATHS.renew,
  'disconnect-all-sites-v1': STATUS_PATHS.disconnect,
};

/** The REST status URL of a job: `restBase` is the door's base URL with the REST prefix. */
export function jobStatusUrl(restBase: string, jobId: string, path = '/jobs/'): string {
  return `${restBase}${path}${jobId}`;
}

/**
 * A queued result of `ability` with the REST `status_url` added after the job id, as upstream's abilities answer
 * (sync-sites, run-updates); any other result as it is.
 */
export function withStatusUrl(ability: string, result: unknown, restBase: string): unknown {
  const jobId = queuedJob(result);
  if (!jobId) return result;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(result as Record<string, unknown>)) {
    out[k] = v;
    if (k === 'job_id') out.status_url = jobStatusUrl(restBase, jobId, ABILITY_STATUS_PATHS[ability]);
  }
  return out;
}

/**
 * An ability's output JSON Schema as the abilities door describes it: an ability that can queue a job (its output
 * has `queued` and `job_id`) also declares the `status_url` the door adds to a queued answer.
 */
export function withStatusUrlSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const props = schema.properties as Record<string, unknown> | undefined;
  if (!props || !('queued' in props) || !('job_id' in props) || 'status_url' in props) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(props)) {
    out[k] = v;
    if (k === 'job_id') out.status_url = { type: 'string', description: "Queued: where the REST door serves the job's status." };
  }
  return { ...schema, properties: out };
}
