// Clients that sites belong to: lookup by id or e-mail, filtered lists, edits. A site names its client by
// client_id; deleting a client (remove, with the cascade wired in domain/index.ts) unassigns its sites and drops
// it from costs.
import { ServiceError, errors } from '../core/errors.js';
import { byName } from '../core/collate.js';
import type { Store, Tx } from '../store/store.js';
import type { ClientRecord, ClientStatus, SiteRecord, TagRecord } from '../store/records.js';
import { Cascade } from './cascade.js';
import type { SiteService } from './sites.js';

export const CLIENT_TEXT_FIELDS = [
  'phone',
  'address_1',
  'address_2',
  'city',
  'state',
  'zip',
  'country',
  'note',
  'facebook',
  'twitter',
  'instagram',
  'linkedin',
] as const;
export type ClientTextField = (typeof CLIENT_TEXT_FIELDS)[number];

export type ClientInput = { name?: string; email?: string | null; status?: ClientStatus } & Partial<Record<ClientTextField, string>>;

export interface ClientFilter {
  search?: string;
  status?: ClientStatus | 'any';
  include?: number[];
  exclude?: number[];
}

const now = () => new Date().toISOString();

/** Client names are plain text, like tag names: markup dropped, white space trimmed. */
const cleanName = (name: string) => name.replace(/<[^>]*>/g, '').trim();

export class ClientService {
  private cacheVersion = -1;
  private sorted: ClientRecord[] = [];
  private siteCacheVersion = -1;
  private sitesByClient = new Map<number, number[]>();

  /** Who else lets go of a deleted client (its sites, costs). */
  readonly onRemove = new Cascade();

  constructor(
    private readonly store: Store,
    private readonly sites: SiteService,
  ) {}

  /** Creates a client and assigns it the sites given, in one durable write. */
  add(input: ClientInput & { name: string }, siteIds: readonly number[] = []): Promise<ClientRecord> {
    return this.store.write((tx) => {
      const c = this.create(tx, input);
      for (const id of siteIds) this.sites.patch(tx, id, { client_id: c.id });
      return c;
    });
  }

  /** Changes the fields given and assigns the sites given, in one durable write. */
  edit(id: number, input: ClientInput, siteIds: readonly number[] = []): Promise<ClientRecord> {
    return this.store.write((tx) => {
      const c = this.update(tx, id, input);
      for (const s of siteIds) this.sites.patch(tx, s, { client_id: id });
      return c;
    });
  }

  /**
   * Suspending a client suspends every site assigned to it (left out of syncs and updates, as a suspended site is);
   * unsuspending makes the client active and unsuspends its sites. Both in one write.
   */
  setSuspended(id: number, suspend: boolean): Promise<{ client: ClientRecord; sites_count: number }> {
    return this.store.write((tx) => {
      const client = this.update(tx, id, { status: suspend ? 'suspended' : 'active' });
      let sites_count = 0;
      for (const s of [...tx.all<SiteRecord>('sites')]) {
        if (s.client_id !== id) continue;
        sites_count++;
        if (s.suspended !== suspend) this.sites.patch(tx, s.id, { suspended: suspend });
      }
      return { client, sites_count };
    });
  }

  /** A client outside the running call's scope is answered as missing (domain/access.ts). */
  get(id: number): ClientRecord | undefined {
    const c = this.store.get<ClientRecord>('clients', id);
    return c && this.sites.access.seesClient(id) ? c : undefined;
  }

  resolve(id: number): ClientRecord {
    const c = this.get(id);
    if (!c) throw errors.clientNotFound(id);
    return c;
  }

  /** A client by id (number or digits) or by e-mail (any letter case). Throws 404 svc_client_not_found. */
  resolveRef(ref: number | string): ClientRecord {
    if (typeof ref === 'number' || /^\d+$/.test(ref.trim())) {
      const id = Number(ref);
      return this.resolve(id);
    }
    const email = ref.trim().toLowerCase();
    const found = email ? this.byName().find((c) => c.email.toLowerCase() === email && this.get(c.id)) : undefined;
    if (!found) throw errors.clientNotFound(ref);
    return found;
  }

  /** Every client, by name (any letter case), then id; rebuilt only when clients change. */
  private byName(): ClientRecord[] {
    const v = this.store.version('clients');
    if (v !== this.cacheVersion) {
      this.sorted = [...this.store.all<ClientRecord>('clients')].sort(byName((c) => c.name));
      this.cacheVersion = v;
    }
    return this.sorted;
  }

  list(f: ClientFilter): ClientRecord[] {
    const search = f.search?.trim().toLowerCase();
    const include = f.include?.length ? new Set(f.include) : null;
    const exclude = f.exclude?.length ? new Set(f.exclude) : null;
    const status = f.status && f.status !== 'any' ? f.status : null;
    const scoped = !!this.sites.access.visible();
    return this.byName().filter(
      (c) =>
        (!scoped || this.sites.access.seesClient(c.id)) &&
        (!status || c.status === status) &&
        (!include || include.has(c.id)) &&
        (!exclude || !exclude.has(c.id)) &&
        (!search || String(c.id).includes(search) || c.name.toLowerCase().includes(search) || c.email.toLowerCase().includes(search)),
    );
  }

