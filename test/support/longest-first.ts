// The order npm test starts its files in. vitest starts the files that took longest in its last run first, so that the
// workers end together; without a last run (a fresh checkout: CI) it starts the largest files first, and the fuzz
// suites, small files with long runs, came last: one worker ran them alone for the last 15-20 s of a 4-minute suite.
// The files named here (the longest on the 2-core machine, 2026-11-28: 10-34 s each) start first, in this order, when
// vitest has no duration for them; every other file, and every file once vitest knows durations, keeps its order.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export const LONGEST = [
  'cli',
  'fuzz-abilities',
  'hardening',
  'backup',
  'mcp-experience',
  'updates',
  'fuzz-rest',
  'cli-errors',
  'monitors',
  'scope-sweep',
  'heap-growth',
  'fuzz-mcp',
  'attacks',
  'openapi-client',
  'demo',
  'monitors-processes',
  'store',
  'console-sessions',
  'updates-jobs',
].map((name) => `test/${name}.test.ts`);

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const name = f.moduleId.slice(this.ctx.config.root.length + 1).replaceAll('\\', '/');
      const at = LONGEST.indexOf(name);
      return at < 0 || this.ctx.cache.getFileTestResults(`${f.project.name}:${name}`) ? LONGEST.length : at;
    };
    // A stable sort: the files not named keep the order vitest gave them.
    return sorted
      .map((f, i) => ({ f, i, r: rank(f) }))
      .sort((a, b) => a.r - b.r || a.i - b.i)
      .map((x) => x.f);
  }
}
