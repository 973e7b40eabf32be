/**
 * Directory listings read through a ListingCache: the tag lists and the catalog's directories. A
 * listing is served from the cache while the driver hands out the same childrenVersion token for
 * the directory (see docs/decisions.md, "Tags and catalog"); the filesystem vouches once a
 * directory is 2 s past its last change, the in-memory driver always, S3 never.
 */
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import { ListingCache, type ListingCacheLimits } from './listing-cache.js';

export interface ListingsOptions {
  limits: ListingCacheLimits;
  /**
   * false (default): every directory goes through the cache from its first listing. true: a
   * directory is listed plainly the first time and cached from its second listing on: the token
   * costs a call of its own, which a directory listed once (a catalog paged through once) would
   * pay for nothing.
   */
  cacheWhenSeenTwice?: boolean;
}

export class Listings {
  private readonly cache: ListingCache;
  /** listings under way, by directory, with the token they were started under */
  private readonly reading = new Map<string, { version: string; names: Promise<readonly string[] | undefined> }>();
  /** with cacheWhenSeenTwice: directories listed plainly once (in order of insertion, bounded) */
  private readonly seen?: Set<string>;

  constructor(
    private readonly driver: StorageDriver,
    options: ListingsOptions,
  ) {
    this.cache = new ListingCache(options.limits);
    if (options.cacheWhenSeenTwice) this.seen = new Set();
  }

  /** the sorted names in `dir` (frozen: shared with the cache); undefined when it does not exist */
  async names(dir: string): Promise<readonly string[] | undefined> {
    if (this.seen && !this.seen.has(dir)) {
      this.seen.add(dir);
      if (this.seen.size > this.cache.limits.maxEntries) this.seen.delete(this.seen.values().next().value!);
      return this.plain(dir);
    }
    // taken before the listing, so a change during the listing makes the next token differ
    const version = await unlessMissing(this.driver.childrenVersion(dir));
    if (version === undefined) {
      this.cache.delete(dir); // gone, or changed too recently: what it holds is of no more use
      return this.plain(dir);
    }
    const cached = this.cache.get(dir, version);
    if (cached !== undefined) return cached;
    // Requests that got the same token share one listing: it was read after that token was first
    // handed out, and nothing changed until this request got it. (A restart under load reads the
    // directory once, not once per waiting request.)
    const pending = this.reading.get(dir);
    if (pending?.version === version) return pending.names;
    const names = this.read(dir, version);
    this.reading.set(dir, { version, names });
    try {
      return await names;
    } finally {
      if (this.reading.get(dir)?.names === names) this.reading.delete(dir);
    }
  }

  /** listings and names in the cache */
  get size(): { entries: number; names: number } {
    return this.cache.size;
  }

  private async plain(dir: string): Promise<readonly string[] | undefined> {
    const names = await unlessMissing(this.driver.listNames(dir));
    return names && Object.freeze(names);
  }

  private async read(dir: string, version: string): Promise<readonly string[] | undefined> {
    const names = await unlessMissing(this.driver.listNames(dir));
    return names === undefined ? undefined : this.cache.set(dir, version, names);
  }
}
