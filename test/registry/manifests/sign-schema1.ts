/**
 * Test helper: signs first-generation manifests the way docker and libtrust did, with keys
 * generated at test time. The payload is the manifest as `JSON.stringify(obj, null, 3)` (Go's
 * MarshalIndent with three spaces); the signed body is that payload with a `signatures` array
 * inserted before its final `}`, and each protected header records formatLength/formatTail so
 * the payload can be cut back out.
 */
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { libtrustKeyID } from '../../../src/crypto/libtrust-keyid.js';

export type KeyKind = 'P-256' | 'P-384' | 'P-521' | 'RSA';

export interface TestKey {
  kind: KeyKind;
  /** the JWS algorithm libtrust uses for this key */
  alg: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

const EC_ALGORITHMS: Record<string, string> = { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' };
const HASH_OF: Record<string, string> = { ES256: 'sha256', ES384: 'sha384', ES512: 'sha512', RS256: 'sha256', RS384: 'sha384', RS512: 'sha512' };

export function generateKey(kind: KeyKind): TestKey {
  if (kind === 'RSA') {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    return { kind, alg: 'RS256', privateKey, publicKey };
  }
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: kind });
  return { kind, alg: EC_ALGORITHMS[kind], privateKey, publicKey };
}

export interface Signer {
  key: TestKey;
  /** put the libtrust kid in the JWK (true), a given kid (string), or none (false, the default) */
  kid?: boolean | string;
  /** the alg to claim in the header; the signature is always made with the key's own alg */
  claimAlg?: string;
  /** sign a different payload than the one in the body */
  signPayload?: Buffer;
}

export interface SignedManifest {
  body: Buffer;
  payload: Buffer;
}

function sortedKeys(obj: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(obj).sort(([a], [b]) => (a < b ? -1 : 1)));
}

function signatureBlock(signer: Signer, payload: Buffer, formatLength: number, formatTail: Buffer) {
  const { key } = signer;
  const jwk: Record<string, unknown> = key.publicKey.export({ format: 'jwk' });
  if (signer.kid === true) jwk.kid = libtrustKeyID(key.publicKey);
  else if (typeof signer.kid === 'string') jwk.kid = signer.kid;
  const protectedHeader = Buffer.from(
    JSON.stringify({ formatLength, formatTail: formatTail.toString('base64url'), time: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }),
  ).toString('base64url');
  const signingInput = Buffer.from(`${protectedHeader}.${(signer.signPayload ?? payload).toString('base64url')}`);
  const signature = sign(HASH_OF[key.alg], signingInput, key.kind === 'RSA' ? key.privateKey : { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
  return { header: { jwk: sortedKeys(jwk), alg: signer.claimAlg ?? key.alg }, signature: signature.toString('base64url'), protected: protectedHeader };
}

/** a libtrust-style pretty JWS of `manifest`, one signature per signer */
export function signSchema1(manifest: object, signers: Signer[]): SignedManifest {
  const payload = Buffer.from(JSON.stringify(manifest, null, 3));
  // everything up to the last character before the closing brace is kept; the tail is "\n}"
  const closing = payload.lastIndexOf('}');
  let formatLength = closing;
  while (formatLength > 0 && ' \t\r\n'.includes(String.fromCharCode(payload[formatLength - 1]))) formatLength--;
  const formatTail = payload.subarray(formatLength);
  const signatures = signers.map((signer) => signatureBlock(signer, payload, formatLength, formatTail));
  const indent = '   ';
  const signaturesJSON = JSON.stringify(signatures, null, 3).replace(/\n/g, `\n${indent}`);
  const body = Buffer.concat([payload.subarray(0, formatLength), Buffer.from(`,\n${indent}"signatures": ${signaturesJSON}\n}`)]);
  return { body, payload };
}

/** `body` with its first signature repeated `n` times (the signed payload, cut before them, is unchanged) */
export function repeatSignature(body: Buffer, n: number): Buffer<ArrayBuffer> {
  const doc = JSON.parse(body.toString());
  const { formatLength } = JSON.parse(Buffer.from(doc.signatures[0].protected, 'base64url').toString());
  return Buffer.concat([body.subarray(0, formatLength), Buffer.from(`,"signatures":${JSON.stringify(Array(n).fill(doc.signatures[0]))}}`)]);
}

/** a signed first-generation manifest of `name:tag` of about `bytes` bytes (one history entry carries the bulk), one layer `blobSum` */
export function bigSchema1(name: string, tag: string, bytes: number, blobSum = `sha256:${'0'.repeat(64)}`): Buffer {
  const manifest = {
    schemaVersion: 1,
    name,
    tag,
    architecture: 'amd64',
    fsLayers: [{ blobSum }],
    history: [{ v1Compatibility: JSON.stringify({ id: 'a'.repeat(64), comment: 'x'.repeat(bytes) }) }],
  };
  return signSchema1(manifest, [{ key: generateKey('P-256'), kid: true }]).body;
}
