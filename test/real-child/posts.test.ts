// Posts on a real child: create (with dates), get, edit, every status, delete — each checked inside WordPress.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { serverWithRealSite, wpJson } from './kit.js';

const K = 3;
let s: TestServer;
let id: number;

type WpPost = {
  ID: number;
  post_status: string;
  post_title: string;
  post_date: string;
  post_date_gmt: string;
  post_content: string;
} | null;
const wpPost = (postId: number) => wpJson<WpPost>(K, `$p = get_post(${postId}); return $p ? $p->to_array() : null;`);
const ymd = (d: Date) => d.toISOString().slice(0, 19).replace('T', ' ');

beforeAll(async () => {
  ({ s, id } = await serverWithRealSite(K, startServer));
});
afterAll(async () => {
  await s?.close();
});

describe('posts on a real child', () => {
  it('creates a draft, reads it back, edits one field and leaves the rest', async () => {
    const c = await s.rest(`/posts/${id}/create`, { method: 'POST', json: { post_title: 'Lane draft', post_content: '<p>Body</p>' } });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    const postId = c.body.data.post_id as number;
    expect(wpPost(postId)).toMatchObject({ post_status: 'draft', post_title: 'Lane draft' });
    const g = await s.rest(`/posts/${id}/${postId}`);
    expect(g.status, JSON.stringify(g.body)).toBe(200);
    expect(g.body.data).toMatchObject({ post_title: 'Lane draft', post_status: 'draft' });
    const e = await s.rest(`/posts/${id}/${postId}/edit`, { method: 'PUT', json: { post_title: 'Lane draft, edited' } });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
    expect(wpPost(postId)).toMatchObject({ post_status: 'draft', post_title: 'Lane draft, edited', post_content: '<p>Body</p>' });
    const listed = await s.rest(`/posts?websites=${id}&status=draft`);
    expect(JSON.stringify(listed.body.data)).toContain('Lane draft, edited');
  });

  it('schedules a post for a future date, and WordPress keeps it scheduled (defect 4)', async () => {
    const when = new Date(Date.now() + 7 * 86_400_000);
    when.setUTCMilliseconds(0);
    const c = await s.rest(`/posts/${id}/create`, {
      method: 'POST',
      json: { post_title: 'Lane future', post_status: 'future', post_date: ymd(when) },
    });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(c.body.data.post_status).toBe('future');
    const p = wpPost(c.body.data.post_id)!;
    expect(p).toMatchObject({ post_status: 'future', post_date_gmt: ymd(when) });
  });

  it('keeps a back-dated post at its date (defect 4)', async () => {
    const c = await s.rest(`/posts/${id}/create`, {
      method: 'POST',
      json: { post_title: 'Lane old', post_status: 'publish', post_date: '2020-03-04 05:06:07' },
    });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(c.body.data.post_status).toBe('publish');
    expect(wpPost(c.body.data.post_id)).toMatchObject({ post_status: 'publish', post_date: '2020-03-04 05:06:07' });
  });

  it('moves a post through every status, as WordPress then says (defect 3: draft)', async () => {
    const c = await s.rest(`/posts/${id}/create`, { method: 'POST', json: { post_title: 'Lane statuses', post_status: 'publish' } });
    const postId = c.body.data.post_id as number;
    for (const status of ['draft', 'pending', 'private', 'publish', 'trash', 'draft'] as const) {
      const r = await s.rest(`/posts/${id}/${postId}/update-status`, { method: 'PATCH', json: { status } });
      expect(r.status, `${status}: ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.body.data.post_status).toBe(status);
      expect(wpPost(postId)!.post_status).toBe(status);
    }
  });

  it('deletes a post for good', async () => {
    const c = await s.rest(`/posts/${id}/create`, { method: 'POST', json: { post_title: 'Lane delete' } });
    const postId = c.body.data.post_id as number;
    const r = await s.rest(`/posts/${id}/${postId}/delete`, { method: 'DELETE' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(wpPost(postId)).toBeNull();
    const again = await s.rest(`/posts/${id}/${postId}`);
    expect(again.status).toBe(404);
  });
});
