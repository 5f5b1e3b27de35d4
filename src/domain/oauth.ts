// OAuth 2.1 access tokens for MCP over HTTP (issue 33): the protected-resource metadata (RFC 9728) and the check of a
// token from the configured authorization server — a JWT (RFC 9068) whose issuer, audience (this server's /mcp),
// expiry and signature (by the keys the server publishes, found from its metadata) are verified with `jose` — and
// its scopes mapped to a permission level and toolsets. The server's metadata and keys are fetched through the
// address policy, with bounded time and bytes, and cached.
import { LazyAgent } from '../child/undici.js';
import type { createRemoteJWKSet, FetchImplementation, JWTPayload } from 'jose';

// jose is loaded with the first token to verify: a server without OAuth never needs it (60 ms of every start).
type Jose = typeof import('jose');
let jose: Promise<Jose> | undefined;
const loadJose = () => (jose ??= import('jose'));
import { guardedLookup } from '../child/address-policy.js';
import type { Config } from '../config.js';
import { TOOLSETS } from '../core/ability.js';
import { ServiceError } from '../core/errors.js';
import type { KeyPermission, Principal } from '../core/principal.js';

/** Longest a fetch of the authorization server's metadata or keys may take. */
export const OAUTH_FETCH_TIMEOUT_MS = 5_000;
/** Most bytes a metadata document or key set may have (a key set of a few dozen keys is ~20 KB). */
export const OAUTH_FETCH_MAX_BYTES = 256 * 1024;
/** Metadata is fetched again after this long; keys are re-read by jose when a token names a key it does not know. */
const METADATA_MAX_AGE_MS = 60 * 60_000;
/** Longest access token accepted (characters); a JWT with a few scopes is under 1 KB. */
export const MAX_TOKEN_CHARS = 8 * 1024;
/** Clock skew tolerated between the authorization server and this one. */
export const CLOCK_TOLERANCE_S = 10;

/** The scopes sitefleet understands; any other scope in a token is ignored. */
export const SCOPE_READ = 'sitefleet:read';
export const SCOPE_WRITE = 'sitefleet:write';
export const TOOLSET_SCOPE_PREFIX = 'sitefleet:toolset:';

/** A 401 or 403 with what the WWW-Authenticate challenge says (RFC 6750 §3). */
export class TokenRefusal extends ServiceError {
  constructor(
    readonly oauthError: 'invalid_token' | 'insufficient_scope',
    message: string,
    readonly scope?: string,
  ) {
    super(
      oauthError === 'invalid_token' ? 'svc_rest_authentication_error' : 'svc_permission_denied',
      message,
      oauthError === 'invalid_token' ? 401 : 403,
    );
  }
}

/** The permission level and toolsets of a token's scopes (the scope mapping README's "OAuth" section gives). */
export function scopesToRights(scopes: readonly string[]): { permissions: KeyPermission; toolsets: string[] | null } | null {
  const has = new Set(scopes);
  // sitefleet:write includes reading: an MCP client that may change things must see what it changes.
  const permissions: KeyPermission | null = has.has(SCOPE_WRITE) ? 'read_write' : has.has(SCOPE_READ) ? 'read' : null;
  if (!permissions) return null;
  const toolsets = scopes.filter((s) => s.startsWith(TOOLSET_SCOPE_PREFIX)).map((s) => s.slice(TOOLSET_SCOPE_PREFIX.length));
  return { permissions, toolsets: toolsets.length ? [...new Set(toolsets)] : null };
}

/** The scopes a resource's metadata lists: the two levels (toolset scopes narrow further; README lists them). */
export const SCOPES_SUPPORTED = [SCOPE_READ, SCOPE_WRITE] as const;
export const TOOLSET_SCOPES = TOOLSETS.map((t) => `${TOOLSET_SCOPE_PREFIX}${t}`);

interface ServerMetadata {
  jwksUri: string;
  at: number;
}

