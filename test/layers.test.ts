// The house's floors: every file in src/ imports only from its own floor or a lower one, and no set of files
// imports itself round (docs/architecture.md, "Layers"). Read from the import statements themselves, so a new
// folder or a new arrow is judged the day it is written.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../src');

/** Floors from the ground up; a file's floor is its first folder under src/ (or its name, for the top-level files). */
export const FLOORS: Record<string, number> = {
  'log.ts': 0,
  'version.ts': 0,
  'config.ts': 0,
  core: 1,
  child: 2, // the wire protocol and the simulator that speaks its other side
  store: 3,
  domain: 4, // the domain services: the rules, each family's service
  abilities: 5,
  http: 6,
  mcp: 6,
  console: 6, // doors; the HTTP door carries MCP's HTTP transport and the console
  app: 7, // boot: the whole process put together
  tools: 8,
  'cli.ts': 8,
  'demo.ts': 8,
  'cli-args.ts': 8,
};

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => resolve(dirname(file), (m[1] ?? m[2])!.replace(/\.js$/, '.ts')));
}

const floorOf = (file: string) => FLOORS[relative(SRC, file).split('/')[0]!];
const name = (file: string) => relative(SRC, file);
const graph = new Map(files(SRC).map((f) => [f, importsOf(f)]));

describe('layers', () => {
  it('knows the floor of every file in src/ (a new folder is placed in FLOORS)', () => {
    expect([...graph.keys()].filter((f) => floorOf(f) === undefined).map(name)).toEqual([]);
  });

  it('has no import from a lower floor to a higher one', () => {
    const upward = [...graph].flatMap(([f, deps]) =>
      deps.filter((d) => (floorOf(d) ?? 0) > (floorOf(f) ?? 0)).map((d) => `${name(f)} -> ${name(d)}`),
    );
    expect(upward).toEqual([]);
  });

  it('has no import circle', () => {
    // Tarjan's strongly connected components: any component of more than one file is a circle.
    let index = 0;
    const idx = new Map<string, number>(),
      low = new Map<string, number>(),
      stack: string[] = [],
      on = new Set<string>();
    const circles: string[][] = [];
    const visit = (v: string) => {
      idx.set(v, index);
      low.set(v, index);
      index++;
      stack.push(v);
      on.add(v);
      for (const w of graph.get(v) ?? []) {
        if (!graph.has(w)) continue;
        if (!idx.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
      }
      if (low.get(v) === idx.get(v)) {
        const c: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          on.delete(w);
          c.push(name(w));
        } while (w !== v);
        if (c.length > 1) circles.push(c.sort());
      }
    };
    for (const v of graph.keys()) if (!idx.has(v)) visit(v);
    expect(circles).toEqual([]);
  });

  it('has no two folders that import each other (doors on one floor stay apart; the app puts them together)', () => {
    const top = (file: string) => relative(SRC, file).split('/')[0]!;
    const pairs = new Set([...graph].flatMap(([f, deps]) => deps.filter((d) => top(d) !== top(f)).map((d) => `${top(f)} -> ${top(d)}`)));
    const both = [...pairs].filter((p) => p.split(' -> ')[0]! < p.split(' -> ')[1]! && pairs.has(p.split(' -> ').reverse().join(' -> ')));
    expect(both).toEqual([]);
  });

  it('resolves every relative import to a file (so the checks above see every arrow)', () => {
    const missing = [...graph].flatMap(([f, deps]) => deps.filter((d) => !graph.has(d)).map((d) => `${name(f)} -> ${name(d)}`));
    expect(missing).toEqual([]);
  });
});
