import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// The PostgreSQL lane (npm run test:pg): the behaviour suites that do not look at the data dir's files, run on the
// PostgreSQL engine, plus the engine's own and the multi-process tests in test/pg/. The global setup starts a real
// PostgreSQL server from the system's binaries (apt-get install -y postgresql) and removes it at the end.
export default defineConfig({
  test: {
    include: [
      'test/pg/**/*.test.ts',
      'test/abilities/**/*.test.ts',
      'test/jobs.test.ts',
      'test/after-commit.test.ts',
      'test/job-chunks.test.ts',
      'test/rest-sites.test.ts',
      'test/rest-tags.test.ts',
      'test/clients.test.ts',
      'test/costs.test.ts',
      'test/auth.test.ts',
      'test/users.test.ts',
      'test/existing-clients.test.ts',
      'test/abilities-door.test.ts',
      'test/child-sites.test.ts',
      'test/plugins.test.ts',
      'test/posts.test.ts',
      'test/site-data.test.ts',
      'test/users-import.test.ts',
      'test/site-time.test.ts',
      'test/auth-sweep.test.ts',
      'test/smoke.test.ts',
      'test/mcp.test.ts',
      'test/mcp-experience.test.ts',
      'test/updates.test.ts',
      'test/updates-jobs.test.ts',
      'test/pages.test.ts',
      'test/client-fields.test.ts',
      'test/settings.test.ts',
      'test/fleet-tools.test.ts',
      'test/fleet-security.test.ts',
      'test/shared-parts.test.ts',
      'test/monitors.test.ts',
      'test/monitor-scheduler.test.ts',
      'test/monitor-outages.test.ts',
      'test/console.test.ts',
      'test/console-sessions.test.ts',
      'test/admin-login-processes.test.ts',
      'test/openapi.test.ts',
      'test/openapi-client.test.ts',
      'test/vulnerabilities.test.ts',
      'test/vulnerabilities-doors.test.ts',
      'test/cold-blobs.test.ts',
      'test/cold-site-data.test.ts',
      'test/blob-batches.test.ts',
      'test/cold-records.test.ts',
      'test/monitor-history.test.ts',
      'test/audit-verify-interleaved.test.ts',
      'test/tags-index.test.ts',
      'test/scope-sweep.test.ts',
    ],
    // Not here: attacks and hardening, because they read the lowdb engine's own files to prove a point (the files on
    // disk), store (the lowdb engine itself); fuzz and unknown-fields test the doors' input handling, which no engine
    // changes ("a refusal changes nothing" is by the store's versions); the child-* suites touch no store.
    globalSetup: ['test/pg/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    setupFiles: ['test/support/temp-cleanup.ts'],
    // As many files at once as CPUs (vitest's default is one less: one at a time on 2 cores). Each file has its own
    // database on the lane's server. 2 cores: 596 s with one worker, 377 s with two, all passed (one run each).
    maxWorkers: availableParallelism(),
    // SITEFLEET_CHECK_REPLAY: every commit runs its write functions once more and fails if they do not do the same (a
    // write function must have no effect outside its Tx: the engine runs it more than once; pg-store.ts replay).
    env: { SITEFLEET_LOG: process.env.SITEFLEET_LOG ?? 'warn', SITEFLEET_CHECK_OUTPUTS: '1', SITEFLEET_CHECK_REPLAY: '1' },
  },
});
