// Uploaded zips: checked before anything reaches a site (a real zip, one top folder, a plugin header or a theme
// style.css, no path that climbs out, bounded entries and unpacked bytes), kept, and served to the children from a
// signed, expiring, single-purpose link; installed on simulated sites that really download it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildSim, type ChildSim } from '../src/child/simulator/server.js';
import { inspectPackageZip } from '../src/core/zip-check.js';
import { LINK_TTL_S, MAX_PACKAGE_BYTES } from '../src/domain/uploads.js';
import { expectError } from './support/fixtures.js';
import { startServer, type TestServer } from './support/server.js';
import { makeZip, pluginZip, themeZip } from './support/zip.js';

let sim: ChildSim;
let s: TestServer;
let ids: number[];

async function upload(zip: Buffer, type = 'plugin', token?: string | null) {
  const form = new FormData();
  form.set('type', type);
  form.set('file', new Blob([new Uint8Array(zip)]), 'package.zip');
  return s.rest('/packages/upload', { method: 'POST', body: form, token });
}

async function refused(zip: Buffer, type: 'plugin' | 'theme', message: RegExp) {
  await expect(inspectPackageZip(zip, type)).rejects.toMatchObject({ code: 'svc_invalid_package', status: 400, message });
}

beforeAll(async () => {
  sim = await startChildSim({ sites: 3, seed: 3 });
  s = await startServer({ config: { packageSource: `${sim.baseUrl}/__sim/dir/` } });
  ids = [];
  for (const info of sim.sites) {
    const r = await s.rest('/sites/add', { method: 'POST', json: { url: info.url, admin: info.admin, admin_password: info.password } });
    ids.push(r.body.data.id);
  }
});
afterAll(async () => {
  await s?.close();
  await sim?.close();
});

describe('checking a package zip', () => {
  it('takes a plugin (header in a top-level PHP file) and a theme (style.css), and names folder, name and version', async () => {
    expect(await inspectPackageZip(pluginZip('up-plugin', '2.0.1'), 'plugin')).toMatchObject({
      folder: 'up-plugin',
      name: 'Up up-plugin',
      version: '2.0.1',
      main: 'up-plugin/up-plugin.php',
    });
    expect(await inspectPackageZip(themeZip('up-theme', '1.2'), 'theme')).toMatchObject({ folder: 'up-theme', version: '1.2' });
  });

  it('refuses what is not a zip, two top folders, a file outside the folder, no header, a path that climbs out', async () => {
    await refused(Buffer.from('<html>not a zip</html>'), 'plugin', /not a zip/);
    await refused(Buffer.alloc(0), 'plugin', /not a zip/);
    await refused(
      makeZip([
        { name: 'a/a.php', data: '<?php /* Plugin Name: A */' },
        { name: 'b/b.php', data: '' },
      ]),
      'plugin',
      /2 top folders/,
    );
    await refused(makeZip([{ name: 'a.php', data: '<?php /* Plugin Name: A */' }]), 'plugin', /outside a top folder/);
    await refused(makeZip([{ name: 'a/a.php', data: '<?php echo 1;' }]), 'plugin', /Plugin Name/);
    await refused(makeZip([{ name: 'a/sub/a.php', data: '<?php /* Plugin Name: Deep */' }]), 'plugin', /Plugin Name/);
    await refused(pluginZip('p', '1'), 'theme', /style\.css/);
    await refused(
      makeZip([
        { name: 'a/a.php', data: '<?php /* Plugin Name: A */' },
        { name: 'a/../../evil.php', data: 'x' },
      ]),
      'plugin',
      /climbs out/,
    );
    await refused(makeZip([{ name: '/etc/a.php', data: 'x' }]), 'plugin', /absolute/);
    await refused(makeZip([{ name: 'a\\..\\b.php', data: 'x' }]), 'plugin', /malformed/);
    await refused(makeZip([{ name: 'a b/a.php', data: '<?php /* Plugin Name: A */' }]), 'plugin', /folder name/);
    await refused(makeZip([{ name: 'a/a.php', data: '<?php /* Plugin Name: A */', encrypted: true }]), 'plugin', /encrypted/);
    // A zip cut short: its entries' data lies beyond the end.
    const whole = pluginZip('cut', '1');
    await refused(
      Buffer.concat([whole.subarray(0, 40), whole.subarray(whole.length - 150)]),
      'plugin',
      /damaged|local header|past the end|not a zip/,
    );
  });

  it('a zip bomb is refused at the unpacked-bytes bound, however small its declared sizes', async () => {
    const bounds = { maxEntries: 10, maxUnpackedBytes: 1_000_000 };
    const zeros = (n: number) => Buffer.alloc(n);
    const header = { name: 'b/b.php', data: '<?php /* Plugin Name: B */' };
    const at = await inspectPackageZip(
      makeZip([header, { name: 'b/pad.bin', data: zeros(1_000_000 - header.data.length) }]),
      'plugin',
      bounds,
    );
    expect(at.unpacked_bytes).toBe(1_000_000);
    const bomb = makeZip([header, { name: 'b/pad.bin', data: zeros(1_000_000 - header.data.length + 1), declaredSize: 10 }]);
    expect(bomb.length).toBeLessThan(5_000);
    await expect(inspectPackageZip(bomb, 'plugin', bounds)).rejects.toMatchObject({
      code: 'svc_invalid_package',
      message: /more than 1000000 bytes/,
    });
    const many = makeZip([header, ...Array.from({ length: 10 }, (_, i) => ({ name: `b/f${i}.txt`, data: 'x' }))]);
    await expect(inspectPackageZip(many, 'plugin', bounds)).rejects.toMatchObject({ message: /11 entries, more than 10/ });
  });
});

