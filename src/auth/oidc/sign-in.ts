/**
 * Single sign-on for the web interface: the authorization code flow with PKCE against an OpenID
 * Provider (openid-client does discovery, the token request and the ID token's checks), and the
 * session that follows it, kept in the browser as a sealed cookie (seal.ts) that any instance
 * reads with the shared secret. The session names the user and their groups; the groups are read
 * again from the provider (the refresh token, then userinfo) once they are older than
 * auth.oidc.groupsrefresh, so a person removed from a group loses its rights within that time.
 * Without a refresh token, or when the provider refuses it, the session ends. docs/decisions.md
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { LRUCache } from 'lru-cache';
import * as client from 'openid-client';
import type { Logger } from 'pino';
import type { AuditSink } from '../../audit/record.js';
import type { Clock } from '../../scheduler/clock.js';
import { GROUP_PREFIX } from '../policy.js';
import type { OidcOptions } from './options.js';
import { cookieValue, Sealer, setCookie } from './seal.js';
import { SignInError } from './sign-in-error.js';

export const SESSION_COOKIE = 'berth_session';
const FLOW_COOKIE = 'berth_signin';
/** how long the browser may take at the provider */
const FLOW_LIFETIME_MS = 10 * 60_000;

/** what the request tells about where the registry is (the redirect URL, the cookies' path and Secure) */
export interface Where {
  protocol: string;
  host: string;
  /** http.prefix ('' or '/path') */
  prefix: string;
  address: string;
}

/** a signed-in person, as a request's cookie shows them */
export interface Session {
  user: string;
  groups: string[];
  /** a Set-Cookie carrying the session with its groups read again, for the response */
  renewed?: string;
}

interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  redirect: string;
  back: string;
  until: number;
}

interface Kept {
  user: string;
  sub: string;
  groups: string[];
  /** when the groups were read from the provider */
  groupsAt: number;
  until: number;
  refresh?: string;
}

export interface SignInContext {
  /** the registry's shared secret (http/secret.ts) */
  secret: string;
  clock: Clock;
  logger: Logger;
  audit?: AuditSink;
}

export class OidcSignIn {
  private readonly sealer: Sealer;
  private readonly clientSecret: string;
  private discovered: Promise<client.Configuration> | undefined;
  /** groups read again, by the session they were read for: parallel requests of one page refresh once */
  private readonly refreshed = new LRUCache<string, Promise<Kept | undefined>>({ max: 1000, ttl: 60_000 });

  constructor(
    private readonly options: OidcOptions,
    private readonly context: SignInContext,
  ) {
    this.sealer = new Sealer(context.secret);
    this.clientSecret = options.clientsecret ?? readSecretFile(options.clientsecretfile!);
  }

  /** the provider's metadata, fetched on first use (a provider down at start-up does not stop the registry) */
  private configuration(): Promise<client.Configuration> {
    this.discovered ??= client
      .discovery(new URL(this.options.issuer), this.options.clientid, this.clientSecret, undefined, {
        execute: new URL(this.options.issuer).protocol === 'http:' ? [client.allowInsecureRequests] : [],
      })
      .catch((err: unknown) => {
        this.discovered = undefined;
        throw new SignInError(`the OpenID Provider ${this.options.issuer} cannot be reached or described (discovery): ${describe(err)}`);
      });
    return this.discovered;
  }

  /** the provider's authorization URL for a new sign-in, and the cookie that remembers it; `back` is where to land afterwards */
  async begin(where: Where, back: string): Promise<{ location: string; cookie: string }> {
    const config = await this.configuration();
    const flow: Flow = {
      state: client.randomState(),
      nonce: client.randomNonce(),
      verifier: client.randomPKCECodeVerifier(),
      redirect: this.options.redirecturl ?? `${where.protocol}://${where.host}${where.prefix}/ui/callback`,
      back: safeBack(back, where.prefix),
      until: this.context.clock.now() + FLOW_LIFETIME_MS,
    };
    const location = client.buildAuthorizationUrl(config, {
      redirect_uri: flow.redirect,
      scope: this.options.scopes.join(' '),
      state: flow.state,
      nonce: flow.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
    });
    const cookie = setCookie(FLOW_COOKIE, this.sealer.seal(FLOW_COOKIE, flow), { path: callbackPath(where), maxAge: FLOW_LIFETIME_MS / 1000, secure: this.secure(where) });
    return { location: location.href, cookie };
  }

