// Completions at 20,000 sites: answered from the domain's prefix indexes (two binary searches), not a scan. Measured
// through the SDK client over HTTP and in the domain alone; the figures are printed.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { seedSites, startServer, type TestServer } from './support/server.js';

const N = 20_000;
let s: TestServer;
let c: Client;
beforeAll(async () => {
  s = await startServer();
  await seedSites(s.services, N, (i) => ({ url: `https://shop${i + 1}.example.com/`, name: `Shop ${i + 1}` }));
  c = new Client({ name: 'scale', version: '1' });
  await c.connect(
    new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${s.creds.key.read_write}` } },
    }),
  );
}, 120_000);
afterAll(async () => {
  await c?.close();
  await s?.close();
});

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

it(`completes a site among ${N.toLocaleString('en')} in well under a millisecond in the domain`, () => {
  let t = performance.now();
  const first = s.services.sites.suggest('shop1999', 100);
  const buildMs = performance.now() - t;
  expect(first.sites.map((x) => x.url)).toEqual([
    'https://shop1999.example.com/',
    ...Array.from({ length: 10 }, (_, i) => `https://shop1999${i}.example.com/`),
  ]);
  expect(first.more).toBe(false);
  const many = s.services.sites.suggest('shop', 100);
  expect([many.sites.length, many.more]).toEqual([100, true]);
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    t = performance.now();
    s.services.sites.suggest(`shop${(i * 97) % N}`, 100);
    times.push(performance.now() - t);
  }
  console.log(`suggest at ${N} sites: index build ${buildMs.toFixed(1)} ms once, then p50 ${median(times).toFixed(3)} ms`);
  expect(median(times)).toBeLessThan(1);
});

it(`answers completion/complete over HTTP at ${N.toLocaleString('en')} sites about as fast as a ping`, async () => {
  const ref = { type: 'ref/prompt' as const, name: 'troubleshoot-site' };
  const times: number[] = [];
  const pings: number[] = [];
  for (let i = 0; i < 100; i++) {
    let t = performance.now();
    await c.ping();
    pings.push(performance.now() - t);
    t = performance.now();
    const r = await c.complete({ ref, argument: { name: 'site', value: `shop${i + 1}2` } });
    times.push(performance.now() - t);
    expect(r.completion.values[0]).toBe(`shop${i + 1}2.example.com`);
  }
  // The HTTP round trip dominates (the domain's part is microseconds); the absolute figure depends on the machine.
  console.log(`completion/complete over HTTP at ${N} sites: p50 ${median(times).toFixed(2)} ms (ping p50 ${median(pings).toFixed(2)} ms)`);
  expect(median(times)).toBeLessThan(50);
});
