// Post abilities: posts on child sites, listed across selected sites; read, created, edited, moved between
// statuses and deleted on one site. Post passwords are write-only (has_password tells whether one is set).
import { z } from 'zod';
import { ChildPostFull, type ChildPost } from '../child/replies.js';
import { defineAbility } from './context.js';
import { POST_STATUSES } from '../domain/posts.js';
import type { SiteRecord } from '../store/records.js';
import { Confirm, DryRun, SiteRef, SiteSelectors, bySiteList, undescribed } from './schemas.js';
import { bySiteUrl } from './views.js';

export const remoteRead = { readonly: true, destructive: false, idempotent: true, openWorld: true };
export const remoteWrite = { readonly: false, destructive: false, idempotent: true, openWorld: true };

const PostId = z.number().int().min(1);
export const PostStatus = z.enum(POST_STATUSES);
export const WritableStatus = PostStatus.exclude(['trash']);
export const DateTime = z.string().regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
export const Day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);
/** A comma-separated string, or a list joined with commas. */
const NameList = z.union([z.string().max(5000), z.array(z.string().max(200)).max(100)]);
const joined = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(',') : v);

export const PostItem = z.object({
  id: z.number().int(),
  website_id: z.number().int(),
  title: z.string(),
  post_status: z.string(),
  post_type: z.string(),
  author: z.string(),
  comment_count: z.number().int(),
  date: z.string().nullable().describe('Last modified (publication date for scheduled posts), ISO 8601 UTC.'),
  categories: z.string(),
  tags: z.string(),
});

/** The child's full post, with the site it lives on, and the password replaced by whether there is one. */
export const Post = ChildPostFull.omit({ post_password: true }).extend({
  website_id: z.number().int(),
  website_url: z.string(),
  has_password: z.boolean().describe('Whether the post is password-protected (the password itself is never returned).'),
  post_date: z.string().describe('Site time, YYYY-MM-DD HH:MM:SS.'),
  post_date_gmt: z.string().describe('ISO 8601 UTC; empty for a draft without a date.'),
});

export const postItem = (site: SiteRecord, p: ChildPost): z.infer<typeof PostItem> => ({
  id: p.id,
  website_id: site.id,
  title: p.title,
  post_status: p.status,
  post_type: p.post_type,
  author: p.author,
  comment_count: p.comment_count,
  date: p.date,
  categories: p.categories,
  tags: p.tags,
});

export function postView(site: SiteRecord, p: ChildPostFull): z.infer<typeof Post> {
  const { post_password, ...rest } = p;
  return { ...rest, website_id: site.id, website_url: site.url, has_password: post_password !== '' };
}

export const postFields = {
  post_content: z.string().max(1_000_000).optional(),
  post_name: z.string().max(200).optional().describe('Slug (default: from the title).'),
  post_excerpt: z.string().max(10_000).optional(),
  post_password: z.string().max(255).optional().describe('Write-only.'),
  comment_status: z.enum(['open', 'closed']).optional(),
  ping_status: z.enum(['open', 'closed']).optional(),
  post_date: DateTime.optional().describe('Site time, YYYY-MM-DD HH:MM:SS.'),
  post_date_gmt: DateTime.optional().describe('GMT, YYYY-MM-DD HH:MM:SS.'),
  post_tags: NameList.optional().describe('Tag names, list or comma-separated.'),
  post_category: NameList.optional().describe('Category names (created if missing), list or comma-separated.'),
  post_featured_image: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .optional()
    .describe('Image URL; the child downloads it.'),
  is_sticky: z.boolean().optional(),
  post_custom: z
    .record(z.string().max(255), z.array(z.string().max(10_000)))
    .optional()
    .describe('meta key → values'),
};

type FieldsIn = { post_tags?: string | string[]; post_category?: string | string[] };
const fields = <T extends FieldsIn>(i: T) => ({ ...i, post_tags: joined(i.post_tags), post_category: joined(i.post_category) });

export const listPosts = defineAbility({
  name: 'list-posts-v1',
  label: 'List posts',
  category: 'svc-posts',
  toolset: 'posts',
  description:
    'List the posts of selected sites, live, filtered by search, status, dates and post_type. Errors: ' +
    'svc_sites_required (400), svc_sites_not_found (404).',
  input: z
    .object({
      ...SiteSelectors,
      search: z.string().max(200).optional(),
      search_on: z.enum(['title', 'content', 'all']).default('all'),
      status: z.array(PostStatus).optional().describe('Default: all but trash.'),
      dtsstart: Day.optional().describe('Modified on or after (YYYY-MM-DD).'),
      dtsstop: Day.optional().describe('Modified on or before (YYYY-MM-DD).'),
      maximum: z.number().int().min(1).max(500).default(50).describe('Per site and status.'),
      post_type: z
        .string()
        .regex(/^[a-z0-9_-]{1,20}$/)
        .default('post'),
    })
    .strict(),
  output: bySiteList(PostItem),
  annotations: remoteRead,
  execute: async (i, ctx) => {
    return bySiteUrl(await ctx.posts.list(ctx, i, i), postItem);
  },
});

export const getPost = defineAbility({
  name: 'get-post-v1',
  label: 'Get post',
  category: 'svc-posts',
  toolset: 'posts',
  description:
    'One post with its content, dates, terms, custom fields and featured image. Errors: ' +
    'svc_site_not_found / svc_post_not_found (404), svc_site_suspended / svc_site_disconnected (409).',
  input: z.object({ site_id_or_domain: SiteRef, post_id: PostId, post_type: z.enum(['post', 'page']).default('post') }).strict(),
  output: Post,
  annotations: remoteRead,
  acceptsPost: true,
  execute: async ({ site_id_or_domain, post_id, post_type }, ctx) => {
    const r = await ctx.posts.get(site_id_or_domain, post_id, post_type);
    return postView(r.site, r.post);
  },
});

