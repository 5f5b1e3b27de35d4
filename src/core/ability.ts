// The ability: the unit every door serves. One definition gives the MCP tool, the abilities-door entry,
// the JSON Schemas in schemas/ and (through the route table) the REST v2 routes.
import type { z } from 'zod';
import type { Principal } from './principal.js';

export interface Annotations {
  readonly: boolean;
  destructive: boolean;
  idempotent: boolean;
  /** MCP openWorldHint: the ability talks to child sites outside this process. */
  openWorld: boolean;
  /** Administrators only (dashboard users and API keys): refused to anyone else, and not offered to them on MCP. */
  admin?: boolean;
  /**
   * A write that acts only on the sites it names or selects (sync, updates, plugins, posts…), each within the caller's
   * scope: managers and scoped keys may run it. A write not marked so is dashboard-wide configuration, refused to them.
   */
  siteAction?: boolean;
}

export type Category =
  | 'svc-sites'
  | 'svc-tags'
  | 'svc-batch'
  | 'svc-clients'
  | 'svc-costs'
  | 'svc-users'
  | 'svc-posts'
  | 'svc-pages'
  | 'svc-settings'
  | 'svc-updates'
  | 'svc-monitors'
  | 'svc-notifications'
  | 'svc-vulnerabilities';
/** Groups of MCP tools a client can ask for (`sitefleet mcp --toolsets sites,tags`). */
export const TOOLSETS = [
  'sites',
  'plugins',
  'tags',
  'users',
  'posts',
  'costs',
  'clients',
  'jobs',
  'pages',
  'settings',
  'updates',
  'monitors',
  'notifications',
  'vulnerabilities',
  'admin-login',
] as const;
export type Toolset = (typeof TOOLSETS)[number];
/** Toolsets MCP offers only when a client names them (`--toolsets admin-login`): off by default. */
export const OPT_IN_TOOLSETS: readonly Toolset[] = ['admin-login'];
export type ModuleName = 'logs' | 'cost-tracker';

export interface ProgressReport {
  done: number;
  total: number;
  message?: string;
}

/** What a door knows of one call, whatever the ability: who asks, when to stop, where progress goes. */
export interface CallContext {
  principal: Principal;
  /** Aborted when the caller goes away or cancels (MCP notifications/cancelled). */
  signal?: AbortSignal;
  /** Awaited, so that a transport sends progress before the result. */
  progress?: (p: ProgressReport) => void | Promise<void>;
}

/**
 * An ability over a context C: the call (CallContext) plus whatever the layer above core hands every ability —
 * `abilities/context.ts` binds C to the services, so core never imports a higher layer.
 */
export interface Ability<
  I extends z.ZodObject = z.ZodObject,
  O extends z.ZodType = z.ZodType,
  C extends CallContext = CallContext,
  N extends string = string,
> {
  name: N;
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
  /**
   * A non-destructive ability that MCP still confirms by elicitation (as destructive ones are) when its dry-run preview
   * says so — e.g. an update run that spans more than one site. The ability takes dry_run and confirm.
   */
  confirmPreview?: (preview: unknown) => boolean;
  /** The module that must be on for the ability to run (501 svc_module_not_available otherwise). */
  module?: ModuleName;
  /**
   * A read-only ability whose input can make it a write (`refresh: true` syncs the sites first: child calls, store
   * writes, events): such a call needs what a write needs, and the registry refuses a read-only caller (a read key, a
   * viewer, a read-only MCP session) with 403 saying `why` — read-only callers never cause a write or an outgoing call.
   */
  writesWhen?: { test: (input: z.output<I>) => boolean; why: string };
  execute(input: z.output<I>, ctx: C): Promise<z.input<O>> | z.input<O>;
}

/**
 * Every input is strict: a field the ability does not know is refused with its name (WordPress's "is not a valid
 * property of Object"), never silently dropped as zod objects otherwise do.
 */
export function defineAbility<I extends z.ZodObject, O extends z.ZodType, C extends CallContext, N extends string>(
  a: Ability<I, O, C, N>,
): Ability<I, O, C, N> {
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
