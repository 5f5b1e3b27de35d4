// Update policies (issue 28 part 4) through the registry over the child simulator, with the scheduler's clock set by
// the test (no real waiting for a window): saving and refusing policies, the dry run (next window per site time zone,
// what it would update, the delay), a window run once in safe mode with the policy as the history's actor, only on
// the policy's sites and items, and the stop rule pausing the policy, saying so.
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { until } from '../support/wait.js';
import type { SiteRecord } from '../../src/store/records.js';

let h: AbilityHarness;
let ids: number[];
let clock = Date.parse('2026-11-26T00:00:00Z'); // a Thursday
const ALL_DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
const pendingPlugins = (k: number) => h.sim.state(k).plugins.filter((p) => p.updateVersion);
const setZone = (id: number, timezone: string) =>
  h.services.store.write((tx) => h.services.sites.patch(tx, id, { timezone } as Partial<SiteRecord>));
const policy = (over: Record<string, unknown> = {}) =>
  h.call('add-update-policy-v1', {
    name: 'Nightly',
    sites: [ids[0]!, ids[1]!],
    days: [...ALL_DAYS],
    start: '02:00',
    end: '04:00',
    ...over,
  } as never);
const finished = async (jobId: string) =>
  (await until(
    () => h.services.jobs.find(jobId),
    (j) => j?.status === 'completed' || j?.status === 'failed',
  ))!;

beforeAll(async () => {
  const port = await freePort();
  h = await openAbilities({ sim: { sites: 6, port }, config: { packageSource: `http://127.0.0.1:${port}/__sim/dir/` } });
  h.services.policies.now = () => clock;
  ids = (await h.addSimSites()).map((s) => s.id);
  await h.call('sync-sites-v1', {});
});
afterAll(() => h.close());

describe('saving policies', () => {
  it('adds one with its defaults, always safe, and lists it', async () => {
    const p = await policy();
    expect(p).toMatchObject({
      name: 'Nightly',
      paused: false,
      safe: true,
      targets: { all: false, sites: [ids[0], ids[1]], tags: [], clients: [] },
      updates: { core: 'minor', plugins: true, themes: true, translations: true, slugs_mode: 'all', slugs: [] },
      delay_days: 0,
      max_sites: 5,
      stop_after: 3,
      last_run: null,
    });
    const list = await h.call('list-update-policies-v1', {}, h.as.readKey);
    expect(list.items.map((x) => x.id)).toContain(p.id);
    await h.call('delete-update-policy-v1', { policy_id: p.id, confirm: true });
  });

  it('refuses a window that starts when it ends, no targets, "only" without slugs, an unknown site or tag, bad times', async () => {
    expect(
      (
        await h.fails('add-update-policy-v1', {
          name: 'x',
          all_sites: true,
          days: ['mon'],
          start: '02:00',
          end: '02:00',
        })
      ).code,
    ).toBe('svc_invalid_window');
    expect((await h.fails('add-update-policy-v1', { name: 'x', days: ['mon'], start: '02:00', end: '03:00' })).code).toBe(
      'svc_invalid_input',
    );
    const only = await h.fails('add-update-policy-v1', {
      name: 'x',
      all_sites: true,
      slugs_mode: 'only',
      days: ['mon'],
      start: '02:00',
      end: '03:00',
    });
    expect(only.message).toMatch(/needs at least one slug/);
    expect(
      (
        await h.fails('add-update-policy-v1', {
          name: 'x',
          sites: [9999],
          days: ['mon'],
          start: '02:00',
          end: '03:00',
        })
      ).code,
    ).toBe('svc_site_not_found');
    expect(
      (
        await h.fails('add-update-policy-v1', {
          name: 'x',
          tags: [999],
          days: ['mon'],
          start: '02:00',
          end: '03:00',
        })
      ).code,
    ).toBe('svc_tag_not_found');
    expect(
      (
        await h.fails('add-update-policy-v1', {
          name: 'x',
          all_sites: true,
          days: ['mon'],
          start: '24:00',
          end: '03:00',
        })
      ).code,
    ).toBe('ability_invalid_input');
    expect((await h.fails('add-update-policy-v1', { name: 'x', all_sites: true, days: [], start: '01:00', end: '03:00' })).code).toBe(
      'svc_invalid_window',
    );
    expect(
      (
        await h.fails('add-update-policy-v1', {
          name: 'x',
          all_sites: 'yes',
          days: ['mon'],
          start: '01:00',
          end: '03:00',
        })
      ).code,
    ).toBe('ability_invalid_input');
    expect((await h.call('list-update-policies-v1', {})).total).toBe(0);
  });

  it('changes some fields and keeps the others; pauses and resumes; a viewer may not', async () => {
    const p = await policy();
    const u = await h.call('update-update-policy-v1', { policy_id: p.id, delay_days: 2, paused: true });
    expect(u).toMatchObject({ name: 'Nightly', delay_days: 2, paused: true, paused_reason: 'Paused by a caller.' });
    expect(await h.call('update-update-policy-v1', { policy_id: p.id, paused: false })).toMatchObject({ paused: false, paused_reason: '' });
    expect((await h.fails('update-update-policy-v1', { policy_id: p.id, name: 'x' }, h.as.viewer)).status).toBe(403);
    expect((await h.fails('update-update-policy-v1', { policy_id: 9999, name: 'x' })).code).toBe('svc_policy_not_found');
    await h.call('delete-update-policy-v1', { policy_id: p.id, confirm: true });
  });

  it('deletes only with confirm; dry_run shows it and keeps it', async () => {
    const p = await policy();
    expect((await h.fails('delete-update-policy-v1', { policy_id: p.id })).code).toBe('svc_confirmation_required');
    expect(await h.call('delete-update-policy-v1', { policy_id: p.id, dry_run: true })).toMatchObject({ deleted: false, dry_run: true });
    expect((await h.call('list-update-policies-v1', {})).total).toBe(1);
    expect(await h.call('delete-update-policy-v1', { policy_id: p.id, confirm: true })).toMatchObject({
      deleted: true,
      policy: { id: p.id },
    });
    expect((await h.fails('preview-update-policy-v1', { policy_id: p.id })).code).toBe('svc_policy_not_found');
  });
});

