// How far a long-running process lets its heap grow past what survived its last full collection (app/heap.ts, the
// serve and mcp commands' --heap-growth-percent / SITEFLEET_HEAP_GROWTH_PERCENT).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { cli } from './support/process.js';
import { tempDir } from './support/server.js';

const HEAP = fileURLToPath(new URL('../dist/app/heap.js', import.meta.url));

/**
 * The heap's peak size (heapTotal, MB) in a process that keeps about 100 MB live and churns through objects that live
 * a little while (promoted, as a request's are), with the growth applied: the same allocations each time, no clock.
 */
async function peakHeapMb(percent: number): Promise<number> {
  const script = `
    const { applyHeapGrowth } = await import(${JSON.stringify(HEAP)});
    applyHeapGrowth({ heapGrowthPercent: ${percent} });
    const live = Array.from({ length: 1_000_000 }, (_, i) => ({ a: i, b: 'x' + i, c: [i] }));
    let peak = 0, keep = [];
    for (let round = 0; round < 1500; round++) {
      for (let i = 0; i < 2000; i++) keep.push({ a: i, b: [1, 2, 3], c: 'y' + i });
      if (keep.length > 200_000) keep = [];
      peak = Math.max(peak, process.memoryUsage().heapTotal);
    }
    console.log(live.length && Math.round(peak / 2 ** 20));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script]);
  return Number(stdout.trim());
}

describe('heap growth', () => {
  it('keeps the heap near what is live at 20 %, where V8 left to itself (0) lets it grow to about twice that and more', async () => {
    const tight = await peakHeapMb(20);
    const v8 = await peakHeapMb(0);
    expect(tight, `peak ${tight} MB at 20 %, ${v8} MB left to V8`).toBeLessThan(v8 * 0.7);
    expect(tight).toBeGreaterThan(90); // what is live is there
  }, 60_000);

  it('refuses a value that is not a whole percent from 0 to 1000, from the flag and from the environment', async () => {
    const flag = await cli(['serve', '--data-dir', tempDir(), '--heap-growth-percent', '1001']);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toMatch(/--heap-growth-percent must be an integer from 0 to 1000 \(got "1001"\)/);
    const env = await cli(['mcp', '--data-dir', tempDir()], { SITEFLEET_HEAP_GROWTH_PERCENT: 'half' });
    expect(env.code).toBe(1);
    expect(env.stderr).toMatch(/--heap-growth-percent must be an integer from 0 to 1000 \(got "half"\)/);
  });
});
