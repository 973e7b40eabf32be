/**
 * Bearer tokens: JWTs as Distribution's token authentication reads them. The signature must come
 * from a trusted key: an `x5c` certificate chain that ends in a certificate of `rootcertbundle`,
 * a `kid` naming a key of the bundle (libtrust key ID or RFC 7638 thumbprint) or of the JWKS
 * file, or the built-in issuer's own key. RS256, ES256 and EdDSA only: `alg: none` and HMAC are
 * refused. `iss` must be the configured issuer, `aud` the service; `exp` and `nbf` are checked
 * with a leeway of LEEWAY_SECONDS. The `access` claim lists what the token grants.
 */
import { createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { calculateJwkThumbprint, errors as joseErrors, exportJWK, jwtVerify, type JWK, type JWTHeaderParameters } from 'jose';
import { libtrustKeyID } from '../crypto/libtrust-keyid.js';
import type { AccessRequest, Grant, Scope } from './access.js';

export const TOKEN_ALGORITHMS = ['RS256', 'ES256', 'EdDSA', 'Ed25519'];
export const LEEWAY_SECONDS = 60;

export class TokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenError';
  }
}

export interface TokenVerifierOptions {
  issuer: string;
  service: string;
  /** PEM text of the trusted certificates */
  rootCertBundle?: string;
  /** JWKS JSON text */
  jwks?: string;
  /** further trusted public keys by kid (the built-in issuer's) */
  keys?: Map<string, KeyObject>;
}

/** the claim the built-in issuer marks a token issued for an API token with (auth/api-tokens.ts) */
export const API_TOKEN_CLAIM = 'berth_api_token';

export class TokenGrant implements Grant {
  constructor(
    readonly user: string | undefined,
    readonly access: Scope[],
    /** issued for an API token (its name is `user`): valid only while that token is */
    readonly apiToken = false,
  ) {}

  allows(request: AccessRequest): boolean {
    return this.access.some(
      (s) => s.type === request.type && s.name === request.name && (s.actions.includes(request.action) || s.actions.includes('*')),
    );
  }
}

export class TokenVerifier {
  private readonly roots: X509Certificate[] = [];
  private readonly keys = new Map<string, KeyObject>();
  private initialized: Promise<this> | undefined;

  constructor(private readonly options: TokenVerifierOptions) {
    if (options.rootCertBundle !== undefined) {
      const pems = options.rootCertBundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
      if (pems.length === 0) throw new TokenError('the root certificate bundle holds no PEM certificate');
      for (const pem of pems) {
        const cert = new X509Certificate(pem);
        this.roots.push(cert);
        this.keys.set(libtrustKeyID(cert.publicKey), cert.publicKey);
      }
    }
    if (options.jwks !== undefined) {
      let set: { keys?: JWK[] };
      try {
        set = JSON.parse(options.jwks) as { keys?: JWK[] };
      } catch (err) {
        throw new TokenError(`the JWKS file is not JSON: ${(err as Error).message}`);
      }
      if (!Array.isArray(set.keys) || set.keys.length === 0) throw new TokenError('the JWKS file has no "keys"');
      for (const jwk of set.keys) {
        if (!jwk.kid) throw new TokenError('every key of the JWKS file needs a "kid"');
        if (jwk.kty === 'oct' || 'd' in jwk) throw new TokenError(`JWKS key ${jwk.kid}: only public RSA, EC or OKP keys are trusted`);
        this.keys.set(jwk.kid, createPublicKey({ key: jwk as never, format: 'jwk' }));
      }
    }
    for (const [kid, key] of options.keys ?? []) this.keys.set(kid, key);
  }

  /** also index every key by its RFC 7638 thumbprint (done once, before the first verification) */
  private async init(): Promise<this> {
    for (const key of [...this.keys.values()]) {
      const thumbprint = await calculateJwkThumbprint(await exportJWK(key));
      if (!this.keys.has(thumbprint)) this.keys.set(thumbprint, key);
    }
    return this;
  }

