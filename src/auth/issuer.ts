/**
 * The built-in token issuer (`auth.token.issuer.enabled`): Distribution's token protocol served by
 * berth itself, so one process gives docker, podman and skopeo real token authentication.
 *
 * - `GET <path>?service=&scope=&scope=...` with optional Basic credentials (an API token's, else
 *   checked against auth.htpasswd): a token granting the requested scopes as far as auth.access allows them.
 *   No credentials: a token with what `anonymous` may do. Wrong credentials: 401.
 * - `POST <path>` (OAuth2, form encoded): `grant_type=password` (username, password) or
 *   `grant_type=refresh_token` (refresh_token); `access_type=offline` also returns a refresh token.
 *   A wrong password or refresh token: InvalidGrant (400 `invalid_grant`, RFC 6749 5.2), with no
 *   Basic challenge, which would open a browser's login dialog over the web interface's form.
 *
 * Tokens are signed with the configured private key (RSA: RS256, EC P-256: ES256, Ed25519: EdDSA),
 * with `kid` the key's libtrust key ID, so a Distribution given a certificate of the key trusts them
 * too. Refresh tokens carry another audience and never pass as access tokens.
 *
 * A federated JWT (auth.federation) as the password gets a token for what its rule grants, and no
 * refresh token (those are bound to an htpasswd entry).
 */
