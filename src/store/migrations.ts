// Data format versions. Each migration turns format N into N+1 in place; a start on an older data dir
// runs the missing ones in order (under the store lock) before loading.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseJson, writeDurably } from './durable-file.js';

export const CURRENT_FORMAT = 2;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

const MIGRATIONS: Record<number, (dir: string) => Promise<void>> = {
  // 1 → 2: API key hashes get a per-key salt. The secret is not known here, so the salted hash is taken over the
  // old unsalted one: sha256(salt + sha256(secret)), which is also how new keys are hashed (domain/auth.ts).
  1: async (dir) => {
    const file = join(dir, 'keys.json');
    if (!existsSync(file)) return;
    const body = parseJson<{ collection: string; records: Array<Record<string, unknown>> }>(file, readFileSync(file, 'utf8'));
    for (const k of body.records) {
      if (typeof k.salt === 'string') continue;
      const salt = randomBytes(16).toString('hex');
      k.secret_hash = sha256(salt + String(k.secret_hash));
      k.salt = salt;
    }
    await writeDurably(file, JSON.stringify(body));
  },
};
export async function migrate(dir: string, from: number): Promise<void> {
  for (let f = from; f < CURRENT_FORMAT; f++) {
    const step = MIGRATIONS[f];
    if (!step) throw new Error(`No migration from data format ${f} to ${f + 1}.`);
    await step(dir);
  }
}
