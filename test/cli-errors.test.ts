// The command line's rough edges (issue 27, defect 12 and item 14): flags over the environment, stray words refused,
// mistyped flags answered with the closest real one, data dirs that cannot be used or do not exist, a reader that
// goes away, the first administrator, and the README's synopsis held to each command's --help.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, cli, serveProcess } from './support/process.js';
import { tempDir } from './support/server.js';

const stops: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const s of stops) await s();
});

/** No PostgreSQL listens here: a command that used it would fail. */
const NOWHERE = 'postgres://nobody@127.0.0.1:1/none';

describe('flags and words', () => {
  it('names the flag a mistyped one probably meant, instead of Node’s raw message', async () => {
    const r = await cli(['serve', '--prot', '9000']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^sitefleet serve: unknown option --prot\. Did you mean --port\?/);
    expect(r.stderr).not.toMatch(/positional argument|ERR_PARSE_ARGS|at /);
    expect((await cli(['keys', 'list', '--data-dr', tempDir()])).stderr).toMatch(/Did you mean --data-dir\?/);
    expect((await cli(['backup', '--too', 'x'])).stderr).toMatch(/Did you mean --to\?/);
    expect((await cli(['srve'])).stderr).toMatch(/Unknown command "srve"\. Did you mean "serve"\?/);
    const missing = await cli(['serve', '--port']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^sitefleet serve: --port needs a value \(--port VALUE\)\./);
    const valued = await cli(['serve', '--no-console=yes']);
    expect(valued.stderr).toMatch(/--no-console is a switch and takes no value/);
  });

  it('refuses stray words, such as the port npm start hands over without its flag', async () => {
    const r = await cli(['serve', '9000']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unexpected argument "9000".*npm start -- --port 9000/);
    expect((await cli(['keys', 'list', 'extra'])).stderr).toMatch(/unexpected argument "extra"/);
    expect((await cli(['demo', 'now'])).stderr).toMatch(/sitefleet demo: unexpected argument "now"/);
    // npm start --port=9000: npm keeps the flag and only sets npm_config_port for the script.
    const kept = await cli(['serve', '--data-dir', tempDir()], { npm_lifecycle_event: 'start', npm_config_port: '9000' });
    expect(kept.code).toBe(2);
    expect(kept.stderr).toMatch(/npm kept --port for itself .*npm start -- --port VALUE/);
  });

  it('lets --data-dir win over an exported SITEFLEET_DATABASE_URL', async () => {
    const dir = tempDir();
    const made = await cli(['keys', 'create', '--name', 'k', '--data-dir', dir], { SITEFLEET_DATABASE_URL: NOWHERE });
    expect(made.code, made.stderr).toBe(0);
    expect(existsSync(join(dir, 'keys.json'))).toBe(true);
    // Both flags: the database URL is the more specific (the data dir is then unused), as it always was.
    const both = await cli(['keys', 'list', '--data-dir', dir, '--database-url', NOWHERE]);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/Cannot reach the database at postgres:\/\/nobody@127\.0\.0\.1:1\/none/);
    const p = await serveProcess(['--data-dir', dir], { SITEFLEET_DATABASE_URL: NOWHERE });
    stops.push(() => p.stop());
    expect(p.stdout()).toContain(`(data: ${dir})`);
  });
});

describe('data dirs', () => {
  it('refuses, for commands that only read, a data dir that does not exist (and does not create it)', async () => {
    const typo = join(tempDir(), 'dat');
    for (const args of [
      ['keys', 'list'],
      ['users', 'list'],
      ['modules', 'list'],
      ['keys', 'revoke', '1'],
      ['users', 'delete', 'ann'],
    ]) {
      const r = await cli([...args, '--data-dir', typo]);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toMatch(/dat does not exist\. Check --data-dir/);
    }
    expect(existsSync(typo)).toBe(false);
    const notOne = tempDir();
    writeFileSync(join(notOne, 'notes.txt'), 'mine');
    expect((await cli(['users', 'list', '--data-dir', notOne])).stderr).toMatch(/is not a sitefleet data dir \(no meta\.json\)/);
  });

  it('says plainly when the data dir is a file or cannot be written', async () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'x');
    const r = await cli(['keys', 'create', '--name', 'k', '--data-dir', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`sitefleet: Cannot use ${file} as the data dir: it is a file, not a directory. Give --data-dir a directory.\n`);
    const under = await cli(['serve', '--port', '0', '--data-dir', join(file, 'sub')]);
    expect(under.stderr).toMatch(/Cannot use .*a-file\/sub as the data dir: a file stands where a directory is needed/);
    // /sys refuses new directories even to root (EPERM, EACCES or EROFS).
    const sys = await cli(['keys', 'create', '--name', 'k', '--data-dir', '/sys/sitefleet-test/data']);
    expect(sys.code).toBe(1);
    expect(sys.stderr).toMatch(
      /Cannot use \/sys\/sitefleet-test\/data as the data dir: (permission denied|the file system is read-only)\./,
    );
  });
});

