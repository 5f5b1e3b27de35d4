// Test support: the far ends of notifications on loopback — an HTTP receiver (Slack, Discord, Teams and webhook
// hooks) whose answer a test chooses, and a real SMTP server (smtp-server) whose mail is parsed (mailparser).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { tempDir } from './server.js';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
}

export interface HttpReceiver {
  url: string;
  got: Received[];
  /** How to answer the next requests (default 200 "ok"); may never answer (a hang). */
  answer: (res: ServerResponse, r: Received) => void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<HttpReceiver> {
  const got: Received[] = [];
  const open = new Set<ServerResponse>();
  const rx: HttpReceiver = {
    url: '',
    got,
    answer: (res) => res.end('ok'),
    close: async () => {
      for (const res of open) res.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown = null;
      try {
        json = JSON.parse(body);
      } catch {
        /* not JSON */
      }
      const r: Received = { path: req.url ?? '', headers: req.headers, body, json };
      got.push(r);
      open.add(res);
      res.on('close', () => open.delete(res));
      rx.answer(res, r);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  rx.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return rx;
}

export interface SmtpSink {
  port: number;
  mails: Array<ParsedMail & { envelopeTo: string[] }>;
  close(): Promise<void>;
}

/** A self-signed certificate for localhost and 127.0.0.1, valid `days` (null when openssl is missing). */
export function localCert(days = 30): { key: string; cert: string } | null {
  try {
    const dir = tempDir('sitefleet-smtp-tls-');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'k.pem'),
        '-out',
        join(dir, 'c.pem'),
        '-days',
        String(days),
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'k.pem'), 'utf8'), cert: readFileSync(join(dir, 'c.pem'), 'utf8') };
  } catch {
    return null;
  }
}

/** A real SMTP server on loopback; with `auth`, it takes that user and password only; with `tls`, STARTTLS or TLS. */
export async function startSmtp(
  opts: { auth?: { user: string; pass: string }; tls?: { key: string; cert: string }; secure?: boolean } = {},
): Promise<SmtpSink> {
  const mails: SmtpSink['mails'] = [];
  const server = new SMTPServer({
    secure: opts.secure ?? false,
    ...(opts.tls ? { key: opts.tls.key, cert: opts.tls.cert } : {}),
    disabledCommands: opts.tls ? [] : ['STARTTLS'],
    authOptional: !opts.auth,
    allowInsecureAuth: !opts.tls,
    logger: false,
    onAuth(auth, _session, cb) {
      if (opts.auth && auth.username === opts.auth.user && auth.password === opts.auth.pass) return cb(null, { user: auth.username });
      cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onData(stream, session, cb) {
      simpleParser(stream)
        .then((m) => {
          mails.push(Object.assign(m, { envelopeTo: session.envelope.rcptTo.map((r) => r.address) }));
          cb();
        })
        .catch(cb);
    },
  });
  server.on('error', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.server.address() as AddressInfo).port;
  return { port, mails, close: () => new Promise<void>((r) => server.close(() => r())) };
}
