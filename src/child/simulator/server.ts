// src/child/simulator/server.ts — the child simulator: one node:http server on loopback serving N virtual sites at /s/<n>/, with latency and faults.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { encodeEnvelope } from '../envelope.js';
import { decodeForm } from '../form.js';
import { request } from 'undici';
import { inspectPackageZip } from '../../core/zip-check.js';
import { directoryAnswer } from './directory.js';
import { SimSite, WP_FATAL_PAGE, type SimDownload } from './site.js';
import { createSiteState, defaultPassword, type SimBreak, type SimSiteState } from './state.js';

export interface SimSiteInfo {
  /** 1-based; the site lives at `${baseUrl}/s/<index>/`. */
  index: number;
  url: string;
  admin: string;
  password: string;
}

/** Per-site failures, each standing for a real one the connector must classify. */
export type SimFault =
  | { type: 'latency'; ms: number } // slow host: extra delay on every request
  | { type: 'timeout' } // hung PHP: the request is never answered
  | { type: 'http500' } // PHP fatal error page, no envelope
  | { type: 'no_marker' } // child missing or inactive: HTML 200 without envelope
  | { type: 'bad_signature' } // stored key does not match: "Authentication failed!"
  | { type: 'disconnected' } // "Clear Connection Data" pressed on the child: no stored key
  | { type: 'huge' } // a reply larger than 20 MiB
  | { type: 'garbage_json' } // envelope whose payload is not JSON
  | { type: 'html' } // WAF / captcha page (403)
  | { type: 'redirect'; to: string } // 302 to another host
  | { type: 'slow_drip' } // reply trickles out a few bytes at a time
  | { type: 'wrong_types' } // envelope with JSON of the wrong field types
  | { type: 'other_site' } // a valid reply, but about another WordPress (its siteurl names another host)
  | { type: 'long_text'; bytes: number } // a valid reply whose texts (wpversion, plugin names) are this long
  | { type: 'long_error'; bytes: number } // an error reply whose message is this long
  | { type: 'bad_text' } // a valid reply whose texts hold NUL characters and unpaired surrogates (BAD_TEXT_FAULT)
  | { type: 'down' } // connection reset: socket destroyed
  | { type: 'hang_after_work' } // the site does the work (an update is installed), then never answers
  | { type: 'outage'; windows: Array<{ from: number; to: number }> }; // down (reset) inside scheduled windows (epoch ms), up outside

/**
 * What the `bad_text` fault puts into a reply, as JSON escapes (PHP's json_encode writes them so): a NUL and an unpaired
 * surrogate appended to the first plugin's and theme's names and the first user's display name, a NUL inside the
 * WordPress version, and a NUL in the key of a failed security check. A dashboard keeps them as the cleaned text says.
 */
export const BAD_TEXT_FAULT = { suffix: '\u0000 \ud800', cleanSuffix: ' \ufffd', securityCheck: 'evil\u0000check' } as const;

function withBadText(data: Record<string, unknown>): Record<string, unknown> {
  const first = (list: unknown, field: string) => {
    const item = Array.isArray(list) ? (list[0] as Record<string, unknown> | undefined) : undefined;
    if (item && typeof item[field] === 'string') item[field] = `${item[field]}${BAD_TEXT_FAULT.suffix}`;
  };
  first(data.plugins, 'name');
  first(data.themes, 'name');
  first(data.users, 'display_name');
  if (typeof data.wpversion === 'string') data.wpversion = data.wpversion.replace('.', '\u0000.');
  const sec = data.securityStats;
  if (sec && typeof sec === 'object' && !Array.isArray(sec)) (sec as Record<string, string>)[BAD_TEXT_FAULT.securityCheck] = 'N';
  return data;
}

