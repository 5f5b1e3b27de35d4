// REST v2 routes for site health and the update history (issue 28): GET /sites/{id}/health answers the stored latest
// probe (read-only: no outgoing call), POST probes now; /updates/history fleet-wide and /updates/{id}/history for a
// site (before /updates/:id_or_domain in the table).
import { z } from 'zod';
import { checkSiteHealth, getSiteHealth, listUpdateHistory } from '../../abilities/health.js';
import { EDIT, READ, route, type RestArgs } from '../rest-door.js';
import { list, pick, site } from './args.js';
import { Int, ListArg, ok } from './answers.js';

const H = getSiteHealth.output;
const L = listUpdateHistory.output.shape;

const healthGet = route(READ, '/sites/:id_or_domain/health', getSiteHealth, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  answers: ok({ data: H }),
  output: (r) => ({ success: 1, data: r }),
});

const healthProbe = route(EDIT, '/sites/:id_or_domain/health', checkSiteHealth, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  answers: ok({ data: H }),
  output: (r) => ({ success: 1, data: r }),
});

const OutcomeArg = ListArg(
  z.enum(['updated', 'failed', 'skipped', 'rolled_back', 'rollback_failed', 'installed']),
  'Only these outcomes, one or a comma list.',
);
const historyInput = (a: RestArgs) => ({
  ...pick(a, 'action', 'type', 'slug', 'since', 'until', 'page', 'per_page'),
  ...(list(a.args.outcome ?? a.args.outcomes) ? { outcomes: list(a.args.outcome ?? a.args.outcomes)!.map((v) => String(v).trim()) } : {}),
});
const historyAnswer = ok({ total: Int, page: Int, per_page: Int, data: L.entries });
const historyArgs = { outcome: OutcomeArg, outcomes: OutcomeArg.describe('Same as outcome.') };

const history = route(READ, '/updates/history', listUpdateHistory, {
  input: (a) => ({ ...historyInput(a), ...pick(a, 'site_id_or_domain') }),
  args: historyArgs,
  answers: historyAnswer,
  output: (r) => ({ success: 1, total: r.total, page: r.page, per_page: r.per_page, data: r.entries }),
});

const siteHistory = route(READ, '/updates/:id_or_domain/history', listUpdateHistory, {
  input: (a) => ({ ...historyInput(a), site_id_or_domain: site(a) }),
  args: historyArgs,
  answers: historyAnswer,
  output: (r) => ({ success: 1, total: r.total, page: r.page, per_page: r.per_page, data: r.entries }),
});

export const healthRoutes = [healthGet, healthProbe, history, siteHistory];
