// test/child-protocol.test.ts — wire-level behaviour of the simulated child (§4, §6, §7, §9.1) and the connector's limits.
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChildConnector, ChildError } from '../src/child/index.js';
import { encodeEnvelope } from '../src/child/envelope.js';
import { newKeyPair } from '../src/child/keys.js';
import { childFixture, postForm, rawSignedCall, SERVER_URL } from './support/child-sim.js';
import { tempDir } from './support/temp.js';

let fx: Awaited<ReturnType<typeof childFixture>>;
beforeEach(async () => {
  fx = await childFixture({ sites: 2 });
});
afterEach(async () => {
  await fx.close();
});

const caught = (p: Promise<unknown>): Promise<ChildError> =>
  p.then(
    () => {
      throw new Error('expected a ChildError');
    },
    (e: unknown) => e as ChildError,
  );

/** A bare register (no follow-up sync), so no algorithm is stored yet. */
async function bareRegister(index = 1, fields: Record<string, string | undefined> = {}) {
  const site = fx.sim.sites[index - 1]!;
  const keys = await newKeyPair();
  const res = await postForm(`${site.url}wp-admin/admin-ajax.php`, {
    user: site.admin,
    function: 'register',
    mainwpver: '6.1.2',
    pubkey: keys.publicKeyPem,
    server: SERVER_URL,
    userpwd: encodeURIComponent(site.password),
    ...fields,
  });
  return { ...site, ...keys, body: res.body };
}

describe('signatures and sign_algo (§4.3)', () => {
  it('locks the first explicit algorithm in and refuses a SHA-1 downgrade', async () => {
    const site = await bareRegister();
    expect(site.body).toContain('<mainwp>');
    // Nothing stored yet: no sign_algo means SHA-1.
    await expect(rawSignedCall(site, 'security', { signWith: 1 })).resolves.toBeTruthy();
    expect(fx.sim.state(1).connection.signAlgo).toBeNull();
    await expect(rawSignedCall(site, 'security', { signAlgo: 7 })).resolves.toBeTruthy();
    expect(fx.sim.state(1).connection.signAlgo).toBe(7);
    // Once stored, it must be sent.
    expect(await caught(rawSignedCall(site, 'security', { signWith: 7 }))).toMatchObject({
      kind: 'auth_failed',
      message: expect.stringContaining('Authentication failed!'),
    });
    expect((await caught(rawSignedCall(site, 'security', { signAlgo: 1 }))).message).toContain('OPENSSL_ALGO_SHA1');
    expect((await caught(rawSignedCall(site, 'security', { signAlgo: 5, signWith: 7 }))).kind).toBe('auth_failed');
    // Upgrades replace it.
    await expect(rawSignedCall(site, 'security', { signAlgo: 8 })).resolves.toBeTruthy();
    expect(fx.sim.state(1).connection.signAlgo).toBe(8);
  });

  it('accepts SHA-1 first and upgrades later, then refuses going back (the §15 sequence)', async () => {
    const site = await bareRegister();
    for (const algo of [1, 8, 7]) await expect(rawSignedCall(site, 'security', { signAlgo: algo })).resolves.toBeTruthy();
    expect((await caught(rawSignedCall(site, 'security', { signAlgo: 1 }))).message).toContain('OPENSSL_ALGO_SHA1');
  });

  it('rejects a signature made with another key, and every signature once the key is cleared', async () => {
    const site = await fx.register(1);
    const stranger = { ...site, privateKeyPem: (await newKeyPair()).privateKeyPem };
    expect((await caught(fx.connector.sync(stranger))).kind).toBe('auth_failed');
    fx.sim.setFault(1, { type: 'disconnected' });
    expect(await caught(fx.connector.sync(site))).toMatchObject({
      kind: 'auth_failed',
      message: 'ERROR: Authentication failed! Please deactivate and re-activate the MainWP Child plugin on this site.',
    });
  });

  it('signs only function + nonce: other fields may change, a different function may not', async () => {
    const site = await fx.register(1);
    await expect(rawSignedCall(site, 'get_all_users', { signAlgo: 7, fields: { role: 'administrator' } })).resolves.toHaveLength(1);
    // An unknown signed function is "child too old".
    expect(await caught(rawSignedCall(site, 'no_such_function', { signAlgo: 7 }))).toMatchObject({
      kind: 'child_error',
      childCode: 'child_plugin_incompatible',
    });
  });

  it('answers PARSE_ERROR1 for an empty signature and the unknown-admin error for a bad user', async () => {
    const site = await fx.register(1);
    expect(await caught(rawSignedCall(site, 'stats', { signAlgo: 7, fields: { mainwpsignature: '' } }))).toMatchObject({
      kind: 'auth_failed',
      childCode: 'PARSE_ERROR1',
    });
    expect((await caught(rawSignedCall({ ...site, admin: 'ghost' }, 'stats', { signAlgo: 7 }))).message).toContain(
      'Unexisting administrator user',
    );
  });
});

