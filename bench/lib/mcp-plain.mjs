// bench/lib/mcp-plain.mjs — MCP over HTTP, one `tools/call` at a time on one keep-alive connection, side by side
// with a bare node:http server (a process of its own, like serve) answering the very bytes serve answered. Both are
// driven by the same client code in alternating blocks, so machine noise falls on both (issue 33).
import { Agent, request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startInline } from './calibrate.mjs';
import { removeDir, startServe, tempDir } from './proc.mjs';
import { seedFleet } from './seed.mjs';
import { percentiles, round } from './sys.mjs';

const BARE = `
  import { createServer } from 'node:http';
  import { readFileSync } from 'node:fs';
  const { status, headers } = JSON.parse(readFileSync(process.env.ANSWER_HEAD, 'utf8'));
  const body = readFileSync(process.env.ANSWER_BODY);
  const s = createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(status, headers); res.end(body); }); });
  s.keepAliveTimeout = 65000;
  s.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + s.address().port));`;

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** One POST; resolves with status, headers and body. */
function post(url, headers, body) {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export async function mcpHttpVsBare(n, d, log, { tool = 'list-sites-v1', args = { per_page: 20 } } = {}) {
  const dir = tempDir(`mcp-plain${n}`);
  const { token } = await seedFleet(dir, n);
  const serve = await startServe(dir);
  let bare = null;
  try {
    const url = `${serve.url}/mcp`;
    const base = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await post(
      url,
      base,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
      }),
    );
    const sid = init.headers['mcp-session-id'];
    if (init.status !== 200 || !sid) throw new Error(`initialize → ${init.status}`);
    const headers = { ...base, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' };
    await post(url, headers, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: tool, arguments: args } });
    const probe = await post(url, headers, body);
    // Plain JSON, or (before issue 33, or for a call that needs one) an event stream whose last data line is the answer.
    const text = probe.body.toString('utf8');
    const answer = JSON.parse(
      /^\s*[{[]/.test(text)
        ? text
        : text
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .at(-1)
            .slice(6),
    );
    if (probe.status !== 200 || answer.result?.structuredContent?.total !== n)
      throw new Error(`sanity check failed: ${probe.status} ${probe.body.toString('utf8').slice(0, 200)}`);

    const head = {};
    for (const [k, v] of Object.entries(probe.headers))
      if (!['date', 'connection', 'keep-alive', 'transfer-encoding'].includes(k)) head[k] = v;
    writeFileSync(join(dir, 'head.json'), JSON.stringify({ status: probe.status, headers: head }));
    writeFileSync(join(dir, 'body'), probe.body);
    bare = await startInline(BARE, { ANSWER_HEAD: join(dir, 'head.json'), ANSWER_BODY: join(dir, 'body') });

    const samples = { mcp: [], bare: [] };
    const block = async (target, count, record) => {
      const u = target === 'mcp' ? url : `${bare.url}/mcp`;
      for (let i = 0; i < count; i++) {
        const t = performance.now();
        const r = await post(u, headers, body);
        const ms = performance.now() - t;
        if (r.status !== 200) throw new Error(`${target} → ${r.status}`);
        if (record) samples[target].push(ms);
      }
    };
    await block('mcp', 200, false);
    await block('bare', 200, false);
    const end = performance.now() + d.mcpSeconds * 2 * 1000;
    while (performance.now() < end && samples.mcp.length < d.maxSequential) {
      await block('mcp', 250, true);
      await block('bare', 250, true);
    }
    const mcp = percentiles(samples.mcp);
    const plain = percentiles(samples.bare);
    const out = {
      sites: n,
      tool,
      bytes: probe.body.length,
      content_type: probe.headers['content-type'],
      mcp,
      bare: plain,
      // The bare server's p50 over ours: 1 = as fast as node:http sending the same bytes (target ≥ 0.4).
      share_of_bare: mcp.p50 && plain.p50 ? round(plain.p50 / mcp.p50, 2) : null,
    };
    log(
      `  MCP HTTP tools/call ${tool} at ${n} sites (${out.content_type}, ${out.bytes} B): p50 ${mcp.p50} p99 ${mcp.p99} ms; ` +
        `bare node:http, same bytes: p50 ${plain.p50} ms; ${Math.round((out.share_of_bare ?? 0) * 100)} % of bare`,
    );
    return out;
  } finally {
    await bare?.stop();
    await serve.stop();
    removeDir(dir);
  }
}
