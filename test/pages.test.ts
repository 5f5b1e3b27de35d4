// Pages on child sites through every door (REST v2 upstream paths, abilities v1, MCP) against simulated children:
// the page twin of posts.test.ts, and where pages differ (no tags/categories/sticky, 10 a site by default, a post id
// is not a page).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';

let f: Fleet;
let ids: Array<{ id: number; url: string }>;
let mcp: McpTestClient;

const on = (i: number, id: number) => f.sim.state(i).posts.find((p) => p.id === id);
const aboutUs = (i: number) => f.sim.state(i).posts.find((p) => p.type === 'page')!;
const aPost = (i: number) => f.sim.state(i).posts.find((p) => p.type === 'post')!;

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 2 } });
  ids = await registerSites(f, 2);
  mcp = await connectMcp(f.s);
});
afterAll(async () => {
  await mcp.close();
  await f.close();
});

describe('list-pages', () => {
  it('lists pages only, keyed by site URL, without categories or tags (REST)', async () => {
    const r = await f.s.rest(`/pages?websites=${ids[0]!.id},${ids[1]!.id}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, message: 'Get pages successfully.', errors: [] });
    const items = r.body.data[ids[0]!.url];
    expect(items).toEqual([expect.objectContaining({ id: aboutUs(1).id, title: 'About us', post_type: 'page', website_id: ids[0]!.id })]);
    expect(items[0]).not.toHaveProperty('categories');
    expect(r.body.total).toBe(2);
  });

  it('lists at most 10 a site and status by default, up to 200 when asked; 201 is refused', async () => {
    for (let n = 0; n < 12; n++) {
      const c = await f.s.ability('create-page-v1', {
        site_id_or_domain: ids[1]!.id,
        post_title: `Bulk page ${n}`,
        post_status: 'publish',
      });
      expect(c.status).toBe(200);
    }
    const dflt = await f.s.rest(`/pages?websites=${ids[1]!.id}&status=publish`);
    expect(dflt.body.data[ids[1]!.url]).toHaveLength(10);
    const more = await f.s.ability('list-pages-v1', { websites: [ids[1]!.id], status: ['publish'], maximum: 200 }, { method: 'GET' });
    expect(more.body.data[ids[1]!.url]).toHaveLength(13);
    const over = await f.s.rest(`/pages?websites=${ids[1]!.id}&maximum=201`);
    expect([over.status, over.body.code]).toEqual([400, 'rest_invalid_param']);
    const bad = await f.s.rest(`/pages?websites=${ids[1]!.id}&status=live`);
    expect([bad.status, bad.body.code]).toEqual([400, 'rest_invalid_param']);
    const other = await f.s.rest(`/pages?websites=${ids[1]!.id}&post_type=product`);
    expect(other.status).toBe(400);
    expect((await f.s.rest('/pages')).status).toBe(400);
  });
});

describe('one page', () => {
  let pageId: number;

  it('creates a page through REST that the child stores as a page, and reads it back through MCP', async () => {
    const r = await f.s.rest(`/pages/${ids[0]!.id}/create`, {
      method: 'POST',
      json: {
        post_title: 'Contact',
        post_content: '<p>Call us</p>',
        post_status: 'publish',
        post_name: 'contact',
        post_custom: { team: ['ops'] },
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      success: 1,
      message: 'Create page successfully.',
      data: { name: 'Contact', post_status: 'publish', website_id: ids[0]!.id },
    });
    pageId = r.body.data.id;
    expect(on(1, pageId)).toMatchObject({ type: 'page', title: 'Contact', status: 'publish', name: 'contact' });
    const m = await mcp.call('get-page-v1', { site_id_or_domain: ids[0]!.id, page_id: pageId });
    expect(m.isError).toBe(false);
    expect(m.body).toMatchObject({
      id: pageId,
      post_type: 'page',
      post_title: 'Contact',
      post_content: '<p>Call us</p>',
      website_id: ids[0]!.id,
      has_password: false,
    });
    expect(m.body).not.toHaveProperty('post_tags');
    expect(m.body).not.toHaveProperty('is_sticky');
    const rest = await f.s.rest(`/pages/${ids[0]!.id}/${pageId}`);
    expect(rest.body).toMatchObject({ success: 1, message: 'Get page successfully.', data: { id: pageId } });
  });

  it('refuses what pages do not have, naming it', async () => {
    const tags = await f.s.rest(`/pages/${ids[0]!.id}/create`, { method: 'POST', json: { post_title: 'x', post_tags: 'a' } });
    expect(tags.status).toBe(400);
    expect(JSON.stringify(tags.body)).toContain('post_tags');
    const sticky = await f.s.ability('update-page-v1', { site_id_or_domain: ids[0]!.id, page_id: pageId, is_sticky: true });
    expect(sticky.status).toBe(400);
    expect(JSON.stringify(sticky.body)).toContain('is_sticky');
    const none = await f.s.rest(`/pages/${ids[0]!.id}/${pageId}/edit`, { method: 'PUT', json: {} });
    expect([none.status, none.body.code]).toEqual([400, 'svc_missing_fields']);
    expect(none.body.message).toContain('update the page');
  });

  it('a post id is not a page: 404 svc_page_not_found on every route', async () => {
    const post = aPost(1);
    const get = await f.s.rest(`/pages/${ids[0]!.id}/${post.id}`);
    expect([get.status, get.body.code]).toEqual([404, 'svc_page_not_found']);
    const edit = await f.s.rest(`/pages/${ids[0]!.id}/${post.id}/edit`, { method: 'PUT', json: { post_title: 'hijack' } });
    expect([edit.status, edit.body.code]).toEqual([404, 'svc_page_not_found']);
    const st = await f.s.rest(`/pages/${ids[0]!.id}/${post.id}/update-status`, { method: 'PUT', json: { status: 'trash' } });
    expect([st.status, st.body.code]).toEqual([404, 'svc_page_not_found']);
    const del = await f.s.rest(`/pages/${ids[0]!.id}/${post.id}/delete`, { method: 'DELETE' });
    expect([del.status, del.body.code]).toEqual([404, 'svc_page_not_found']);
    expect(on(1, post.id)).toMatchObject({ type: 'post', title: post.title, status: post.status });
    const missing = await f.s.ability('get-page-v1', { site_id_or_domain: ids[0]!.id, page_id: 99999 }, { method: 'GET' });
    expect([missing.status, missing.body.code]).toEqual([404, 'svc_page_not_found']);
    expect((await f.s.rest('/pages/999/1')).body.code).toBe('svc_rest_invalid_site_id');
    expect((await f.s.rest(`/pages/${ids[0]!.id}/abc`)).body.code).toBe('rest_no_route');
  });

  it('edits only the fields given (PATCH, abilities door)', async () => {
    const before = structuredClone(on(1, pageId)!);
    const r = await f.s.rest(`/pages/${ids[0]!.id}/${pageId}/edit`, { method: 'PATCH', json: { post_title: 'Contact us' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ success: 1, message: 'Edit page successfully.', data: { id: pageId, updated_fields: ['post_title'] } });
    expect({ ...on(1, pageId)!, title: before.title, modified: before.modified }).toEqual(before);
    const a = await f.s.ability('update-page-v1', { site_id_or_domain: ids[0]!.id, page_id: pageId, post_excerpt: 'E' });
    expect(a.body).toMatchObject({ page_id: pageId, updated: ['post_excerpt'], post_title: 'Contact us' });
    expect(on(1, pageId)).toMatchObject({ type: 'page', excerpt: 'E', title: 'Contact us', content: '<p>Call us</p>' });
  });

  it('moves a page through the statuses and back', async () => {
    const path = `/pages/${ids[0]!.id}/${pageId}/update-status`;
    for (const status of ['draft', 'pending', 'private', 'publish', 'trash', 'draft'] as const) {
      const r = await f.s.rest(path, { method: 'PUT', json: { status } });
      expect(r.status, status).toBe(200);
      expect(r.body).toMatchObject({ success: 1, message: 'Update page status successfully.', data: { id: pageId, post_status: status } });
      expect(on(1, pageId)!.status).toBe(status);
    }
    const m = await mcp.call('update-page-status-v1', { site_id_or_domain: ids[0]!.id, page_id: pageId, status: 'publish' });
    expect(m.body).toMatchObject({ previous_status: 'draft', post_status: 'publish' });
    const future = await f.s.rest(path, { method: 'PUT', json: { status: 'future' } });
    expect([future.status, future.body.code]).toEqual([400, 'svc_invalid_status_change']);
    expect(future.body.message).toContain('update-page-v1');
  });

  it('deletes with confirm (dry_run previews), through the abilities door and REST', async () => {
    const bare = await f.s.ability('delete-page-v1', { site_id_or_domain: ids[0]!.id, page_id: pageId });
    expect([bare.status, bare.body.code]).toEqual([400, 'svc_confirmation_required']);
    const preview = await f.s.ability('delete-page-v1', { site_id_or_domain: ids[0]!.id, page_id: pageId, dry_run: true });
    expect(preview.body).toMatchObject({ deleted: false, dry_run: true, page: { id: pageId, post_title: 'Contact us' } });
    expect(on(1, pageId)).toBeDefined();
    const r = await f.s.rest(`/pages/${ids[0]!.id}/${pageId}/delete`, { method: 'DELETE' });
    expect(r.body).toMatchObject({ success: 1, message: 'Delete page successfully.', data: { id: pageId, name: 'Contact us' } });
    expect(on(1, pageId)).toBeUndefined();
    const again = await f.s.rest(`/pages/${ids[0]!.id}/${pageId}/delete`, { method: 'DELETE' });
    expect([again.status, again.body.code]).toEqual([404, 'svc_page_not_found']);
  });

  it('a dead child is a per-site error in a list and 502 for one page', async () => {
    f.sim.setFault(2, { type: 'down' });
    try {
      const r = await mcp.call('list-pages-v1', { websites: [ids[0]!.id, ids[1]!.id] });
      expect(r.body.errors).toEqual([expect.objectContaining({ identifier: ids[1]!.id, code: 'svc_child_unreachable' })]);
      const one = await f.s.rest(`/pages/${ids[1]!.id}/${aboutUs(2).id}`);
      expect([one.status, one.body.code]).toEqual([502, 'svc_child_unreachable']);
    } finally {
      f.sim.setFault(2, null);
    }
  });
});
