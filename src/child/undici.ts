// undici, imported on the first outgoing call instead of at start. Loading it is about 100 ms of every process's start
// (serve's first answer, each CLI command, each stdio MCP server), and most of them never call out; the first call
// waits for it once. Every outgoing HTTP call of sitefleet goes through an agent made here.
import type { Agent, Dispatcher } from 'undici';

type Undici = typeof import('undici');
export type RequestOptions = Omit<NonNullable<Parameters<Undici['request']>[1]>, 'dispatcher'>;
export type ResponseData = Dispatcher.ResponseData<unknown>;

let loading: Promise<Undici> | undefined;

/** The undici module, imported once, on the first call. */
export function undici(): Promise<Undici> {
  return (loading ??= import('undici'));
}

/** A keep-alive undici Agent made with `options` on its first request (or `ready()`); closing one never made is nothing. */
export class LazyAgent {
  private agent: Agent | undefined;
  private closed = false;

  constructor(private readonly options: Agent.Options) {}

  /** Loads undici and makes the agent, so that what a caller times next is the call alone (an uptime check's ms). */
  async ready(): Promise<Agent> {
    const { Agent } = await undici();
    if (this.closed) throw new Error('This HTTP agent is closed.');
    // After the await: two first calls at once make one agent.
    return (this.agent ??= new Agent(this.options));
  }

  async request(url: string | URL, options: RequestOptions): Promise<ResponseData> {
    const [{ request }, dispatcher] = await Promise.all([undici(), this.ready()]);
    return request(url, { ...options, dispatcher });
  }

  /** Ends its connections now (`destroy`) or once their requests finish (`close`). */
  async end(how: 'destroy' | 'close' = 'destroy'): Promise<void> {
    this.closed = true;
    const agent = this.agent;
    this.agent = undefined;
    if (agent) await (how === 'close' ? agent.close() : agent.destroy());
  }
}

/** One LazyAgent per TLS-verification setting (certificate checking is a connection option, so it cannot be shared). */
export class TlsAgents {
  private readonly verify: LazyAgent;
  private readonly noVerify: LazyAgent;

  constructor(options: (verify: boolean) => Agent.Options) {
    this.verify = new LazyAgent(options(true));
    this.noVerify = new LazyAgent(options(false));
  }

  for(verify: boolean): LazyAgent {
    return verify ? this.verify : this.noVerify;
  }

  async end(): Promise<void> {
    await Promise.all([this.verify.end(), this.noVerify.end()]);
  }
}
