// Dashboard settings abilities through the registry: the sync schedule, concurrency and queue threshold, and the
// cost product types and payment methods (slugs from titles, defaults kept, in-use ones kept) — without a door.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';
import { seedSites } from '../support/server.js';

let h: AbilityHarness;
beforeAll(async () => {
  h = await openAbilities();
});
afterAll(() => h.close());

describe('get-settings-v1 and update-settings-v1', () => {
  it('answers the defaults, changes only what is given, and keeps it', async () => {
    const before = await h.call('get-settings-v1', {}, h.as.viewer);
    expect(before).toMatchObject({ sync_frequency: 0, next_scheduled_sync: null });
    expect(before.product_types.map((p) => p.slug)).toEqual(['plugin', 'theme', 'hosting', 'service', 'other']);
    expect(before.payment_methods.map((p) => p.slug)).toContain('stripe');
    const after = await h.call('update-settings-v1', { sync_frequency: 2, sync_time: '03:30', queue_threshold: 7 });
    expect(after).toMatchObject({ sync_frequency: 2, sync_time: '03:30', queue_threshold: 7, sync_concurrency: before.sync_concurrency });
    expect(after.next_scheduled_sync).toEqual(expect.any(String));
    expect(await h.call('get-settings-v1', {})).toEqual(after);
    expect(await h.fails('update-settings-v1', { sync_frequency: 0 }, h.as.viewer)).toMatchObject({ code: 'svc_permission_denied' });
    expect(await h.fails('update-settings-v1', { sync_time: '25:00' })).toMatchObject({ status: 400 });
    expect((await h.call('update-settings-v1', { sync_frequency: 0 })).next_scheduled_sync).toBeNull();
  });
});

describe('cost product types', () => {
  it('adds one with a slug made from its title, edits it, and deletes it with confirm', async () => {
    const t = await h.call('add-cost-product-type-v1', { title: 'Support Plan', color: '#abcdef' });
    expect(t).toMatchObject({ slug: 'support-plan', title: 'Support Plan', color: '#abcdef' });
    expect(await h.fails('add-cost-product-type-v1', { title: 'Support Plan' })).toMatchObject({
      code: 'svc_duplicate_title',
      status: 409,
    });
    expect(await h.call('update-cost-product-type-v1', { slug: t.slug, title: 'Support' })).toMatchObject({
      slug: 'support-plan',
      title: 'Support',
      color: '#abcdef',
    });
    expect(await h.call('delete-cost-product-type-v1', { slug: t.slug, dry_run: true })).toMatchObject({ deleted: false, dry_run: true });
    expect(await h.fails('delete-cost-product-type-v1', { slug: t.slug })).toMatchObject({ code: 'svc_confirmation_required' });
    expect(await h.call('delete-cost-product-type-v1', { slug: t.slug, confirm: true })).toMatchObject({
      deleted: true,
      product_type: { slug: 'support-plan' },
    });
    expect((await h.call('get-settings-v1', {})).product_types.some((p) => p.slug === 'support-plan')).toBe(false);
  });

  it('keeps a type a cost uses', async () => {
    const t = await h.call('add-cost-product-type-v1', { title: 'Licence pack' });
    const [site] = await seedSites(h.services, 1, () => ({ url: 'https://pt.example.com/' }));
    await h.call('add-cost-v1', { name: 'Uses it', price: 1, payment_type: 'lifetime', product_type: t.slug, sites: [site!.id] });
    expect(await h.fails('delete-cost-product-type-v1', { slug: t.slug, confirm: true })).toMatchObject({
      status: 409,
      code: 'svc_in_use',
    });
    expect((await h.call('get-settings-v1', {})).product_types.some((p) => p.slug === t.slug)).toBe(true);
  });
});

describe('payment methods', () => {
  it('adds, renames and deletes one; an unknown slug is 404', async () => {
    const m = await h.call('add-payment-method-v1', { title: 'Wire Co' });
    expect(m).toEqual({ slug: 'wire-co', title: 'Wire Co' });
    expect(await h.call('update-payment-method-v1', { slug: m.slug, title: 'Wire' })).toEqual({ slug: 'wire-co', title: 'Wire' });
    expect(await h.fails('update-payment-method-v1', { slug: 'nope', title: 'x' })).toMatchObject({ status: 404 });
    expect(await h.fails('delete-payment-method-v1', { slug: m.slug, confirm: true, dry_run: true })).toMatchObject({
      code: 'svc_invalid_input',
    });
    expect(await h.call('delete-payment-method-v1', { slug: m.slug, confirm: true })).toMatchObject({
      deleted: true,
      payment_method: { slug: 'wire-co' },
    });
    expect((await h.call('get-settings-v1', {})).payment_methods.some((p) => p.slug === 'wire-co')).toBe(false);
  });
});

