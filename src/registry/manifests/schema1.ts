/**
 * The signed first-generation manifest (`...manifest.v1+prettyjws`, also reached through
 * `v1+json`). The body is a libtrust "pretty JWS": the manifest JSON with a `signatures` array
 * spliced in before its closing brace. Each signature's protected header records how to cut the
 * signed payload back out: the first `formatLength` bytes of the body followed by `formatTail`.
 */
import { createPublicKey } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { JWK, importJWK } from 'jose';
import { RegistryError } from '../errors.js';
import { LayerMediaTypes } from './mediatypes.js';
import { arrayOrEmpty, isObject, optionalString, requireDigest, requireObject, requireSchemaVersion, requireString, manifestInvalid, type JSONObject } from './fields.js';
import { libtrustKeyID } from '../../crypto/libtrust-keyid.js';
import type { ManifestContent } from './types.js';

/** the algorithms libtrust signs with */
const ALGORITHMS = ['ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512'];
const BASE64URL = /^[A-Za-z0-9_-]*$/;
/**
 * Signatures checked per manifest. Real manifests carry one (docker signed with the daemon's key,
 * Distribution with its own); each check hashes the whole payload, so 1,000 copies of one
 * signature on a 4 MiB body cost minutes of CPU. Beyond this the manifest is refused unchecked.
 */
export const MAX_SIGNATURES = 4;

interface SignatureBlock {
  field: string;
  alg: string;
  jwk: JSONObject;
  signature: string;
  protected: string;
  formatLength: number;
  formatTail: Buffer;
}

function unverified(check: string, field: string | undefined, message: string, extra: JSONObject = {}): RegistryError {
  const where = field === undefined ? '' : `${field}: `;
  return new RegistryError('MANIFEST_UNVERIFIED', `manifest failed signature verification: ${where}${message}`, {
    detail: { check, ...(field === undefined ? {} : { field }), ...extra },
  });
}

function decodeBase64URL(value: string, field: string): Buffer {
  // Buffer.from skips characters outside the alphabet; a signature must not
  if (!BASE64URL.test(value)) throw unverified('encoding', field, 'is not base64url');
  return Buffer.from(value, 'base64url');
}

function parseSignatureBlock(value: unknown, field: string): SignatureBlock {
  if (!isObject(value)) throw unverified('signature', field, 'must be an object');
  const header = value.header;
  if (!isObject(header)) throw unverified('signature', `${field}.header`, 'must be an object');
  if (!isObject(header.jwk)) throw unverified('jwk', `${field}.header.jwk`, 'must be a JWK public key (x5c certificate chains are not supported)');
  if (typeof header.alg !== 'string') throw unverified('alg', `${field}.header.alg`, 'must be a string');
  if (typeof value.signature !== 'string') throw unverified('signature', `${field}.signature`, 'must be a string');
  if (typeof value.protected !== 'string') throw unverified('protected', `${field}.protected`, 'must be a string');

  let protectedHeader: unknown;
  try {
    protectedHeader = JSON.parse(decodeBase64URL(value.protected, `${field}.protected`).toString('utf8'));
  } catch (err) {
    if (err instanceof RegistryError) throw err;
    throw unverified('protected', `${field}.protected`, `is not base64url JSON: ${(err as Error).message}`);
  }
  if (!isObject(protectedHeader)) throw unverified('protected', `${field}.protected`, 'must be a JSON object');
  const { formatLength, formatTail } = protectedHeader;
  if (typeof formatLength !== 'number' || !Number.isSafeInteger(formatLength) || formatLength < 0) {
    throw unverified('formatLength', `${field}.protected.formatLength`, 'must be a non-negative integer');
  }
  if (typeof formatTail !== 'string') throw unverified('formatTail', `${field}.protected.formatTail`, 'must be a string');
  return {
    field,
    alg: header.alg,
    jwk: header.jwk,
    signature: value.signature,
    protected: value.protected,
    formatLength,
    formatTail: decodeBase64URL(formatTail, `${field}.protected.formatTail`),
  };
}

/** the public part of the JWK, so that stray private or usage members cannot get in the way */
function publicJWK(jwk: JSONObject, field: string): JWK {
  if (jwk.kty === 'EC') return { kty: 'EC', crv: jwk.crv as string, x: jwk.x as string, y: jwk.y as string };
  if (jwk.kty === 'RSA') return { kty: 'RSA', n: jwk.n as string, e: jwk.e as string };
  throw unverified('jwk', `${field}.header.jwk.kty`, `unsupported key type ${JSON.stringify(jwk.kty)}`);
}

