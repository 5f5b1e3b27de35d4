// API keys and dashboard users over the API (issue 32): administrators only, secrets shown once, expiry, the last
// administrator kept.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/core/principal.js';
import type { UserRecord } from '../../src/store/records.js';
import { openAbilities, type AbilityHarness } from '../support/abilities.js';

let h: AbilityHarness;
beforeAll(async () => {
  h = await openAbilities();
});
afterAll(() => h?.close());

/** Each with an input it would run (the registry validates before it permits). */
const ADMIN_ONLY = {
  'list-api-keys-v1': {},
  'add-api-key-v1': { name: 'k' },
  'update-api-key-v1': { key_id: 1, name: 'k' },
  'revoke-api-key-v1': { key_id: 1, confirm: true },
  'list-dashboard-users-v1': {},
  'add-dashboard-user-v1': { name: 'zed' },
  'update-dashboard-user-v1': { name: 'admin', role: 'viewer' },
  'delete-dashboard-user-v1': { name: 'admin', confirm: true },
} as const;

describe('who may manage keys and users', () => {
  it('refuses every one of them to viewers and to keys that are not administrator keys, whatever their permissions', async () => {
    for (const [name, input] of Object.entries(ADMIN_ONLY) as Array<[keyof typeof ADMIN_ONLY, unknown]>) {
      for (const p of [h.as.viewer, h.as.readKey, h.as.writeKey, h.as.deleteKey]) {
        const e = await h.fails(name, input, p);
        expect(e, `${name} as ${p.name}`).toMatchObject({ code: 'svc_permission_denied', status: 403 });
      }
      expect(h.registry.get(name)!.annotations.admin, name).toBe(true);
    }
  });

  it('lets an administrator key manage keys, while its permissions still bound the method', async () => {
    const made = await h.call('add-api-key-v1', { name: 'ops', permissions: 'read_write', admin: true });
    const adminKey = h.services.auth.verifyBearer(made.token);
    expect(adminKey).toMatchObject({ kind: 'key', admin: true });
    expect((await h.call('list-api-keys-v1', {}, adminKey)).total).toBeGreaterThan(3);
    const readAdmin = h.services.auth.verifyBearer(
      (await h.call('add-api-key-v1', { name: 'audit', permissions: 'read', admin: true })).token,
    );
    await h.call('list-dashboard-users-v1', {}, readAdmin);
    expect(await h.fails('add-api-key-v1', { name: 'x' }, readAdmin)).toMatchObject({ code: 'svc_permission_denied' });
  });
});

describe('API keys', () => {
  it('shows the token once and stores only its hash; the list never carries it', async () => {
    const made = await h.call('add-api-key-v1', { name: 'ci', permissions: 'read' });
    expect(made.token).toMatch(/^sf_[0-9a-f]{12}_[A-Za-z0-9_-]{32}$/);
    expect(made.key).toMatchObject({ name: 'ci', permissions: 'read', admin: false, active: true, revoked: false, expires_at: null });
    const stored = h.services.auth.getKey(made.key.id);
    const secret = made.token.split('_').slice(2).join('_');
    expect(JSON.stringify(stored)).not.toContain(secret);
    const listed = await h.call('list-api-keys-v1', { per_page: 200 });
    expect(JSON.stringify(listed)).not.toContain(secret);
    expect(listed.items[0]).toMatchObject({ id: made.key.id, truncated_key: `sf_${stored.key_id}_…` });
    expect(h.services.auth.verifyBearer(made.token)).toMatchObject({ id: made.key.id, permissions: 'read' });
  });

  it('edits name, permissions and expiry; the next authentication sees them', async () => {
    const made = await h.call('add-api-key-v1', { name: 'edit-me', permissions: 'read' });
    const edited = await h.call('update-api-key-v1', { key_id: made.key.id, name: 'edited', permissions: 'write' });
    expect(edited).toMatchObject({ name: 'edited', permissions: 'write' });
    expect(h.services.auth.verifyBearer(made.token)).toMatchObject({ name: 'edited', permissions: 'write' });
    expect(await h.fails('update-api-key-v1', { key_id: 99999, name: 'x' })).toMatchObject({ code: 'svc_key_not_found', status: 404 });
    expect(await h.fails('update-api-key-v1', { key_id: made.key.id, permissions: 'admin' })).toMatchObject({ status: 400 });
    expect(await h.fails('update-api-key-v1', { key_id: made.key.id, expires_at: '2001-01-01T00:00:00Z' })).toMatchObject({
      code: 'svc_invalid_input',
    });
    expect(await h.fails('update-api-key-v1', { key_id: made.key.id, expires_at: 'tomorrow' })).toMatchObject({ status: 400 });
  });

  it('refuses an expired key at authentication exactly as a revoked one, and lists it inactive', async () => {
    const auth = h.services.auth;
    const t0 = Date.now();
    const made = await h.call('add-api-key-v1', { name: 'temp', expires_at: new Date(t0 + 3_600_000).toISOString() });
    expect(auth.verifyBearer(made.token)).toMatchObject({ id: made.key.id });
    auth.now = () => t0 + 3_600_001;
    try {
      expect(() => auth.verifyBearer(made.token)).toThrow(/invalid, revoked or expired/);
      const listed = await h.call('list-api-keys-v1', { per_page: 200 });
      expect(listed.items.find((k) => k.id === made.key.id)).toMatchObject({ active: false, revoked: false });
      // Clearing the expiry brings it back.
      await h.call('update-api-key-v1', { key_id: made.key.id, expires_at: null });
      expect(auth.verifyBearer(made.token)).toMatchObject({ id: made.key.id });
    } finally {
      auth.now = Date.now;
    }
  });

  it('revokes with confirm (dry_run previews); active: false revokes and a revoked key cannot come back', async () => {
    const a = await h.call('add-api-key-v1', { name: 'gone' });
    expect(await h.fails('revoke-api-key-v1', { key_id: a.key.id })).toMatchObject({ code: 'svc_confirmation_required' });
    expect(await h.call('revoke-api-key-v1', { key_id: a.key.id, dry_run: true })).toMatchObject({ revoked: false, dry_run: true });
    expect(h.services.auth.verifyBearer(a.token)).toMatchObject({ id: a.key.id });
    expect(await h.call('revoke-api-key-v1', { key_id: a.key.id, confirm: true })).toMatchObject({
      revoked: true,
      key: { active: false, revoked: true },
    });
    expect(() => h.services.auth.verifyBearer(a.token)).toThrow();
    const b = await h.call('add-api-key-v1', { name: 'off' });
    await h.call('update-api-key-v1', { key_id: b.key.id, active: false });
    expect(() => h.services.auth.verifyBearer(b.token)).toThrow();
    expect(await h.fails('update-api-key-v1', { key_id: b.key.id, active: true })).toMatchObject({ code: 'svc_key_revoked', status: 409 });
    expect(await h.fails('revoke-api-key-v1', { key_id: 99999, confirm: true })).toMatchObject({ code: 'svc_key_not_found' });
  });
});

