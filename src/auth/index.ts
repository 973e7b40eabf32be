/**
 * The one seam between the HTTP edge and authentication: `authorize(request)` takes what the edge
 * knows about a request (the access it needs, its Authorization header, client address) and returns the
 * caller's Grant, or throws 401 UNAUTHORIZED (with its challenge) or 403 DENIED. The registry
 * core never sees credentials.
 *
 * Access controllers: none (everyone may do everything), htpasswd (Basic, optionally limited by
 * auth.access), token (Bearer JWTs, optionally issued by berth itself). With htpasswd, a Basic
 * password that is a JWT of an issuer of auth.federation is checked by federation.ts instead, and
 * an API token's (api-tokens.ts: its own grant) before both.
 * With auth.oidc, a request without credentials whose cookie holds a web interface session is
 * decided for its user and groups (oidc/).
 *
 * The checkers of credentials (htpasswd with bcryptjs; the token issuer, the verifier and the
 * federation with jose; the sign-in with openid-client) are loaded when the configuration names
 * them: a registry without authentication does not hold them (0.5 MiB of idle RSS,
 * docs/performance.md).
 */
import type { Logger } from 'pino';
import type { AuditSink } from '../audit/record.js';
import { RegistryError } from '../registry/errors.js';
import { systemClock, type Clock } from '../scheduler/clock.js';
import type { AuthRequest, CallerGrant } from './request.js';
import { CATALOG_ACCESS, formatScope, toScopes, type AccessRequest, type Grant } from './access.js';
import type { ApiTokens, OwnerRights } from './api-tokens.js';
import { failedLoginBuckets, LoginGuard } from './login-guard.js';
import type { AuthOptions } from './options.js';
import { parseBasic } from './basic.js';
import type { TokenIssuer } from './issuer.js';
import { AccessPolicy } from './policy.js';
import { MemoryRateLimiter, type BucketOptions, type RateLimiter } from './ratelimit.js';
import { withSessions } from './oidc/grant.js';
import type { OidcSignIn } from './oidc/sign-in.js';

export type { AuthRequest, CallerGrant } from './request.js';

const EVERYTHING: CallerGrant = { user: undefined, allows: () => true, lists: () => true };

export interface Auth {
  authorize(request: AuthRequest): Promise<CallerGrant>;
  issuer: TokenIssuer | undefined;
  /** the web interface's single sign-on (auth.oidc) */
  signIn: OidcSignIn | undefined;
  /** API tokens, when the metadata index is on (the web interface's tokens page manages them) */
  tokens: ApiTokens | undefined;
  /** the path (below http.prefix) the issuer answers on */
  issuerPath: string | undefined;
  limiter: RateLimiter | undefined;
  limitBy: 'ip' | 'user';
  close(): Promise<void>;
}

/** token buckets kept elsewhere (Redis), shared by every instance; without it buckets are per process */
export type SharedLimiter = (bucket: BucketOptions) => RateLimiter;

export interface AuthContext {
  logger: Logger;
  /** "now" for the htpasswd reload check and its login cache (default: the system clock) */
  clock?: Clock;
  sharedLimiter?: SharedLimiter;
  /** worker processes serving the port (http.workers): buckets not shared through Redis get a share each */
  processes?: number;
  /** the registry's shared secret (http/secret.ts): seals the sign-in cookies */
  secret?: string;
  /** the audit log, when on: for the credential checks' own records (API tokens, federation); the edge records sign-ins and refusals */
  audit?: AuditSink;
  /** API tokens (the metadata index's): tried first for Basic credentials whose password is a token's secret */
  tokens?: ApiTokens;
}

