// The pg lane's global setup: one real PostgreSQL server for the whole run; every test server and store gets a fresh
// database on it (test/support/server.ts), so that the behaviour suites run unchanged on the PostgreSQL engine.
import { startPostgres, type PgServer } from '../support/postgres.js';

let server: PgServer | undefined;

export async function setup(): Promise<void> {
  server = await startPostgres();
  process.env.SITEFLEET_TEST_PG_URL = server.url;
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
