// CSV import of users: POST /users/import (multipart, streamed), import-users-v1 over the abilities door and MCP.
// Every bad row fails alone with its line number while the good rows are imported.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSites, startFleet, type Fleet } from './support/fleet.js';
import { seedTag } from './support/fixtures.js';
import { captureLogs } from './support/logs.js';
import { connectMcp, type McpTestClient } from './support/mcp.js';

let f: Fleet;
let ids: Array<{ id: number; url: string }>;
let mcp: McpTestClient;

const HEADER = 'username,email,first_name,last_name,user_url,password,send_password,role,select_sites,select_groups';
const has = (i: number, login: string) => f.sim.state(i).users.some((u) => u.login === login);
const userOn = (i: number, login: string) => f.sim.state(i).users.find((u) => u.login === login);

/** Uploads CSV bytes as the multipart field `field` (csv_file), with extra form fields before or after it. */
function upload(
  csv: string | Uint8Array<ArrayBuffer>,
  opts: { field?: string; before?: Record<string, string>; after?: Record<string, string>; query?: string } = {},
) {
  const form = new FormData();
  for (const [k, v] of Object.entries(opts.before ?? {})) form.append(k, v);
  form.append(opts.field ?? 'csv_file', new Blob([csv], { type: 'text/csv' }), 'users.csv');
  for (const [k, v] of Object.entries(opts.after ?? {})) form.append(k, v);
  return f.s.rest(`/users/import${opts.query ?? ''}`, { method: 'POST', body: form });
}

/**
 * One file with every edge case, lines numbered as an editor shows them: a BOM, CRLF, a blank line, quoted
 * fields holding commas and a newline, a spreadsheet's empty row, and one bad row per reason.
 */
function edgeCaseCsv(p: string): { text: string; good: string[]; failures: Array<[number, string | RegExp]> } {
  const [s1, s2] = [ids[0]!.url, ids[1]!.url];
  const lines = [
    HEADER, //                                                                                           1
    `${p}alice,${p}alice@example.com,Alice,Liddell,https://alice.example,Pw-${p}alice-1,false,editor,${s1},`, // 2
    '', //                                                                                               3
    `"${p}bob, jr","${p}bob@example.com","Bob","Multi`, //                                                4
    `Line",,Pw-${p}bob-2,true,Author,,Client Blogs`, //                                                   5
    `${p}short,${p}short@example.com,S`, //                                                              6
    `${p}bademail,not-an-email,,,,,,subscriber,${s1},`, //                                               7
    `${p}badrole,${p}badrole@example.com,,,,,,owner,${s1},`, //                                          8
    `${p}nosite,${p}nosite@example.com,,,,,,,https://nowhere.example/;${s1},`, //                        9
    `${p}nogroup,${p}nogroup@example.com,,,,,,,,Nope`, //                                                10
    `,${p}noname@example.com,,,,,,,${s1},`, //                                                           11
    `${p}carol,,,,,,,,${s1},`, //                                                                        12
    `${p}dave,${p}dave@example.com,,,,"pass, with comma",1,contributor, ${s2} ; ${s1} ,`, //            13
    ',,,,,,,,,', //                                                                                      14
    `${p}erin,${p}erin@example.com,,,,,,,,client blogs`, //                                              15
    `${p}alice,${p}alice2@example.com,,,,,,,${s1},`, //                                                  16
    `${p}frank,${p}frank@example.com,,,,,maybe,,${s1},`, //                                              17
    `${p}gina,${p}gina@example.com,,,,,,,,`, //                                                          18
  ];
  return {
    text: `\uFEFF${lines.join('\r\n')}\r\n`,
    good: [`${p}alice`, `${p}bob, jr`, `${p}dave`, `${p}erin`],
    failures: [
      [
        6,
        'Expected 10 columns (username, email, first_name, last_name, user_url, password, send_password, role, select_sites, select_groups); found 3.',
      ],
      [7, 'Invalid email format: "not-an-email".'],
      [8, 'Invalid role "owner". Allowed roles: administrator, subscriber, editor, author, contributor.'],
      [9, 'Unknown site "https://nowhere.example/" in select_sites.'],
      [10, 'Unknown group "Nope" in select_groups.'],
      [11, 'Username is required.'],
      [12, 'Email is required.'],
      [16, /username already exists/],
      [17, 'Invalid send_password "maybe": use true or false.'],
      [18, 'Either select_sites or select_groups must be provided.'],
    ],
  };
}

