// `npm run schemas`: every ability's input and output JSON Schema into schemas/ (checked in; a test
// fails when they are stale). With --check, only reports what differs.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allAbilities } from '../abilities/index.js';
import { jsonSchemaOf } from '../core/registry.js';

export const SCHEMA_DIR = fileURLToPath(new URL('../../schemas/', import.meta.url));

/** file name → content, for every ability. */
export function expectedSchemas(): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of allAbilities) {
    out.set(`${a.name}.input.json`, `${JSON.stringify(jsonSchemaOf(a.input, 'input'), null, 2)}\n`);
    out.set(`${a.name}.output.json`, `${JSON.stringify(jsonSchemaOf(a.output, 'output'), null, 2)}\n`);
  }
  return out;
}

/** Names of files that are missing, different or extra. */
export function staleSchemas(dir = SCHEMA_DIR): string[] {
  const want = expectedSchemas();
  const have = new Set(readdirSync(dir).filter((f) => f.endsWith('.json')));
  const stale: string[] = [];
  for (const [f, text] of want) {
    if (!have.has(f) || readFileSync(join(dir, f), 'utf8') !== text) stale.push(f);
  }
  for (const f of have) if (!want.has(f)) stale.push(f);
  return stale;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--check')) {
    const stale = staleSchemas();
    if (stale.length) {
      console.error(`Stale schemas (run npm run schemas): ${stale.join(', ')}`);
      process.exit(1);
    }
  } else {
    mkdirSync(SCHEMA_DIR, { recursive: true });
    for (const f of readdirSync(SCHEMA_DIR)) if (f.endsWith('.json')) rmSync(join(SCHEMA_DIR, f));
    for (const [f, text] of expectedSchemas()) writeFileSync(join(SCHEMA_DIR, f), text);
    console.log(`Wrote ${expectedSchemas().size} schemas to ${SCHEMA_DIR}`);
  }
}