describe('the dry run', () => {
  it("answers the next window in each site's own time zone, and what it would update there", async () => {
    await setZone(ids[1]!, 'Asia/Tokyo'); // 09:00 local now: its next 02:00 is 17:00 UTC
    const p = await policy({
      sites: [ids[0]!, ids[1]!, ids[2]!],
      core: 'none',
      themes: false,
      translations: false,
    });
    const r = await h.call('preview-update-policy-v1', { policy_id: p.id }, h.as.readKey);
    expect(r.next_window).toMatchObject({ starts_at: '2026-11-26T02:00:00.000Z', ends_at: '2026-11-26T04:00:00.000Z', open_now: false });
    expect(r.next_window!.sites.map((s) => s.site_id)).toEqual([ids[0], ids[2]]);
    const expected = [1, 3].flatMap((k) => pendingPlugins(k).map((x) => x.slug)).sort();
    expect(r.next_window!.would_update.map((i) => i.slug).sort()).toEqual(expected);
    expect(r.next_window!.would_update.every((i) => i.type === 'plugin')).toBe(true);
    clock = Date.parse('2026-11-26T05:00:00Z'); // past the UTC window: Tokyo's comes first
    const later = await h.call('preview-update-policy-v1', { policy_id: p.id });
    expect(later.next_window).toMatchObject({
      starts_at: '2026-11-26T17:00:00.000Z',
      sites: [{ site_id: ids[1], time_zone: 'Asia/Tokyo' }],
    });
    clock = Date.parse('2026-11-26T00:00:00Z');
    await setZone(ids[1]!, 'UTC');
    await h.call('delete-update-policy-v1', { policy_id: p.id, confirm: true });
  });

  it('holds back what has not been pending for the delay, and says when it becomes due', async () => {
    const k = 4;
    const slug = pendingPlugins(k)[0]!.slug;
    const p = await policy({ sites: [ids[k - 1]!], delay_days: 3, slugs_mode: 'only', slugs: [slug] });
    // First seen at the sync below (the clock's now).
    await h.call('sync-sites-v1', { site_ids_or_domains: [ids[k - 1]!] });
    const r = await h.call('preview-update-policy-v1', { policy_id: p.id });
    expect(r.next_window!.would_update).toEqual([]);
    expect(r.next_window!.waiting).toEqual([expect.objectContaining({ slug, eligible_at: '2026-11-29T00:00:00.000Z' })]);
    // A later sync keeps the first sighting.
    clock += 86_400_000;
    await h.call('sync-sites-v1', { site_ids_or_domains: [ids[k - 1]!] });
    clock += 2 * 86_400_000;
    const due = await h.call('preview-update-policy-v1', { policy_id: p.id });
    expect(due.next_window!.would_update).toEqual([expect.objectContaining({ slug })]);
    clock = Date.parse('2026-11-26T00:00:00Z');
    await h.call('delete-update-policy-v1', { policy_id: p.id, confirm: true });
  });
});

