/** The parts of the registry core replication writes through and reads from (as a push would). */
import type { BlobStore } from '../registry/blobs.js';
import { RegistryError } from '../registry/errors.js';
import type { Digest } from '../registry/digest.js';
import type { IndexSink } from '../registry/indexing/sink.js';
import type { ManifestStore } from '../registry/manifest-store.js';
import type { TagStore } from '../registry/tags.js';
import type { UploadSessions } from '../registry/uploads.js';
import type { StorageDriver } from '../storage/driver.js';

export interface ReplicationCore {
  driver: StorageDriver;
  blobs: BlobStore;
  uploads: UploadSessions;
  manifests: ManifestStore;
  tags: TagStore;
  index?: IndexSink;
}

/** the repository's manifest, or undefined when it has none by that digest */
export async function storedManifest(manifests: ManifestStore, name: string, digest: Digest): Promise<{ mediaType: string; content: Buffer } | undefined> {
  try {
    return await manifests.get(name, { digest });
  } catch (err) {
    if (err instanceof RegistryError && (err.code === 'MANIFEST_UNKNOWN' || err.code === 'NAME_UNKNOWN')) return undefined;
    throw err;
  }
}
