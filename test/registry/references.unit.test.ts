/** referencesOf: what a stored manifest points at, for every format, read leniently. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { referencesOf } from '../../src/registry/manifests/index.js';
import { manifestReferences } from '../../src/registry/manifests/index.js';
import { buildxIndex, digestOf, dockerImage, dockerManifestList, notationSignature, ociImage, toBody } from './manifests/examples.js';

const strip = ({ mediaType, digest, size }: { mediaType: string; digest: string; size?: number }) => ({ mediaType, digest, ...(size !== undefined && { size }) });

describe('referencesOf', () => {
  it('an image: config and layers (foreign ones too)', () => {
    const doc = dockerImage();
    assert.deepEqual(referencesOf(toBody(doc)), { manifests: [], config: strip(doc.config), layers: doc.layers.map(strip) });
    const oci = ociImage();
    assert.deepEqual(referencesOf(toBody(oci)).layers, oci.layers.map(strip));
  });

  it('an index or list: its children', () => {
    for (const doc of [dockerManifestList(), buildxIndex()]) {
      const refs = referencesOf(toBody(doc));
      assert.deepEqual(refs.manifests, doc.manifests.map(strip));
      assert.deepEqual(refs.layers, []);
      assert.equal(refs.config, undefined);
    }
  });

  it('an artifact: its subject', () => {
    const doc = notationSignature();
    assert.deepEqual(referencesOf(toBody(doc)).subject, strip(doc.subject));
  });

  it('first generation: fsLayers as layers without size', () => {
    const refs = referencesOf(toBody({ schemaVersion: 1, name: 'a', tag: 'b', fsLayers: [{ blobSum: digestOf('l1') }, { blobSum: digestOf('l2') }] }));
    assert.deepEqual(refs.layers, [
      { mediaType: 'application/vnd.docker.container.image.rootfs.diff+x-gtar', digest: digestOf('l1') },
      { mediaType: 'application/vnd.docker.container.image.rootfs.diff+x-gtar', digest: digestOf('l2') },
    ]);
  });

  it('unreadable content or fields yield nothing', () => {
    for (const body of ['not json', 'null', '[1]', '{"layers": 3, "config": "x", "manifests": [null, {"digest": 1}]}']) {
      assert.deepEqual(referencesOf(Buffer.from(body)), { manifests: [], layers: [] }, body);
    }
  });

  it('events list children, config and layers, not the subject', () => {
    const doc = notationSignature();
    assert.deepEqual(manifestReferences(toBody(doc)), [strip(doc.config), ...doc.layers.map(strip)]);
  });
});
