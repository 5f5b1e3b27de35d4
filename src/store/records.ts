// Shapes of what the store keeps. These are storage records, not API views: the abilities' zod
// schemas describe what callers see, and services map one onto the other.
import type { ChildUser, SecurityFinding, SiteChange, SitePlugin, SiteTheme } from '../child/snapshot.js';

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
  last_sync: string | null;
  stats: SiteStats;
  ssl_verify: boolean;
  http_user: string | null;
  sign_algo: number;
  last_check: CheckResult | null;
  created_at: string;
  updated_at: string;
}

export interface TagRecord {
  id: number;
  name: string;
  color: string | null;
  site_ids: number[];
  created_at: string;
  updated_at: string;
}

export interface ClientRecord {
  id: number;
  name: string;
  email: string;
  status: 'active' | 'suspended' | 'lead' | 'lost';
  created_at: string;
}

export interface UserRecord {
  id: number;
  name: string;
  role: 'administrator' | 'viewer';
  /** scrypt-free on purpose: application passwords are 144 random bits, so SHA-256 with a salt is enough. */
  salt: string;
  password_hash: string;
  created_at: string;
}

export interface KeyRecord {
  id: number;
  name: string;
  permissions: 'read' | 'write' | 'read_write' | 'delete';
  /** Public half of the token, used to find the record. */
  key_id: string;
  secret_hash: string;
  created_at: string;
  revoked: boolean;
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
  users: ChildUser[];
  synced_at: string;
}

export type JobType = 'sync' | 'reconnect' | 'disconnect' | 'check' | 'suspend';
export type JobStatus = 'queued' | 'processing' | 'completed' | 'failed';

export interface JobRecord {
  id: number;
  job_id: string;
  type: JobType;
  status: JobStatus;
  sites: number[];
  /** Site ids already processed, in order: a resumed job skips them. */
  done: number[];
  succeeded: number;
  errors: Array<{ site_id: number; code: string; message: string }>;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  /** The process working on it and until when its claim holds; a dead owner's job is taken over. */
  owner: string | null;
  lease_until: number;
  attempts: number;
  failure: string | null;
}
