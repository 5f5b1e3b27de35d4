// Shapes the store keeps for uptime monitoring. Compact on purpose: a monitor record is rewritten with its shard
// (250 sites) when the journal is taken in, so beats and buckets are tuples, and every list in it is bounded. A monitor
// record is never changed in place (a new object, new lists and buckets for what changed): the journal writes it as
// what changed, found by reference (journal-patch.ts).

/** Why a check failed. */
export const CAUSES = ['timeout', 'dns', 'tls', 'connection', 'http_status', 'keyword', 'blocked'] as const;
export type Cause = (typeof CAUSES)[number];

/** A heartbeat: [epoch seconds, 1 up / 0 down, response ms or -1, HTTP status or 0, cause index or -1]. */
export type Beat = [t: number, up: 0 | 1, ms: number, code: number, cause: number];

/**
 * Upper bounds (ms) of the response-time histogram kept in every bucket; the last bucket is open. Percentiles are
 * read from it, so they are "at most this" figures, exact to a bucket.
 */
export const HIST_MS = [100, 250, 500, 1000, 2000, 5000, 10000] as const;

/** An hour or a day of checks: [start epoch seconds, up, down, ms sum, ms min, ms max, ...histogram (8)]. */
export type Bucket = number[];

/** Fleet default (record 0) or a site's own choice; absent = use the fleet default. */
export interface MonitorSettings {
  active?: boolean;
  interval_s?: number;
  timeout_s?: number;
  /** HTTP statuses that count as up. */
  expected_status?: number[];
  /** Text the page must contain ('' = no keyword check). */
  keyword?: string;
  method?: 'get' | 'head';
  /** Checks again (this many times, a moment apart) before a site that was up is declared down: no alarm for a blip. */
  retries?: number;
}

export interface MonitorRecord {
  /** The site's id (a monitor per site); 0 holds the fleet defaults and no history. */
  id: number;
  settings: MonitorSettings;
  status: 'up' | 'down' | 'pending';
  last_check: Beat | null;
  /** Epoch seconds the current down run began, null while up. */
  down_since: number | null;
  open_incident: number | null;
  /**
   * How many writes of its history (MonitorHistoryRecord.n) this monitor has seen: a history read before a write is
   * folded into only if it is still the one this says (another process may have written one since).
   */
  history_n?: number;
  /**
   * The history as sitefleet kept it in this record before it had a collection of its own: read while there, and
   * moved out by the first write of the history (or by the move at start, MonitorService.moveHistory).
   */
  recent?: Beat[];
  hours?: Bucket[];
  days?: Bucket[];
}

/** A monitor's history (id = site id; the `monitor_history` collection, cold: not held in memory on PostgreSQL). */
export interface MonitorHistoryRecord {
  id: number;
  /** Writes of this history so far (the monitor record's history_n says which one it last saw). */
  n: number;
  /** Newest last, at most RAW_KEPT. */
  recent: Beat[];
  /** Hourly buckets, newest last, at most HOURS_KEPT. */
  hours: Bucket[];
  /** Daily buckets (UTC), newest last, at most DAYS_KEPT. */
  days: Bucket[];
}

export interface IncidentRecord {
  id: number;
  site_id: number;
  started_at: string;
  ended_at: string | null;
  cause: Cause;
  message: string;
  http_code: number | null;
  /** Failed checks in the run. */
  down_count: number;
}

export const WEBHOOK_EVENTS = [
  'site.down',
  'site.up',
  'site.sync_failed',
  'vulnerability.found',
  'vulnerability.fixed',
  'policy.paused',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number] | 'webhook.test';

export interface WebhookRecord {
  id: number;
  url: string;
  description: string;
  events: Array<(typeof WEBHOOK_EVENTS)[number]>;
  /** Signs every delivery (HMAC-SHA256 of the body). Shown once, at creation; never answered or logged again. */
  secret: string;
  created_at: string;
}

export interface DeliveryRecord {
  id: number;
  webhook_id: number;
  event: WebhookEvent;
  /** The event's id, also sent as X-Sitefleet-Delivery: a receiver drops repeats by it. */
  event_id: string;
  /** The exact body that is signed and sent (bounded: events are small). */
  body: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: number;
  /** A process sending it holds it until then (no two processes send one delivery at once). */
  claim_owner: string | null;
  claim_until: number;
  last_http_status: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

/** A named claim with an expiry: who runs which checks. A PostgreSQL engine holds the same with a row lock. */
export interface LeaseRecord {
  id: number;
  name: string;
  owner: string | null;
  /** Epoch ms. */
  until: number;
}
