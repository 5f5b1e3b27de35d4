// Shapes the store keeps for site health (issue 28): each site's probe settings, latest probe and response-time
// baseline (collection site_health, id = the site's id), and the update history (collection update_history), each
// kept apart from the site records so that neither makes a tag edit rewrite them.

export type HealthStatus = 'healthy' | 'degraded' | 'unhealthy';
export type PageKind = 'home' | 'login' | 'extra';

export interface HealthPage {
  kind: PageKind;
  url: string;
  final_url: string;
  http_status: number;
  ms: number;
  bytes: number;
  redirects: number;
  ok: boolean;
  problem: string | null;
  message: string | null;
}

/** One probe of a site: what each page answered and the verdict. */
export interface HealthReport {
  status: HealthStatus;
  checked_at: string;
  duration_ms: number;
  /** The content marker looked for on the home page and where it came from ('none': nothing known yet). */
  marker: { text: string; source: 'keyword' | 'title' | 'none'; found: boolean };
  /** The home page's response time, and the site's own baseline it was judged against (null: not enough probes yet). */
  response_ms: number | null;
  baseline_ms: number | null;
  slow: boolean;
  pages: HealthPage[];
  /** One line: "healthy" or the problems, for answers and the history. */
  summary: string;
}

export interface HealthSettings {
  /** Extra paths probed besides the home page and wp-login.php (e.g. "/shop/"). */
  urls: string[];
  /** Text the home page must contain; '' = the site's title (learned from its home page). */
  keyword: string;
}

export interface SiteHealthRecord {
  id: number;
  settings: HealthSettings;
  /** The site's title as its home page showed it on the first probe that found the site well: the default marker. */
  title: string | null;
  /** Moving average of the home page's response time over well probes, and how many fed it. */
  baseline_ms: number | null;
  baseline_samples: number;
  latest: HealthReport | null;
}

export const UPDATE_OUTCOMES = ['updated', 'failed', 'skipped', 'rolled_back', 'rollback_failed', 'installed'] as const;
export type UpdateOutcome = (typeof UPDATE_OUTCOMES)[number];
/** What an entry records: an update of an installed item, or an install (issue 29). */
export const HISTORY_ACTIONS = ['update', 'install'] as const;
export type HistoryAction = (typeof HISTORY_ACTIONS)[number];

/** Who or what started an update attempt. */
export interface UpdateActor {
  kind: 'user' | 'key' | 'oauth' | 'local' | 'job' | 'policy';
  id: number | null;
  name: string;
}

/** One update attempt of one item on one site. Compact field names are not worth it: a few hundred bytes each. */
export interface UpdateHistoryRecord {
  id: number;
  site_id: number;
  site_url: string;
  type: 'core' | 'plugin' | 'theme' | 'translation' | 'site';
  slug: string;
  name: string;
  from: string | null;
  to: string | null;
  outcome: UpdateOutcome;
  /** Why (the error, the skip reason, what the rollback did); '' when it simply updated. */
  reason: string;
  code: string;
  actor: UpdateActor;
  /** When the attempt started and how long it took (ms). */
  at: string;
  duration_ms: number;
  safe: boolean;
  /** The probes' verdicts around it, when probed (safe mode): "healthy → unhealthy: home fatal_error". */
  probe: { before: HealthStatus | null; after: HealthStatus | null; summary: string } | null;
  /** Absent on updates (and on every entry written before installs were recorded): read as 'update'. */
  action?: HistoryAction;
}
