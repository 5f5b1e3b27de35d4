// REST v2 tag routes.
import { addTag, deleteTag, getTag, getTagClients, getTagSites, listTags, updateTag } from '../../abilities/tags.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestRoute } from '../rest-door.js';
import { batch, pathId, pick } from './args.js';
import { Tag } from '../../abilities/schemas.js';
import { done, listed } from './answers.js';

const EXAMPLE_TAG = {
  id: 2,
  name: 'Production',
  color: '#21ba45',
  sites_count: 2,
  sites_ids: [12, 14],
  created_at: '2025-11-02T10:00:00.000Z',
  updated_at: '2025-11-02T10:00:00.000Z',
};

const tagsList = route(READ, '/tags', listTags, {
  input: (a) => pick(a, 'page', 'per_page', 'search', 'include', 'exclude'),
  answers: listed(Tag),
  example: { response: { success: 1, total: 1, data: [EXAMPLE_TAG] } },
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const tagGet = route(READ, '/tags/:id', getTag, {
  input: (a) => ({ tag_id: pathId(a) }),
});
const tagAdd = route(CREATE, '/tags/add', addTag, {
  input: (a) => pick(a, 'name', 'color'),
  answers: done(Tag),
  example: {
    request: { name: 'Production', color: '#21ba45' },
    response: { success: 1, message: 'Tag created successfully.', data: EXAMPLE_TAG },
  },
  output: (r) => ({ success: 1, message: 'Tag created successfully.', data: r }),
});
const tagEdit = route(EDIT, '/tags/:id/edit', updateTag, {
  input: (a) => ({ tag_id: pathId(a), ...pick(a, 'name', 'color') }),
  answers: done(Tag),
  output: (r) => ({ success: 1, message: 'Tag updated successfully.', data: r }),
});
const tagRemove = route(REMOVE, '/tags/:id/remove', deleteTag, {
  input: (a) => ({ tag_id: pathId(a), confirm: true }),
  answers: done(deleteTag.output.shape.tag),
  output: (r) => ({ success: 1, message: 'Tag deleted successfully.', data: r.tag }),
});
const tagSites = route(READ, '/tags/:id/sites', getTagSites, {
  input: (a) => ({ tag_id: pathId(a), ...pick(a, 'page', 'per_page') }),
  answers: listed(getTagSites.output.shape.sites.element),
  output: (r) => ({ success: 1, total: r.total, data: r.sites }),
});
const tagClients = route(READ, '/tags/:id/clients', getTagClients, {
  input: (a) => ({ tag_id: pathId(a), ...pick(a, 'page', 'per_page') }),
  answers: listed(getTagClients.output.shape.clients.element),
  output: (r) => ({ success: 1, total: r.total, data: r.clients }),
});
export const runTagsBatch = batch({ create: tagAdd, update: tagEdit, delete: tagRemove }, 'id');
const tagsBatch: RestRoute = {
  methods: EDIT,
  path: '/tags/batch',
  handler: runTagsBatch,
  doc: { summary: 'Tag batch', description: 'Create, edit and delete tags in one request.', batch: runTagsBatch.shape },
};

export const tagRoutes: readonly RestRoute[] = [tagsList, tagAdd, tagsBatch, tagGet, tagEdit, tagRemove, tagSites, tagClients];