export class OAuthService {
  /** The resource (and the tokens' audience): --oauth-audience, else the HTTP door's /mcp URL (set when it listens). */
  audience: string | null;
  /** The clock tokens expire by (tests move it). */
  now: () => number = Date.now;
  private readonly agent: LazyAgent;
  private metadata: Promise<ServerMetadata> | null = null;
  private jwks: ReturnType<typeof createRemoteJWKSet> | null = null;
  private jwksUri = '';

  constructor(private readonly config: Config) {
    this.audience = config.oauthAudience;
    this.agent = new LazyAgent({
      connections: 4,
      headersTimeout: OAUTH_FETCH_TIMEOUT_MS,
      bodyTimeout: OAUTH_FETCH_TIMEOUT_MS,
      connect: { timeout: OAUTH_FETCH_TIMEOUT_MS, ...(config.allowPrivateSites ? {} : { lookup: guardedLookup }) },
    });
  }

  get enabled(): boolean {
    return this.config.oauthIssuer !== null;
  }

  get issuer(): string {
    return this.config.oauthIssuer ?? '';
  }

  /** RFC 9728 protected-resource metadata of /mcp. */
  resourceMetadata(): Record<string, unknown> {
    return {
      resource: this.audience,
      authorization_servers: [this.issuer],
      scopes_supported: [...SCOPES_SUPPORTED],
      bearer_methods_supported: ['header'],
      resource_name: 'sitefleet MCP',
    };
  }

  /** The principal of an access token, or a TokenRefusal (401 invalid_token, 403 insufficient_scope). */
  async verify(token: string): Promise<Principal> {
    if (!this.enabled || !this.audience) throw new TokenRefusal('invalid_token', 'This server takes no OAuth access tokens.');
    if (token.length > MAX_TOKEN_CHARS)
      throw new TokenRefusal('invalid_token', `The access token is longer than ${MAX_TOKEN_CHARS} characters.`);
    let payload: JWTPayload;
    const j = await loadJose();
    try {
      const keys = await this.keys(j);
      ({ payload } = await j.jwtVerify(token, keys, {
        issuer: this.issuer,
        audience: this.audience,
        requiredClaims: ['exp', 'sub'],
        currentDate: new Date(this.now()),
        clockTolerance: CLOCK_TOLERANCE_S,
      }));
    } catch (e) {
      throw new TokenRefusal('invalid_token', `The access token is not valid: ${why(j, e)}`);
    }
    const scopes = scopesOf(payload);
    const rights = scopesToRights(scopes);
    if (!rights) throw new TokenRefusal('insufficient_scope', `The access token has neither ${SCOPE_READ} nor ${SCOPE_WRITE}.`, SCOPE_READ);
    const client = typeof payload.client_id === 'string' ? payload.client_id : typeof payload.azp === 'string' ? payload.azp : '-';
    return { kind: 'oauth', name: `${client}:${payload.sub}`.slice(0, 200), permissions: rights.permissions, toolsets: rights.toolsets };
  }

  close(): Promise<void> {
    return this.agent.end('close');
  }

  /** The authorization server's key set, from the jwks_uri of its metadata (both cached). */
  private async keys(j: Jose): Promise<ReturnType<typeof createRemoteJWKSet>> {
    const m = await this.serverMetadata();
    if (!this.jwks || this.jwksUri !== m.jwksUri) {
      this.jwksUri = m.jwksUri;
      this.jwks = j.createRemoteJWKSet(new URL(m.jwksUri), {
        timeoutDuration: OAUTH_FETCH_TIMEOUT_MS,
        cooldownDuration: 30_000,
        cacheMaxAge: 10 * 60_000,
        [j.customFetch]: this.fetchBounded,
      });
    }
    return this.jwks;
  }

  /**
   * RFC 8414 metadata (then OpenID discovery, which servers such as oidc-provider serve instead): its `issuer` must be
   * the configured one exactly, its jwks_uri https (http only on a loopback issuer). A failure is not cached.
   */
  private serverMetadata(): Promise<ServerMetadata> {
    if (this.metadata) {
      const cached = this.metadata;
      return cached.then((m) => (Date.now() - m.at > METADATA_MAX_AGE_MS ? ((this.metadata = null), this.serverMetadata()) : m));
    }
    const p = this.discover().catch((e: unknown) => {
      if (this.metadata === p) this.metadata = null;
      throw e;
    });
    this.metadata = p;
    return p;
  }

