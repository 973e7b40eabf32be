import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createPublicKey, sign } from 'node:crypto';
import { parseManifest } from '../../../src/registry/manifests/index.js';
import { MAX_SIGNATURES } from '../../../src/registry/manifests/schema1.js';
import { libtrustKeyID } from '../../../src/crypto/libtrust-keyid.js';
import { sha256 } from '../../../src/registry/digest.js';
import { assertRegistryError, digestOf } from './examples.js';
import { generateKey, repeatSignature, signSchema1, type KeyKind, type TestKey } from './sign-schema1.js';

const SIGNED_V1 = 'application/vnd.docker.distribution.manifest.v1+prettyjws';

function imageV1(layers = 2) {
  return {
    schemaVersion: 1,
    name: 'library/app',
    tag: 'v1.0',
    architecture: 'amd64',
    fsLayers: Array.from({ length: layers }, (_, i) => ({ blobSum: digestOf(`v1 layer ${i}`) })),
    history: Array.from({ length: layers }, (_, i) => ({ v1Compatibility: JSON.stringify({ id: `${i}`.repeat(64), created: '2016-01-01T00:00:00Z' }) })),
  };
}

const keys = new Map<KeyKind, TestKey>();
const keyOf = (kind: KeyKind) => keys.get(kind) ?? keys.set(kind, generateKey(kind)).get(kind)!;

/** a real manifest, signed by a registry in 2017 (busybox:1.23, from openshift/origin's test data); bytes must stay exact */
const BUSYBOX = readFileSync(new URL('./fixtures/busybox-1.23.schema1.json', import.meta.url));

test('a real signed manifest verifies; its digest is of the payload, not the body', async () => {
  const parsed = await parseManifest(SIGNED_V1, BUSYBOX);
  assert.equal(parsed.format, 'schema1');
  assert.equal(parsed.mediaType, SIGNED_V1);
  assert.equal(parsed.name, 'library/busybox');
  assert.equal(parsed.tag, '1.23');
  const payload = Buffer.concat([BUSYBOX.subarray(0, 3210), Buffer.from('\n}')]);
  assert.ok(parsed.payload.equals(payload));
  assert.equal(parsed.digest, sha256(payload));
  assert.notEqual(parsed.digest, sha256(BUSYBOX));
  assert.deepEqual(
    parsed.blobs.map((b) => b.digest),
    ['sha256:a3ed95caeb02ffe68cdd9fd84406680ae93d633cb16422d00e8a7c22955b46d4', 'sha256:9d7588d3c0635b53bd9a7dcd40bdf5d2d32cd3fb919c3a29ec2febbc2449eb19'],
  );
  assert.equal(parsed.blobs[0].mediaType, 'application/vnd.docker.container.image.rootfs.diff+x-gtar');
});

test('libtrust key IDs match the kid libtrust wrote', () => {
  const jwk = { kty: 'EC', crv: 'P-256', x: 'ppU7aXPngzHYJUswWcpDDL50hYkHWanmcrs_0X8L8Pc', y: 'dRpAggds8FfHRZsOms_g13XBOMnuqkP1fEWisGwvXso' };
  assert.equal(libtrustKeyID(createPublicKey({ key: jwk, format: 'jwk' })), 'QKEZ:N7ZA:BUSY:KPSH:PARP:NU4K:POHK:VLWF:EW22:4JFB:MKYJ:ZYSE');
});

for (const kind of ['P-256', 'P-384', 'P-521', 'RSA'] as const) {
  for (const kid of [false, true]) {
    test(`signed with ${kind}, ${kid ? 'with' : 'without'} kid`, async () => {
      const { body, payload } = signSchema1(imageV1(), [{ key: keyOf(kind), kid }]);
      const parsed = await parseManifest(SIGNED_V1, body);
      assert.equal(parsed.digest, sha256(payload));
      assert.equal(parsed.blobs.length, 2);
      assert.equal(parsed.name, 'library/app');
      assert.equal(parsed.tag, 'v1.0');
    });
  }
}

test('several signatures, all valid', async () => {
  const { body, payload } = signSchema1(imageV1(), [{ key: keyOf('P-256'), kid: true }, { key: keyOf('RSA') }, { key: keyOf('P-521'), kid: true }]);
  assert.equal((await parseManifest(SIGNED_V1, body)).digest, sha256(payload));
});

