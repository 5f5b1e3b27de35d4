// The ability: the unit every door serves. One definition gives the MCP tool, the abilities-door entry,
// the JSON Schemas in schemas/ and (through the route table) the REST v2 routes.
import type { z } from 'zod';
import type { Principal } from './principal.js';
import type { Services } from '../services/index.js';

export interface Annotations {
  readonly: boolean;
  destructive: boolean;
  idempotent: boolean;
  /** MCP openWorldHint: the ability talks to child sites outside this process. */
  openWorld: boolean;
}

export type Category = 'svc-sites' | 'svc-tags' | 'svc-batch' | 'svc-clients' | 'svc-costs' | 'svc-users' | 'svc-posts' | 'svc-monitors';
export type Toolset = 'sites' | 'plugins' | 'tags' | 'users' | 'posts' | 'costs' | 'clients' | 'jobs' | 'monitors';
export type ModuleName = 'logs' | 'cost-tracker';

export interface ProgressReport { done: number; total: number; message?: string }

export interface AbilityContext extends Services {
  principal: Principal;
  /** Aborted when the caller goes away or cancels (MCP notifications/cancelled). */
  signal?: AbortSignal;
  /** Awaited, so that a transport sends progress before the result. */
  progress?: (p: ProgressReport) => void | Promise<void>;
}

export interface Ability<I extends z.ZodObject = z.ZodObject, O extends z.ZodType = z.ZodType> {
  name: string;
  label: string;
  description: string;
  category: Category;
  toolset: Toolset;
  input: I;
  output: O;
  annotations: Annotations;
  /**
   * The spec lists some read-only abilities (get-site, get-tag, ...) and delete-tag as POST while the
   * WordPress method rule (annotations) says GET / DELETE: those accept POST too.
   */
  acceptsPost?: boolean;
  /**
   * Upstream's names for input fields (`{ adminpassword: 'admin_password' }`): accepted on every door and renamed
   * before validation, so that clients written for the upstream product work unchanged. Not in the JSON Schema.
   */
  aliases?: Readonly<Record<string, string>>;
  /** Keys clients send that mean nothing here, accepted and set aside where upstream's schema is open (user_confirmed). */
  ignores?: readonly string[];
  /** The module that must be on for the ability to run (501 svc_module_not_available otherwise). */
  module?: ModuleName;
  execute(input: z.output<I>, ctx: AbilityContext): Promise<z.input<O>> | z.input<O>;
}

/**
 * Every input is strict: a field the ability does not know is refused with its name (WordPress's "is not a valid
 * property of Object"), never silently dropped as zod objects otherwise do.
 */
export function defineAbility<I extends z.ZodObject, O extends z.ZodType>(a: Ability<I, O>): Ability<I, O> {
  return { ...a, input: a.input.strict() as unknown as I };
}

/** The HTTP method WordPress derives from the annotations (abilities reference §1.3). */
export function annotationMethod(a: Annotations): 'GET' | 'POST' | 'DELETE' {
  if (a.readonly) return 'GET';
  if (a.destructive && a.idempotent) return 'DELETE';
  return 'POST';
}

export function allowedMethods(a: Ability): string[] {
  const m = annotationMethod(a.annotations);
  return a.acceptsPost && m !== 'POST' ? [m, 'POST'] : [m];
}
