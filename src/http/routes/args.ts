// Shared pieces of REST rows: reading path and body arguments, the simple site view, and batches.
import { ServiceError, toServiceError } from '../../core/errors.js';
import { oneValue, readFlag } from '../../core/input.js';
import type { BatchShape, RestArgs, RestRoute, RowRunner } from '../rest-door.js';

export const site = (a: RestArgs) => a.params.id_or_domain!;
export const pathId = (a: RestArgs) => a.params.id!;
export const simple = (s: { id: number; name: string; url: string; client_id: number | null }) => ({
  id: s.id,
  name: s.name,
  url: s.url,
  client_id: s.client_id,
});
/** Picks the named arguments that were given; everything else the caller sent is ignored. */
export const pick = (a: RestArgs, ...names: string[]) =>
  Object.fromEntries(names.filter((n) => a.args[n] !== undefined && a.args[n] !== '').map((n) => [n, a.args[n]]));
/** One argument sent under several names (ours first): every name is read, and core/input.ts oneValue decides. */
export const either = (a: RestArgs, ...names: string[]) => oneValue(names.map((n) => [n, a.args[n]] as const));
/** A flag argument, read as WordPress reads a boolean (true/false, 1/0); anything else is a 400 naming it (core/input.ts). */
export const flag = (a: RestArgs, name: string, def: boolean) => readFlag(name, a.args[name], def);
/** A comma-separated string or an array, as a list; absent or empty → undefined. */
export const list = (v: unknown): unknown[] | undefined =>
  v === undefined || v === '' ? undefined : Array.isArray(v) ? v : String(v).split(',');

/** A per-site error of a batch ability, answered as the single route's own error. */
export function firstError(r: { errors?: Array<{ identifier: number | string; code: string; message: string; status?: number }> }): void {
  const e = r.errors?.[0];
  if (e) throw new ServiceError(e.code, e.message, e.status ?? 502, {}, { subject: { kind: 'site', ref: e.identifier } });
}

export const MAX_BATCH = 100;

type BatchRows = { create?: RestRoute; update: RestRoute; delete: RestRoute };

/** Items of one batch body: create/update/delete and any action lists, counted for the 100-item limit. */
export function batchItems(args: Record<string, unknown>, keys: readonly string[]): number {
  return keys.reduce((n, k) => n + (Array.isArray(args[k]) ? (args[k] as unknown[]).length : args[k] === undefined ? 0 : 1), 0);
}

/**
 * create[] / update[] / delete[] in one request, and per-site action lists (`actions`: sync[], check[] … of site
 * ids, each running that site's route): each item runs the single route's row and answers its body, or {id, error}
 * — one item's failure never fails the batch. Phases run in that order. A key the batch does not know is refused
 * (400, naming it), never skipped (upstream counts update/delete and runs neither).
 */
export function batch(rows: BatchRows, idParam: string, actions: Readonly<Record<string, RestRoute>> = {}) {
  const phaseKeys = ['create', 'update', 'delete', ...Object.keys(actions)];
  const shape: BatchShape = { rows, actions };
  return Object.assign(
    async (a: RestArgs, run: RowRunner) => {
      const unknown = Object.keys(a.args).filter((k) => !phaseKeys.includes(k) && !k.startsWith('_'));
      if (unknown.length) {
        throw new ServiceError(
          'rest_invalid_param',
          `Unknown batch operation(s): ${unknown.join(', ')}. This batch takes: ${phaseKeys.join(', ')}.`,
          400,
          { params: Object.fromEntries(unknown.map((k) => [k, 'Unknown batch operation.'])) },
        );
      }
      const list = (k: string): unknown[] =>
        Array.isArray(a.args[k]) ? (a.args[k] as unknown[]) : a.args[k] === undefined ? [] : [a.args[k]];
      if (batchItems(a.args, phaseKeys) > MAX_BATCH) {
        throw new ServiceError('svc_rest_request_entity_too_large', `Unable to accept more than ${MAX_BATCH} items for this request.`, 413);
      }
      const out: Record<string, unknown[]> = {};
      for (const phase of phaseKeys) {
        const items = list(phase);
        if (!items.length && a.args[phase] === undefined) continue;
        const row = phase in actions ? actions[phase] : rows[phase as keyof BatchRows];
        if (!row) throw new ServiceError('svc_invalid_input', `This batch route has no ${phase} operation.`, 400);
        const byId = phase !== 'create' && phase !== 'update';
        // An item is authorised as the route it stands for: a read item (plugins[], security[], …) needs what its GET
        // needs, whatever the batch's own POST — a write-only key reads through a batch no more than directly.
        const method = row.methods.includes(a.method) ? a.method : row.methods[0]!;
        out[phase] = await Promise.all(
          items.map(async (item) => {
            const obj = item && typeof item === 'object' && !Array.isArray(item) ? { ...(item as Record<string, unknown>) } : {};
            const id = phase === 'create' ? 0 : byId ? item : obj.id;
            const idNum = typeof id === 'number' ? id : Number(id);
            if (phase !== 'create' && !(Number.isInteger(idNum) && idNum > 0)) {
              return { id: 0, error: new ServiceError('svc_invalid_input', `A ${phase} item needs a numeric id.`, 400).toBody() };
            }
            delete obj.id;
            try {
              return await run(row, {
                ...a,
                method,
                params: phase === 'create' ? {} : { [idParam]: String(idNum) },
                args: byId ? {} : obj,
              });
            } catch (e) {
              return { id: idNum, error: toServiceError(e).toBody() };
            }
          }),
        );
      }
      return out;
    },
    { shape },
  );
}