function expectFailures(body: any, failures: Array<[number, string | RegExp]>): void {
  expect(body.failed_users.map((u: { line_number: number }) => u.line_number)).toEqual(failures.map(([line]) => line));
  failures.forEach(([, error], i) => {
    if (typeof error === 'string') expect(body.failed_users[i].error).toBe(error);
    else expect(body.failed_users[i].error).toMatch(error);
  });
}

beforeAll(async () => {
  f = await startFleet({ sim: { sites: 4 } });
  ids = await registerSites(f, 4);
  await seedTag(f.s.services, 'Client Blogs', [ids[1]!.id, ids[2]!.id]);
  mcp = await connectMcp(f.s);
});
afterAll(async () => {
  await mcp.close();
  await f.close();
});

describe('POST /users/import', () => {
  it('imports the good rows and fails each bad row alone with its line number (BOM, CRLF, quotes, header on)', async () => {
    const csv = edgeCaseCsv('r');
    let r!: Awaited<ReturnType<typeof upload>>;
    const log = await captureLogs(async () => {
      r = await upload(csv.text);
    });
    expect(log).toContain('/users/import');
    for (const secret of ['Pw-ralice-1', 'Pw-rbob-2', 'pass, with comma']) expect(log).not.toContain(secret);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: 1, total: 14, success_count: 4, failed_count: 10, skipped_sites: [] });
    expectFailures(r.body, csv.failures);
    expect(r.body.failed_users[0]).toMatchObject({ username: 'rshort', email: 'rshort@example.com' });
    expect(r.body.failed_users.find((u: { line_number: number }) => u.line_number === 16)).toMatchObject({
      failed_sites: [{ site_id: ids[0]!.id, site_url: ids[0]!.url, code: 'svc_child_refused', message: expect.any(String) }],
    });
    expect(userOn(1, 'ralice')).toMatchObject({
      email: 'ralice@example.com',
      first_name: 'Alice',
      role: 'editor',
      url: 'https://alice.example',
      password: 'Pw-ralice-1',
    });
    expect(userOn(2, 'rbob, jr')).toMatchObject({ last_name: 'Multi\nLine', role: 'author', password: 'Pw-rbob-2' });
    expect(userOn(3, 'rbob, jr')).toBeDefined();
    expect(userOn(1, 'rdave')).toMatchObject({ password: 'pass, with comma', role: 'contributor' });
    expect(has(2, 'rdave') && has(2, 'rerin') && has(3, 'rerin')).toBe(true);
    expect(has(1, 'rerin')).toBe(false);
    for (const secret of ['Pw-ralice-1', 'Pw-rbob-2', 'pass, with comma']) expect(JSON.stringify(r.body)).not.toContain(secret);
  });

  it('imports the first line when has_header is false: in the query, before the file or after it', async () => {
    const row = (name: string) => `${name},${name}@example.com,,,,,,,${ids[3]!.url},`;
    const query = await upload(`${row('hq1')}\n${row('hq2')}`, { query: '?has_header=false' });
    expect(query.body).toMatchObject({ total: 2, success_count: 2 });
    const before = await upload(`${row('hb1')}\n${row('hb2')}`, { before: { has_header: '0' } });
    expect(before.body).toMatchObject({ total: 2, success_count: 2 });
    const after = await upload(`${row('ha1')}\n${row('ha2')}\n`, { after: { has_header: 'false' } });
    expect(after.body).toMatchObject({ total: 2, success_count: 2 });
    expect(['hq1', 'hq2', 'hb1', 'hb2', 'ha1', 'ha2'].every((n) => has(4, n))).toBe(true);
    const headerOn = await upload(`${row('hx1')}\n${row('hx2')}`, { after: { has_header: 'true' } });
    expect(headerOn.body).toMatchObject({ total: 1, success_count: 1 });
    expect(has(4, 'hx1')).toBe(false);
    expect(has(4, 'hx2')).toBe(true);
  });

  it('reads an unclosed quote as the end: rows before it are imported, the rest is one failed line', async () => {
    const good = `uq1,uq1@example.com,,,,,,,${ids[3]!.url},`;
    const r = await upload(
      [HEADER, good, '', `uq2,"uq2@example.com,,,,,,,${ids[3]!.url},`, `uq3,uq3@example.com,,,,,,,${ids[3]!.url},`].join('\n'),
    );
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ total: 2, success_count: 1, failed_count: 1 });
    expect(r.body.failed_users).toEqual([expect.objectContaining({ line_number: 4, error: expect.stringContaining('never closed') })]);
    expect(has(4, 'uq1')).toBe(true);
    expect(has(4, 'uq3')).toBe(false);
  });

  it('skips a suspended site with a note; a row with nothing else left fails', async () => {
    await f.s.ability('suspend-site-v1', { site_id_or_domain: ids[2]!.id });
    try {
      const before = f.sim.requests(3);
      const r = await upload(
        [HEADER, `sus1,sus1@example.com,,,,,,,${ids[2]!.url},`, `sus2,sus2@example.com,,,,,,,,Client Blogs`].join('\n'),
      );
      expect(r.body).toMatchObject({ total: 2, success_count: 1, failed_count: 1 });
      expect(r.body.failed_users[0]).toMatchObject({
        line_number: 2,
        error: expect.stringContaining('No valid websites found for this user'),
      });
      expect(r.body.skipped_sites).toEqual([
        { site_id: ids[2]!.id, site_url: ids[2]!.url, status: 'suspended', message: expect.any(String) },
      ]);
      expect(has(2, 'sus2')).toBe(true);
      expect(f.sim.requests(3)).toBe(before);
    } finally {
      await f.s.ability('unsuspend-site-v1', { site_id_or_domain: ids[2]!.id });
    }
  });

  it('fails the rows of a dead child alone, and stops dialling it', async () => {
    f.sim.setFault(1, { type: 'down' });
    try {
      const rows = Array.from({ length: 120 }, (_, i) => `dead${i},dead${i}@example.com,,,,,,,${i % 2 ? ids[0]!.url : ids[3]!.url},`);
      const before = f.sim.requests(1);
      const r = await upload([HEADER, ...rows].join('\n'));
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ total: 120, success_count: 60, failed_count: 60 });
      expect(
        r.body.failed_users.every(
          (u: { line_number: number; failed_sites: Array<{ code: string }> }) =>
            u.line_number % 2 === 1 && u.failed_sites[0]!.code === 'svc_child_unreachable',
        ),
      ).toBe(true);
      expect(r.body.failed_users[0].error).toContain(ids[0]!.url);
      // At most one round of rows in flight reached it before it was known to be down (two URLs per call).
      expect(f.sim.requests(1) - before).toBeLessThanOrEqual(2 * f.s.services.config.childConcurrency);
      expect(has(4, 'dead0')).toBe(true);
    } finally {
      f.sim.setFault(1, null);
    }
  });

  it('refuses a request without the csv_file file with a clear 400', async () => {
    const json = await f.s.rest('/users/import', { method: 'POST', json: { csv: 'a,b' } });
    expect([json.status, json.body.code]).toEqual([400, 'svc_no_file_uploaded']);
    expect(json.body.message).toContain('csv_file');
    const wrong = await upload(`${HEADER}\n`, { field: 'file' });
    expect([wrong.status, wrong.body.code]).toEqual([400, 'svc_no_file_uploaded']);
    expect(wrong.body.message).toContain('"file"');
    const text = new FormData();
    text.append('csv_file', `${HEADER}\n`);
    const asText = await f.s.rest('/users/import', { method: 'POST', body: text });
    expect([asText.status, asText.body.code]).toEqual([400, 'svc_no_file_uploaded']);
    expect(asText.body.message).toContain('text field');
    const broken = await f.s.rest('/users/import', {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=x' },
      body: 'garbage',
    });
    expect(broken.status).toBe(400);
  });

  it('refuses binary files, empty files and a header without rows', async () => {
    const binary = await upload(new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0x00, 0x00, 0x08, 0x00]));
    expect([binary.status, binary.body.code]).toEqual([400, 'svc_invalid_file_type']);
    const utf16 = await upload(new Uint8Array([0xff, 0xfe, 0x61, 0x00]));
    expect([utf16.status, utf16.body.code]).toEqual([400, 'svc_invalid_file_type']);
    const empty = await upload('');
    expect([empty.status, empty.body.code]).toEqual([400, 'svc_csv_empty']);
    const headerOnly = await upload(`\uFEFF${HEADER}\r\n\r\n`);
    expect([headerOnly.status, headerOnly.body.code]).toEqual([400, 'svc_csv_empty']);
  });

  it('answers 413 for a file over 20 MB, with what was imported before the cap when it streamed in', async () => {
    const big = await upload(new Uint8Array(21 * 1024 * 1024 + 10).fill(0x2c));
    expect([big.status, big.body.code]).toEqual([413, 'svc_upload_too_large']);

    // Chunked (no Content-Length): the cap is found while the rows stream in.
    const boundary = 'sitefleetboundary';
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name="csv_file"; filename="big.csv"\r\nContent-Type: text/csv\r\n\r\n` +
      `${HEADER}\nbig1,big1@example.com,,,,,,,${ids[3]!.url},\n`;
    // Rows of blanks (skipped as empty): long lines keep the parsing quick.
    const filler = new TextEncoder().encode(`${' '.repeat(1014)},,,,,,,,,\n`.repeat(64));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(head));
      },
      pull(c) {
        if (sent > 21 * 1024 * 1024) {
          c.enqueue(new TextEncoder().encode(`\r\n--${boundary}--\r\n`));
          c.close();
          return;
        }
        sent += filler.length;
        c.enqueue(filler);
      },
    });
    const res = await fetch(`${f.s.restBase}/users/import`, {
      method: 'POST',
      body,
      duplex: 'half',
      headers: { authorization: `Bearer ${f.s.creds.key.read_write}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    } as RequestInit);
    const out = (await res.json()) as any;
    expect([res.status, out.code]).toEqual([413, 'svc_upload_too_large']);
    expect(out.data).toMatchObject({ total: 1, success_count: 1, failed_count: 0 });
    expect(has(4, 'big1')).toBe(true);
    expect((await f.s.rest(`/users?websites=${ids[3]!.id}&search=big1`)).status).toBe(200);
  });
});

