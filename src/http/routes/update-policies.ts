// REST v2 routes for update policies (issue 28 part 4) under /updates/policies (before /updates/:id_or_domain in the
// table). Fields as the abilities name them (flat, so that forms work too).
import {
  addUpdatePolicy,
  deleteUpdatePolicy,
  listUpdatePolicies,
  previewUpdatePolicy,
  updateUpdatePolicy,
} from '../../abilities/update-policies.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestArgs } from '../rest-door.js';
import { flag, pathId, pick } from './args.js';
import { done, listed, ok } from './answers.js';

const NOT_FOUND = { 404: ['svc_policy_not_found'] };
const FIELDS = ['name', 'all_sites', 'sites', 'tags', 'clients', 'core', 'plugins', 'themes', 'translations', 'slugs_mode', 'slugs'].concat(
  ['security_only', 'delay_days', 'days', 'start', 'end', 'max_sites', 'stop_after'],
);
const id = (a: RestArgs) => Number(pathId(a));

const list = route(READ, '/updates/policies', listUpdatePolicies, {
  input: () => ({}),
  answers: listed(listUpdatePolicies.output.shape.items.element),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const add = route(CREATE, '/updates/policies/add', addUpdatePolicy, {
  input: (a) => pick(a, ...FIELDS),
  answers: done(addUpdatePolicy.output),
  errors: {
    400: ['svc_invalid_window', 'svc_invalid_input'],
    404: ['svc_site_not_found', 'svc_tag_not_found', 'svc_client_not_found'],
    409: ['svc_policy_limit'],
  },
  output: (r) => ({ success: 1, message: 'Update policy created.', data: r }),
});
const preview = route(READ, '/updates/policies/:id/preview', previewUpdatePolicy, {
  input: (a) => ({ policy_id: id(a) }),
  answers: ok({ data: previewUpdatePolicy.output }),
  errors: NOT_FOUND,
  output: (r) => ({ success: 1, data: r }),
});
const edit = route(EDIT, '/updates/policies/:id/edit', updateUpdatePolicy, {
  input: (a) => ({ policy_id: id(a), ...pick(a, ...FIELDS, 'paused') }),
  answers: done(updateUpdatePolicy.output),
  errors: { ...NOT_FOUND, 400: ['svc_invalid_window', 'svc_invalid_input'] },
  output: (r) => ({ success: 1, message: 'Update policy saved.', data: r }),
});
const remove = route([...REMOVE, 'POST'], '/updates/policies/:id/remove', deleteUpdatePolicy, {
  input: (a) => ({ policy_id: id(a), ...(flag(a, 'dry_run', false) ? { dry_run: true } : { confirm: true }) }),
  answers: done(deleteUpdatePolicy.output.shape.policy),
  errors: NOT_FOUND,
  output: (r) => ({ success: 1, message: r.dry_run ? 'Dry run: the policy would be deleted.' : 'Update policy deleted.', data: r.policy }),
});

export const updatePolicyRoutes = [list, add, preview, edit, remove];