export async function createAuth(options: AuthOptions, context: AuthContext): Promise<Auth> {
  const { logger, clock = systemClock } = context;
  const auth = options.auth;
  const policy = new AccessPolicy(auth?.access);
  const htpasswd = auth?.htpasswd
    ? new (await import('./htpasswd.js')).Htpasswd(auth.htpasswd.path, (err) => logger.error({ err: err.message }, 'htpasswd file: entries refused'), clock)
    : undefined;
  const failed = auth && auth.failedlogins.burst > 0 ? failedLoginBuckets(auth.failedlogins) : undefined;
  const loginBuckets = htpasswd && failed ? (context.sharedLimiter?.(failed) ?? new MemoryRateLimiter(perProcess(failed, context.processes ?? 1))) : undefined;
  const guard = htpasswd && new LoginGuard(loginBuckets);
  const federation = htpasswd && auth?.federation ? new (await import('./federation.js')).Federation(auth.federation, { logger, clock, audit: context.audit }) : undefined;
  const tokens = htpasswd ? context.tokens : undefined;
  // a token a person created never does more than they may now, with the groups they had when they created it
  const ownerRights: OwnerRights = (owner, groups, request) => policy.allows(owner, request, groups);
  /** Basic credentials that are an API token's: its grant, or 401 with the reason; undefined: not a token's */
  const tokenLogin = async (user: string, password: string, address: string, challenge: Record<string, string>) => {
    const login = await tokens?.login(user, password, address, guard, ownerRights);
    if (login && 'refused' in login) throw new RegistryError('UNAUTHORIZED', login.refused, { headers: challenge });
    return login?.grant;
  };
  let issuer: TokenIssuer | undefined;
  let authorize: Auth['authorize'];

  if (auth?.token) {
    const token = auth.token;
    const [{ readSigningKey, TokenIssuer }, { readTrustFiles, TokenError, TokenVerifier }] = await Promise.all([import('./issuer.js'), import('./token.js')]);
    const keys = new Map();
    if (token.issuer.enabled) {
      issuer = new TokenIssuer({
        issuer: token.issuer.name!,
        service: token.service,
        signingKey: readSigningKey(token.issuer.signingkey!),
        expirationMs: token.issuer.expiration,
        refreshExpirationMs: token.issuer.refreshexpiration,
        htpasswd: htpasswd!,
        guard: guard!,
        federation,
        policy,
        tokens: tokens && ((user, password, address) => tokens.login(user, password, address, guard, ownerRights)),
        realm: auth.htpasswd!.realm,
      });
      keys.set(issuer.kid, issuer.publicKey);
    }
    const verifier = new TokenVerifier({ issuer: token.issuer.name!, service: token.service, ...readTrustFiles(token), keys });
    const realmFor = (req: AuthRequest) => (token.autoredirect ? `${req.protocol}://${req.host}${options.prefix}${token.autoredirectpath}` : token.realm!);
    authorize = async (req) => {
      const needed = req.needed;
      const challenge = (error?: string) => {
        const parts = [`realm=${quote(realmFor(req))}`, `service=${quote(token.service)}`];
        // a mount's source is asked for too (as Distribution does), so clients fetch a token that can mount
        const asked = req.mountFrom !== undefined ? [...needed, { type: 'repository' as const, name: req.mountFrom, action: 'pull' }] : needed;
        if (asked.length > 0) parts.push(`scope=${quote(toScopes(asked).map(formatScope).join(' '))}`);
        if (error) parts.push(`error=${quote(error)}`);
        return { 'www-authenticate': `Bearer ${parts.join(',')}` };
      };
      const m = /^Bearer\s+(\S+)\s*$/i.exec(req.authorization ?? '');
      if (!m) throw new RegistryError('UNAUTHORIZED', 'authentication required: get a token from the realm of the WWW-Authenticate challenge', { headers: challenge() });
      let grant;
      try {
        grant = await verifier.verify(m[1]);
      } catch (err) {
        if (!(err instanceof TokenError)) throw err;
        throw new RegistryError('UNAUTHORIZED', err.message, { headers: challenge('invalid_token') });
      }
      // issued for an API token: refused as soon as the token is revoked or expires, not when the JWT does
      if (grant.apiToken && !(await tokens?.live(grant.user ?? ''))) {
        throw new RegistryError('UNAUTHORIZED', `the API token ${JSON.stringify(grant.user)} was revoked or expired`, { headers: challenge('invalid_token') });
      }
      const missing = needed.filter((r) => !grant.allows(r));
      if (missing.length > 0) {
        throw new RegistryError('UNAUTHORIZED', `the token does not grant ${toScopes(missing).map(formatScope).join(' ')}`, {
          headers: challenge('insufficient_scope'),
          detail: toScopes(missing).map((s) => ({ Type: s.type, Name: s.name, Action: s.actions.join(',') })),
        });
      }
      // what the catalog and the web interface list: everything with the catalog scope; else the
      // repositories the token may pull and, with the built-in issuer, those auth.access lets its user pull
      const pulls = (name: string): AccessRequest => ({ type: 'repository', name, action: 'pull' });
      const lists = (name: string) => grant.allows(CATALOG_ACCESS) || grant.allows(pulls(name)) || (issuer !== undefined && !grant.apiToken && policy.allows(grant.user, pulls(name)));
      return { user: grant.user, allows: (r) => grant.allows(r), lists, apiToken: grant.apiToken };
    };
  } else if (htpasswd) {
    const realm = auth!.htpasswd!.realm;
    const challenge = { 'www-authenticate': `Basic realm=${quote(realm)}` };
    authorize = async (req) => {
      let user: string | undefined;
      /** a credential's own grant (a federated JWT's rule), which decides instead of auth.access */
      let own: Grant | undefined;
      if (req.authorization !== undefined) {
        const creds = parseBasic(req.authorization);
        if (!creds) throw new RegistryError('UNAUTHORIZED', 'malformed Authorization header: expected Basic credentials', { headers: challenge });
        const token = await tokenLogin(creds.user, creds.password, req.address, challenge);
        if (token) return apiTokenCaller(token, req.needed);
        own = await federation?.login(creds, req.address, guard!, (message) => new RegistryError('UNAUTHORIZED', message, { headers: challenge }));
        if (!own && !(await guard!.verify(creds.user, req.address, () => htpasswd.verify(creds.user, creds.password)))) {
          throw new RegistryError('UNAUTHORIZED', 'invalid username or password', { headers: challenge });
        }
        user = own?.user ?? creds.user;
      }
      const needed = req.needed;
      if (user === undefined && (needed.length === 0 || needed.some((r) => r === CATALOG_ACCESS || !policy.allows(undefined, r)))) {
        throw new RegistryError('UNAUTHORIZED', 'authentication required', { headers: challenge });
      }
      const allows = (r: AccessRequest) => (own ? own.allows(r) : policy.allows(user, r));
      const denied = needed.filter((r) => !allows(r));
      if (denied.length > 0) throw denial(user, denied);
      return {
        user,
        allows,
        lists: (name) => allows({ type: 'repository', name, action: 'pull' }),
      };
    };
  } else {
    authorize = async () => EVERYTHING;
  }
  const oidc = auth?.oidc && (await import('./oidc/sign-in.js'));
  const signIn = auth?.oidc && oidc && new oidc.OidcSignIn(auth.oidc, { secret: context.secret ?? oidc.throwawaySecret(), clock, logger, audit: context.audit });
  if (signIn) authorize = withSessions(authorize, signIn, policy, options.prefix, denial);

  const limiter = createLimiter(options, context.sharedLimiter);
  return {
    authorize,
    issuer,
    signIn,
    tokens,
    issuerPath: issuer ? auth!.token!.autoredirectpath : undefined,
    limiter,
    limitBy: options.ratelimit?.by ?? 'ip',
    async close() {
      await limiter?.close();
      await loginBuckets?.close();
    },
  };
}