describe('dashboard users', () => {
  it('creates a user with the password shown once (only its hash stored), lists users without hashes', async () => {
    const made = await h.call('add-dashboard-user-v1', { name: 'carol' });
    expect(made.user).toMatchObject({ name: 'carol', role: 'viewer' });
    expect(h.services.auth.verifyBasic('carol', made.password)).toMatchObject({ kind: 'user', role: 'viewer' });
    const stored = h.services.auth.getUser('carol');
    expect(JSON.stringify(stored)).not.toContain(made.password.replace(/ /g, ''));
    const listed = await h.call('list-dashboard-users-v1', {});
    expect(listed.items.map((u) => u.name)).toContain('carol');
    expect(JSON.stringify(listed)).not.toMatch(/password_hash|salt/);
    expect(await h.fails('add-dashboard-user-v1', { name: 'CAROL' })).toMatchObject({ code: 'svc_user_exists', status: 409 });
    expect(await h.fails('add-dashboard-user-v1', { name: 'carol', role: 'owner' })).toMatchObject({ status: 400 });
  });

  it("changes a role and ends that user's console sessions", async () => {
    const made = await h.call('add-dashboard-user-v1', { name: 'dave', role: 'viewer' });
    const p = h.services.auth.verifyBasic('dave', made.password) as Extract<Principal, { kind: 'user' }>;
    const { token } = await h.services.consoleSessions.create(p, undefined);
    expect(h.services.consoleSessions.get(token)).toBeTruthy();
    expect(await h.call('update-dashboard-user-v1', { name: 'dave', role: 'administrator' })).toMatchObject({ role: 'administrator' });
    expect(h.services.consoleSessions.get(token)).toBeUndefined();
    expect(h.services.auth.verifyBasic('dave', made.password)).toMatchObject({ role: 'administrator' });
    expect(await h.fails('update-dashboard-user-v1', { name: 'nobody', role: 'viewer' })).toMatchObject({ code: 'svc_user_not_found' });
  });

  it('deletes with confirm, and never removes or demotes the last administrator', async () => {
    await h.call('add-dashboard-user-v1', { name: 'erin' });
    expect(await h.fails('delete-dashboard-user-v1', { name: 'erin' })).toMatchObject({ code: 'svc_confirmation_required' });
    expect(await h.call('delete-dashboard-user-v1', { name: 'erin', confirm: true })).toMatchObject({
      deleted: true,
      user: { name: 'erin' },
    });
    expect(() => h.services.auth.getUser('erin')).toThrow();
    // Leave one administrator: demote every other one, then the last one is kept.
    const admins = () => h.services.auth.listUsers().filter((u: UserRecord) => u.role === 'administrator');
    for (const u of admins().filter((u) => u.name !== 'admin')) await h.call('update-dashboard-user-v1', { name: u.name, role: 'viewer' });
    expect(admins().map((u) => u.name)).toEqual(['admin']);
    expect(await h.fails('update-dashboard-user-v1', { name: 'admin', role: 'viewer' })).toMatchObject({
      code: 'svc_last_administrator',
      status: 409,
    });
    expect(await h.fails('delete-dashboard-user-v1', { name: 'admin', confirm: true })).toMatchObject({ code: 'svc_last_administrator' });
    await expect(h.services.auth.deleteUser('admin')).rejects.toMatchObject({ code: 'svc_last_administrator' });
    expect(admins().map((u) => u.name)).toEqual(['admin']);
  });
});