describe('output into a pipe that closes', () => {
  it('ends quietly, without a stack trace, when the reader goes away (sitefleet openapi | head -c 10)', async () => {
    const child = spawn(process.execPath, [CLI, 'openapi'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    await once(child.stdout, 'data');
    child.stdout.destroy(); // like head after its first bytes
    const [code] = await once(child, 'close'); // its stderr read to the end
    expect(err).toBe('');
    expect(code).toBe(0);
  });
});

describe('the first administrator', () => {
  it('is created on the first serve even when a key was made before it, and can log in', async () => {
    const dir = tempDir();
    expect((await cli(['keys', 'create', '--name', 'early', '--data-dir', dir])).code).toBe(0);
    const p = await serveProcess(['--data-dir', dir]);
    stops.push(() => p.stop());
    expect(p.stdout()).toMatch(/created an administrator \(API keys exist already/);
    expect(p.stdout()).not.toMatch(/API key:/);
    const password = /password:\s+(.+)/.exec(p.stdout())![1]!.trim();
    const basic = `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
    expect((await fetch(`${p.url}/wp-json/wp-abilities/v1/abilities`, { headers: { authorization: basic } })).status).toBe(200);
    expect((await cli(['users', 'list', '--data-dir', dir])).stdout).toMatch(/^1\tadmin\tadministrator\t/m);
  });
});

describe("the README's command line", () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const block = /## Command line\n\n```\n([\s\S]*?)```/.exec(readme)![1]!;
  /** Flags shown per command: a line starting "sitefleet CMD" and the indented lines after it. */
  const shown = new Map<string, Set<string>>();
  let current = '';
  for (const line of block.split('\n')) {
    const m = /^sitefleet ([\w-]+)/.exec(line);
    if (m) current = m[1]!;
    if (!current || !line.trim()) continue;
    const flags = shown.get(current) ?? new Set<string>();
    for (const f of line.split('#')[0]!.matchAll(/--[a-z][a-z-]*/g)) flags.add(f[0]);
    shown.set(current, flags);
  }
  const helps = new Map<string, Promise<{ code: number | null; stdout: string }>>();
  const help = async (cmd: string) => {
    if (!helps.has(cmd)) helps.set(cmd, cli([cmd, '--help']));
    const r = await helps.get(cmd)!;
    expect(r.code, cmd).toBe(0);
    return r.stdout;
  };

  it('lists every command sitefleet has', async () => {
    const main = (await cli(['--help'])).stdout;
    const commands = [...main.split('Commands:')[1]!.matchAll(/^ {2}([\w-]+) /gm)].map((m) => m[1]);
    expect(commands.length).toBeGreaterThan(8);
    expect([...shown.keys()].sort()).toEqual([...commands].sort());
  });

  it("shows only flags each command's --help has, and every flag of its usage", async () => {
    await Promise.all([...shown.keys()].map(help));
    for (const [cmd, flags] of shown) {
      const text = await help(cmd);
      const has = new Set([...text.matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0]));
      for (const f of flags) expect(has.has(f), `README shows ${f} for sitefleet ${cmd}, its --help does not`).toBe(true);
      const usage = text.split(/\n\s*\n/)[0]!;
      for (const f of usage.matchAll(/--[a-z][a-z-]*/g)) {
        expect(flags.has(f[0]), `sitefleet ${cmd} --help shows ${f[0]}, the README's synopsis does not`).toBe(true);
      }
    }
  });

  it('names no flag on its own (`--x`) that no command has', async () => {
    const all = new Set<string>(['--help']);
    for (const cmd of shown.keys()) for (const m of (await help(cmd)).matchAll(/--[a-z][a-z-]*/g)) all.add(m[0]);
    const alone = [...readme.matchAll(/`(--[a-z][a-z-]*)`/g)].map((m) => m[1]!);
    expect(alone.length).toBeGreaterThan(3);
    expect(alone.filter((f) => !all.has(f))).toEqual([]);
  });
});