/** `encodedPayload`: the signed payload in base64url, encoded once for every signature */
async function verifySignature(block: SignatureBlock, encodedPayload: string): Promise<void> {
  const { field, alg } = block;
  if (!ALGORITHMS.includes(alg)) throw unverified('alg', `${field}.header.alg`, `unsupported algorithm ${JSON.stringify(alg)}, expected one of ${ALGORITHMS.join(', ')}`);
  const jwk = publicJWK(block.jwk, field);
  // loaded when a signature is checked: the commands that only read manifests (the offline collector) never load jose
  const { flattenedVerify, importJWK } = await import('jose');
  let key: Awaited<ReturnType<typeof importJWK>>;
  try {
    key = await importJWK(jwk, alg);
  } catch (err) {
    throw unverified('jwk', `${field}.header.jwk`, `unusable key for ${alg}: ${(err as Error).message}`);
  }
  if (block.jwk.kid !== undefined) {
    // libtrust rejects a JWK whose kid is not the fingerprint of its key
    const expected = libtrustKeyID(createPublicKey({ key: jwk, format: 'jwk' }));
    if (block.jwk.kid !== expected) throw unverified('kid', `${field}.header.jwk.kid`, `${JSON.stringify(block.jwk.kid)} does not match the key (its key ID is ${expected})`);
  }
  try {
    await flattenedVerify({ protected: block.protected, header: { alg }, payload: encodedPayload, signature: block.signature }, key);
  } catch (err) {
    throw unverified('signature', `${field}.signature`, `does not verify: ${(err as Error).message}`);
  }
}

/** the payload every signature covers; signatures that cut different payloads out of the body are not one manifest */
function signedPayload(body: Buffer, blocks: SignatureBlock[]): Buffer {
  const [first] = blocks;
  const disagreeing = blocks.find((b) => b.formatLength !== first.formatLength || !b.formatTail.equals(first.formatTail));
  if (disagreeing) throw unverified('payload', disagreeing.field, `covers a different payload than ${first.field}`);
  if (first.formatLength > body.length) throw unverified('formatLength', `${first.field}.protected.formatLength`, `${first.formatLength} is longer than the body (${body.length} bytes)`);
  return Buffer.concat([body.subarray(0, first.formatLength), first.formatTail]);
}

function parsePayload(payload: Buffer): JSONObject {
  let doc: unknown;
  try {
    doc = JSON.parse(payload.toString('utf8'));
  } catch (err) {
    throw manifestInvalid('json', undefined, `the signed payload is not JSON: ${(err as Error).message}`);
  }
  return requireObject(doc, 'payload');
}

/**
 * Verifies every signature (at most MAX_SIGNATURES) and reads the signed manifest. Between two
 * signature checks the event loop serves other requests, and an aborted `signal` (the client left)
 * stops the work with its reason.
 */
export async function parseSchema1(body: Buffer, doc: JSONObject, signal?: AbortSignal): Promise<ManifestContent & { payload: Buffer }> {
  if (!Array.isArray(doc.signatures) || doc.signatures.length === 0) throw unverified('signatures', 'signatures', 'the manifest carries no signatures');
  if (doc.signatures.length > MAX_SIGNATURES) {
    throw unverified('signatures', 'signatures', `the manifest carries ${doc.signatures.length} signatures; this registry checks at most ${MAX_SIGNATURES} (a manifest is normally signed once)`, {
      signatures: doc.signatures.length,
      limit: MAX_SIGNATURES,
    });
  }
  const blocks = doc.signatures.map((value, i) => parseSignatureBlock(value, `signatures[${i}]`));
  const payload = signedPayload(body, blocks);
  const encoded = payload.toString('base64url');
  for (const block of blocks) {
    await nextTurn();
    signal?.throwIfAborted();
    await verifySignature(block, encoded);
  }

  // what was signed is what counts: read the manifest from the payload, not the body
  const manifest = parsePayload(payload);
  requireSchemaVersion(manifest, 1);
  const name = requireString(manifest, 'name', '', { nonEmpty: true });
  const tag = requireString(manifest, 'tag', '', { nonEmpty: true });
  optionalString(manifest, 'architecture', '');
  const fsLayers = arrayOrEmpty(manifest, 'fsLayers', '').map((layer, i) => requireDigest(requireObject(layer, `fsLayers[${i}]`), 'blobSum', `fsLayers[${i}]`));
  const history = arrayOrEmpty(manifest, 'history', '');
  history.forEach((entry, i) => requireString(requireObject(entry, `history[${i}]`), 'v1Compatibility', `history[${i}]`));
  if (fsLayers.length !== history.length) {
    throw manifestInvalid('history', 'history', `has ${history.length} entries but fsLayers has ${fsLayers.length}: they must match one to one`, { fsLayers: fsLayers.length, history: history.length });
  }
  return {
    payload,
    name,
    tag,
    blobs: fsLayers.map((digest) => ({ mediaType: LayerMediaTypes.schema1Layer, digest })),
    manifests: [],
    layersWithURLs: [],
  };
}
