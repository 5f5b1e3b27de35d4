// REST v2 page routes (upstream's six, as the post routes; pages on child sites).
import { createPage, deletePage, getPage, listPages, updatePage, updatePageStatus } from '../../abilities/pages.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestArgs } from '../rest-door.js';
import { list, pick, site } from './args.js';
import { SelectorArgs, selectors } from './users.js';
import { z } from 'zod';
import { ItemError, SkippedSite } from '../../abilities/schemas.js';
import { Int, ListArg, done } from './answers.js';
import { PAGE_EDIT_FIELDS } from '../../domain/posts.js';
import { Created, Deleted, Edited } from './posts.js';

const STATUS_METHODS = ['PUT', 'PATCH', 'POST'] as const;
/** The fields a page write takes: the post service's list for pages. */
const WRITE_FIELDS = PAGE_EDIT_FIELDS;
const SEARCH_ON: Record<string, string> = {
  title: 'title',
  content: 'content',
  body: 'content',
  all: 'all',
  both: 'all',
  'title and body': 'all',
};
const pageRef = (a: RestArgs) => ({ site_id_or_domain: site(a), page_id: a.params.post_id });
/** Every single-page route reads the page on its site first; the child may refuse what it is asked. */
const ONE_PAGE = { 400: ['svc_child_refused'], 404: ['svc_page_not_found'] } as const;

const pagesList = route(READ, '/pages', listPages, {
  input: (a: RestArgs) => {
    const i: Record<string, unknown> = { ...selectors(a), ...pick(a, 'search', 'dtsstart', 'dtsstop', 'maximum') };
    const on = a.args.search_on;
    if (on !== undefined && on !== '') i.search_on = SEARCH_ON[String(on).trim().toLowerCase()] ?? on;
    const status = list(a.args.status);
    if (status) i.status = status.map((s) => (typeof s === 'string' ? s.trim() : s));
    // Upstream takes post_type here and lists pages whatever it says; only "page" means anything.
    if (a.args.post_type !== undefined && a.args.post_type !== 'page') i.post_type = a.args.post_type;
    return i;
  },
  args: {
    ...SelectorArgs,
    search_on: z.string().optional().describe('title, content (body), or all (both, "title and body").'),
    status: ListArg(z.string(), 'Page statuses (publish, draft, …).'),
    post_type: z.literal('page').optional().describe('Upstream\'s; pages are listed, so only "page" is taken (anything else is refused).'),
  },
  errors: { 400: ['svc_sites_required', 'svc_invalid_date', 'svc_invalid_date_range'], 404: ['svc_sites_not_found'] },
  answers: done(listPages.output.shape.data, {
    total: Int,
    errors: z.array(ItemError),
    skipped: z.array(SkippedSite),
    unknown: z.array(ItemError),
  }),
  output: (r) => ({
    success: 1,
    message: 'Get pages successfully.',
    total: r.total,
    data: r.data,
    errors: r.errors,
    skipped: r.skipped,
    unknown: r.unknown,
  }),
});

const pageCreate = route(CREATE, '/pages/:id_or_domain/create', createPage, {
  input: (a) => ({ site_id_or_domain: site(a), ...pick(a, ...WRITE_FIELDS) }),
  errors: { 400: ['svc_invalid_date', 'svc_child_refused'] },
  answers: Created,
  output: (r) => ({
    success: 1,
    message: 'Create page successfully.',
    data: { id: r.page_id, post_id: r.page_id, name: r.post_title, post_status: r.post_status, link: r.link, website_id: r.site_id },
  }),
});

const pageGet = route(READ, '/pages/:id_or_domain/:post_id', getPage, {
  input: pageRef,
  errors: ONE_PAGE,
  answers: done(getPage.output),
  output: (r) => ({ success: 1, message: 'Get page successfully.', data: r }),
});

const pageEdit = route(EDIT, '/pages/:id_or_domain/:post_id/edit', updatePage, {
  input: (a) => ({ ...pageRef(a), ...pick(a, ...WRITE_FIELDS) }),
  errors: { ...ONE_PAGE, 400: ['svc_missing_fields', 'svc_invalid_date', ...ONE_PAGE[400]] },
  answers: Edited,
  output: (r) => ({
    success: 1,
    message: 'Edit page successfully.',
    data: { id: r.page_id, post_id: r.page_id, name: r.post_title, post_status: r.post_status, link: r.link, updated_fields: r.updated },
  }),
});

const pageStatus = route(STATUS_METHODS, '/pages/:id_or_domain/:post_id/update-status', updatePageStatus, {
  input: (a) => ({ ...pageRef(a), ...pick(a, 'status') }),
  errors: { ...ONE_PAGE, 400: ['svc_invalid_status_change', ...ONE_PAGE[400]], 422: ['svc_status_not_changed'] },
  answers: done(z.object({ id: Int, previous_status: z.string(), post_status: updatePageStatus.output.shape.post_status })),
  output: (r) => ({
    success: 1,
    message: 'Update page status successfully.',
    data: { id: r.page_id, previous_status: r.previous_status, post_status: r.post_status },
  }),
});

const pageDelete = route(REMOVE, '/pages/:id_or_domain/:post_id/delete', deletePage, {
  input: (a) => ({ ...pageRef(a), confirm: true }),
  errors: ONE_PAGE,
  answers: Deleted,
  output: (r) => ({ success: 1, message: 'Delete page successfully.', data: { id: r.page_id, name: r.page.post_title } }),
});

export const pageRoutes = [pagesList, pageCreate, pageGet, pageEdit, pageStatus, pageDelete];
