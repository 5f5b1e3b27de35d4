// Fuzzing every tool over MCP (an in-memory SDK client), with fast-check.
// Wrong types, missing and extra fields, huge and empty strings, unicode, odd numbers, deep nesting. Properties: no 5xx,
// an error names the problem in {code, message, data:{status}}, and a rejected request changes nothing. The server and
// the random values are test/support/fuzz.ts's; the doors are three files so that the test workers share them out (one
// file was 81 s, the longest of the suite).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOLSETS } from '../src/core/ability.js';
import { buildMcpServer } from '../src/mcp/server.js';
import { FUZZED, RUNS, useFuzzServer, value } from './support/fuzz.js';

const fuzz = useFuzzServer();
const generation = fuzz.generation;
let mcp: Client;
beforeAll(async () => {
  const s = fuzz.s;
  const [a, b] = InMemoryTransport.createLinkedPair();
  // Every toolset named, the opt-in ones (admin-login) too, so that every tool is there to fuzz.
  await buildMcpServer(s.registry, { principal: { kind: 'local', name: 'stdio' }, toolsets: TOOLSETS }, s.services).connect(a);
  mcp = new Client({ name: 'fuzz', version: '1' });
  await mcp.connect(b);
});
afterAll(async () => {
  await mcp.close();
});

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
