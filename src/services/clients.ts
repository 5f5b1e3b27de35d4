// Clients that sites belong to. Lookups only for now: sites name a client by id, tags list the
// clients of their sites. (Client management abilities are not built yet.)
import { ServiceError } from '../core/errors.js';
import type { Store } from '../store/store.js';
import type { ClientRecord } from '../store/records.js';

export class ClientService {
  constructor(private readonly store: Store) {}

  get(id: number): ClientRecord | undefined {
    return this.store.get<ClientRecord>('clients', id);
  }

  resolve(id: number): ClientRecord {
    const c = this.get(id);
    if (!c) throw new ServiceError('svc_client_not_found', `No client found with ID ${id}.`, 404);
    return c;
  }
}
