// Fuzzing every tool over MCP (an in-memory SDK client) with fast-check (test/support/fuzz.ts: the server, the random values): wrong types, missing and
// extra fields, huge and empty strings, unicode, odd numbers, deep nesting. Properties: no 5xx, an error names the
// problem in {code, message, data:{status}}, and a rejected request changes nothing. The doors are three files so that
// the test workers share them out (one file was 81 s, the longest of the suite).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOLSETS } from '../src/core/ability.js';
import { buildMcpServer } from '../src/mcp/server.js';
import type { TestServer } from './support/server.js';
import { FUZZED, RUNS, generationOf, startFuzzServer, value } from './support/fuzz.js';

let s: TestServer;
let mcp: Client;
beforeAll(async () => {
  s = await startFuzzServer();
  const [a, b] = InMemoryTransport.createLinkedPair();
  // Every toolset named, the opt-in ones (admin-login) too, so that every tool is there to fuzz.
  await buildMcpServer(s.registry, { principal: { kind: 'local', name: 'stdio' }, toolsets: TOOLSETS }, s.services).connect(a);
  mcp = new Client({ name: 'fuzz', version: '1' });
  await mcp.connect(b);
});
afterAll(async () => {
  await mcp.close();
  await s.close();
});

const generation = () => generationOf(s);

describe('MCP', () => {
  it.each(FUZZED.map((a) => [a.name]))('%s: random arguments give a result or an isError result naming the problem', async (name) => {
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.string({ maxLength: 12 }), value, { maxKeys: 5 }), async (args) => {
        const before = generation();
        const r = await mcp.callTool({ name, arguments: args });
        if (r.isError) {
          const body = r.structuredContent as { code: string; data: { status: number } };
          expect(body.code).toEqual(expect.any(String));
          expect(body.data.status).toBeLessThan(500);
          expect(generation()).toBe(before);
        }
      }),
      { numRuns: RUNS },
    );
  });
});
