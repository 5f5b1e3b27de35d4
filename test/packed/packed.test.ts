// The package as a user outside the clone gets it (issue 27, defect 7): `npm pack`, `npm install -g` into an empty
// prefix, and the installed `sitefleet` run from unrelated directories by absolute path — serve (credentials, a REST
// call, the console's assets), mcp through a real MCP client configured as the README says, and demo on a free port.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, constants, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilOutput } from '../support/process.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'sitefleet-packed-'));
const prefix = join(root, 'global'); // what `npm install -g` fills: bin/ and lib/node_modules/
const elsewhere = mkdtempSync(join(root, 'cwd-')); // the directory every command runs from: empty, not the clone
let bin = '';
const children: ChildProcess[] = [];

beforeAll(() => {
  // dist/ is built by the npm script before this lane runs; pack without running "prepare" again.
  const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', root], { cwd: REPO, encoding: 'utf8' });
  const tarball = join(root, (JSON.parse(out) as Array<{ filename: string }>)[0]!.filename);
  execFileSync('npm', ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', '--prefer-offline', tarball], {
    cwd: elsewhere,
    encoding: 'utf8',
    stdio: 'pipe',
  });
  bin = join(prefix, 'bin', 'sitefleet');
});

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** Runs the installed sitefleet from `elsewhere` until `ready` shows in its stdout. */
async function start(args: string[], ready: RegExp): Promise<{ child: ChildProcess; out: () => string }> {
  const child = spawn(bin, args, { cwd: elsewhere, env: { ...process.env, SITEFLEET_LOG: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  await untilOutput(child, () => out, ready, { ms: 45_000, what: `sitefleet ${args[0]}`, errors: () => err });
  return { child, out: () => out };
}

const stop = async (child: ChildProcess) => {
  child.kill('SIGTERM');
  const [code] = child.exitCode === null ? await once(child, 'exit') : [child.exitCode];
  return code as number | null;
};

describe('the packed package, installed outside the clone', () => {
  it('puts an executable sitefleet on the PATH of the prefix, with a shebang, holding what it reads at run time', () => {
    accessSync(bin, constants.X_OK);
    const target = realpathSync(bin);
    expect(target.startsWith(join(prefix, 'lib', 'node_modules', 'sitefleet'))).toBe(true);
    expect(readFileSync(target, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    const pkg = join(prefix, 'lib', 'node_modules', 'sitefleet');
    expect(readdirSync(join(pkg, 'src', 'console', 'assets'))).toContain('index.html');
    expect(readdirSync(join(pkg, 'schemas')).length).toBeGreaterThan(100);
    expect(readdirSync(pkg)).not.toContain('test');
    const version = execFileSync(bin, ['--version'], { cwd: elsewhere, encoding: 'utf8' }).trim();
    expect(version).toBe((JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version);
  });

  it('serves from another directory: prints credentials that work, and the console from its own assets', async () => {
    const data = join(root, 'serve-data');
    const s = await start(['serve', '--port', '0', '--data-dir', data], /listening on (http:\/\/\S+)/);
    const url = /listening on (http:\/\/\S+)/.exec(s.out())![1]!;
    const token = /API key:\s+(\S+)/.exec(s.out())![1]!;
    const r = await fetch(`${url}/wp-json/svc/v2/sites`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ success: 1, total: 0 });
    const page = await fetch(`${url}/console`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<html/i);
    expect(readdirSync(elsewhere)).toEqual([]); // nothing written into the working directory
    expect(await stop(s.child)).toBe(0);
  });

  it('answers an MCP client that starts it by absolute path from another directory', async () => {
    const data = join(root, 'mcp-data');
    const client = new Client({ name: 'packed-test', version: '1' });
    await client.connect(
      new StdioClientTransport({
        command: bin,
        args: ['mcp', '--data-dir', data],
        cwd: mkdtempSync(join(root, 'client-')),
        env: { PATH: process.env.PATH ?? '', SITEFLEET_LOG: 'warn' },
      }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('add-tag-v1');
      const made = await client.callTool({ name: 'add-tag-v1', arguments: { name: 'from-packed' } });
      expect(made.isError).toBeFalsy();
      const listed = await client.callTool({ name: 'list-tags-v1', arguments: {} });
      expect((listed.structuredContent as { total: number }).total).toBe(1);
    } finally {
      await client.close();
    }
  });

  it('runs the demo on a port of its choosing, with its simulated sites synced', async () => {
    const d = await start(['demo', '--port', '0', '--sites', '3', '--data-dir', join(root, 'demo')], /Ctrl-C stops the demo\./);
    const url = /sitefleet:\s+(http:\/\/\S+)/.exec(d.out())![1]!;
    const token = /API key:\s+(\S+)/.exec(d.out())![1]!;
    const sites = (await (await fetch(`${url}/wp-json/svc/v2/sites`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      total: number;
    };
    expect(sites.total).toBe(3);
    expect(d.out()).toMatch(/registered and 3 synced/);
    expect(await stop(d.child)).toBe(0);
  });
});
