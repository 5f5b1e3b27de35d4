// LazyAgent (src/child/undici.ts): the agent every outgoing call goes through, made on its first request. A real
// HTTP server on loopback answers; an agent ended refuses the next call instead of quietly making a new one.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LazyAgent } from '../src/child/undici.js';

let server: Server;
let url: string;
const seen: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.end('ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('LazyAgent', () => {
  it('makes one agent for first calls made at once, and answers through it', async () => {
    const agent = new LazyAgent({ connections: 2, keepAliveTimeout: 1_000 });
    const [a, b] = await Promise.all([agent.ready(), agent.ready()]);
    expect(a).toBe(b);
    const res = await agent.request(`${url}/one`, { method: 'GET' });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('ok');
    expect(await agent.ready()).toBe(a);
    await agent.end();
  });

  it('refuses a call once ended, and sends nothing', async () => {
    const agent = new LazyAgent({ connections: 1 });
    await (await agent.request(`${url}/before`, { method: 'GET' })).body.text();
    await agent.end('close');
    await expect(agent.request(`${url}/after`, { method: 'GET' })).rejects.toThrow('This HTTP agent is closed.');
    expect(seen).toContain('GET /before');
    expect(seen).not.toContain('GET /after');
    // Ending one that was never used is nothing, and it refuses too.
    const unused = new LazyAgent({});
    await unused.end();
    await expect(unused.ready()).rejects.toThrow('closed');
  });
});
