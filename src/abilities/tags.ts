// Tag (site group) abilities.
import { z } from 'zod';
import { defineAbility } from './context.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { Page, paginate, perPage } from '../core/paging.js';
import { siteStatus } from '../domain/sites.js';
import { Confirm, DryRun, HexColor, SiteStatus, Tag, TagId, TagIds, TagName, paged } from './schemas.js';
import { tagView } from './views.js';

const ro = { readonly: true, destructive: false, idempotent: true, openWorld: false };

export const listTags = defineAbility({
  name: 'list-tags-v1',
  label: 'List tags',
  category: 'svc-tags',
  toolset: 'tags',
  description: 'List tags (site groups) by name, with their site counts.',
  input: z
    .object({
      page: Page,
      per_page: perPage(20),
      search: z.string().default(''),
      include: TagIds.optional(),
      exclude: TagIds.optional(),
    })
    .strict(),
  output: paged(Tag),
  annotations: ro,
  execute: ({ page, per_page, search, include, exclude }, ctx) => {
    const all = ctx.tags.list({ search, include, exclude });
    return { items: paginate(all, page, per_page).map((t) => tagView(ctx, t)), page, per_page, total: all.length };
  },
});

export const getTag = defineAbility({
  name: 'get-tag-v1',
  label: 'Get tag',
  category: 'svc-tags',
  toolset: 'tags',
  description: 'One tag with its site count. Errors: svc_tag_not_found (404).',
  input: z.object({ tag_id: TagId }).strict(),
  output: Tag,
  annotations: ro,
  acceptsPost: true,
  execute: ({ tag_id }, ctx) => tagView(ctx, ctx.tags.resolve(tag_id)),
});

export const addTag = defineAbility({
  name: 'add-tag-v1',
  label: 'Add tag',
  category: 'svc-tags',
  toolset: 'tags',
  description: 'Create a tag to group sites. Errors: svc_tag_exists (409) when the name is taken (any letter case).',
  input: z.object({ name: TagName, color: HexColor.optional() }).strict(),
  output: Tag,
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: false },
  execute: async ({ name, color }, ctx) => tagView(ctx, await ctx.tags.add({ name, color })),
});

export const updateTag = defineAbility({
  name: 'update-tag-v1',
  label: 'Update tag',
  category: 'svc-tags',
  toolset: 'tags',
  description: 'Rename a tag or change its colour. Errors: svc_tag_not_found (404), svc_tag_exists (409).',
  input: z.object({ tag_id: TagId, name: TagName.optional(), color: HexColor.optional() }).strict(),
  output: Tag,
  annotations: { readonly: false, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ tag_id, name, color }, ctx) => tagView(ctx, await ctx.tags.edit(tag_id, { name, color })),
});

export const deleteTag = defineAbility({
  name: 'delete-tag-v1',
  label: 'Delete tag',
  category: 'svc-tags',
  toolset: 'tags',
  description: 'Delete a tag; its sites stay. Errors: svc_confirmation_required (400), svc_tag_not_found (404).',
  input: z.object({ tag_id: TagId, confirm: Confirm, dry_run: DryRun }).strict(),
  output: z.object({
    deleted: z.boolean(),
    dry_run: z.boolean(),
    tag_id: z.number().int(),
    tag_name: z.string(),
    tag: z.object({ id: z.number().int(), name: z.string() }),
    sites_affected: z.number().int().optional(),
    would_affect: z
      .object({ id: z.number().int(), name: z.string(), sites_count: z.number().int(), clients_count: z.number().int() })
      .optional(),
    warnings: z.array(z.string()).optional(),
  }),
  annotations: { readonly: false, destructive: true, idempotent: true, openWorld: false },
  acceptsPost: true,
  execute: async (i, ctx) => {
    refuseBothFlags(i);
    const tag = tagView(ctx, ctx.tags.resolve(i.tag_id));
    const base = { tag_id: tag.id, tag_name: tag.name, tag: { id: tag.id, name: tag.name } };
    if (i.dry_run) {
      const clients_count = ctx.clients.countsOfSites(tag.sites_ids).size;
      return {
        deleted: false,
        dry_run: true,
        ...base,
        sites_affected: tag.sites_count,
        would_affect: { id: tag.id, name: tag.name, sites_count: tag.sites_count, clients_count },
        warnings: [],
      };
    }
    requireConfirm(i, 'Tag deletion requires confirmation. Set confirm:true to proceed.');
    await ctx.tags.remove(tag.id);
    return { deleted: true, dry_run: false, ...base };
  },
});

const tagPage = { tag_id: TagId, page: Page, per_page: perPage(20) };

const TagSite = z.object({
  id: z.number().int(),
  url: z.string(),
  name: z.string(),
  status: SiteStatus,
  client_id: z.number().int().nullable(),
});

export const getTagSites = defineAbility({
  name: 'get-tag-sites-v1',
  label: 'Sites in a tag',
  category: 'svc-tags',
  toolset: 'tags',
  description: 'The sites carrying a tag. Errors: svc_tag_not_found (404).',
  input: z.object(tagPage).strict(),
  output: z.object({
    tag_id: z.number().int(),
    tag_name: z.string(),
    sites: z.array(TagSite),
    items: z.array(TagSite),
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int(),
  }),
  annotations: ro,
  acceptsPost: true,
  execute: ({ tag_id, page, per_page }, ctx) => {
    const {
      tag: { name },
      sites,
    } = ctx.sites.inTag(tag_id);
    const list = paginate(sites, page, per_page).map((s) => ({
      id: s.id,
      url: s.url,
      name: s.name,
      status: siteStatus(s),
      client_id: s.client_id,
    }));
    return { tag_id, tag_name: name, sites: list, items: list, page, per_page, total: sites.length };
  },
});

const TagClient = z.object({
  id: z.number().int(),
  name: z.string(),
  email: z.string(),
  status: z.string(),
  sites_with_tag: z.number().int(),
});

export const getTagClients = defineAbility({
  name: 'get-tag-clients-v1',
  label: 'Clients of a tag',
  category: 'svc-tags',
  toolset: 'tags',
  description: 'Clients owning at least one site in a tag, each with sites_with_tag. Errors: svc_tag_not_found ' + '(404).',
  input: z.object(tagPage).strict(),
  output: z.object({
    tag_id: z.number().int(),
    tag_name: z.string(),
    clients: z.array(TagClient),
    items: z.array(TagClient),
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int(),
  }),
  annotations: ro,
  acceptsPost: true,
  execute: ({ tag_id, page, per_page }, ctx) => {
    const {
      tag: { name },
      clients,
    } = ctx.clients.ofTag(tag_id);
    const all = clients.map(({ client: c, sites_with_tag }) => ({
      id: c.id,
      name: c.name,
      email: c.email,
      status: c.status,
      sites_with_tag,
    }));
    const list = paginate(all, page, per_page);
    return { tag_id, tag_name: name, clients: list, items: list, page, per_page, total: all.length };
  },
});

export const tagAbilities = [listTags, getTag, addTag, updateTag, deleteTag, getTagSites, getTagClients];
