// scripts/build.mjs: tsc is incremental, but its record (dist/.tsbuildinfo) is dropped when a build that keeps none wrote
// dist/ since, else tsc would find the sources matching the record and leave that build's code in dist/. Run here with a
// stand-in for tsc that says whether the record was there when it ran (the real tsc is the build itself, run by npm test).
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './support/temp.js';

function project(): { root: string; build: (env?: Record<string, string>) => { code: number; saw: string[] } } {
  const root = tempDir();
  mkdirSync(join(root, 'scripts'));
  copyFileSync(new URL('../scripts/build.mjs', import.meta.url), join(root, 'scripts', 'build.mjs'));
  mkdirSync(join(root, 'node_modules', 'typescript', 'bin'), { recursive: true });
  writeFileSync(join(root, 'node_modules', 'typescript', 'package.json'), '{"name":"typescript"}');
  writeFileSync(
    join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
    `const fs = require('node:fs'); const path = require('node:path');
     const root = path.dirname(process.argv[process.argv.indexOf('-p') + 1]);
     fs.appendFileSync(path.join(root, 'saw.log'), (fs.existsSync(path.join(root, 'dist', '.tsbuildinfo')) ? 'record' : 'none') + '\\n');
     process.exit(Number(process.env.FAKE_TSC_EXIT || 0));`,
  );
  writeFileSync(join(root, 'tsconfig.json'), '{}');
  mkdirSync(join(root, 'dist'));
  const build = (env: Record<string, string> = {}) => {
    let code = 0;
    try {
      execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { env: { ...process.env, ...env }, stdio: 'pipe' });
    } catch (e) {
      code = (e as { status: number }).status;
    }
    const log = join(root, 'saw.log');
    return { code, saw: existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [] };
  };
  return { root, build };
}

/** dist/cli.js and the record, each written at the given time in seconds (null: not there). */
function dist(root: string, cliAt: number | null, recordAt: number): void {
  for (const [name, t] of [
    ['cli.js', cliAt],
    ['.tsbuildinfo', recordAt],
  ] as const) {
    if (t === null) continue;
    writeFileSync(join(root, 'dist', name), '');
    utimesSync(join(root, 'dist', name), t, t);
  }
}

describe('the build script', () => {
  it('keeps the record when it is newer than what dist/ holds', () => {
    const { root, build } = project();
    dist(root, 1_000, 1_001);
    expect(build()).toEqual({ code: 0, saw: ['record'] });
  });

  it('drops the record when another build wrote dist/ after it, or dist/ has no cli.js', () => {
    const { root, build } = project();
    dist(root, 1_001, 1_000);
    expect(build()).toEqual({ code: 0, saw: ['none'] });

    const other = project();
    dist(other.root, null, 1_000);
    expect(other.build()).toEqual({ code: 0, saw: ['none'] });
  });

  it('is the only script that writes the record: every other run of tsc keeps its own, outside dist/', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };
    const testConfig = JSON.parse(readFileSync(new URL('../tsconfig.test.json', import.meta.url), 'utf8').replace(/^\s*\/\/.*$/gm, '')) as {
      compilerOptions: { tsBuildInfoFile?: string };
    };
    const tscRuns = Object.entries(pkg.scripts).flatMap(([name, cmd]) =>
      cmd.split('&&').flatMap((part) => (/(^|\s)tsc\s/.test(part.trim() + ' ') ? [[name, part.trim()] as const] : [])),
    );
    expect(tscRuns.length).toBeGreaterThan(0);
    for (const [name, run] of tscRuns) {
      const own =
        /--tsBuildInfoFile\s+(\S+)/.exec(run)?.[1] ??
        (run.includes('tsconfig.test.json') ? testConfig.compilerOptions.tsBuildInfoFile : undefined);
      expect(own, `npm run ${name}: ${run}`).toBeDefined();
      expect(own!.startsWith('dist/'), `npm run ${name}: ${run}`).toBe(false);
    }
  });

  it("fails with tsc's exit code", () => {
    const { build } = project();
    expect(build({ FAKE_TSC_EXIT: '2' })).toEqual({ code: 2, saw: ['none'] });
  });
});