  /**
   * The provider's redirect back (`query` is the callback's query string): checks the state, trades
   * the code (with the PKCE verifier) for tokens, checks the ID token (issuer, audience, nonce,
   * signature) and reads the user and groups. Returns the cookies to set (the session; the flow's
   * cleared) and where to go; throws SignInError. Either way the attempt is audited.
   */
  async finish(where: Where, query: string, cookies: string | undefined): Promise<{ back: string; cookies: string[] }> {
    const cleared = setCookie(FLOW_COOKIE, '', { path: callbackPath(where), maxAge: 0, secure: this.secure(where) });
    try {
      const flow = this.sealer.open(FLOW_COOKIE, cookieValue(cookies, FLOW_COOKIE)) as Flow | undefined;
      if (!flow || this.context.clock.now() >= flow.until) {
        throw new SignInError('no sign-in is in progress in this browser, or it took longer than 10 minutes: start again');
      }
      const config = await this.configuration();
      const callback = new URL(flow.redirect);
      callback.search = query;
      let tokens;
      try {
        tokens = await client.authorizationCodeGrant(
          config,
          callback,
          { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce, idTokenExpected: true },
          { redirect_uri: flow.redirect },
        );
      } catch (err) {
        throw new SignInError(`the provider's answer was refused: ${describe(err)}`);
      }
      const idClaims = tokens.claims()!;
      const claims = { ...idClaims, ...(await this.userinfo(config, tokens.access_token, idClaims.sub)) };
      const user = userOf(claims, this.options.userclaim);
      const now = this.context.clock.now();
      const kept: Kept = { user, sub: idClaims.sub, groups: groupsOf(claims, this.options.groupsclaim), groupsAt: now, until: now + this.options.sessionlifetime, refresh: tokens.refresh_token };
      this.context.audit?.record({ actor: user, address: where.address, action: 'sign-in', outcome: 'ok', detail: `OpenID Connect (${this.options.issuer})` });
      return { back: flow.back, cookies: [cleared, this.sessionCookie(kept, where)] };
    } catch (err) {
      const problem = err instanceof SignInError ? err : new SignInError(`sign-in failed: ${describe(err)}`);
      this.context.logger.warn({ err: problem.message, address: where.address }, 'OpenID Connect sign-in failed');
      this.context.audit?.record({ actor: undefined, address: where.address, action: 'sign-in', outcome: 'failed', detail: problem.message });
      problem.cookies = [cleared];
      throw problem;
    }
  }

  /** the signed-in person of a request's cookies; undefined when none, expired, or their groups could not be read again */
  async session(cookies: string | undefined, where: Where): Promise<Session | undefined> {
    const kept = this.sealer.open(SESSION_COOKIE, cookieValue(cookies, SESSION_COOKIE)) as Kept | undefined;
    const now = this.context.clock.now();
    if (!kept || typeof kept.user !== 'string' || !Array.isArray(kept.groups) || !(now < kept.until)) return undefined;
    if (now - kept.groupsAt < this.options.groupsrefresh) return { user: kept.user, groups: kept.groups };
    const key = `${kept.sub}\n${kept.groupsAt}\n${kept.refresh ?? ''}`;
    let fresh = this.refreshed.get(key);
    if (!fresh) {
      fresh = this.readGroupsAgain(kept);
      this.refreshed.set(key, fresh);
    }
    const renewed = await fresh;
    return renewed && { user: renewed.user, groups: renewed.groups, renewed: this.sessionCookie(renewed, where) };
  }

