// Test support: a real OAuth 2.1 / OpenID authorization server (oidc-provider) on a loopback port, issuing JWT access
// tokens for resource servers (resource indicators), with dynamic client registration and its development login and
// consent pages; and an OAuthClientProvider for the MCP SDK client that logs in and consents on those pages with
// plain HTTP requests, as a person would with a browser.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

export interface AuthServer {
  issuer: string;
  provider: Provider;
  close(): Promise<void>;
}

export interface AuthServerOptions {
  /** Access token life in seconds. */
  accessTokenTtl?: number;
  /** The resource scopes a client may be granted (by its client_name); default: read and write. */
  scopesFor?: (clientName: string | undefined) => string;
  /** A confidential client for the client-credentials grant: mints tokens without the login pages. */
  machineClient?: { id: string; secret: string };
}

export async function startAuthServer(opts: AuthServerOptions = {}): Promise<AuthServer> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'ES256', use: 'sig' };
  const ttl = opts.accessTokenTtl ?? 300;
  const provider = new Provider(issuer, {
    jwks: { keys: [jwk] },
    cookies: { keys: ['sitefleet-test-cookie-key'] },
    // Its one key is an ES256 one (quick to make): ID tokens are signed with it too.
    // Scopes a client may register with (the SDK registers with the resource's scopes_supported).
    scopes: ['openid', 'offline_access', 'sitefleet:read', 'sitefleet:write', 'sitefleet:toolset:tags', 'sitefleet:toolset:sites'],
    ttl: { ClientCredentials: ttl, AccessToken: ttl, Interaction: 600, Session: 3600, Grant: 3600 },
    clientDefaults: { id_token_signed_response_alg: 'ES256', grant_types: ['authorization_code'], response_types: ['code'] },
    clients: opts.machineClient
      ? [
          {
            client_id: opts.machineClient.id,
            client_secret: opts.machineClient.secret,
            grant_types: ['client_credentials'],
            redirect_uris: [],
            response_types: [],
          },
        ]
      : [],
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      registrationManagement: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource, client) => ({
          scope: opts.scopesFor ? opts.scopesFor(client.clientName) : 'sitefleet:read sitefleet:write',
          audience: resource,
          accessTokenTTL: ttl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
  });
  server.on('request', provider.callback());
  return {
    issuer,
    provider,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A client-credentials token from the machine client (for tokens the login flow would not make). */
export async function machineToken(
  as: AuthServer,
  client: { id: string; secret: string },
  resource: string,
  scope: string,
): Promise<string> {
  const res = await fetch(`${as.issuer}/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }),
  });
  const body = (await res.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`no token: ${JSON.stringify(body)}`);
  return body.access_token;
}

/** A browser's cookies, enough for the login pages: by name (the latest wins), dropped when the server expires them. */
class CookieJar {
  private readonly cookies = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*expires=.*1970/i.test(a)) || value === '';
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): Record<string, string> {
    return this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {};
  }
}

/**
 * Follows an authorization URL as a browser would, signing in as `login` and pressing Continue on the consent page,
 * until the authorization server redirects to `redirectUrl`; answers the code.
 */
export async function signIn(authorizationUrl: URL, redirectUrl: string, login: string): Promise<string> {
  const jar = new CookieJar();
  let next = authorizationUrl.href;
  for (let step = 0; step < 12; step++) {
    const res = await fetch(next, { redirect: 'manual', headers: jar.header() });
    jar.take(res);
    let location = res.headers.get('location');
    if (res.status === 200) {
      const page = await res.text();
      const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
      const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
      if (!prompt || !action) throw new Error(`not a login or consent page: ${page.slice(0, 300)}`);
      const form: Record<string, string> = prompt === 'login' ? { prompt, login, password: 'any' } : { prompt };
      const posted = await fetch(new URL(action, next), {
        method: 'POST',
        redirect: 'manual',
        headers: { ...jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form),
      });
      jar.take(posted);
      location = posted.headers.get('location');
      if (!location) throw new Error(`the ${prompt} page answered ${posted.status}: ${(await posted.text()).slice(0, 300)}`);
    } else if (!location) throw new Error(`the authorization server answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    const to = new URL(location, next);
    if (to.href.startsWith(redirectUrl)) {
      const code = to.searchParams.get('code');
      if (!code) throw new Error(`authorization refused: ${to.searchParams.get('error')} ${to.searchParams.get('error_description')}`);
      return code;
    }
    next = to.href;
  }
  throw new Error('too many redirects in the sign-in');
}

/**
 * The MCP SDK client's OAuth side for one test client: registers dynamically, keeps its tokens and PKCE verifier in
 * memory, and "redirects the user" by signing in on the authorization server's pages (signIn); the code is kept for
 * the test to hand to transport.finishAuth.
 */
export class TestOAuthClient implements OAuthClientProvider {
  readonly redirectUrl = 'http://127.0.0.1:9/callback';
  code: string | null = null;
  registered: OAuthClientInformationMixed | undefined;
  /** The registration answer as the authorization server sent it (the SDK keeps only the client's fields). */
  registration: { client_id: string; registration_access_token?: string; registration_client_uri?: string } | null = null;
  /** The transport's fetch: keeps the registration answer, which holds the token that manages the registration. */
  readonly fetch = async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const res = await fetch(url, init);
    if (init?.method === 'POST' && new URL(url).pathname === '/reg' && res.status === 201) this.registration = await res.clone().json();
    return res;
  };
  private saved: OAuthTokens | undefined;
  private verifier = '';

  constructor(
    private readonly name: string,
    private readonly login = 'alice',
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.registered;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.registered = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(t: OAuthTokens) {
    this.saved = t;
  }
  async redirectToAuthorization(url: URL) {
    this.code = await signIn(url, this.redirectUrl, this.login);
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  /** Forgets the tokens (the next request signs in again). */
  forgetTokens() {
    this.saved = undefined;
  }
}
