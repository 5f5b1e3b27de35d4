// Shapes of what the store keeps. These are storage records, not API views: the abilities' zod
// schemas describe what callers see, and services map one onto the other.
import type { UpdateActor } from './health-records.js';
import type { ChildUser, SecurityFinding, SiteChange, SitePending, SitePlugin, SiteTheme } from '../child/snapshot.js';
import type { UserRole } from '../core/principal.js';
import type { Scope } from '../core/scope.js';

export interface SiteStats {
  plugin_updates: number;
  theme_updates: number;
  wp_update_available: boolean;
  health_score: number | null;
}

export interface CheckResult {
  at: string;
  reachable: boolean;
  http_status: number;
  response_time_ms: number;
}

export interface SiteRecord {
  id: number;
  url: string;
  name: string;
  admin_username: string;
  client_id: number | null;
  notes: string;
  suspended: boolean;
  /** Disconnected on purpose (disconnect-site): no child traffic until a reconnect. */
  disconnected: boolean;
  /** Non-empty when the last contact failed: the site then shows as disconnected until a sync succeeds. */
  sync_error: string;
  wp_version: string;
  php_version: string;
  child_version: string;
  /** The site's time zone from its last sync (IANA name or "+HH:MM"); absent before the first sync that reported it. */
  timezone?: string | null;
  last_sync: string | null;
  stats: SiteStats;
  ssl_verify: boolean;
  http_user: string | null;
  sign_algo: number;
  last_check: CheckResult | null;
  /** The site's tags, ascending (absent: none). Membership lives here, not on the tag (data format 3; domain/tags.ts). */
  tag_ids?: number[];
  created_at: string;
  updated_at: string;
}

export interface TagRecord {
  id: number;
  name: string;
  color: string | null;
  created_at: string;
  updated_at: string;
}

export const CLIENT_STATUSES = ['active', 'suspended', 'lead', 'lost'] as const;
export type ClientStatus = (typeof CLIENT_STATUSES)[number];

export interface ClientRecord {
  id: number;
  name: string;
  /** '' when unknown; otherwise unique among clients, whatever the letter case. */
  email: string;
  status: ClientStatus;
  created_at: string;
  // Contact fields and updated_at came after the first clients were stored: absent reads as ''.
  updated_at?: string;
  phone?: string;
  address_1?: string;
  address_2?: string;
  city?: string;
  state?: string;
  zip?: string;
  country?: string;
  note?: string;
  facebook?: string;
  twitter?: string;
  instagram?: string;
  linkedin?: string;
}

/** A custom field defined for clients (issue 21). */
export interface ClientFieldRecord {
  id: number;
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
}

/** A client's custom field values: id = the client's id; values by field id (as a string key). */
export interface ClientFieldValuesRecord {
  id: number;
  values: Record<string, string>;
}

export const PAYMENT_TYPES = ['subscription', 'lifetime'] as const;
export const PRODUCT_TYPES = ['plugin', 'theme', 'hosting', 'service', 'other'] as const;
export const LICENSE_TYPES = ['single_site', 'multi_site'] as const;
export const RENEWAL_TYPES = ['weekly', 'monthly', 'quarterly', 'yearly'] as const;
export const COST_STATUSES = ['active', 'canceled', 'onhold', 'expired', 'pending_cancelation'] as const;
export type PaymentType = (typeof PAYMENT_TYPES)[number];
/** The default product types are PRODUCT_TYPES; more are defined in the cost-tracker settings (issue 21). */
export type ProductType = string;
export type LicenseType = (typeof LICENSE_TYPES)[number];
export type RenewalType = (typeof RENEWAL_TYPES)[number];
export type CostStatus = (typeof COST_STATUSES)[number];

/** A cost-tracker entry. The next renewal is not stored: it is computed when read, so it is never stale. */
export interface CostRecord {
  id: number;
  name: string;
  price: number;
  payment_type: PaymentType;
  product_type: ProductType;
  product_slug: string;
  license_type: LicenseType;
  /** null for a lifetime cost given no renewal type. */
  renewal_type: RenewalType | null;
  /** YYYY-MM-DD (UTC) or null. */
  last_renewal: string | null;
  payment_method: string;
  cost_tracker_status: CostStatus;
  url: string;
  note: string;
  product_color: string | null;
  icon_hidden: boolean;
  /** Targets (site, tag and client ids), unioned. Deleting a site, tag or client removes it here. */
  sites: number[];
  groups: number[];
  clients: number[];
  created_at: string;
  updated_at: string;
}

export interface UserRecord {
  id: number;
  name: string;
  role: UserRole;
  /** The sites this user may see and act on (core/scope.ts); absent or null: the whole fleet. Never on administrators. */
  scope?: Scope | null;
  /** scrypt-free on purpose: application passwords are 144 random bits, so SHA-256 with a salt is enough. */
  salt: string;
  password_hash: string;
  created_at: string;
}

/**
 * A web console login (domain/console-sessions.ts). Only a hash of the session token is kept: the token itself lives
 * in the browser's cookie alone. `role` is the user's role at login: a session whose user's role differs has ended.
 */
