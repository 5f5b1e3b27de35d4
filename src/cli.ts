#!/usr/bin/env node
// sitefleet command line: serve | mcp | keys | users | modules | migrate | backup | restore | child-sim | demo | openapi.
import { existsSync } from 'node:fs';
import type { ParseArgsConfig } from 'node:util';
import { join, resolve } from 'node:path';
import { loadConfig, type Config } from './config.js';
import { USER_ROLES, type KeyPermission, type UserRole } from './core/principal.js';
import { normalScope, type Scope } from './core/scope.js';
import { wpBoolean } from './core/input.js';
import type { Services } from './domain/index.js';
import { MODULES } from './domain/settings.js';
import { StoreCorruptError } from './store/durable-file.js';
import { liveHolders } from './domain/leases.js';
import { log } from './log.js';
import { TOOLSETS, type ModuleName, type Toolset } from './core/ability.js';
import { closestFlag, parseCommand, UsageError } from './cli-args.js';

// The heavy modules (the doors, the services, the MCP SDK, the PostgreSQL driver) load with the command that needs them:
// `--help`, a usage error or `keys list` does not pay for what `serve` needs (each import costs CPU at every start).
const storeLocation = async (fleet: Pick<Config, 'dataDir' | 'databaseUrl'>): Promise<string> =>
  (await import('./store/open.js')).storeLocation(fleet);

