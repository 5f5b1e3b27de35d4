#!/usr/bin/env node
// sitefleet command line: serve | mcp | keys | users | modules | child-sim | demo | openapi.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { resolve } from 'node:path';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { boot } from './app/boot.js';
import { loadConfig, type Config } from './config.js';
import type { KeyPermission, UserRole } from './core/principal.js';
import { buildMcpServer } from './mcp/server.js';
import { closeServices, openServices, type Services } from './domain/index.js';
import { MODULES } from './domain/settings.js';
import { StoreCorruptError } from './store/durable-file.js';
import { storeLocation } from './store/open.js';
import { copyLowdbToPg, migratePg } from './store/pg-migrate.js';
import { log } from './log.js';
import { TOOLSETS, type ModuleName, type Toolset } from './core/ability.js';
import { childSimCommand } from './child/simulator/command.js';
import { demo } from './demo.js';

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
  child-sim  run the child-site simulator (simulated WordPress sites with the child plugin)
  demo       simulator with 25 sites + the service, registered and synced
  openapi    print the OpenAPI 3.1 document of the REST API (JSON)
  audit      verify the audit log's hash chain

Run "sitefleet <command> --help" for the options of a command.`,
  serve: `Usage: sitefleet serve [--host 127.0.0.1] [--port 8787] [--data-dir ./data]
                       [--rest-prefix /wp-json/svc/v2] [--abilities-prefix /wp-json/wp-abilities/v1]
                       [--child-concurrency 32] [--allow-private-sites] [--allowed-hosts a.example,b.example]
                       [--no-console] [--monitor-interval SECONDS] [--trust-proxy 127.0.0.1,10.0.0.0/8,::1]

       [--database-url postgres://user:pass@host/db]

Environment: SITEFLEET_HOST, SITEFLEET_PORT, SITEFLEET_DATA_DIR, SITEFLEET_DATABASE_URL (flags win).
With a database URL the fleet lives in PostgreSQL (run "sitefleet migrate" first) and several serve processes
can share it; without one it lives in the data dir's files.
--allow-private-sites lets sitefleet connect to loopback and private-network sites (refused by default).
--trust-proxy (SITEFLEET_TRUST_PROXY) names the reverse proxies (addresses or CIDRs) whose X-Forwarded-For is
believed: the login throttle and the request log then use the client's address. None by default.
The web console is at /console (log in with a user and its application password); --no-console turns it off.
Uptime monitors check every connected site on their interval (settings: update-monitor-settings-v1);
--monitor-interval (SITEFLEET_MONITOR_INTERVAL, 1–86400 s) overrides every monitor's interval.
On an empty data dir it creates an administrator user and an API key and prints them once.`,
  mcp: `Usage: sitefleet mcp [--data-dir ./data] [--toolsets sites,tags,...] [--read-only] [--allow-private-sites]

Serves MCP over stdio. Safe to run beside "sitefleet serve" on the same data dir, or on the same database with
--database-url postgres://… (SITEFLEET_DATABASE_URL); keys, users and modules take --database-url too.`,
  keys: `Usage: sitefleet keys create --name NAME [--permissions read|write|read_write|delete] [--admin] [--data-dir DIR]
       sitefleet keys list [--data-dir DIR]
       sitefleet keys revoke ID [--data-dir DIR]

"create" prints the new bearer token alone on the last line of stdout (shown once, stored hashed).`,
  users: `Usage: sitefleet users create --name NAME [--role administrator|viewer] [--data-dir DIR]
       sitefleet users list [--data-dir DIR]
       sitefleet users delete NAME [--data-dir DIR]
       sitefleet users set-role NAME --role administrator|viewer [--data-dir DIR]

"create" prints the new application password alone on the last line of stdout (shown once, stored hashed).`,
  openapi: `Usage: sitefleet openapi [--rest-prefix /wp-json/svc/v2]

Prints the OpenAPI 3.1 document of the REST v2 API, as GET <rest prefix>/openapi.json serves it (docs/openapi.json
is this output for the default prefix).`,
  migrate: `Usage: sitefleet migrate [--database-url postgres://…]
       sitefleet migrate --from ./data --to postgres://… [--force]

The first form creates the PostgreSQL schema or migrates it to this version (SITEFLEET_DATABASE_URL works too).
The second copies a data dir's fleet (sites, secrets, site data, keys, users, tags, clients, costs, jobs,
settings) into PostgreSQL in one transaction and checks the counts; a database that already holds a fleet is
refused unless --force (which replaces it). Stop the processes using the data dir first.`,
  audit: `Usage: sitefleet audit verify [--data-dir DIR] [--database-url URL]

Walks the audit log's hash chain from its anchor to its head. Exits 0 when it is whole; otherwise names the first
entry that was edited, removed or slipped in, and exits 1.`,
  modules: `Usage: sitefleet modules list|enable NAME|disable NAME [--data-dir DIR]

Modules: ${Object.keys(MODULES).join(', ')}. A running server follows the change at once.`,
};

