// Shapes the store keeps for update policies (issue 28 part 4): the policies, one run per (policy, window start), and
// when each pending update was first seen on a site (for a policy's delay).

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export interface PolicyTargets {
  /** Every site; else the union of the lists below. */
  all: boolean;
  sites: number[];
  tags: number[];
  clients: number[];
}

export interface PolicyUpdates {
  /** 'minor': x.y.z → x.y.w only; 'major': any newer core. */
  core: 'none' | 'minor' | 'major';
  plugins: boolean;
  themes: boolean;
  translations: boolean;
  /** Which slugs: every one, only the listed ones, or every one but them. */
  slugs_mode: 'all' | 'only' | 'except';
  slugs: string[];
  /**
   * Only updates whose new version fixes a known vulnerability matched on the site (issue 30). Absent in policies saved
   * before it existed: false.
   */
  security_only?: boolean;
}

export interface PolicyWindow {
  days: Weekday[];
  /** Local "HH:MM" in each site's time zone; an end before the start runs past midnight (days name the start's day). */
  start: string;
  end: string;
}

export interface UpdatePolicyRecord {
  id: number;
  name: string;
  /** Set by the stop rule or a caller; a paused policy starts no run until resumed. */
  paused: boolean;
  paused_reason: string;
  paused_at: string | null;
  targets: PolicyTargets;
  updates: PolicyUpdates;
  /** An update must have been pending this many days (its new version first seen that long ago). */
  delay_days: number;
  window: PolicyWindow;
  /** Sites updated at once in a run. */
  max_sites: number;
  /** Pause after this many failed or rolled-back items in one run. */
  stop_after: number;
  created_at: string;
  updated_at: string;
}

/** One window of one policy, run once: claimed by inserting this record (unique per policy and window start). */
export interface PolicyRunRecord {
  id: number;
  policy_id: number;
  /** UTC instants of the window (sites whose local window starts at the same instant share a run). */
  window_start: string;
  window_end: string;
  job_id: string;
  site_ids: number[];
  created_at: string;
  /** Set when the stop rule paused the policy during this run. */
  stopped: string | null;
}

/** When each pending update of a site was first seen: `type:slug:language:new_version` → ISO time. */
export interface PendingSeenRecord {
  id: number;
  seen: Record<string, string>;
}
