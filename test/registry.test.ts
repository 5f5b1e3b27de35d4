// The registry alone, without a door: validation, permission, the module gate, and every answer held to its output
// schema (the suites run with SITEFLEET_CHECK_OUTPUTS=1, see vitest.config.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { boot, type Running } from '../src/app/boot.js';
import { loadConfig } from '../src/config.js';
import { defineAbility } from '../src/core/ability.js';
import { Registry, withUpstreamNames } from '../src/core/registry.js';
import type { Principal } from '../src/core/principal.js';
import { seedSites, tempDir } from './support/server.js';

const admin: Principal = { kind: 'local', name: 'cli' };
const reader: Principal = { kind: 'key', id: 1, name: 'ro', permissions: 'read' };
let app: Running;

beforeAll(async () => {
  app = await boot(loadConfig({ dataDir: tempDir(), allowPrivateSites: true }, {}));
  await seedSites(app.services, 3);
});
afterAll(() => app.close());

const run = (name: string, input: unknown, principal: Principal = admin) =>
  app.registry.call(name as never, input as never, { principal, coerce: false });

describe('registry.run', () => {
  it('runs an ability by name with its own input and output types', async () => {
    const r = await app.registry.call('list-sites-v1', { per_page: 2 }, { principal: admin, coerce: false });
    expect(r.total).toBe(3);
    expect(r.items).toHaveLength(2);
  });

  it('refuses an input outside the schema, naming the field', async () => {
    await expect(run('list-sites-v1', { per_page: 'many' })).rejects.toMatchObject({
      code: 'ability_invalid_input',
      data: { params: { per_page: expect.any(String) } },
    });
  });

  it('refuses a write to a read-only key before the ability runs', async () => {
    await expect(run('add-tag-v1', { name: 'never' }, reader)).rejects.toMatchObject({ status: 403 });
    expect(((await run('list-tags-v1', {})) as { total: number }).total).toBe(0);
  });

  it('answers not found with the catalogue code and the subject doors map by', async () => {
    await expect(run('no-such-ability-v1', {})).rejects.toMatchObject({ code: 'svc_ability_not_found', status: 404 });
    await expect(run('get-site-v1', { site_id_or_domain: 999 })).rejects.toMatchObject({
      code: 'svc_site_not_found',
      status: 404,
      detail: { subject: { kind: 'site', ref: 999 } },
    });
  });

  it('turns an answer that drifts from its output schema into a logged 500, never a silent wrong answer', async () => {
    expect(process.env.SITEFLEET_CHECK_OUTPUTS).toBe('1');
    const drifting = defineAbility({
      name: 'drifting-v1',
      label: 'Drifting',
      description: 'Answers a number where its schema says a string.',
      category: 'svc-sites',
      toolset: 'sites',
      input: z.object({}),
      output: z.object({ name: z.string() }),
      annotations: { readonly: true, destructive: false, idempotent: true, openWorld: false },
      execute: () => ({ name: 42 as unknown as string }),
    });
    const reg = new Registry([drifting], app.services);
    await expect(reg.run(drifting, {}, { principal: admin, coerce: false })).rejects.toMatchObject({
      code: 'svc_internal_error',
      status: 500,
    });
  });
});

describe('withUpstreamNames (the abilities discovery input schema)', () => {
  const input = {
    type: 'object',
    properties: { admin_password: { type: 'string' }, name: { type: 'string' } },
    required: ['admin_password', 'name'],
    additionalProperties: false,
  };

  it('lists each alias typed as its field, and lets a required field come under either name', () => {
    const s = withUpstreamNames({ aliases: { adminpassword: 'admin_password' }, ignores: ['user_confirmed'] }, input);
    expect(s.properties!.adminpassword).toEqual({
      type: 'string',
      description: "Alias of admin_password (upstream's name).",
      'x-alias-of': 'admin_password',
    });
    expect(s.properties!.user_confirmed).toEqual({ description: 'Accepted for upstream clients, and ignored.' });
    expect(s.required).toEqual(['name']);
    expect(s.allOf).toEqual([{ anyOf: [{ required: ['admin_password'] }, { required: ['adminpassword'] }] }]);
    expect(input.required).toEqual(['admin_password', 'name']); // the registry's own schema is left as it was
  });

  it('leaves a schema without aliases or ignores as it is', () => {
    expect(withUpstreamNames({}, input)).toBe(input);
  });
});