/** an API token's grant as the caller's: 403 for what it lacks */
function apiTokenCaller(grant: Grant, needed: AccessRequest[]): CallerGrant {
  const denied = needed.filter((r) => !grant.allows(r));
  if (denied.length > 0) throw denial(grant.user, denied);
  return { user: grant.user, allows: (r) => grant.allows(r), lists: (name) => grant.allows({ type: 'repository', name, action: 'pull' }), apiToken: true };
}

function denial(user: string | undefined, denied: AccessRequest[]): RegistryError {
  const what = toScopes(denied).map(formatScope).join(' ');
  return new RegistryError('DENIED', `user ${JSON.stringify(user)} may not ${what}`, {
    detail: toScopes(denied).map((s) => ({ Type: s.type, Name: s.name, Action: s.actions.join(',') })),
  });
}

function createLimiter(options: AuthOptions, shared: SharedLimiter | undefined): RateLimiter | undefined {
  const limit = options.ratelimit;
  if (!limit) return undefined;
  const bucket = { rate: limit.rate, burst: limit.burst };
  return shared ? shared(bucket) : new MemoryRateLimiter(bucket);
}

function quote(value: string): string {
  return `"${value.replace(/["\\]/g, '\\$&')}"`;
}

/**
 * One process's share of buckets it cannot share: the workers take connections in turn, so each
 * sees about 1/N of a client's attempts, and N shares add up to the configured limit (a client on
 * one kept-alive connection meets one share: stricter, never looser). docs/decisions.md
 */
function perProcess(buckets: BucketOptions, processes: number): BucketOptions {
  return processes <= 1 ? buckets : { burst: Math.max(1, Math.ceil(buckets.burst / processes)), rate: buckets.rate / processes };
}