describe('import-users-v1', () => {
  it('takes CSV text through the abilities door with the same line-by-line results', async () => {
    const csv = edgeCaseCsv('a');
    const r = await f.s.ability('import-users-v1', { csv: csv.text });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ total: 14, success_count: 4, failed_count: 10 });
    expectFailures(r.body, csv.failures);
    expect(
      csv.good.every((login) => f.sim.state(1).users.some((u) => u.login === login) || f.sim.state(2).users.some((u) => u.login === login)),
    ).toBe(true);
    expect(JSON.stringify(r.body)).not.toContain('Pw-aalice-1');
  });

  it('takes CSV text through MCP, header off (LF, no BOM): line 1 is a user', async () => {
    const text = [
      `m1,m1@example.com,,,,Pw-m1,,administrator,${ids[3]!.url},`,
      'm2,bad@,,,,,,,x,',
      `m3,m3@example.com,,,,,,,${ids[3]!.url};${ids[2]!.url},`,
    ].join('\n');
    const r = await mcp.call('import-users-v1', { csv: text, has_header: false });
    expect(r.isError).toBe(false);
    expect(r.body).toMatchObject({
      total: 3,
      success_count: 2,
      failed_count: 1,
      failed_users: [{ line_number: 2, error: 'Invalid email format: "bad@".' }],
    });
    expect(userOn(4, 'm1')).toMatchObject({ role: 'administrator', password: 'Pw-m1' });
    expect(has(3, 'm3') && has(4, 'm3')).toBe(true);
  });

  it('refuses input that is not CSV text', async () => {
    for (const input of [{}, { csv: '' }, { csv: 42 }, { csv: { stream: 1 } }]) {
      const r = await f.s.ability('import-users-v1', input);
      expect(r.status, JSON.stringify(input)).toBe(400);
      expect(r.body.code).toBe('ability_invalid_input');
    }
    const m = await mcp.call('import-users-v1', { csv: { stream: {} } });
    expect(m.isError).toBe(true);
  });
});
