// Page abilities: the page twin of the post abilities (posts.ts), on the same services with PAGE_KIND. Pages have
// no tags, categories or stickiness, list 10 per site and status by default (upstream: 1–200), and a page id that
// names a post is not found.
import { z } from 'zod';
import { defineAbility } from './context.js';
import { PAGE_KIND } from '../domain/posts.js';
import {
  DateTime,
  Day,
  Post,
  PostItem,
  PostStatus,
  Saved,
  WritableStatus,
  postFields,
  postItem,
  postView,
  remoteRead,
  remoteWrite,
} from './posts.js';
import { Confirm, DryRun, SiteRef, SiteSelectors, bySiteList, undescribed } from './schemas.js';
import { bySiteUrl } from './views.js';

const PageId = z.number().int().min(1);
/** The post fields pages have, without descriptions the post tools give (the tool list is held to a byte budget). */
const pageFields = {
  post_content: postFields.post_content,
  post_name: z.string().max(200).optional(),
  post_excerpt: postFields.post_excerpt,
  post_password: z.string().max(255).optional(),
  comment_status: postFields.comment_status,
  ping_status: postFields.ping_status,
  post_date: DateTime.optional().describe('Site time.'),
  post_date_gmt: DateTime.optional(),
  post_featured_image: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .optional(),
  post_custom: z.record(z.string().max(255), z.array(z.string().max(10_000))).optional(),
};

export const PageItem = PostItem.omit({ categories: true, tags: true });
export const Page = Post.omit({ post_category: true, post_tags: true, is_sticky: true });

const pageItem = (...a: Parameters<typeof postItem>): z.infer<typeof PageItem> => {
  const { categories: _a, tags: _b, ...rest } = postItem(...a);
  return rest;
};
const pageView = (...a: Parameters<typeof postView>): z.infer<typeof Page> => {
  const { post_category: _a, post_tags: _b, is_sticky: _c2, ...rest } = postView(...a);
  return rest;
};

export const listPages = defineAbility({
  name: 'list-pages-v1',
  label: 'List pages',
  category: 'svc-pages',
  toolset: 'pages',
  description: 'Pages of selected sites, live; filter by search, status, modified dates.',
  input: z
    .object({
      ...SiteSelectors,
      search: z.string().max(200).optional(),
      search_on: z.enum(['title', 'content', 'all']).default('all'),
      status: z.array(PostStatus).optional().describe('Default: all but trash.'),
      dtsstart: Day.optional(),
      dtsstop: Day.optional(),
      maximum: z.number().int().min(1).max(200).default(10),
    })
    .strict(),
  output: bySiteList(PageItem),
  annotations: remoteRead,
  execute: async (i, ctx) => {
    return bySiteUrl(await ctx.posts.list(ctx, i, i, PAGE_KIND), pageItem);
  },
});

export const getPage = defineAbility({
  name: 'get-page-v1',
  label: 'Get page',
  category: 'svc-pages',
  toolset: 'pages',
  description: 'One page: content, dates, custom fields, featured image.',
  input: z.object({ site_id_or_domain: SiteRef, page_id: PageId }).strict(),
  output: Page,
  annotations: remoteRead,
  acceptsPost: true,
  execute: async ({ site_id_or_domain, page_id }, ctx) => {
    const r = await ctx.posts.get(site_id_or_domain, page_id, 'page', PAGE_KIND);
    return pageView(r.site, r.post);
  },
});

const SavedPage = Saved.omit({ post_id: true, post_title: true, post_status: true }).extend({
  page_id: z.number().int(),
  post_title: z.string(),
  post_status: z.string(),
});
const saved = (r: { site: { id: number; url: string }; post_id: number; post_title: string; post_status: string; link: string }) => ({
  site_id: r.site.id,
  site_url: r.site.url,
  page_id: r.post_id,
  post_title: r.post_title,
  post_status: r.post_status,
  link: r.link,
});

export const createPage = defineAbility({
  name: 'create-page-v1',
  label: 'Create page',
  category: 'svc-pages',
  toolset: 'pages',
  description: 'Create a page on one site (a draft by default).',
  input: z
    .object({
      site_id_or_domain: SiteRef,
      post_title: z.string().min(1).max(1000),
      post_status: WritableStatus.default('draft'),
      ...pageFields,
    })
    .strict(),
  output: SavedPage,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: true, siteAction: true },
  execute: async ({ site_id_or_domain, ...i }, ctx) => saved(await ctx.posts.create(site_id_or_domain, i, PAGE_KIND)),
});

export const updatePage = defineAbility({
  name: 'update-page-v1',
  label: 'Update page',
  category: 'svc-pages',
  toolset: 'pages',
  description: 'Edit a page on one site; only the fields given change (as in create-page-v1).',
  input: z
    .object({
      site_id_or_domain: SiteRef,
      page_id: PageId,
      post_title: z.string().min(1).max(1000).optional(),
      post_status: WritableStatus.optional(),
      ...undescribed(pageFields),
    })
    .strict(),
  output: SavedPage.extend({ updated: z.array(z.string()) }),
  annotations: { ...remoteWrite, siteAction: true },
  execute: async ({ site_id_or_domain, page_id, ...i }, ctx) => {
    const r = await ctx.posts.update(site_id_or_domain, page_id, i, PAGE_KIND);
    return { ...saved(r), updated: r.updated };
  },
});

export const updatePageStatus = defineAbility({
  name: 'update-page-status-v1',
  label: 'Update page status',
  category: 'svc-pages',
  toolset: 'pages',
  description: 'Move a page to a status, e.g. trash (draft restores it).',
  input: z.object({ site_id_or_domain: SiteRef, page_id: PageId, status: PostStatus }).strict(),
  output: z.object({
    site_id: z.number().int(),
    site_url: z.string(),
    page_id: z.number().int(),
    previous_status: z.string(),
    post_status: PostStatus,
  }),
  annotations: { ...remoteWrite, siteAction: true },
  execute: async ({ site_id_or_domain, page_id, status }, ctx) => {
    const r = await ctx.posts.setStatus(site_id_or_domain, page_id, status, PAGE_KIND);
    return { site_id: r.site.id, site_url: r.site.url, page_id, previous_status: r.previous_status, post_status: r.post_status };
  },
});

export const deletePage = defineAbility({
  name: 'delete-page-v1',
  label: 'Delete page',
  category: 'svc-pages',
  toolset: 'pages',
  description: 'Delete a page for good (trash it with update-page-status-v1 to keep it).',
  input: z.object({ site_id_or_domain: SiteRef, page_id: PageId, confirm: Confirm, dry_run: DryRun }).strict(),
  output: z.object({
    deleted: z.boolean(),
    dry_run: z.boolean(),
    site_id: z.number().int(),
    site_url: z.string(),
    page_id: z.number().int(),
    page: z.object({ id: z.number().int(), post_title: z.string(), post_status: z.string() }),
  }),
  annotations: { readonly: false, destructive: true, idempotent: true, openWorld: true, siteAction: true },
  acceptsPost: true,
  execute: async ({ site_id_or_domain, page_id, confirm, dry_run }, ctx) => {
    const r = await ctx.posts.delete(site_id_or_domain, page_id, { confirm, dry_run }, PAGE_KIND);
    return {
      deleted: r.deleted,
      dry_run: r.dry_run,
      site_id: r.site.id,
      site_url: r.site.url,
      page_id,
      page: { id: r.post.id, post_title: r.post.post_title, post_status: r.post.post_status },
    };
  },
});

export const pageAbilities = [listPages, getPage, createPage, updatePage, updatePageStatus, deletePage];