const DATA_DIR = { 'data-dir': { type: 'string' }, 'database-url': { type: 'string' } } as const;
const SERVE_OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  ...DATA_DIR,
  'rest-prefix': { type: 'string' },
  'abilities-prefix': { type: 'string' },
  'child-concurrency': { type: 'string' },
  'allow-private-sites': { type: 'boolean' },
  'allowed-hosts': { type: 'string' },
  'trust-proxy': { type: 'string' },
  'no-console': { type: 'boolean' },
  'monitor-interval': { type: 'string' },
  'package-source': { type: 'string' },
  'oauth-issuer': { type: 'string' },
  'oauth-audience': { type: 'string' },
  'heap-growth-percent': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const HELP: Record<string, string> = {
  main: `sitefleet — manage a fleet of WordPress child sites.

Usage: sitefleet <command> [options]

Commands:
  serve      REST v2, abilities v1 and MCP over HTTP on one port
  mcp        MCP over stdio (for assistants on this machine)
  keys       create | list | revoke API keys (Bearer tokens)
  users      create | list | delete users (HTTP Basic with an application password)
  modules    list | enable | disable optional modules (logs, cost-tracker)
  migrate    create/migrate the PostgreSQL schema, or move a data dir's fleet into PostgreSQL
  backup     write the whole fleet (data dir or PostgreSQL) to one file, consistent while serve runs
  restore    put a backup into a data dir or a PostgreSQL database
  child-sim  run the child-site simulator (simulated WordPress sites with the child plugin)
  demo       simulator with 25 sites + the service, registered and synced
  openapi    print the OpenAPI 3.1 document of the REST API (JSON)
  vulnerabilities  import a vulnerability feed file (Wordfence, WPVulnerability) and match the fleet
  audit      verify the audit log's hash chain

Run "sitefleet <command> --help" for the options of a command.`,
  serve: `Usage: sitefleet serve [--host 127.0.0.1] [--port 8787] [--data-dir ./data]
                       [--rest-prefix /wp-json/svc/v2] [--abilities-prefix /wp-json/wp-abilities/v1]
                       [--child-concurrency 32] [--allow-private-sites] [--allowed-hosts a.example,b.example]
                       [--no-console] [--monitor-interval SECONDS] [--trust-proxy 127.0.0.1,10.0.0.0/8,::1]
                       [--package-source URL] [--database-url postgres://user:pass@host/db]
                       [--oauth-issuer URL] [--oauth-audience URL] [--heap-growth-percent 50]

Environment: SITEFLEET_HOST, SITEFLEET_PORT, SITEFLEET_DATA_DIR, SITEFLEET_DATABASE_URL (flags win).
With a database URL the fleet lives in PostgreSQL (run "sitefleet migrate" first) and several serve processes
can share it; without one it lives in the data dir's files.
--allow-private-sites lets sitefleet connect to loopback and private-network sites (refused by default).
--trust-proxy (SITEFLEET_TRUST_PROXY) names the reverse proxies (addresses or CIDRs) whose X-Forwarded-For is
believed: the login throttle and the request log then use the client's address. None by default.
The web console is at /console (log in with a user and its application password); --no-console turns it off.
Uptime monitors check every connected site on their interval (settings: update-monitor-settings-v1);
--monitor-interval (SITEFLEET_MONITOR_INTERVAL, 1–86400 s) overrides every monitor's interval.
--package-source (SITEFLEET_PACKAGE_SOURCE) is the plugin and theme directory installs and searches use
(default https://api.wordpress.org/; a stand-in with its info/1.2 URL shapes works too).
--oauth-issuer (SITEFLEET_OAUTH_ISSUER) lets /mcp take OAuth access tokens (JWT) from that authorization server
beside API keys, and serves /.well-known/oauth-protected-resource; --oauth-audience (SITEFLEET_OAUTH_AUDIENCE) is the
audience tokens must name (default: this server's /mcp URL, SITEFLEET_PUBLIC_URL's behind a proxy).
--heap-growth-percent (SITEFLEET_HEAP_GROWTH_PERCENT, 0–1000, default 50) is how far past what survived its last full
collection the heap may grow before the next: memory against collector time; 0 leaves it to V8 (about 300 on a busy server).
On a fleet without any user it creates an administrator (and an API key when there is none) and prints them once.`,
  mcp: `Usage: sitefleet mcp [--data-dir ./data | --database-url postgres://…] [--toolsets sites,tags,...] [--read-only]
                     [--output-schemas] [--allow-private-sites] [--package-source URL]
       sitefleet mcp --server https://fleet.example/mcp [--toolsets sites,tags,...] [--read-only] [--output-schemas]

Serves MCP over stdio. --output-schemas gives each tool its output schema (typed results; about twice the list). Safe to run beside "sitefleet serve" on the same data dir, or on the same database with
--database-url postgres://… (SITEFLEET_DATABASE_URL); keys, users and modules take --database-url too.
--server (SITEFLEET_SERVER_URL) relays stdio to a remote sitefleet's /mcp instead of opening a fleet here; its API
key is read from SITEFLEET_API_KEY (never a flag: argv is visible to every user of the machine).
Environment: SITEFLEET_MCP_TOOLSETS and SITEFLEET_MCP_READ_ONLY (true/false) stand in for the two flags;
SITEFLEET_HEAP_GROWTH_PERCENT as for serve.`,
  keys: `Usage: sitefleet keys create --name NAME [--permissions read|write|read_write|delete] [--admin] [SCOPE]
                            [--allow-tools T1,T2] [--deny-tools T3] [--data-dir DIR | --database-url URL]
       sitefleet keys tools ID [--allow-tools T1,T2] [--deny-tools T3] [--data-dir DIR | --database-url URL]
       sitefleet keys list [--data-dir DIR | --database-url URL]
       sitefleet keys revoke ID [--data-dir DIR | --database-url URL]
       sitefleet keys set-scope ID [SCOPE] [--data-dir DIR | --database-url URL]
SCOPE: --clients IDS --tags IDS --sites IDS (comma-separated IDs): the key sees and acts on only those sites; none:
the whole fleet.

"create" prints the new bearer token alone on the last line of stdout (shown once, stored hashed).`,
  users: `Usage: sitefleet users create --name NAME [--role administrator|manager|viewer|client] [SCOPE] [--data-dir DIR | --database-url URL]
       sitefleet users list [--data-dir DIR | --database-url URL]
       sitefleet users delete NAME [--data-dir DIR | --database-url URL]
       sitefleet users set-role NAME --role administrator|manager|viewer|client [SCOPE] [--data-dir DIR | --database-url URL]
       sitefleet users set-scope NAME [SCOPE] [--data-dir DIR | --database-url URL]
SCOPE: --clients IDS --tags IDS --sites IDS (comma-separated IDs): the user sees and acts on only those sites; none:
the whole fleet. A client user names exactly one client (--clients ID).

"create" prints the new application password alone on the last line of stdout (shown once, stored hashed).`,
  openapi: `Usage: sitefleet openapi [--rest-prefix /wp-json/svc/v2]

Prints the OpenAPI 3.1 document of the REST v2 API, as GET <rest prefix>/openapi.json serves it (docs/openapi.json
is this output for the default prefix).`,
  migrate: `Usage: sitefleet migrate [--database-url postgres://…]
       sitefleet migrate --from ./data --to postgres://… [--force]

The first form creates the PostgreSQL schema or migrates it to this version (SITEFLEET_DATABASE_URL works too).
The second copies a data dir's fleet (sites, secrets, site data, keys, users, tags, clients, costs, jobs,
settings) into PostgreSQL in one transaction and checks the counts; a database that already holds a fleet is
refused unless --force (which replaces it). A data dir that a running "serve" holds (its leases show it) is
refused too, unless --force: stop the processes using the data dir first.`,
  backup: `Usage: sitefleet backup --to FILE [--data-dir DIR | --database-url postgres://…]

Writes the whole fleet (sites, secrets, site data, keys, users, tags, clients, costs, jobs, settings, monitors) to FILE:
JSON lines, one format for both engines, mode 0600 (it holds the fleet's secrets). Safe while "serve" runs: a data
dir is snapshotted under its commit lock, a database in one transaction. FILE must not exist yet.`,
  restore: `Usage: sitefleet restore --from FILE [--data-dir DIR | --database-url postgres://…] [--force]

Puts a backup (from "sitefleet backup", of either engine) into a data dir or a database. A target that holds a fleet
is refused unless --force: a data dir is then moved aside (DIR.replaced-<time>, never deleted), a database's fleet
replaced in one transaction. Refused while a "serve" runs on the target (stop it first). A cut-off file restores
nothing.`,
  audit: `Usage: sitefleet audit verify [--data-dir DIR | --database-url URL]

Walks the audit log's hash chain from its anchor to its head. Exits 0 when it is whole; otherwise names the first
entry that was edited, removed or slipped in, and exits 1.`,
  modules: `Usage: sitefleet modules list|enable NAME|disable NAME [--data-dir DIR | --database-url URL]

Modules: ${Object.keys(MODULES).join(', ')}. A running server follows the change at once.`,
};

