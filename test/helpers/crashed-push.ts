/**
 * A push whose process "dies" right after storage took the manifest: stores whose index sink
 * fails on the manifest and tag writes (the index is never told), the image's blobs stored and
 * linked, then the manifest PUT by tag, which rejects with "killed". For the tests that the
 * rebuild and the reconciler repair what such a crash leaves.
 */
import assert from 'node:assert/strict';
import type { MetadataIndex } from '../../src/metadata/metadata-index.js';
import { BlobStore } from '../../src/registry/blobs.js';
import type { Digest } from '../../src/registry/digest.js';
import type { IndexSink } from '../../src/registry/indexing/sink.js';
import { blobData } from '../../src/registry/layout.js';
import { ManifestStore } from '../../src/registry/manifest-store.js';
import { TagStore } from '../../src/registry/tags.js';
import type { StorageDriver } from '../../src/storage/driver.js';
import { buildImage, type Image } from './images.js';

export async function crashedPush(driver: StorageDriver, index: MetadataIndex, name: string, tag: string): Promise<{ image: Image; tags: TagStore }> {
  const crashing: IndexSink = {
    manifestStored: () => Promise.reject(new Error('killed')),
    manifestRemoved: (r, d) => index.manifestRemoved(r, d),
    tagMoved: () => Promise.reject(new Error('killed')),
    tagRemoved: (r, t) => index.tagRemoved(r, t),
    blobLinked: (r, d, s) => index.blobLinked(r, d, s),
    blobUnlinked: (r, d) => index.blobUnlinked(r, d),
  };
  const tags = new TagStore(driver, { index: crashing });
  const blobs = new BlobStore(driver, undefined, { index: crashing });
  const manifests = new ManifestStore(driver, blobs, tags, { index: crashing });
  const image = buildImage('oci-manifest');
  for (const blob of image.blobs) {
    await driver.putContent(blobData(blob.digest as Digest), blob.data);
    await blobs.link(name, blob.digest as Digest);
  }
  await assert.rejects(manifests.put(name, { tag }, image.mediaType, image.body), /killed/);
  return { image, tags };
}