  private async discover(): Promise<ServerMetadata> {
    const issuer = new URL(this.issuer);
    const path = issuer.pathname === '/' ? '' : issuer.pathname.replace(/\/$/, '');
    const candidates = [
      `${issuer.origin}/.well-known/oauth-authorization-server${path}`,
      `${issuer.origin}${path}/.well-known/openid-configuration`,
    ];
    let last = '';
    for (const url of candidates) {
      const res = await this.fetchBounded(url, {
        headers: new Headers({ accept: 'application/json' }),
        method: 'GET',
        redirect: 'manual',
        signal: AbortSignal.timeout(OAUTH_FETCH_TIMEOUT_MS),
      });
      if (res.status !== 200) {
        last = `${url} answered ${res.status}`;
        continue;
      }
      const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
      if (doc.issuer !== this.issuer) throw new Error(`the metadata at ${url} names issuer ${String(doc.issuer)}, not ${this.issuer}`);
      if (typeof doc.jwks_uri !== 'string') throw new Error(`the metadata at ${url} has no jwks_uri`);
      const jwks = new URL(doc.jwks_uri);
      if (jwks.protocol !== 'https:' && !(jwks.protocol === 'http:' && issuer.protocol === 'http:'))
        throw new Error(`jwks_uri ${doc.jwks_uri} is not https`);
      return { jwksUri: jwks.href, at: Date.now() };
    }
    throw new Error(`no authorization server metadata (${last})`);
  }

  /** GET through the address policy, within the time and byte bounds; redirects are not followed (undici's request does not). */
  private readonly fetchBounded: FetchImplementation = async (url, options) => {
    const res = await this.agent.request(url, {
      method: 'GET',
      headers: { accept: options.headers.get('accept') ?? 'application/json' },
      signal: options.signal,
    });
    const declared = Number(res.headers['content-length']);
    if (declared > OAUTH_FETCH_MAX_BYTES) {
      res.body.destroy();
      throw new Error(`${url} sent more than ${OAUTH_FETCH_MAX_BYTES} bytes`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of res.body) {
      size += (c as Buffer).length;
      if (size > OAUTH_FETCH_MAX_BYTES) {
        res.body.destroy();
        throw new Error(`${url} sent more than ${OAUTH_FETCH_MAX_BYTES} bytes`);
      }
      chunks.push(c as Buffer);
    }
    return new Response(Buffer.concat(chunks), {
      status: res.statusCode,
      headers: { 'content-type': String(res.headers['content-type'] ?? 'application/json') },
    });
  };
}

/** `scope` (RFC 9068: space-separated) or `scp` (an array, as some servers send). */
function scopesOf(p: JWTPayload): string[] {
  if (typeof p.scope === 'string') return p.scope.split(' ').filter(Boolean);
  if (Array.isArray(p.scp)) return p.scp.filter((s): s is string => typeof s === 'string');
  return [];
}

/** A refusal's reason in a few words, never the token. */
function why({ errors: joseErrors }: Jose, e: unknown): string {
  if (e instanceof joseErrors.JWTExpired) return 'it has expired.';
  if (e instanceof joseErrors.JWTClaimValidationFailed) {
    if (e.claim === 'aud') return 'it is for another audience (resource).';
    if (e.claim === 'iss') return 'it is from another issuer.';
    return `its ${e.claim} claim is wrong (${e.reason}).`;
  }
  if (e instanceof joseErrors.JWSSignatureVerificationFailed) return 'its signature does not verify.';
  if (e instanceof joseErrors.JWKSNoMatchingKey) return "no key of the authorization server's signed it.";
  if (e instanceof joseErrors.JWSInvalid || e instanceof joseErrors.JWTInvalid) return 'it is not a signed JWT.';
  const m = e instanceof Error ? e.message : String(e);
  return `its signing keys could not be read (${m}).`;
}