type Where = { 'data-dir'?: string; 'database-url'?: string };

/** The command being run (main sets it): argument errors name it. */
let command = '';
/** Positional words a command takes (keys revoke ID, users delete NAME, modules enable NAME, audit verify); the others take none. */
const POSITIONALS: Record<string, number> = { keys: 2, users: 2, modules: 2, audit: 1 };

function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T) {
  return parseCommand(command, args, options, { positionals: POSITIONALS[command] ?? 0 });
}

/**
 * The store a fleet command works on (--data-dir beats an exported SITEFLEET_DATABASE_URL; --database-url beats both). A command with
 * `existing` (one that only reads, or acts on something that must already be there) refuses a data dir that is not one,
 * so a mistyped --data-dir is an error instead of a new, empty fleet.
 */
function fleetConfig(where: Where, existing: boolean): Config {
  const cfg = loadConfig({ dataDir: where['data-dir'], databaseUrl: where['database-url'] });
  if (existing && !cfg.databaseUrl) requireDataDir(cfg.dataDir);
  return cfg;
}

function requireDataDir(dir: string): void {
  if (existsSync(join(dir, 'meta.json'))) return;
  const what = existsSync(dir) ? 'is not a sitefleet data dir (no meta.json)' : 'does not exist';
  throw new Error(`${dir} ${what}. Check --data-dir (or SITEFLEET_DATA_DIR); "sitefleet serve" creates a data dir on its first start.`);
}

/** Runs `fn` on the fleet's services; `existing`: the command needs a fleet that is there already (see fleetConfig). */
async function withServices<R>(where: Where & { existing?: boolean }, fn: (s: Services) => Promise<R>): Promise<R> {
  const { openServices, closeServices } = await import('./domain/index.js');
  const services = await openServices(fleetConfig(where, where.existing === true));
  try {
    return await fn(services);
  } finally {
    await closeServices(services);
  }
}

/**
 * First start: a fleet without any user gets an administrator (whatever keys exist: a key made with "keys create" before
 * the first serve must not leave the console without a login), and a fleet without any key gets one.
 */
async function bootstrap(s: Services, url: string, cfg: Config, withConsole: boolean): Promise<void> {
  if (s.auth.listUsers().length) return;
  let password: string;
  try {
    ({ password } = await s.auth.createUser('admin', 'administrator'));
  } catch (e) {
    if ((e as { code?: string }).code === 'svc_user_exists') return; // another process made it first
    throw e;
  }
  const token = s.auth.listKeys().length ? null : (await s.auth.createKey('default', 'read_write')).token;
  const what = token ? 'an administrator and an API key' : 'an administrator (API keys exist already: "sitefleet keys list")';
  const out = [
    '',
    `First start: created ${what}. They are shown only now; store them safely.`,
    `  user:     admin`,
    `  password: ${password}`,
    ...(token ? [`  API key:  ${token}`] : []),
    '',
    'Try:',
    ...(token ? [`  curl -H "Authorization: Bearer ${token}" ${url}${cfg.restPrefix}/sites`] : []),
    `  curl -u "admin:${password}" ${url}${cfg.abilitiesPrefix}/abilities/svc/list-sites-v1/run`,
    ...(token ? [`  MCP over HTTP: ${url}/mcp with header "Authorization: Bearer ${token}"`] : []),
    ...(withConsole ? [`  Web console: ${url}/console (log in as admin with the password above)`] : []),
    '',
  ];
  process.stdout.write(out.join('\n') + '\n');
}

/**
 * `npm start --port=9000` runs the script without the flag: npm keeps it as its own setting and only says so in the
 * environment (npm_config_port). Run by npm, a serve flag found there is refused instead of silently ignored.
 */