test('the registry spelling and v1+json are parsed the same (Distribution treats v1+json as signed)', async () => {
  const { body } = signSchema1(imageV1(), [{ key: keyOf('P-256') }]);
  for (const type of ['application/vnd.registry.distribution.manifest.v1+prettyjws', 'application/vnd.docker.distribution.manifest.v1+json', 'application/vnd.registry.distribution.manifest.v1+json']) {
    const parsed = await parseManifest(type, body);
    assert.equal(parsed.format, 'schema1');
    assert.equal(parsed.mediaType, type);
  }
});

test('an unsigned v1+json manifest is unverified', async () => {
  const body = Buffer.from(JSON.stringify(imageV1(), null, 3));
  await assertRegistryError(() => parseManifest('application/vnd.docker.distribution.manifest.v1+json', body), 'MANIFEST_UNVERIFIED', { check: 'signatures', field: 'signatures' }, 'no signatures');
});

test('missing or empty signatures', async () => {
  const { body } = signSchema1(imageV1(), [{ key: keyOf('P-256') }]);
  const doc = JSON.parse(body.toString());
  for (const signatures of [undefined, [], {}, 'sig']) {
    await assertRegistryError(() => parseManifest(SIGNED_V1, Buffer.from(JSON.stringify({ ...doc, signatures }, null, 3))), 'MANIFEST_UNVERIFIED', { check: 'signatures' });
  }
});

test('a tampered body does not verify', async () => {
  const { body } = signSchema1(imageV1(), [{ key: keyOf('P-256'), kid: true }]);
  const tampered = Buffer.from(body.toString().replace('"v1.0"', '"v6.6"'));
  await assertRegistryError(() => parseManifest(SIGNED_V1, tampered), 'MANIFEST_UNVERIFIED', { check: 'signature', field: 'signatures[0].signature' }, 'does not verify');
});

test('a tampered signature does not verify', async () => {
  for (const kind of ['P-384', 'RSA'] as const) {
    const { body } = signSchema1(imageV1(), [{ key: keyOf(kind) }]);
    const doc = JSON.parse(body.toString());
    const sig: string = doc.signatures[0].signature;
    const flipped = (sig[10] === 'A' ? 'B' : 'A');
    const tampered = Buffer.from(body.toString().replace(sig, sig.slice(0, 10) + flipped + sig.slice(11)));
    await assertRegistryError(() => parseManifest(SIGNED_V1, tampered), 'MANIFEST_UNVERIFIED', { check: 'signature', field: 'signatures[0].signature' });
  }
});

test('one bad signature among good ones fails the manifest', async () => {
  const other = signSchema1({ ...imageV1(), tag: 'other' }, [{ key: keyOf('RSA') }]).payload;
  const { body } = signSchema1(imageV1(), [{ key: keyOf('P-256') }, { key: keyOf('RSA'), signPayload: other }]);
  await assertRegistryError(() => parseManifest(SIGNED_V1, body), 'MANIFEST_UNVERIFIED', { field: 'signatures[1].signature' });
});

test('a kid that is not the key fingerprint', async () => {
  const { body } = signSchema1(imageV1(), [{ key: keyOf('P-256'), kid: libtrustKeyID(keyOf('P-384').publicKey) }]);
  await assertRegistryError(() => parseManifest(SIGNED_V1, body), 'MANIFEST_UNVERIFIED', { check: 'kid', field: 'signatures[0].header.jwk.kid' }, 'does not match the key');
  const { body: rsa } = signSchema1(imageV1(), [{ key: keyOf('RSA'), kid: 'ABCD:EFGH' }]);
  await assertRegistryError(() => parseManifest(SIGNED_V1, rsa), 'MANIFEST_UNVERIFIED', { check: 'kid' });
});

test('a wrong or unsupported alg', async () => {
  // the curve fixes the algorithm: a P-256 key cannot make ES384 signatures
  const { body } = signSchema1(imageV1(), [{ key: keyOf('P-256'), claimAlg: 'ES384' }]);
  await assertRegistryError(() => parseManifest(SIGNED_V1, body), 'MANIFEST_UNVERIFIED', { check: 'jwk', field: 'signatures[0].header.jwk' }, 'ES384');
  const { body: rsa } = signSchema1(imageV1(), [{ key: keyOf('RSA'), claimAlg: 'RS512' }]);
  await assertRegistryError(() => parseManifest(SIGNED_V1, rsa), 'MANIFEST_UNVERIFIED', { check: 'signature' });
  for (const alg of ['none', 'HS256', 'PS256']) {
    const { body: odd } = signSchema1(imageV1(), [{ key: keyOf('RSA'), claimAlg: alg }]);
    await assertRegistryError(() => parseManifest(SIGNED_V1, odd), 'MANIFEST_UNVERIFIED', { check: 'alg', field: 'signatures[0].header.alg' }, 'unsupported algorithm');
  }
});

