// Hardening: file modes, no secret in any answer or log line, concurrent mixed traffic leaves the store
// consistent, and SIGKILL of `serve` during a stream of acknowledged writes loses none of them.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startChildSim } from '../src/child/simulator/server.js';
import { Store } from '../src/store/store.js';
import type { SiteRecord, TagRecord } from '../src/store/records.js';
import { cli, lastLine, serveProcess } from './support/process.js';
import { seedSites, startServer, tempDir } from './support/server.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? [join(dir, e.name), ...walk(join(dir, e.name))] : [join(dir, e.name)],
  );
}

describe('secrets', () => {
  it('never shows a token, password or private key in an answer, a log line or a data file', async () => {
    const sim = await startChildSim({ sites: 2 });
    closers.push(() => sim.close());
    const dir = tempDir();
    const p = await serveProcess(['--data-dir', dir, '--allow-private-sites'], { SITEFLEET_LOG: 'debug' });
    closers.push(() => p.stop());
    const token = /API key:\s+(\S+)/.exec(p.stdout())![1]!;
    const password = /password:\s+(.+)/.exec(p.stdout())![1]!.trim();
    const basicAuth = `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
    const bodies: string[] = [];
    const call = async (path: string, init: RequestInit = {}) => {
      const res = await fetch(`${p.url}${path}`, init);
      bodies.push(await res.text());
      return res;
    };
    const json = { 'content-type': 'application/json' };
    const info = sim.sites[0]!;
    await call('/wp-json/svc/v2/sites/add', {
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${token}` },
      body: JSON.stringify({
        url: info.url,
        admin: info.admin,
        admin_password: info.password,
        http_user: 'u',
        http_pass: 'http-secret-pass',
      }),
    });
    await call('/wp-json/svc/v2/sites/add', {
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${token}` },
      body: JSON.stringify({ url: sim.sites[1]!.url, admin: 'admin', admin_password: 'wrong-secret-pw' }),
    });
    await call('/wp-json/svc/v2/sites/1', { headers: { authorization: `Bearer ${token}` } });
    await call('/wp-json/svc/v2/sites?full_data=true', { headers: { authorization: `Bearer ${token}` } });
    await call('/wp-json/wp-abilities/v1/abilities/svc/get-site-v1/run?input%5Bsite_id_or_domain%5D=1', {
      headers: { authorization: basicAuth },
    });
    await call('/wp-json/wp-abilities/v1/abilities/svc/reconnect-site-v1/run', {
      method: 'POST',
      headers: { ...json, authorization: basicAuth },
      body: JSON.stringify({ input: { site_id_or_domain: 1, admin_password: info.password } }),
    });
    await call('/wp-json/svc/v2/sites', { headers: { authorization: `Bearer ${token.slice(0, -2)}xx` } });
    await call('/wp-json/svc/v2/sites', { headers: { authorization: basicAuth } });
    const mcp = new Client({ name: 't', version: '1' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${p.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    bodies.push(JSON.stringify(await mcp.callTool({ name: 'get-site-v1', arguments: { site_id_or_domain: 1, include_stats: true } })));
    bodies.push(JSON.stringify(await mcp.listTools()));
    await mcp.close();
    const keyOut = await cli(['keys', 'list', '--data-dir', dir]);
    const privateKey = JSON.parse(readFileSync(join(dir, 'secrets', '1.json'), 'utf8')).private_key_pem as string;
    await p.stop();
    const logs = p.stderr();
    expect(logs.split('\n').length).toBeGreaterThan(5);
    const secrets = [
      token,
      token.slice('sf_000000000000_'.length) /* the secret (base64url may hold '_') */,
      password,
      password.replace(/ /g, ''),
      info.password,
      'http-secret-pass',
      'wrong-secret-pw',
      privateKey.split('\n')[1]!,
    ];
    const dataFiles = walk(dir)
      .filter((f) => f.endsWith('.json') && !f.includes(`${join('secrets', '')}`))
      .map((f) => readFileSync(f, 'utf8'));
    for (const [where, text] of [
      ['answers', bodies.join('\n')],
      ['logs', logs],
      ['keys list', keyOut.stdout],
      ['data files', dataFiles.join('\n')],
    ] as const) {
      for (const s of secrets) expect(text.includes(s), `${where} contain a secret (${s.slice(0, 8)}…)`).toBe(false);
      expect(text, where).not.toMatch(/PRIVATE KEY/);
    }
  });

  it('keeps data files at mode 0600 in 0700 directories', async () => {
    const s = await startServer();
    closers.push(() => s.close());
    await seedSites(s.services, 1);
    await s.services.store.write((tx) => {
      tx.putBlob('secrets', 1, { private_key_pem: 'x', http_pass: null, regverify: null });
      tx.putBlob('site-data', 1, { plugins: [] });
    });
    await s.rest('/tags/add', { method: 'POST', json: { name: 'm' } });
    expect(statSync(s.dataDir).mode & 0o777).toBe(0o700);
    for (const f of walk(s.dataDir)) {
      const mode = statSync(f).mode & 0o777;
      if (statSync(f).isDirectory()) expect(mode, f).toBe(0o700);
      else if (f.endsWith('.json')) expect(mode, f).toBe(0o600);
    }
  });
});

describe('concurrency', () => {
  it('keeps the store consistent under 100 parallel mixed requests across REST, abilities and MCP', async () => {
    const s = await startServer();
    closers.push(() => s.close());
    const sites = await seedSites(s.services, 10);
    const mcp = new Client({ name: 't', version: '1' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${s.creds.key.read_write}` } },
      }),
    );
    closers.push(() => mcp.close());
    const base = await s.rest('/tags/add', { method: 'POST', json: { name: 'base' } });
    const tagId = base.body.data.id as number;
    const ops: Array<Promise<unknown>> = [];
    for (let i = 0; i < 100; i++) {
      const site = sites[Math.floor(i / 5) % 10]!;
      switch (i % 5) {
        case 0:
          ops.push(s.rest('/tags/add', { method: 'POST', json: { name: `rest-${i}` } }));
          break;
        case 1:
          ops.push(s.ability('add-tag-v1', { name: `ab-${i}` }));
          break;
        case 2:
          ops.push(mcp.callTool({ name: 'add-tag-v1', arguments: { name: `mcp-${i}` } }));
          break;
        case 3:
          ops.push(s.rest(`/sites/${site.id}/edit`, { method: 'POST', json: { groupids: String(tagId), name: `n${i}` } }));
          break;
        default:
          ops.push(s.ability('list-sites-v1', { per_page: 100 }, { method: 'GET' }));
          break;
      }
    }
    await Promise.all(ops);
    const tags = await s.rest('/tags?per_page=100');
    expect(tags.body.total).toBe(1 + 60);
    expect(new Set(tags.body.data.map((t: { id: number }) => t.id)).size).toBe(61);
    expect((await s.rest(`/tags/${tagId}`)).body.data.sites_count).toBe(10);
    const onDisk = await Store.open(s.dataDir);
    expect(onDisk.count('tags')).toBe(61);
    expect([...onDisk.all<SiteRecord>('sites')].filter((x) => x.tag_ids?.includes(tagId)).map((x) => x.id)).toEqual(sites.map((x) => x.id));
    await onDisk.close();
  });
});

