/**
 * Digests (spec 2.2): `algorithm:hex`. berth addresses content by sha256, sha384 and sha512 (the
 * algorithms of the OCI image spec and of Distribution's go-digest); content is stored under the
 * algorithm its digest names (layout.ts), once per algorithm it was pushed with.
 */
import { createHash, type Hash } from 'node:crypto';
import { RegistryError } from './errors.js';

const DIGEST_SYNTAX = /^[A-Za-z0-9_+.-]+:[A-Fa-f0-9]+$/;

/** hex length of each supported algorithm; the lengths differ, so a hex alone names its algorithm */
const HEX_LENGTH = { sha256: 64, sha384: 96, sha512: 128 } as const;
export type Algorithm = keyof typeof HEX_LENGTH;
export const ALGORITHMS = Object.keys(HEX_LENGTH) as Algorithm[];
const SUPPORTED = 'sha256, sha384 or sha512';

export type Digest = `${Algorithm}:${string}`;

const DIGEST = /^(sha256|sha384|sha512):([a-f0-9]+)$/;

export function isAlgorithm(value: string): value is Algorithm {
  return Object.hasOwn(HEX_LENGTH, value);
}

/** true when `value` is a digest berth can address content by */
export function isDigest(value: string): value is Digest {
  const match = DIGEST.exec(value);
  return match !== null && match[2].length === HEX_LENGTH[match[1] as Algorithm];
}

/** the digest in `value`, or a 400 DIGEST_INVALID that says what is wrong with it */
export function parseDigest(value: string): Digest {
  if (isDigest(value)) return value;
  if (!DIGEST_SYNTAX.test(value)) {
    throw new RegistryError('DIGEST_INVALID', `invalid digest ${JSON.stringify(value)}: expected algorithm:hex`, { detail: { digest: value } });
  }
  const [algorithm, hex] = value.split(':');
  if (!isAlgorithm(algorithm)) {
    throw new RegistryError('DIGEST_INVALID', `unsupported digest algorithm ${JSON.stringify(algorithm)}: this registry supports ${SUPPORTED}`, { detail: { digest: value } });
  }
  throw new RegistryError('DIGEST_INVALID', `invalid ${algorithm} digest: expected ${HEX_LENGTH[algorithm]} lowercase hex characters, got ${hex.length}${/[A-F]/.test(hex) ? ' (with uppercase)' : ''}`, {
    detail: { digest: value },
  });
}

/** the algorithm of an upload's `digest-algorithm` parameter, or 400 DIGEST_INVALID naming the supported ones */
export function parseAlgorithm(value: string): Algorithm {
  if (isAlgorithm(value)) return value;
  throw new RegistryError('DIGEST_INVALID', `unsupported digest algorithm ${JSON.stringify(value)}: this registry supports ${SUPPORTED}`, { detail: { algorithm: value } });
}

export function digestAlgorithm(digest: Digest): Algorithm {
  return digest.slice(0, digest.indexOf(':')) as Algorithm;
}

export function digestHex(digest: Digest): string {
  return digest.slice(digest.indexOf(':') + 1);
}

/** the digest whose hex is `hex` (its length names the algorithm); undefined for a name that is no digest hex */
export function digestOfHex(hex: string): Digest | undefined {
  const algorithm = ALGORITHMS.find((a) => HEX_LENGTH[a] === hex.length);
  const digest = algorithm && `${algorithm}:${hex}`;
  return digest && isDigest(digest) ? digest : undefined;
}

/** `algorithm:hex` when that is a digest of `algorithm`; undefined for a name that is no such hex */
export function digestOf(algorithm: Algorithm, hex: string): Digest | undefined {
  const digest = `${algorithm}:${hex}`;
  return isDigest(digest) ? digest : undefined;
}

export function sha256(data: Buffer | string): Digest {
  return digestBytes('sha256', data);
}

export function digestBytes(algorithm: Algorithm, data: Buffer | string): Digest {
  return `${algorithm}:${createHash(algorithm).update(data).digest('hex')}`;
}

export function newHasher(algorithm: Algorithm = 'sha256'): Hash {
  return createHash(algorithm);
}

export function hasherDigest(algorithm: Algorithm, hash: Hash): Digest {
  return `${algorithm}:${hash.copy().digest('hex')}`;
}
