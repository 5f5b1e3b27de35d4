// REST v2 tag routes.
import { addTag, deleteTag, getTag, getTagClients, getTagSites, listTags, updateTag } from '../../abilities/tags.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestRoute } from '../rest-door.js';
import { batch, pathId, pick } from './args.js';

const tagsList = route(READ, '/tags', listTags, {
  input: (a) => pick(a, 'page', 'per_page', 'search', 'include', 'exclude'),
  output: (r) => ({ success: 1, total: r.total, data: r.items }),
});
const tagGet = route(READ, '/tags/:id', getTag, {
  input: (a) => ({ tag_id: pathId(a) }),
  output: (r) => ({ success: 1, data: r }),
});
const tagAdd = route(CREATE, '/tags/add', addTag, {
  input: (a) => pick(a, 'name', 'color'),
  output: (r) => ({ success: 1, message: 'Tag created successfully.', data: r }),
});
const tagEdit = route(EDIT, '/tags/:id/edit', updateTag, {
  input: (a) => ({ tag_id: pathId(a), ...pick(a, 'name', 'color') }),
  output: (r) => ({ success: 1, message: 'Tag updated successfully.', data: r }),
});
const tagRemove = route(REMOVE, '/tags/:id/remove', deleteTag, {
  input: (a) => ({ tag_id: pathId(a), confirm: true }),
  output: (r) => ({ success: 1, message: 'Tag deleted successfully.', data: r.tag }),
});
const tagSites = route(READ, '/tags/:id/sites', getTagSites, {
  input: (a) => ({ tag_id: pathId(a), ...pick(a, 'page', 'per_page') }),
  output: (r) => ({ success: 1, total: r.total, data: r.sites }),
});
const tagClients = route(READ, '/tags/:id/clients', getTagClients, {
  input: (a) => ({ tag_id: pathId(a), ...pick(a, 'page', 'per_page') }),
  output: (r) => ({ success: 1, total: r.total, data: r.clients }),
});
export const runTagsBatch = batch({ create: tagAdd, update: tagEdit, delete: tagRemove }, 'id');
const tagsBatch: RestRoute = { methods: EDIT, path: '/tags/batch', handler: runTagsBatch };


export const tagRoutes: readonly RestRoute[] = [tagsList, tagAdd, tagsBatch, tagGet, tagEdit, tagRemove, tagSites, tagClients];
