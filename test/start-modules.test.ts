// What a process loads to start (issue 34: start to first answer, and every CLI command's and stdio MCP server's start):
// undici waits for the first outgoing call, jose for the first OAuth token, csv-parse for the first CSV, the feed's
// streaming JSON parser for the first feed read, express and the HTTP doors for a process that serves them. A module hook records every package module the process resolves, into a file the test reads.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, run, serveProcess, untilOutput } from './support/process.js';

const dir = mkdtempSync(join(tmpdir(), 'sitefleet-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HOOK = `export async function resolve(s, c, next) {
  const r = await next(s, c);
  const m = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(r.url);
  if (m) (await import('node:fs')).appendFileSync(process.env.SITEFLEET_TEST_MODULES, m[1] + '\\n');
  return r;
}`;
const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify('data:text/javascript,' + encodeURIComponent(HOOK))});`;

let n = 0;
/** Env for a child process whose resolved packages go to a file; `loaded()` reads the set. */
function watched(): { env: Record<string, string>; loaded(): Set<string> } {
  const file = join(dir, `modules-${++n}.txt`);
  return {
    env: { NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(REGISTER)}`, SITEFLEET_TEST_MODULES: file },
    loaded: () => new Set(readFileSync(file, 'utf8').split('\n').filter(Boolean)),
  };
}

describe('a process loads at start only what it uses', () => {
  const data = join(dir, 'data');

  it('serve loads express, and no undici or jose before an outgoing call or a token', async () => {
    const w = watched();
    const s = await serveProcess(['--data-dir', data], w.env);
    await s.stop();
    const loaded = w.loaded();
    expect(loaded.has('express')).toBe(true); // the hook sees what is loaded
    expect(loaded.has('zod')).toBe(true);
    expect(loaded.has('undici')).toBe(false);
    expect(loaded.has('jose')).toBe(false);
    expect(loaded.has('csv-parse')).toBe(false);
    expect(loaded.has('@streamparser/json')).toBe(false);
  });

  it('a CLI command and a stdio MCP server load neither express nor undici', async () => {
    const keys = watched();
    const r = await cli(['keys', 'list', '--data-dir', data], keys.env);
    expect(r.code, r.stderr).toBe(0);
    expect([...keys.loaded()].filter((m) => ['express', 'undici', 'jose', 'csv-parse', '@streamparser/json'].includes(m))).toEqual([]);

    const mcp = watched();
    const p = run(['mcp', '--data-dir', data], mcp.env);
    p.child.stdin!.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
      }) + '\n',
    );
    await untilOutput(p.child, p.stdout, /"id":1/, { ms: 15_000, what: 'mcp', errors: p.stderr });
    p.child.stdin!.end();
    await p.exit;
    const loaded = mcp.loaded();
    expect(loaded.has('@modelcontextprotocol/sdk')).toBe(true);
    expect([...loaded].filter((m) => ['express', 'undici', 'jose'].includes(m))).toEqual([]);
  });
});
