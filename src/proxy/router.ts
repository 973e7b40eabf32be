/** Reads of a repository under a mirror prefix go to that mirror's cache; the rest to storage. */
import type { Readable } from 'node:stream';
import type { BlobStat, ByteRange, ContentSource } from '../registry/content.js';
import type { Digest } from '../registry/digest.js';
import type { ListingPage, PageBounds } from '../registry/indexing/listing-source.js';
import type { Reference, StoredManifest } from '../registry/manifest-store.js';
import type { Descriptor } from '../registry/manifests/index.js';

export class MirrorRouter implements ContentSource {
  constructor(
    /** the cache a repository's reads go to, or undefined for the registry's own */
    private readonly cacheOf: (name: string) => ContentSource | undefined,
    private readonly stored: ContentSource,
  ) {}

  private source(name: string): ContentSource {
    return this.cacheOf(name) ?? this.stored;
  }

  manifest(name: string, reference: Reference): Promise<StoredManifest> {
    return this.source(name).manifest(name, reference);
  }

  statBlob(name: string, digest: Digest): Promise<BlobStat> {
    return this.source(name).statBlob(name, digest);
  }

  openBlob(name: string, digest: Digest, range?: ByteRange): Promise<Readable> {
    return this.source(name).openBlob(name, digest, range);
  }

  tags(name: string): Promise<readonly string[]> {
    return this.source(name).tags(name);
  }

  referrers(name: string, subject: Digest, artifactType?: string): Promise<Descriptor[]> {
    return this.source(name).referrers(name, subject, artifactType);
  }

  tagPage(name: string, page: PageBounds): Promise<ListingPage> {
    return this.source(name).tagPage(name, page);
  }
}
