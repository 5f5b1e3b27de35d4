// Test support: an MCP client connected in-process (InMemoryTransport) to the server's registry, as stdio would be.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { buildMcpServer } from '../../src/mcp/server.js';
import type { TestServer } from './server.js';

export interface McpTestClient {
  client: Client;
  /** Calls a tool; answers its structuredContent and whether it was an error. */
  call(name: string, args?: Record<string, unknown>): Promise<{ isError: boolean; body: any }>;
  close(): Promise<void>;
}

export async function connectMcp(s: TestServer): Promise<McpTestClient> {
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await buildMcpServer(s.registry, { principal: { kind: 'local', name: 'stdio' } }, s.services).connect(serverSide);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(clientSide);
  return {
    client,
    async call(name, args = {}) {
      const r = await client.callTool({ name, arguments: args });
      return { isError: r.isError === true, body: r.structuredContent };
    },
    close: () => client.close(),
  };
}
