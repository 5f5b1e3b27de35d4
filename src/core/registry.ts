// The ability registry: the one place a call is validated, permitted and executed, whatever door it came
// through. JSON Schemas are generated once per ability and cached (never per request).
import { z } from 'zod';
import { annotationMethod, type Ability, type CallContext, type ModuleName, type ProgressReport } from './ability.js';
import { ServiceError, toServiceError } from './errors.js';
import { oneValue, validateInput, type JsonSchema } from './input.js';
import { assertMayRun, mayWrite, scopeOf, type Principal } from './principal.js';
import { withScope } from './scope.js';
export type { CallOrigin } from './principal.js';
import { assertStorableInput } from './storable-text.js';
import { log } from '../log.js';

/**
 * Every answer checked against the ability's output schema before any door sees it (the test suites turn it on, so a
 * view that drifts from its schema fails the test that produced it; a server need not pay for it).
 */
const CHECK_OUTPUTS = process.env.SITEFLEET_CHECK_OUTPUTS === '1';

export interface RunOptions {
  principal: Principal;
  /** WordPress-style string coercion (abilities and REST doors; `'upstream'`: REST, which also reads "yes"/"no"). */
  coerce: boolean | 'upstream';
  /** The HTTP method a key's permission is checked against; defaults to the ability's own (§1.3 rule). */
  method?: string;
  signal?: AbortSignal;
  progress?: (p: ProgressReport) => void | Promise<void>;
}

// ---- the audit log's hook (issue 32): every call of an ability that is not read-only is recorded once, here ----

/** Where the registry records calls that may change something (domain/audit.ts), with their outcome. */
export interface AuditSink {
  called(a: Ability, input: unknown, opts: RunOptions, error: ServiceError | null): Promise<void>;
}

/** A call that ran but could not be recorded (the store refused the write) is logged, and its answer still given. */
function auditFailed(a: Ability, e: unknown): void {
  log('error', 'audit entry not recorded', { ability: a.name, err: String((e as Error)?.message ?? e) });
}

/** zod writes the safe-integer range into every integer; those bounds say nothing and read as noise. */
export function dropSafeIntBounds(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(dropSafeIntBounds);
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  if (o.minimum === Number.MIN_SAFE_INTEGER) delete o.minimum;
  if (o.maximum === Number.MAX_SAFE_INTEGER) delete o.maximum;
  Object.values(o).forEach(dropSafeIntBounds);
}

export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const s = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  delete s.$schema;
  dropSafeIntBounds(s);
  return s;
}

/**
 * Upstream field names renamed to ours (input.ts oneValue: the same value under both names is fine, an empty one gives
 * way to the other, two different values are refused, naming both).
 */
export function renameAliases(a: Ability, raw: unknown): unknown {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  if (a.ignores?.some((k) => k in (raw as object))) {
    raw = Object.fromEntries(Object.entries(raw as Record<string, unknown>).filter(([k]) => !a.ignores!.includes(k)));
  }
  if (!a.aliases) return raw;
  const out: Record<string, unknown> = { ...(raw as Record<string, unknown>) };
  for (const [alias, name] of Object.entries(a.aliases)) {
    if (!(alias in out)) continue;
    const v =
      name in out
        ? oneValue([
            [name, out[name]],
            [alias, out[alias]],
          ])
        : out[alias];
    delete out[alias];
    out[name] = v;
  }
  return out;
}

/**
 * The input schema as the abilities discovery document serves it: with the upstream names the ability accepts
 * (`aliases`, typed as the field they stand for; a required field may come under either name) and the keys it sets
 * aside (`ignores`), so that a client validating its input against the discovered schema does not refuse them.
 * (The registry validates with the plain schema, after renaming; the MCP tool list leaves these out for size.)
 */
export function withUpstreamNames(a: Pick<Ability, 'aliases' | 'ignores'>, input: JsonSchema): JsonSchema {
  if (!a.aliases && !a.ignores) return input;
  const s: JsonSchema = structuredClone(input);
  const props = (s.properties ??= {});
  const required = new Set(s.required ?? []);
  const either: JsonSchema[] = [];
  for (const [alias, name] of Object.entries(a.aliases ?? {})) {
    const target = props[name];
    if (!target || alias in props) continue;
    props[alias] = { ...target, description: `Alias of ${name} (upstream's name).`, 'x-alias-of': name };
    if (required.delete(name)) either.push({ anyOf: [{ required: [name] }, { required: [alias] }] });
  }
  for (const key of a.ignores ?? []) if (!(key in props)) props[key] = { description: 'Accepted for upstream clients, and ignored.' };
  if (s.required) s.required = s.required.filter((n) => required.has(n));
  if (s.required?.length === 0) delete s.required;
  if (either.length) s.allOf = [...((s.allOf as JsonSchema[] | undefined) ?? []), ...either];
  return s;
}

/** What the registry itself needs of the services it hands to abilities. */
export interface RegistryServices {
  settings: { assertModule(m: ModuleName): void };
  audit?: AuditSink;
}

export class Registry<S extends RegistryServices = RegistryServices> {
  private readonly byName = new Map<string, Ability>();
  private readonly schemaCache = new Map<string, { input: JsonSchema; output: JsonSchema }>();

