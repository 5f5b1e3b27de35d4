// REST v2 post routes (posts on child sites).
import { createPost, deletePost, getPost, listPosts, updatePost, updatePostStatus } from '../../abilities/posts.js';
import { CREATE, EDIT, READ, REMOVE, route, type RestArgs } from '../rest-door.js';
import { list, pick, site } from './args.js';
import { SelectorArgs, selectors } from './users.js';
import { z } from 'zod';
import { ItemError, SkippedSite } from '../../abilities/schemas.js';
import { Int, ListArg, done } from './answers.js';
import { POST_EDIT_FIELDS } from '../../domain/posts.js';

/** Upstream's answers to a post or page write (pages answer the same shapes). */
export const Created = done(
  z.object({ id: Int, post_id: Int, name: z.string(), post_status: z.string(), link: z.string(), website_id: Int }),
);
export const Edited = done(
  z.object({ id: Int, post_id: Int, name: z.string(), post_status: z.string(), link: z.string(), updated_fields: z.array(z.string()) }),
);
export const Deleted = done(z.object({ id: Int, name: z.string() }));
// update-status also takes POST, as edit does (clients send it).
const STATUS_METHODS = ['PUT', 'PATCH', 'POST'] as const;
/** The fields a post write takes: the post service's own list. */
const WRITE_FIELDS = POST_EDIT_FIELDS;
// Upstream's search_on words.
const SEARCH_ON: Record<string, string> = {
  title: 'title',
  content: 'content',
  body: 'content',
  all: 'all',
  both: 'all',
  'title and body': 'all',
};

const postsList = route(READ, '/posts', listPosts, {
  input: (a: RestArgs) => {
    const i: Record<string, unknown> = { ...selectors(a), ...pick(a, 'search', 'dtsstart', 'dtsstop', 'maximum', 'post_type') };
    const on = a.args.search_on;
    if (on !== undefined && on !== '') i.search_on = SEARCH_ON[String(on).trim().toLowerCase()] ?? on;
    const status = list(a.args.status);
    if (status) i.status = status.map((s) => (typeof s === 'string' ? s.trim() : s));
    return i;
  },
  args: {
    ...SelectorArgs,
    search_on: z.string().optional().describe('title, content (body), or all (both, "title and body").'),
    status: ListArg(z.string(), 'Post statuses (publish, draft, …).'),
  },
  errors: { 400: ['svc_invalid_date', 'svc_invalid_date_range'] },
  answers: done(listPosts.output.shape.data, {
    total: Int,
    errors: z.array(ItemError),
    skipped: z.array(SkippedSite),
    unknown: z.array(ItemError),
  }),
  output: (r) => ({
    success: 1,
    message: 'Get posts successfully.',
    total: r.total,
    data: r.data,
    errors: r.errors,
    skipped: r.skipped,
    unknown: r.unknown,
  }),
});

// Before /posts/:id_or_domain/:post_id, which would otherwise take "create" for a post id.
const postCreate = route(CREATE, '/posts/:id_or_domain/create', createPost, {
  input: (a) => ({ site_id_or_domain: site(a), ...pick(a, ...WRITE_FIELDS) }),
  answers: Created,
  output: (r) => ({
    success: 1,
    message: 'Create post successfully.',
    data: { id: r.post_id, post_id: r.post_id, name: r.post_title, post_status: r.post_status, link: r.link, website_id: r.site_id },
  }),
});

const postGet = route(READ, '/posts/:id_or_domain/:post_id', getPost, {
  input: (a) => ({ site_id_or_domain: site(a), post_id: a.params.post_id, ...pick(a, 'post_type') }),
  // Upstream's REST shape: is_sticky as 0/1 (the ability answers a boolean).
  answers: done(getPost.output.extend({ is_sticky: z.union([z.literal(0), z.literal(1)]) })),
  output: (r) => ({ success: 1, message: 'Get post successfully.', data: { ...r, is_sticky: r.is_sticky ? 1 : 0 } }),
});

const postEdit = route(EDIT, '/posts/:id_or_domain/:post_id/edit', updatePost, {
  input: (a) => ({ site_id_or_domain: site(a), post_id: a.params.post_id, ...pick(a, ...WRITE_FIELDS) }),
  answers: Edited,
  output: (r) => ({
    success: 1,
    message: 'Edit post successfully.',
    data: { id: r.post_id, post_id: r.post_id, name: r.post_title, post_status: r.post_status, link: r.link, updated_fields: r.updated },
  }),
});

const postStatus = route(STATUS_METHODS, '/posts/:id_or_domain/:post_id/update-status', updatePostStatus, {
  input: (a) => ({ site_id_or_domain: site(a), post_id: a.params.post_id, ...pick(a, 'status') }),
  // The child may leave the post in another status than asked (domain/posts.ts setStatus).
  errors: { 422: ['svc_status_not_changed'] },
  answers: done(z.object({ id: Int, previous_status: z.string(), post_status: z.string() })),
  output: (r) => ({
    success: 1,
    message: 'Update post status successfully.',
    data: { id: r.post_id, previous_status: r.previous_status, post_status: r.post_status },
  }),
});

const postDelete = route(REMOVE, '/posts/:id_or_domain/:post_id/delete', deletePost, {
  input: (a) => ({ site_id_or_domain: site(a), post_id: a.params.post_id, confirm: true }),
  answers: Deleted,
  output: (r) => ({ success: 1, message: 'Delete post successfully.', data: { id: r.post_id, name: r.post.post_title } }),
});

export const postRoutes = [postsList, postCreate, postGet, postEdit, postStatus, postDelete];
