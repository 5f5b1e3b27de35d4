// test/child-faults.test.ts — every simulated failure ends as the right ChildError kind with a message a person can act on.
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildError, NO_MARKER_MESSAGE, type SimFault, type SiteCredentials } from '../src/child/index.js';
import { childFixture } from './support/child-sim.js';

let fx: Awaited<ReturnType<typeof childFixture>>;
let site: SiteCredentials;

beforeAll(async () => {
  fx = await childFixture({ sites: 2, connector: { timeoutMs: 1_500 } });
  site = await fx.register(1);
});
afterAll(async () => {
  await fx.close();
});

async function failureWith(fault: SimFault, call: () => Promise<unknown> = () => fx.connector.sync(site)) {
  fx.sim.setFault(1, fault);
  const before = fx.sim.requests(1);
  try {
    const err = await call().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ChildError);
    return { err: err as ChildError, requests: fx.sim.requests(1) - before };
  } finally {
    fx.sim.setFault(1, null);
  }
}

describe('fault classification', () => {
  it('timeout: a child that never answers is cut off at the total timeout', async () => {
    const started = Date.now();
    const { err, requests } = await failureWith({ type: 'timeout' });
    expect(err.kind).toBe('timeout');
    expect(err.message).toBe('HTTP error - Operation timed out after 1500 ms');
    expect(Date.now() - started).toBeLessThan(3_000);
    // Out of time: no fallback attempt.
    expect(requests).toBe(1);
  });

  it('slow_drip: a reply trickling in is cut off by the total timeout too', async () => {
    const { err } = await failureWith({ type: 'slow_drip' });
    expect(err.kind).toBe('timeout');
  });

  it('http500: a fatal error page has no envelope, and the bare URL is tried once', async () => {
    const { err, requests } = await failureWith({ type: 'http500' });
    expect(err.kind).toBe('no_marker');
    expect(err.message).toBe(`${NO_MARKER_MESSAGE} (HTTP 500)`);
    expect(requests).toBe(2);
  });

  it('no_marker: a page without the plugin', async () => {
    const { err, requests } = await failureWith({ type: 'no_marker' });
    expect(err.kind).toBe('no_marker');
    expect(err.message).toMatch(/^MainWP Child plugin not detected or could not be reached!/);
    expect(requests).toBe(2);
  });

  it('html: a WAF page', async () => {
    const { err } = await failureWith({ type: 'html' });
    expect(err).toMatchObject({ kind: 'no_marker', message: `${NO_MARKER_MESSAGE} (HTTP 403)` });
  });

  it('redirect: named in the message so the user can fix the URL', async () => {
    const { err } = await failureWith({ type: 'redirect', to: 'https://elsewhere.example/' });
    expect(err.kind).toBe('no_marker');
    expect(err.message).toContain('redirects to https://elsewhere.example/');
  });

  it('bad_signature: the child answers "Authentication failed!" and nothing is re-sent', async () => {
    const { err, requests } = await failureWith({ type: 'bad_signature' });
    expect(err).toMatchObject({
      kind: 'auth_failed',
      message: 'ERROR: Authentication failed! Please deactivate and re-activate the MainWP Child plugin on this site.',
    });
    expect(requests).toBe(1);
  });

  it('huge: a reply over 20 MiB is abandoned while streaming', async () => {
    const { err } = await failureWith({ type: 'huge' });
    expect(err.kind).toBe('too_large');
    expect(err.message).toContain(String(20 * 1024 * 1024));
  });

  it('garbage_json: an envelope without JSON is a bad reply, not a crash', async () => {
    const { err } = await failureWith({ type: 'garbage_json' });
    expect(err).toMatchObject({ kind: 'bad_reply', message: 'Invalid reply from the child site: the envelope does not hold JSON.' });
  });

  it('wrong_types: every operation validates before use', async () => {
    const calls: (() => Promise<unknown>)[] = [
      () => fx.connector.sync(site),
      () => fx.connector.security(site),
      () => fx.connector.pluginAction(site, 'activate', ['hello.php']),
      () => fx.connector.themeAction(site, 'delete', ['x']),
      () => fx.connector.listUsers(site),
      () => fx.connector.createUser(site, { user_login: 'u', user_pass: 'p', user_email: 'u@x.test' }, false),
      () => fx.connector.deleteUser(site, 5),
      () => fx.connector.setAdminPassword(site, fx.sim.sites[0]!.password),
      () => fx.connector.listPosts(site),
      () => fx.connector.postAction(site, 'trash', 1),
      () => fx.connector.savePost(site, { post_title: 't', post_content: 'c', post_status: 'draft' }),
      // Last: the child really disconnects; only its reply is mangled.
      () => fx.connector.disconnect(site),
    ];
    for (const call of calls) {
      const { err } = await failureWith({ type: 'wrong_types' }, call);
      expect(err.kind).toBe('bad_reply');
      expect(err.message).toMatch(/^Invalid reply from the child site to \w+/);
    }
    site = await fx.register(1);
  });

  it('down: a reset connection is a transport error', async () => {
    const { err, requests } = await failureWith({ type: 'down' });
    expect(err.kind).toBe('transport');
    expect(err.message).toMatch(/^HTTP error - /);
    expect(requests).toBe(2);
  });

  it('disconnected: after "Clear Connection Data" the key is refused', async () => {
    const other = await fx.register(2);
    fx.sim.setFault(2, { type: 'disconnected' });
    const err = await fx.connector.sync(other).catch((e: unknown) => e as ChildError);
    fx.sim.setFault(2, null);
    expect(err).toMatchObject({ kind: 'auth_failed' });
    expect(fx.sim.state(2).connection.pubkeyPem).toBeNull();
  });

  it('latency: slow but fine', async () => {
    fx.sim.setFault(1, { type: 'latency', ms: 300 });
    const started = Date.now();
    await expect(fx.connector.sync(site)).resolves.toBeTruthy();
    fx.sim.setFault(1, null);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it('a closed port is a transport error naming the socket error', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const err = await fx.connector.sync({ ...site, url: `http://127.0.0.1:${port}/` }).catch((e: unknown) => e as ChildError);
    expect(err).toMatchObject({ kind: 'transport', message: `HTTP error - connect ECONNREFUSED 127.0.0.1:${port}` });
  });

  it('a site without the child on admin-ajax answers 0/400 there, and the fallback reaches the front page', async () => {
    const err = await fx.connector.sync({ ...site, url: `${fx.sim.baseUrl}/nowhere/` }).then(
      () => null,
      (e: unknown) => e as ChildError,
    );
    expect(err?.kind).toBe('no_marker');
  });

  it('the connection keeps working after every fault is lifted', async () => {
    await expect(fx.connector.sync(site)).resolves.toMatchObject({ admin_username: 'admin' });
  });
});

describe('probe under faults', () => {
  it('reports what a person would see, never throwing', async () => {
    const url = fx.sim.sites[0]!.url;
    const cases: [SimFault, boolean, number][] = [
      [{ type: 'down' }, false, 0],
      [{ type: 'html' }, false, 403],
      [{ type: 'http500' }, false, 500],
      [{ type: 'redirect', to: 'https://elsewhere.example/' }, false, 302],
      [{ type: 'no_marker' }, true, 200],
    ];
    for (const [fault, reachable, status] of cases) {
      fx.sim.setFault(1, fault);
      expect(await fx.connector.probe(url, { sslVerify: true }), fault.type).toMatchObject({ reachable, http_status: status });
    }
    fx.sim.setFault(1, null);
  });
});