export interface ChildSim {
  baseUrl: string;
  /** With the `tls` option: the same sites over HTTPS (`${httpsBaseUrl}/s/<n>/`), with the certificate given. */
  httpsBaseUrl: string | null;
  sites: SimSiteInfo[];
  /** The live in-memory WordPress of a site, for assertions. Treat it as read-only (changes would bypass the reply cache). */
  state(index: number): SimSiteState;
  setFault(index: number, fault: SimFault | null): void;
  /** Makes the package of `slug` (or "wordpress" for core) fail to install on a site with this message; null heals it. */
  failUpdate(index: number, slug: string, message: string | null): void;
  /**
   * Makes an update of `slug` (or "wordpress") break the site's front end once installed (null: installs well again).
   */
  breakOnUpdate(index: number, slug: string, effect: SimBreak | null): void;
  /** Offers an update of an installed plugin (file) or theme (stylesheet) to `version`, as wordpress.org would. */
  offerUpdate(index: number, type: 'plugin' | 'theme', slug: string, version: string): void;
  /** Breaks the front end now (as `by` would), or puts it right (null). */
  setFrontEnd(index: number, broken: { effect: SimBreak; by: string } | null): void;
  /**
   * A controllable delay: every request of child function `fn` (e.g. "installplugintheme") to a site waits, after the
   * latency, until `release()`; `arrived` resolves when the first one is waiting. Tests make a call outlast a bound
   * this way without sleeping. A request whose caller gave up meanwhile does nothing once released. `close()`
   * releases every hold.
   */
  hold(index: number, fn: string): { arrived: Promise<void>; release(): void };
  /** Requests received by a site (any path, method or fault), for "no child call" assertions. */
  requests(index: number): number;
  /** When a site's latest requests arrived (epoch ms, the last 100). */
  requestTimes(index: number): number[];
  /** Most requests the whole server held open at once since start. */
  peakInFlight(): number;
  close(): Promise<void>;
}

export interface ChildSimOptions {
  port?: number;
  host?: string;
  sites?: number;
  /** Added to every request. */
  latencyMs?: number;
  seed?: number;
  /** Connection admin login on every site (default "admin"). */
  admin?: string;
  /** Admin password on every site (default: a per-site password derived from the seed). */
  password?: string;
  /** Start every site already registered to this key and dashboard URL (benchmarks; skips 1,000 key generations). */
  preconnect?: { publicKeyPem: string; server: string };
  /** Also serve every site over HTTPS on a second port, with this key and certificate (PEM). */
  tls?: { key: string; cert: string };
  /** The clock outage windows are read by (epoch ms; tests move it instead of sleeping). Default: Date.now. */
  now?: () => number;
}

const MAX_REQUEST_BYTES = 8 * 1024 * 1024;
const HUGE_REPLY_BYTES = 21 * 1024 * 1024;
const HTML = { 'content-type': 'text/html; charset=UTF-8' };
const FATAL_PAGE = WP_FATAL_PAGE;
/** The front-end pages a simulated site serves (besides admin-ajax.php): home, login, WordPress's sample page. */
const FRONT_PAGES = new Set(['/', '/index.php', '/wp-login.php', '/sample-page/']);
const PLAIN_PAGE =
  '<!DOCTYPE html><html><head><title>Welcome</title></head><body><h1>It works!</h1><p>This site has no MainWP Child plugin.</p></body></html>';
const WAF_PAGE =
  '<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title></head><body><div id="cf-wrapper"><h1>Sorry, you have been blocked</h1><p>This website is using a security service to protect itself from online attacks.</p></div></body></html>';
// Every field the connector reads, with a type it cannot accept.
const WRONG_TYPES = {
  version: [6, 1],
  wpversion: { major: 6 },
  siteurl: 7,
  plugins: 'many',
  themes: 3,
  status: 42,
  added: 'yes',
  result: [],
  deactivated: 'yes',
  register: false,
};

let hugeChunk: Buffer | null = null;

function send(res: ServerResponse, status: number, body: string | Buffer, headers: Record<string, string> = HTML): void {
  if (res.destroyed) return;
  res.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

/** Chunked on purpose (no Content-Length): the connector must count bytes while streaming. */
function sendHuge(res: ServerResponse, envelope: string | Buffer): void {
  hugeChunk ??= Buffer.from('<!-- padding -->'.repeat(65_536));
  const chunk = hugeChunk;
  res.writeHead(200, HTML);
  let written = 0;
  const pump = (): void => {
    while (written < HUGE_REPLY_BYTES) {
      if (res.destroyed) return;
      written += chunk.length;
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end(envelope);
  };
  pump();
}

/** 16 bytes every 100 ms, with an honest Content-Length: only a total deadline stops it. */
function sendSlowly(res: ServerResponse, body: string | Buffer): void {
  const bytes = Buffer.from(body);
  res.writeHead(200, { ...HTML, 'content-length': String(bytes.length) });
  let offset = 0;
  const timer = setInterval(() => {
    if (res.destroyed) return clearInterval(timer);
    res.write(bytes.subarray(offset, (offset += 16)));
    if (offset >= bytes.length) {
      clearInterval(timer);
      res.end();
    }
  }, 100);
  res.on('close', () => clearInterval(timer));
}

function readBody(req: IncomingMessage): Promise<string | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        req.destroy();
        resolve(null);
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(null));
  });
}