describe('running a window', () => {
  it('runs a due window once, in safe mode, on its sites and items only, recorded as started by the policy', async () => {
    const kept = pendingPlugins(1)[0]!.slug;
    const others = pendingPlugins(3).length;
    const p = await policy({
      sites: [ids[0]!, ids[1]!],
      core: 'none',
      themes: false,
      translations: false,
      slugs_mode: 'except',
      slugs: [kept],
    });
    const want = [1, 2].flatMap((k) =>
      pendingPlugins(k)
        .filter((x) => x.slug !== kept)
        .map((x) => `${k}:${x.slug}`),
    );
    expect(await h.services.policies.tick(clock)).toEqual([]); // 00:00: not in the window
    clock = Date.parse('2026-11-26T02:30:00Z');
    const [run] = await h.services.policies.tick(clock);
    expect(run).toMatchObject({ policy_id: p.id, window_start: '2026-11-26T02:00:00.000Z', site_ids: [ids[0], ids[1]] });
    await h.services.policies.tick(clock); // again: the window has its run
    expect(h.services.policies.runs(p.id)).toHaveLength(1);
    const job = await finished(run!.job_id);
    expect(job.status).toBe('completed');
    const hist = (await h.call('list-update-history-v1', {})).entries.filter((e) => e.actor.kind === 'policy');
    expect(hist.map((e) => `${ids.indexOf(e.site_id) + 1}:${e.slug}`).sort()).toEqual(want.sort());
    expect(hist.every((e) => e.safe && e.outcome === 'updated' && e.actor.id === p.id && e.actor.name === 'Nightly')).toBe(true);
    expect(pendingPlugins(1).map((x) => x.slug)).toEqual([kept]);
    expect(pendingPlugins(3)).toHaveLength(others); // not a target
    const listed = (await h.call('list-update-policies-v1', {})).items.find((x) => x.id === p.id)!;
    expect(listed.last_run).toMatchObject({ run_id: run!.id, status: 'completed', sites: 2, processed: 2, failures: 0, stopped: null });
    const next = await h.call('preview-update-policy-v1', { policy_id: p.id });
    expect(next.next_window!.starts_at).toBe('2026-11-27T02:00:00.000Z'); // today's has run
    clock = Date.parse('2026-11-26T00:00:00Z');
    await h.call('delete-update-policy-v1', { policy_id: p.id, confirm: true });
  });

  it('the stop rule pauses the policy after K failures or rollbacks in a run, and says so (policy.paused)', async () => {
    const hook = await h.call('add-webhook-v1', { url: 'http://127.0.0.1:9/hook', events: ['policy.paused'] });
    const [k1, k2] = [5, 6];
    h.sim.breakOnUpdate(k1, pendingPlugins(k1)[0]!.slug, 'fatal');
    const p = await policy({ sites: [ids[k1 - 1]!, ids[k2 - 1]!], stop_after: 1, max_sites: 1, core: 'none' });
    clock = Date.parse('2026-11-26T03:00:00Z');
    const [run] = await h.services.policies.tick(clock);
    const job = await finished(run!.job_id);
    const after = (await h.call('list-update-policies-v1', {})).items.find((x) => x.id === p.id)!;
    expect(after.paused).toBe(true);
    expect(after.paused_reason).toMatch(
      /^Paused after 1 failed or rolled-back update\(s\) in the run of the window starting 2026-11-26T02:00:00.000Z/,
    );
    expect(after.last_run).toMatchObject({ failures: 1, stopped: after.paused_reason });
    // The second site was not updated: the job was stopped (max_sites 1: one site at a time).
    expect(job.done.length === 1 || job.errors.some((e) => e.code === 'svc_policy_paused')).toBe(true);
    expect(
      (await h.call('list-update-history-v1', { site_id_or_domain: ids[k2 - 1]! })).entries.filter((e) => e.actor.kind === 'policy'),
    ).toEqual([]);
    const deliveries = (await h.call('list-webhooks-v1', {})).items.find((w) => w.id === hook.id)!.deliveries;
    expect(deliveries.map((d) => d.event)).toEqual(['policy.paused']);
    // Paused: the next window starts nothing.
    clock = Date.parse('2026-11-27T03:00:00Z');
    expect(await h.services.policies.tick(clock)).toEqual([]);
    clock = Date.parse('2026-11-26T00:00:00Z');
  });
});

