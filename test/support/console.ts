// Test support: a console session over HTTP (login with a user's application password, then runs with its cookie and
// CSRF token), as the console's pages make them.
import type { TestServer } from './server.js';

export interface ConsoleSession {
  /** POST /console/api/run/<ability> with `{input}`; the status and the parsed body. */
  run(name: string, input?: unknown): Promise<{ status: number; body: any }>;
}

/** Logs in as the user of `basicHeader` ("Basic base64(name:password)", as TestServer.creds holds them). */
export async function consoleSession(s: TestServer, basicHeader: string): Promise<ConsoleSession> {
  const [name, ...rest] = Buffer.from(basicHeader.slice(6), 'base64').toString().split(':');
  const headers = { 'content-type': 'application/json', origin: s.url };
  const login = await fetch(`${s.url}/console/api/login`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name, password: rest.join(':') }),
  });
  if (login.status !== 200) throw new Error(`console login: ${login.status} ${await login.text()}`);
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const csrf = ((await login.json()) as { csrf_token: string }).csrf_token;
  return {
    async run(ability, input) {
      const r = await fetch(`${s.url}/console/api/run/${ability}`, {
        method: 'POST',
        headers: { ...headers, cookie, 'x-csrf-token': csrf },
        body: JSON.stringify(input === undefined ? {} : { input }),
      });
      const text = await r.text();
      return { status: r.status, body: text ? JSON.parse(text) : null };
    },
  };
}
