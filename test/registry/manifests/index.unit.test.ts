import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifest } from '../../../src/registry/manifests/index.js';
import { sha256 } from '../../../src/registry/digest.js';
import { assertRegistryError, buildxIndex, dockerImage, dockerManifestList, notationSignature, ociImage, toBody } from './examples.js';
import { generateKey, signSchema1 } from './sign-schema1.js';

const DOCKER_V2 = 'application/vnd.docker.distribution.manifest.v2+json';

test('without a Content-Type, or a generic one, the body mediaType decides and is stored', async () => {
  for (const contentType of [undefined, '', 'application/json', 'application/octet-stream', 'application/json; charset=utf-8']) {
    const parsed = await parseManifest(contentType, toBody(dockerImage()));
    assert.equal(parsed.format, 'schema2', String(contentType));
    assert.equal(parsed.mediaType, DOCKER_V2);
  }
  assert.equal((await parseManifest(undefined, toBody(buildxIndex()))).format, 'oci-index');
  assert.equal((await parseManifest('application/json', toBody(dockerManifestList()))).format, 'manifest-list');
  assert.equal((await parseManifest(undefined, toBody(notationSignature()))).artifactType, 'application/vnd.cncf.notary.signature');
});

test('the Content-Type is stored without parameters', async () => {
  const parsed = await parseManifest('application/vnd.oci.image.manifest.v1+json; charset=utf-8', toBody(ociImage()));
  assert.equal(parsed.mediaType, 'application/vnd.oci.image.manifest.v1+json');
});

test('the digest is of the exact bytes, whitespace included', async () => {
  const compact = Buffer.from(JSON.stringify(dockerImage()));
  const pretty = toBody(dockerImage());
  const a = await parseManifest(DOCKER_V2, compact);
  const b = await parseManifest(DOCKER_V2, pretty);
  assert.equal(a.digest, sha256(compact));
  assert.notEqual(a.digest, b.digest);
});

test('Content-Type and body mediaType naming different formats', async () => {
  await assertRegistryError(
    () => parseManifest('application/vnd.oci.image.manifest.v1+json', toBody(dockerImage())),
    'MANIFEST_INVALID',
    { check: 'mediaType', contentType: 'application/vnd.oci.image.manifest.v1+json', mediaType: DOCKER_V2 },
    'name different manifest formats',
  );
  await assertRegistryError(() => parseManifest(DOCKER_V2, toBody(buildxIndex())), 'MANIFEST_INVALID', { check: 'mediaType' });
});

test('twins are not a disagreement', async () => {
  const parsed = await parseManifest('application/vnd.registry.distribution.manifest.list.v2+json', toBody(dockerManifestList()));
  assert.equal(parsed.mediaType, 'application/vnd.registry.distribution.manifest.list.v2+json');
});

test('malformed JSON names the parse error', async () => {
  const err = await assertRegistryError(() => parseManifest(DOCKER_V2, Buffer.from('{"schemaVersion": 2,')), 'MANIFEST_INVALID', { check: 'json' }, 'not JSON');
  assert.match(err.message, /JSON/);
  await assertRegistryError(() => parseManifest(DOCKER_V2, Buffer.from('')), 'MANIFEST_INVALID', { check: 'json' });
});

test('the body must be a UTF-8 JSON object', async () => {
  await assertRegistryError(() => parseManifest(DOCKER_V2, Buffer.from('[]')), 'MANIFEST_INVALID', { check: 'json' }, 'JSON object');
  await assertRegistryError(() => parseManifest(DOCKER_V2, Buffer.from('null')), 'MANIFEST_INVALID', { check: 'json' });
  await assertRegistryError(() => parseManifest(DOCKER_V2, Buffer.from([0x7b, 0xff, 0x7d])), 'MANIFEST_INVALID', { check: 'json' }, 'UTF-8');
  // a byte-order mark is not JSON (Go's decoder refuses it too)
  await assertRegistryError(() => parseManifest(DOCKER_V2, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), toBody(dockerImage())])), 'MANIFEST_INVALID', { check: 'json' });
});

test('an unknown Content-Type names the supported types', async () => {
  const err = await assertRegistryError(() => parseManifest('text/plain', toBody(dockerImage())), 'MANIFEST_INVALID', { check: 'mediaType', mediaType: 'text/plain' }, 'unsupported manifest media type');
  assert.ok(err.message.includes('application/vnd.oci.image.index.v1+json'));
  assert.equal((err.detail as { supported: string[] }).supported.length, 10);
});

test('an unknown body mediaType names the supported types', async () => {
  await assertRegistryError(
    () => parseManifest(undefined, toBody({ ...ociImage(), mediaType: 'application/vnd.example+json' })),
    'MANIFEST_INVALID',
    { check: 'mediaType', field: 'mediaType', mediaType: 'application/vnd.example+json' },
    'application/vnd.docker.distribution.manifest.v2+json',
  );
  await assertRegistryError(() => parseManifest(undefined, toBody({ ...ociImage(), mediaType: 3 })), 'MANIFEST_INVALID', { field: 'mediaType' });
});

test('no Content-Type and no mediaType: the format cannot be told', async () => {
  const { mediaType: _, ...without } = ociImage();
  await assertRegistryError(() => parseManifest(undefined, toBody(without)), 'MANIFEST_INVALID', { check: 'mediaType' }, 'cannot tell the manifest format');
});

test('a body with schemaVersion 1 and signatures is the signed first generation', async () => {
  const key = generateKey('P-256');
  const { body, payload } = signSchema1({ schemaVersion: 1, name: 'library/app', tag: 'v1', architecture: 'amd64', fsLayers: [], history: [] }, [{ key }]);
  for (const contentType of [undefined, 'application/json']) {
    const parsed = await parseManifest(contentType, body);
    assert.equal(parsed.format, 'schema1');
    assert.equal(parsed.mediaType, 'application/vnd.registry.distribution.manifest.v1+prettyjws');
    assert.equal(parsed.digest, sha256(payload));
  }
});
