import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifest } from '../../../src/registry/manifests/index.js';
import { sha256 } from '../../../src/registry/digest.js';
import { assertRegistryError, dockerImage, dockerWindowsImage, toBody } from './examples.js';

const DOCKER_V2 = 'application/vnd.docker.distribution.manifest.v2+json';
const REGISTRY_V2 = 'application/vnd.registry.distribution.manifest.v2+json';
const parse = (doc: unknown, type = DOCKER_V2) => parseManifest(type, toBody(doc));

test('a docker image manifest: config and layers are the blobs, digest is of the body', async () => {
  const doc = dockerImage();
  const body = toBody(doc);
  const parsed = await parseManifest(DOCKER_V2, body);
  assert.equal(parsed.format, 'schema2');
  assert.equal(parsed.mediaType, DOCKER_V2);
  assert.equal(parsed.digest, sha256(body));
  assert.ok(parsed.payload.equals(body));
  assert.deepEqual(parsed.blobs, [doc.config, ...doc.layers]);
  assert.deepEqual(parsed.manifests, []);
  assert.deepEqual(parsed.layersWithURLs, []);
  assert.equal(parsed.subject, undefined);
});

test('the registry spelling of the type is accepted, with a docker mediaType in the body', async () => {
  const parsed = await parse(dockerImage(), REGISTRY_V2);
  assert.equal(parsed.mediaType, REGISTRY_V2);
  assert.equal(parsed.format, 'schema2');
});

test('an image without layers (FROM scratch) is accepted', async () => {
  const parsed = await parse({ ...dockerImage(), layers: [] });
  assert.equal(parsed.blobs.length, 1);
});

test('foreign layers are not required blobs but are subject to the URL policy', async () => {
  const doc = dockerWindowsImage();
  const parsed = await parse(doc);
  assert.deepEqual(parsed.layersWithURLs, [doc.layers[0]]);
  assert.deepEqual(parsed.blobs, [doc.config, doc.layers[1], doc.layers[2]]);
});

test('a foreign layer without urls', async () => {
  const doc = dockerWindowsImage();
  delete (doc.layers[0] as { urls?: string[] }).urls;
  await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { check: 'urls', field: 'layers[0].urls' }, 'foreign layer');
});

test('a blob listed twice is reported once', async () => {
  const doc = dockerImage();
  doc.layers.push({ ...doc.layers[0] });
  const parsed = await parse(doc);
  assert.equal(parsed.blobs.length, 3);
});

test('schemaVersion must be 2', async () => {
  await assertRegistryError(() => parse({ ...dockerImage(), schemaVersion: 1 }), 'MANIFEST_INVALID', { check: 'schemaVersion', field: 'schemaVersion', got: 1 }, 'must be 2');
  const { schemaVersion: _, ...without } = dockerImage();
  await assertRegistryError(() => parse(without), 'MANIFEST_INVALID', { check: 'schemaVersion' });
});

test('the body must name its type (Distribution requires it for this format)', async () => {
  const { mediaType: _, ...without } = dockerImage();
  await assertRegistryError(() => parse(without), 'MANIFEST_INVALID', { check: 'mediaType', field: 'mediaType' });
});

test('config is required and must be a descriptor', async () => {
  const { config: _, ...without } = dockerImage();
  await assertRegistryError(() => parse(without), 'MANIFEST_INVALID', { check: 'type', field: 'config' }, 'must be an object');
  await assertRegistryError(() => parse({ ...dockerImage(), config: 'sha256:abc' }), 'MANIFEST_INVALID', { field: 'config' });
});

test('layers must be an array of descriptors', async () => {
  await assertRegistryError(() => parse({ ...dockerImage(), layers: {} }), 'MANIFEST_INVALID', { check: 'type', field: 'layers' }, 'must be an array');
  await assertRegistryError(() => parse({ ...dockerImage(), layers: [42] }), 'MANIFEST_INVALID', { check: 'type', field: 'layers[0]' });
});

test('descriptor mediaType must be a non-empty string', async () => {
  const doc = dockerImage();
  (doc.layers[1] as { mediaType?: unknown }).mediaType = 7;
  await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { check: 'type', field: 'layers[1].mediaType' });
  doc.layers[1].mediaType = '';
  await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { field: 'layers[1].mediaType' }, 'must not be empty');
});

test('descriptor size must be a non-negative integer', async () => {
  for (const size of [-1, 1.5, '12', null, undefined]) {
    const doc = dockerImage();
    (doc.layers[0] as { size?: unknown }).size = size;
    await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { check: 'size', field: 'layers[0].size' }, 'non-negative integer');
  }
});

test('a malformed digest in a descriptor is DIGEST_INVALID, as in Distribution', async () => {
  for (const digest of ['sha256:1234', 'sha256:' + 'A'.repeat(64), 'md5:d41d8cd98f00b204e9800998ecf8427e', 'nonsense', '']) {
    const doc = dockerImage();
    doc.layers[1].digest = digest as `sha256:${string}`;
    await assertRegistryError(() => parse(doc), 'DIGEST_INVALID', { check: 'digest', field: 'layers[1].digest', digest }, 'layers[1].digest');
  }
});

test('a missing digest is MANIFEST_INVALID', async () => {
  const doc = dockerImage();
  delete (doc.config as { digest?: string }).digest;
  await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { check: 'type', field: 'config.digest' });
});

test('urls and annotations must have the right types', async () => {
  const doc = dockerImage();
  (doc.layers[0] as Record<string, unknown>).urls = 'https://example.com';
  await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { field: 'layers[0].urls' });
  (doc.layers[0] as Record<string, unknown>).urls = [1];
  await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { field: 'layers[0].urls[0]' });
  delete (doc.layers[0] as Record<string, unknown>).urls;
  (doc.layers[0] as Record<string, unknown>).annotations = { a: 1 };
  await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { check: 'annotations', field: 'layers[0].annotations.a' });
});

test('a manifest that also carries manifests is ambiguous', async () => {
  await assertRegistryError(() => parse({ ...dockerImage(), manifests: [] }), 'MANIFEST_INVALID', { check: 'ambiguous', field: 'manifests' });
});
