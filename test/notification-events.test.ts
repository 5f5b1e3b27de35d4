// Every domain event reaches the notification rules, each through a real receiver (a loopback HTTP server taking the
// signed webhook channel's JSON): update failed / rolled back / rollback failed from real (simulated) updates,
// vulnerability found / fixed from the fixture feed, a new administrator and a plugin installed outside sitefleet from
// what a sync brings (an install by sitefleet is not news), a TLS certificate near its end from a real HTTPS server.
// Each also goes through dedupe (the same happening once per place) and digests like the events before them.
import { createServer as createHttps, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from './support/abilities.js';
import { localCert, startReceiver, type HttpReceiver } from './support/receivers.js';
import { until } from './support/wait.js';
import type { NotificationEvent } from '../src/store/notification-records.js';
import type { SiteRecord } from '../src/store/records.js';

let h: AbilityHarness;
let rx: HttpReceiver;
let ids: number[];

beforeAll(async () => {
  h = await openAbilities({ sim: { sites: 3, seed: 1 }, config: (base) => ({ packageSource: `${base}/__sim/dir/` }) });
  ids = (await h.addSimSites(3)).map((s) => s.id);
  // The first stats sync: users and plugins as the baseline that later syncs are compared with.
  await h.call('sync-sites-v1', {});
  rx = await startReceiver();
});
afterAll(async () => {
  await h.close();
  await rx.close();
});
afterEach(async () => {
  await h.services.notifications.settled();
  rx.got.length = 0;
  await h.services.store.write((tx) => {
    for (const col of ['notification_rules', 'notification_channels', 'notification_deliveries'] as const)
      for (const r of [...tx.all(col)]) tx.delete(col, r.id);
  });
});

const n = () => h.services.notifications;
async function ruleFor(events: NotificationEvent[], extra: Record<string, unknown> = {}): Promise<number> {
  const c = await h.call('add-notification-channel-v1', { name: 'hook', type: 'webhook', url: `${rx.url}/hook` });
  await h.call('add-notification-rule-v1', { name: events.join(' '), events, channel_id: c.id, ...extra });
  return c.id;
}
/** The webhook bodies received of `event`, once `count` of them are delivered. */
async function received(event: string, count = 1): Promise<any[]> {
  const of = () => rx.got.filter((g) => g.json?.event === event).map((g) => g.json);
  await until(of, (l) => l.length >= count);
  await n().settled();
  return of();
}
const creds = (k: number) => h.services.children.credentials(h.services.sites.get(ids[k - 1]!)!);
const sync = (k: number) => h.call('sync-sites-v1', { site_ids_or_domains: [ids[k - 1]!] });

describe('update results (the update history)', () => {
  it('update.failed: a plugin whose package fails to install', async () => {
    await ruleFor(['update.failed']);
    const k = 1;
    const p = h.sim.state(k).plugins.find((x) => x.updateVersion)!;
    h.sim.failUpdate(k, p.slug, 'Download failed. Could not resolve host.');
    try {
      await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: [p.slug], safe: false });
    } finally {
      h.sim.failUpdate(k, p.slug, null);
    }
    const [got] = await received('update.failed');
    expect(got.title).toBe(`Update failed: ${p.name} on ${h.services.sites.get(ids[k - 1]!)!.name}`);
    expect(got.text).toContain('Download failed. Could not resolve host.');
    expect(got).toMatchObject({
      site: { id: ids[k - 1] },
      update: { type: 'plugin', slug: p.slug, outcome: 'failed', to: p.updateVersion },
    });
  });

  it('update.rolled_back: a breaking plugin update reinstalled at its old version (safe mode)', async () => {
    await ruleFor(['update.rolled_back', 'update.failed']);
    const k = 2;
    const dir = `${h.sim.baseUrl}/__sim/dir/`;
    // Installed outside the update (no rule wants plugin.installed_outside here), then offered 1.1.0.
    await (await h.services.children.connector()).install(await creds(k), 'plugin', `${dir}plugin/sim-delta.1.0.0.zip`, { activate: true });
    h.sim.offerUpdate(k, 'plugin', 'sim-delta/sim-delta.php', '1.1.0');
    await sync(k);
    h.sim.breakOnUpdate(k, 'sim-delta/sim-delta.php', 'fatal');
    try {
      const r = await h.call('update-site-plugins-v1', { site_id_or_domain: ids[k - 1]!, slugs: ['sim-delta/sim-delta.php'] });
      expect(r.rolled_back?.[0]).toMatchObject({ outcome: 'rolled_back' });
    } finally {
      h.sim.breakOnUpdate(k, 'sim-delta/sim-delta.php', null);
    }
    const [got] = await received('update.rolled_back');
    expect(got.title).toMatch(/^Update rolled back: Sim Delta on /);
    expect(got.update).toMatchObject({
      slug: 'sim-delta/sim-delta.php',
      from: '1.0.0',
      to: '1.1.0',
      code: 'svc_update_rolled_back',
      safe: true,
    });
    // A rollback is one event: the update is not also announced as failed.
    expect(rx.got.filter((g) => g.json?.event === 'update.failed')).toEqual([]);
  });

  it('update.rollback_failed: a breaking theme with no package to put back', async () => {
    await ruleFor(['update.rollback_failed']);
    const k = 3;
    const t = h.sim.state(k).themes.find((x) => !x.active) ?? h.sim.state(k).themes[0]!;
    h.sim.offerUpdate(k, 'theme', t.slug, '99.0.0');
    await sync(k);
    h.sim.breakOnUpdate(k, t.slug, 'no_title');
    try {
      await h.call('check-site-health-v1', { site_id_or_domain: ids[k - 1]! }); // learns the title
      const r = await h.call('update-site-themes-v1', { site_id_or_domain: ids[k - 1]!, slugs: [t.slug] });
      expect(r.rolled_back?.[0]).toMatchObject({ outcome: 'rollback_failed' });
    } finally {
      h.sim.breakOnUpdate(k, t.slug, null);
      h.sim.setFrontEnd(k, null);
    }
    const [got] = await received('update.rollback_failed');
    expect(got.title).toMatch(/^Rollback failed: /);
    expect(got.update).toMatchObject({ type: 'theme', slug: t.slug, outcome: 'rollback_failed', code: 'svc_rollback_failed' });
  });
});

