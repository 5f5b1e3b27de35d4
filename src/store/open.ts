// Which engine a process runs: PostgreSQL when a database URL is configured, else the lowdb files of the data dir.
import type { Config } from '../config.js';
import type { Store } from './engine.js';
import { PgStore, redactUrl } from './pg-store.js';
import { LowdbStore } from './store.js';

export async function openStore(config: Pick<Config, 'dataDir' | 'databaseUrl'>): Promise<Store> {
  return config.databaseUrl ? PgStore.open(config.databaseUrl) : LowdbStore.open(config.dataDir);
}

/** Where the process keeps its fleet, for the startup line and logs (never a password). */
export function storeLocation(config: Pick<Config, 'dataDir' | 'databaseUrl'>): string {
  return config.databaseUrl ? redactUrl(config.databaseUrl) : config.dataDir;
}
