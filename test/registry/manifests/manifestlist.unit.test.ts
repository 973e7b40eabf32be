import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifest } from '../../../src/registry/manifests/index.js';
import { sha256 } from '../../../src/registry/digest.js';
import { assertRegistryError, dockerManifestList, toBody } from './examples.js';

const DOCKER_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json';
const parse = (doc: unknown, type = DOCKER_LIST) => parseManifest(type, toBody(doc));

test('a multi-arch manifest list: children are manifests, no blobs', async () => {
  const doc = dockerManifestList();
  const body = toBody(doc);
  const parsed = await parseManifest(DOCKER_LIST, body);
  assert.equal(parsed.format, 'manifest-list');
  assert.equal(parsed.mediaType, DOCKER_LIST);
  assert.equal(parsed.digest, sha256(body));
  assert.deepEqual(parsed.blobs, []);
  assert.deepEqual(parsed.manifests, doc.manifests);
  assert.equal(parsed.manifests[1].platform?.variant, 'v8');
});

test('the registry spelling is accepted', async () => {
  const parsed = await parse(dockerManifestList(), 'application/vnd.registry.distribution.manifest.list.v2+json');
  assert.equal(parsed.format, 'manifest-list');
});

test('an empty list is accepted', async () => {
  const parsed = await parse({ ...dockerManifestList(), manifests: [] });
  assert.deepEqual(parsed.manifests, []);
});

test('schemaVersion must be 2', async () => {
  await assertRegistryError(() => parse({ ...dockerManifestList(), schemaVersion: 3 }), 'MANIFEST_INVALID', { check: 'schemaVersion', got: 3 });
});

test('the body must name the list type', async () => {
  const { mediaType: _, ...without } = dockerManifestList();
  await assertRegistryError(() => parse(without), 'MANIFEST_INVALID', { check: 'mediaType', field: 'mediaType' });
});

test('children must be descriptors', async () => {
  const doc = dockerManifestList();
  (doc.manifests[2] as { size?: number }).size = -5;
  await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { check: 'size', field: 'manifests[2].size' });
  await assertRegistryError(() => parse({ ...dockerManifestList(), manifests: 'none' }), 'MANIFEST_INVALID', { field: 'manifests' });
});

test('a platform needs architecture and os strings', async () => {
  const doc = dockerManifestList();
  (doc.manifests[0].platform as { os?: string }).os = undefined;
  await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { check: 'type', field: 'manifests[0].platform.os' });
  (doc.manifests[0] as { platform: unknown }).platform = 'linux/amd64';
  await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { field: 'manifests[0].platform' });
});

test('a child with a malformed digest is DIGEST_INVALID', async () => {
  const doc = dockerManifestList();
  doc.manifests[0].digest = 'sha256:xyz' as `sha256:${string}`;
  await assertRegistryError(() => parse(doc), 'DIGEST_INVALID', { field: 'manifests[0].digest' });
});

test('a list that also carries layers or config is ambiguous', async () => {
  await assertRegistryError(() => parse({ ...dockerManifestList(), layers: [] }), 'MANIFEST_INVALID', { check: 'ambiguous', field: 'layers' });
  await assertRegistryError(() => parse({ ...dockerManifestList(), config: {} }), 'MANIFEST_INVALID', { check: 'ambiguous', field: 'config' });
});
