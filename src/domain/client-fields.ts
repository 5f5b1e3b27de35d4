// Custom fields of clients: defined once (a name and a description), then given a value per client, read with the
// client and used to find clients. Values live in their own collection (one record per client, with the client's
// id), so a client record and its views stay as they are; deleting a field removes its values, deleting a client
// removes the client's.
import { ServiceError, errors } from '../core/errors.js';
import { byName } from '../core/collate.js';
import type { ClientFieldRecord, ClientFieldValuesRecord } from '../store/records.js';
import type { Store, Tx } from '../store/store.js';

/** Bounds: fields an installation may define, and the length of a name, a description and a value. */
export const MAX_CLIENT_FIELDS = 100;
export const MAX_FIELD_NAME = 100;
export const MAX_FIELD_DESCRIPTION = 1000;
export const MAX_FIELD_VALUE = 2000;

export interface FieldFilter {
  search?: string;
  include?: number[];
  exclude?: number[];
}
export type FieldMatch = 'exact' | 'contains' | 'set';

const now = () => new Date().toISOString();
/** Field names are plain text, as client and tag names: markup dropped, white space trimmed. */
const cleanName = (name: string) => name.replace(/<[^>]*>/g, '').trim();

export class ClientFieldService {
  constructor(private readonly store: Store) {}

  list(f: FieldFilter = {}): ClientFieldRecord[] {
    const search = f.search?.trim().toLowerCase();
    const include = f.include?.length ? new Set(f.include) : null;
    const exclude = f.exclude?.length ? new Set(f.exclude) : null;
    return [...this.store.all<ClientFieldRecord>('client_fields')]
      .sort(byName((x) => x.name))
      .filter(
        (x) =>
          (!include || include.has(x.id)) &&
          (!exclude || !exclude.has(x.id)) &&
          (!search || x.name.toLowerCase().includes(search) || x.description.toLowerCase().includes(search)),
      );
  }

  /** A field by id (number or digits) or by name (any letter case). Throws 404 svc_client_field_not_found. */
  resolveRef(ref: number | string, tx?: Tx): ClientFieldRecord {
    const all = tx ? [...tx.all<ClientFieldRecord>('client_fields')] : [...this.store.all<ClientFieldRecord>('client_fields')];
    const key = String(ref).trim();
    const found = /^\d+$/.test(key)
      ? (all.find((x) => x.id === Number(key)) ?? all.find((x) => x.name === key))
      : all.find((x) => x.name.toLowerCase() === key.toLowerCase());
    if (!found)
      throw new ServiceError('svc_client_field_not_found', `No client field found with ID or name "${key}".`, 404, { field: key });
    return found;
  }

  private checkName(tx: Tx, raw: string, selfId?: number): string {
    const name = cleanName(raw);
    if (!name) throw new ServiceError('svc_invalid_input', 'Field name must not be empty.', 400, { params: { name: 'must not be empty' } });
    if (/^\d+$/.test(name))
      throw new ServiceError('svc_invalid_input', 'Field name must not be only digits (digits name a field by its ID).', 400, {
        params: { name: 'must not be only digits' },
      });
    for (const x of tx.all<ClientFieldRecord>('client_fields')) {
      if (x.id !== selfId && x.name.toLowerCase() === name.toLowerCase()) {
        throw new ServiceError('svc_client_field_exists', `A client field named "${x.name}" already exists (ID ${x.id}).`, 409, {
          field_id: x.id,
        });
      }
    }
    return name;
  }

  /** Defines a field in one durable write (409 when the name is taken, whatever its case). */
  add(input: { name: string; description: string }): Promise<ClientFieldRecord> {
    return this.store.write((tx) => this.create(tx, input));
  }

  /** Renames or redescribes a field (by id or name, as it is when the write runs). */
  edit(ref: number | string, input: { name?: string; description?: string }): Promise<ClientFieldRecord> {
    return this.store.write((tx) => this.update(tx, this.resolveRef(ref, tx).id, input));
  }

  /** Deletes a field and its values; answers how many values went. */
  remove(ref: number | string): Promise<number> {
    return this.store.write((tx) => this.delete(tx, this.resolveRef(ref, tx).id));
  }

  /** Sets a client's values (null or "" clears one); one unknown field changes nothing. Answers the fields changed. */
  setClientValues(clientId: number, values: Record<string, string | null>): Promise<string[]> {
    return this.store.write((tx) => {
      if (!tx.get('clients', clientId)) throw errors.clientNotFound(clientId);
      return this.setValues(tx, clientId, values);
    });
  }

