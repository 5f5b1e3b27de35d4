// Text the store cannot keep (issue 35, finding 4): a NUL character or an unpaired surrogate in any string of an
// ability's input is a 400 that names the parameter and the problem, through every door (REST JSON, form and query,
// the abilities API, MCP), and nothing is written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp, type McpTestClient } from './support/mcp.js';
import { startServer, type TestServer } from './support/server.js';

let s: TestServer;
let mcp: McpTestClient;
beforeAll(async () => {
  s = await startServer();
  mcp = await connectMcp(s);
});
afterAll(async () => {
  await mcp.close();
  await s.close();
});

const NUL = 'holds a NUL character (U+0000), which text may not contain.';
const LONE = (cp: string) => `holds an unpaired surrogate (U+${cp}), which is not valid Unicode text.`;
const tagCount = () => s.services.store.count('tags');

describe('text the store cannot keep, refused at every door', () => {
  it('REST, JSON body: a NUL or a lone surrogate in a field is 400 rest_invalid_param naming it; nothing is created', async () => {
    const before = tagCount();
    const nul = await s.rest('/tags/add', { method: 'POST', json: { name: 'a\u0000b' } });
    expect(nul.status).toBe(400);
    expect(nul.body).toMatchObject({
      code: 'rest_invalid_param',
      message: 'Invalid parameter(s): name',
      data: { params: { name: `name ${NUL}` } },
    });
    // The escape as a client writes it in the JSON text.
    for (const [text, cp] of [
      ['{"name":"x\\ud800"}', 'D800'],
      ['{"name":"\\udc00y"}', 'DC00'],
      ['{"name":"\\udc00\\ud800"}', 'DC00'],
    ] as const) {
      const r = await s.rest('/tags/add', { method: 'POST', body: text, headers: { 'content-type': 'application/json' } });
      expect([r.status, r.body.code, r.body.data.params]).toEqual([400, 'rest_invalid_param', { name: `name ${LONE(cp)}` }]);
    }
    expect(tagCount()).toBe(before);
  });

  it('REST, urlencoded form and query string: %00 is refused the same way', async () => {
    const before = tagCount();
    const form = await s.rest('/tags/add', {
      method: 'POST',
      body: 'name=a%00b&color=%2321ba45',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect([form.status, form.body.code, form.body.data.params]).toEqual([400, 'rest_invalid_param', { name: `name ${NUL}` }]);
    const query = await s.rest('/sites?search=%00');
    expect([query.status, query.body.code, query.body.data.params]).toEqual([400, 'rest_invalid_param', { search: `search ${NUL}` }]);
    expect(tagCount()).toBe(before);
  });

  it('abilities API: 400 ability_invalid_input names input[...] and the problem, in JSON bodies and bracketed queries', async () => {
    const before = tagCount();
    const body = await s.ability('add-tag-v1', { name: 'lone \ud83d' });
    expect(body.status).toBe(400);
    expect(body.body).toMatchObject({
      code: 'ability_invalid_input',
      message: `Ability "svc/add-tag-v1" has invalid input. Reason: input[name] ${LONE('D83D')}`,
      data: { status: 400, params: { name: `input[name] ${LONE('D83D')}` } },
    });
    const query = await s.ability('list-sites-v1', undefined, { method: 'GET', query: 'input[search]=a%00' });
    expect([query.status, query.body.code, query.body.message]).toEqual([
      400,
      'ability_invalid_input',
      `Ability "svc/list-sites-v1" has invalid input. Reason: input[search] ${NUL}`,
    ]);
    // Nested values and object keys too.
    const nested = await s.ability('sync-sites-v1', { site_ids_or_domains: [1, 'x\u0000.example'] });
    expect([nested.status, nested.body.message]).toEqual([
      400,
      `Ability "svc/sync-sites-v1" has invalid input. Reason: input[site_ids_or_domains][1] ${NUL}`,
    ]);
    const key = await s.ability('add-tag-v1', { name: 'fine', ['k\u0000']: 1 });
    expect([key.status, key.body.message]).toEqual([
      400,
      'Ability "svc/add-tag-v1" has invalid input. Reason: input has a key "k\\u0000" that holds a NUL character (U+0000), which text may not contain.',
    ]);
    expect(tagCount()).toBe(before);
  });

  it('MCP: the tool call is an error with the same code and message; nothing is created', async () => {
    const before = tagCount();
    const r = await mcp.call('add-tag-v1', { name: 'a\u0000' });
    expect(r.isError).toBe(true);
    expect(r.body).toMatchObject({
      code: 'ability_invalid_input',
      message: `Ability "svc/add-tag-v1" has invalid input. Reason: input[name] ${NUL}`,
    });
    expect(tagCount()).toBe(before);
  });

  it('refuses input nested more than 64 levels deep (the bound of the walk), and walks 63 levels', async () => {
    const nest = (levels: number): unknown => (levels === 0 ? 'leaf' : { a: nest(levels - 1) });
    // MCP hands the registry typed JSON: the walk's own bound speaks.
    const deep = await mcp.call('add-tag-v1', { name: 'deep', deep: nest(64) });
    expect(deep.isError).toBe(true);
    expect(deep.body).toMatchObject({
      code: 'ability_invalid_input',
      message: `Ability "svc/add-tag-v1" has invalid input. Reason: input[deep]${'[a]'.repeat(63)} is nested more than 64 levels deep.`,
    });
    // One level less is walked through, and the schema then speaks (the field is unknown).
    const within = await mcp.call('add-tag-v1', { name: 'deep', deep: nest(63) });
    expect(within.body).toMatchObject({
      message: 'Ability "svc/add-tag-v1" has invalid input. Reason: deep is not a valid property of Object.',
    });
    // Over HTTP the door's body bound (the same 64 levels) refuses it before the registry sees it.
    const door = await s.ability('add-tag-v1', { name: 'deep', deep: nest(64) });
    expect([door.status, door.body.code]).toEqual([400, 'rest_invalid_param']);
  });

  it('keeps text that is merely unusual: paired surrogates (emoji), other control characters, U+FFFD', async () => {
    const r = await s.rest('/tags/add', { method: 'POST', json: { name: 'ok 😀 \u2028 \u0001 \ufffd' } });
    expect(r.status).toBe(200);
    expect(r.body.data.name).toBe('ok 😀 \u2028 \u0001 \ufffd');
  });
});