describe('uploading and installing an uploaded zip', () => {
  it('REST upload checks the zip before keeping it; a bad one is refused and no site is called', async () => {
    const before = sim.sites.map((x) => sim.requests(x.index));
    const bad = await upload(makeZip([{ name: 'x/../y.php', data: 'x' }]));
    expectError(bad, 400, 'svc_invalid_package');
    expectError(await upload(Buffer.from('nope')), 400, 'svc_invalid_package');
    expectError(await s.ability('upload-package-v1', { type: 'plugin', zip: 'not base64!' }), 400, 'ability_invalid_input');
    expect((await upload(pluginZip('x', '1'), 'plugin', null)).status).toBe(401);
    const noFile = await s.rest('/packages/upload', { method: 'POST', json: { type: 'plugin' } });
    expectError(noFile, 400, 'svc_no_file_uploaded');
    const big = await upload(Buffer.alloc(MAX_PACKAGE_BYTES + 1));
    expect(big.status).toBe(413);
    expect(sim.sites.map((x) => sim.requests(x.index))).toEqual(before);
  });

  it('installs an uploaded plugin on two sites from a signed link; the link serves that zip only and expires', async () => {
    const zip = pluginZip('up-plugin', '2.0.1');
    const up = await upload(zip);
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.data).toMatchObject({ type: 'plugin', folder: 'up-plugin', name: 'Up up-plugin', version: '2.0.1', size: zip.length });
    const r = await s.ability('install-plugins-v1', {
      site_ids_or_domains: ids.slice(0, 2),
      upload_id: up.body.data.upload_id,
      activate: true,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.package).toMatchObject({
      source: 'upload',
      slug: 'up-plugin',
      version: '2.0.1',
      download_url: `upload:${up.body.data.upload_id}`,
    });
    expect(r.body.summary).toEqual({ installed: 2, failed: 0, skipped: 0 });
    for (const n of [1, 2])
      expect(sim.state(n).plugins.find((p) => p.slug === 'up-plugin/up-plugin.php')).toMatchObject({ version: '2.0.1', active: true });

    const link = s.services.uploads.link(up.body.data.upload_id);
    expect(link.startsWith(`${s.url}/packages/${up.body.data.upload_id}.`)).toBe(true);
    const got = await fetch(link);
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).equals(zip)).toBe(true);
    // Forged, altered or expired: 404 like any unknown path.
    const forged = link.replace(/\.([A-Za-z0-9_-]{43})\.zip$/, `.${'A'.repeat(43)}.zip`);
    expect((await fetch(forged)).status).toBe(404);
    const [id, exp] = link.split('/packages/')[1]!.split('.');
    expect((await fetch(link.replace(`${id}.${exp}.`, `${id}.${Number(exp) + 1}.`))).status).toBe(404);
    const real = s.services.uploads.now;
    try {
      s.services.uploads.now = () => real() + (LINK_TTL_S + 1) * 1000;
      expect((await fetch(link)).status).toBe(404);
    } finally {
      s.services.uploads.now = real;
    }
    expect((await fetch(`${s.url}/packages/whatever.zip`)).status).toBe(404);
  });

  it('an upload of the other type, an unknown upload, or upload with version or slug is refused before any site', async () => {
    const theme = await upload(themeZip('up-theme', '1.2'), 'theme');
    expect(theme.status).toBe(200);
    const on = { site_ids_or_domains: [ids[2]] };
    const before = sim.requests(3);
    expectError(await s.ability('install-plugins-v1', { ...on, upload_id: theme.body.data.upload_id }), 400, 'svc_invalid_input');
    expectError(await s.ability('install-themes-v1', { ...on, upload_id: 'f'.repeat(32) }), 404, 'svc_upload_not_found');
    expectError(
      await s.ability('install-themes-v1', { ...on, upload_id: theme.body.data.upload_id, version: '1' }),
      400,
      'svc_invalid_input',
    );
    expectError(await s.ability('install-themes-v1', { ...on, upload_id: theme.body.data.upload_id, slug: 'x' }), 400, 'svc_invalid_input');
    expect(sim.requests(3)).toBe(before);
    const ok = await s.rest('/themes/install', { method: 'POST', json: { ...on, upload_id: theme.body.data.upload_id } });
    expect(ok.body.data.installed[0]).toMatchObject({ slug: 'up-theme', version: '1.2' });
  });

  it('over MCP (base64), the same check and upload', async () => {
    const r = await s.ability('upload-package-v1', { type: 'plugin', zip: pluginZip('b64-plugin', '0.1').toString('base64') });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ folder: 'b64-plugin', version: '0.1' });
  });
});
