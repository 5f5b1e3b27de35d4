// The rollback of safe updates (issue 28): an item whose update left a healthy site unhealthy is put back — a plugin
// or theme reinstalled at the version it had, with overwrite, through the child's installplugintheme from the package
// source (--package-source: the wordpress.org directory or a stand-in); with no package of that version (a premium
// plugin) the plugin is deactivated instead, and the answer says so. The site is probed again: the item ends
// rolled_back (healthy again) or rollback_failed (still unhealthy, or nothing could be done), with the reason and the
// probes' evidence.
//
// Core and translations cannot be put back, and end rollback_failed saying why (what the site is left with is in the
// evidence; the rest of the site's run is skipped, as for a site unhealthy before):
// - core: the MainWP Child 6.1 has no way to install an older WordPress. Its `upgrade` applies only an offer from
//   WordPress's update_core transient — refreshed from api.wordpress.org's version check in the same call — whose
//   version is at least the installed one (`version_compare(installed, offer, '<=')`); a dashboard can pass it
//   nothing that changes the package, and wordpress.org never offers an older version. `installplugintheme` refuses
//   any type but plugin and theme. (Its `code_snippet` would run PHP sent by the dashboard: sitefleet does not send
//   code to run on its sites.)
// - translations: wordpress.org keeps only the latest language pack of each plugin, theme and WordPress version, so
//   there is no older one to reinstall. Translations are never held back for it: they are probed like every item,
//   and a regression after one is reported loudly.
import type { ChildConnector, SiteCredentials } from '../child/connector.js';
import type { HealthReport } from '../store/health-records.js';
import type { SiteRecord } from '../store/records.js';
import { childFailure } from './child-sites.js';
import type { HealthService } from './health.js';
import type { PackageSource } from './package-source.js';

export interface RollbackItem {
  type: 'core' | 'plugin' | 'theme' | 'translation';
  slug: string;
  name: string;
  current_version: string | null;
  new_version: string;
}

export interface RollbackView {
  site_id: number;
  site_url: string;
  site_name: string;
  type: RollbackItem['type'];
  slug: string;
  name: string;
  /** The version it had (put back) and the version that broke the site. */
  from_version: string | null;
  to_version: string;
  outcome: 'rolled_back' | 'rollback_failed';
  /** What was done: the old version reinstalled, the plugin deactivated (no package of the old version), or nothing. */
  action: 'reinstalled' | 'deactivated' | 'none';
  package_url: string | null;
  reason: string;
  evidence: {
    before: string;
    after: string;
    after_rollback: string | null;
    /** The pages that failed after the update. */
    problems: Array<{ kind: string; url: string; http_status: number; problem: string | null }>;
  };
}

/** Why core is not put back (see the top of this file), and what to do instead. */
export const coreWhy = (was: string | null) =>
  'WordPress core cannot be put back through the MainWP Child: its core update (upgrade) only installs the newer ' +
  'version wordpress.org offers, and its installer (installplugintheme) takes plugins and themes only. Reinstall WordPress ' +
  (was ? `${was} by hand (https://downloads.wordpress.org/release/wordpress-${was}.zip).` : 'at its previous version by hand.');
export const TRANSLATION_WHY =
  'a translation cannot be put back: wordpress.org keeps only the latest language pack, so there is no older one to ' +
  'reinstall. Remove or fix the language files by hand.';

const folderOf = (i: RollbackItem) => (i.type === 'plugin' ? i.slug.split('/')[0]! : i.slug);

export class UpdateRollback {
  constructor(
    private readonly packages: PackageSource,
    private readonly health: HealthService,
  ) {}

  /** Puts `item` back on `site` after `broken` (the probe that found the regression), then probes again. */
  async rollback(
    connector: ChildConnector,
    creds: SiteCredentials,
    site: SiteRecord,
    item: RollbackItem,
    before: HealthReport,
    broken: HealthReport,
  ): Promise<{ view: RollbackView; after: HealthReport | null }> {
    const base = {
      site_id: site.id,
      site_url: site.url,
      site_name: site.name,
      type: item.type,
      slug: item.slug,
      name: item.name,
      from_version: item.current_version,
      to_version: item.new_version,
    };
    const evidence = (after: HealthReport | null) => ({
      before: before.summary,
      after: broken.summary,
      after_rollback: after?.summary ?? null,
      problems: broken.pages
        .filter((p) => !p.ok)
        .map((p) => ({ kind: p.kind, url: p.url, http_status: p.http_status, problem: p.problem })),
    });
    const broke = `${item.name} ${item.new_version} left the site unhealthy (${broken.summary})`;
    if (item.type === 'core' || item.type === 'translation') {
      return {
        view: {
          ...base,
          outcome: 'rollback_failed',
          action: 'none',
          package_url: null,
          reason: `${broke}; ${item.type === 'core' ? coreWhy(item.current_version) : TRANSLATION_WHY}`,
          evidence: evidence(null),
        },
        after: null,
      };
    }
    let action: RollbackView['action'] = 'none';
    let packageUrl: string | null = null;
    let why = '';
    if (!item.current_version) why = 'the version it had is unknown';
    else {
      try {
        packageUrl = (await this.packages.resolve(item.type, folderOf(item), item.current_version)).download_url;
      } catch (e) {
        why = `no package of ${item.current_version}: ${(e as Error).message}`;
      }
    }
    if (packageUrl) {
      try {
        const got = await connector.install(creds, item.type, packageUrl, { overwrite: true });
        if (got && got.version === item.current_version) action = 'reinstalled';
        else
          why = `the reinstall of ${item.current_version} from ${packageUrl} reported ${got ? `version ${got.version}` : 'nothing installed'}`;
      } catch (e) {
        why = `the reinstall of ${item.current_version} from ${packageUrl} failed: ${childFailure(e, site).message}`;
      }
    }
    if (action === 'none' && item.type === 'plugin') {
      try {
        await connector.pluginAction(creds, 'deactivate', [item.slug]);
        action = 'deactivated';
      } catch (e) {
        why = `${why}; deactivating it failed too: ${childFailure(e, site).message}`;
      }
    }
    if (action === 'none') {
      return {
        view: {
          ...base,
          outcome: 'rollback_failed',
          action,
          package_url: packageUrl,
          reason: `${broke}; it could not be put back: ${why}${item.type === 'theme' ? ' (a theme cannot be deactivated instead)' : ''}.`,
          evidence: evidence(null),
        },
        after: null,
      };
    }
    const after = await this.health.probe(site);
    const done =
      action === 'reinstalled' ? `reinstalled ${item.current_version} from ${packageUrl}` : `deactivated the plugin instead (${why})`;
    const well = after.status !== 'unhealthy';
    return {
      view: {
        ...base,
        outcome: well ? 'rolled_back' : 'rollback_failed',
        action,
        package_url: packageUrl,
        reason: well
          ? `${broke}; ${done}; the site is ${after.status} again.`
          : `${broke}; ${done}, but the site is still unhealthy (${after.summary}).`,
        evidence: evidence(after),
      },
      after,
    };
  }
}
