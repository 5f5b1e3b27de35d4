// Posts on child sites through every door (abilities v1, REST v2, MCP) against simulated children: list across
// sites, read, create, edit (only the fields given), status changes, delete, dead children.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';

let f: Fleet;
let ids: Array<{ id: number; url: string }>;
let mcp: McpTestClient;

const postOn = (i: number, id: number) => f.sim.state(i).posts.find((p) => p.id === id);
const day = (offsetDays: number) => new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 19).replace('T', ' ');

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 3 } });
  ids = await registerSites(f, 3);
  mcp = await connectMcp(f.s);
});
afterAll(async () => {
  await mcp.close();
  await f.close();
});

describe('list-posts', () => {
  it('answers data keyed by site URL with id, title and post_status items (REST), all but the trash by default', async () => {
    const r = await f.s.rest(`/posts?websites=${ids[0]!.id},${ids[1]!.id}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, message: 'Get posts successfully.', errors: [], skipped: [], unknown: [] });
    expect(Object.keys(r.body.data)).toEqual([ids[0]!.url, ids[1]!.url]);
    const expected = f.sim.state(1).posts.filter((p) => p.type === 'post' && p.status !== 'trash');
    const items = r.body.data[ids[0]!.url];
    expect(items.map((p: { id: number }) => p.id).sort()).toEqual(expected.map((p) => p.id).sort());
    const one = expected[0]!;
    expect(items.find((p: { id: number }) => p.id === one.id)).toMatchObject({
      id: one.id,
      title: one.title,
      post_status: one.status,
      website_id: ids[0]!.id,
      post_type: 'post',
    });
    expect(r.body.total).toBe(Object.values(r.body.data).flat().length);
  });

  it('filters by status, search, dates and post_type (abilities door, GET)', async () => {
    const published = f.sim.state(1).posts.filter((p) => p.type === 'post' && p.status === 'publish');
    const byStatus = await f.s.ability('list-posts-v1', { websites: [ids[0]!.id], status: ['publish'] }, { method: 'GET' });
    expect(byStatus.status).toBe(200);
    expect(byStatus.body.data[ids[0]!.url].map((p: { id: number }) => p.id).sort()).toEqual(published.map((p) => p.id).sort());
    const word = published[0]!.title.split(' ')[0]!;
    const searched = await f.s.ability('list-posts-v1', { websites: [ids[0]!.id], search: word, search_on: 'title' }, { method: 'GET' });
    expect(searched.body.data[ids[0]!.url].every((p: { title: string }) => p.title.toLowerCase().includes(word.toLowerCase()))).toBe(true);
    const pages = await f.s.rest(`/posts?websites=${ids[0]!.id}&post_type=page`);
    expect(pages.body.data[ids[0]!.url].map((p: { title: string }) => p.title)).toEqual(['About us']);
    const none = await f.s.rest(`/posts?websites=${ids[0]!.id}&dtsstart=${day(1)}&dtsstop=${day(2)}`);
    expect(none.body.data[ids[0]!.url]).toEqual([]);
    const all = await f.s.rest(`/posts?websites=${ids[0]!.id}&dtsstart=${day(-1000)}&dtsstop=${day(0)}&maximum=1&search_on=body`);
    expect(all.status).toBe(200);
  });

  it('refuses a bad status naming the allowed values, and bad or reversed dates', async () => {
    const r = await f.s.rest(`/posts?websites=${ids[0]!.id}&status=live`);
    expect([r.status, r.body.code]).toEqual([400, 'rest_invalid_param']);
    expect(JSON.stringify(r.body)).toContain('publish, draft, pending, private, future, and trash');
    const viaAbility = await f.s.ability('list-posts-v1', { websites: [ids[0]!.id], status: ['live'] }, { method: 'GET' });
    expect(viaAbility.status).toBe(400);
    expect(viaAbility.body.message).toContain('publish, draft, pending, private, future, and trash');
    const unreal = await f.s.rest(`/posts?websites=${ids[0]!.id}&dtsstart=2026-02-30`);
    expect([unreal.status, unreal.body.code]).toEqual([400, 'svc_invalid_date']);
    const reversed = await f.s.rest(`/posts?websites=${ids[0]!.id}&dtsstart=2026-03-02&dtsstop=2026-03-01`);
    expect([reversed.status, reversed.body.code]).toEqual([400, 'svc_invalid_date_range']);
    const shape = await f.s.rest(`/posts?websites=${ids[0]!.id}&dtsstart=yesterday`);
    expect(shape.status).toBe(400);
  });

  it('turns a dead child into one per-site error; a single-site read answers 502', async () => {
    f.sim.setFault(2, { type: 'down' });
    try {
      const r = await mcp.call('list-posts-v1', { websites: [ids[0]!.id, ids[1]!.id] });
      expect(r.isError).toBe(false);
      expect(Object.keys(r.body.data)).toEqual([ids[0]!.url]);
      expect(r.body.errors).toEqual([expect.objectContaining({ identifier: ids[1]!.id, code: 'svc_child_unreachable', status: 502 })]);
      const one = await f.s.rest(`/posts/${ids[1]!.id}/1`);
      expect([one.status, one.body.code]).toEqual([502, 'svc_child_unreachable']);
    } finally {
      f.sim.setFault(2, null);
    }
  });
});

describe('create and read', () => {
  let postId: number;

  it('a post created through REST is read through the abilities door', async () => {
    const r = await f.s.rest(`/posts/${ids[0]!.id}/create`, {
      method: 'POST',
      json: {
        post_title: 'Fleet news',
        post_content: '<p>Hello fleet</p>',
        post_status: 'publish',
        post_name: 'fleet-news',
        post_tags: 'fleet,news',
        post_category: 'News',
        post_password: 'peek-a-boo',
      },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      success: 1,
      message: 'Create post successfully.',
      data: { id: expect.any(Number), name: 'Fleet news', post_status: 'publish', link: expect.stringContaining('fleet-news') },
    });
    postId = r.body.data.post_id;
    const got = await f.s.ability('get-post-v1', { site_id_or_domain: ids[0]!.id, post_id: postId }, { method: 'GET' });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      id: postId,
      website_id: ids[0]!.id,
      post_title: 'Fleet news',
      post_content: '<p>Hello fleet</p>',
      post_status: 'publish',
      post_name: 'fleet-news',
      post_category: 'News',
      post_tags: 'fleet, news',
      has_password: true,
      post_type: 'post',
    });
    expect(JSON.stringify(got.body)).not.toContain('peek-a-boo');
    const viaPost = await f.s.ability('get-post-v1', { site_id_or_domain: ids[0]!.url, post_id: postId });
    expect(viaPost.status).toBe(200);
  });

  it('creates a draft by default through the abilities door and MCP', async () => {
    const r = await f.s.ability('create-post-v1', {
      site_id_or_domain: ids[1]!.id,
      post_title: 'Draft from ability',
      post_category: ['Guides', 'Tips'],
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ site_id: ids[1]!.id, post_status: 'draft', post_title: 'Draft from ability' });
    expect(postOn(2, r.body.post_id)).toMatchObject({ status: 'draft', categories: ['Guides', 'Tips'] });
    const m = await mcp.call('create-post-v1', {
      site_id_or_domain: ids[1]!.id,
      post_title: 'From MCP',
      post_content: 'x',
      post_status: 'pending',
    });
    expect(m.isError).toBe(false);
    expect(postOn(2, m.body.post_id)!.status).toBe('pending');
    const read = await mcp.call('get-post-v1', { site_id_or_domain: ids[1]!.id, post_id: m.body.post_id });
    expect(read.body).toMatchObject({ post_title: 'From MCP', post_status: 'pending' });
  });

  it('needs a future date to schedule a post', async () => {
    const none = await f.s.ability('create-post-v1', { site_id_or_domain: ids[1]!.id, post_title: 'Later', post_status: 'future' });
    expect([none.status, none.body.code]).toEqual([400, 'svc_invalid_input']);
    const past = await f.s.ability('create-post-v1', {
      site_id_or_domain: ids[1]!.id,
      post_title: 'Later',
      post_status: 'future',
      post_date_gmt: '2020-01-01 10:00:00',
    });
    expect(past.status).toBe(400);
    const ok = await f.s.ability('create-post-v1', {
      site_id_or_domain: ids[1]!.id,
      post_title: 'Later',
      post_status: 'future',
      post_date_gmt: future(3),
    });
    expect(ok.status).toBe(200);
    expect(postOn(2, ok.body.post_id)!.status).toBe('future');
  });

  it("answers 404 svc_post_not_found for an unknown post and REST's site codes for an unknown site", async () => {
    const rest = await f.s.rest(`/posts/${ids[0]!.id}/99999`);
    expect([rest.status, rest.body.code]).toEqual([404, 'svc_post_not_found']);
    const ability = await f.s.ability('get-post-v1', { site_id_or_domain: ids[0]!.id, post_id: 99999 }, { method: 'GET' });
    expect([ability.status, ability.body.code]).toEqual([404, 'svc_post_not_found']);
    expect((await f.s.rest('/posts/999/1')).body.code).toBe('svc_rest_invalid_site_id');
    expect((await f.s.rest('/posts/nosuch.example/1')).body.code).toBe('svc_rest_invalid_site_data');
    expect((await f.s.rest(`/posts/${ids[0]!.id}/abc`)).body.code).toBe('rest_no_route');
    const create = await f.s.rest('/posts/999/create', { method: 'POST', json: { post_title: 'x' } });
    expect([create.status, create.body.code]).toEqual([404, 'svc_rest_invalid_site_id']);
  });

  describe('update-post', () => {
    it('changes only the fields given; everything else stays as it was', async () => {
      const before = structuredClone(postOn(1, postId)!);
      const r = await f.s.rest(`/posts/${ids[0]!.id}/${postId}/edit`, { method: 'PUT', json: { post_title: 'Fleet news, updated' } });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        success: 1,
        message: 'Edit post successfully.',
        data: { id: postId, updated_fields: ['post_title'] },
      });
      const after = postOn(1, postId)!;
      expect(after.title).toBe('Fleet news, updated');
      expect({ ...after, title: before.title, modified: before.modified }).toEqual(before);
    });

    it('keeps a draft without a date undated, and edits through PATCH, POST, the abilities door and MCP', async () => {
      const draft = f.sim.state(2).posts.find((p) => p.title === 'Draft from ability')!;
      expect(draft.date).toBe(0);
      const r = await f.s.rest(`/posts/${ids[1]!.id}/${draft.id}/edit`, {
        method: 'PATCH',
        json: { post_content: 'Body', is_sticky: '1' },
      });
      expect(r.status).toBe(200);
      expect(postOn(2, draft.id)).toMatchObject({
        date: 0,
        content: 'Body',
        sticky: true,
        title: 'Draft from ability',
        categories: ['Guides', 'Tips'],
        status: 'draft',
      });
      expect((await f.s.rest(`/posts/${ids[1]!.id}/${draft.id}/edit`, { method: 'POST', json: { post_excerpt: 'E' } })).status).toBe(200);
      const a = await f.s.ability('update-post-v1', { site_id_or_domain: ids[1]!.id, post_id: draft.id, post_tags: ['a', 'b'] });
      expect(a.body.updated).toEqual(['post_tags']);
      expect(postOn(2, draft.id)).toMatchObject({ tags: ['a', 'b'], excerpt: 'E', sticky: true });
      const m = await mcp.call('update-post-v1', { site_id_or_domain: ids[1]!.id, post_id: draft.id, post_status: 'private' });
      expect(m.isError).toBe(false);
      expect(postOn(2, draft.id)!.status).toBe('private');
    });

    it('answers 400 without fields and 404 for an unknown post', async () => {
      const none = await f.s.rest(`/posts/${ids[0]!.id}/${postId}/edit`, { method: 'PUT', json: {} });
      expect([none.status, none.body.code]).toEqual([400, 'svc_missing_fields']);
      const missing = await f.s.ability('update-post-v1', { site_id_or_domain: ids[0]!.id, post_id: 99999, post_title: 'x' });
      expect([missing.status, missing.body.code]).toEqual([404, 'svc_post_not_found']);
    });
  });

  describe('update-post-status', () => {
    it('moves a post through draft, pending, private, publish, trash and back (REST PUT and PATCH)', async () => {
      const path = `/posts/${ids[0]!.id}/${postId}/update-status`;
      for (const [status, method] of [
        ['draft', 'PUT'],
        ['pending', 'PATCH'],
        ['private', 'PUT'],
        ['publish', 'PATCH'],
        ['trash', 'PUT'],
        ['draft', 'PUT'],
      ] as const) {
        const before = postOn(1, postId)!.status;
        const r = await f.s.rest(path, { method, json: { status } });
        expect(r.status, status).toBe(200);
        expect(r.body).toMatchObject({
          success: 1,
          message: 'Update post status successfully.',
          data: { id: postId, previous_status: before, post_status: status },
        });
        expect(postOn(1, postId)!.status).toBe(status);
      }
      expect(postOn(1, postId)).toMatchObject({ title: 'Fleet news, updated', content: '<p>Hello fleet</p>', name: 'fleet-news' });
      // POST too, as clients send it (edit accepts POST; #13).
      const viaPost = await f.s.rest(path, { method: 'POST', json: { status: 'pending' } });
      expect(viaPost.status).toBe(200);
      expect(viaPost.body.data).toMatchObject({ previous_status: 'draft', post_status: 'pending' });
      expect(postOn(1, postId)!.status).toBe('pending');
      expect((await f.s.rest(path, { method: 'DELETE', json: { status: 'draft' } })).status).toBe(405);
      await f.s.rest(path, { method: 'PUT', json: { status: 'draft' } });
    });

    it('schedules only a post with a future date; refuses an unknown status naming the allowed ones', async () => {
      const path = `/posts/${ids[0]!.id}/${postId}/update-status`;
      const undated = await f.s.ability('update-post-status-v1', { site_id_or_domain: ids[0]!.id, post_id: postId, status: 'future' });
      expect([undated.status, undated.body.code]).toEqual([400, 'svc_invalid_status_change']);
      await f.s.ability('update-post-v1', { site_id_or_domain: ids[0]!.id, post_id: postId, post_date_gmt: future(5) });
      const scheduled = await mcp.call('update-post-status-v1', { site_id_or_domain: ids[0]!.id, post_id: postId, status: 'future' });
      expect(scheduled.body).toMatchObject({ post_status: 'future' });
      expect(postOn(1, postId)!.status).toBe('future');
      const bad = await f.s.rest(path, { method: 'PUT', json: { status: 'live' } });
      expect([bad.status, bad.body.code]).toEqual([400, 'rest_invalid_param']);
      expect(JSON.stringify(bad.body)).toContain('publish, draft, pending, private, future, and trash');
      const missing = await f.s.rest(`/posts/${ids[0]!.id}/99999/update-status`, { method: 'PUT', json: { status: 'publish' } });
      expect([missing.status, missing.body.code]).toEqual([404, 'svc_post_not_found']);
    });
  });

  describe('delete-post', () => {
    it('needs confirm, previews with dry_run, then deletes for good (abilities door)', async () => {
      const bare = await f.s.ability('delete-post-v1', { site_id_or_domain: ids[0]!.id, post_id: postId });
      expect([bare.status, bare.body.code]).toEqual([400, 'svc_confirmation_required']);
      const preview = await f.s.ability('delete-post-v1', { site_id_or_domain: ids[0]!.id, post_id: postId, dry_run: true });
      expect(preview.body).toMatchObject({ deleted: false, dry_run: true, post: { id: postId, post_title: 'Fleet news, updated' } });
      expect(postOn(1, postId)).toBeDefined();
      const done = await f.s.ability(
        'delete-post-v1',
        { site_id_or_domain: ids[0]!.id, post_id: postId, confirm: true },
        { method: 'DELETE' },
      );
      expect(done.body).toMatchObject({ deleted: true, dry_run: false });
      expect(postOn(1, postId)).toBeUndefined();
      const again = await f.s.rest(`/posts/${ids[0]!.id}/${postId}`);
      expect([again.status, again.body.code]).toEqual([404, 'svc_post_not_found']);
    });

    it('deletes through REST and MCP; an unknown post is 404', async () => {
      const victim = f.sim.state(3).posts.find((p) => p.type === 'post')!;
      const r = await f.s.rest(`/posts/${ids[2]!.id}/${victim.id}/delete`, { method: 'DELETE' });
      expect(r.body).toMatchObject({ success: 1, message: 'Delete post successfully.', data: { id: victim.id, name: victim.title } });
      expect(postOn(3, victim.id)).toBeUndefined();
      const next = f.sim.state(3).posts.find((p) => p.type === 'post')!;
      const m = await mcp.call('delete-post-v1', { site_id_or_domain: ids[2]!.id, post_id: next.id, confirm: true });
      expect(m.isError).toBe(false);
      expect(postOn(3, next.id)).toBeUndefined();
      const gone = await f.s.rest(`/posts/${ids[2]!.id}/${next.id}/delete`, { method: 'DELETE' });
      expect([gone.status, gone.body.code]).toEqual([404, 'svc_post_not_found']);
    });
  });
});