function refuseFlagsNpmKept(flags: string[]): void {
  if (!process.env.npm_lifecycle_event) return;
  const kept = flags.find((f) => process.env[`npm_config_${f.replace(/-/g, '_')}`] !== undefined);
  if (kept) {
    throw new UsageError(
      `npm kept --${kept} for itself (it is not passed to sitefleet); put sitefleet's flags after --: npm start -- --${kept} VALUE`,
    );
  }
}

async function serve(args: string[]): Promise<void> {
  const { values } = parse(args, SERVE_OPTIONS);
  if (values.help) return void console.log(HELP.serve);
  refuseFlagsNpmKept(Object.keys(SERVE_OPTIONS));
  const cfg = loadConfig({
    host: values.host,
    port: values.port,
    dataDir: values['data-dir'],
    databaseUrl: values['database-url'],
    restPrefix: values['rest-prefix'],
    abilitiesPrefix: values['abilities-prefix'],
    childConcurrency: values['child-concurrency'],
    allowPrivateSites: values['allow-private-sites'],
    monitorIntervalS: values['monitor-interval'],
    packageSource: values['package-source'],
    trustProxy: values['trust-proxy'],
    oauthIssuer: values['oauth-issuer'],
    oauthAudience: values['oauth-audience'],
    heapGrowthPercent: values['heap-growth-percent'],
  });
  const withConsole = values['no-console'] !== true;
  const { boot } = await import('./app/boot.js');
  const { services, http, close } = await boot(cfg, {
    http: {
      allowedHosts: values['allowed-hosts']
        ?.split(',')
        .map((h) => h.trim())
        .filter(Boolean),
      console: withConsole,
    },
    monitoring: true,
  });
  // The growth is set once the fleet is loaded (app/heap.ts): loading 100,000 sites under it took five full
  // collections of a growing heap, about 120 ms more before the first answer than V8's own growth took.
  (await import('./app/heap.js')).applyHeapGrowth(cfg);
  await bootstrap(services, http!.url, cfg, withConsole);
  const where = await storeLocation(cfg);
  // One write: a reader that sees "listening on" sees the console's line with it.
  process.stdout.write(`sitefleet listening on ${http!.url} (data: ${where})\n${withConsole ? `web console: ${http!.url}/console\n` : ''}`);
  log('info', 'listening', { url: http!.url, data: where });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log('info', 'stopping', { signal });
    await close(10_000);
    log('info', 'stopped', { signal });
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

async function mcp(args: string[]): Promise<void> {
  const { values } = parse(args, {
    ...DATA_DIR,
    server: { type: 'string' },
    toolsets: { type: 'string' },
    'read-only': { type: 'boolean' },
    'output-schemas': { type: 'boolean' },
    'allow-private-sites': { type: 'boolean' },
    'package-source': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) return void console.log(HELP.mcp);
  const env = process.env;
  const toolsets = (values.toolsets ?? (env.SITEFLEET_MCP_TOOLSETS || undefined))
    ?.split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  const bad = toolsets?.find((t) => !TOOLSETS.includes(t as Toolset));
  if (bad) throw new UsageError(`Unknown toolset "${bad}". Toolsets: ${TOOLSETS.join(', ')}.`);
  let readOnly = values['read-only'] === true;
  if (!readOnly && (env.SITEFLEET_MCP_READ_ONLY ?? '') !== '') {
    const flag = wpBoolean(env.SITEFLEET_MCP_READ_ONLY);
    if (flag === undefined) throw new UsageError(`SITEFLEET_MCP_READ_ONLY must be true or false (got "${env.SITEFLEET_MCP_READ_ONLY}").`);
    readOnly = flag;
  }
  const server = values.server ?? (env.SITEFLEET_SERVER_URL || undefined);
  if (server !== undefined) return relay(server, values, toolsets, readOnly);
  const [{ boot }, { buildMcpServer }, { StdioServerTransport }] = await Promise.all([
    import('./app/boot.js'),
    import('./mcp/server.js'),
    import('@modelcontextprotocol/sdk/server/stdio.js'),
  ]);
  const cfg = loadConfig({
    dataDir: values['data-dir'],
    databaseUrl: values['database-url'],
    allowPrivateSites: values['allow-private-sites'],
    packageSource: values['package-source'],
  });
  const { services, registry, close } = await boot(cfg);
  (await import('./app/heap.js')).applyHeapGrowth(cfg); // once the fleet is loaded, as serve does
  const mcpServer = buildMcpServer(
    registry,
    { principal: { kind: 'local', name: 'stdio', readOnly }, toolsets, readOnly, outputSchemas: values['output-schemas'] === true },
    services,
  );
  const transport = new StdioServerTransport();
  transport.onclose = () => {
    void close().then(() => process.exit(0));
  };
  await mcpServer.connect(transport);
  // As the HTTP doors do per request: a message sees every write acknowledged (by any process) before it arrived.
  // In order: each message waits for a check that started after it (store.sync coalesces them).
  const deliver = transport.onmessage;
  transport.onmessage = (msg) => {
    void services.store
      .sync()
      .catch(() => {})
      .then(() => deliver?.(msg));
  };
  log('info', 'mcp stdio ready', { dataDir: services.config.dataDir });
}

/** `sitefleet mcp --server URL`: stdio relayed to a remote sitefleet (src/mcp/relay.ts). */
async function relay(
  server: string,
  values: {
    'data-dir'?: string;
    'database-url'?: string;
    'allow-private-sites'?: boolean;
    'package-source'?: string;
    'output-schemas'?: boolean;
  },
  toolsets: string[] | undefined,
  readOnly: boolean,
): Promise<void> {
  const local = (['data-dir', 'database-url', 'allow-private-sites', 'package-source'] as const).find((f) => values[f] !== undefined);
  if (local) throw new UsageError(`--${local} is for a fleet opened here; with --server the remote sitefleet has its own.`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new UsageError(`--server must be the URL of a sitefleet's /mcp endpoint (got "${server}").`);
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.hash)
    throw new UsageError(
      `--server must be an http:// or https:// URL without credentials or fragment (got "${server}"); the key goes in SITEFLEET_API_KEY.`,
    );
  const key = process.env.SITEFLEET_API_KEY ?? '';
  if (key === '') throw new UsageError('--server needs the API key in the environment variable SITEFLEET_API_KEY.');
  const headers: Record<string, string> = {};
  if (toolsets) headers['X-MCP-Toolsets'] = toolsets.join(',');
  if (readOnly) headers['X-MCP-Readonly'] = 'true';
  if (values['output-schemas'] === true) headers['X-MCP-Output-Schemas'] = 'true';
  const { startRelay } = await import('./mcp/relay.js');
  await startRelay({ url, key, headers }, () => process.exit(0));
  log('info', 'mcp stdio relay ready', { server: url.origin + url.pathname });
}

/** The scope flags of keys and users (--clients 1,2 --tags 3 --sites 4). */
const SCOPE_FLAGS = { clients: { type: 'string' }, tags: { type: 'string' }, sites: { type: 'string' } } as const;

/** A scope from its flags: each a comma-separated list of positive integer IDs (anything else is refused). */
function scopeFlags(v: { clients?: string; tags?: string; sites?: string }): Scope {
  const ids = (flag: string, text: string | undefined) => {
    if (text === undefined) return [];
    const parts = text.split(',').map((p) => p.trim());
    if (!parts.every((p) => /^[1-9]\d{0,15}$/.test(p))) throw new UsageError(`--${flag} takes comma-separated IDs (e.g. 1,2): "${text}".`);
    return parts.map(Number);
  };
  return { clients: ids('clients', v.clients), tags: ids('tags', v.tags), sites: ids('sites', v.sites) };
}

const scopeText = (sc: Scope | null | undefined) => {
  const n = normalScope(sc);
  return n ? `clients:${n.clients.join(',')} tags:${n.tags.join(',')} sites:${n.sites.join(',')}` : 'whole fleet';
};

async function keys(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, {
    ...DATA_DIR,
    ...SCOPE_FLAGS,
    name: { type: 'string' },
    permissions: { type: 'string' },
    admin: { type: 'boolean' },
    'allow-tools': { type: 'string' },
    'deny-tools': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  const [sub, arg] = positionals;
  // Tool lists: comma-separated ability names; "" clears a list (keys tools). They only narrow the key's permissions.
  const toolList = (v: string | undefined) =>
    v === undefined
      ? undefined
      : v
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean);
  const lists = { allow_tools: toolList(values['allow-tools']), deny_tools: toolList(values['deny-tools']) };
  if (values.help || !sub) return void console.log(HELP.keys);
  if ((sub === 'create' || sub === 'list') && arg !== undefined)
    throw new UsageError(`sitefleet keys ${sub}: unexpected argument "${arg}".\n\n${HELP.keys}`);
  await withServices({ ...values, existing: sub !== 'create' }, async (s) => {
    if (sub === 'create') {
      if (!values.name) throw new UsageError('keys create needs --name NAME.');
      const perm = (values.permissions ?? 'read_write') as KeyPermission;
      if (!['read', 'write', 'read_write', 'delete'].includes(perm))
        throw new UsageError('--permissions is read, write, read_write or delete.');
      // Tool names are checked against the registry; a key without lists does not pay for loading every ability.
      if (lists.allow_tools?.length || lists.deny_tools?.length) (await import('./abilities/index.js')).buildRegistry(s);
      const { key, token } = await s.auth.createKey(values.name, perm, {
        admin: values.admin === true,
        scope: scopeFlags(values),
        ...lists,
      });
      await s.audit.cli('keys create', {
        key_id: key.id,
        name: key.name,
        permissions: key.permissions,
        admin: key.admin,
        scope: key.scope,
        ...lists,
      });
      const kind = key.admin ? 'administrator API key' : 'API key';
      process.stdout.write(`Created ${kind} ${key.id} "${key.name}" (${key.permissions}). The token is shown once:\n${token}\n`);
    } else if (sub === 'list') {
      for (const k of s.auth.listKeys()) {
        const state = k.revoked ? 'revoked' : s.auth.keyEnded(k) ? 'expired' : 'active';
        const tools = `${k.allow_tools?.length ? `\tallow:${k.allow_tools.join(',')}` : ''}${k.deny_tools?.length ? `\tdeny:${k.deny_tools.join(',')}` : ''}`;
        process.stdout.write(
          `${k.id}\t${k.name}\t${k.permissions}${k.admin ? '\tadmin' : ''}\t${state}\t${scopeText(k.scope)}\t${k.created_at}${tools}\n`,
        );
      }
    } else if (sub === 'tools') {
      const id = Number(arg);
      if (!Number.isInteger(id) || id < 1) throw new UsageError('keys tools needs a numeric key ID.');
      if (lists.allow_tools === undefined && lists.deny_tools === undefined)
        throw new UsageError('keys tools needs --allow-tools or --deny-tools ("" clears a list).');
      (await import('./abilities/index.js')).buildRegistry(s);
      const k = await s.auth.updateKey(id, lists);
      await s.audit.cli('keys tools', { key_id: k.id, ...lists });
      const show = (l: string[] | null | undefined) => (l?.length ? l.join(',') : '-');
      process.stdout.write(`API key ${k.id} "${k.name}": allow ${show(k.allow_tools)}; deny ${show(k.deny_tools)}.\n`);
    } else if (sub === 'revoke') {
      const id = Number(arg);
      if (!Number.isInteger(id) || id < 1) throw new UsageError('keys revoke needs a numeric key ID.');
      const k = await s.auth.revokeKey(id);
      await s.audit.cli('keys revoke', { key_id: k.id });
      process.stdout.write(`Revoked API key ${k.id} "${k.name}".\n`);
    } else if (sub === 'set-scope') {
      const id = Number(arg);
      if (!Number.isInteger(id) || id < 1) throw new UsageError('keys set-scope needs a numeric key ID.');
      const k = await s.auth.updateKey(id, { scope: scopeFlags(values) });
      await s.audit.cli('keys set-scope', { key_id: k.id, scope: k.scope });
      process.stdout.write(`API key ${k.id} "${k.name}" now sees: ${scopeText(k.scope)}.\n`);
    } else {
      throw new UsageError(`Unknown keys command "${sub}".\n${HELP.keys}`);
    }
  });
}

async function users(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, {
    ...DATA_DIR,
    ...SCOPE_FLAGS,
    name: { type: 'string' },
    role: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  const [sub, arg] = positionals;
  if (values.help || !sub) return void console.log(HELP.users);
  if ((sub === 'create' || sub === 'list') && arg !== undefined)
    throw new UsageError(`sitefleet users ${sub}: unexpected argument "${arg}".\n\n${HELP.users}`);
  await withServices({ ...values, existing: sub !== 'create' }, async (s) => {
    if (sub === 'create') {
      if (!values.name) throw new UsageError('users create needs --name NAME.');
      const role = (values.role ?? 'administrator') as UserRole;
      if (!USER_ROLES.includes(role)) throw new UsageError(`--role is ${USER_ROLES.join(', ')}.`);
      const { user, password } = await s.auth.createUser(values.name, role, scopeFlags(values));
      await s.audit.cli('users create', { name: user.name, role: user.role, scope: user.scope });
      process.stdout.write(`Created ${user.role} "${user.name}". The application password is shown once:\n${password}\n`);
    } else if (sub === 'list') {
      for (const u of s.auth.listUsers()) process.stdout.write(`${u.id}\t${u.name}\t${u.role}\t${scopeText(u.scope)}\t${u.created_at}\n`);
    } else if (sub === 'delete') {
      if (!arg) throw new UsageError('users delete needs a user name.');
      const u = await s.auth.deleteUser(arg);
      await s.audit.cli('users delete', { name: u.name });
      process.stdout.write(`Deleted user "${u.name}".\n`);
    } else if (sub === 'set-role') {
      const role = values.role as UserRole | undefined;
      if (!arg || !role || !USER_ROLES.includes(role))
        throw new UsageError(`users set-role needs a user name and --role ${USER_ROLES.join('|')}.`);
      const scoped = values.clients !== undefined || values.tags !== undefined || values.sites !== undefined;
      const u = await s.auth.updateUser(arg, { role, ...(scoped ? { scope: scopeFlags(values) } : {}) });
      await s.audit.cli('users set-role', { name: u.name, role: u.role, scope: u.scope });
      const sees = normalScope(u.scope) ? ` (${scopeText(u.scope)})` : '';
      process.stdout.write(`User "${u.name}" is now ${u.role}${sees}; their console sessions ended.\n`);
    } else if (sub === 'set-scope') {
      if (!arg) throw new UsageError('users set-scope needs a user name.');
      const u = await s.auth.updateUser(arg, { scope: scopeFlags(values) });
      await s.audit.cli('users set-scope', { name: u.name, scope: u.scope });
      process.stdout.write(`User "${u.name}" now sees: ${scopeText(u.scope)}.\n`);
    } else {
      throw new UsageError(`Unknown users command "${sub}".\n${HELP.users}`);
    }
  });
}

async function modules(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { ...DATA_DIR, help: { type: 'boolean', short: 'h' } });
  const [sub, name] = positionals;
  if (values.help || !sub) return void console.log(HELP.modules);
  if (sub === 'list' && name !== undefined)
    throw new UsageError(`sitefleet modules list: unexpected argument "${name}".\n\n${HELP.modules}`);
  await withServices({ ...values, existing: sub === 'list' }, async (s) => {
    if (sub === 'list') {
      for (const m of Object.keys(MODULES) as ModuleName[])
        process.stdout.write(`${m}\t${s.settings.moduleOn(m) ? 'enabled' : 'disabled'}\n`);
      return;
    }
    if (sub !== 'enable' && sub !== 'disable') throw new UsageError(`Unknown modules command "${sub}".\n${HELP.modules}`);
    if (!name || !(name in MODULES)) throw new UsageError(`Name a module: ${Object.keys(MODULES).join(', ')}.`);
    await s.settings.setModule(name as ModuleName, sub === 'enable');
    await s.audit.cli(`modules ${sub}`, { module: name });
    process.stdout.write(`Module ${name} ${sub}d.\n`);
  });
}

async function migrateCommand(args: string[]): Promise<void> {
  const { values } = parse(args, {
    'database-url': { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    force: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) return void console.log(HELP.migrate);
  const pgUrl = (flag: string, v: string | undefined) => {
    if (!v || !/^postgres(ql)?:\/\/\S+$/.test(v)) throw new UsageError(`${flag} must be a postgres:// URL.\n${HELP.migrate}`);
    return v;
  };
  if (values.from !== undefined || values.to !== undefined) {
    if (!values.from) throw new UsageError(`--to needs --from DATA_DIR.\n${HELP.migrate}`);
    const to = pgUrl('--to', values.to);
    requireDataDir(resolve(values.from));
    if (values.force !== true)
      await refuseWhileServed({ dataDir: resolve(values.from), databaseUrl: null }, 'Copying it now would miss its next writes', '--force');
    const { copyLowdbToPg } = await import('./store/pg-migrate.js');
    const report = await copyLowdbToPg(resolve(values.from), to, values.force === true);
    process.stdout.write(`Copied ${resolve(values.from)} to ${await storeLocation({ dataDir: '', databaseUrl: to })}; counts checked:\n`);
    for (const r of report) process.stdout.write(`  ${r.kind.padEnd(10)} ${String(r.source).padStart(7)} → ${r.target}\n`);
    return;
  }
  const url = pgUrl('--database-url', values['database-url'] ?? process.env.SITEFLEET_DATABASE_URL);
  const { migratePg } = await import('./store/pg-migrate.js');
  const { from, to } = await migratePg(url);
  process.stdout.write(from === to ? `Schema is at format ${to}; nothing to do.\n` : `Schema migrated from format ${from} to ${to}.\n`);
}

/** Refuses while another process serves the fleet (its member lease is live): `what` says why that matters. */
async function refuseWhileServed(fleet: Pick<Config, 'dataDir' | 'databaseUrl'>, what: string, override?: string): Promise<void> {
  const { readLeases } = await import('./store/backup.js');
  const live = liveHolders(await readLeases(fleet));
  if (!live.length) return;
  const who = live.map((h) => `pid ${h.pid}`).join(', ');
  const wait = Math.ceil((Math.max(...live.map((h) => h.until)) - Date.now()) / 1000);
  throw new Error(
    `${await storeLocation(fleet)} is in use by a running sitefleet serve (${who}). ${what}: stop it first` +
      ` (a process that died lets go within ${wait} s)${override ? `, or add ${override} to go ahead anyway` : ''}.`,
  );
}

async function backupCommand(args: string[]): Promise<void> {
  const { values } = parse(args, { ...DATA_DIR, to: { type: 'string' }, help: { type: 'boolean', short: 'h' } });
  if (values.help) return void console.log(HELP.backup);
  if (!values.to) throw new UsageError(`backup needs --to FILE.\n\n${HELP.backup}`);
  const file = resolve(values.to);
  if (existsSync(file)) throw new UsageError(`${file} exists already; give --to a new file name (a backup never overwrites a file).`);
  const cfg = fleetConfig(values, true);
  const { writeBackup } = await import('./store/backup.js');
  const r = await writeBackup(cfg, file);
  process.stdout.write(`Backed up ${await storeLocation(cfg)} (data format ${r.dataFormat}) to ${file}: ${r.rows} rows\n`);
  for (const [kind, n] of Object.entries(r.counts)) process.stdout.write(`  ${kind.padEnd(20)} ${String(n).padStart(7)}\n`);
}

async function restoreCommand(args: string[]): Promise<void> {
  const { values } = parse(args, {
    ...DATA_DIR,
    from: { type: 'string' },
    force: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) return void console.log(HELP.restore);
  if (!values.from) throw new UsageError(`restore needs --from FILE.\n\n${HELP.restore}`);
  const cfg = fleetConfig(values, false);
  await refuseWhileServed(cfg, 'Replacing a fleet under a running process would lose its writes and confuse it');
  const { restoreBackup } = await import('./store/backup.js');
  const r = await restoreBackup(resolve(values.from), cfg, values.force === true);
  process.stdout.write(`Restored ${resolve(values.from)} into ${await storeLocation(cfg)}: ${r.rows} rows (data format ${r.dataFormat})\n`);
  if (r.replacedTo) process.stdout.write(`The data dir it replaced was moved to ${r.replacedTo}\n`);
}

async function openapi(args: string[]): Promise<void> {
  const { values } = parse(args, { 'rest-prefix': { type: 'string' }, help: { type: 'boolean', short: 'h' } });
  if (values.help) return void console.log(HELP.openapi);
  const { restDocumentJson } = await import('./http/openapi.js');
  const { restRoutes } = await import('./http/rest-routes.js');
  const config = loadConfig({ restPrefix: values['rest-prefix'] }, {});
  process.stdout.write(restDocumentJson(restRoutes, config));
}

async function audit(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { ...DATA_DIR, help: { type: 'boolean', short: 'h' } });
  if (values.help || !positionals[0]) return void console.log(HELP.audit);
  if (positionals[0] !== 'verify') throw new UsageError(`Unknown audit command "${positionals[0]}".\n${HELP.audit}`);
  const r = await withServices({ ...values, existing: true }, async (s) => s.audit.verify());
  if (r.ok) {
    process.stdout.write(
      r.entries ? `Audit log whole: ${r.entries} entries, ${r.first} to ${r.last}.\n` : 'Audit log whole: no entries.\n',
    );
    return;
  }
  process.stdout.write(`Audit log broken at entry ${r.bad.id}: ${r.bad.reason} (${r.entries} entries before it are whole).\n`);
  process.exitCode = 1;
}

const COMMANDS: Record<string, (args: string[]) => Promise<void>> = {
  serve,
  mcp,
  keys,
  users,
  modules,
  openapi,
  audit,
  migrate: migrateCommand,
  backup: backupCommand,
  restore: restoreCommand,
  'child-sim': async (args) => (await import('./child/simulator/command.js')).childSimCommand(args),
  demo: async (args) => (await import('./demo.js')).demo(args),
  vulnerabilities: async (args) => {
    process.exitCode = await (await import('./app/vulnerabilities-command.js')).vulnerabilitiesCommand(args);
  },
};

/**
 * Commands that keep serving after their first lines: a reader of their output going away must not stop them. (`mcp`
 * is not one: stdout is its client, and a client gone is the end of the session.)
 */
const SERVING = new Set(['serve', 'demo', 'child-sim']);

/**
 * `sitefleet openapi | head`: when the reader of stdout or stderr goes away (EPIPE), a command that prints ends quietly as
 * other command-line tools do, instead of a stack trace; a serving command ignores it and keeps serving.
 */
function quietOnClosedPipe(cmd: string): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE') throw e;
      if (!SERVING.has(cmd)) process.exit(0);
    });
  }
}

async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv;
  command = cmd ?? '';
  quietOnClosedPipe(command);
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') return void console.log(HELP.main);
  if (cmd === '--version') return void console.log((await import('./version.js')).VERSION);
  const run = COMMANDS[cmd];
  if (!run) {
    const near = closestFlag(cmd, Object.keys(COMMANDS));
    throw new UsageError(`Unknown command "${cmd}".${near ? ` Did you mean "${near}"?` : ''}\n\n${HELP.main}`);
  }
  await run(rest);
}

main(process.argv.slice(2)).catch((e: unknown) => {
  if (e instanceof UsageError) {
    process.stderr.write(`${e.message}\n`);
    process.exit(2);
  }
  if (e instanceof StoreCorruptError) {
    process.stderr.write(`sitefleet: ${e.message}\n`);
    process.exit(1);
  }
  const err = e as { message?: string; code?: string };
  process.stderr.write(`sitefleet: ${err.message ?? String(e)}\n`);
  process.exit(1);
});
