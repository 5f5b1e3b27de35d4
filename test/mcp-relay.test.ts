// `sitefleet mcp --server URL` (issue 33, distribution): a client on this machine speaks stdio to the relay, which
// passes every message to a remote sitefleet's /mcp with the key from SITEFLEET_API_KEY. Real processes, the real
// SDK stdio client, a real server on loopback.
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { run } from './support/process.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
let f: Fleet;
const clients: Client[] = [];

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 2 } });
  await registerSites(f, 2);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await f.close();
});

async function relayClient(args: string[], env: Record<string, string>): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', ...args],
    env: { PATH: process.env.PATH ?? '', SITEFLEET_LOG: 'warn', ...env },
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (d) => (err += d));
  const client = new Client({ name: 'relay-test', version: '1' });
  clients.push(client);
  await client.connect(transport);
  return { client, stderr: () => err };
}

describe('sitefleet mcp --server', () => {
  it('relays tools/list and a call to the remote server, with the remote key’s view of the fleet', async () => {
    const { client } = await relayClient(['--server', `${f.s.url}/mcp`], { SITEFLEET_API_KEY: f.s.creds.key.read_write });
    expect(client.getServerVersion()?.name).toBe('sitefleet');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('update-site-plugins-v1');
    const r = await client.callTool({ name: 'list-sites-v1', arguments: { status: 'any' } });
    expect(r.isError).toBeFalsy();
    const sites = (r.structuredContent as { items: Array<{ url: string }> }).items;
    expect(sites.map((s) => s.url).sort()).toEqual(f.sim.sites.map((s) => s.url).sort());
  });

  it('narrows the session like the HTTP headers do: --read-only and --toolsets (also from the environment)', async () => {
    const { client } = await relayClient(['--server', `${f.s.url}/mcp`, '--toolsets', 'sites'], {
      SITEFLEET_API_KEY: f.s.creds.key.read_write,
      SITEFLEET_MCP_READ_ONLY: 'true',
    });
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('list-sites-v1');
    expect(names).not.toContain('sync-sites-v1');
    expect(names.some((n) => n.includes('plugin'))).toBe(false);
  });

  it('a key the server refuses is a clear error on the first request, not a hang', async () => {
    await expect(relayClient(['--server', `${f.s.url}/mcp`], { SITEFLEET_API_KEY: 'sf_wrong' })).rejects.toThrow(
      /refused the API key \(401\): check SITEFLEET_API_KEY/,
    );
  });

  it('an unreachable server is a clear error naming it', async () => {
    await expect(relayClient(['--server', 'http://127.0.0.1:9/mcp'], { SITEFLEET_API_KEY: 'x' })).rejects.toThrow(
      /sitefleet server at http:\/\/127\.0\.0\.1:9\/mcp could not be reached/,
    );
  });

  it('refuses, before connecting: no key, a bad URL, credentials in the URL, a local-fleet flag, a read-only value that is not a boolean', async () => {
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [['--server', `${f.s.url}/mcp`], {}, /needs the API key in the environment variable SITEFLEET_API_KEY/],
      [['--server', 'not a url'], { SITEFLEET_API_KEY: 'k' }, /must be the URL of a sitefleet's \/mcp endpoint/],
      [['--server', 'https://u:p@h/mcp'], { SITEFLEET_API_KEY: 'k' }, /without credentials or fragment/],
      [['--server', 'https://h/mcp', '--data-dir', '/tmp/x'], { SITEFLEET_API_KEY: 'k' }, /--data-dir is for a fleet opened here/],
      [
        [],
        { SITEFLEET_SERVER_URL: 'https://h/mcp', SITEFLEET_API_KEY: 'k', SITEFLEET_MCP_READ_ONLY: 'maybe' },
        /SITEFLEET_MCP_READ_ONLY must be true or false/,
      ],
    ];
    const procs = cases.map(([args, env]) => run(['mcp', ...args], env));
    for (const p of procs) p.child.stdin!.end();
    const codes = await Promise.all(procs.map((p) => p.exit));
    cases.forEach(([args, , message], i) => {
      expect(codes[i], args.join(' ')).toBe(2);
      expect(procs[i]!.stderr()).toMatch(message);
    });
  });
});
