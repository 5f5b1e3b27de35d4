// Request input on every door (issues #35 finding 1 and #27 defects 1–4, 14): forms parsed in linear time and bounded
// on every body type, no body read where none is taken, flags read as WordPress reads booleans, repeated keys kept,
// two names of one field reconciled, query arguments a route does not read ignored and named, and errors that say
// what is actually wrong.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeForm } from '../src/child/form.js';
import { MAX_INPUT_DEPTH, MAX_INPUT_FIELDS } from '../src/core/input.js';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';
import { basic } from './support/server.js';
import { fleetGeneration } from './support/generation.js';

let f: Fleet;
let ids: Array<{ id: number; url: string }>;
let mcp: McpTestClient;
beforeAll(async () => {
  f = await startFleet({ sim: { sites: 3, seed: 7 } });
  ids = await registerSites(f, 3);
  mcp = await connectMcp(f.s);
});
afterAll(async () => {
  await mcp?.close();
  await f?.close();
});

const generation = () => fleetGeneration(f.s.services.store);
const form = (path: string, body: string, method = 'POST') =>
  f.s.rest(path, { method, body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
const fields = (n: number, name = '_pad[]') => Array.from({ length: n }, () => `${name}=1`).join('&');
const nested = (depth: number) => `_deep${'[a]'.repeat(depth)}=1`;
const deepJson = (depth: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
};
/** A REST request with a body on any method (fetch refuses a body on GET and HEAD). */
function rawRequest(method: string, path: string, type: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${f.s.restBase}${path}`,
      {
        method,
        headers: { authorization: `Bearer ${f.s.creds.key.read_write}`, 'content-type': type, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
/** The simulator's plugins of site i that are neither active, must-use nor the child. */
const inactive = (i: number) => f.sim.state(i).plugins.filter((p) => !p.active && !p.mu && !p.isChild);
const hasPlugin = (i: number, slug: string) => f.sim.state(i).plugins.some((p) => p.slug === slug);

describe('form bodies: linear, bounded, never read where no body is taken (#35 finding 1)', () => {
  it('decodes 100,000 a[]= fields in linear time (the bracket parser was quadratic: 25,000 took 22–42 s)', () => {
    const body = fields(100_000, 'a[]');
    const t = performance.now();
    const map = decodeForm(body);
    expect(performance.now() - t).toBeLessThan(2000);
    expect(Object.keys(map.a as object).length).toBe(100_000);
  });

  it('never reads the body of a GET: 25,000 form fields (or broken JSON) on GET /sites answer at once', async () => {
    const t = performance.now();
    const r = await rawRequest('GET', '/sites', 'application/x-www-form-urlencoded', fields(25_000, 'a[]'));
    expect(r.status).toBe(200);
    expect(performance.now() - t).toBeLessThan(5000);
    const broken = await rawRequest('GET', '/sites', 'application/json', '{"not json');
    expect(broken.status).toBe(200);
    // HEAD likewise; and the connection carries the next request (the unread body was discarded, not left in the way).
    expect((await rawRequest('HEAD', '/sites', 'application/json', '{"not json')).status).toBe(200);
  });

  it(`takes ${MAX_INPUT_FIELDS} urlencoded fields and refuses one more (413), changing nothing`, async () => {
    const accepted = generation();
    const ok = await form('/tags/add', `name=Fields+ok&${fields(MAX_INPUT_FIELDS - 1)}`);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const before = generation();
    // The measure sees an accepted write, so an unchanged one means something.
    expect(before).toBeGreaterThan(accepted);
    const past = await form('/tags/add', `name=Fields+past&${fields(MAX_INPUT_FIELDS)}`);
    expect([past.status, past.body.code]).toEqual([413, 'svc_request_too_large']);
    expect(past.body.message).toContain(`more than ${MAX_INPUT_FIELDS} fields`);
    // 25,000 fields: refused as soon as the bound is passed.
    const attack = await form('/tags/add', `name=Attack&${fields(25_000, 'a[]')}`);
    expect(attack.status).toBe(413);
    expect(generation()).toBe(before);
  });

  it(`takes ${MAX_INPUT_DEPTH} brackets and refuses one more (400 naming the field), in an urlencoded body and in a query string`, async () => {
    expect((await form('/tags/add', `name=Deep+ok&${nested(MAX_INPUT_DEPTH)}`)).status).toBe(200);
    const before = generation();
    const past = await form('/tags/add', `name=Deep+past&${nested(MAX_INPUT_DEPTH + 1)}`);
    expect([past.status, past.body.code]).toEqual([400, 'rest_invalid_param']);
    expect(past.body.data.params).toHaveProperty('_deep');
    const query = await f.s.rest(`/sites?${nested(MAX_INPUT_DEPTH + 1)}`);
    expect([query.status, query.body.code]).toEqual([400, 'rest_invalid_param']);
    expect(generation()).toBe(before);
  });

  it(`refuses a query string of more than ${MAX_INPUT_FIELDS} arguments on both doors`, async () => {
    expect((await f.s.rest(`/sites?${fields(MAX_INPUT_FIELDS, 'x')}`)).status).toBe(200);
    const past = await f.s.rest(`/sites?${fields(MAX_INPUT_FIELDS + 1, 'x')}`);
    expect([past.status, past.body.code]).toEqual([400, 'rest_invalid_param']);
    const ability = await f.s.ability('count-sites-v1', null, { method: 'GET', query: fields(MAX_INPUT_FIELDS + 1, 'x') });
    expect(ability.status).toBe(400);
  });

  it(`bounds a multipart form the same way: ${MAX_INPUT_FIELDS} fields and ${MAX_INPUT_DEPTH} brackets`, async () => {
    const fd = (n: number, extra?: string) => {
      const d = new FormData();
      d.append('name', `Multipart ${n}${extra ?? ''}`);
      for (let i = 1; i < n; i++) d.append('_pad[]', '1');
      if (extra) d.append(extra, '1');
      return d;
    };
    expect((await f.s.rest('/tags/add', { method: 'POST', body: fd(MAX_INPUT_FIELDS) })).status).toBe(200);
    const before = generation();
    expect((await f.s.rest('/tags/add', { method: 'POST', body: fd(MAX_INPUT_FIELDS + 1) })).status).toBe(413);
    const deep = await f.s.rest('/tags/add', { method: 'POST', body: fd(2, nested(MAX_INPUT_DEPTH + 1).slice(0, -2)) });
    expect([deep.status, deep.body.code]).toEqual([400, 'rest_invalid_param']);
    expect(generation()).toBe(before);
  });

  it(`bounds a JSON body: ${MAX_INPUT_FIELDS} top-level fields and ${MAX_INPUT_DEPTH} levels, on REST and on the abilities door`, async () => {
    const pad = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`_f${i}`, 1]));
    expect((await f.s.rest('/tags/add', { method: 'POST', json: { name: 'Wide ok', ...pad(MAX_INPUT_FIELDS - 1) } })).status).toBe(200);
    const before = generation();
    const w = await f.s.rest('/tags/add', { method: 'POST', json: { name: 'Wide', ...pad(MAX_INPUT_FIELDS) } });
    expect([w.status, w.body.code]).toEqual([413, 'svc_request_too_large']);
    const d = await f.s.rest('/tags/add', { method: 'POST', json: { name: 'Deep', _deep: deepJson(MAX_INPUT_DEPTH + 1) } });
    expect([d.status, d.body.code]).toEqual([400, 'rest_invalid_param']);
    expect(d.body.data.params).toHaveProperty('_deep');
    // Just inside the depth bound: read (and refused only as the unknown field it is, by the ability).
    const inside = await f.s.ability('add-tag-v1', { name: 'Deep ok', x: deepJson(MAX_INPUT_DEPTH - 2) });
    expect([inside.status, inside.body.code]).toEqual([400, 'ability_invalid_input']);
    const past = await f.s.ability('add-tag-v1', { name: 'Deep past', x: deepJson(MAX_INPUT_DEPTH) });
    expect([past.status, past.body.code]).toEqual([400, 'rest_invalid_param']);
    expect(generation()).toBe(before);
  });
});

describe('flags read as WordPress reads booleans, on every door (#27 defect 1)', () => {
  it('refuses dry_run=on, AAA or empty on a REST plugin delete, naming it, and deletes nothing', async () => {
    const slug = inactive(1)[0]!.slug;
    const before = f.sim.requests(1);
    for (const v of ['on', 'AAA', '', '2', 'y', 'yess']) {
      const r = await f.s.rest(`/sites/${ids[0]!.id}/plugins/delete?slug=${encodeURIComponent(slug)}&dry_run=${v}`, { method: 'DELETE' });
      expect([r.status, r.body.code], v).toEqual([400, 'rest_invalid_param']);
      expect(r.body.data.params, v).toHaveProperty('dry_run');
      expect(r.body.message, v).toContain('dry_run');
    }
    // Sent twice: two values are not one flag.
    const twice = await f.s.rest(`/sites/${ids[0]!.id}/plugins/delete?slug=${encodeURIComponent(slug)}&dry_run=1&dry_run=0`, {
      method: 'DELETE',
    });
    expect(twice.status).toBe(400);
    expect(hasPlugin(1, slug)).toBe(true);
    expect(f.sim.requests(1)).toBe(before);
    // WordPress's spellings, in any case, and upstream REST v2's "yes" (its documented flag spelling): a preview.
    for (const v of ['1', 'true', 'TRUE', 'True', 'yes', 'YES']) {
      const r = await f.s.rest(`/sites/${ids[0]!.id}/plugins/delete?slug=${encodeURIComponent(slug)}&dry_run=${v}`, { method: 'DELETE' });
      expect(r.body, v).toMatchObject({ success: 1, dry_run: true });
    }
    expect(hasPlugin(1, slug)).toBe(true);
  });

  it('refuses dry_run=AAA on a REST update run and applies nothing', async () => {
    const before = f.sim.state(2).upgradeLog.length;
    for (const v of ['AAA', 'on', 'off']) {
      const r = await form(`/updates/${ids[1]!.id}/update`, `dry_run=${v}`);
      expect([r.status, r.body.code], v).toEqual([400, 'rest_invalid_param']);
      expect(r.body.data.params).toHaveProperty('dry_run');
    }
    const json = await f.s.rest(`/updates/${ids[1]!.id}/update`, { method: 'POST', json: { dry_run: 'on' } });
    expect(json.status).toBe(400);
    expect(f.sim.state(2).upgradeLog.length).toBe(before);
    const dry = await form(`/updates/${ids[1]!.id}/update`, 'dry_run=true');
    expect(dry.body).toMatchObject({ success: 1, dry_run: true });
    expect(f.sim.state(2).upgradeLog.length).toBe(before);
  });

  it('refuses a misspelt flag through the abilities door (query and body) and deletes nothing; "TRUE"/"0" are read', async () => {
    const slug = inactive(1)[0]!.slug;
    const tag = (await f.s.ability('add-tag-v1', { name: 'Kept by a flag' })).body.id as number;
    const upgrades = f.sim.state(2).upgradeLog.length;
    for (const v of ['on', 'yes', 'AAA']) {
      const del = await f.s.ability('delete-site-plugins-v1', { site_id_or_domain: ids[0]!.id, slugs: [slug], dry_run: v, confirm: true });
      expect([del.status, del.body.code], v).toEqual([400, 'ability_invalid_input']);
      expect(del.body.message).toContain('dry_run');
      const run = await f.s.ability('run-updates-v1', { site_ids_or_domains: [ids[1]!.id], dry_run: v });
      expect(run.status, v).toBe(400);
      const q = await f.s.ability('delete-tag-v1', null, { method: 'DELETE', query: `input[tag_id]=${tag}&input[confirm]=${v}` });
      expect([q.status, q.body.code], v).toEqual([400, 'ability_invalid_input']);
    }
    expect(hasPlugin(1, slug)).toBe(true);
    expect(f.sim.state(2).upgradeLog.length).toBe(upgrades);
    const preview = await f.s.ability('delete-tag-v1', null, {
      method: 'DELETE',
      query: `input[tag_id]=${tag}&input[dry_run]=TRUE&input[confirm]=0`,
    });
    expect(preview.body).toMatchObject({ dry_run: true });
    expect((await f.s.ability('get-tag-v1', { tag_id: tag }, { method: 'GET' })).status).toBe(200);
  });

  it('reads "true"/1 as true through MCP and refuses "on", deleting nothing', async () => {
    const slug = inactive(1)[0]!.slug;
    const on = await mcp.call('delete-site-plugins-v1', { site_id_or_domain: ids[0]!.id, slugs: [slug], dry_run: 'on', confirm: true });
    expect(on.isError).toBe(true);
    expect(JSON.stringify(on.body)).toContain('dry_run');
    const bad = await mcp.call('run-updates-v1', { site_ids_or_domains: [ids[1]!.id], dry_run: 'AAA' });
    expect(bad.isError).toBe(true);
    expect(hasPlugin(1, slug)).toBe(true);
    const preview = await mcp.call('delete-site-plugins-v1', { site_id_or_domain: ids[0]!.id, slugs: [slug], dry_run: 'true' });
    expect(preview.isError, JSON.stringify(preview.body)).toBe(false);
    expect(preview.body).toMatchObject({ dry_run: true });
    const one = await mcp.call('delete-site-plugins-v1', { site_id_or_domain: ids[0]!.id, slugs: [slug], dry_run: 1 });
    expect(one.body).toMatchObject({ dry_run: true });
    expect(hasPlugin(1, slug)).toBe(true);
  });

  it('reads a boolean beside an enum ("useglobal") the same way: "0" is false, "on" is refused', async () => {
    const off = await form('/monitors/settings', 'active=0');
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect(off.body.data.active).toBe(false);
    const bad = await form('/monitors/settings', 'active=on');
    expect(bad.status).toBe(400);
    expect(bad.body.data.params).toHaveProperty('active');
    const viaAbility = await f.s.ability('update-monitor-settings-v1', { active: 'true' });
    expect(viaAbility.status, JSON.stringify(viaAbility.body)).toBe(200);
    expect(viaAbility.body.settings.active).toBe(true);
  });
});

describe('repeated keys (#27 defect 2)', () => {
  it('gives every value of k=1&k=2 where an array is taken, in a form body and in a query string', async () => {
    const off = inactive(3).slice(0, 2);
    expect(off.length).toBe(2);
    const r = await form(`/sites/${ids[2]!.id}/plugins/activate`, off.map((p) => `slugs=${encodeURIComponent(p.slug)}`).join('&'));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.map((p: { slug: string }) => p.slug).sort()).toEqual(off.map((p) => p.slug).sort());
    const q = await f.s.rest(`/sites?include=${ids[0]!.id}&include=${ids[2]!.id}`);
    expect(q.body.data.map((s: { id: number }) => s.id).sort()).toEqual([ids[0]!.id, ids[2]!.id].sort());
  });

  it('refuses a repeated key where one value is taken (400 naming it), never keeping the last one silently', async () => {
    const before = generation();
    const r = await form('/tags/add', 'name=First&name=Second');
    expect([r.status, r.body.code]).toEqual([400, 'rest_invalid_param']);
    expect(r.body.data.params).toHaveProperty('name');
    expect(r.body.data.reason).toContain('takes one value and was given 2');
    const q = await f.s.rest('/sites?search=a&search=b');
    expect(q.status).toBe(400);
    expect(q.body.data.params).toHaveProperty('search');
    expect(generation()).toBe(before);
  });
});

describe('two names of one argument (#27 defect 3)', () => {
  it('takes the same value under both names, lets an empty one give way, and refuses two values naming both', async () => {
    const off = inactive(3)[0]!;
    const slug = encodeURIComponent(off.slug);
    const same = await form(`/sites/${ids[2]!.id}/plugins/delete?dry_run=1`, `slug=${slug}&slugs=${slug}`, 'DELETE');
    expect(same.status, JSON.stringify(same.body)).toBe(200);
    const empty = await form(`/sites/${ids[2]!.id}/plugins/delete?dry_run=1`, `slug=&slugs=${slug}`, 'DELETE');
    expect(empty.body).toMatchObject({ success: 1, dry_run: true, data: [{ slug: off.slug }] });
    const two = await form(`/sites/${ids[2]!.id}/plugins/delete?dry_run=1`, `slug=${slug}&slugs=other`, 'DELETE');
    expect([two.status, two.body.code]).toEqual([400, 'rest_invalid_param']);
    expect(Object.keys(two.body.data.params).sort()).toEqual(['slug', 'slugs']);
    expect(hasPlugin(3, off.slug)).toBe(true);
  });

  it("reconciles an upstream alias with our name in the registry (abilities door and MCP): add-site's adminpassword", async () => {
    const client = await f.s.ability('add-client-v1', { name: 'Alias Co', email: 'a@alias.example', client_email: '' });
    expect(client.status, JSON.stringify(client.body)).toBe(200);
    const id = client.body.id;
    const same = await f.s.ability('update-client-v1', {
      client_id_or_email: id,
      email: 'b@alias.example',
      client_email: 'b@alias.example',
    });
    expect(same.status, JSON.stringify(same.body)).toBe(200);
    const empty = await mcp.call('update-client-v1', { client_id_or_email: id, email: '', client_email: 'c@alias.example' });
    expect(empty.isError, JSON.stringify(empty.body)).toBe(false);
    expect(empty.body).toMatchObject({ email: 'c@alias.example' });
    const two = await f.s.ability('update-client-v1', {
      client_id_or_email: id,
      email: 'd@alias.example',
      client_email: 'e@alias.example',
    });
    expect(two.status).toBe(400);
    expect(two.body.message).toMatch(/email and client_email/);
  });
});

describe('query arguments a route does not read are ignored and named, as WordPress ignores them (#27 defect 4)', () => {
  const JUNK = 'DELETE=DELETE&%2Fpath=%2Fpath';
  const IGNORED = 'x-sitefleet-ignored-params';

  it('GET list: answers as without them, naming them in a header', async () => {
    const plain = await f.s.rest('/sites?per_page=2');
    const junk = await f.s.rest(`/sites?per_page=2&${JUNK}`);
    expect(junk.status).toBe(200);
    expect(junk.body).toEqual(plain.body);
    expect(junk.headers.get(IGNORED)).toBe('DELETE, /path');
    expect(plain.headers.get(IGNORED)).toBeNull();
    // The cached answer of the same URL names them too.
    expect((await f.s.rest(`/sites?per_page=2&${JUNK}`)).headers.get(IGNORED)).toBe('DELETE, /path');
  });

  it('POST action: runs, naming them; an unknown field in the body is still refused', async () => {
    const r = await f.s.rest(`/tags/add?${JUNK}`, { method: 'POST', json: { name: 'Junk query' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.headers.get(IGNORED)).toBe('DELETE, /path');
    const check = await f.s.rest(`/sites/${ids[0]!.id}/check?${JUNK}`, { method: 'POST' });
    expect(check.status).toBe(200);
    expect(check.headers.get(IGNORED)).toBe('DELETE, /path');
    const before = generation();
    const body = await f.s.rest(`/tags/add?${JUNK}`, { method: 'POST', json: { name: 'Junk body', DELETE: 'DELETE' } });
    expect(body.status).toBe(400);
    expect(body.body.data.params).toHaveProperty('DELETE');
    expect(generation()).toBe(before);
  });

  it('batches: run their body, naming the query arguments they ignored', async () => {
    const r = await f.s.rest(`/tags/batch?${JUNK}`, { method: 'POST', json: { create: [{ name: 'Batched with junk' }] } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.create[0]).toMatchObject({ success: 1 });
    expect(r.headers.get(IGNORED)).toBe('DELETE, /path');
    const all = await f.s.rest(`/batch?${JUNK}`, { method: 'POST', json: { sites: { check: [ids[0]!.id] } } });
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.headers.get(IGNORED)).toBe('DELETE, /path');
    // A field the batch does not know in its body is still refused.
    expect((await f.s.rest('/tags/batch', { method: 'POST', json: { DELETE: [1] } })).status).toBe(400);
  });

  it('DELETE: deletes, naming them', async () => {
    const tag = await f.s.rest('/tags/add', { method: 'POST', json: { name: 'To delete' } });
    const r = await f.s.rest(`/tags/${tag.body.data.id}/remove?${JUNK}`, { method: 'DELETE' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.headers.get(IGNORED)).toBe('DELETE, /path');
    expect((await f.s.rest(`/tags/${tag.body.data.id}`)).status).toBe(404);
  });

  it('names an argument no header could carry percent-encoded', async () => {
    const r = await f.s.rest('/sites?caf%C3%A9=1&a%2Cb=2');
    expect(r.headers.get(IGNORED)).toBe('caf%C3%A9, a%2Cb');
  });

  it('the abilities door stays strict: an unknown input field is refused', async () => {
    const r = await f.s.ability('list-sites-v1', { DELETE: 'DELETE' }, { method: 'GET' });
    expect(r.status).toBe(400);
  });
});

describe('errors that say what is wrong (#27 item 14)', () => {
  it('a JSON body without a Content-Type: 415 saying so, not a missing field', async () => {
    const before = generation();
    const r = await f.s.rest('/tags/add', { method: 'POST', body: new TextEncoder().encode('{"name":"No type"}') });
    expect(r.status).toBe(415);
    expect(r.body.message).toMatch(/no Content-Type/);
    const ability = await fetch(`${f.s.abilitiesBase}/abilities/svc/add-tag-v1/run`, {
      method: 'POST',
      headers: { authorization: f.s.creds.admin },
      body: new TextEncoder().encode('{"input":{"name":"No type"}}'),
    });
    expect(ability.status).toBe(415);
    expect(((await ability.json()) as { message: string }).message).toMatch(/no Content-Type/);
    expect(generation()).toBe(before);
  });

  it('Basic credentials on REST: 401 saying REST takes a Bearer key', async () => {
    const r = await f.s.rest('/sites', { token: null, headers: { authorization: basic('admin', 'whatever') } });
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(/Bearer API key/);
    expect(r.body.message).toMatch(/not HTTP Basic/);
  });

  it('an abilities-door body without input: 400 saying the input goes under "input"', async () => {
    const raw = await fetch(`${f.s.abilitiesBase}/abilities/svc/add-tag-v1/run`, {
      method: 'POST',
      headers: { authorization: f.s.creds.admin, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Forgot input' }),
    });
    expect(raw.status).toBe(400);
    const body = (await raw.json()) as { message: string };
    expect(body.message).toContain('no "input" key');
    expect(body.message).toContain('name');
  });
});