export interface ConsoleSessionRecord {
  id: number;
  user_id: number;
  role: UserRole;
  /** sha256 of the cookie's token, hex. */
  token_hash: string;
  created_at: string;
  expires_at: string;
}

/**
 * An "Open WP Admin" link not yet used (domain/admin-logins.ts): only a hash of its token, the site, who made it and
 * when it stops working. Claimed (deleted) by its first use in whichever process the browser reaches.
 */
export interface AdminLoginRecord {
  id: number;
  /** sha256 of the link's token, hex. */
  token_hash: string;
  site_id: number;
  actor: UpdateActor;
  expires_at: string;
}

export interface KeyRecord {
  id: number;
  name: string;
  permissions: 'read' | 'write' | 'read_write' | 'delete';
  /** Public half of the token, used to find the record. */
  key_id: string;
  /** Per-key random salt; secret_hash = sha256(salt + sha256(secret)). */
  salt: string;
  secret_hash: string;
  created_at: string;
  revoked: boolean;
  /** An administrator key may run the administrators-only abilities (keys, users, the audit log). Absent: false. */
  admin?: boolean;
  /** The sites this key may see and act on (core/scope.ts); absent or null: the whole fleet. Never on administrator keys. */
  scope?: Scope | null;
  /** ISO time after which the key is refused as if revoked; absent or null: never. */
  expires_at?: string | null;
  /** Tool (ability) names the key may use, and none other; absent or null: every one its permissions allow. */
  allow_tools?: string[] | null;
  /** Tool names the key may never use; absent or null: none. */
  deny_tools?: string[] | null;
}

export interface SettingsRecord {
  id: 1;
  modules: { logs: boolean; 'cost-tracker': boolean };
  /** Sent to children as `server`: they recognise this installation by it on reconnect. */
  installation_url?: string;
}

/** Private half of a site's connection, in secrets/<id>.json (mode 0600). Never leaves the server. */
export interface SiteSecret {
  private_key_pem: string;
  http_pass: string | null;
  /** The child's register-verify key: lets a reconnect renew keys without the admin password. */
  regverify: string | null;
}

/** What the last sync brought from the child, in site-data/<id>.json. */
export interface SiteData {
  plugins: SitePlugin[];
  themes: SiteTheme[];
  security: SecurityFinding[];
  changes: SiteChange[];
  /** Where the child's changes log was read up to (see SiteSnapshot.changes_cursor). */
  changes_cursor?: string | null;
  users: ChildUser[];
  /** Pending updates as of the last sync or update reply; absent in data stored before updates were kept. */
  updates?: SitePending;
  synced_at: string;
}

/** An ignore rule: a site's (site_id > 0) or the whole fleet's (site_id 0). slug '*' ignores the whole type. */
export interface IgnoreRecord {
  id: number;
  site_id: number;
  type: 'core' | 'plugin' | 'theme';
  slug: string;
  name: string;
  /** ['*'] = every version, else the versions ignored. */
  versions: string[];
  created_at: string;
}

export type JobType = 'sync' | 'reconnect' | 'disconnect' | 'check' | 'suspend' | 'renew' | 'update' | 'install' | 'policy';
export type JobStatus = 'queued' | 'processing' | 'completed' | 'failed';

export interface JobRecord {
  id: number;
  job_id: string;
  type: JobType;
  status: JobStatus;
  sites: number[];
  /**
   * The job_chunks records holding its progress, one per JOB_CHUNK sites in list order (domain/job-chunks.ts). A job
   * made before chunks has none: its progress is in done, succeeded, errors and items here.
   */
  chunks?: number[];
  /** Jobs made before chunks: site ids already processed, in order (a resumed job skips them). */
  done?: number[];
  succeeded?: number;
  /** With chunks: what the job's end added (a cancel's note); before chunks: every error. */
  errors: Array<{ site_id: number; code: string; message: string }>;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  /** The process working on it and until when its claim holds; a dead owner's job is taken over. */
  owner: string | null;
  lease_until: number;
  attempts: number;
  failure: string | null;
  /** What the job was asked to do, for job types that take more than a site list (update: types, items). */
  params?: Record<string, unknown>;
  /** Set by a cancel: the runner starts no further site and ends the job as failed ("cancelled"). */
  cancel_requested?: boolean;
  /** Why it was cancelled, when the canceller said (a policy deleted or paused mid-run): in the job's last error. */
  cancel_reason?: string;
  /** With chunks: the rows the job's end added (sites never started); before chunks: every item row. */
  items?: unknown[];
}

/** The progress of JOB_CHUNK sites of a job (from = the place of the first in the job's site list). */
export interface JobChunkRecord {
  id: number;
  job: number;
  from: number;
  /** Site ids recorded, in the order they were. */
  done: number[];
  succeeded: number;
  errors: JobRecord['errors'];
  /** Per-item results (update, install and policy jobs), in the order they were recorded. */
  items: unknown[];
}

/** A job with its progress gathered from its chunks: what views, events and policies read. */
export interface JobState extends JobRecord {
  done: number[];
  succeeded: number;
  items: unknown[];
}
