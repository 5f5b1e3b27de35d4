// The browser lane: the web console in Debian's headless chromium, driven by playwright-core, against a real
// `sitefleet serve` with simulated children (npm run test:browser). Installs chromium with apt when missing.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/browser/**/*.test.ts'],
    globalSetup: ['test/browser/global-setup.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 600_000,
    // A page answers when the server and chromium get CPU: on a loaded 2-core machine 1 s (vitest's default) is not
    // enough for a poll to see a change that does come.
    expect: { poll: { timeout: 15_000 } },
    pool: 'forks',
    setupFiles: ['test/support/temp-cleanup.ts'],
    env: { SITEFLEET_LOG: process.env.SITEFLEET_LOG ?? 'warn', SITEFLEET_CHECK_OUTPUTS: '1' },
  },
});
