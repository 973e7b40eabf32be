/**
 * Blobs: content stored once under blobs/, made visible to a repository by a link in its _layers.
 * A repository can read a blob only through its own link.
 */
import type { Readable } from 'node:stream';
import { PathNotFoundError, unlessMissing, type RedirectRequest, type StorageDriver } from '../storage/driver.js';
import * as layout from './layout.js';
import type { Digest } from './digest.js';
import { DirectoryCache } from './cache/directory-cache.js';
import { RegistryError } from './errors.js';
import type { IndexSink } from './indexing/sink.js';
import { linksTo, writeLink } from './links.js';

export interface BlobInfo {
  digest: Digest;
  size: number;
}

/**
 * Online garbage collection's hooks (gc/touch.ts): every place that tells a client a blob exists
 * or accepts a reference to it records the use first, then checks the content.
 */
export interface BlobGuard {
  /** records the use of these blobs (before their content is checked) */
  touch(digests: Iterable<string>): Promise<void>;
  /** puts a blob a collection moved to its trash back under blobs/; false when it is not there */
  rescue(digest: Digest): Promise<boolean>;
  /** returns once nothing is deleting tags or manifests in `name` (a manifest PUT then reads back what it wrote) */
  settle(name: string): Promise<void>;
}

export class BlobStore {
  /** which layer links exist (directory-cache.ts) */
  private readonly links: DirectoryCache;

  constructor(
    private readonly driver: StorageDriver,
    private readonly guard?: BlobGuard,
    options: { links?: DirectoryCache; index?: IndexSink } = {},
  ) {
    this.links = options.links ?? new DirectoryCache(driver);
    this.index = options.index;
  }

  /** the metadata index, told of every link and unlink after storage (indexing/sink.ts) */
  private readonly index?: IndexSink;

  /** size of a blob linked into `name`, or 404 BLOB_UNKNOWN */
  async stat(name: string, digest: Digest): Promise<BlobInfo> {
    if (!(await this.isLinked(name, digest))) throw blobUnknown(digest);
    await this.touch([digest]);
    const size = await this.storedSize(digest);
    if (size === undefined) throw blobUnknown(digest);
    return { digest, size };
  }

  /** true when `name` links to the blob (its content need not be checked) */
  isLinked(name: string, digest: Digest): Promise<boolean> {
    return this.links.read(layout.layerLinkDir(name, digest), 'link', false, () => linksTo(this.driver, layout.layerLink(name, digest), digest));
  }

  /** size of the stored content, whoever links to it; undefined when it is not stored */
  async storedSize(digest: Digest): Promise<number | undefined> {
    const size = (await unlessMissing(this.driver.stat(layout.blobData(digest))))?.size;
    if (size !== undefined || !this.guard || !(await this.guard.rescue(digest))) return size;
    return (await unlessMissing(this.driver.stat(layout.blobData(digest))))?.size;
  }

  /** records the use of blobs about to be checked and relied on (online garbage collection) */
  async touch(digests: Iterable<string>): Promise<void> {
    await this.guard?.touch(digests);
  }

  /**
   * after a manifest PUT's writes: waits while a deleter works in `name` (gc/deleting.ts); false
   * when nothing deletes while the registry serves (no guard), so there is nothing to read back
   */
  async settle(name: string): Promise<boolean> {
    if (!this.guard) return false;
    await this.guard.settle(name);
    return true;
  }

  /** the blob's bytes from `offset`, `length` of them (to the end when undefined) */
  async open(digest: Digest, offset = 0, length?: number): Promise<Readable> {
    try {
      return await this.driver.reader(layout.blobData(digest), offset, length);
    } catch (err) {
      if (err instanceof PathNotFoundError) throw blobUnknown(digest);
      throw err;
    }
  }

  redirectURL(req: RedirectRequest, digest: Digest): Promise<string | undefined> {
    return this.driver.redirectURL(req, layout.blobData(digest));
  }

  /** links the blob into `name`; `size`, when the caller knows it, saves the index a stat */
  async link(name: string, digest: Digest, size?: number): Promise<void> {
    await this.linkBeforeStored(name, digest);
    await this.indexLink(name, digest, size);
  }

  /**
   * the link alone, for a blob whose content is stored after it (an upload's completion), whose
   * caller tells the index (indexLink) once it is: asking then would cost a stat and a rescue
   * attempt from online collection's trash that both miss (docs/performance.md)
   */
  async linkBeforeStored(name: string, digest: Digest): Promise<void> {
    await writeLink(this.driver, layout.layerLink(name, digest), digest);
  }

  /** tells the index that `name` links the blob, once its content is stored (nothing when it is not) */
  async indexLink(name: string, digest: Digest, size?: number): Promise<void> {
    if (!this.index) return;
    const stored = size ?? (await this.storedSize(digest));
    if (stored !== undefined) await this.index.blobLinked(name, digest, stored);
  }

  /** removes `name`'s link (the content stays for other repositories and garbage collection) */
  async unlink(name: string, digest: Digest): Promise<void> {
    if (!(await this.isLinked(name, digest))) throw blobUnknown(digest);
    await this.driver.delete(layout.layerLinkDir(name, digest));
    await this.index?.blobUnlinked(name, digest);
  }

  /** 'mount': link a blob that `from` links to into `name`; false when `from` has no such blob */
  async mount(from: string, name: string, digest: Digest): Promise<BlobInfo | undefined> {
    if (!(await this.isLinked(from, digest))) return undefined;
    await this.touch([digest]);
    const size = await this.storedSize(digest);
    if (size === undefined) return undefined;
    await this.link(name, digest, size);
    return { digest, size };
  }
}

export function blobUnknown(digest: Digest): RegistryError {
  return new RegistryError('BLOB_UNKNOWN', undefined, { detail: { digest } });
}