  count(status: ClientStatus | 'any' = 'any'): number {
    return status === 'any' && !this.sites.access.visible() ? this.store.count('clients') : this.list({ status }).length;
  }

  /** Ids of the sites assigned to a client, ascending; rebuilt only when sites change. */
  siteIds(clientId: number): number[] {
    const v = this.store.version('sites');
    if (v !== this.siteCacheVersion) {
      this.sitesByClient = new Map();
      for (const s of this.store.all<SiteRecord>('sites')) {
        if (s.client_id === null) continue;
        const list = this.sitesByClient.get(s.client_id);
        if (list) list.push(s.id);
        else this.sitesByClient.set(s.client_id, [s.id]);
      }
      for (const list of this.sitesByClient.values()) list.sort((a, b) => a - b);
      this.siteCacheVersion = v;
    }
    return this.sites.access.only(this.sitesByClient.get(clientId) ?? []);
  }

  /** How many of these sites each (existing) client owns, in the order the sites name them. */
  countsOfSites(siteIds: readonly number[]): Map<number, number> {
    const counts = new Map<number, number>();
    for (const id of siteIds) {
      const c = this.sites.get(id)?.client_id;
      if (c && this.get(c)) counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    return counts;
  }

  /** A tag (404 when none) and the clients owning at least one of its sites, by name, with how many. */
  ofTag(tagId: number): { tag: TagRecord; clients: Array<{ client: ClientRecord; sites_with_tag: number }> } {
    const { tag, sites } = this.sites.inTag(tagId);
    const order = byName<ClientRecord>((c) => c.name);
    const clients = [...this.countsOfSites(sites.map((s) => s.id))]
      .map(([id, n]) => ({ client: this.get(id)!, sites_with_tag: n }))
      .sort((a, b) => order(a.client, b.client));
    return { tag, clients };
  }

  private assertEmailFree(tx: Tx, email: string, selfId?: number): void {
    const e = email.toLowerCase();
    // Unlocked: the e-mail is a unique key (store engine.ts UNIQUE_KEYS); on PostgreSQL a concurrent duplicate from
    // another process fails its commit, which runs again and is refused here, instead of locking every client.
    const c = tx.unlocked(() => [...tx.all<ClientRecord>('clients')].find((x) => x.id !== selfId && x.email.toLowerCase() === e));
    if (c) {
      throw new ServiceError('svc_client_exists', `A client with e-mail "${email}" already exists (ID ${c.id}).`, 409, {
        client_id: c.id,
      });
    }
  }

  private fields(input: ClientInput): Partial<ClientRecord> {
    const out: Partial<ClientRecord> = {};
    for (const f of CLIENT_TEXT_FIELDS) if (input[f] !== undefined) out[f] = input[f]!.trim();
    return out;
  }

  create(tx: Tx, input: ClientInput & { name: string }): ClientRecord {
    const name = cleanName(input.name);
    if (!name)
      throw new ServiceError('svc_invalid_input', 'Client name must not be empty.', 400, { params: { name: 'must not be empty' } });
    const email = (input.email ?? '').trim();
    if (email) this.assertEmailFree(tx, email);
    const t = now();
    const blank = Object.fromEntries(CLIENT_TEXT_FIELDS.map((f) => [f, ''])) as Record<ClientTextField, string>;
    return tx.insert<ClientRecord>('clients', {
      ...blank,
      ...this.fields(input),
      name,
      email,
      status: input.status ?? 'active',
      created_at: t,
      updated_at: t,
    });
  }

  update(tx: Tx, id: number, input: ClientInput): ClientRecord {
    const cur = tx.get<ClientRecord>('clients', id);
    if (!cur) throw errors.clientNotFound(id);
    const next: ClientRecord = { ...cur, ...this.fields(input), updated_at: now() };
    if (input.name !== undefined) {
      next.name = cleanName(input.name);
      if (!next.name)
        throw new ServiceError('svc_invalid_input', 'Client name must not be empty.', 400, { params: { name: 'must not be empty' } });
    }
    if (input.email !== undefined) {
      next.email = (input.email ?? '').trim();
      if (next.email && next.email.toLowerCase() !== cur.email.toLowerCase()) this.assertEmailFree(tx, next.email, id);
    }
    if (input.status !== undefined) next.status = input.status;
    return tx.put<ClientRecord>('clients', next);
  }

  /** Deletes a client and lets everything that named it go (its sites stay, unassigned), in one durable write. */
  remove(id: number): Promise<ClientRecord> {
    return this.store.write((tx) => {
      const cur = tx.get<ClientRecord>('clients', id);
      if (!cur) throw errors.clientNotFound(id);
      this.onRemove.run(tx, id);
      tx.delete('clients', id);
      return cur;
    });
  }
}
