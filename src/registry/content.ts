/**
 * Where the read side of the API gets manifests, blobs and tags: storage, or (with the pull-through
 * cache) storage beside an upstream registry. The handlers read through a ContentSource and do not
 * know which one they have.
 */
import type { Readable } from 'node:stream';
import type { BlobStore } from './blobs.js';
import type { Digest } from './digest.js';
import type { ManifestStore, Reference, StoredManifest } from './manifest-store.js';
import type { Descriptor } from './manifests/index.js';
import type { ListingPage, PageBounds } from './indexing/listing-source.js';
import type { TagStore } from './tags.js';

export interface BlobStat {
  digest: Digest;
  size: number;
  /** the bytes are in storage (a redirect to the storage's own URL may serve them) */
  stored: boolean;
}

export interface ByteRange {
  offset: number;
  length: number;
}

export interface ContentSource {
  /** the manifest a tag or digest names in `name`, or MANIFEST_UNKNOWN / NAME_UNKNOWN */
  manifest(name: string, reference: Reference): Promise<StoredManifest>;
  /** the blob's size, or BLOB_UNKNOWN */
  statBlob(name: string, digest: Digest): Promise<BlobStat>;
  /** the blob's bytes, or `range.length` of them from `range.offset` (a Range request); statBlob first */
  openBlob(name: string, digest: Digest, range?: ByteRange): Promise<Readable>;
  /** the repository's tags, sorted by code unit */
  tags(name: string): Promise<readonly string[]>;
  /** descriptors of the manifests whose `subject` is `subject`, of one artifactType when given; none is not an error */
  referrers(name: string, subject: Digest, artifactType?: string): Promise<Descriptor[]>;
  /** a page of them: at most `n` after `last`, and whether more follow (NAME_UNKNOWN as tags()) */
  tagPage(name: string, page: PageBounds): Promise<ListingPage>;
}

/** the registry's own content: what was pushed to storage */
export class StoredContent implements ContentSource {
  constructor(
    private readonly blobs: BlobStore,
    private readonly manifests: ManifestStore,
    private readonly tagStore: TagStore,
  ) {}

  manifest(name: string, reference: Reference): Promise<StoredManifest> {
    return this.manifests.get(name, reference);
  }

  async statBlob(name: string, digest: Digest): Promise<BlobStat> {
    return { ...(await this.blobs.stat(name, digest)), stored: true };
  }

  openBlob(_name: string, digest: Digest, range?: ByteRange): Promise<Readable> {
    return this.blobs.open(digest, range?.offset, range?.length);
  }

  tags(name: string): Promise<readonly string[]> {
    return this.tagStore.list(name);
  }

  referrers(name: string, subject: Digest, artifactType?: string): Promise<Descriptor[]> {
    return this.manifests.referrers(name, subject, artifactType);
  }

  tagPage(name: string, page: PageBounds): Promise<ListingPage> {
    return this.tagStore.page(name, page);
  }
}
