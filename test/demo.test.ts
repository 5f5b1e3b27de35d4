// `sitefleet demo` empties its data dir at start, so it must never empty one it did not make (issue 27, defect 9).
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, run, untilOutput } from './support/process.js';
import { tempDir } from './support/server.js';

/** Starts the demo and waits for its "Ctrl-C stops the demo." line; answers the process and its service URL. */
async function startDemo(args: string[]) {
  const p = run(['demo', '--port', '0', '--sites', '2', ...args]);
  await untilOutput(p.child, p.stdout, /Ctrl-C stops the demo\./, { ms: 30_000, what: 'demo', errors: p.stderr });
  const url = /sitefleet:\s+(http:\/\/\S+)/.exec(p.stdout())![1]!;
  return { p, url, stop: () => (p.child.kill('SIGTERM'), p.exit) };
}

describe('sitefleet demo', () => {
  it('refuses a real data dir given as --data-dir, and leaves every file in it', async () => {
    const dir = tempDir();
    expect((await cli(['keys', 'create', '--name', 'precious', '--data-dir', dir])).code).toBe(0);
    const before = readdirSync(dir).sort();
    const r = await cli(['demo', '--port', '0', '--data-dir', dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/is not empty and was not made by the demo \(no \.sitefleet-demo in it\)/);
    expect(readdirSync(dir).sort()).toEqual(before);
    expect((await cli(['keys', 'list', '--data-dir', dir])).stdout).toMatch(/\tprecious\t/);
  });

  it('refuses any other non-empty directory too', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'thesis.tex'), 'years of work');
    expect((await cli(['demo', '--port', '0', '--data-dir', dir])).code).toBe(1);
    expect(readFileSync(join(dir, 'thesis.tex'), 'utf8')).toBe('years of work');
  });

  it('makes its own directory, marks it, and empties it (only it) on the next start', async () => {
    const dir = join(tempDir(), 'demo');
    const first = await startDemo(['--data-dir', dir]);
    expect(existsSync(join(dir, '.sitefleet-demo'))).toBe(true);
    expect(existsSync(join(dir, 'meta.json'))).toBe(true);
    expect(await first.stop()).toBe(0);
    mkdirSync(join(dir, 'leftover'));
    const second = await startDemo(['--data-dir', dir]);
    try {
      expect(existsSync(join(dir, 'leftover'))).toBe(false);
      expect(existsSync(join(dir, '.sitefleet-demo'))).toBe(true);
      const token = /API key:\s+(\S+)/.exec(second.p.stdout())![1]!;
      const sites = (await (
        await fetch(`${second.url}/wp-json/svc/v2/sites`, { headers: { authorization: `Bearer ${token}` } })
      ).json()) as {
        total: number;
      };
      expect(sites.total).toBe(2); // a fresh fleet: the first run's sites are gone
    } finally {
      await second.stop();
    }
  });
});
