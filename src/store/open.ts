// Which engine a process runs: PostgreSQL when a database URL is configured, else the lowdb files of the data dir.
import type { Config } from '../config.js';
import type { Store } from './engine.js';
import { redactUrl } from './database-url.js';
import { LowdbStore } from './store.js';

export async function openStore(config: Pick<Config, 'dataDir' | 'databaseUrl'>): Promise<Store> {
  // The PostgreSQL driver is loaded only by a process that uses it (a lowdb CLI command starts ~0.1 s sooner).
  if (config.databaseUrl) return (await import('./pg-store.js')).PgStore.open(config.databaseUrl);
  return LowdbStore.open(config.dataDir);
}

/** Where the process keeps its fleet, for the startup line and logs (never a password). */
export function storeLocation(config: Pick<Config, 'dataDir' | 'databaseUrl'>): string {
  return config.databaseUrl ? redactUrl(config.databaseUrl) : config.dataDir;
}
