/**
 * Workload identity federation (auth.federation): a JWT from a trusted external issuer (a GitHub
 * Actions or GitLab CI job's OIDC token, a Kubernetes service-account token) is accepted as the
 * password of a Basic login, under any user name, so a CI job pushes with no stored secret.
 *
 * A password is taken for such a token when it decodes as a JWT with an `iss` claim; it is then
 * never tried against htpasswd. The token must be signed by a key of the issuer whose `iss` it
 * names (federation-keys.ts), with one of its algorithms, for its audience, and be within
 * `exp`/`nbf` (LEEWAY_SECONDS of skew, on the injected clock). The first rule its claims match
 * (federation-rules.ts) gives its Grant: that rule's repositories and actions, not auth.access.
 * The user is `<issuer name>:<sub>`, which no htpasswd user can be (those have no `:`).
 *
 * A refusal says why (unknown issuer, unknown key, bad signature, wrong audience, expired, no
 * rule matches, with the claims the rules look at) to the client and the log, and counts as a
 * failed login (login-guard.ts) of the token's `iss` and `sub` and of the client's address. A
 * token's first acceptance goes to the audit sink (a client sends it again with every request); a
 * refusal is recorded by the edge, as every 401 to a request with credentials.
 */
import { createHash } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Logger } from 'pino';
import type { AuditSink } from '../audit/record.js';
import { RegistryError } from '../registry/errors.js';
import type { Clock } from '../scheduler/clock.js';
import { fileKeys, KeysUnavailable, RemoteKeys, UnknownKey, type KeySource } from './federation-keys.js';
import { matchRules, type FederatedGrant, type FederatedIssuerOptions } from './federation-rules.js';
import type { LoginGuard } from './login-guard.js';
import { LEEWAY_SECONDS } from './token.js';

/** accepted tokens remembered so their acceptance is recorded once */
const SEEN_ENTRIES = 1000;

interface Issuer {
  options: FederatedIssuerOptions;
  keys: KeySource;
}

/** a federated token refused: `message` says why */
class Refusal extends Error {}

export interface FederationContext {
  logger: Logger;
  clock: Clock;
  audit?: AuditSink;
}

export class Federation {
  private readonly issuers = new Map<string, Issuer>();
  /** sha256 of accepted tokens -> their expiry (ms) */
  private readonly seen = new Map<string, number>();

  constructor(
    options: FederatedIssuerOptions[],
    private readonly context: FederationContext,
  ) {
    options.forEach((issuer, i) => {
      const keys = issuer.jwks !== undefined
        ? fileKeys(issuer.jwks, `auth.federation.${i}.jwks`)
        : new RemoteKeys(issuer.jwksuri!, context.clock, (message) => context.logger.error({ issuer: issuer.issuer }, message));
      this.issuers.set(issuer.issuer, { options: issuer, keys });
    });
  }

  /**
   * The Grant of a Basic login whose password is a JWT; undefined when the password is no JWT (the
   * next check of the chain decides). A refused token throws `refuse(reason)`; a limited user or
   * address, the guard's 429; keys that cannot be fetched, 503 UNAVAILABLE.
   */
  async login(creds: { user: string; password: string }, address: string, guard: LoginGuard, refuse: (message: string) => Error): Promise<FederatedGrant | undefined> {
    const claimed = claimedIdentity(creds.password);
    if (claimed === undefined) return undefined;
    const { iss } = claimed;
    let outcome: FederatedGrant | Refusal | undefined;
    // the per-user bucket is the token's (unverified) subject, not the Basic user name that every
    // job may share: one job sending bad tokens does not lock the others out; the address bucket holds
    await guard.verify(`${iss}:${claimed.sub}`, address, async () => {
      outcome = await this.verify(creds.password, iss).catch((err: unknown) => {
        if (err instanceof Refusal) return err;
        throw err;
      });
      return !(outcome instanceof Refusal);
    });
    if (outcome instanceof Refusal || outcome === undefined) {
      const message = `federated token refused: ${outcome?.message}`;
      this.context.logger.warn({ user: creds.user, iss, address }, message);
      throw refuse(message);
    }
    this.recordFirstUse(creds.password, outcome, address);
    return outcome;
  }

