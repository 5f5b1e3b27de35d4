// Shared fixtures for the door tests: a small fleet seeded through the store's own API, error-envelope
// assertions, JSON Schema validation (the same Ajv validator MCP clients use) and raw HTTP requests.
import { request } from 'node:http';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { expect } from 'vitest';
import type { Services } from '../../src/domain/index.js';
import type { ClientRecord, SiteRecord } from '../../src/store/records.js';
import type { TagWithSites } from '../../src/domain/tags.js';
import { seedSites } from './server.js';

/** The slugs issue 2 names, in discovery order. */
export const SITE_ABILITIES = [
  'list-sites-v1',
  'get-site-v1',
  'count-sites-v1',
  'get-sites-basic-v1',
  'update-site-v1',
  'delete-site-v1',
  'suspend-site-v1',
  'unsuspend-site-v1',
  'suspend-sites-v1',
] as const;
export const TAG_ABILITIES = [
  'list-tags-v1',
  'get-tag-v1',
  'add-tag-v1',
  'update-tag-v1',
  'delete-tag-v1',
  'get-tag-sites-v1',
  'get-tag-clients-v1',
] as const;
export const ISSUE_ABILITIES = [...SITE_ABILITIES, ...TAG_ABILITIES];

/** Annotations the reference gives (abilities §1.4): [readonly, destructive, idempotent]. */
export const ANNOTATIONS: Record<string, [boolean, boolean, boolean]> = {
  'list-sites-v1': [true, false, true],
  'get-site-v1': [true, false, true],
  'count-sites-v1': [true, false, true],
  'get-sites-basic-v1': [true, false, true],
  'update-site-v1': [false, false, true],
  'delete-site-v1': [false, true, false],
  'suspend-site-v1': [false, false, true],
  'unsuspend-site-v1': [false, false, true],
  'suspend-sites-v1': [false, false, true],
  'list-tags-v1': [true, false, true],
  'get-tag-v1': [true, false, true],
  'add-tag-v1': [false, false, false],
  'update-tag-v1': [false, false, true],
  'delete-tag-v1': [false, true, true],
  'get-tag-sites-v1': [true, false, true],
  'get-tag-clients-v1': [true, false, true],
};
export const READ_ONLY_ABILITIES = ISSUE_ABILITIES.filter((n) => ANNOTATIONS[n]![0]);

/** Asserts the {code, message, data:{status}} error envelope with this status and code. */
export function expectError(r: { status: number; body: any }, status: number, code: string, message?: string | RegExp): void {
  expect({ status: r.status, code: r.body?.code }).toEqual({ status, code });
  expect(typeof r.body.message).toBe('string');
  expect(r.body.message.length).toBeGreaterThan(0);
  expect(r.body.data).toMatchObject({ status });
  if (typeof message === 'string') expect(r.body.message).toBe(message);
  else if (message) expect(r.body.message).toMatch(message);
}

/** The WordPress wording of a schema failure on the abilities door. */
export const invalidInput = (ability: string, reason: string) => `Ability "svc/${ability}" has invalid input. Reason: ${reason}`;

const ajv = new AjvJsonSchemaValidator();
/** Validates a value against a JSON Schema with the validator MCP clients use; fails with Ajv's message. */
export function expectSchema(value: unknown, schema: unknown): void {
  const r = ajv.getValidator(schema as never)(value);
  expect(r.valid ? '' : r.errorMessage).toBe('');
}

export async function seedClients(
  services: Services,
  clients: Array<Pick<ClientRecord, 'name' | 'email'> & Partial<ClientRecord>>,
): Promise<ClientRecord[]> {
  return services.store.write((tx) =>
    clients.map((c) => tx.insert<ClientRecord>('clients', { status: 'active', created_at: new Date().toISOString(), ...c })),
  );
}

/** A tag made by the tag service, then given to sites (each keeps the tags it had). */
export async function seedTag(
  services: Services,
  name: string,
  siteIds: number[] = [],
  color: string | null = null,
): Promise<TagWithSites> {
  const tag = await services.store.write((tx) => {
    const t = services.tags.create(tx, { name, color });
    for (const id of siteIds) services.tags.setSiteTags(tx, id, [...(tx.get<SiteRecord>('sites', id)?.tag_ids ?? []), t.id]);
    return t;
  });
  return services.tags.get(tag.id)!;
}

export interface Fleet {
  sites: SiteRecord[];
  clients: ClientRecord[];
  tags: { production: TagWithSites; staging: TagWithSites; empty: TagWithSites };
}

/**
 * Six sites in URL order alpha..foxtrot (ids 1..6 on a fresh store), two clients and three tags:
 *   1 alpha   https://alpha.example.com/      client Acme  connected, 2 plugin updates
 *   2 bravo   http://www.bravo.example.org/   client Acme  disconnected (last sync failed)
 *   3 charlie https://charlie.example.net/    client Beta  suspended
 *   4 delta   https://delta.example.com/blog/              connected (sub-directory site)
 *   5 echo    https://echo.example.com/                    suspended and failed sync
 *   6 foxtrot https://foxtrot.example.com/                 connected
 * Tags: Production #21ba45 → 1,2,3; staging (no colour) → 4; Empty → none.
 */
export async function seedFleet(services: Services): Promise<Fleet> {
  const clients = await seedClients(services, [
    { name: 'Beta Ltd', email: 'ops@beta.example' },
    { name: 'Acme Corp', email: 'it@acme.example' },
  ]);
  const acme = clients[1]!.id;
  const beta = clients[0]!.id;
  const stats = { plugin_updates: 2, theme_updates: 1, wp_update_available: true, health_score: 87 };
  const specs: Array<Partial<SiteRecord>> = [
    { url: 'https://alpha.example.com/', name: 'Alpha', client_id: acme, stats, last_sync: '2026-01-02T03:04:05.000Z', notes: 'first' },
    { url: 'http://www.bravo.example.org/', name: 'Bravo', client_id: acme, sync_error: 'HTTP error - timed out' },
    { url: 'https://charlie.example.net/', name: 'Charlie', client_id: beta, suspended: true },
    { url: 'https://delta.example.com/blog/', name: 'Delta' },
    { url: 'https://echo.example.com/', name: 'Echo', suspended: true, sync_error: 'NOMAINWP' },
    { url: 'https://foxtrot.example.com/', name: 'Foxtrot' },
  ];
  const sites = await seedSites(services, specs.length, (i) => specs[i]!);
  const production = await seedTag(services, 'Production', [sites[0]!.id, sites[1]!.id, sites[2]!.id], '#21ba45');
  const staging = await seedTag(services, 'staging', [sites[3]!.id]);
  const empty = await seedTag(services, 'Empty');
  return { sites, clients, tags: { production, staging, empty } };
}

/** A request with nothing added by fetch (a chosen Host header, for instance). */
export function rawRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: any; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = text ? JSON.parse(text) : null;
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
      });
    });
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

/** The MCP initialize request, for raw calls to /mcp. */
export const MCP_INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-test', version: '1.0.0' } },
});
export const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