  /** the Set-Cookie that ends the session in this browser */
  signOut(where: Where): string {
    return setCookie(SESSION_COOKIE, '', { path: cookiePath(where), maxAge: 0, secure: this.secure(where) });
  }

  private async readGroupsAgain(kept: Kept): Promise<Kept | undefined> {
    if (!kept.refresh) return undefined; // the provider gave no refresh token: sign in again
    try {
      const config = await this.configuration();
      const tokens = await client.refreshTokenGrant(config, kept.refresh);
      const claims = { ...(tokens.id_token ? tokens.claims() : {}), ...(await this.userinfo(config, tokens.access_token, kept.sub)) };
      return { ...kept, groups: groupsOf(claims, this.options.groupsclaim), groupsAt: this.context.clock.now(), refresh: tokens.refresh_token ?? kept.refresh };
    } catch (err) {
      this.context.logger.info({ user: kept.user, err: describe(err) }, 'OpenID Connect: the groups could not be read again; the session ends');
      return undefined;
    }
  }

  private async userinfo(config: client.Configuration, accessToken: string, sub: string): Promise<Record<string, unknown>> {
    if (!config.serverMetadata().userinfo_endpoint) return {};
    return (await client.fetchUserInfo(config, accessToken, sub)) as Record<string, unknown>;
  }

  /** Secure over https: the request's scheme, or the configured redirect URL's (a proxy ending TLS in front) */
  private secure(where: Where): boolean {
    return where.protocol === 'https' || this.options.redirecturl?.startsWith('https:') === true;
  }

  private sessionCookie(kept: Kept, where: Where): string {
    const maxAge = Math.max(1, Math.floor((kept.until - this.context.clock.now()) / 1000));
    return setCookie(SESSION_COOKIE, this.sealer.seal(SESSION_COOKIE, kept), { path: cookiePath(where), maxAge, secure: this.secure(where) });
  }
}

/** the name the access rules know the person by; never one that reads as another subject */
function userOf(claims: Record<string, unknown>, claim: string): string {
  const named = claims[claim];
  const user = typeof named === 'string' && named !== '' ? named : String(claims.sub);
  if (user.includes(':') || user === '*' || user === 'anonymous' || user.startsWith(GROUP_PREFIX)) {
    throw new SignInError(`the provider names the user ${JSON.stringify(user)}, which auth.access cannot tell from a group or a keyword: choose another auth.oidc.userclaim`);
  }
  return user;
}

function groupsOf(claims: Record<string, unknown>, claim: string): string[] {
  const value = claims[claim];
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((g): g is string => typeof g === 'string') : [];
}

/** only a page of the web interface on this registry: never another site (no open redirect) */
function safeBack(back: string, prefix: string): string {
  return back.startsWith(`${prefix}/ui/`) && !back.startsWith('//') && !/[\\\s]/.test(back) ? back : `${prefix}/ui/`;
}

const cookiePath = (where: Where) => where.prefix || '/';
const callbackPath = (where: Where) => `${where.prefix}/ui/callback`;

/** the provider's error and description, or the check that failed (openid-client wraps it as the cause) */
function describe(err: unknown): string {
  const e = err as { error?: string; error_description?: string; message?: string; cause?: unknown };
  if (e.error) return e.error_description ? `${e.error}: ${e.error_description}` : e.error;
  const cause = e.cause as { message?: string } | undefined;
  return cause?.message && cause.message !== e.message ? `${e.message}: ${cause.message}` : (e.message ?? String(err));
}

function readSecretFile(path: string): string {
  try {
    return readFileSync(path, 'utf8').replace(/\r?\n$/, '');
  } catch (err) {
    throw new Error(`cannot read auth.oidc.clientsecretfile ${path}: ${(err as Error).message}`);
  }
}

/** a secret for a sign-in that will never run (the configuration check builds auth without the registry's) */
export const throwawaySecret = (): string => randomBytes(32).toString('base64url');
