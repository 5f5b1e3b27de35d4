// Clients written for the upstream dashboard, sending what they send (issue #13): each item is tested through the
// door where it broke, with the request as such a client makes it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';

let f: Fleet;
let ids: Array<{ id: number; url: string }>;
beforeAll(async () => {
  f = await startFleet({ sim: { sites: 3 } });
  ids = await registerSites(f, 3);
});
afterAll(async () => { await f.close(); });

describe('REST answers in upstream\'s shape', () => {
  it('POST /sites/{id}/check carries a message and the site\'s client_id', async () => {
    const r = await f.s.rest(`/sites/${ids[0]!.id}/check`, { method: 'POST' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, message: 'Site is reachable.', data: { id: ids[0]!.id, client_id: null, reachable: true } });
  });

  it('GET /posts/{site}/{id} sends is_sticky as 0/1 and post_gallery_images', async () => {
    const c = await f.s.rest(`/posts/${ids[0]!.id}/create`, { method: 'POST', json: { post_title: 'Sticky', post_status: 'publish', is_sticky: 1 } });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    const r = await f.s.rest(`/posts/${ids[0]!.id}/${c.body.data.post_id}`);
    expect(r.body.data).toMatchObject({ is_sticky: 1, post_gallery_images: [] });
    const viaAbility = await f.s.ability('get-post-v1', { site_id_or_domain: ids[0]!.id, post_id: c.body.data.post_id }, { method: 'GET' });
    expect(viaAbility.body).toMatchObject({ is_sticky: true, post_gallery_images: [] });
  });
});

describe('abilities discovery as the official MCP bridge reads it', () => {
  it('gives every ability meta.annotations.instructions', async () => {
    const res = await fetch(`${f.s.abilitiesBase}/abilities?per_page=100`, { headers: { authorization: f.s.creds.admin } });
    const list = (await res.json()) as Array<{ name: string; meta: { annotations: { instructions?: unknown; destructive: boolean } } }>;
    expect(list.length).toBeGreaterThan(50);
    for (const a of list) expect(typeof a.meta.annotations.instructions, a.name).toBe('string');
    const del = list.find((a) => a.name === 'svc/delete-tag-v1')!;
    expect(del.meta.annotations.instructions).toMatch(/dry_run=true first/);
  });
});