export const Saved = z.object({
  site_id: z.number().int(),
  site_url: z.string(),
  post_id: z.number().int(),
  post_title: z.string(),
  post_status: z.string(),
  link: z.string(),
});

export const createPost = defineAbility({
  name: 'create-post-v1',
  label: 'Create post',
  category: 'svc-posts',
  toolset: 'posts',
  description:
    'Create a post on one site (draft unless post_status says otherwise; future needs a future ' +
    'post_date). Errors: svc_site_not_found (404), svc_site_suspended / svc_site_disconnected (409), ' +
    'svc_child_refused (400).',
  input: z
    .object({
      site_id_or_domain: SiteRef,
      post_title: z.string().min(1).max(1000),
      post_status: WritableStatus.default('draft'),
      ...postFields,
    })
    .strict(),
  output: Saved,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: true, siteAction: true },
  execute: async ({ site_id_or_domain, ...i }, ctx) => {
    const r = await ctx.posts.create(site_id_or_domain, fields(i));
    return {
      site_id: r.site.id,
      site_url: r.site.url,
      post_id: r.post_id,
      post_title: r.post_title,
      post_status: r.post_status,
      link: r.link,
    };
  },
});

export const updatePost = defineAbility({
  name: 'update-post-v1',
  label: 'Update post',
  category: 'svc-posts',
  toolset: 'posts',
  description:
    'Edit a post on one site; only the fields given change (as in create-post-v1). Errors: svc_missing_fields (400), ' +
    'svc_site_not_found / svc_post_not_found (404), svc_site_suspended / svc_site_disconnected (409), ' +
    'svc_child_refused (400).',
  input: z
    .object({
      site_id_or_domain: SiteRef,
      post_id: PostId,
      post_title: z.string().min(1).max(1000).optional(),
      post_status: WritableStatus.optional(),
      ...undescribed(postFields),
    })
    .strict(),
  output: Saved.extend({ updated: z.array(z.string()) }),
  annotations: { ...remoteWrite, siteAction: true },
  execute: async ({ site_id_or_domain, post_id, ...i }, ctx) => {
    const r = await ctx.posts.update(site_id_or_domain, post_id, fields(i));
    return {
      site_id: r.site.id,
      site_url: r.site.url,
      post_id: r.post_id,
      post_title: r.post_title,
      post_status: r.post_status,
      link: r.link,
      updated: r.updated,
    };
  },
});

export const updatePostStatus = defineAbility({
  name: 'update-post-status-v1',
  label: 'Update post status',
  category: 'svc-posts',
  toolset: 'posts',
  description:
    'Move a post to another status, e.g. trash (draft restores it) or publish. Nothing else changes. ' +
    'Errors: invalid status (400, naming the allowed values), svc_site_not_found / svc_post_not_found ' +
    '(404), svc_invalid_status_change (400).',
  input: z.object({ site_id_or_domain: SiteRef, post_id: PostId, status: PostStatus }).strict(),
  output: z.object({
    site_id: z.number().int(),
    site_url: z.string(),
    post_id: z.number().int(),
    previous_status: z.string(),
    post_status: PostStatus,
  }),
  annotations: { ...remoteWrite, siteAction: true },
  execute: async ({ site_id_or_domain, post_id, status }, ctx) => {
    const r = await ctx.posts.setStatus(site_id_or_domain, post_id, status);
    return { site_id: r.site.id, site_url: r.site.url, post_id, previous_status: r.previous_status, post_status: r.post_status };
  },
});

export const deletePost = defineAbility({
  name: 'delete-post-v1',
  label: 'Delete post',
  category: 'svc-posts',
  toolset: 'posts',
  description:
    'Delete a post for good (update-post-status-v1 to trash keeps it recoverable). Errors: ' +
    'svc_confirmation_required / svc_invalid_input (400), svc_site_not_found / svc_post_not_found (404), ' +
    'svc_site_suspended / svc_site_disconnected (409).',
  input: z.object({ site_id_or_domain: SiteRef, post_id: PostId, confirm: Confirm, dry_run: DryRun }).strict(),
  output: z.object({
    deleted: z.boolean(),
    dry_run: z.boolean(),
    site_id: z.number().int(),
    site_url: z.string(),
    post_id: z.number().int(),
    post: z.object({ id: z.number().int(), post_title: z.string(), post_status: z.string(), post_type: z.string() }),
    warnings: z.array(z.string()),
  }),
  annotations: { readonly: false, destructive: true, idempotent: true, openWorld: true, siteAction: true },
  acceptsPost: true,
  execute: async ({ site_id_or_domain, post_id, confirm, dry_run }, ctx) => {
    const r = await ctx.posts.delete(site_id_or_domain, post_id, { confirm, dry_run });
    const p = r.post;
    return {
      deleted: r.deleted,
      dry_run: r.dry_run,
      site_id: r.site.id,
      site_url: r.site.url,
      post_id,
      post: { id: p.id, post_title: p.post_title, post_status: p.post_status, post_type: p.post_type },
      warnings: r.dry_run ? ['The post will be deleted permanently, not moved to the trash.'] : [],
    };
  },
});

export const postAbilities = [listPosts, getPost, createPost, updatePost, updatePostStatus, deletePost];
