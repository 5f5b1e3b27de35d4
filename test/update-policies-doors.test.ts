// Update policies through the doors (issue 28 part 4): REST /updates/policies (list, add as JSON or a form, preview,
// edit, remove with dry_run), the abilities door and MCP running the same abilities; a read key may list and preview
// but not add; /updates/policies is not taken for a site called "policies".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';

let f: Fleet;
let ids: number[];
let mcp: McpTestClient;
const week = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 2 } });
  ids = (await registerSites(f)).map((s) => s.id);
  await f.s.rest('/sites/sync', { method: 'POST' });
  mcp = await connectMcp(f.s);
});
afterAll(async () => {
  await mcp.close();
  await f.close();
});

describe('REST /updates/policies', () => {
  it('adds (JSON), lists, previews, edits and removes a policy', async () => {
    const add = await f.s.rest('/updates/policies/add', {
      method: 'POST',
      json: { name: 'Weekend', sites: [ids[0]], days: ['sat', 'sun'], start: '22:00', end: '02:00', core: 'none' },
    });
    expect(add.status).toBe(200);
    expect(add.body).toMatchObject({
      success: 1,
      message: 'Update policy created.',
      data: { name: 'Weekend', window: { days: ['sat', 'sun'], start: '22:00', end: '02:00' }, updates: { core: 'none' }, safe: true },
    });
    const id = add.body.data.id as number;
    const list = await f.s.rest('/updates/policies', { token: f.s.creds.key.read });
    expect(list.body).toMatchObject({ success: 1, total: 1, data: [{ id, name: 'Weekend' }] });
    const preview = await f.s.rest(`/updates/policies/${id}/preview`, { token: f.s.creds.key.read });
    expect(preview.status).toBe(200);
    expect(preview.body.data.next_window.sites).toEqual([expect.objectContaining({ site_id: ids[0] })]);
    expect(preview.body.data.next_window.starts_at).toMatch(/T22:00:00\.000Z$/); // the simulator's sites are on UTC
    const edit = await f.s.rest(`/updates/policies/${id}/edit`, { method: 'PATCH', json: { stop_after: 7, paused: true } });
    expect(edit.body.data).toMatchObject({ stop_after: 7, paused: true, name: 'Weekend' });
    const dry = await f.s.rest(`/updates/policies/${id}/remove?dry_run=1`, { method: 'DELETE' });
    expect(dry.body).toMatchObject({ success: 1, message: 'Dry run: the policy would be deleted.' });
    expect((await f.s.rest('/updates/policies')).body.total).toBe(1);
    const gone = await f.s.rest(`/updates/policies/${id}/remove`, { method: 'DELETE' });
    expect(gone.body).toMatchObject({ success: 1, message: 'Update policy deleted.', data: { id } });
    expect((await f.s.rest(`/updates/policies/${id}/preview`)).status).toBe(404);
  });

  it('takes a form body too, and refuses a bad window with its code', async () => {
    const form = new URLSearchParams({ name: 'Form', all_sites: 'true', 'days[]': 'mon', start: '01:00', end: '03:00' });
    const r = await f.s.rest('/updates/policies/add', { method: 'POST', body: form });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ name: 'Form', targets: { all: true }, window: { days: ['mon'] } });
    const bad = await f.s.rest('/updates/policies/add', {
      method: 'POST',
      json: { name: 'Bad', all_sites: true, days: week, start: '03:00', end: '03:00' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('svc_invalid_window');
    await f.s.rest(`/updates/policies/${r.body.data.id}/remove`, { method: 'DELETE' });
  });

  it('security_only through REST (JSON and a form), MCP and the preview; a value that is not a boolean is refused', async () => {
    const add = await f.s.rest('/updates/policies/add', {
      method: 'POST',
      json: { name: 'Sec', all_sites: true, days: week, start: '01:00', end: '02:00', security_only: true },
    });
    expect(add.body.data.updates).toMatchObject({ security_only: true });
    const id = add.body.data.id as number;
    expect((await f.s.rest(`/updates/policies/${id}/preview`)).body.data).toMatchObject({ security_only: true });
    const m = await mcp.call('update-update-policy-v1', { policy_id: id, security_only: false });
    expect(m.body.updates.security_only).toBe(false);
    const form = await f.s.rest(`/updates/policies/${id}/edit`, { method: 'POST', body: new URLSearchParams({ security_only: 'true' }) });
    expect(form.body.data.updates.security_only).toBe(true);
    for (const bad of ['maybe', '2']) {
      const r = await f.s.rest(`/updates/policies/${id}/edit`, { method: 'PATCH', json: { security_only: bad } });
      expect(r.status).toBe(400);
    }
    expect((await mcp.call('update-update-policy-v1', { policy_id: id, security_only: 'yes' })).isError).toBe(true);
    expect((await f.s.rest('/updates/policies')).body.data[0].updates.security_only).toBe(true);
    await f.s.rest(`/updates/policies/${id}/remove`, { method: 'DELETE' });
  });

  it('a read key may not add one', async () => {
    const r = await f.s.rest('/updates/policies/add', {
      method: 'POST',
      token: f.s.creds.key.read,
      json: { name: 'No', all_sites: true, days: week, start: '01:00', end: '02:00' },
    });
    expect(r.status).toBe(403);
    expect((await f.s.rest('/updates/policies')).body.total).toBe(0);
  });
});

describe('the abilities door and MCP', () => {
  it('run the same abilities', async () => {
    const a = await f.s.ability(
      'add-update-policy-v1',
      { name: 'Door', all_sites: true, days: week, start: '04:00', end: '05:00' },
      { method: 'POST' },
    );
    expect(a.status).toBe(200);
    const m = await mcp.call('preview-update-policy-v1', { policy_id: a.body.id });
    expect(m.isError).toBe(false);
    expect(m.body.next_window.sites.map((s: { site_id: number }) => s.site_id)).toEqual(ids);
    const l = await mcp.call('list-update-policies-v1', {});
    expect(l.body.items.map((p: { name: string }) => p.name)).toEqual(['Door']);
    const d = await mcp.call('delete-update-policy-v1', { policy_id: a.body.id, confirm: true });
    expect(d.body).toMatchObject({ deleted: true });
  });
});
