// The MCP bundle (issue 33, distribution): `npm run bundle` builds build/sitefleet-VERSION.mcpb with the official
// packager; the packager's own `unpack` opens it as a host would, and the manifest's mcp_config — ${__dirname} and
// ${user_config.*} substituted as Claude Desktop does — is started from an unrelated directory and driven with the real
// MCP SDK client, once on a data dir (local) and once relaying to a running `serve` with a server URL and key.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilOutput } from '../support/process.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { name: string; version: string; mcpName: string };
const root = mkdtempSync(join(tmpdir(), 'sitefleet-bundle-'));
const unpacked = join(root, 'installed');
const elsewhere = mkdtempSync(join(root, 'cwd-'));
const clients: Client[] = [];
const children: ChildProcess[] = [];

interface Manifest {
  name: string;
  version: string;
  server: { entry_point: string; mcp_config: { command: string; args: string[]; env: Record<string, string> } };
  user_config: Record<string, { type: string; default?: unknown; sensitive?: boolean }>;
}
let manifest: Manifest;

beforeAll(() => {
  execFileSync('node', ['bundle/build.mjs'], { cwd: REPO, stdio: 'pipe' });
  const file = join(REPO, 'build', `sitefleet-${pkg.version}.mcpb`);
  execFileSync(join(REPO, 'node_modules', '.bin', 'mcpb'), ['unpack', file, unpacked], { cwd: root, stdio: 'pipe' });
  manifest = JSON.parse(readFileSync(join(unpacked, 'manifest.json'), 'utf8')) as Manifest;
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** What a host does with mcp_config: ${__dirname} is the unpacked bundle, ${user_config.X} the person's setting. */
function substitute(text: string, settings: Record<string, unknown>): string {
  return text
    .replaceAll('${__dirname}', unpacked)
    .replace(/\$\{user_config\.([a-z_]+)\}/g, (_, k: string) => String(settings[k] ?? manifest.user_config[k]?.default ?? ''))
    .replaceAll('${HOME}', root);
}

async function install(settings: Record<string, unknown>): Promise<Client> {
  const cfg = manifest.server.mcp_config;
  const env: Record<string, string> = { PATH: process.env.PATH ?? '' };
  for (const [k, v] of Object.entries(cfg.env)) env[k] = substitute(v, settings);
  const transport = new StdioClientTransport({
    command: cfg.command === 'node' ? process.execPath : cfg.command,
    args: cfg.args.map((a) => substitute(a, settings)),
    env,
    cwd: elsewhere,
  });
  const client = new Client({ name: 'bundle-host', version: '1' });
  clients.push(client);
  await client.connect(transport);
  return client;
}

describe('the MCP bundle', () => {
  it('carries the package’s name and version, an icon, a node entry point that exists, and a secret key setting', () => {
    expect(manifest.name).toBe('sitefleet');
    expect(manifest.version).toBe(pkg.version);
    expect(readFileSync(join(unpacked, 'icon.png')).subarray(1, 4).toString()).toBe('PNG');
    expect(readFileSync(join(unpacked, manifest.server.entry_point), 'utf8')).toMatch(/^#!\/usr\/bin\/env node/);
    expect(manifest.user_config.api_key).toMatchObject({ type: 'string', sensitive: true });
    expect(manifest.user_config.data_dir).toMatchObject({ type: 'directory' });
  });

  it('installed with its defaults, opens a fleet in the data directory and answers tools and calls', async () => {
    const client = await install({ data_dir: join(root, 'fleet') });
    expect(client.getServerVersion()).toMatchObject({ name: 'sitefleet', version: pkg.version });
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('list-sites-v1');
    expect(names).toContain('update-site-plugins-v1');
    const r = await client.callTool({ name: 'list-sites-v1', arguments: { status: 'any' } });
    expect(r.structuredContent).toMatchObject({ total: 0, items: [] });
  });

  it('read-only and toolsets settings narrow the list', async () => {
    const client = await install({ data_dir: join(root, 'fleet2'), read_only: true, toolsets: 'sites' });
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('list-sites-v1');
    expect(names).not.toContain('sync-sites-v1');
    expect(names.some((n) => n.includes('plugin'))).toBe(false);
  });

  it('with a server URL and key, relays to a running sitefleet', async () => {
    const dataDir = join(root, 'served');
    const serve = spawn(process.execPath, [join(REPO, 'dist', 'cli.js'), 'serve', '--port', '0', '--data-dir', dataDir, '--no-console'], {
      cwd: elsewhere,
      env: { ...process.env, SITEFLEET_LOG: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(serve);
    let out = '';
    let err = '';
    serve.stdout!.on('data', (d) => (out += d));
    serve.stderr!.on('data', (d) => (err += d));
    const [, url] = await untilOutput(serve, () => out, /listening on (http:\/\/\S+)/, { ms: 45_000, what: 'serve', errors: () => err });
    const key = /API key:\s+(\S+)/.exec(out)?.[1];
    expect(key, out).toBeTruthy();
    const client = await install({ server_url: `${url}/mcp`, api_key: key });
    expect(client.getServerVersion()?.name).toBe('sitefleet');
    const r = await client.callTool({ name: 'list-tags-v1', arguments: {} });
    expect(r.isError).toBeFalsy();
  });
});

describe('server.json for the MCP registry', () => {
  const server = JSON.parse(readFileSync(join(REPO, 'server.json'), 'utf8'));

  it('names the npm package at this version, started as `sitefleet mcp` over stdio, with the name npm verifies', () => {
    expect(server.name).toMatch(/^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/);
    expect(server.name).toBe(pkg.mcpName);
    expect(server.version).toBe(pkg.version);
    expect(server.description.length).toBeLessThanOrEqual(100);
    expect(server.packages).toEqual([
      expect.objectContaining({
        registryType: 'npm',
        identifier: pkg.name,
        version: pkg.version,
        transport: { type: 'stdio' },
        packageArguments: [{ type: 'positional', value: 'mcp' }],
      }),
    ]);
    const vars = server.packages[0].environmentVariables.map((v: { name: string }) => v.name);
    for (const v of vars) expect(manifest.server.mcp_config.env, v).toHaveProperty(v);
    expect(server.packages[0].environmentVariables.find((v: { name: string }) => v.name === 'SITEFLEET_API_KEY')).toMatchObject({
      isSecret: true,
    });
  });
});
