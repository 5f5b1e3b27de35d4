// schemas/ holds every ability's generated JSON Schemas; this fails when they are stale.
import { describe, expect, it } from 'vitest';
import { staleSchemas } from '../src/tools/write-schemas.js';
import { allAbilities } from '../src/abilities/index.js';

describe('schemas/', () => {
  it('matches the abilities (run npm run schemas after changing one)', () => {
    expect(staleSchemas()).toEqual([]);
  });

  it('names every ability svc-style and gives it a category, a description and all annotations', () => {
    for (const a of allAbilities) {
      expect(a.name).toMatch(/^[a-z0-9-]+-v1$/);
      expect(a.category).toMatch(/^svc-[a-z]+$/);
      expect(a.description.length).toBeGreaterThan(40);
      for (const k of ['readonly', 'destructive', 'idempotent', 'openWorld'] as const) expect(typeof a.annotations[k], `${a.name}.${k}`).toBe('boolean');
    }
  });
});

describe('docs/', () => {
  it('has tools.md and the tools/list snapshot in step with the registry (run npm run docs)', async () => {
    const { staleDocs } = await import('../src/tools/write-docs.js');
    expect(staleDocs()).toEqual([]);
  });
});
