/**
 * The public keys a signatures policy trusts (`signatures.cosign.keys`): PEM files read once at
 * start-up, each named after its file without the extension (`/etc/berth/release.pub` is
 * `release`), which is the name the web interface shows ("signed by release").
 *
 * The check is Node's crypto (OpenSSL) with cosign's algorithms: ECDSA (cosign's default key,
 * P-256) over SHA-256 with an ASN.1 signature, RSA PKCS#1 v1.5 over SHA-256, and Ed25519 over the
 * payload itself, as sigstore's LoadVerifier picks them for a key.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename, extname } from 'node:path';
import type { MatchedPolicy, PolicySet } from '../match.js';

export interface TrustedKey {
  /** the file name without its extension */
  readonly name: string;
  readonly key: KeyObject;
}

/** the keys of one policy, with an id that tells key sets apart in caches */
export interface KeySet {
  readonly id: string;
  readonly keys: readonly TrustedKey[];
}

/** every signatures policy's keys, read now (start-up): throws naming the policy and the file */
export function readKeySets(policies: PolicySet): Map<MatchedPolicy, KeySet> {
  const sets = new Map<MatchedPolicy, KeySet>();
  for (const policy of policies.policies) {
    const paths = policy.options.signatures?.cosign.keys;
    if (!paths) continue;
    try {
      sets.set(policy, { id: [...paths].sort().join('\n'), keys: readTrustedKeys(paths) });
    } catch (err) {
      throw new Error(`${policy.source}: signatures.cosign.keys: ${(err as Error).message}`);
    }
  }
  return sets;
}

/** reads the PEM files; throws naming the file that is missing, unreadable or not a supported public key */
export function readTrustedKeys(paths: readonly string[]): TrustedKey[] {
  return paths.map((path) => {
    let pem: Buffer;
    try {
      pem = readFileSync(path);
    } catch (err) {
      throw new Error(`the cosign key ${path} cannot be read: ${(err as Error).message}`);
    }
    let key: KeyObject;
    try {
      key = createPublicKey(pem);
    } catch (err) {
      throw new Error(`${path} is not a PEM public key (cosign.pub, as \`cosign generate-key-pair\` writes it): ${(err as Error).message}`);
    }
    if (!['ec', 'rsa', 'ed25519'].includes(key.asymmetricKeyType ?? '')) {
      throw new Error(`${path} is a ${key.asymmetricKeyType} key; cosign keys are ECDSA, RSA or Ed25519`);
    }
    return { name: basename(path, extname(path)), key };
  });
}

/** does `signature` (raw bytes) by `key` sign `payload`? false, never a throw, for malformed input */
export function signs(key: TrustedKey, payload: Buffer, signature: Buffer): boolean {
  try {
    return verify(key.key.asymmetricKeyType === 'ed25519' ? null : 'sha256', payload, key.key, signature);
  } catch {
    return false;
  }
}