  create(tx: Tx, input: { name: string; description: string }): ClientFieldRecord {
    const name = this.checkName(tx, input.name);
    let n = 0;
    for (const _ of tx.all('client_fields')) n++;
    if (n >= MAX_CLIENT_FIELDS) {
      throw new ServiceError(
        'svc_client_field_limit',
        `At most ${MAX_CLIENT_FIELDS} client fields can be defined; delete one first.`,
        409,
        { limit: MAX_CLIENT_FIELDS },
      );
    }
    const t = now();
    return tx.insert<ClientFieldRecord>('client_fields', { name, description: input.description.trim(), created_at: t, updated_at: t });
  }

  update(tx: Tx, id: number, input: { name?: string; description?: string }): ClientFieldRecord {
    const cur = tx.get<ClientFieldRecord>('client_fields', id)!;
    return tx.put<ClientFieldRecord>('client_fields', {
      ...cur,
      name: input.name === undefined ? cur.name : this.checkName(tx, input.name, id),
      description: input.description === undefined ? cur.description : input.description.trim(),
      updated_at: now(),
    });
  }

  /** Clients that have a value for the field. */
  usedBy(fieldId: number): number[] {
    const k = String(fieldId);
    return [...this.store.all<ClientFieldValuesRecord>('client_field_values')].filter((v) => k in v.values).map((v) => v.id);
  }

  /** Removes the field and every client's value of it; answers how many values went. */
  delete(tx: Tx, id: number): number {
    const k = String(id);
    let removed = 0;
    for (const v of [...tx.all<ClientFieldValuesRecord>('client_field_values')]) {
      if (!(k in v.values)) continue;
      const { [k]: _gone, ...rest } = v.values;
      removed++;
      if (Object.keys(rest).length) tx.put<ClientFieldValuesRecord>('client_field_values', { id: v.id, values: rest });
      else tx.delete('client_field_values', v.id);
    }
    tx.delete('client_fields', id);
    return removed;
  }

  /** Every defined field with the client's value (null when it has none), by field name. */
  valuesOf(clientId: number): Array<{ id: number; name: string; value: string | null }> {
    const v = this.store.get<ClientFieldValuesRecord>('client_field_values', clientId)?.values ?? {};
    return this.list().map((x) => ({ id: x.id, name: x.name, value: v[String(x.id)] ?? null }));
  }

  /**
   * Sets values of one client (fields by id or name); null or "" clears one. Every name is resolved before anything
   * is written: an unknown field is a 404 naming it, and nothing changes.
   */
  setValues(tx: Tx, clientId: number, values: Record<string, string | null>): string[] {
    const cur = { ...(tx.get<ClientFieldValuesRecord>('client_field_values', clientId)?.values ?? {}) };
    const changed: string[] = [];
    const seen = new Set<number>();
    for (const [ref, value] of Object.entries(values)) {
      const field = this.resolveRef(ref, tx);
      if (seen.has(field.id))
        throw new ServiceError('svc_invalid_input', `Field "${field.name}" is given twice.`, 400, {
          params: { values: `${field.name} given twice` },
        });
      seen.add(field.id);
      const v = value?.trim() ?? '';
      if (v === '') delete cur[String(field.id)];
      else cur[String(field.id)] = v;
      changed.push(field.name);
    }
    if (Object.keys(cur).length) tx.put<ClientFieldValuesRecord>('client_field_values', { id: clientId, values: cur });
    else if (tx.get('client_field_values', clientId)) tx.delete('client_field_values', clientId);
    return changed;
  }

  /** Ids of the clients whose value of the field matches (case-insensitive): equal, containing, or any value. */
  clientsMatching(fieldId: number, match: FieldMatch, value: string): Set<number> {
    const k = String(fieldId);
    const want = value.trim().toLowerCase();
    const out = new Set<number>();
    for (const v of this.store.all<ClientFieldValuesRecord>('client_field_values')) {
      const have = v.values[k];
      if (have === undefined) continue;
      const h = have.toLowerCase();
      if (match === 'set' || (match === 'exact' ? h === want : h.includes(want))) out.add(v.id);
    }
    return out;
  }

  /** A deleted client's values go with it (called in the same write as the deletion). */
  dropClient(tx: Tx, clientId: number): void {
    if (tx.get('client_field_values', clientId)) tx.delete('client_field_values', clientId);
  }
}
