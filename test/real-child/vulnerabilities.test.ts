// Known vulnerabilities on a real child (issue 30): after a sync, the kit's rc-gamma 1.0.0 is reported vulnerable
// with its fixed version (the fixtures' synthetic feed), the one-call fix updates it in safe mode (checked on the
// site's disk) and the next view no longer lists it.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { connectMcp } from '../support/mcp.js';
import { readFileSync } from 'node:fs';
import { resetSite, serverWithRealSite, wpJson } from './kit.js';

const K = 2;
const FIX = join(import.meta.dirname, '..', 'fixtures', 'vulnerabilities');
const refOfId = new Map(
  (
    JSON.parse(readFileSync(join(FIX, 'expected-matches.json'), 'utf8')) as { records: Array<{ ref: string; wordfenceId: string }> }
  ).records.map((r) => [r.wordfenceId, r.ref]),
);
let s: TestServer;
let id: number;

const view = async () => {
  const r = await s.rest(`/sites/${id}/vulnerabilities`);
  expect(r.status).toBe(200);
  return r.body.data as Array<{ id: string; install: { slug: string; version: string; fixed_in: string | null; update_pending: boolean } }>;
};
const rows = (items: Awaited<ReturnType<typeof view>>) =>
  items.map((i) => `${refOfId.get(i.id)} ${i.install.slug} ${i.install.version}`).sort();

beforeAll(async () => {
  ({ s, id } = await serverWithRealSite(K, startServer));
  await s.services.vulnerabilities.importFile(join(FIX, 'wordfence-production.json'), 'wordfence');
});
afterAll(async () => {
  await s?.close();
  resetSite(K);
});

describe('vulnerabilities on a real child', () => {
  it('reports the table: core, rc-alpha, rc-gamma 1.0.0 (fixed in 1.1.0, update pending) and two themes', async () => {
    const items = await view();
    expect(rows(items)).toEqual([
      'WF-01 rc-alpha 1.0.0',
      'WF-06 rc-gamma 1.0.0',
      'WF-07 rc-tt5-child 1.0.0',
      'WF-08 twentytwentyfive 1.5',
      'WF-10 wordpress 7.0.4',
    ]);
    expect(items.find((i) => i.install.slug === 'rc-gamma')!.install).toMatchObject({ fixed_in: '1.1.0', update_pending: true });
  });

  it('the one-call fix (MCP) updates rc-gamma to 1.1.0 in safe mode, on disk, and the next view no longer lists it', async () => {
    const mcp = await connectMcp(s);
    try {
      const r = await mcp.call('fix-vulnerabilities-v1', { slug: 'rc-gamma', confirm: true });
      expect(r.isError).toBe(false);
      const site = r.body.sites[0];
      expect(site.planned).toMatchObject([{ slug: 'rc-gamma', to: '1.1.0' }]);
      expect(site.updated).toMatchObject([{ slug: 'rc-gamma/rc-gamma.php', new_version: '1.1.0' }]);
      expect(site.rolled_back).toEqual([]);
    } finally {
      await mcp.close();
    }
    expect(wpJson<string>(K, 'wp_clean_plugins_cache(); return get_plugins()["rc-gamma/rc-gamma.php"]["Version"];')).toBe('1.1.0');
    expect(rows(await view())).not.toContain('WF-06 rc-gamma 1.0.0');
    expect((await view()).map((i) => i.install.slug)).not.toContain('rc-gamma');
  });
});