describe('a policy deleted or paused while its run is in progress', () => {
  /** Sites 3 and 4 with a pending plugin each; site 3 slow, so that the run is still on it when the policy changes. */
  async function runningOn34(name: string) {
    for (const k of [3, 4]) if (!pendingPlugins(k).length) h.sim.offerUpdate(k, 'plugin', h.sim.state(k).plugins[0]!.slug, '99.0.0');
    await h.call('sync-sites-v1', { site_ids_or_domains: [ids[2]!, ids[3]!] });
    const p = await policy({ name, sites: [ids[2]!, ids[3]!], max_sites: 1, core: 'none', themes: false, translations: false });
    const pending4 = pendingPlugins(4).map((x) => x.slug);
    const log4 = h.sim.state(4).upgradeLog.length;
    h.sim.setFault(3, { type: 'latency', ms: 300 });
    const asked = h.sim.requests(3);
    clock = Date.parse('2026-11-26T02:40:00Z');
    const [run] = await h.services.policies.tick(clock);
    expect(run!.site_ids).toEqual([ids[2], ids[3]]);
    await until(
      () => h.sim.requests(3),
      (n) => n > asked,
    ); // site 3 has started
    return { p, run: run!, pending4, log4 };
  }
  const after = async (jobId: string) => {
    const job = await finished(jobId);
    h.sim.setFault(3, null);
    clock = Date.parse('2026-11-26T00:00:00Z');
    return job;
  };

  it('deleting it cancels its job: the site in flight finishes, the others end skipped (policy_deleted)', async () => {
    const { p, run, pending4, log4 } = await runningOn34('Deleted mid-run');
    await h.call('delete-update-policy-v1', { policy_id: p.id, confirm: true });
    const job = await after(run.job_id);
    expect(job).toMatchObject({ status: 'failed', failure: 'cancelled', done: [ids[2]] });
    expect(job.errors.at(-1)!.message).toBe(
      `Cancelled (policy ${p.id} ("Deleted mid-run") was deleted while its run was in progress): 1 site(s) not started (ids ${ids[3]}).`,
    );
    const items = job.items as Array<{ site_id: number; slug: string; status: string; reason?: string; message?: string }>;
    expect(items.filter((i) => i.site_id === ids[2]).every((i) => i.status === 'updated')).toBe(true);
    expect(items.filter((i) => i.site_id === ids[3])).toEqual(
      pending4.map((slug) =>
        expect.objectContaining({
          slug,
          status: 'skipped',
          reason: 'policy_deleted',
          message: `Not updated: policy ${p.id} ("Deleted mid-run") was deleted while its run was in progress.`,
        }),
      ),
    );
    expect(h.sim.state(4).upgradeLog.length).toBe(log4);
    expect(pendingPlugins(4).map((x) => x.slug)).toEqual(pending4);
  });

  it('pausing it does the same (policy_paused); resuming starts no second run of that window', async () => {
    const { p, run, pending4, log4 } = await runningOn34('Paused mid-run');
    await h.call('update-update-policy-v1', { policy_id: p.id, paused: true });
    const job = await after(run.job_id);
    expect(job).toMatchObject({ status: 'failed', failure: 'cancelled', done: [ids[2]] });
    expect(job.errors.at(-1)!.message).toMatch(/^Cancelled \(policy \d+ \("Paused mid-run"\) was paused while its run was in progress\)/);
    const skipped = (job.items as Array<{ site_id: number; status: string; reason?: string }>).filter((i) => i.site_id === ids[3]);
    expect(skipped.map((i) => [i.status, i.reason])).toEqual(pending4.map(() => ['skipped', 'policy_paused']));
    expect(h.sim.state(4).upgradeLog.length).toBe(log4);
    const listed = (await h.call('list-update-policies-v1', {})).items.find((x) => x.id === p.id)!;
    expect(listed.last_run).toMatchObject({ status: 'failed', processed: 1 });
    await h.call('update-update-policy-v1', { policy_id: p.id, paused: false });
    expect(await h.services.policies.tick(Date.parse('2026-11-26T02:50:00Z'))).toEqual([]);
  });
});