describe('crash safety of serve', () => {
  it('keeps every acknowledged write across SIGKILL, three times over', async () => {
    const dir = tempDir();
    const token = lastLine((await cli(['keys', 'create', '--name', 'k', '--data-dir', dir])).stdout);
    const acked: string[] = [];
    // Resolved by the acknowledgement that brings `acked` to `target`: the kill comes right after it, no polling.
    let reached: { target: number; resolve: () => void } | null = null;
    for (let round = 0; round < 3; round++) {
      const p = await serveProcess(['--data-dir', dir]);
      let stop = false;
      const writer = async (w: number) => {
        for (let i = 0; !stop; i++) {
          const name = `r${round}-w${w}-${i}`;
          try {
            const res = await fetch(`${p.url}/wp-json/svc/v2/tags/add`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify({ name }),
            });
            if (res.status === 200) {
              acked.push(name);
              if (reached && acked.length >= reached.target) reached.resolve();
            }
          } catch {
            return;
          }
        }
      };
      const target = acked.length + 40 + round * 30;
      const enough = new Promise<void>((resolve) => (reached = { target, resolve }));
      const writers = Array.from({ length: 6 }, (_, w) => writer(w));
      await enough;
      p.child.kill('SIGKILL');
      stop = true;
      await Promise.all(writers);
      await p.exit;
    }
    const store = await Store.open(dir);
    const names = new Set([...store.all<TagRecord>('tags')].map((t) => t.name));
    for (const n of acked) expect(names.has(n), n).toBe(true);
    for (const f of readdirSync(dir).filter((x) => x.endsWith('.json')))
      expect(() => JSON.parse(readFileSync(join(dir, f), 'utf8'))).not.toThrow();
    await store.close();
  });
});

describe('limits', () => {
  it('answers 413 to JSON bodies over 1 MB and 431 to request lines or headers over 16 KB, changing nothing', async () => {
    const s = await startServer();
    closers.push(() => s.close());
    const big = JSON.stringify({ name: 'x', pad: 'y'.repeat(1_100_000) });
    const rest = await fetch(`${s.restBase}/tags/add`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.creds.key.read_write}`, 'content-type': 'application/json' },
      body: big,
    });
    expect(rest.status).toBe(413);
    expect(await rest.json()).toMatchObject({ code: 'svc_request_too_large', data: { status: 413 } });
    const ab = await fetch(`${s.abilitiesBase}/abilities/svc/add-tag-v1/run`, {
      method: 'POST',
      headers: { authorization: s.creds.admin, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { name: 'y'.repeat(1_100_000) } }),
    });
    expect(ab.status).toBe(413);
    const longUrl = await fetch(`${s.restBase}/sites?search=${'a'.repeat(20_000)}`, {
      headers: { authorization: `Bearer ${s.creds.key.read_write}` },
    });
    expect(longUrl.status).toBe(431);
    expect(await longUrl.json()).toMatchObject({ code: 'svc_request_header_too_large' });
    const header = await fetch(`${s.restBase}/sites`, {
      headers: { authorization: `Bearer ${s.creds.key.read_write}`, 'x-pad': 'p'.repeat(20_000) },
    });
    expect(header.status).toBe(431);
    expect(s.services.store.count('tags')).toBe(0);
  });
});