class UsageError extends Error {}

function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

async function withServices<R>(where: { 'data-dir'?: string; 'database-url'?: string }, fn: (s: Services) => Promise<R>): Promise<R> {
  const services = await openServices(loadConfig({ dataDir: where['data-dir'], databaseUrl: where['database-url'] }));
  try {
    return await fn(services);
  } finally {
    await closeServices(services);
  }
}

async function bootstrap(s: Services, url: string, cfg: Config, withConsole: boolean): Promise<void> {
  if (!s.auth.isEmpty()) return;
  const { password } = await s.auth.createUser('admin', 'administrator');
  const { token } = await s.auth.createKey('default', 'read_write');
  const out = [
    '',
    'First start: created an administrator and an API key. They are shown only now; store them safely.',
    `  user:     admin`,
    `  password: ${password}`,
    `  API key:  ${token}`,
    '',
    'Try:',
    `  curl -H "Authorization: Bearer ${token}" ${url}${cfg.restPrefix}/sites`,
    `  curl -u "admin:${password}" ${url}${cfg.abilitiesPrefix}/abilities/svc/list-sites-v1/run`,
    `  MCP over HTTP: ${url}/mcp with header "Authorization: Bearer ${token}"`,
    ...(withConsole ? [`  Web console: ${url}/console (log in as admin with the password above)`] : []),
    '',
  ];
  process.stdout.write(out.join('\n') + '\n');
}

async function serve(args: string[]): Promise<void> {
  const { values } = parse(args, SERVE_OPTIONS);
  if (values.help) return void console.log(HELP.serve);
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
    trustProxy: values['trust-proxy'],
  });
  const withConsole = values['no-console'] !== true;
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
  await bootstrap(services, http!.url, cfg, withConsole);
  process.stdout.write(`sitefleet listening on ${http!.url} (data: ${storeLocation(cfg)})\n`);
  if (withConsole) process.stdout.write(`web console: ${http!.url}/console\n`);
  log('info', 'listening', { url: http!.url, data: storeLocation(cfg) });
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
    toolsets: { type: 'string' },
    'read-only': { type: 'boolean' },
    'allow-private-sites': { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) return void console.log(HELP.mcp);
  const toolsets = values.toolsets
    ?.split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  const bad = toolsets?.find((t) => !TOOLSETS.includes(t as Toolset));
  if (bad) throw new UsageError(`Unknown toolset "${bad}". Toolsets: ${TOOLSETS.join(', ')}.`);
  const { services, registry, close } = await boot(
    loadConfig({ dataDir: values['data-dir'], databaseUrl: values['database-url'], allowPrivateSites: values['allow-private-sites'] }),
  );
  const readOnly = values['read-only'] === true;
  const server = buildMcpServer(registry, { principal: { kind: 'local', name: 'stdio', readOnly }, toolsets, readOnly }, services);
  const transport = new StdioServerTransport();
  transport.onclose = () => {
    void close().then(() => process.exit(0));
  };
  await server.connect(transport);
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

