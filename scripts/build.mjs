// The build (npm run build, and every script that needs dist/): tsc, incremental. tsc keeps what it built in
// dist/.tsbuildinfo and, when the sources match that record, writes nothing. A build that keeps no record (plain tsc, or
// an older checkout of this repository) may have written dist/ since: the record then describes other outputs, and
// trusting it would leave dist/ holding that build's code. Such a build leaves dist/cli.js newer than the record, so the
// record is dropped and tsc builds everything.
import { execFileSync } from 'node:child_process';
import { rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const record = join(root, 'dist', '.tsbuildinfo');
const mtime = (f) => {
  try {
    return statSync(f).mtimeMs;
  } catch {
    return null;
  }
};
const built = mtime(join(root, 'dist', 'cli.js'));
const recorded = mtime(record);
if (recorded !== null && (built === null || built > recorded)) rmSync(record);
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json')], { stdio: 'inherit' });
} catch (e) {
  process.exitCode = e.status ?? 1;
}
