import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/real-child/**', 'test/browser/**', 'test/pg/**', 'test/packed/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    env: { SITEFLEET_LOG: process.env.SITEFLEET_LOG ?? 'warn', SITEFLEET_CHECK_OUTPUTS: '1' },
  },
});