  /** the token's grant, or a Refusal saying why not */
  private async verify(token: string, iss: string): Promise<FederatedGrant> {
    const issuer = this.issuers.get(iss);
    if (!issuer) throw new Refusal(`unknown issuer ${JSON.stringify(iss)}: auth.federation trusts no issuer of that name`);
    const { options } = issuer;
    const now = this.context.clock.now();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, (header, jws) => issuer.keys.keyFor(header, jws), {
        issuer: options.issuer,
        audience: options.audience,
        algorithms: options.algorithms,
        clockTolerance: LEEWAY_SECONDS,
        currentDate: new Date(now),
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      throw this.reason(err, token, options, now);
    }
    const grant = matchRules(options, `${options.name}:${payload.sub}`, payload);
    if (typeof grant === 'string') throw new Refusal(grant);
    return grant;
  }

  /** a verification failure as a sentence; KeysUnavailable becomes 503 */
  private reason(err: unknown, token: string, options: FederatedIssuerOptions, now: number): Error {
    if (err instanceof KeysUnavailable) return new RegistryError('UNAVAILABLE', `issuer ${JSON.stringify(options.name)}: ${err.message}; try again later`);
    if (err instanceof UnknownKey) return new Refusal(`${err.message} of issuer ${JSON.stringify(options.name)}`);
    const payload = decodeJwt(token);
    if (err instanceof joseErrors.JWTExpired) {
      return new Refusal(`expired at ${iso(payload.exp)} (the registry's time is ${new Date(now).toISOString()})`);
    }
    if (err instanceof joseErrors.JWTClaimValidationFailed) {
      if (err.claim === 'aud') return new Refusal(`wrong audience ${JSON.stringify(payload.aud ?? null)}: issuer ${JSON.stringify(options.name)} must address its tokens to ${JSON.stringify(options.audience)}`);
      if (err.claim === 'nbf') return new Refusal(`not valid before ${iso(payload.nbf)} (the registry's time is ${new Date(now).toISOString()})`);
      return new Refusal(`claim ${err.claim} is not acceptable: ${err.reason}`);
    }
    if (err instanceof joseErrors.JOSEAlgNotAllowed) {
      return new Refusal(`signing algorithm ${JSON.stringify(decodeProtectedHeader(token).alg)} not allowed for issuer ${JSON.stringify(options.name)} (${options.algorithms.join(', ')})`);
    }
    if (err instanceof joseErrors.JWSSignatureVerificationFailed) return new Refusal(`bad signature: the token was not signed by the key it names (kid ${JSON.stringify(decodeProtectedHeader(token).kid ?? null)})`);
    if (err instanceof joseErrors.JOSEError) return new Refusal(`invalid token: ${err.message}`);
    return err as Error;
  }

  private recordFirstUse(token: string, grant: FederatedGrant, address: string): void {
    const key = createHash('sha256').update(token).digest('base64url');
    if (this.seen.has(key)) return;
    const now = this.context.clock.now();
    for (const [k, expires] of this.seen) if (expires < now || this.seen.size >= SEEN_ENTRIES) this.seen.delete(k);
    this.seen.set(key, ((decodeJwt(token).exp ?? 0) + LEEWAY_SECONDS) * 1000);
    const detail = `federated token accepted by ${grant.rule}: ${grant.repositories.join(', ')}`;
    this.context.logger.info({ user: grant.user, address }, detail);
    this.context.audit?.record({ actor: grant.user, address, action: 'sign-in', outcome: 'ok', detail });
  }
}

/** the `iss` and `sub` a password that is a JWT claims (unverified); undefined for any other password */
function claimedIdentity(password: string): { iss: string; sub: string } | undefined {
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(password)) return undefined;
  try {
    const header = decodeProtectedHeader(password);
    const { iss, sub } = decodeJwt(password);
    return typeof header.alg === 'string' && typeof iss === 'string' ? { iss, sub: typeof sub === 'string' ? sub : '' } : undefined;
  } catch {
    return undefined;
  }
}

function iso(seconds: number | undefined): string {
  return seconds === undefined ? '(unset)' : new Date(seconds * 1000).toISOString();
}