/** rewrite the first signature block of a signed body; the payload bytes stay as they are */
function withSignature(body: Buffer, edit: (sig: Record<string, any>) => void): Buffer {
  const text = body.toString();
  const start = text.indexOf(',\n   "signatures": ');
  const doc = JSON.parse(text);
  edit(doc.signatures[0]);
  return Buffer.from(text.slice(0, start) + `,\n   "signatures": ${JSON.stringify(doc.signatures)}\n}`);
}

const encode = (obj: unknown) => Buffer.from(JSON.stringify(obj)).toString('base64url');

test('malformed signature blocks are unverified, naming the field', async () => {
  const { body } = signSchema1(imageV1(), [{ key: keyOf('P-256') }]);
  const cases: Array<[(sig: Record<string, any>) => void, string, string]> = [
    [(s) => delete s.header.jwk, 'jwk', 'signatures[0].header.jwk'],
    [(s) => (s.header.jwk = { kty: 'oct', k: 'AAAA' }), 'jwk', 'signatures[0].header.jwk.kty'],
    [(s) => (s.header.jwk.x = 'AAAA'), 'jwk', 'signatures[0].header.jwk'],
    [(s) => delete s.header.alg, 'alg', 'signatures[0].header.alg'],
    [(s) => delete s.header, 'signature', 'signatures[0].header'],
    [(s) => (s.signature = 5), 'signature', 'signatures[0].signature'],
    [(s) => delete s.protected, 'protected', 'signatures[0].protected'],
    [(s) => (s.protected = 'not base64!'), 'encoding', 'signatures[0].protected'],
    [(s) => (s.protected = encode('[1]').slice(0, 3) + 'x'), 'protected', 'signatures[0].protected'],
    [(s) => (s.protected = encode([1])), 'protected', 'signatures[0].protected'],
    [(s) => (s.protected = encode({ formatTail: 'Cn0' })), 'formatLength', 'signatures[0].protected.formatLength'],
    [(s) => (s.protected = encode({ formatLength: -1, formatTail: 'Cn0' })), 'formatLength', 'signatures[0].protected.formatLength'],
    [(s) => (s.protected = encode({ formatLength: 10 })), 'formatTail', 'signatures[0].protected.formatTail'],
    [(s) => (s.protected = encode({ formatLength: 1e6, formatTail: 'Cn0' })), 'formatLength', 'signatures[0].protected.formatLength'],
  ];
  for (const [edit, check, field] of cases) {
    await assertRegistryError(() => parseManifest(SIGNED_V1, withSignature(body, edit)), 'MANIFEST_UNVERIFIED', { check, field });
  }
  await assertRegistryError(() => parseManifest(SIGNED_V1, Buffer.from(JSON.stringify({ ...imageV1(), signatures: ['x'] }))), 'MANIFEST_UNVERIFIED', { field: 'signatures[0]' });
});

test('signatures over different payloads', async () => {
  const { body } = signSchema1(imageV1(), [{ key: keyOf('P-256') }, { key: keyOf('P-384') }]);
  const text = body.toString();
  const doc = JSON.parse(text);
  doc.signatures[1].protected = encode({ formatLength: 100, formatTail: 'Cn0', time: '2016-01-01T00:00:00Z' });
  const start = text.indexOf(',\n   "signatures": ');
  const mixed = Buffer.from(text.slice(0, start) + `,\n   "signatures": ${JSON.stringify(doc.signatures)}\n}`);
  await assertRegistryError(() => parseManifest(SIGNED_V1, mixed), 'MANIFEST_UNVERIFIED', { check: 'payload', field: 'signatures[1]' }, 'different payload');
});

test('fsLayers and history must have the same length', async () => {
  const doc = imageV1(3);
  doc.history.pop();
  const { body } = signSchema1(doc, [{ key: keyOf('P-256') }]);
  await assertRegistryError(() => parseManifest(SIGNED_V1, body), 'MANIFEST_INVALID', { check: 'history', field: 'history', fsLayers: 3, history: 2 }, 'must match');
});