/** The zips an installplugintheme names outside /__sim/dir/, fetched and read (null: WordPress could not install it). */
async function downloads(urlField: unknown, typeField: unknown): Promise<Map<string, SimDownload | null>> {
  const out = new Map<string, SimDownload | null>();
  let urls: unknown;
  try {
    urls = JSON.parse(String(urlField ?? '').replace(/\\(.)/g, '$1'));
  } catch {
    return out;
  }
  const type = typeField === 'theme' ? 'theme' : 'plugin';
  for (const url of (Array.isArray(urls) ? urls : [urls]).filter((u): u is string => typeof u === 'string')) {
    if (url.includes('/__sim/dir/')) continue;
    try {
      const res = await request(url, { method: 'GET', headersTimeout: 10_000, bodyTimeout: 10_000 });
      const buf = Buffer.from(await res.body.arrayBuffer());
      if (res.statusCode !== 200 || buf.length > 64 * 1024 * 1024) throw new Error('download failed');
      const pkg = await inspectPackageZip(buf, type);
      out.set(url, { type, slug: pkg.folder, name: pkg.name, version: pkg.version, main: pkg.main });
    } catch {
      out.set(url, null);
    }
  }
  return out;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function startChildSim(options: ChildSimOptions = {}): Promise<ChildSim> {
  const count = options.sites ?? 3;
  const seed = options.seed ?? 1;
  const admin = options.admin ?? 'admin';
  const latencyMs = options.latencyMs ?? 0;
  // Generated dates are relative to the start day, so a seed gives the same sites all day long.
  const startDay = Math.floor(Date.now() / 86_400_000) * 86_400;
  const host = options.host ?? '127.0.0.1';
  let sites: SimSite[] = [];
  const faults = new Map<number, SimFault>();
  const holds = new Map<string, { arrived: () => void; released: Promise<void>; release: () => void }>();
  const counters = new Array<number>(count + 1).fill(0);
  const times = new Map<number, number[]>();
  let inFlight = 0;
  let peak = 0;
  let baseUrl = '';

  const info = (index: number): SimSiteInfo => ({
    index,
    url: `${baseUrl}/s/${index}/`,
    admin,
    password: options.password ?? defaultPassword(seed, index),
  });
  const siteAt = (index: number): SimSite => {
    const site = sites[index - 1];
    if (!site) throw new RangeError(`no simulated site ${index} (1..${count})`);
    return site;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path.startsWith('/__sim/dir/')) {
      // The stand-in wordpress.org directory (directory.ts): JSON answers, no site involved.
      const dir = directoryAnswer(path.slice('/__sim/dir/'.length), new URL(req.url ?? '/', baseUrl).searchParams, `${baseUrl}/__sim/dir/`);
      if (dir) return send(res, dir.status, JSON.stringify(dir.json), { 'content-type': 'application/json; charset=utf-8' });
    }
    const match = /^\/s\/(\d+)(\/.*)?$/.exec(path);
    const index = match ? Number(match[1]) : 0;
    if (!match || index < 1 || index > count) return send(res, 404, '<!DOCTYPE html><html><body><h1>Not Found</h1></body></html>');
    counters[index]!++;
    const log = times.get(index) ?? [];
    log.push(Date.now());
    if (log.length > 100) log.shift();
    times.set(index, log);
    inFlight++;
    peak = Math.max(peak, inFlight);
    res.on('close', () => inFlight--);
    const fault = faults.get(index) ?? null;
    if (fault?.type === 'down') return void req.socket.destroy();
    if (fault?.type === 'outage') {
      const t = (options.now ?? Date.now)();
      if (fault.windows.some((w) => t >= w.from && t < w.to)) return void req.socket.destroy();
    }
    const body = await readBody(req);
    if (body === null) return send(res, 413, '<h1>Request Entity Too Large</h1>');
    const delay = latencyMs + (fault?.type === 'latency' ? fault.ms : 0);
    if (delay > 0) await sleep(delay);
    const held = holds.size && req.method === 'POST' ? holds.get(`${index}:${String(decodeForm(body).function)}`) : undefined;
    if (held) {
      held.arrived();
      await held.released;
    }
    if (res.destroyed || fault?.type === 'timeout') return;
    if (fault?.type === 'http500') return send(res, 500, FATAL_PAGE);
    if (fault?.type === 'no_marker') return send(res, 200, PLAIN_PAGE);
    if (fault?.type === 'html') return send(res, 403, WAF_PAGE);
    if (fault?.type === 'redirect') return send(res, 302, `<a href="${fault.to}">Moved</a>`, { ...HTML, location: fault.to });

    const rest = match[2] ?? '/';
    const home = `${baseUrl}/s/${index}/`;
    // "Open WP Admin" (§10.1): the signed GET logs the browser in and sends it to wp-admin; wp-admin needs that session.
    const query = decodeForm((req.url ?? '').split('?')[1] ?? '');
    if (req.method === 'GET' && FRONT_PAGES.has(rest) && query.login_required === '1') {
      const session = siteAt(index).loginRequired(query);
      if (session)
        return send(res, 302, '', {
          ...HTML,
          location: `${home}wp-admin/${typeof query.where === 'string' ? query.where : ''}`,
          'set-cookie': `wordpress_logged_in_sim=${session}; Path=/s/${index}/; HttpOnly`,
        });
    }
    if (rest === '/wp-admin/' || rest === '/wp-admin/index.php') {
      const cookie = /(?:^|;\s*)wordpress_logged_in_sim=([0-9a-f]+)/.exec(req.headers.cookie ?? '')?.[1];
      const login = siteAt(index).adminSession(cookie);
      if (!login)
        return send(res, 302, '', { ...HTML, location: `${home}wp-login.php?redirect_to=${encodeURIComponent(`${home}wp-admin/`)}` });
      return send(
        res,
        200,
        `<!DOCTYPE html><html><head><title>Dashboard &lsaquo; Sim ${index} &#8212; WordPress</title></head><body class="wp-admin">` +
          `<div id="wpadminbar">Howdy, <span class="display-name">${login}</span></div><h1>Dashboard</h1></body></html>`,
      );
    }
    const adminAjax = rest === '/wp-admin/admin-ajax.php';
    if (!adminAjax && !FRONT_PAGES.has(rest)) return send(res, 404, '<!DOCTYPE html><html><body><h1>Page not found</h1></body></html>');
    const form = req.method === 'POST' ? decodeForm(body) : Object.create(null);
    // installplugintheme downloads each package that is not the simulator's own directory's, as WordPress would.
    if (form.function === 'installplugintheme') siteAt(index).downloads = await downloads(form.url, form.type);
    const reply = siteAt(index).handle(form, adminAjax, rest === '/index.php' ? '/' : rest);
    if (fault?.type === 'hang_after_work') return;
    if (reply.envelope && fault?.type === 'huge') return sendHuge(res, reply.body);
    if (reply.envelope && fault?.type === 'slow_drip') return sendSlowly(res, reply.body);
    if (reply.envelope && fault?.type === 'garbage_json') {
      return send(res, 200, `<mainwp>${Buffer.from('{"version":"6.1","plugins":[{"name":').toString('base64')}</mainwp>`);
    }
    if (reply.envelope && fault?.type === 'wrong_types') return send(res, 200, encodeEnvelope(WRONG_TYPES));
    if (reply.envelope && fault?.type === 'other_site') {
      const inner = /<mainwp>([^<]*)<\/mainwp>/.exec(String(reply.body))?.[1] ?? '';
      const data = JSON.parse(Buffer.from(inner, 'base64').toString('utf8')) as Record<string, unknown>;
      if ('siteurl' in data) data.siteurl = 'https://another-site.example/';
      return send(res, 200, encodeEnvelope(data));
    }
    if (reply.envelope && fault?.type === 'bad_text') {
      const inner = /<mainwp>([^<]*)<\/mainwp>/.exec(String(reply.body))?.[1] ?? '';
      return send(
        res,
        200,
        encodeEnvelope(withBadText(JSON.parse(Buffer.from(inner, 'base64').toString('utf8')) as Record<string, unknown>)),
      );
    }
    if (reply.envelope && fault?.type === 'long_error') return send(res, 200, encodeEnvelope({ error: 'E'.repeat(fault.bytes) }));
    if (reply.envelope && fault?.type === 'long_text') {
      const inner = /<mainwp>([^<]*)<\/mainwp>/.exec(String(reply.body))?.[1] ?? '';
      const data = JSON.parse(Buffer.from(inner, 'base64').toString('utf8')) as Record<string, unknown>;
      const long = '9'.repeat(fault.bytes);
      if ('wpversion' in data) data.wpversion = long;
      const plugins = data.plugins as Array<Record<string, unknown>> | undefined;
      if (Array.isArray(plugins) && plugins[0]) plugins[0].name = long;
      return send(res, 200, encodeEnvelope(data));
    }
    send(res, reply.status, reply.body);
  };

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, FATAL_PAGE);
      else res.destroy();
    });
  };
  const listen = (srv: Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(port, host, () => resolve((srv.address() as AddressInfo).port));
    });
  const hostPart = host.includes(':') ? `[${host}]` : host;
  const server = createServer(listener);
  const port = await listen(server, options.port ?? 0);
  baseUrl = `http://${hostPart}:${port}`;
  const tlsServer = options.tls ? createHttpsServer({ key: options.tls.key, cert: options.tls.cert }, listener) : null;
  const httpsBaseUrl = tlsServer ? `https://${hostPart}:${await listen(tlsServer, 0)}` : null;
  // Built up front (~0.1 ms a site) so the first request to a site pays only for its stats reply.
  sites = Array.from({ length: count }, (_, i) => {
    const { index, url, password } = info(i + 1);
    const site = new SimSite(createSiteState({ index, siteUrl: url, seed, admin, password, now: startDay }));
    if (options.preconnect)
      Object.assign(site.state.connection, { pubkeyPem: options.preconnect.publicKeyPem, server: options.preconnect.server, admin });
    return site;
  });

  return {
    baseUrl,
    httpsBaseUrl,
    sites: Array.from({ length: count }, (_, i) => info(i + 1)),
    state: (index) => siteAt(index).state,
    setFault: (index, fault) => {
      const site = siteAt(index);
      site.rejectSignatures = fault?.type === 'bad_signature';
      if (fault?.type === 'disconnected') site.clearConnection();
      if (fault) faults.set(index, fault);
      else faults.delete(index);
    },
    failUpdate: (index, slug, message) => {
      const st = siteAt(index).state;
      if (message === null) delete st.failingUpdates[slug];
      else st.failingUpdates[slug] = message;
      st.rev++;
    },
    breakOnUpdate: (index, slug, effect) => {
      const st = siteAt(index).state;
      if (effect === null) delete st.breakOnUpdate[slug];
      else st.breakOnUpdate[slug] = effect;
    },
    offerUpdate: (index, type, slug, version) => {
      const st = siteAt(index).state;
      const item = (type === 'plugin' ? st.plugins : st.themes).find((i) => i.slug === slug);
      if (!item) throw new RangeError(`simulated site ${index} has no ${type} ${slug}`);
      item.updateVersion = version;
      st.rev++;
    },
    setFrontEnd: (index, broken) => {
      siteAt(index).state.frontEnd = broken;
    },
    hold: (index, fn) => {
      siteAt(index);
      let arrived!: () => void;
      let release!: () => void;
      const arrival = new Promise<void>((r) => (arrived = r));
      const released = new Promise<void>((r) => (release = r));
      const key = `${index}:${fn}`;
      holds.set(key, { arrived, released, release });
      return {
        arrived: arrival,
        release: () => {
          if (holds.get(key)?.released === released) holds.delete(key);
          release();
        },
      };
    },
    requests: (index) => {
      siteAt(index);
      return counters[index]!;
    },
    requestTimes: (index) => [...(times.get(index) ?? [])],
    peakInFlight: () => peak,
    close: async () => {
      for (const h of holds.values()) h.release();
      holds.clear();
      await Promise.all(
        [server, tlsServer]
          .filter((x): x is Server => x !== null)
          .map(
            (srv) =>
              new Promise<void>((resolve) => {
                srv.close(() => resolve());
                srv.closeAllConnections();
              }),
          ),
      );
    },
  };
}
