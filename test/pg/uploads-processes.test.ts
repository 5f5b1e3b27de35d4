// Uploaded zips with several `serve` processes on one PostgreSQL database. The zip, its record and the links' signing
// secret are files in the data dir (packages/), not in the database: processes that share a data dir share uploads
// (an upload taken by one installs through the other, whose link the children download from it); a process on
// another data dir does not know the upload (404 svc_upload_not_found) — the limit the README states.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildSim, type ChildSim } from '../../src/child/simulator/server.js';
import { cli, lastLine, serveProcess } from '../support/process.js';
import { tempDir, testFleetStore } from '../support/server.js';
import { pluginZip } from '../support/zip.js';

type Serve = Awaited<ReturnType<typeof serveProcess>>;
let sim: ChildSim;
let a: Serve;
let b: Serve;
let other: Serve;
let token: string;
let siteId: number;

beforeAll(async () => {
  sim = await startChildSim({ sites: 1, seed: 41 });
  const fleet = await testFleetStore();
  expect(fleet.databaseUrl).toMatch(/^postgres:/);
  token = lastLine((await cli(['keys', 'create', '--name', 'k', ...fleet.args])).stdout);
  [a, b, other] = await Promise.all([
    serveProcess([...fleet.args, '--allow-private-sites']),
    serveProcess([...fleet.args, '--allow-private-sites']),
    serveProcess(['--data-dir', tempDir(), '--database-url', fleet.databaseUrl!, '--allow-private-sites']),
  ]);
  const s = sim.sites[0]!;
  const added = await rest(a, '/sites/add', { json: { url: s.url, admin: s.admin, admin_password: s.password } });
  expect(added.status).toBe(200);
  siteId = added.body.data.id;
}, 60_000);
afterAll(async () => {
  for (const p of [a, b, other]) await p?.stop();
  await sim?.close();
});

async function rest(p: Serve, path: string, init: { json?: unknown; form?: FormData }): Promise<{ status: number; body: any }> {
  const res = await fetch(`${p.url}/wp-json/svc/v2${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, ...(init.json ? { 'content-type': 'application/json' } : {}) },
    body: init.form ?? JSON.stringify(init.json),
  });
  return { status: res.status, body: await res.json() };
}

async function uploadAt(p: Serve, slug: string): Promise<string> {
  const form = new FormData();
  form.set('type', 'plugin');
  form.set('file', new Blob([new Uint8Array(pluginZip(slug, '1.2.3'))]), `${slug}.zip`);
  const r = await rest(p, '/packages/upload', { form });
  expect(r.status).toBe(200);
  return r.body.data.upload_id;
}

describe('uploads across serve processes on one database', () => {
  it('an upload taken by one process installs through another on the same data dir, which serves the children its link', async () => {
    const uploadId = await uploadAt(a, 'up-shared');
    const r = await rest(b, '/plugins/install', { json: { site_ids_or_domains: [siteId], upload_id: uploadId } });
    expect(r.status).toBe(200);
    expect(JSON.stringify(r.body)).toContain('up-shared/up-shared.php');
    expect(sim.state(1).plugins.find((p) => p.slug === 'up-shared/up-shared.php')).toMatchObject({ version: '1.2.3' });
  });

  it('a process on another data dir does not know the upload: 404 svc_upload_not_found, no site called', async () => {
    const uploadId = await uploadAt(a, 'up-elsewhere');
    const before = sim.requests(1);
    const r = await rest(other, '/plugins/install', { json: { site_ids_or_domains: [siteId], upload_id: uploadId } });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ code: 'svc_upload_not_found' });
    expect(sim.requests(1)).toBe(before);
  });
});
