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