describe('vulnerabilities (the fixture Wordfence feed)', () => {
  it('vulnerability.found per site and item, then vulnerability.fixed when an update fixes it', async () => {
    await ruleFor(['vulnerability.found', 'vulnerability.fixed'], { sites: { site_ids: [ids[0]!] } });
    await h.services.vulnerabilities.importFile(
      join(import.meta.dirname, 'fixtures', 'vulnerabilities', 'wordfence-production.json'),
      'wordfence',
    );
    const found = await received('vulnerability.found', 3);
    // Only site 1's (the rule's site); each names the item and the record.
    expect(new Set(found.map((f) => f.site.id))).toEqual(new Set([ids[0]]));
    expect(found.every((f) => /^Vulnerability found: \S+ on /.test(f.title) && f.vulnerability.id && f.install.slug)).toBe(true);
    await h.call('fix-vulnerabilities-v1', { sites: [ids[0]!], confirm: true });
    const fixed = await received('vulnerability.fixed', 2);
    expect(fixed.map((f) => f.install.slug).sort()).toEqual(['wordpress', 'wordpress-seo']);
    expect(fixed[0].title).toMatch(/^Vulnerability fixed: /);
  });
});

describe('what a sync brings', () => {
  it('user.admin_created: an administrator made on the site (not through sitefleet) is news once; an editor is not', async () => {
    await ruleFor(['user.admin_created']);
    const k = 1;
    const c = await h.services.children.connector();
    await c.createUser(
      await creds(k),
      { user_login: 'intruder', user_pass: 'Pw-123456789!', user_email: 'intruder@example.com', role: 'administrator' },
      false,
    );
    await c.createUser(
      await creds(k),
      { user_login: 'writer', user_pass: 'Pw-123456789!', user_email: 'writer@example.com', role: 'editor' },
      false,
    );
    await sync(k);
    const [got] = await received('user.admin_created');
    expect(got.title).toBe(`New administrator on ${h.services.sites.get(ids[k - 1]!)!.name}: intruder`);
    expect(got.user).toMatchObject({ login: 'intruder', email: 'intruder@example.com' });
    await sync(k); // the same users: nothing new
    await n().settled();
    expect(rx.got.filter((g) => g.json?.event === 'user.admin_created')).toHaveLength(1);
  });

  it('plugin.installed_outside: a plugin that appears at a sync is news; one sitefleet installed is not', async () => {
    await ruleFor(['plugin.installed_outside']);
    const k = 3;
    await h.call('install-plugins-v1', {
      site_ids_or_domains: [ids[k - 1]!],
      slug: 'contact-form-lite',
      version: '2.3.1',
      activate: false,
      overwrite: false,
      dry_run: false,
    });
    const dir = `${h.sim.baseUrl}/__sim/dir/`;
    await (
      await h.services.children.connector()
    ).install(await creds(k), 'plugin', `${dir}plugin/sim-delta.1.0.0.zip`, { activate: false });
    await sync(k);
    const [got] = await received('plugin.installed_outside');
    expect(got.plugin).toMatchObject({ slug: 'sim-delta/sim-delta.php', version: '1.0.0', active: false });
    expect(got.title).toMatch(/^Plugin installed outside sitefleet on .*: Sim Delta$/);
    await sync(k);
    await n().settled();
    expect(rx.got.filter((g) => g.json?.event === 'plugin.installed_outside')).toHaveLength(1);
  });
});