describe('unsigned requests (§6, §7.1)', () => {
  it('gives 0/400 on admin-ajax and the front page on the bare URL for a protected function', async () => {
    const { url } = fx.sim.sites[0]!;
    expect(await postForm(`${url}wp-admin/admin-ajax.php`, { function: 'get_all_users', user: 'admin' })).toEqual({
      status: 400,
      body: '0',
    });
    const front = await postForm(url, { function: 'get_all_users', user: 'admin' });
    expect(front.status).toBe(200);
    expect(front.body).not.toContain('<mainwp>');
  });

  it('answers the preflight until connected, then says the site already has a link', async () => {
    const { url } = fx.sim.sites[0]!;
    expect((await postForm(`${url}wp-admin/admin-ajax.php`, { function: 'stats', user: 'admin' })).body).toMatch(/^<mainwp>/);
    await fx.register(1);
    const linked = await postForm(`${url}wp-admin/admin-ajax.php`, { function: 'stats', user: 'admin' });
    expect(Buffer.from(linked.body.slice(8, -9), 'base64').toString()).toContain('already contains a link');
  });
});

describe('register checks in order (§7.3)', () => {
  it('answers the documented codes', async () => {
    const code = async (fields: Record<string, string | undefined>, index = 1) => {
      const { body } = await bareRegister(index, fields);
      return JSON.parse(Buffer.from(body.slice(8, -9), 'base64').toString()) as { error?: string; error_code?: string; register?: string };
    };
    expect(await code({ userpwd: undefined })).toMatchObject({ error_code: 'REG_ERROR7' });
    expect(await code({ userpwd: 'nope' })).toMatchObject({ error_code: 'REG_ERROR7' });
    expect(await code({ user: 'ghost' })).toMatchObject({ error_code: 'REG_ERROR7' });
    expect(await code({ pubkey: undefined })).toMatchObject({ error_code: 'REG_ERROR1' });
    expect(await code({ userpwd: undefined, mainwpver: '5.2' })).toMatchObject({ error_code: 'REG_ERROR10' });
    expect(await code({ userpwd: undefined, regverify: '' })).toMatchObject({ error_code: 'reconnect_failed' });
    expect(await code({})).toMatchObject({ register: 'OK' });
    expect(await code({ server: 'https://other.example/wp-admin/' })).toMatchObject({ error_code: 'REG_ERROR2' });
  });

  it('surfaces REG_ERROR2 through the connector when another dashboard holds the site', async () => {
    await bareRegister(1, { server: 'https://other.example/wp-admin/' });
    const { url, admin, password } = fx.sim.sites[0]!;
    expect(await caught(fx.connector.register({ url, admin, adminPassword: password, sslVerify: true }))).toMatchObject({
      kind: 'child_error',
      childCode: 'REG_ERROR2',
    });
  });
});

