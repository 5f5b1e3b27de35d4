// test/child-connector.test.ts — connector round trips against the child simulator: register, sync, plugin/theme/user/post actions.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChildError, SiteSnapshot } from '../src/child/index.js';
import { childFixture } from './support/child-sim.js';

const TWO_YEARS = 730 * 86_400;

let fx: Awaited<ReturnType<typeof childFixture>>;
beforeEach(async () => {
  fx = await childFixture({ sites: 3, seed: 7 });
});
afterEach(async () => {
  await fx.close();
});

async function failure(promise: Promise<unknown>): Promise<ChildError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ChildError);
  return err as ChildError;
}

describe('register', () => {
  it('hands back a fresh key pair, a regverify key and a full snapshot, and the child stores the key', async () => {
    const site = await fx.register(1);
    expect(site.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    expect(site.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(site.signAlgo).toBe(7);
    expect(site.regverify).toMatch(/^[0-9a-f]{40}-[0-9a-f]{40}$/);
    expect(() => SiteSnapshot.parse(site.snapshot)).not.toThrow();
    const state = fx.sim.state(1);
    expect(state.connection.pubkeyPem).toBe(site.publicKeyPem);
    expect(state.connection.server).toBe('https://fleet.example/wp-admin/');
    // The follow-up signed sync locked SHA-256 in.
    expect(state.connection.signAlgo).toBe(7);
    expect(site.snapshot.users.map((u) => u.login)).toContain('admin');
  });

  it('refuses a wrong admin password with REG_ERROR7 and stores nothing', async () => {
    const { url, admin } = fx.sim.sites[0]!;
    const err = await failure(fx.connector.register({ url, admin, adminPassword: 'wrong', sslVerify: true }));
    expect(err.kind).toBe('child_error');
    expect(err.childCode).toBe('REG_ERROR7');
    expect(err.message).toMatch(/^ERROR: Unable to connect to the site/);
    expect(fx.sim.state(1).connection.pubkeyPem).toBeNull();
  });

  it('lets the same dashboard register again while connected, and the old key stops working', async () => {
    const first = await fx.register(1);
    const second = await fx.register(1);
    expect(second.publicKeyPem).not.toBe(first.publicKeyPem);
    expect((await failure(fx.connector.sync(first))).kind).toBe('auth_failed');
    await expect(fx.connector.sync(second)).resolves.toMatchObject({ admin_username: 'admin' });
  });

  it('encodes an admin password with %, +, & and = so the child reads it back', async () => {
    const odd = await childFixture({ sites: 1, password: '%41 p+a&s=s é' });
    try {
      const site = await odd.register(1);
      expect(site.snapshot.wp_version).toBe(odd.sim.state(1).wpVersion);
    } finally {
      await odd.close();
    }
  });
});

describe('sync', () => {
  it('normalises the stats reply from the simulated WordPress state', async () => {
    const site = await fx.register(2);
    const snap = await fx.connector.sync(site);
    const state = fx.sim.state(2);
    expect(snap).toMatchObject({
      child_version: '6.1',
      wp_version: state.wpVersion,
      php_version: state.phpVersion,
      site_url: state.siteUrl,
      admin_username: 'admin',
    });
    expect(snap.wp_update_version).toBe(state.wpUpdate);
    expect(snap.plugins).toHaveLength(state.plugins.length);
    const now = Date.now() / 1000;
    for (const p of state.plugins) {
      const got = snap.plugins.find((x) => x.slug === p.slug)!;
      expect(got).toMatchObject({ name: p.name, version: p.version, active: p.active, update_version: p.updateVersion, must_use: p.mu });
      const abandoned = !p.mu && p.lastUpdated < now - TWO_YEARS;
      expect(got.last_updated).toBe(abandoned ? new Date(p.lastUpdated * 1000).toISOString().slice(0, 10) : null);
    }
    expect(snap.themes.filter((t) => t.active)).toHaveLength(1);
    expect(snap.users).toHaveLength(state.users.length);
    expect(snap.health).toEqual(state.health);
    expect(snap.changes).toHaveLength(state.changes.length);
    expect(snap.changes[0]!.timestamp >= snap.changes.at(-1)!.timestamp).toBe(true);
    expect(snap.changes[0]).toMatchObject({
      id: expect.any(Number),
      type: expect.any(String),
      user: expect.any(String),
      timestamp: expect.stringMatching(/Z$/),
    });
    expect(snap.security.every((f) => ['low', 'medium', 'high'].includes(f.severity) && f.message !== '')).toBe(true);
    expect(snap.security.some((f) => f.type === 'sslprotocol')).toBe(true);
  });

  it('returns the same live findings from security()', async () => {
    const site = await fx.register(1);
    expect(await fx.connector.security(site)).toEqual((await fx.connector.sync(site)).security);
  });
});

describe('plugins and themes', () => {
  it('deactivates, activates and deletes plugins, skipping the child plugin itself', async () => {
    const site = await fx.register(1);
    const state = fx.sim.state(1);
    const target = state.plugins.find((p) => !p.isChild && !p.mu)!.slug;
    const off = await fx.connector.pluginAction(site, 'deactivate', [target, 'mainwp-child/mainwp-child.php']);
    expect(off.affected).toEqual([target]);
    expect(off.snapshot!.plugins.find((p) => p.slug === target)!.active).toBe(false);
    expect(off.snapshot!.plugins.find((p) => p.slug === 'mainwp-child/mainwp-child.php')!.active).toBe(true);
    expect(off.snapshot!.users.length).toBeGreaterThan(0);
    const on = await fx.connector.pluginAction(site, 'activate', [target]);
    expect(on.snapshot!.plugins.find((p) => p.slug === target)!.active).toBe(true);
    const gone = await fx.connector.pluginAction(site, 'delete', [target, 'no-such/plugin.php']);
    expect(gone.affected).toEqual([target]);
    expect(state.plugins.some((p) => p.slug === target)).toBe(false);
  });

  it('activates a theme and reports the previous one', async () => {
    const site = await fx.register(1);
    const state = fx.sim.state(1);
    const before = state.themes.find((t) => t.active)!;
    const other = state.themes.find((t) => !t.active && t.slug !== before.parent)!;
    const result = await fx.connector.themeAction(site, 'activate', [other.slug]);
    expect(result).toMatchObject({ affected: [other.slug], refused: [], previous: before.slug });
    expect(result.snapshot!.themes.find((t) => t.active)!.slug).toBe(other.slug);
  });

  it('refuses to delete the active theme and deletes the others', async () => {
    const site = await fx.register(1);
    const state = fx.sim.state(1);
    const active = state.themes.find((t) => t.active)!;
    const alone = await fx.connector.themeAction(site, 'delete', [active.slug]);
    expect(alone).toMatchObject({ affected: [], refused: [{ slug: active.slug, reason: 'It is the active theme.' }], snapshot: null });
    const spare = state.themes.find((t) => !t.active && t.slug !== active.parent)!;
    const mixed = await fx.connector.themeAction(site, 'delete', [active.slug, spare.slug]);
    expect(mixed.affected).toEqual([spare.slug]);
    expect(mixed.refused.map((r) => r.slug)).toEqual([active.slug]);
    // The child's own sync block still lists what it deleted (WordPress's theme cache is not cleared within the
    // request): the connector passes it on as sent, and plugin-actions stores it without the deleted themes.
    expect(mixed.snapshot!.themes.some((t) => t.slug === spare.slug)).toBe(true);
  });
});

describe('users', () => {
  it('lists, searches, creates, reads, updates and deletes users', async () => {
    const site = await fx.register(1);
    const all = await fx.connector.listUsers(site, {});
    expect(all.map((u) => u.login).sort()).toEqual(
      fx.sim
        .state(1)
        .users.map((u) => u.login)
        .sort(),
    );
    expect((await fx.connector.listUsers(site, { search: 'dmi' })).map((u) => u.login)).toEqual(['admin']);
    expect(await fx.connector.listUsers(site, { roles: ['administrator'] })).toHaveLength(1);

    const { user_id } = await fx.connector.createUser(
      site,
      { user_login: 'zoe', user_pass: 'pw', user_email: 'zoe@example.test', first_name: 'Zoe', role: 'editor' },
      false,
    );
    expect(user_id).toBeGreaterThan(1);
    const dup = await failure(fx.connector.createUser(site, { user_login: 'zoe', user_pass: 'x', user_email: 'z2@example.test' }, false));
    expect(dup).toMatchObject({ kind: 'child_error', message: 'ERROR: Sorry, that username already exists!' });

    await fx.connector.updateUser(site, user_id, { last_name: 'Lee', email: 'zoe@new.test', password: 'n3w+%pw' });
    expect(await fx.connector.getUser(site, user_id)).toMatchObject({
      id: user_id,
      first_name: 'Zoe',
      last_name: 'Lee',
      email: 'zoe@new.test',
      role: 'editor',
    });
    expect(fx.sim.state(1).users.find((u) => u.id === user_id)!.password).toBe('n3w+%pw');
    const taken = await failure(fx.connector.updateUser(site, user_id, { email: 'admin@site1.example' }));
    expect(taken.message).toContain('This email is already registered');

    expect(await fx.connector.deleteUser(site, user_id)).toBe(true);
    expect(await fx.connector.deleteUser(site, user_id)).toBe(false);
    expect(await fx.connector.getUser(site, user_id)).toBeNull();
  });

  it('changes the connection admin password without breaking the connection', async () => {
    const site = await fx.register(1);
    await fx.connector.setAdminPassword(site, 'n€w pass+%');
    expect(fx.sim.state(1).users[0]!.password).toBe('n€w pass+%');
    await expect(fx.connector.sync(site)).resolves.toBeTruthy();
  });
});

describe('posts', () => {
  it('creates, reads, edits, lists and changes the status of posts', async () => {
    const site = await fx.register(1);
    const created = await fx.connector.savePost(site, {
      post_title: 'Launch',
      post_content: '<p>Hi</p>',
      post_status: 'draft',
      post_category: 'News, Brand New',
      post_tags: 'a, b',
    });
    expect(created.link).toContain(`?p=${created.post_id}`);
    const full = await fx.connector.getPost(site, created.post_id);
    expect(full).toMatchObject({
      id: created.post_id,
      post_title: 'Launch',
      post_content: '<p>Hi</p>',
      post_status: 'draft',
      post_category: 'News, Brand New',
      post_tags: 'a, b',
      post_featured_image: null,
      post_date_gmt: '',
    });

    await fx.connector.savePost(site, {
      ID: created.post_id,
      post_title: 'Launch day',
      post_content: 'x',
      post_status: 'publish',
      is_sticky: true,
    });
    expect(await fx.connector.getPost(site, created.post_id)).toMatchObject({
      post_title: 'Launch day',
      post_status: 'publish',
      is_sticky: true,
    });

    const listed = await fx.connector.listPosts(site, { status: ['publish'], search: 'launch', search_on: 'title' });
    expect(listed.map((p) => p.id)).toEqual([created.post_id]);
    expect(listed[0]).toMatchObject({ title: 'Launch day', status: 'publish', author: 'admin', date: expect.stringMatching(/Z$/) });

    // Each action answers the status the child reports afterwards (WordPress restores a trashed post as a draft).
    expect(await fx.connector.postAction(site, 'unpublish', created.post_id)).toEqual({ post_status: 'draft' });
    expect(await fx.connector.postAction(site, 'trash', created.post_id)).toEqual({ post_status: 'trash' });
    expect(await fx.connector.postAction(site, 'restore', created.post_id)).toEqual({ post_status: 'draft' });
    expect(await fx.connector.postAction(site, 'publish', created.post_id)).toEqual({ post_status: 'publish' });
    expect(await fx.connector.postAction(site, 'delete', created.post_id)).toEqual({ post_status: null });
    expect(await fx.connector.getPost(site, created.post_id)).toBeNull();
    expect(await fx.connector.postAction(site, 'publish', created.post_id)).toBeNull();
    expect(await fx.connector.postAction(site, 'trash', 9999)).toBeNull();
    await expect(fx.connector.savePost(site, { ID: 9999, post_title: 't', post_content: 'c', post_status: 'draft' })).rejects.toMatchObject(
      { kind: 'child_error', message: 'ERROR: Empty post id' },
    );
  });

  it('lists every status by default and honours the maximum', async () => {
    const site = await fx.register(1);
    const posts = fx.sim.state(1).posts.filter((p) => p.type === 'post');
    expect(await fx.connector.listPosts(site)).toHaveLength(posts.length);
    expect((await fx.connector.listPosts(site, { status: ['publish', 'draft'], maximum: 1 })).length).toBeLessThanOrEqual(2);
  });
});

describe('connection lifecycle', () => {
  it('reconnects with the stored regverify key and no password, renewing the keys', async () => {
    const site = await fx.register(1);
    const renewed = await fx.connector.reconnect(site);
    expect(renewed.privateKeyPem).not.toBe(site.privateKeyPem);
    expect(renewed.regverify).toBe(site.regverify);
    expect((await failure(fx.connector.sync(site))).kind).toBe('auth_failed');
    await expect(fx.connector.sync({ ...site, ...renewed })).resolves.toBeTruthy();
  });

  it('asks for the password when the regverify key is unknown', async () => {
    const site = await fx.register(1);
    const err = await failure(fx.connector.reconnect({ ...site, regverify: 'f'.repeat(40) + '-' + 'f'.repeat(40) }));
    expect(err).toMatchObject({ kind: 'child_error', childCode: 'reconnect_failed' });
    // The old key still opens the site.
    await expect(fx.connector.sync(site)).resolves.toBeTruthy();
    const withPassword = await fx.connector.reconnect({ ...site, regverify: null }, { adminPassword: fx.sim.sites[0]!.password });
    expect(withPassword.regverify).not.toBe(site.regverify);
  });

  it('disconnects: later signed calls fail authentication and a preflight sees an unconnected child', async () => {
    const site = await fx.register(1);
    await fx.connector.disconnect(site);
    expect(fx.sim.state(1).connection).toMatchObject({ pubkeyPem: null, signAlgo: null });
    expect((await failure(fx.connector.sync(site))).kind).toBe('auth_failed');
    await expect(fx.register(1)).resolves.toBeTruthy();
  });

  it('deactivates: the plugin stops answering at all', async () => {
    const site = await fx.register(1);
    await fx.connector.deactivate(site);
    expect(fx.sim.state(1).childActive).toBe(false);
    expect((await failure(fx.connector.sync(site))).kind).toBe('no_marker');
  });
});

describe('probe', () => {
  it('reports a reachable site root and an unreachable port without throwing', async () => {
    const site = fx.sim.sites[0]!;
    const before = fx.sim.requests(1);
    expect(await fx.connector.probe(site.url, { sslVerify: true })).toMatchObject({ reachable: true, http_status: 200 });
    expect(fx.sim.requests(1)).toBe(before + 1);
    const dead = await fx.connector.probe('http://127.0.0.1:1/', { sslVerify: true });
    expect(dead).toMatchObject({ reachable: false, http_status: 0 });
    expect(dead.response_time_ms).toBeGreaterThanOrEqual(0);
  });
});
