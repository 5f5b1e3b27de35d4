// The two ways a notification leaves: an HTTP POST (Slack, Discord, Teams, signed webhooks) and SMTP (e-mail). Both go
// through the address policy (a name is resolved and its address judged before dialling; IP literals are judged as
// they are), and both are bounded: the whole attempt ends by its timeout, and the receiver's answer is read to at
// most MAX_ANSWER_BYTES. Each failure comes back as one clear line for the delivery log, never with a secret in it.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { LazyAgent } from '../../child/undici.js';
import { assertAllowedHost, blockedError, guardedLookup, isPrivateAddress } from '../../child/address-policy.js';
import { classify } from '../uptime-check.js';
import type { SmtpSettings } from '../../store/notification-records.js';

/** A receiver's answer read at most (Slack answers "ok", Discord and Teams nothing): more is an error, not a stall. */
export const MAX_ANSWER_BYTES = 64 * 1024;
/** One attempt's whole budget, by default (connect, send, answer). */
export const SEND_TIMEOUT_MS = 10_000;

export interface SendResult {
  error: string | null;
  httpStatus: number | null;
}

const clip = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);

export interface SenderOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  /** Extra trusted CAs for SMTP TLS (tests; production uses Node's store plus NODE_EXTRA_CA_CERTS). */
  tlsCa?: string | Buffer;
}

export class Senders {
  private readonly agent: LazyAgent;

  constructor(private readonly opts: SenderOptions) {
    this.agent = new LazyAgent({
      connections: 4,
      keepAliveTimeout: 4_000,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      connect: { timeout: opts.timeoutMs, ...(opts.allowPrivate ? {} : { lookup: guardedLookup }) },
    });
  }

  /** POST a JSON body; 2xx within the time and the answer bound is success. `url` never appears in the error. */
  async post(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    let timedOut = false;
    const ctl = new AbortController();
    const timer = setTimeout(() => {
      timedOut = true;
      ctl.abort();
    }, this.opts.timeoutMs);
    try {
      if (!this.opts.allowPrivate) assertAllowedHost(new URL(url).hostname);
      const res = await this.agent.request(url, {
        method: 'POST',
        body,
        signal: ctl.signal,
        headers: { 'content-type': 'application/json', ...headers },
      });
      const status = res.statusCode;
      let got = 0;
      const chunks: Buffer[] = [];
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        got += chunk.length;
        if (got > MAX_ANSWER_BYTES) {
          res.body.destroy();
          return { httpStatus: status, error: `The receiver's answer is larger than ${MAX_ANSWER_BYTES} bytes: refused.` };
        }
        chunks.push(chunk);
      }
      if (status < 200 || status > 299) {
        const said = clip(Buffer.concat(chunks).toString('utf8').replace(/\s+/g, ' ').trim(), 200);
        return { httpStatus: status, error: `HTTP ${status}${said ? `: ${said}` : ''}` };
      }
      return { httpStatus: status, error: null };
    } catch (e) {
      const c = classify(e, timedOut);
      const message = c.cause === 'timeout' ? `No answer within ${this.opts.timeoutMs} ms.` : c.message;
      return { httpStatus: null, error: clip(`${c.cause}: ${message}`, 300) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** The address to dial for `host`, judged by the address policy (the name is kept for TLS). */
  private async resolve(host: string): Promise<string> {
    if (isIP(host.replace(/^\[|\]$/g, ''))) {
      if (!this.opts.allowPrivate) assertAllowedHost(host);
      return host.replace(/^\[|\]$/g, '');
    }
    if (!this.opts.allowPrivate) assertAllowedHost(host);
    const { address } = await lookup(host);
    if (!this.opts.allowPrivate && isPrivateAddress(address)) throw blockedError(host);
    return address;
  }

  /** Send one e-mail over SMTP: TLS as the channel says (certificates verified against the host's name), auth if set. */
  async mail(
    smtp: SmtpSettings,
    password: string,
    mail: { to: string[]; subject: string; text: string; html: string },
  ): Promise<SendResult> {
    let address: string;
    try {
      address = await this.resolve(smtp.host);
    } catch (e) {
      const c = classify(e, false);
      return { httpStatus: null, error: clip(`${c.cause}: ${c.message}`, 300) };
    }
    const t = this.opts.timeoutMs;
    // Loaded on the first e-mail, not at every start (~0.1 s of every CLI command and serve).
    const { default: nodemailer } = await import('nodemailer');
    const transport = nodemailer.createTransport({
      host: address,
      port: smtp.port,
      secure: smtp.security === 'tls',
      requireTLS: smtp.security === 'starttls',
      ignoreTLS: smtp.security === 'none',
      auth: smtp.username ? { user: smtp.username, pass: password } : undefined,
      // The certificate is checked against the host's name (SNI takes names only, never an IP literal).
      tls: {
        ...(isIP(smtp.host.replace(/^\[|\]$/g, '')) ? {} : { servername: smtp.host }),
        ...(this.opts.tlsCa ? { ca: this.opts.tlsCa } : {}),
      },
      connectionTimeout: t,
      greetingTimeout: t,
      socketTimeout: t,
      dnsTimeout: t,
      pool: false,
      logger: false,
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      const sent = transport.sendMail({ from: smtp.from, to: mail.to, subject: mail.subject, text: mail.text, html: mail.html });
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(Object.assign(new Error('SMTP timeout'), { code: 'ETIMEDOUT' })), t);
      });
      await Promise.race([sent, deadline]);
      return { httpStatus: null, error: null };
    } catch (e) {
      return { httpStatus: null, error: clip(smtpError(e, smtp, t), 300) };
    } finally {
      clearTimeout(timer);
      transport.close();
    }
  }

  async close(): Promise<void> {
    await this.agent.end();
  }
}

/** One line that says what went wrong with SMTP, in words a person acts on. */
function smtpError(e: unknown, smtp: SmtpSettings, timeoutMs: number): string {
  const err = e as { code?: string; responseCode?: number; response?: string; message?: string };
  const at = `${smtp.host}:${smtp.port}`;
  if (err.code === 'ETLS' || /certificate|\bSSL\b|\bTLS\b/i.test(err.message ?? ''))
    return `smtp tls: ${err.message ?? 'TLS failed'} (${at}).`;
  if (err.code === 'ESOCKET' || err.code === 'ECONNECTION' || /ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ECONNRESET/.test(err.message ?? ''))
    return `smtp connection: cannot connect to ${at} (${err.message ?? 'refused'}).`;
  switch (err.code) {
    case 'EAUTH':
      return `smtp auth: the server at ${at} refused the username or password${err.response ? ` (${err.response})` : ''}.`;
    case 'ETIMEDOUT':
      return `smtp timeout: no answer from ${at} within ${timeoutMs} ms.`;
    case 'EENVELOPE':
      return `smtp recipients refused: ${err.response ?? err.message ?? ''}`;
    default:
      if (err.responseCode) return `smtp ${err.responseCode}: ${err.response ?? err.message ?? ''}`;
      return `smtp: ${err.message ?? String(e)}`;
  }
}