describe('tls.expiring (a real HTTPS server)', () => {
  let https: HttpsServer;
  let site: SiteRecord;
  beforeAll(async () => {
    const pem = localCert(5);
    if (!pem) throw new Error('openssl is needed to make a certificate that expires in 5 days');
    https = createHttps(pem, (_q, s) => s.end('ok'));
    await new Promise<void>((r) => https.listen(0, '127.0.0.1', () => r()));
    site = await h.services.store.write((tx) =>
      h.services.sites.insert(tx, { url: `https://127.0.0.1:${(https.address() as AddressInfo).port}/`, name: 'Expiring' }),
    );
  });
  afterAll(async () => {
    await h.services.sites.remove(site.id);
    await new Promise((r) => https.close(r));
  });

  it('a certificate within the rule days is one message; a rule with fewer days does not hear of it', async () => {
    const near = await ruleFor(['tls.expiring'], { tls_days: 7 });
    const far = await ruleFor(['tls.expiring'], { tls_days: 3 });
    expect(await h.services.tlsWatch.run()).toBe(1);
    const [got] = await received('tls.expiring');
    expect(got.title).toMatch(/^TLS certificate expires in [45] days: Expiring$/);
    expect(got).toMatchObject({ site: { id: site.id }, certificate: { valid: false }, days_left: expect.any(Number) });
    expect(n().deliveries({ channel_id: near })).toHaveLength(1);
    expect(n().deliveries({ channel_id: far })).toHaveLength(0);
    // The next round sees the same certificate: no second message.
    expect(await h.services.tlsWatch.run()).toBe(1);
    await n().settled();
    expect(rx.got.filter((g) => g.json?.event === 'tls.expiring')).toHaveLength(1);
  });

  it('nothing is checked while no rule wants it; the tick waits for its interval', async () => {
    expect(await h.services.tlsWatch.run()).toBe(0);
    await ruleFor(['tls.expiring', 'update.failed'], { mode: 'daily' });
    expect(h.services.tlsWatch.tick()).toBeNull(); // checked just now
    expect(await h.services.tlsWatch.run()).toBe(1);
    // A daily rule gathers it into its digest (collecting until the day closes).
    expect(n().deliveries()).toEqual([expect.objectContaining({ kind: 'digest', status: 'collecting' })]);
  });

  it('refuses tls_days outside 1..365', async () => {
    const c = await h.call('add-notification-channel-v1', { name: 'hook', type: 'webhook', url: `${rx.url}/hook` });
    const bad = await h.fails('add-notification-rule-v1', { name: 'r', events: ['tls.expiring'], channel_id: c.id, tls_days: 0 });
    expect(bad).toMatchObject({ code: 'ability_invalid_input', status: 400 });
    expect(
      (await h.fails('add-notification-rule-v1', { name: 'r', events: ['tls.expiring'], channel_id: c.id, tls_days: 366 })).status,
    ).toBe(400);
  });
});
