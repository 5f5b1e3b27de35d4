import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import LongestFirst from './test/support/longest-first.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/real-child/**', 'test/browser/**', 'test/pg/**', 'test/packed/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    setupFiles: ['test/support/temp-cleanup.ts'],
    // vitest's default is one worker less than the CPUs: one worker on a 2-core machine, so the suite ran file after file
    // and one core waited while a file waited (child processes, fsync, servers). One worker more than the CPUs keeps
    // them busy while files wait (2 cores: 279 s with two workers, 250 s with three; the CPU time is the same).
    maxWorkers: availableParallelism() + 1,
    // Test files share their worker's modules instead of each loading the whole app again: 30 short files took 90 s
    // (import 75 s) isolated and 27 s (import 11 s) not. Each file still opens its own servers, stores and data dirs;
    // the code keeps no state in modules (the MCP module watcher is per fleet), so a file cannot see another's.
    isolate: false,
    // The longest files first on a fresh checkout too (test/support/longest-first.ts).
    sequence: { sequencer: LongestFirst },
    env: { SITEFLEET_LOG: process.env.SITEFLEET_LOG ?? 'warn', SITEFLEET_CHECK_OUTPUTS: '1' },
  },
});