import { createPrivateKey, createPublicKey, randomUUID, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { jwtVerify, SignJWT } from 'jose';
import { RegistryError } from '../registry/errors.js';
import { libtrustKeyID } from '../crypto/libtrust-keyid.js';
import { CATALOG_ACCESS, parseScope, REPOSITORY_ACTIONS, type RepositoryAction, type Scope } from './access.js';
import type { Federation } from './federation.js';
import type { Htpasswd } from './htpasswd.js';
import type { LoginGuard } from './login-guard.js';
import type { ApiTokenGrant, TokenLogin } from './api-tokens.js';
import type { AccessPolicy } from './policy.js';
import { API_TOKEN_CLAIM, LEEWAY_SECONDS } from './token.js';
import { parseBasic } from './basic.js';
import { InvalidGrant, TokenRequestError } from './token-request.js';

export interface IssuerOptions {
  issuer: string;
  service: string;
  /** PEM private key text */
  signingKey: string;
  expirationMs: number;
  refreshExpirationMs: number;
  htpasswd: Htpasswd;
  /** failed logins limited per user and address before the password is checked */
  guard: LoginGuard;
  /** JWTs of external issuers accepted as passwords */
  federation?: Federation;
  policy: AccessPolicy;
  /** API tokens (auth/api-tokens.ts), tried before htpasswd; undefined without the metadata index */
  tokens?: (user: string, password: string, address: string) => Promise<TokenLogin | undefined>;
  /** Basic challenge realm for wrong credentials */
  realm: string;
}

/** who logged in: an htpasswd user, an API token (its name) with its own grant, or a federated JWT's subject with its rule's rights */
interface Login {
  user: string;
  token?: ApiTokenGrant;
  federated?: CredentialRights;
}

/** a refresh token is bound to an htpasswd entry: an API token's client keeps the secret (which revocation stops), a CI job its JWT */
function refreshable(login: Login | undefined): boolean {
  return login !== undefined && !login.token && !login.federated;
}

export interface TokenResponse {
  token: string;
  access_token: string;
  expires_in: number;
  issued_at: string;
  refresh_token?: string;
}

export class TokenIssuer {
  readonly kid: string;
  readonly publicKey: KeyObject;
  private readonly privateKey: KeyObject;
  private readonly alg: string;

  constructor(private readonly options: IssuerOptions) {
    try {
      this.privateKey = createPrivateKey(options.signingKey);
    } catch (err) {
      throw new Error(`auth.token.issuer.signingkey is not a PEM private key: ${(err as Error).message}`);
    }
    this.publicKey = createPublicKey(this.privateKey);
    this.alg = algorithmFor(this.privateKey);
    this.kid = libtrustKeyID(this.publicKey);
  }

  /** GET: Basic credentials (or none) and the requested scopes */
  async fromBasic(params: URLSearchParams, authorization: string | undefined, address: string): Promise<TokenResponse> {
    this.checkService(params.get('service'));
    let login: Login | undefined;
    if (authorization !== undefined) {
      const creds = parseBasic(authorization);
      if (!creds) throw this.badCredentials();
      login = await this.checkPassword(creds.user, creds.password, address, (message) => this.badCredentials(message));
    }
    const offline = params.get('offline_token') === 'true';
    const scopes = params.getAll('scope').flatMap((s) => s.split(' ')).filter((s) => s !== '');
    return this.issue(login, scopes, offline && refreshable(login));
  }

  /** POST: the OAuth2 password and refresh_token grants */
  async fromForm(form: URLSearchParams, address: string): Promise<TokenResponse> {
    this.checkService(form.get('service'));
    const scopes = form.getAll('scope').flatMap((s) => s.split(' ')).filter((s) => s !== '');
    const grant = form.get('grant_type');
    const offline = form.get('access_type') === 'offline';
    if (grant === 'password') {
      const user = form.get('username') ?? '';
      const password = form.get('password') ?? '';
      const login = await this.checkPassword(user, password, address, (message) => new InvalidGrant(message));
      return this.issue(login, scopes, offline && refreshable(login));
    }
    if (grant === 'refresh_token') {
      const user = await this.verifyRefresh(form.get('refresh_token') ?? '');
      return this.issue({ user }, scopes, false, form.get('refresh_token') ?? undefined);
    }
    throw new TokenRequestError('UNSUPPORTED', `grant_type must be "password" or "refresh_token", got ${JSON.stringify(grant)}`);
  }

  private checkService(service: string | null): void {
    if (service !== null && service !== this.options.service) {
      throw new TokenRequestError('DENIED', `this issuer serves ${JSON.stringify(this.options.service)}, not ${JSON.stringify(service)}`);
    }
  }

  /** GET with wrong Basic credentials: 401 and a Basic challenge, as Distribution's token spec says */
  private badCredentials(message = 'invalid username or password'): RegistryError {
    return new RegistryError('UNAUTHORIZED', message, {
      headers: { 'www-authenticate': `Basic realm="${this.options.realm}"` },
    });
  }

  /** the requested scopes cut down to what the user may do by auth.access, or by the credential's own rights (an API token's, a federated JWT's rule) */
  grantedScopes(login: Login | undefined, requested: string[]): Scope[] {
    const user = login?.user;
    const own = login?.token ?? login?.federated;
    const granted: Scope[] = [];
    // an API token never lists the whole catalog; a federated rule does when it may pull everything
    const pullsEverything = login?.token ? false : login?.federated ? login.federated.pullsEverything() : user !== undefined && this.options.policy.pullsEverything(user);
    for (const text of requested) {
      const scope = parseScope(text);
      if (!scope) continue;
      if (scope.type === 'repository') {
        const allowed = own ? own.actions(scope.name) : this.options.policy.actions(user, scope.name);
        const wanted = scope.actions.includes('*') ? [...REPOSITORY_ACTIONS] : scope.actions;
        const actions = wanted.filter((a) => allowed.has(a as never));
        if (actions.length > 0) granted.push({ type: 'repository', name: scope.name, actions: [...new Set(actions)] });
      } else if (scope.type === CATALOG_ACCESS.type && scope.name === CATALOG_ACCESS.name && pullsEverything) {
        granted.push({ type: 'registry', name: 'catalog', actions: ['*'] });
      }
    }
    return granted;
  }

  private async issue(login: Login | undefined, requested: string[], withRefresh: boolean, refreshToken?: string): Promise<TokenResponse> {
    const user = login?.user;
    const now = Math.floor(Date.now() / 1000);
    const expiresIn = Math.max(1, Math.floor(this.options.expirationMs / 1000));
    const token = await new SignJWT({ access: this.grantedScopes(login, requested), ...(login?.token ? { [API_TOKEN_CLAIM]: true } : {}) })
      .setProtectedHeader({ alg: this.alg, kid: this.kid, typ: 'JWT' })
      .setIssuer(this.options.issuer)
      .setAudience(this.options.service)
      .setSubject(user ?? '')
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + expiresIn)
      .setJti(randomUUID())
      .sign(this.privateKey);
    const out: TokenResponse = { token, access_token: token, expires_in: expiresIn, issued_at: new Date(now * 1000).toISOString() };
    if (withRefresh && user !== undefined) out.refresh_token = await this.refreshToken(user, now);
    else if (refreshToken !== undefined) out.refresh_token = refreshToken;
    return out;
  }

  /** an API token's credentials first, then a federated JWT, then htpasswd; `refuse` makes the error for wrong ones */
  private async checkPassword(user: string, password: string, address: string, refuse: (message: string) => Error): Promise<Login> {
    const token = await this.options.tokens?.(user, password, address);
    if (token && 'refused' in token) throw refuse(token.refused);
    if (token) return { user, token: token.grant };
    const federated = await this.options.federation?.login({ user, password }, address, this.options.guard, refuse);
    if (federated) return { user: federated.user, federated };
    if (!(await this.options.guard.verify(user, address, () => this.options.htpasswd.verify(user, password)))) throw refuse('invalid username or password');
    return { user };
  }

  private refreshAudience(): string {
    return `${this.options.service}#refresh`;
  }

  /** bound to the user's current htpasswd entry (`cred`): a new password or a removed user revokes it */
  private refreshToken(user: string, now: number): Promise<string> {
    return new SignJWT({ cred: this.options.htpasswd.credential(user) })
      .setProtectedHeader({ alg: this.alg, kid: this.kid, typ: 'JWT' })
      .setIssuer(this.options.issuer)
      .setAudience(this.refreshAudience())
      .setSubject(user)
      .setIssuedAt(now)
      .setExpirationTime(now + Math.floor(this.options.refreshExpirationMs / 1000))
      .setJti(randomUUID())
      .sign(this.privateKey);
  }

  /** the user of a refresh token this issuer made; the user's htpasswd entry must be the one it was issued for */
  private async verifyRefresh(token: string): Promise<string> {
    let sub: unknown;
    let cred: unknown;
    try {
      ({ payload: { sub, cred } } = await jwtVerify(token, this.publicKey, {
        issuer: this.options.issuer,
        audience: this.refreshAudience(),
        algorithms: [this.alg],
        clockTolerance: LEEWAY_SECONDS,
      }));
    } catch (err) {
      throw new InvalidGrant(`invalid refresh token: ${(err as Error).message}`);
    }
    if (typeof sub !== 'string' || !this.options.htpasswd.has(sub)) throw new InvalidGrant('the refresh token names no current user');
    if (typeof cred !== 'string' || cred !== this.options.htpasswd.credential(sub)) {
      throw new InvalidGrant("the refresh token was issued for the user's previous password: log in again");
    }
    return sub;
  }
}

/** what a credential with rights of its own (a federated JWT's rule) may do, in place of auth.access */
export interface CredentialRights {
  actions(name: string): Set<RepositoryAction>;
  pullsEverything(): boolean;
}

function algorithmFor(key: KeyObject): string {
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return 'RS256';
    case 'ec':
      if (key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new Error('auth.token.issuer.signingkey: EC keys must be on P-256 (ES256)');
      return 'ES256';
    case 'ed25519':
      return 'EdDSA';
    default:
      throw new Error(`auth.token.issuer.signingkey: ${key.asymmetricKeyType} keys are not supported; use RSA, EC P-256 or Ed25519`);
  }
}

export function readSigningKey(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read auth.token.issuer.signingkey ${path}: ${(err as Error).message}`);
  }
}
