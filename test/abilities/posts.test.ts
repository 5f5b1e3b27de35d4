// Post and page abilities through the registry, over the child simulator: list across sites, read, create, edit,
// change status and delete (confirm / dry_run) — checked inside the simulated WordPress, without a door. Posts and
// pages share one service (a `Kind` says which); each kind stays in its own lane.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';

let h: AbilityHarness;
let sites: Array<{ id: number; url: string }>;
const simPost = (i: number, id: number) => h.sim.state(i).posts.find((p) => p.id === id);

beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 2 } });
  sites = await h.addSimSites();
});
afterAll(() => h.close());

describe('posts', () => {
  it('lists the posts of the selected sites by site URL (not trash, not pages), filtered by status and search', async () => {
    const r = await h.call('list-posts-v1', { websites: sites.map((s) => s.id), maximum: 500 }, h.as.viewer);
    const want = (i: number) => h.sim.state(i).posts.filter((p) => p.type === 'post' && p.status !== 'trash' && p.status !== 'auto-draft');
    expect(r.data[sites[0]!.url]!.map((p) => p.id).sort((a, b) => a - b)).toEqual(
      want(1)
        .map((p) => p.id)
        .sort((a, b) => a - b),
    );
    expect(r.total).toBe(want(1).length + want(2).length);
    const drafts = await h.call('list-posts-v1', { websites: [sites[0]!.id], status: ['draft'], maximum: 500 });
    expect(drafts.data[sites[0]!.url]!.every((p) => p.post_status === 'draft')).toBe(true);
    const title = want(1)[0]!.title;
    const found = await h.call('list-posts-v1', { websites: [sites[0]!.id], search: title, search_on: 'title' });
    expect(found.data[sites[0]!.url]!.map((p) => p.title)).toContain(title);
  });

  it('creates a post, reads it, edits it, changes its status, and deletes it after a preview and confirm', async () => {
    const c = await h.call('create-post-v1', {
      site_id_or_domain: sites[0]!.id,
      post_title: 'Hello registry',
      post_content: '<p>Body</p>',
      post_status: 'draft',
      post_tags: 'a, b',
      post_password: 'pw',
    });
    expect(c).toMatchObject({ site_id: sites[0]!.id, post_title: 'Hello registry', post_status: 'draft' });
    expect(simPost(1, c.post_id)).toMatchObject({ type: 'post', title: 'Hello registry', status: 'draft', tags: ['a', 'b'] });
    const got = await h.call('get-post-v1', { site_id_or_domain: sites[0]!.id, post_id: c.post_id });
    expect(got).toMatchObject({
      id: c.post_id,
      post_title: 'Hello registry',
      post_content: '<p>Body</p>',
      has_password: true,
      website_id: sites[0]!.id,
    });
    expect(JSON.stringify(got)).not.toContain('"pw"');
    const u = await h.call('update-post-v1', {
      site_id_or_domain: sites[0]!.id,
      post_id: c.post_id,
      post_title: 'Renamed',
      is_sticky: true,
    });
    expect(u.updated).toEqual(expect.arrayContaining(['post_title', 'is_sticky']));
    expect(simPost(1, c.post_id)).toMatchObject({ title: 'Renamed', sticky: true, content: '<p>Body</p>' });
    expect(await h.call('update-post-status-v1', { site_id_or_domain: sites[0]!.id, post_id: c.post_id, status: 'publish' })).toMatchObject(
      { previous_status: 'draft', post_status: 'publish' },
    );
    expect(simPost(1, c.post_id)!.status).toBe('publish');
    expect(await h.call('delete-post-v1', { site_id_or_domain: sites[0]!.id, post_id: c.post_id, dry_run: true })).toMatchObject({
      deleted: false,
      dry_run: true,
      post: { post_title: 'Renamed' },
    });
    expect(await h.fails('delete-post-v1', { site_id_or_domain: sites[0]!.id, post_id: c.post_id })).toMatchObject({
      code: 'svc_confirmation_required',
    });
    expect(simPost(1, c.post_id)).toBeDefined();
    expect(await h.call('delete-post-v1', { site_id_or_domain: sites[0]!.id, post_id: c.post_id, confirm: true })).toMatchObject({
      deleted: true,
    });
    expect(simPost(1, c.post_id)).toBeUndefined();
  });

  it("answers a post that does not exist with 404, and refuses a viewer's write", async () => {
    expect((await h.fails('get-post-v1', { site_id_or_domain: sites[0]!.id, post_id: 999999 })).status).toBe(404);
    expect(await h.fails('create-post-v1', { site_id_or_domain: sites[0]!.id, post_title: 'x' }, h.as.viewer)).toMatchObject({
      code: 'svc_permission_denied',
    });
  });
});

describe('pages', () => {
  it('lists pages only, and creates, reads, edits, publishes and deletes a page', async () => {
    const r = await h.call('list-pages-v1', { websites: [sites[1]!.id], maximum: 200 });
    const want = h.sim.state(2).posts.filter((p) => p.type === 'page' && p.status !== 'trash' && p.status !== 'auto-draft');
    expect(r.data[sites[1]!.url]!.map((p) => p.id).sort((a, b) => a - b)).toEqual(want.map((p) => p.id).sort((a, b) => a - b));
    const c = await h.call('create-page-v1', { site_id_or_domain: sites[1]!.id, post_title: 'About us', post_content: 'Who we are' });
    expect(c).toMatchObject({ site_id: sites[1]!.id, post_title: 'About us', post_status: 'draft' });
    expect(simPost(2, c.page_id)).toMatchObject({ type: 'page', title: 'About us' });
    expect(await h.call('get-page-v1', { site_id_or_domain: sites[1]!.id, page_id: c.page_id })).toMatchObject({
      id: c.page_id,
      post_type: 'page',
      post_content: 'Who we are',
    });
    const u = await h.call('update-page-v1', { site_id_or_domain: sites[1]!.id, page_id: c.page_id, post_excerpt: 'Short' });
    expect(u.updated).toEqual(['post_excerpt']);
    expect(simPost(2, c.page_id)!.excerpt).toBe('Short');
    expect(await h.call('update-page-status-v1', { site_id_or_domain: sites[1]!.id, page_id: c.page_id, status: 'publish' })).toMatchObject(
      { previous_status: 'draft', post_status: 'publish' },
    );
    expect(
      await h.fails('delete-page-v1', { site_id_or_domain: sites[1]!.id, page_id: c.page_id, confirm: true, dry_run: true }),
    ).toMatchObject({ code: 'svc_invalid_input' });
    expect(await h.call('delete-page-v1', { site_id_or_domain: sites[1]!.id, page_id: c.page_id, confirm: true })).toMatchObject({
      deleted: true,
      page: { id: c.page_id, post_title: 'About us' },
    });
    expect(simPost(2, c.page_id)).toBeUndefined();
  });

  it('keeps posts and pages apart: a post is not a page', async () => {
    const post = h.sim.state(2).posts.find((p) => p.type === 'post')!;
    expect((await h.fails('get-page-v1', { site_id_or_domain: sites[1]!.id, page_id: post.id })).status).toBe(404);
    expect((await h.fails('update-page-status-v1', { site_id_or_domain: sites[1]!.id, page_id: post.id, status: 'draft' })).status).toBe(
      404,
    );
    expect(h.sim.state(2).posts.find((p) => p.id === post.id)!.status).toBe(post.status);
  });
});
