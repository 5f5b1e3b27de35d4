// A security_only update policy on real WordPress (issues 28 and 30): with the fixtures' feed imported, site 2 offers
// rc-gamma 1.1.0 (fixes the record it is hit by) and rc-beta 2.1.0 (no known vulnerability); the policy, in a window
// open now, previews and applies rc-gamma only, checked on the site's disk; rc-beta stays at 2.0.0.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offsetMinutes } from '../../src/core/site-time.js';
import type { JobRecord } from '../../src/store/records.js';
import { startServer, type TestServer } from '../support/server.js';
import { until } from '../support/wait.js';
import { RC_DIR, offer, resetSite, serverWithRealSite, wpJson } from './kit.js';

const K = 2;
const FIX = join(import.meta.dirname, '..', 'fixtures', 'vulnerabilities');
let s: TestServer;
let id: number;
const version = (file: string) => wpJson<string>(K, `wp_clean_plugins_cache(); return get_plugins()[${JSON.stringify(file)}]["Version"];`);

beforeAll(async () => {
  ({ s, id } = await serverWithRealSite(K, startServer));
  offer(K, '--plugin', 'rc-beta', '--to', '2.1.0');
  await s.rest('/sites/sync', { method: 'POST' });
  await s.services.vulnerabilities.importFile(join(FIX, 'wordfence-production.json'), 'wordfence');
});
afterAll(async () => {
  await s?.close();
  // Withdraw the rc-beta offer (the kit keeps offers in DIR/offers/K.json) so that other files see the kit's own.
  const file = `${RC_DIR}/offers/${K}.json`;
  if (existsSync(file)) {
    const o = JSON.parse(readFileSync(file, 'utf8'));
    delete o.plugins?.['rc-beta/rc-beta.php'];
    writeFileSync(file, JSON.stringify(o, null, 4));
  }
  wpJson(K, 'delete_site_transient("update_plugins"); return true;');
  resetSite(K);
});

describe('a security_only policy on a real site', () => {
  it('applies the update that fixes a known vulnerability, and only that one', async () => {
    expect([version('rc-gamma/rc-gamma.php'), version('rc-beta/rc-beta.php')]).toEqual(['1.0.0', '2.0.0']);
    const zone = s.services.sites.get(id)!.timezone || '+00:00';
    const local = (ms: number) => new Date(ms + offsetMinutes(zone, ms) * 60_000).toISOString().slice(11, 16);
    const now = Date.now();
    const add = await s.rest('/updates/policies/add', {
      method: 'POST',
      json: {
        name: 'Security only',
        sites: [id],
        core: 'none',
        themes: false,
        translations: false,
        security_only: true,
        days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'],
        start: local(now - 3600_000),
        end: local(now + 3600_000),
      },
    });
    expect(add.status, JSON.stringify(add.body)).toBe(200);
    const policyId = add.body.data.id as number;
    const pending = (await s.rest(`/updates/${id}`)).body.data.map((u: { slug: string }) => u.slug);
    expect(pending).toEqual(expect.arrayContaining(['rc-gamma/rc-gamma.php', 'rc-beta/rc-beta.php']));
    const preview = (await s.rest(`/updates/policies/${policyId}/preview`)).body.data;
    expect(preview.security_only).toBe(true);
    expect(preview.next_window.would_update).toEqual([
      expect.objectContaining({ slug: 'rc-gamma/rc-gamma.php', new_version: '1.1.0', fixes: [expect.any(String)] }),
    ]);
    const [run] = await s.services.policies.tick();
    const job = await until(
      () => s.services.jobs.find(run!.job_id),
      (j?: JobRecord) => j?.status === 'completed' || j?.status === 'failed',
      90_000,
    );
    expect(job!.status).toBe('completed');
    expect([version('rc-gamma/rc-gamma.php'), version('rc-beta/rc-beta.php')]).toEqual(['1.1.0', '2.0.0']);
    const hist = (await s.rest(`/updates/${id}/history`)).body.data;
    expect(hist).toEqual([
      expect.objectContaining({
        slug: 'rc-gamma/rc-gamma.php',
        outcome: 'updated',
        actor: { kind: 'policy', id: policyId, name: 'Security only' },
      }),
    ]);
  });
});
