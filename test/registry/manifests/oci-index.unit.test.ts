import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifest } from '../../../src/registry/manifests/index.js';
import { sha256 } from '../../../src/registry/digest.js';
import { assertRegistryError, buildxIndex, digestOf, toBody } from './examples.js';

const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
const parse = (doc: unknown, type = OCI_INDEX) => parseManifest(type, toBody(doc));

test('a buildx index with attestations: children are manifests, annotations kept', async () => {
  const doc = buildxIndex();
  const body = toBody(doc);
  const parsed = await parseManifest(OCI_INDEX, body);
  assert.equal(parsed.format, 'oci-index');
  assert.equal(parsed.mediaType, OCI_INDEX);
  assert.equal(parsed.digest, sha256(body));
  assert.deepEqual(parsed.blobs, []);
  assert.deepEqual(parsed.manifests, doc.manifests);
  assert.deepEqual(parsed.annotations, doc.annotations);
  assert.equal(parsed.artifactType, undefined);
});

test('an artifact index with artifactType and subject', async () => {
  const subject = { mediaType: 'application/vnd.oci.image.index.v1+json', digest: digestOf('subject index'), size: 900 };
  const doc = { ...buildxIndex(), artifactType: 'application/vnd.example.bundle', subject };
  const parsed = await parse(doc);
  assert.equal(parsed.artifactType, 'application/vnd.example.bundle');
  assert.deepEqual(parsed.subject, subject);
});

test('the body may omit mediaType but not name another type', async () => {
  const { mediaType: _, ...without } = buildxIndex();
  assert.equal((await parse(without)).format, 'oci-index');
  await assertRegistryError(() => parse({ ...buildxIndex(), mediaType: 'application/vnd.docker.distribution.manifest.list.v2+json' }), 'MANIFEST_INVALID', { check: 'mediaType' });
});

test('manifests null or absent count as none', async () => {
  assert.deepEqual((await parse({ ...buildxIndex(), manifests: null })).manifests, []);
});

test('schemaVersion must be 2', async () => {
  await assertRegistryError(() => parse({ ...buildxIndex(), schemaVersion: 1 }), 'MANIFEST_INVALID', { check: 'schemaVersion' });
});

test('an index with config or layers is ambiguous', async () => {
  await assertRegistryError(() => parse({ ...buildxIndex(), layers: [] }), 'MANIFEST_INVALID', { check: 'ambiguous', field: 'layers' }, 'image index');
  await assertRegistryError(() => parse({ ...buildxIndex(), config: {} }), 'MANIFEST_INVALID', { check: 'ambiguous', field: 'config' });
});

test('children, subject, artifactType and annotations are checked', async () => {
  const doc = buildxIndex();
  (doc.manifests[2].annotations as Record<string, unknown>)['vnd.docker.reference.type'] = null;
  await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { check: 'annotations', field: 'manifests[2].annotations.vnd.docker.reference.type' });
  await assertRegistryError(() => parse({ ...buildxIndex(), subject: { mediaType: 'x/y', size: 1 } }), 'MANIFEST_INVALID', { field: 'subject.digest' });
  await assertRegistryError(() => parse({ ...buildxIndex(), artifactType: {} }), 'MANIFEST_INVALID', { field: 'artifactType' });
  await assertRegistryError(() => parse({ ...buildxIndex(), annotations: 'x' }), 'MANIFEST_INVALID', { field: 'annotations' });
  const noType = buildxIndex();
  delete (noType.manifests[0] as { mediaType?: string }).mediaType;
  await assertRegistryError(() => parse(noType), 'MANIFEST_INVALID', { field: 'manifests[0].mediaType' });
});
