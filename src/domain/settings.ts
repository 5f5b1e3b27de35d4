// Service settings kept in the store: which optional modules are on. Read live, so a running server
// follows `sitefleet modules enable|disable` from another process.
import { randomUUID } from 'node:crypto';
import { ServiceError } from '../core/errors.js';
import type { ModuleName } from '../core/ability.js';
import type { SettingsRecord } from '../store/records.js';
import type { Store } from '../store/store.js';

export const MODULES: Record<ModuleName, string> = { logs: 'Logs', 'cost-tracker': 'Cost Tracker' };
const DEFAULTS: SettingsRecord = { id: 1, modules: { logs: true, 'cost-tracker': true } };

export class SettingsService {
  constructor(private readonly store: Store) {}

  get(): SettingsRecord {
    return this.store.get<SettingsRecord>('settings', 1) ?? DEFAULTS;
  }

  moduleOn(m: ModuleName): boolean {
    return this.get().modules[m];
  }

  assertModule(m: ModuleName): void {
    if (!this.moduleOn(m)) {
      throw new ServiceError('svc_module_not_available', `${MODULES[m]} module is not active.`, 501, { module: m });
    }
  }

  /** This installation's name towards children, made once and kept. */
  async installationUrl(): Promise<string> {
    const cur = this.get().installation_url;
    if (cur) return cur;
    return this.store.write((tx) => {
      const now = tx.get<SettingsRecord>('settings', 1) ?? DEFAULTS;
      if (now.installation_url) return now.installation_url;
      const url = `https://sitefleet.invalid/${randomUUID()}/`;
      tx.put<SettingsRecord>('settings', { ...now, installation_url: url });
      return url;
    });
  }

  async setModule(m: ModuleName, on: boolean): Promise<SettingsRecord> {
    return this.store.write((tx) => {
      const cur = tx.get<SettingsRecord>('settings', 1) ?? DEFAULTS;
      return tx.put<SettingsRecord>('settings', { ...cur, modules: { ...cur.modules, [m]: on } });
    });
  }
}
