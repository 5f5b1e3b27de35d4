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

describe('the MCP tools/list an assistant pays for on every conversation', () => {
  // Bytes a tool on average, as served. A ratchet: lower it when the list shrinks (issue #13's target is 600; it was
  // 2,522 with output schemas, 838 without them and with compact input schemas).
  const BUDGET = 850;

  it(`stays within ${BUDGET} bytes a tool on average`, async () => {
    const { toolsListBytes, toolsList } = await import('../src/tools/write-docs.js');
    const perTool = toolsListBytes() / toolsList().length;
    expect(perTool).toBeLessThanOrEqual(BUDGET);
  });

  it('keeps what an assistant needs: a description, every input property and its enum values', async () => {
    const { toolsList } = await import('../src/tools/write-docs.js');
    const { jsonSchemaOf } = await import('../src/core/registry.js');
    for (const t of toolsList()) {
      const a = allAbilities.find((x) => x.name === t.name)!;
      const full = jsonSchemaOf(a.input, 'input') as { properties?: Record<string, { enum?: unknown[] }>; required?: string[] };
      expect(t.description!.length, t.name).toBeGreaterThan(20);
      expect(Object.keys(t.inputSchema.properties ?? {}).sort(), t.name).toEqual(Object.keys(full.properties ?? {}).sort());
      expect(t.inputSchema.required ?? [], t.name).toEqual(full.required ?? []);
      for (const [k, p] of Object.entries(full.properties ?? {})) {
        if (p.enum) expect(JSON.stringify(t.inputSchema.properties![k]), `${t.name}.${k}`).toContain(JSON.stringify(p.enum));
      }
    }
  });
});
