/**
 * The one seam between the HTTP edge and authentication: `authorize(request)` takes what the edge
 * knows about a request (its route, method, Authorization header, client address) and returns the
 * caller's Grant, or throws 401 UNAUTHORIZED (with its challenge) or 403 DENIED. The registry
 * core never sees credentials.
 *
 * Access controllers: none (everyone may do everything), htpasswd (Basic, optionally limited by
 * auth.access), token (Bearer JWTs, optionally issued by berth itself).
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Route } from '../http/routes.js';
import { RegistryError } from '../registry/errors.js';
import { systemClock, type Clock } from '../scheduler/clock.js';
import { CATALOG_ACCESS, formatScope, requiredAccess, toScopes, type AccessRequest, type Grant } from './access.js';
import { Htpasswd } from './htpasswd.js';
import { parseBasic, readSigningKey, TokenIssuer } from './issuer.js';
import { AccessPolicy } from './policy.js';
import { MemoryRateLimiter, type RateLimiter } from './ratelimit.js';
import type { RedisRateLimiter } from './ratelimit-redis.js';
import { readTrustFiles, TokenError, TokenVerifier } from './token.js';

export interface AuthRequest {
  route: Route;
  method: string;
  authorization: string | undefined;
  /** the `from` of a mount (POST .../blobs/uploads/?mount=&from=): its pull goes into challenges */
  mountFrom?: string;
  /** for autoredirect realms: the scheme and Host the client used */
  protocol: string;
  host: string;
}

/** a Grant that also decides which repositories the catalog shows */
export interface CallerGrant extends Grant {
  /** may `name` appear in this caller's catalog? */
  lists(name: string): boolean;
}

const EVERYTHING: CallerGrant = { user: undefined, allows: () => true, lists: () => true };

export interface Auth {
  authorize(request: AuthRequest): Promise<CallerGrant>;
  issuer: TokenIssuer | undefined;
  /** the path (below http.prefix) the issuer answers on */
  issuerPath: string | undefined;
  limiter: RateLimiter | undefined;
  limitBy: 'ip' | 'user';
  close(): Promise<void>;
}

/** modules the composition root loads only when the configuration uses them */
export interface OptionalAuthModules {
  /** ratelimit-redis.js, with `redis` configured */
  RedisRateLimiter?: typeof RedisRateLimiter;
}

export function createAuth(config: Config, logger: Logger, modules: OptionalAuthModules = {}, clock: Clock = systemClock): Auth {
  const auth = config.auth;
  const policy = new AccessPolicy(auth?.access);
  const htpasswd = auth?.htpasswd
    ? new Htpasswd(auth.htpasswd.path, (err) => logger.error({ err: err.message }, 'htpasswd file not reloaded: the previous version stays in use'), clock)
    : undefined;
  let issuer: TokenIssuer | undefined;
  let authorize: Auth['authorize'];

  if (auth?.token) {
    const token = auth.token;
    const keys = new Map();
    if (token.issuer.enabled) {
      issuer = new TokenIssuer({
        issuer: token.issuer.name!,
        service: token.service,
        signingKey: readSigningKey(token.issuer.signingkey!),
        expirationMs: token.issuer.expiration,
        refreshExpirationMs: token.issuer.refreshexpiration,
        htpasswd: htpasswd!,
        policy,
        realm: auth.htpasswd!.realm,
      });
      keys.set(issuer.kid, issuer.publicKey);
    }
    const verifier = new TokenVerifier({ issuer: token.issuer.name!, service: token.service, ...readTrustFiles(token), keys });
    const realmFor = (req: AuthRequest) => (token.autoredirect ? `${req.protocol}://${req.host}${prefixOf(config)}${token.autoredirectpath}` : token.realm!);
    authorize = async (req) => {
      const needed = requiredAccess(req.route, req.method);
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
      const missing = needed.filter((r) => !grant.allows(r));
      if (missing.length > 0) {
        throw new RegistryError('UNAUTHORIZED', `the token does not grant ${toScopes(missing).map(formatScope).join(' ')}`, {
          headers: challenge('insufficient_scope'),
          detail: toScopes(missing).map((s) => ({ Type: s.type, Name: s.name, Action: s.actions.join(',') })),
        });
      }
      return { user: grant.user, allows: (r) => grant.allows(r), lists: () => true };
    };
  } else if (htpasswd) {
    const realm = auth!.htpasswd!.realm;
    const challenge = { 'www-authenticate': `Basic realm=${quote(realm)}` };
    authorize = async (req) => {
      let user: string | undefined;
      if (req.authorization !== undefined) {
        const creds = parseBasic(req.authorization);
        if (!creds) throw new RegistryError('UNAUTHORIZED', 'malformed Authorization header: expected Basic credentials', { headers: challenge });
        if (!(await htpasswd.verify(creds.user, creds.password))) throw new RegistryError('UNAUTHORIZED', 'invalid username or password', { headers: challenge });
        user = creds.user;
      }
      const needed = requiredAccess(req.route, req.method);
      if (user === undefined && (needed.length === 0 || needed.some((r) => r === CATALOG_ACCESS || !policy.allows(undefined, r)))) {
        throw new RegistryError('UNAUTHORIZED', 'authentication required', { headers: challenge });
      }
      const denied = needed.filter((r) => !policy.allows(user, r));
      if (denied.length > 0) throw denial(user, denied);
      return {
        user,
        allows: (r) => policy.allows(user, r),
        lists: (name) => policy.allows(user, { type: 'repository', name, action: 'pull' }),
      };
    };
  } else {
    authorize = async () => EVERYTHING;
  }

  const limiter = createLimiter(config, logger, modules);
  return {
    authorize,
    issuer,
    issuerPath: issuer ? auth!.token!.autoredirectpath : undefined,
    limiter,
    limitBy: config.ratelimit?.by ?? 'ip',
    async close() {
      await limiter?.close();
    },
  };
}

function denial(user: string | undefined, denied: AccessRequest[]): RegistryError {
  const what = toScopes(denied).map(formatScope).join(' ');
  return new RegistryError('DENIED', `user ${JSON.stringify(user)} may not ${what}`, {
    detail: toScopes(denied).map((s) => ({ Type: s.type, Name: s.name, Action: s.actions.join(',') })),
  });
}

function createLimiter(config: Config, logger: Logger, modules: OptionalAuthModules): RateLimiter | undefined {
  const limit = config.ratelimit;
  if (!limit) return undefined;
  const bucket = { rate: limit.rate, burst: limit.burst };
  if (!config.redis) return new MemoryRateLimiter(bucket);
  if (!modules.RedisRateLimiter) throw new Error('redis is configured but ratelimit-redis.js was not loaded'); // a bug of the composition root
  const { addr, username, password, db, dialtimeout, readtimeout } = config.redis;
  const colon = addr.lastIndexOf(':');
  return new modules.RedisRateLimiter(
    bucket,
    {
      host: addr.slice(0, colon).replace(/^\[|\]$/g, '') || '127.0.0.1',
      port: Number(addr.slice(colon + 1)),
      username,
      password,
      db,
      connectTimeoutMs: dialtimeout,
      commandTimeoutMs: readtimeout,
    },
    logger,
  );
}

function prefixOf(config: Config): string {
  return (config.http.prefix ?? '/').replace(/\/$/, '');
}

function quote(value: string): string {
  return `"${value.replace(/["\\]/g, '\\$&')}"`;
}
