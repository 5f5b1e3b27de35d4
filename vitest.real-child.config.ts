// The real-site lane: real WordPress + MainWP Child sites from ../shared/real-child (npm run test:real-child).
// Files run one after another because they share the kit's sites; each file resets the sites it uses. "Open WP Admin"
// runs in Debian's chromium (admin-login.test.ts): the browser lane's global setup installs it when missing.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/real-child/**/*.test.ts'],
    globalSetup: ['test/real-child/global-setup.ts', 'test/browser/global-setup.ts'],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 300_000,
    pool: 'forks',
    setupFiles: ['test/support/temp-cleanup.ts'],
    env: { SITEFLEET_LOG: process.env.SITEFLEET_LOG ?? 'warn', SITEFLEET_CHECK_OUTPUTS: '1' },
  },
});
