// No write drops a field silently (issue #13), swept over every ability and every REST write route: a field nobody
// reads is refused with a 400 that names it, and nothing changes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allAbilities } from '../src/abilities/index.js';
import { annotationMethod } from '../src/core/ability.js';
import { restRoutes } from '../src/http/rest-routes.js';
import { NOT_SUPPORTED } from '../src/http/routes/settings.js';
import { seedSites, startServer, type TestServer } from './support/server.js';
import { fleetGeneration } from './support/generation.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
  await seedSites(s.services, 2, (i) => ({ url: `http://127.0.0.1:9/unknown${i}/` }));
});
afterAll(async () => {
  await s.close();
});

const generation = () => fleetGeneration(s.services.store);
const UNKNOWN = 'zz_not_a_field';

describe('every ability', () => {
  // Through a door, WordPress's order reports a missing required field before an unknown one; every schema must
  // still refuse the unknown key (zod objects otherwise strip it without a word).
  it.each(allAbilities.map((a) => [a.name, a] as const))('%s has a schema that refuses a field it does not know', (_n, a) => {
    const r = a.input.safeParse({ [UNKNOWN]: 1 });
    expect(r.success).toBe(false);
    expect(r.error!.issues.some((i) => i.code === 'unrecognized_keys' && i.keys.includes(UNKNOWN))).toBe(true);
  });

  it('refuses it through the abilities door, naming it, when it is the only fault', async () => {
    const before = generation();
    for (const [name, input] of [
      ['add-tag-v1', { name: 'Swept' }],
      ['update-site-v1', { site_id_or_domain: 1 }],
      ['list-sites-v1', {}],
    ] as const) {
      const method = annotationMethod(allAbilities.find((a) => a.name === name)!.annotations);
      const r = await s.ability(name, { ...input, [UNKNOWN]: 1 }, method === 'POST' ? {} : { method });
      expect(r.status, name).toBe(400);
      expect(r.body.data.params, name).toHaveProperty(UNKNOWN);
    }
    expect(generation()).toBe(before);
  });
});

describe('every REST write route', () => {
  // Uploads take multipart only (a JSON body is refused as no file): their fields are swept in their own tests.
  const UPLOADS = new Set(['/users/import', '/packages/upload']);
  const writes = restRoutes.filter((r) => !r.methods.includes('GET') && !UPLOADS.has(r.path) && !NOT_SUPPORTED.has(r.path));
  it.each([...NOT_SUPPORTED].map((p) => [p]))(
    '%s (not supported) answers 501 svc_not_supported whatever it is sent, changing nothing',
    async (p) => {
      const r = restRoutes.find((x) => x.path === p)!;
      const before = generation();
      const res = await s.rest(p.replace(/:(\w+)/g, '1'), {
        method: r.methods[0],
        ...(r.methods[0] === 'GET' ? {} : { json: { [UNKNOWN]: 1 } }),
      });
      expect([res.status, res.body.code]).toEqual([501, 'svc_not_supported']);
      expect(generation()).toBe(before);
    },
  );
  it.each(writes.map((r) => [`${r.methods[0]} ${r.path}`, r] as const))(
    '%s refuses a body field it does not read, naming it, and ignores query arguments as WordPress does (issue #27)',
    async (_n, r) => {
      const SAMPLE: Record<string, string> = { job_id: 'sync_00000000-0000-4000-8000-000000000000', mail_type: 'uptime' };
      const path = r.path.replace(/:(\w+)/g, (_, p: string) => SAMPLE[p] ?? '1');
      const before = generation();
      // A real upstream client adds ?DELETE=DELETE&/path=/path to every request: never the reason for a refusal.
      const res = await s.rest(`${path}?DELETE=DELETE&%2Fpath=%2Fpath`, { method: r.methods[0], json: { [UNKNOWN]: 1 } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(JSON.stringify(res.body)).toContain(UNKNOWN);
      expect(JSON.stringify(res.body)).not.toContain('DELETE=');
      expect(Object.keys(res.body.data.params ?? {})).not.toContain('DELETE');
      expect(generation()).toBe(before);
    },
  );
});
