import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifest } from '../../../src/registry/manifests/index.js';
import { sha256 } from '../../../src/registry/digest.js';
import { assertRegistryError, cosignSignature, digestOf, notationSignature, ociImage, orasEmptyArtifact, toBody } from './examples.js';

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const parse = (doc: unknown, type = OCI_MANIFEST) => parseManifest(type, toBody(doc));

test('an OCI image: config and layers are blobs, config media type is the artifact type', async () => {
  const doc = ociImage();
  const body = toBody(doc);
  const parsed = await parseManifest(OCI_MANIFEST, body);
  assert.equal(parsed.format, 'oci-manifest');
  assert.equal(parsed.mediaType, OCI_MANIFEST);
  assert.equal(parsed.digest, sha256(body));
  assert.deepEqual(parsed.blobs, [doc.config, ...doc.layers]);
  assert.equal(parsed.artifactType, 'application/vnd.oci.image.config.v1+json');
  assert.deepEqual(parsed.annotations, doc.annotations);
  assert.equal(parsed.subject, undefined);
});

test('a notation signature: artifactType, subject, empty config with data', async () => {
  const doc = notationSignature();
  const parsed = await parse(doc);
  assert.equal(parsed.artifactType, 'application/vnd.cncf.notary.signature');
  assert.deepEqual(parsed.subject, doc.subject);
  assert.deepEqual(parsed.annotations, doc.annotations);
  assert.deepEqual(parsed.blobs, [doc.config, doc.layers[0]]);
  assert.equal(parsed.blobs[0].data, 'e30=');
});

test('an artifact without layers is accepted', async () => {
  const parsed = await parse(orasEmptyArtifact());
  assert.equal(parsed.artifactType, 'application/vnd.example.sbom');
  assert.equal(parsed.blobs.length, 1);
});

test('layers absent or null (a Go nil slice) count as none', async () => {
  const { layers: _, ...without } = orasEmptyArtifact();
  assert.equal((await parse(without)).blobs.length, 1);
  assert.equal((await parse({ ...without, layers: null })).blobs.length, 1);
});

test('a cosign signature without artifactType reports its config media type', async () => {
  const parsed = await parse(cosignSignature());
  assert.equal(parsed.artifactType, 'application/vnd.oci.image.config.v1+json');
  assert.deepEqual(parsed.blobs[1].annotations, { 'dev.cosignproject.cosign/signature': 'MEUCIQ...' });
});

test('the body may omit mediaType (OCI 1.0), but not name another type', async () => {
  const { mediaType: _, ...without } = ociImage();
  assert.equal((await parse(without)).format, 'oci-manifest');
  await assertRegistryError(() => parse({ ...ociImage(), mediaType: 'application/vnd.oci.image.index.v1+json' }), 'MANIFEST_INVALID', { check: 'mediaType', field: 'mediaType' });
});

test('non-distributable layers with urls are not required blobs; normal layers with urls still are', async () => {
  const doc = ociImage();
  const nondistributable = {
    mediaType: 'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip',
    digest: digestOf('nondistributable'),
    size: 100,
    urls: ['https://example.com/layer'],
  };
  const mirrored = { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: digestOf('mirrored'), size: 100, urls: ['https://mirror.example.com/layer'] };
  const nondistributableHere = { mediaType: 'application/vnd.oci.image.layer.nondistributable.v1.tar', digest: digestOf('here'), size: 100 };
  doc.layers.push(nondistributable, mirrored, nondistributableHere);
  const parsed = await parse(doc);
  assert.deepEqual(parsed.layersWithURLs, [nondistributable, mirrored]);
  assert.deepEqual(
    parsed.blobs.map((b) => b.digest),
    [doc.config.digest, doc.layers[0].digest, doc.layers[1].digest, mirrored.digest, nondistributableHere.digest],
  );
});

test('schemaVersion must be 2', async () => {
  await assertRegistryError(() => parse({ ...ociImage(), schemaVersion: '2' }), 'MANIFEST_INVALID', { check: 'schemaVersion', field: 'schemaVersion' });
});

test('config is required', async () => {
  const { config: _, ...without } = ociImage();
  await assertRegistryError(() => parse(without), 'MANIFEST_INVALID', { field: 'config' });
});

test('subject must be a descriptor', async () => {
  const doc = notationSignature();
  (doc.subject as { digest: string }).digest = 'sha256:short';
  await assertRegistryError(() => parse(doc), 'DIGEST_INVALID', { field: 'subject.digest' });
  await assertRegistryError(() => parse({ ...notationSignature(), subject: [] }), 'MANIFEST_INVALID', { field: 'subject' });
});

test('artifactType must be a string, annotations an object of strings', async () => {
  await assertRegistryError(() => parse({ ...notationSignature(), artifactType: 1 }), 'MANIFEST_INVALID', { check: 'type', field: 'artifactType' });
  await assertRegistryError(() => parse({ ...ociImage(), annotations: ['a'] }), 'MANIFEST_INVALID', { check: 'annotations', field: 'annotations' });
  await assertRegistryError(() => parse({ ...ociImage(), annotations: { n: 1 } }), 'MANIFEST_INVALID', { check: 'annotations', field: 'annotations.n' });
});

test('a descriptor with a bad size, digest, or data', async () => {
  const doc = ociImage();
  (doc.config as { size: unknown }).size = 1e20;
  await assertRegistryError(() => parse(doc), 'MANIFEST_INVALID', { check: 'size', field: 'config.size' });
  const withData = notationSignature();
  (withData.config as { data: unknown }).data = 5;
  await assertRegistryError(() => parse(withData), 'MANIFEST_INVALID', { field: 'config.data' });
});

test('a manifest that also carries manifests is ambiguous', async () => {
  await assertRegistryError(() => parse({ ...ociImage(), manifests: [] }), 'MANIFEST_INVALID', { check: 'ambiguous', field: 'manifests' });
});
