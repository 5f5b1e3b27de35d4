// Which sites a users / posts operation reaches: the selectors — websites (site ids or domains), groups (tag ids
// or names), clients (client ids), combined as a union — with the bounded fan-out of one child call per site, and
// the lookup of the one site of a single-site operation.
import type { z } from 'zod';
import type { CallContext } from '../core/ability.js';
import type { ItemError, SkippedSite } from '../core/results.js';
import type { Config } from '../config.js';
import type { ChildConnector, SiteCredentials } from '../child/connector.js';
import { ChildError } from '../child/child-error.js';
import { ServiceError } from '../core/errors.js';
import type { SiteRecord } from '../store/records.js';
import { childFailure } from './child-sites.js';
import { siteStatus, type SiteService } from './sites.js';
import { eachSite, type SiteResult } from './jobs.js';
import type { TagService } from './tags.js';
import type { ClientService } from './clients.js';
import type { ChildSiteService } from './child-sites.js';

export interface SiteSelector {
  websites?: ReadonlyArray<number | string>;
  groups?: ReadonlyArray<number | string>;
  clients?: readonly number[];
}

export interface SiteSelection {
  /** Connected sites to act on, in site-list order (URL). */
  sites: SiteRecord[];
  /** Selected but disconnected or suspended: no child traffic, reported instead. */
  skipped: z.infer<typeof SkippedSite>[];
  /** Selector values that name no site, tag or client. */
  unknown: z.infer<typeof ItemError>[];
}

/** What work over several sites needs of the call: when to stop, where progress goes. */
export type FleetCall = Omit<CallContext, 'principal'>;

const miss = (identifier: number | string, code: string, message: string) => ({ identifier, code, message, status: 404 });

/** Why a selected site gets no child traffic, or null when it is connected. */
export function skipNote(s: SiteRecord): z.infer<typeof SkippedSite> | null {
  const status = siteStatus(s);
  if (status === 'connected') return null;
  const message =
    status === 'suspended'
      ? 'Site is suspended; unsuspend it to include it.'
      : s.disconnected
        ? 'Site is disconnected; reconnect it to include it.'
        : `Site is disconnected (last contact failed: ${s.sync_error}); sync or reconnect it to include it.`;
  return { site_id: s.id, site_url: s.url, status, message };
}

/**
 * A child's own refusal (WordPress said no: the user exists, the e-mail is taken, ...) is the caller's to fix: 400
 * svc_child_refused. Everything else is the connector's classification (502/504, childFailure).
 */
export function childOutcomeError(e: unknown, site: { url: string }): ServiceError {
  if (e instanceof ChildError && e.kind === 'child_error') {
    return new ServiceError('svc_child_refused', `${site.url} refused: ${e.message.replace(/^ERROR:\s*/, '')}`, 400, {
      site_url: site.url,
      child_code: e.childCode,
    });
  }
  return childFailure(e, site);
}

export interface Fanned<T> {
  selection: SiteSelection;
  results: SiteResult<T>[];
  notDone: SiteRecord[];
}

/** Which sites a users / posts operation reaches, and one piece of child work on one site or on each selected one. */
export class SiteSelectorService {
  constructor(
    private readonly config: Config,
    private readonly sites: SiteService,
    private readonly tags: TagService,
    private readonly clients: ClientService,
    private readonly children: ChildSiteService,
  ) {}

  /** The tag a `groups` value names: digits are an id first, then a name (a tag may be called "2024"). */
  private findTag(ref: number | string) {
    const asId = typeof ref === 'number' ? ref : /^\s*\d+\s*$/.test(ref) ? Number(ref) : null;
    return (asId !== null ? this.tags.get(asId) : undefined) ?? this.tags.findByName(String(ref));
  }

  /**
   * Resolves the union of the three selectors. Throws 400 svc_sites_required when none is given, and 404
   * svc_sites_not_found when every value given names nothing; otherwise unknown values are reported, not fatal.
   */
  select(sel: SiteSelector): SiteSelection {
    const websites = sel.websites ?? [];
    const groups = sel.groups ?? [];
    const clients = sel.clients ?? [];
    if (websites.length + groups.length + clients.length === 0) {
      throw new ServiceError(
        'svc_sites_required',
        'Select the sites: websites (site IDs or domains), groups (tag IDs or names) and/or clients (client IDs).',
        400,
      );
    }
    const ids = new Set<number>();
    const unknown: SiteSelection['unknown'] = [];
    for (const ref of websites) {
      const site = this.sites.find(ref);
      if (site) ids.add(site.id);
      else
        unknown.push(
          miss(
            ref,
            'svc_site_not_found',
            typeof ref === 'number' || /^\s*\d+\s*$/.test(ref)
              ? `No site found with ID ${Number(ref)}.`
              : `No site found matching "${ref}".`,
          ),
        );
    }
    for (const ref of groups) {
      const tag = this.findTag(ref);
      if (!tag) unknown.push(miss(ref, 'svc_tag_not_found', `No tag (group) found with ID or name "${ref}".`));
      else for (const id of tag.site_ids) ids.add(id);
    }
    for (const id of clients) {
      if (!this.clients.get(id)) unknown.push(miss(id, 'svc_client_not_found', `No client found with ID ${id}.`));
      else for (const s of this.sites.filter({ client_id: id }, () => [])) ids.add(s.id);
    }
    const sites: SiteRecord[] = [];
    const skipped: SiteSelection['skipped'] = [];
    // Site-list order (the sorted index), whatever order the selectors named them in.
    for (const s of this.sites.filter({}, () => [])) {
      if (!ids.has(s.id)) continue;
      const note = skipNote(s);
      if (note) skipped.push(note);
      else sites.push(s);
    }
    if (sites.length + skipped.length === 0 && unknown.length > 0) {
      const message = unknown.length === 1 ? unknown[0]!.message : 'None of the selected sites, groups or clients was found.';
      throw new ServiceError('svc_sites_not_found', message, 404, { unknown });
    }
    return { sites, skipped, unknown };
  }

  /** One piece of child work on a site, with its credentials; connector failures become ServiceErrors. */
  async onChild<T>(site: SiteRecord, work: (c: ChildConnector, creds: SiteCredentials) => Promise<T>): Promise<T> {
    try {
      // Credentials first: a site without keys fails before the connector (and its installation URL) is set up.
      const creds = await this.children.credentials(site);
      return await work(await this.children.connector(), creds);
    } catch (e) {
      throw childOutcomeError(e, site);
    }
  }

  /** Selects the sites, then runs one piece of child work on each connected one (eachSite + onChild). */
  async fanOut<T>(
    call: FleetCall,
    sel: SiteSelector,
    label: string,
    work: (c: ChildConnector, creds: SiteCredentials, site: SiteRecord) => Promise<T>,
  ): Promise<Fanned<T>> {
    const selection = this.select(sel);
    const fan = { config: this.config, signal: call.signal, progress: call.progress };
    const { results, notDone } = await eachSite(fan, selection.sites, label, (site) =>
      this.onChild(site, (c, creds) => work(c, creds, site)),
    );
    return { selection, results, notDone };
  }

  /** A single-site operation's site: by id or domain (404), refused when suspended or disconnected (409, no child call). */
  reachable(ref: number | string): SiteRecord {
    const site = this.sites.resolve(ref);
    this.children.assertReachable(site);
    return site;
  }
}

/** A failed site as an errors[] item (identifier = site id). */
export const siteError = (r: { site: SiteRecord; error: ServiceError }): z.infer<typeof ItemError> => ({
  identifier: r.site.id,
  code: r.error.code,
  message: r.error.message,
  status: r.error.status,
});
