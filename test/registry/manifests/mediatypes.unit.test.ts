import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isGenericContentType, manifestFormat, mediaTypesOf, MediaTypes, supportedManifestMediaTypes } from '../../../src/registry/manifests/mediatypes.js';

test('registry and docker spellings name the same format', () => {
  assert.equal(manifestFormat(MediaTypes.schema2), 'schema2');
  assert.equal(manifestFormat(MediaTypes.dockerSchema2), 'schema2');
  assert.equal(manifestFormat(MediaTypes.manifestList), 'manifest-list');
  assert.equal(manifestFormat(MediaTypes.dockerManifestList), 'manifest-list');
  assert.equal(manifestFormat(MediaTypes.signedSchema1), 'schema1');
  assert.equal(manifestFormat(MediaTypes.dockerSignedSchema1), 'schema1');
  assert.equal(manifestFormat(MediaTypes.schema1), 'schema1');
  assert.equal(manifestFormat(MediaTypes.dockerSchema1), 'schema1');
  assert.equal(manifestFormat(MediaTypes.ociManifest), 'oci-manifest');
  assert.equal(manifestFormat(MediaTypes.ociIndex), 'oci-index');
});

test('parameters, case and whitespace do not matter', () => {
  assert.equal(manifestFormat('application/vnd.oci.image.manifest.v1+json; charset=utf-8'), 'oci-manifest');
  assert.equal(manifestFormat(' Application/VND.Docker.Distribution.Manifest.V2+JSON '), 'schema2');
});

test('other types name no format', () => {
  assert.equal(manifestFormat('application/json'), undefined);
  assert.equal(manifestFormat('application/vnd.oci.image.config.v1+json'), undefined);
  assert.equal(manifestFormat(''), undefined);
});

test('generic content types', () => {
  for (const type of ['', 'application/json', 'application/json; charset=utf-8', 'application/octet-stream']) assert.ok(isGenericContentType(type), type);
  assert.ok(!isGenericContentType(MediaTypes.ociIndex));
});

test('mediaTypesOf lists the twins of a format', () => {
  assert.deepEqual(mediaTypesOf('schema2').sort(), [MediaTypes.dockerSchema2, MediaTypes.schema2].sort());
  assert.deepEqual(mediaTypesOf('oci-index'), [MediaTypes.ociIndex]);
  assert.equal(supportedManifestMediaTypes().length, 10);
});
