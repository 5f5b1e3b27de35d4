// Test support: a real PostgreSQL server for the tests, started from Debian's `postgresql` package binaries into a
// temp dir (initdb, pg_ctl) on a free loopback port, as the `postgres` user when we are root (PostgreSQL refuses to
// run as root), and removed at the end. Each test server gets a database of its own (freshDatabase).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, chownSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface PgServer {
  url: string;
  stop(): Promise<void>;
}

function pgBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'initdb'))) return join(root, v, 'bin');
  throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql: apt-get install -y postgresql');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address() as { port: number };
      s.close(() => resolve(a.port));
    });
  });
}

export async function startPostgres(): Promise<PgServer> {
  const bin = pgBin();
  const dir = mkdtempSync(join(tmpdir(), 'sitefleet-pg-'));
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
    chownSync(dir, id('-u'), id('-g'));
  }
  const run = (cmd: string, args: string[]) => {
    const r = asRoot
      ? spawnSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { encoding: 'utf8' })
      : spawnSync(join(bin, cmd), args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr || r.stdout}`);
  };
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const port = await freePort();
  // Durability stays on (fsync, synchronous_commit): the figures and the SIGKILL tests are about acknowledged writes.
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=32MB`;
  run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '60', '-o', opts, 'start']);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    async stop() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** A new empty database on the server at `serverUrl`; returns its URL. */
export async function freshDatabase(serverUrl: string): Promise<string> {
  const name = `sf_${randomBytes(6).toString('hex')}`;
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Runs an SQL file (a plain pg_dump: COPY blocks and psql meta-commands) into the database at `url` with the
 * server's own psql, stopping at the first error.
 */
export function loadSql(url: string, file: string): void {
  const r = spawnSync(join(pgBin(), 'psql'), ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', url, '-f', file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`psql -f ${file} failed: ${r.stderr || r.stdout}`);
}

/** The PostgreSQL server of the pg lane (set by test/pg/global-setup.ts), or undefined in the lowdb lane. */
export const testPgUrl = (): string | undefined => process.env.SITEFLEET_TEST_PG_URL || undefined;
