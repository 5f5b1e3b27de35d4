// Pages on a real child: create, read, edit one field, every status, delete — each checked inside WordPress; and
// the place the child treats pages unlike posts (its page reader calls any id a page) answered as not found.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { serverWithRealSite, wpJson } from './kit.js';

const K = 4;
let s: TestServer;
let id: number;

type WpPost = {
  ID: number;
  post_type: string;
  post_status: string;
  post_title: string;
  post_content: string;
  post_name: string;
  post_excerpt: string;
} | null;
const wpPost = (postId: number) => wpJson<WpPost>(K, `$p = get_post(${postId}); return $p ? $p->to_array() : null;`);

beforeAll(async () => {
  ({ s, id } = await serverWithRealSite(K, startServer));
});
afterAll(async () => {
  await s?.close();
});

describe('pages on a real child', () => {
  let pageId: number;

  it('creates a page that WordPress stores as a page, and reads it back', async () => {
    const c = await s.rest(`/pages/${id}/create`, {
      method: 'POST',
      json: { post_title: 'Lane page', post_content: '<p>Page body</p>', post_status: 'publish', post_name: 'lane-page' },
    });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    pageId = c.body.data.post_id as number;
    expect(wpPost(pageId)).toMatchObject({ post_type: 'page', post_status: 'publish', post_title: 'Lane page', post_name: 'lane-page' });
    // WordPress files no page under a category (posts get "Uncategorized").
    expect(wpJson<number>(K, `return count(wp_get_post_categories(${pageId}));`)).toBe(0);
    const g = await s.rest(`/pages/${id}/${pageId}`);
    expect(g.status, JSON.stringify(g.body)).toBe(200);
    expect(g.body.data).toMatchObject({
      id: pageId,
      post_type: 'page',
      post_title: 'Lane page',
      post_content: '<p>Page body</p>',
      post_status: 'publish',
    });
    const listed = await s.rest(`/pages?websites=${id}&status=publish&maximum=200`);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    const items = Object.values(listed.body.data).flat() as Array<{ id: number; post_type: string }>;
    expect(items.map((p) => p.id)).toContain(pageId);
    expect(items.every((p) => p.post_type === 'page')).toBe(true);
  });

  it('edits one field and leaves the rest', async () => {
    const e = await s.rest(`/pages/${id}/${pageId}/edit`, { method: 'PATCH', json: { post_excerpt: 'Short' } });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
    expect(wpPost(pageId)).toMatchObject({
      post_type: 'page',
      post_excerpt: 'Short',
      post_title: 'Lane page',
      post_content: '<p>Page body</p>',
      post_status: 'publish',
      post_name: 'lane-page',
    });
  });

  it("does not take a post for a page (the child's page reader would)", async () => {
    const postId = wpJson<number>(
      K,
      `return wp_insert_post(['post_title' => 'Lane post not page', 'post_status' => 'publish', 'post_type' => 'post']);`,
    );
    // What the child answers: its page reader labels the post a page.
    const g = await s.rest(`/pages/${id}/${postId}`);
    expect([g.status, g.body.code]).toEqual([404, 'svc_page_not_found']);
    const d = await s.rest(`/pages/${id}/${postId}/delete`, { method: 'DELETE' });
    expect(d.status).toBe(404);
    const t = await s.rest(`/pages/${id}/${postId}/update-status`, { method: 'PUT', json: { status: 'trash' } });
    expect(t.status).toBe(404);
    expect(wpPost(postId)).toMatchObject({ post_type: 'post', post_status: 'publish' });
  });

  it('moves a page through every status, as WordPress then says', async () => {
    for (const status of ['draft', 'pending', 'private', 'publish', 'trash', 'draft'] as const) {
      const r = await s.rest(`/pages/${id}/${pageId}/update-status`, { method: 'PUT', json: { status } });
      expect(r.status, `${status}: ${JSON.stringify(r.body)}`).toBe(200);
      expect(wpPost(pageId)!.post_status).toBe(status);
    }
  });

  it('deletes a page for good', async () => {
    const r = await s.rest(`/pages/${id}/${pageId}/delete`, { method: 'DELETE' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(wpPost(pageId)).toBeNull();
    expect((await s.rest(`/pages/${id}/${pageId}`)).status).toBe(404);
  });
});
