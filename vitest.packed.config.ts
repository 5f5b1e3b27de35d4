import { defineConfig } from 'vitest/config';

// The packed-package lane (npm run test:packed): `npm pack`, install the tarball globally into an empty prefix, and run
// the installed `sitefleet` from other directories (serve, mcp through an MCP client, demo), as a user outside the
// clone would. Needs the npm registry (or its cache) for the package's dependencies.
export default defineConfig({
  test: {
    include: ['test/packed/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    env: { SITEFLEET_LOG: process.env.SITEFLEET_LOG ?? 'warn' },
  },
});