// ---- Moved from test/settings.test.ts: the rules of the settings abilities (the next slot of the schedule, an empty
// change, the concurrency bound, product types and payment methods that costs may use). The upstream REST routes and
// their envelopes, the 501 answers, durability across a restart, the schedule and the concurrency applied to real
// syncs, and read-only callers stay there.
describe('settings rules (moved from the door)', () => {
  let siteId: number;
  const cost = (extra: Record<string, unknown>) =>
    h.call('add-cost-v1', { name: 'Domain', price: 12, payment_type: 'lifetime', product_type: 'other', sites: [siteId], ...extra });
  const costFails = (extra: Record<string, unknown>) =>
    h.fails('add-cost-v1', { name: 'Domain', price: 12, payment_type: 'lifetime', product_type: 'other', sites: [siteId], ...extra });
  beforeAll(async () => {
    siteId = (await seedSites(h.services, 1, () => ({ url: 'https://settings-rules.example.com/' })))[0]!.id;
  });

  it('schedules the next sync at the next slot: every 4 hours from 06:30 is within 6 hours, on minute 30', async () => {
    const r = await h.call('update-settings-v1', { sync_frequency: 4, sync_time: '06:30' });
    const next = Date.parse(r.next_scheduled_sync!);
    expect(next).toBeGreaterThan(Date.now());
    expect(next - Date.now()).toBeLessThanOrEqual(6 * 3600_000);
    expect(new Date(next).toISOString().slice(14, 16)).toBe('30');
  });

  it('refuses an empty change with 400 svc_missing_fields, and changes nothing', async () => {
    const before = await h.call('get-settings-v1', {});
    expect(await h.fails('update-settings-v1', {})).toMatchObject({ status: 400, code: 'svc_missing_fields' });
    expect(await h.call('get-settings-v1', {})).toEqual(before);
  });

  it("refuses a concurrency above the server's own bound with 400 svc_invalid_input", async () => {
    const over = await h.fails('update-settings-v1', { sync_concurrency: h.services.config.childConcurrency + 1 });
    expect([over.status, over.code]).toEqual([400, 'svc_invalid_input']);
    expect((await h.call('get-settings-v1', {})).sync_concurrency).toBe(h.services.config.childConcurrency);
  });

  it('an added product type is one costs may use, and only then', async () => {
    const before = await costFails({ product_type: 'domain-names' });
    expect([before.status, before.code]).toEqual([400, 'svc_invalid_product_type']);
    await h.call('add-cost-product-type-v1', { title: 'Domain names' });
    await cost({ product_type: 'domain-names' });
    expect((await h.call('list-costs-v1', { category: ['domain-names'] })).total).toBe(1);
  });

  it('refuses duplicates, bad colours and icons, titles without letters, deleting one in use, and an unknown slug', async () => {
    expect(await h.fails('add-cost-product-type-v1', { title: 'domain  NAMES' })).toMatchObject({
      status: 409,
      code: 'svc_duplicate_title',
    });
    expect((await h.fails('add-cost-product-type-v1', { title: 'X', color: 'red' })).status).toBe(400);
    expect((await h.fails('add-cost-product-type-v1', { title: 'X', icon: 'folder' })).status).toBe(400);
    expect((await h.fails('add-cost-product-type-v1', { title: '!!!' })).code).toBe('svc_invalid_input');
    expect(await h.fails('delete-cost-product-type-v1', { slug: 'domain-names', confirm: true })).toMatchObject({
      status: 409,
      code: 'svc_in_use',
    });
    expect(await h.fails('update-cost-product-type-v1', { slug: 'nosuch', title: 'x' })).toMatchObject({
      status: 404,
      code: 'svc_invalid_slug',
    });
  });

  it('edits keep what is not given; a type no cost uses is deleted with confirm', async () => {
    const e = await h.call('update-cost-product-type-v1', { slug: 'domain-names', icon: 'deficon:globe' });
    expect(e).toEqual({ slug: 'domain-names', title: 'Domain names', color: '#34424D', icon: 'deficon:globe' });
    const c = (await h.call('list-costs-v1', { category: ['domain-names'] })).items[0]!;
    await h.call('update-cost-v1', { cost_id: c.id, product_type: 'other' });
    expect(await h.fails('delete-cost-product-type-v1', { slug: 'domain-names' })).toMatchObject({
      status: 400,
      code: 'svc_confirmation_required',
    });
    expect(await h.call('delete-cost-product-type-v1', { slug: 'domain-names', confirm: true })).toMatchObject({ deleted: true });
    expect(h.services.dashboard.productTypes().map((p) => p.slug)).not.toContain('domain-names');
  });

  it('payment methods: a cost may use one once added; the slug stays a duplicate after a rename; one in use is kept', async () => {
    const unknown = await costFails({ payment_method: 'wire-transfer' });
    expect([unknown.status, unknown.code]).toEqual([400, 'svc_invalid_payment_method']);
    await h.call('add-payment-method-v1', { title: 'Wire transfer' });
    const used = await cost({ payment_method: 'wire-transfer' });
    await h.call('update-payment-method-v1', { slug: 'wire-transfer', title: 'Wire' });
    expect(await h.fails('add-payment-method-v1', { title: 'wire transfer' })).toMatchObject({ status: 409, code: 'svc_duplicate_title' });
    expect(await h.fails('delete-payment-method-v1', { slug: 'wire-transfer', confirm: true })).toMatchObject({
      status: 409,
      code: 'svc_in_use',
    });
    await h.call('update-cost-v1', { cost_id: used.id, payment_method: '' });
    expect(await h.call('delete-payment-method-v1', { slug: 'wire-transfer', confirm: true })).toMatchObject({ deleted: true });
    expect(await h.fails('delete-payment-method-v1', { slug: 'wire-transfer', confirm: true })).toMatchObject({
      status: 404,
      code: 'svc_invalid_slug',
    });
  });
});
