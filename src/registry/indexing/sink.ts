/**
 * What the core tells the metadata index after each write to storage (the index is
 * src/metadata/metadata-index.ts; features/metadata.ts hands it to the stores). The stores call
 * it after storage was written and await it, in the same request; every call is idempotent, so a
 * retried request or a later rebuild leaves the same rows. A failure fails the request: storage
 * has the write, the index does not, and `berth index rebuild` repairs that.
 */
import type { ManifestRecord, RepositoryFacts } from '../../metadata/records.js';

export interface IndexSink {
  /**
   * the manifest is stored and each of `tags` names it in storage: one write for the whole PUT
   * (one transaction); `pushedBy`: the authenticated user who pushed, if any
   */
  manifestStored(record: ManifestRecord, tags?: readonly string[], pushedBy?: string): Promise<void>;
  /** the manifest's revision is gone (its tags were reported by tagRemoved first) */
  manifestRemoved(repository: string, digest: string): Promise<void>;
  /** the tag names `digest` now; `pushedBy`: the authenticated user who pushed, if any */
  tagMoved(repository: string, tag: string, digest: string, pushedBy?: string): Promise<void>;
  tagRemoved(repository: string, tag: string): Promise<void>;
  blobLinked(repository: string, digest: string, size: number): Promise<void>;
  blobUnlinked(repository: string, digest: string): Promise<void>;
}

/**
 * What the passes outside the request path (garbage collection, retention, expiry, the proxy's
 * fills, the reconciler) tell the index: a repository they changed, read again from storage whole
 * (reindex.ts). MetadataIndex is one; a pass without an index is given none.
 */
export interface RepositorySink {
  /** how many writes of the request path the repository has had: read before storage is */
  changesOf(name: string): Promise<number>;
  /**
   * the repository's rows become `facts` (idempotent); with `expectChanges`, only if the request
   * path wrote nothing to it since (else metadata-index.ts's RepositoryChangedError: read again)
   */
  replaceRepository(facts: RepositoryFacts, hasManifests: boolean, expectChanges?: number): Promise<void>;
  /** storage no longer has the repository; false: the request path wrote to it since `expectChanges` */
  dropRepository(name: string, expectChanges?: number): Promise<boolean>;
}
