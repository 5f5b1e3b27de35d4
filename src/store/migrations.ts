// Data format versions. Each migration turns format N into N+1 in place; a start on an older data dir
// runs the missing ones in order (under the store lock) before loading, after copying every file they rewrite aside
// (a dated folder in the data dir, named in the log) so that an upgrade can be undone.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { collectionFiles, parseJson, syncDir, writeDurably, type ShardFile } from './durable-file.js';
import { log } from '../log.js';

export const CURRENT_FORMAT = 3;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

interface Migration {
  /** The data dir's files (top level) this step rewrites; they are copied aside before any step runs. */
  files(dir: string): string[];
  run(dir: string): Promise<void>;
}

const MIGRATIONS: Record<number, Migration> = {
  // 1 → 2: API key hashes get a per-key salt. The secret is not known here, so the salted hash is taken over the
  // old unsalted one: sha256(salt + sha256(secret)), which is also how new keys are hashed (domain/auth.ts).
  1: {
    files: () => ['keys.json'],
    run: async (dir) => {
      const file = join(dir, 'keys.json');
      if (!existsSync(file)) return;
      const body = parseJson<Shard>(file, readFileSync(file, 'utf8'));
      for (const k of body.records) {
        if (typeof k.salt === 'string') continue;
        const salt = randomBytes(16).toString('hex');
        k.secret_hash = sha256(salt + String(k.secret_hash));
        k.salt = salt;
      }
      await writeDurably(file, JSON.stringify(body));
    },
  },
  // 2 → 3: tag membership moves from the tags (TagRecord.site_ids) to the sites (SiteRecord.tag_ids, ascending), so that
  // giving a site a tag writes that site only (domain/tags.ts). The sites are written first, then the tags: a step cut
  // short runs again at the next start and comes to the same (a site's tags are then what it has and what the tags
  // still list). Ids of sites that no longer exist are dropped with the tags' lists, as every tag read passed them over.
  2: {
    files: (dir) => ['tags.json', ...filesOf(dir, 'sites')],
    run: async (dir) => {
      const tagsFile = join(dir, 'tags.json');
      if (!existsSync(tagsFile)) return;
      const tags = parseJson<Shard>(tagsFile, readFileSync(tagsFile, 'utf8'));
      const tagsOf = new Map<number, Set<number>>();
      for (const t of tags.records) {
        for (const s of Array.isArray(t.site_ids) ? t.site_ids : []) {
          if (!Number.isInteger(s)) continue;
          let set = tagsOf.get(s as number);
          if (!set) tagsOf.set(s as number, (set = new Set()));
          set.add(t.id as number);
        }
      }
      for (const f of filesOf(dir, 'sites')) {
        const file = join(dir, f);
        const body = parseJson<Shard>(file, readFileSync(file, 'utf8'));
        let changed = false;
        for (const s of body.records) {
          const more = tagsOf.get(s.id as number);
          if (!more) continue;
          const had = Array.isArray(s.tag_ids) ? (s.tag_ids as number[]) : [];
          s.tag_ids = [...new Set([...had, ...more])].sort((a, b) => a - b);
          changed = true;
        }
        if (changed) await writeDurably(file, JSON.stringify(body));
      }
      for (const t of tags.records) delete t.site_ids;
      await writeDurably(tagsFile, JSON.stringify(tags));
    },
  },
};

/** A collection file as a step reads it: records of any shape. */
type Shard = ShardFile<Record<string, unknown>>;

/** The data dir's files of a collection (durable-file.ts collectionFiles). */
const filesOf = (dir: string, col: string): string[] => collectionFiles(readdirSync(dir), col);

/**
 * Brings the data dir from format `from` to CURRENT_FORMAT. First copies meta.json and every file a step will rewrite
 * into `<dir>/before-format-<to>-<time>/` (fsynced; logged), and answers that folder (null when nothing ran): copying
 * those files back, with the older sitefleet, undoes the upgrade.
 */
export async function migrate(dir: string, from: number): Promise<string | null> {
  if (from >= CURRENT_FORMAT) return null;
  const steps: Migration[] = [];
  for (let f = from; f < CURRENT_FORMAT; f++) {
    const step = MIGRATIONS[f];
    if (!step) throw new Error(`No migration from data format ${f} to ${f + 1}.`);
    steps.push(step);
  }
  const aside = join(dir, `before-format-${CURRENT_FORMAT}-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  mkdirSync(aside, { recursive: true, mode: 0o700 });
  const files = new Set(['meta.json', ...steps.flatMap((s) => s.files(dir))]);
  for (const f of files) {
    if (!existsSync(join(dir, f))) continue;
    copyFileSync(join(dir, f), join(aside, f));
    const fd = openSync(join(aside, f), 'r');
    fsyncSync(fd);
    closeSync(fd);
  }
  await syncDir(aside);
  log('warn', 'data format upgrade: the files it rewrites were copied aside first', {
    from,
    to: CURRENT_FORMAT,
    copied_to: aside,
    files: [...files].filter((f) => existsSync(join(aside, f))),
  });
  for (const step of steps) await step.run(dir);
  return aside;
}