  constructor(
    readonly abilities: readonly Ability[],
    private readonly services: S,
  ) {
    for (const a of abilities) {
      if (this.byName.has(a.name)) throw new Error(`Ability ${a.name} is defined twice.`);
      this.byName.set(a.name, a);
    }
  }

  get(name: string): Ability | undefined {
    return this.byName.get(name);
  }

  /** Runs an ability by name (abilities/index.ts gives this its types: the input and output of that ability). */
  call(name: string, rawInput: unknown, opts: RunOptions): Promise<unknown> {
    const a = this.byName.get(name);
    if (!a) return Promise.reject(new ServiceError('svc_ability_not_found', `No ability named ${name}.`, 404));
    return this.run(a, rawInput, opts);
  }

  /**
   * Runs `fn` as `principal` would see the fleet (its scope): for what a door answers from the services without an
   * ability, such as MCP completions, which must suggest nothing the principal could not read.
   */
  within<T>(principal: Principal, fn: () => T): T {
    return withScope(scopeOf(principal), fn);
  }

  schemas(a: Ability): { input: JsonSchema; output: JsonSchema } {
    let s = this.schemaCache.get(a.name);
    if (!s) {
      s = { input: jsonSchemaOf(a.input, 'input'), output: jsonSchemaOf(a.output, 'output') };
      this.schemaCache.set(a.name, s);
    }
    return s;
  }

  /** 501 svc_module_not_available when the ability belongs to a module that is off. */
  assertModule(a: Pick<Ability, 'module'>): void {
    if (a.module) this.services.settings.assertModule(a.module);
  }

  /**
   * Runs a call. One that may change something — an ability that is not read-only, or a read-only one whose input asks
   * it to write (writesWhen: a refresh) — is recorded in the audit log with its outcome, refusals included.
   */
  async run(a: Ability, rawInput: unknown, opts: RunOptions): Promise<unknown> {
    const audit = this.services.audit;
    const writes = { now: !a.annotations.readonly };
    if (!audit || (a.annotations.readonly && !a.writesWhen)) return this.runChecked(a, rawInput, opts, writes);
    let result: unknown;
    try {
      result = await this.runChecked(a, rawInput, opts, writes);
    } catch (e) {
      const err = e instanceof ServiceError ? e : new ServiceError('svc_internal_error', 'Internal error.', 500);
      if (writes.now) await audit.called(a, rawInput, opts, err).catch((x: unknown) => auditFailed(a, x));
      throw e;
    }
    if (writes.now) await audit.called(a, rawInput, opts, null).catch((x: unknown) => auditFailed(a, x));
    return result;
  }

  /** Validate, check permission and module, execute. Throws ServiceError. `writes.now`: whether the call may write. */
  private async runChecked(a: Ability, rawInput: unknown, opts: RunOptions, writes: { now: boolean }): Promise<unknown> {
    const raw = renameAliases(a, rawInput);
    assertStorableInput(a.name, raw);
    const input = validateInput(a.name, a.input, this.schemas(a).input, raw, { coerce: opts.coerce });
    if (a.writesWhen?.test(input)) writes.now = true;
    assertMayRun(opts.principal, a.annotations, opts.method ?? annotationMethod(a.annotations), a);
    if (a.writesWhen?.test(input) && !mayWrite(opts.principal)) throw new ServiceError('svc_permission_denied', a.writesWhen.why, 403);
    this.assertModule(a);
    // The services reached through the prototype: copying their few dozen fields was a large part of a quick call.
    const ctx = Object.create(this.services) as S & CallContext;
    ctx.principal = opts.principal;
    ctx.signal = opts.signal;
    ctx.progress = opts.progress;
    let result: unknown;
    try {
      // The call sees only its principal's scope: every site lookup, list, count and fan-out it makes (domain/access.ts).
      result = await withScope(scopeOf(opts.principal), () => a.execute(input, ctx));
    } catch (e) {
      throw toServiceError(e, { ability: a.name });
    }
    if (opts.principal.kind === 'user' && opts.principal.role === 'client') result = withoutAgencyNotes(result);
    if (CHECK_OUTPUTS) {
      const checked = a.output.safeParse(result);
      if (!checked.success)
        throw toServiceError(new Error(`${a.name} answered outside its output schema: ${z.prettifyError(checked.error)}`), {
          ability: a.name,
        });
    }
    return result;
  }
}

/** What an agency writes about a client and its sites for itself: never shown to the client's own users. */
const AGENCY_ONLY = new Set(['note', 'notes', 'admin_username']);

/**
 * A result as a `client` user sees it: the agency's notes and the sites' admin account names emptied (the answer keeps
 * its shape), at any depth. Copies only what it changes: results may be cached objects shared with other callers.
 */
export function withoutAgencyNotes(v: unknown, depth = 0): unknown {
  if (v === null || typeof v !== 'object' || depth > 16) return v;
  if (Array.isArray(v)) {
    let out: unknown[] | null = null;
    v.forEach((x, i) => {
      const y = withoutAgencyNotes(x, depth + 1);
      if (y !== x) (out ??= v.slice())[i] = y;
    });
    return out ?? v;
  }
  let out: Record<string, unknown> | null = null;
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const y = AGENCY_ONLY.has(k) && typeof x === 'string' && x !== '' ? '' : withoutAgencyNotes(x, depth + 1);
    if (y !== x) (out ??= { ...(v as Record<string, unknown>) })[k] = y;
  }
  return out ?? v;
}
