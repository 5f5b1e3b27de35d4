// REST v2 vulnerability routes (issue 30): the fleet-wide list, one site's list, the one-call fix and the feed
// refresh. Each record carries its feed's attribution, as the abilities answer it.
import {
  fixVulnerabilitiesAbility,
  getSiteVulnerabilities,
  listVulnerabilities,
  refreshVulnerabilityFeed,
} from '../../abilities/vulnerabilities.js';
import { CREATE, READ, route } from '../rest-door.js';
import { pick, site } from './args.js';
import { Int, SimpleSite, listed, ok } from './answers.js';

const L = listVulnerabilities.output.shape;
const FEED_ERRORS = {
  400: ['svc_feed_invalid', 'svc_address_not_allowed'],
  409: ['svc_feed_not_configured'],
  502: ['svc_feed_auth_failed', 'svc_feed_unavailable'],
  503: ['svc_feed_rate_limited'],
};

const list = route(READ, '/vulnerabilities', listVulnerabilities, {
  input: (a) => pick(a, 'severity', 'site', 'slug', 'fixable', 'include_informational', 'installs_per_record', 'page', 'per_page'),
  answers: listed(L.items.element, { page: Int, per_page: Int, feed: L.feed }),
  errors: { 404: ['svc_site_not_found'] },
  output: (r) => ({ success: 1, total: r.total, page: r.page, per_page: r.per_page, data: r.items, feed: r.feed }),
});

const ofSite = route(READ, '/sites/:id_or_domain/vulnerabilities', getSiteVulnerabilities, {
  input: (a) => ({ site_id_or_domain: site(a), ...pick(a, 'include_informational') }),
  answers: listed(getSiteVulnerabilities.output.shape.items.element, { site: SimpleSite, feed: L.feed }),
  errors: { 404: ['svc_site_not_found'] },
  output: (r) => ({ success: 1, total: r.total, data: r.items, site: r.site, feed: r.feed }),
});

const fix = route(CREATE, '/vulnerabilities/fix', fixVulnerabilitiesAbility, {
  input: (a) => pick(a, 'sites', 'vulnerabilities', 'slug', 'dry_run', 'confirm', 'safe', 'force'),
  answers: ok({ data: fixVulnerabilitiesAbility.output }),
  errors: { 400: ['svc_confirmation_required', 'svc_invalid_input'], 404: ['svc_site_not_found'] },
  output: (r) => ({ success: 1, data: r }),
});

const refresh = route(CREATE, '/vulnerabilities/refresh', refreshVulnerabilityFeed, {
  input: () => ({}),
  answers: ok({ data: refreshVulnerabilityFeed.output }),
  errors: FEED_ERRORS,
  output: (r) => ({ success: 1, data: r }),
});

export const vulnerabilityRoutes = [list, fix, refresh, ofSite];