  async verify(token: string): Promise<TokenGrant> {
    await (this.initialized ??= this.init());
    if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token)) throw new TokenError('malformed token: expected a compact JWS (three base64url parts)');
    try {
      const { payload } = await jwtVerify(token, (header) => this.keyFor(header), {
        issuer: this.options.issuer,
        audience: this.options.service,
        algorithms: TOKEN_ALGORITHMS,
        clockTolerance: LEEWAY_SECONDS,
        requiredClaims: ['exp'],
      });
      return new TokenGrant(typeof payload.sub === 'string' && payload.sub !== '' ? payload.sub : undefined, parseAccessClaim(payload.access), payload[API_TOKEN_CLAIM] === true);
    } catch (err) {
      if (err instanceof TokenError) throw err;
      if (err instanceof joseErrors.JWTExpired) throw new TokenError('token expired');
      if (err instanceof joseErrors.JWTClaimValidationFailed) throw new TokenError(`token claim ${err.claim} is not acceptable (${err.reason})`);
      if (err instanceof joseErrors.JOSEAlgNotAllowed) throw new TokenError('token signing algorithm not allowed: RS256, ES256 or EdDSA only');
      if (err instanceof joseErrors.JWSSignatureVerificationFailed) throw new TokenError('token signature is not valid');
      if (err instanceof joseErrors.JOSEError) throw new TokenError(`invalid token: ${err.message}`);
      throw new TokenError(`invalid token: ${(err as Error).message}`);
    }
  }

  private keyFor(header: JWTHeaderParameters): KeyObject {
    if (header.x5c !== undefined) return this.chainKey(header.x5c);
    if (header.kid !== undefined) {
      const key = this.keys.get(header.kid);
      if (!key) throw new TokenError(`token signed by an untrusted key (kid ${JSON.stringify(header.kid)})`);
      return key;
    }
    throw new TokenError('token names no signing key: expected an x5c chain or a kid');
  }

  /** the leaf's key, when every certificate is signed by the next and the last by (or is) a root */
  private chainKey(x5c: string[]): KeyObject {
    if (!Array.isArray(x5c) || x5c.length === 0) throw new TokenError('empty x5c chain');
    let chain: X509Certificate[];
    try {
      chain = x5c.map((b64) => new X509Certificate(Buffer.from(b64, 'base64')));
    } catch {
      throw new TokenError('x5c holds a certificate that cannot be parsed');
    }
    const now = Date.now();
    for (const cert of chain) {
      if (Date.parse(cert.validFrom) > now + LEEWAY_SECONDS * 1000 || Date.parse(cert.validTo) < now - LEEWAY_SECONDS * 1000) {
        throw new TokenError(`x5c certificate ${cert.subject.replace(/\n/g, ', ')} is outside its validity period`);
      }
    }
    for (let i = 0; i + 1 < chain.length; i++) {
      if (!chain[i].checkIssued(chain[i + 1]) || !chain[i].verify(chain[i + 1].publicKey)) {
        throw new TokenError('x5c chain is broken: a certificate is not signed by the next one');
      }
    }
    const last = chain[chain.length - 1];
    const trusted = this.roots.some((root) => root.raw.equals(last.raw) || (last.checkIssued(root) && last.verify(root.publicKey)));
    if (!trusted) throw new TokenError('token signed by an untrusted key: the x5c chain does not end in a certificate of the root bundle');
    return chain[0].publicKey;
  }
}

/** the `access` claim: [{type, name, actions}]; anything else grants nothing */
export function parseAccessClaim(claim: unknown): Scope[] {
  if (!Array.isArray(claim)) return [];
  return claim.flatMap((entry) => {
    if (entry === null || typeof entry !== 'object') return [];
    const { type, name, actions } = entry as Record<string, unknown>;
    if (typeof type !== 'string' || typeof name !== 'string' || !Array.isArray(actions)) return [];
    return [{ type, name, actions: actions.filter((a): a is string => typeof a === 'string') }];
  });
}

export function readTrustFiles(paths: { rootcertbundle?: string; jwks?: string }): { rootCertBundle?: string; jwks?: string } {
  const read = (path: string | undefined, what: string) => {
    if (path === undefined) return undefined;
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      throw new TokenError(`cannot read ${what} ${path}: ${(err as Error).message}`);
    }
  };
  return { rootCertBundle: read(paths.rootcertbundle, 'auth.token.rootcertbundle'), jwks: read(paths.jwks, 'auth.token.jwks') };
}
