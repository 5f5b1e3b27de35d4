// src/child/transport.ts — the connector's outgoing HTTP: keep-alive undici agents, the global in-flight bound, timeouts, the reply-size cap (§2).
import { TlsAgents, type ResponseData } from './undici.js';
import { ChildError } from './child-error.js';
import { BLOCKED_CODE, assertAllowedHost, guardedLookup } from './address-policy.js';
import { OWN_USER_AGENT } from './snapshot.js';
import type { HttpReply } from './envelope.js';

export interface HttpTarget {
  httpUser?: string | null;
  httpPass?: string | null;
  sslVerify: boolean;
}

export interface TransportOptions {
  /** Let calls reach loopback and private addresses (address-policy.ts). */
  allowPrivateAddresses: boolean;
  concurrency: number;
  connectTimeoutMs: number;
  timeoutMs: number;
  maxReplyBytes: number;
}

// The child ignores the User-Agent; a MainWP-like token keeps hosts that allow-list it happy (§14).
const USER_AGENT = OWN_USER_AGENT;

/** A reply that broke off after its headers arrived: the child did answer, so the body must not be re-sent elsewhere. */
export class ReplyInterrupted extends ChildError {}

/** FIFO counting semaphore: the "calls in flight" bound, shared by every site. */
class Semaphore {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function transportFailure(err: unknown, signal: AbortSignal | null, { timeoutMs, connectTimeoutMs }: TransportOptions): ChildError {
  const code = errorCode(err);
  const blocked = code === BLOCKED_CODE ? err : (err as { cause?: unknown } | null)?.cause;
  if (errorCode(blocked) === BLOCKED_CODE) return new ChildError('blocked', (blocked as Error).message);
  if (code === 'UND_ERR_CONNECT_TIMEOUT')
    return new ChildError('timeout', `HTTP error - Connection timed out after ${connectTimeoutMs} ms`);
  if (signal === null || signal.aborted || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new ChildError('timeout', `HTTP error - Operation timed out after ${timeoutMs} ms`);
  }
  const cause = (err as { cause?: { message?: unknown } } | null)?.cause?.message;
  const message = err instanceof Error ? err.message : String(err);
  return new ChildError('transport', `HTTP error - ${typeof cause === 'string' && cause !== message ? `${message}: ${cause}` : message}`);
}

/** Drops a reply body early; undici reports that as an 'error' event, which must not go unheard. */
function discard(body: NodeJS.ReadableStream & { destroy(): void }): void {
  body.on('error', () => {});
  body.destroy();
}

export class Transport {
  // One keep-alive Agent per TLS mode: undici pools per origin, and certificate checking is a connection option.
  private readonly agents: TlsAgents;
  private readonly slots: Semaphore;

  constructor(private readonly options: TransportOptions) {
    this.slots = new Semaphore(options.concurrency);
    this.agents = new TlsAgents((verify) => ({
      // Per origin: many simulated (or multisite) sites share one origin and must still run in parallel.
      connections: options.concurrency,
      keepAliveTimeout: 4_000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connect: {
        timeout: options.connectTimeoutMs,
        rejectUnauthorized: verify,
        ...(options.allowPrivateAddresses ? {} : { lookup: guardedLookup }),
      },
    }));
  }

  /** Runs `task` holding one of the `concurrency` global slots. */
  inSlot<T>(task: () => Promise<T>): Promise<T> {
    return this.slots.run(task);
  }

  private headers(target: HttpTarget): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      'user-agent': USER_AGENT,
      // curl's CURLOPT_ENCODING='none' equivalent; undici.request never decompresses anyway. No `Expect` (§2.3).
      'accept-encoding': 'identity',
    };
    if (target.httpUser && target.httpPass) {
      headers.authorization = 'Basic ' + Buffer.from(`${target.httpUser}:${target.httpPass}`).toString('base64');
    }
    return headers;
  }

  /**
   * POSTs a form body and reads the whole reply, or fails with a ChildError: transport, timeout (connect, or the total
   * `timeoutMs` — an AbortSignal, because a trickling body defeats undici's inactivity timeouts) or too_large (counted
   * while streaming, so a hostile reply never sits in memory). `deadline` (epoch ms) bounds the whole call, fallback
   * included. Redirects are not followed. With `keepBody` false the body is discarded (reachability probe).
   */
  async post(
    url: string,
    body: string,
    target: HttpTarget,
    deadline: number,
    keepBody = true,
    timeoutMs = this.options.timeoutMs,
  ): Promise<HttpReply> {
    const { maxReplyBytes } = this.options;
    // `timeoutMs` is the call's bound, for the message: a package call's is longer than the agent's default.
    const bounds = { ...this.options, timeoutMs };
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw transportFailure(null, null, bounds);
    const signal = AbortSignal.timeout(remaining);
    let res: ResponseData;
    try {
      if (!this.options.allowPrivateAddresses) assertAllowedHost(new URL(url).hostname);
      res = await this.agents.for(target.sslVerify).request(url, {
        method: 'POST',
        body,
        headers: this.headers(target),
        signal,
        // The agent's inactivity timeouts are the ordinary bound; this call may wait as long as its own deadline.
        headersTimeout: remaining,
        bodyTimeout: remaining,
      });
    } catch (err) {
      throw transportFailure(err, signal, bounds);
    }
    const location = typeof res.headers.location === 'string' ? res.headers.location : null;
    const tooLarge = (): ReplyInterrupted =>
      new ReplyInterrupted('too_large', `The reply from the child site is larger than ${maxReplyBytes} bytes.`);
    if (Number(res.headers['content-length']) > maxReplyBytes) {
      discard(res.body);
      throw tooLarge();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > maxReplyBytes) throw tooLarge();
        if (keepBody) chunks.push(chunk);
      }
    } catch (err) {
      discard(res.body);
      if (err instanceof ReplyInterrupted) throw err;
      const failure = transportFailure(err, signal, bounds);
      throw new ReplyInterrupted(failure.kind, failure.message);
    }
    return { status: res.statusCode, location, body: Buffer.concat(chunks) };
  }

  async close(): Promise<void> {
    await this.agents.end();
  }
}