async function keys(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, {
    ...DATA_DIR,
    name: { type: 'string' },
    permissions: { type: 'string' },
    admin: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  const [sub, arg] = positionals;
  if (values.help || !sub) return void console.log(HELP.keys);
  await withServices(values, async (s) => {
    if (sub === 'create') {
      if (!values.name) throw new UsageError('keys create needs --name NAME.');
      const perm = (values.permissions ?? 'read_write') as KeyPermission;
      if (!['read', 'write', 'read_write', 'delete'].includes(perm))
        throw new UsageError('--permissions is read, write, read_write or delete.');
      const { key, token } = await s.auth.createKey(values.name, perm, { admin: values.admin === true });
      await s.audit.cli('keys create', { key_id: key.id, name: key.name, permissions: key.permissions, admin: key.admin });
      const kind = key.admin ? 'administrator API key' : 'API key';
      process.stdout.write(`Created ${kind} ${key.id} "${key.name}" (${key.permissions}). The token is shown once:\n${token}\n`);
    } else if (sub === 'list') {
      for (const k of s.auth.listKeys()) {
        const state = k.revoked ? 'revoked' : s.auth.keyEnded(k) ? 'expired' : 'active';
        process.stdout.write(`${k.id}\t${k.name}\t${k.permissions}${k.admin ? '\tadmin' : ''}\t${state}\t${k.created_at}\n`);
      }
    } else if (sub === 'revoke') {
      const id = Number(arg);
      if (!Number.isInteger(id) || id < 1) throw new UsageError('keys revoke needs a numeric key ID.');
      const k = await s.auth.revokeKey(id);
      await s.audit.cli('keys revoke', { key_id: k.id });
      process.stdout.write(`Revoked API key ${k.id} "${k.name}".\n`);
    } else {
      throw new UsageError(`Unknown keys command "${sub}".\n${HELP.keys}`);
    }
  });
}

async function users(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, {
    ...DATA_DIR,
    name: { type: 'string' },
    role: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  const [sub, arg] = positionals;
  if (values.help || !sub) return void console.log(HELP.users);
  await withServices(values, async (s) => {
    if (sub === 'create') {
      if (!values.name) throw new UsageError('users create needs --name NAME.');
      const role = (values.role ?? 'administrator') as UserRole;
      if (role !== 'administrator' && role !== 'viewer') throw new UsageError('--role is administrator or viewer.');
      const { user, password } = await s.auth.createUser(values.name, role);
      await s.audit.cli('users create', { name: user.name, role: user.role });
      process.stdout.write(`Created ${user.role} "${user.name}". The application password is shown once:\n${password}\n`);
    } else if (sub === 'list') {
      for (const u of s.auth.listUsers()) process.stdout.write(`${u.id}\t${u.name}\t${u.role}\t${u.created_at}\n`);
    } else if (sub === 'delete') {
      if (!arg) throw new UsageError('users delete needs a user name.');
      const u = await s.auth.deleteUser(arg);
      await s.audit.cli('users delete', { name: u.name });
      process.stdout.write(`Deleted user "${u.name}".\n`);
    } else if (sub === 'set-role') {
      if (!arg || (values.role !== 'administrator' && values.role !== 'viewer'))
        throw new UsageError('users set-role needs a user name and --role administrator|viewer.');
      const u = await s.auth.setRole(arg, values.role);
      await s.audit.cli('users set-role', { name: u.name, role: u.role });
      process.stdout.write(`User "${u.name}" is now ${u.role}; their console sessions ended.\n`);
    } else {
      throw new UsageError(`Unknown users command "${sub}".\n${HELP.users}`);
    }
  });
}

async function modules(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { ...DATA_DIR, help: { type: 'boolean', short: 'h' } });
  const [sub, name] = positionals;
  if (values.help || !sub) return void console.log(HELP.modules);
  await withServices(values, async (s) => {
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
    const report = await copyLowdbToPg(resolve(values.from), to, values.force === true);
    process.stdout.write(`Copied ${resolve(values.from)} to ${storeLocation({ dataDir: '', databaseUrl: to })}; counts checked:\n`);
    for (const r of report) process.stdout.write(`  ${r.kind.padEnd(10)} ${String(r.source).padStart(7)} → ${r.target}\n`);
    return;
  }
  const url = pgUrl('--database-url', values['database-url'] ?? process.env.SITEFLEET_DATABASE_URL);
  const { from, to } = await migratePg(url);
  process.stdout.write(from === to ? `Schema is at format ${to}; nothing to do.\n` : `Schema migrated from format ${from} to ${to}.\n`);
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
  if (values.help || positionals[0] !== 'verify') return void console.log(HELP.audit);
  const r = await withServices(values, async (s) => s.audit.verify());
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
  'child-sim': (args) => childSimCommand(args),
  demo: (args) => demo(args),
};

async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') return void console.log(HELP.main);
  if (cmd === '--version') return void console.log((await import('./version.js')).VERSION);
  const run = COMMANDS[cmd];
  if (!run) throw new UsageError(`Unknown command "${cmd}".\n\n${HELP.main}`);
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