test('the signed payload is validated', async () => {
  const sign = (doc: unknown) => signSchema1(doc as object, [{ key: keyOf('P-256') }]).body;
  const { name: _, ...noName } = imageV1();
  await assertRegistryError(() => parseManifest(SIGNED_V1, sign(noName)), 'MANIFEST_INVALID', { field: 'name' });
  await assertRegistryError(() => parseManifest(SIGNED_V1, sign({ ...imageV1(), tag: 3 })), 'MANIFEST_INVALID', { field: 'tag' });
  await assertRegistryError(() => parseManifest(SIGNED_V1, sign({ ...imageV1(), schemaVersion: 2 })), 'MANIFEST_INVALID', { check: 'schemaVersion' });
  await assertRegistryError(() => parseManifest(SIGNED_V1, sign({ ...imageV1(), fsLayers: [{ blobSum: 'tarsum.v1+sha256:abc' }], history: [{ v1Compatibility: '{}' }] })), 'DIGEST_INVALID', { field: 'fsLayers[0].blobSum' });
  await assertRegistryError(() => parseManifest(SIGNED_V1, sign({ ...imageV1(1), history: [{ v1Compatibility: {} }] })), 'MANIFEST_INVALID', { field: 'history[0].v1Compatibility' });
  await assertRegistryError(() => parseManifest(SIGNED_V1, sign({ ...imageV1(1), fsLayers: ['sha256:x'] })), 'MANIFEST_INVALID', { field: 'fsLayers[0]' });
});

test('a signed payload that is not JSON', async () => {
  const key = keyOf('P-256');
  // the protected header cuts out only the first line, with no tail: validly signed, but not JSON
  const prefix = '{\n   "schemaVersion": 1';
  const protectedHeader = encode({ formatLength: prefix.length, formatTail: '' });
  const signingInput = Buffer.from(`${protectedHeader}.${Buffer.from(prefix).toString('base64url')}`);
  const signature = sign('sha256', signingInput, { key: key.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  const block = { header: { jwk: key.publicKey.export({ format: 'jwk' }), alg: 'ES256' }, signature, protected: protectedHeader };
  const body = Buffer.from(`${prefix},\n   "signatures": ${JSON.stringify([block])}\n}`);
  await assertRegistryError(() => parseManifest(SIGNED_V1, body), 'MANIFEST_INVALID', { check: 'json' }, 'signed payload is not JSON');
});


test(`at most ${MAX_SIGNATURES} signatures are checked: more are refused before any is verified`, async () => {
  const { body, payload } = signSchema1(imageV1(), [{ key: keyOf('P-256'), kid: true }]);
  assert.equal((await parseManifest(SIGNED_V1, repeatSignature(body, MAX_SIGNATURES))).digest, sha256(payload));
  const signers = (['P-256', 'P-384', 'P-521', 'RSA'] as const).map((kind) => ({ key: keyOf(kind) }));
  assert.equal(signers.length, MAX_SIGNATURES);
  assert.equal((await parseManifest(SIGNED_V1, signSchema1(imageV1(), signers).body)).format, 'schema1');
  for (const n of [MAX_SIGNATURES + 1, 1000]) {
    await assertRegistryError(() => parseManifest(SIGNED_V1, repeatSignature(body, n)), 'MANIFEST_UNVERIFIED', { check: 'signatures', field: 'signatures', signatures: n, limit: MAX_SIGNATURES }, `carries ${n} signatures`);
  }
});

test('an aborted signal stops the signature checks with its reason', async () => {
  const { body } = signSchema1(imageV1(), [{ key: keyOf('P-256') }, { key: keyOf('RSA') }]);
  const reason = new Error('client gone');
  await assert.rejects(parseManifest(SIGNED_V1, body, { signal: AbortSignal.abort(reason) }), (err) => err === reason);
  // aborted while the first signature is being checked: the second is not
  const controller = new AbortController();
  const parsing = parseManifest(SIGNED_V1, body, { signal: controller.signal });
  controller.abort(reason);
  await assert.rejects(parsing, (err) => err === reason);
});

test('schema1: false (compatibility.schema1.enabled) refuses first-generation manifests as MANIFEST_INVALID', async () => {
  const { body } = signSchema1(imageV1(), [{ key: keyOf('P-256') }]);
  for (const type of [SIGNED_V1, 'application/vnd.docker.distribution.manifest.v1+json', undefined]) {
    await assertRegistryError(() => parseManifest(type, body, { schema1: false }), 'MANIFEST_INVALID', { check: 'mediaType' }, 'compatibility.schema1.enabled');
  }
  assert.equal((await parseManifest(SIGNED_V1, body, { schema1: true })).format, 'schema1');
});
