/**
 * libtrust key IDs, as found in the `kid` of first-generation manifest signatures: the first
 * 240 bits of sha256 over the key's DER SubjectPublicKeyInfo, base32 without padding, in 12
 * groups of 4 joined by ':' (libtrust util.go keyIDFromCryptoKey).
 */
import { createHash, type KeyObject } from 'node:crypto';

const BASE32_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32_ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32_ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

export function libtrustKeyID(publicKey: KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  const fingerprint = createHash('sha256').update(der).digest().subarray(0, 30);
  return base32(fingerprint).match(/.{1,4}/g)!.join(':');
}