describe('syncdata persistence (§9.1)', () => {
  it('keeps a reduced syncdata for embedded syncs until a full one comes again', async () => {
    const site = await fx.register(1);
    await rawSignedCall(site, 'stats', { signAlgo: 7, fields: { syncdata: JSON.stringify({ plugins: 1, themes: 0, users: 0 }) } });
    const slug = fx.sim.state(1).plugins.find((p) => !p.isChild && !p.mu)!.slug;
    const reduced = await fx.connector.pluginAction(site, 'deactivate', [slug]);
    expect(reduced.snapshot!.themes).toEqual([]);
    expect(reduced.snapshot!.users).toEqual([]);
    expect((await fx.connector.sync(site)).themes.length).toBeGreaterThan(0);
    expect((await fx.connector.pluginAction(site, 'activate', [slug])).snapshot!.themes.length).toBeGreaterThan(0);
  });
});

describe('connector limits', () => {
  it('never has more calls in flight than its concurrency, and reaches it on one origin', async () => {
    const pair = await newKeyPair();
    const many = await childFixture({ sites: 40, latencyMs: 40, preconnect: { publicKeyPem: pair.publicKeyPem, server: SERVER_URL } });
    const connector = new ChildConnector({ serverUrl: SERVER_URL, concurrency: 6, allowPrivateAddresses: true });
    try {
      const snapshots = await Promise.all(
        many.sim.sites.map((s) =>
          connector.sync({ url: s.url, admin: s.admin, privateKeyPem: pair.privateKeyPem, signAlgo: 7, sslVerify: true }),
        ),
      );
      expect(snapshots.map((s) => s.site_url)).toEqual(many.sim.sites.map((s) => s.url.replace(/\/$/, '')));
      expect(many.sim.peakInFlight()).toBe(6);
    } finally {
      await connector.close();
      await many.close();
    }
  });

  it('abandons a reply larger than maxReplyBytes', async () => {
    const site = await fx.register(1);
    const small = new ChildConnector({ serverUrl: SERVER_URL, maxReplyBytes: 2_000, allowPrivateAddresses: true });
    try {
      expect(await caught(small.sync(site))).toMatchObject({ kind: 'too_large' });
      // The connector still works for small replies afterwards.
      await expect(small.disconnect(site)).resolves.toBeUndefined();
    } finally {
      await small.close();
    }
  });
});

describe('transport options', () => {
  it('sends HTTP basic auth only when both user and password are set', async () => {
    const seen: (string | undefined)[] = [];
    const server = createServer((req, res) => {
      seen.push(req.headers.authorization);
      req.resume();
      res.end(encodeEnvelope({ result: 'success' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const { privateKeyPem } = await newKeyPair();
    const site = { url, admin: 'admin', privateKeyPem, signAlgo: 7, sslVerify: true };
    try {
      await fx.connector.disconnect({ ...site, httpUser: 'gate', httpPass: 'p:ss wörd' });
      await fx.connector.disconnect({ ...site, httpUser: 'gate', httpPass: '' });
      expect(seen).toEqual([`Basic ${Buffer.from('gate:p:ss wörd').toString('base64')}`, undefined]);
    } finally {
      server.close();
    }
  });

  it('checks TLS certificates per site', async () => {
    const dir = tempDir('sitefleet-tls-');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    const server = createTlsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) => {
      req.resume();
      res.end(encodeEnvelope({ result: 'success' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const { privateKeyPem } = await newKeyPair();
    const site = { url, admin: 'admin', privateKeyPem, signAlgo: 7 };
    try {
      const refused = await caught(fx.connector.disconnect({ ...site, sslVerify: true }));
      expect(refused.kind).toBe('transport');
      expect(refused.message).toMatch(/^HTTP error - .*self[- ]signed/i);
      await expect(fx.connector.disconnect({ ...site, sslVerify: false })).resolves.toBeUndefined();
    } finally {
      server.close();
    }
  });
});
