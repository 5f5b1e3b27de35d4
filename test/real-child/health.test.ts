// Site health on a real WordPress (issue 28): a well site probes healthy and its title ("Real Child 3") becomes the
// content marker; rc-alpha 1.2.0 (fatal on every web request) makes the home and login pages WordPress's 500
// critical-error page; rc-alpha 1.3.0 (the page's title dropped) is caught by the content marker; each attempt is in
// the update history. Site 3 is put back by snapshot.sh after each broken update.
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { KIT, RC_DIR, offer, realSite, serverWithRealSite, wpJson } from './kit.js';

const K = 3;
let s: TestServer;
let id: number;

const snapshot = (how: 'save' | 'restore', name: string) =>
  execFileSync(`${KIT}/snapshot.sh`, ['--dir', RC_DIR, '--site', String(K), `--${how}`, name], { stdio: ['ignore', 'ignore', 'pipe'] });
const alphaVersion = () => wpJson<string>(K, 'wp_clean_plugins_cache(); return get_plugins()["rc-alpha/rc-alpha.php"]["Version"];');
const probe = async () => (await s.rest(`/sites/${id}/health`, { method: 'POST' })).body.data;
/** Offers rc-alpha at `to`, syncs, applies it the plain way, and answers the run. */
async function updateAlpha(to: string) {
  offer(K, '--plugin', 'rc-alpha', '--to', to);
  await s.ability('list-updates-v1', { site_ids_or_domains: [id], refresh: true }, { method: 'GET' });
  const r = await s.ability('update-site-plugins-v1', { site_id_or_domain: id, slugs: ['rc-alpha/rc-alpha.php'] });
  expect(r.status).toBe(200);
  return r.body;
}

beforeAll(async () => {
  ({ s, id } = await serverWithRealSite(K, startServer));
  snapshot('save', 'health-registered');
});
afterAll(async () => {
  snapshot('restore', 'health-registered');
  await s?.close();
});

describe('health probe of a real site', () => {
  it('finds a well site healthy: home and login 200, its title learned as the marker', async () => {
    const first = await probe();
    expect(first.health).toMatchObject({ status: 'healthy' });
    expect(first.health.pages.map((p: { kind: string; http_status: number }) => [p.kind, p.http_status])).toEqual([
      ['home', 200],
      ['login', 200],
    ]);
    expect(first.title).toBe(`Real Child ${K}`);
    const second = await probe();
    expect(second.health.marker).toEqual({ text: `Real Child ${K}`, source: 'title', found: true });
    await s.rest(`/sites/${id}/edit`, { method: 'POST', json: { health_urls: ['/sample-page/'] } });
    const third = await probe();
    expect(third.health.pages[2]).toMatchObject({ kind: 'extra', url: `${realSite(K).url}sample-page/`, http_status: 200, ok: true });
  });

  it("rc-alpha 1.2.0: WordPress's critical-error page (500) on home, login and the extra page", async () => {
    const run = await updateAlpha('1.2.0');
    expect(run.updated).toEqual([expect.objectContaining({ slug: 'rc-alpha/rc-alpha.php', new_version: '1.2.0' })]);
    expect(alphaVersion()).toBe('1.2.0');
    const r = await probe();
    expect(r.health.status).toBe('unhealthy');
    expect(r.health.pages.map((p: { kind: string; http_status: number; problem: string }) => [p.kind, p.http_status, p.problem])).toEqual([
      ['home', 500, 'fatal_error'],
      ['login', 500, 'fatal_error'],
      ['extra', 500, 'fatal_error'],
    ]);
    const history = (await s.rest(`/updates/${id}/history`)).body;
    expect(history.data[0]).toMatchObject({ slug: 'rc-alpha/rc-alpha.php', from: '1.0.0', to: '1.2.0', outcome: 'updated', safe: false });
    snapshot('restore', 'health-registered');
    expect((await probe()).health.status).toBe('healthy');
  });

  it('rc-alpha 1.3.0: every page answers 200, but the home page lacks the title: the content marker catches it', async () => {
    await updateAlpha('1.3.0');
    expect(alphaVersion()).toBe('1.3.0');
    const r = await probe();
    expect(r.health).toMatchObject({ status: 'unhealthy', marker: { text: `Real Child ${K}`, source: 'title', found: false } });
    expect(r.health.pages.map((p: { kind: string; http_status: number; problem: string }) => [p.kind, p.http_status, p.problem])).toEqual([
      ['home', 200, 'content_missing'],
      ['login', 200, null],
      ['extra', 200, null],
    ]);
    snapshot('restore', 'health-registered');
  });
});
