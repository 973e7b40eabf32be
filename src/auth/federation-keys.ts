/**
 * The public keys of a federated issuer: a JWKS file read at start-up, or a JWKS URL fetched on
 * first use and cached. The cached set is fetched again when it is older than MAX_AGE_MS, and at
 * once when a token names a key (`kid`) it does not hold, so a key the issuer rotated in is picked
 * up by the first token signed with it. That refetch happens at most once per REFETCH_MS (however
 * many tokens name unknown keys, including forged ones), and concurrent requests share one fetch.
 * A set that cannot be fetched again is kept until it can.
 */
import { readFileSync } from 'node:fs';
import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, type JWSHeaderParameters, type FlattenedJWSInput } from 'jose';
import type { Clock } from '../scheduler/clock.js';

const MAX_AGE_MS = 10 * 60_000;
const REFETCH_MS = 30_000;
const FETCH_TIMEOUT_MS = 10_000;
const MAX_JWKS_BYTES = 1024 * 1024;

type KeyResolver = (header: JWSHeaderParameters, token: FlattenedJWSInput) => Promise<CryptoKey>;

/** the token names a key the issuer's JWKS does not hold */
export class UnknownKey extends Error {}

/** the issuer's keys cannot be had (not yet fetched, fetch failing): the credential may be fine */
export class KeysUnavailable extends Error {}

export interface KeySource {
  /** the key that must have signed a token with this header; throws UnknownKey or KeysUnavailable */
  keyFor(header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey>;
}

/** the JWKS file `path`, read now; throws naming the key that configured it */
export function fileKeys(path: string, where: string): KeySource {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${where} ${path}: ${(err as Error).message}`);
  }
  const set = parseJwks(text, `${where} ${path}`);
  return { keyFor: (header, token) => resolve(set, header, token, `in the JWKS file ${path}`) };
}

export class RemoteKeys implements KeySource {
  private set: KeyResolver | undefined;
  private attemptedAt = -Infinity;
  private fetchedAt = -Infinity;
  private lastError: string | undefined;
  private inflight: Promise<void> | undefined;

  constructor(
    private readonly url: string,
    private readonly clock: Clock,
    private readonly onError: (message: string) => void,
  ) {}

  async keyFor(header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey> {
    if (this.set === undefined || this.clock.now() - this.fetchedAt >= MAX_AGE_MS) await this.refetch();
    if (this.set === undefined) throw new KeysUnavailable(`the keys cannot be fetched from ${this.url}: ${this.lastError}`);
    try {
      return await resolve(this.set, header, token, `at ${this.url}`);
    } catch (err) {
      if (!(err instanceof UnknownKey) || this.clock.now() - this.attemptedAt < REFETCH_MS) throw err;
    }
    await this.refetch();
    return resolve(this.set, header, token, `at ${this.url} (fetched again just now)`);
  }

  /** one fetch at a time, at most once per REFETCH_MS */
  private refetch(): Promise<void> {
    if (this.inflight) return this.inflight;
    if (this.clock.now() - this.attemptedAt < REFETCH_MS) return Promise.resolve();
    this.attemptedAt = this.clock.now();
    this.inflight = this.fetchSet().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async fetchSet(): Promise<void> {
    try {
      // no redirects: the keys come from the configured URL (https) and nowhere else
      const res = await fetch(this.url, { headers: { accept: 'application/json' }, redirect: 'manual', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
      if (res.status >= 300 && res.status < 400) throw new Error(`HTTP ${res.status}, a redirect to ${res.headers.get('location')}: configure that URL as jwksuri`);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const text = await res.text();
      if (text.length > MAX_JWKS_BYTES) throw new Error(`the answer is larger than ${MAX_JWKS_BYTES} bytes`);
      this.set = parseJwks(text, this.url);
      this.fetchedAt = this.clock.now();
      this.lastError = undefined;
    } catch (err) {
      const cause = (err as Error).cause;
      this.lastError = cause instanceof Error ? `${(err as Error).message}: ${cause.message}` : (err as Error).message;
      this.onError(`the keys of ${this.url} cannot be fetched: ${this.lastError}${this.set ? '; the keys fetched before stay in use' : ''}`);
    }
  }
}

function parseJwks(text: string, where: string): KeyResolver {
  let set: JSONWebKeySet;
  try {
    set = JSON.parse(text) as JSONWebKeySet;
  } catch (err) {
    throw new Error(`${where} is not JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(set?.keys)) throw new Error(`${where} is no JWKS: it has no "keys" list`);
  for (const jwk of set.keys) {
    if (jwk.kty === 'oct' || 'd' in jwk) throw new Error(`${where}: key ${jwk.kid ?? '(no kid)'} is not a public RSA, EC or OKP key`);
  }
  return createLocalJWKSet(set);
}

async function resolve(set: KeyResolver, header: JWSHeaderParameters, token: FlattenedJWSInput, where: string): Promise<CryptoKey> {
  try {
    return await set(header, token);
  } catch (err) {
    if (err instanceof joseErrors.JWKSNoMatchingKey) {
      throw new UnknownKey(`unknown key: no key ${header.kid === undefined ? `for ${header.alg}` : `with kid ${JSON.stringify(header.kid)}`} ${where}`);
    }
    if (err instanceof joseErrors.JWKSMultipleMatchingKeys) throw new UnknownKey(`unknown key: the token names no kid and several keys ${where} would fit`);
    throw err;
  }
}
