/** Digests (spec 2.2): `algorithm:hex`. berth computes and stores sha256 only. */
import { createHash, type Hash } from 'node:crypto';
import { RegistryError } from './errors.js';

const DIGEST_SYNTAX = /^[A-Za-z0-9_+.-]+:[A-Fa-f0-9]+$/;
const SHA256 = /^sha256:[a-f0-9]{64}$/;

export type Digest = `sha256:${string}`;

/** true when `value` is a sha256 digest berth can address content by */
export function isDigest(value: string): value is Digest {
  return SHA256.test(value);
}

/** the digest in `value`, or a 400 DIGEST_INVALID that says what is wrong with it */
export function parseDigest(value: string): Digest {
  if (isDigest(value)) return value;
  if (!DIGEST_SYNTAX.test(value)) {
    throw new RegistryError('DIGEST_INVALID', `invalid digest ${JSON.stringify(value)}: expected algorithm:hex`, { detail: { digest: value } });
  }
  const [algorithm, hex] = value.split(':');
  if (algorithm !== 'sha256') {
    throw new RegistryError('DIGEST_INVALID', `unsupported digest algorithm ${JSON.stringify(algorithm)}: this registry supports sha256`, { detail: { digest: value } });
  }
  throw new RegistryError('DIGEST_INVALID', `invalid sha256 digest: expected 64 lowercase hex characters, got ${hex.length}${/[A-F]/.test(hex) ? ' (with uppercase)' : ''}`, { detail: { digest: value } });
}

export function digestHex(digest: Digest): string {
  return digest.slice('sha256:'.length);
}

export function sha256(data: Buffer | string): Digest {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

export function newHasher(): Hash {
  return createHash('sha256');
}

export function hasherDigest(hash: Hash): Digest {
  return `sha256:${hash.copy().digest('hex')}`;
}

/** algorithms an upload's `digest` parameter may use; sha256 is hashed while writing, the others re-read at commit */
const VERIFIABLE = { sha256: 64, sha384: 96, sha512: 128 } as const;
export type VerifiableAlgorithm = keyof typeof VERIFIABLE;

/** a digest berth can check content against (sha256, sha384, sha512), or 400 DIGEST_INVALID */
export function parseVerifiableDigest(value: string): { algorithm: VerifiableAlgorithm; hex: string; digest: string } {
  const match = /^([a-z0-9]+):([a-f0-9]+)$/.exec(value);
  const algorithm = match?.[1] as VerifiableAlgorithm | undefined;
  if (!match || !algorithm || !(algorithm in VERIFIABLE) || match[2].length !== VERIFIABLE[algorithm]) {
    if (!DIGEST_SYNTAX.test(value)) parseDigest(value); // throws with the syntax message
    throw new RegistryError('DIGEST_INVALID', `invalid or unsupported digest ${JSON.stringify(value)}: expected sha256, sha384 or sha512 with lowercase hex of the right length`, { detail: { digest: value } });
  }
  return { algorithm, hex: match[2], digest: value };
}
