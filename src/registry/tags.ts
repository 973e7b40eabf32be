/**
 * Tags, their whole life: pointing a tag at a manifest, resolving it, removing the tags of a
 * deleted manifest, and listing (spec 4.2). The tags of a repository are the directories under
 * `_manifests/tags/` (the layout of section 3 of DESIGN.md, as Distribution stores them): each
 * holds a `current/link` to the manifest it names and an `index` of the manifests it has named.
 *
 * Which repositories are known: see repositories.ts.
 * - No `_manifests` directory (never pushed, or only blobs pushed or being uploaded) -> NAME_UNKNOWN.
 *   Distribution 2.8.2 answers NAME_UNKNOWN for these too.
 * - `_manifests` but no tags (pushed by digest only, or every tag deleted) -> []. Distribution
 *   answers NAME_UNKNOWN when the `tags` directory is missing and [] when it is empty, which
 *   depends on the driver (object stores and the in-memory driver drop empty directories, the
 *   filesystem keeps them); berth gives the same answer on every driver.
 */
import { unlessMissing, type StorageDriver } from '../storage/driver.js';
import type { Digest } from './digest.js';
import * as layout from './layout.js';
import { readLink, writeLink } from './links.js';
import { DirectoryCache } from './directory-cache.js';
import { ListingCache, type ListingCacheLimits } from './listing-cache.js';
import { checkRepository } from './repositories.js';

/**
 * Default bounds of the tag-list cache. A name costs some 45 bytes (12 characters: the string and
 * its array slot; a 40-character one about 75), so at most some 11-18 MiB. A repository with more
 * tags than maxNames is listed on every request.
 */
export const TAG_CACHE_LIMITS: ListingCacheLimits = { maxEntries: 1000, maxNames: 250_000 };

const NONE: readonly string[] = Object.freeze([]);

export class TagStore {
  /**
   * Sorted tag lists by repository, each valid while the driver's childrenVersion of the tags
   * directory stays the same (see docs/decisions.md, "Tags and catalog"): the filesystem vouches
   * once a directory is 2 s past its last change, the in-memory driver always, S3 never.
   */
  private readonly cache: ListingCache;
  /** listings under way, by tags directory, with the token they were started under */
  private readonly reading = new Map<string, { version: string; names: Promise<readonly string[]> }>();

  /** what each tag's `current` link names (directory-cache.ts) */
  private readonly links: DirectoryCache;

  constructor(
    private readonly driver: StorageDriver,
    options: { cache?: ListingCacheLimits; links?: DirectoryCache } = {},
  ) {
    this.cache = new ListingCache(options.cache ?? TAG_CACHE_LIMITS);
    this.links = options.links ?? new DirectoryCache(driver);
  }

  /** points `tag` at the manifest `digest` (which must be stored), replacing what it named */
  async tag(name: string, tag: string, digest: Digest): Promise<void> {
    // the index first, then current, in the order Distribution writes them
    await writeLink(this.driver, layout.tagIndexLink(name, tag, digest), digest);
    await writeLink(this.driver, layout.tagCurrentLink(name, tag), digest);
  }

  /** the digest `tag` names; undefined when there is no such tag */
  resolve(name: string, tag: string): Promise<Digest | undefined> {
    return this.links.read(layout.tagCurrentDir(name, tag), 'link', undefined, () => readLink(this.driver, layout.tagCurrentLink(name, tag)));
  }

  /** removes every tag that currently names `digest` (a tag that named it before stays) */
  async untagAll(name: string, digest: Digest): Promise<void> {
    for (const tag of (await unlessMissing(this.driver.listNames(layout.tagsDir(name)))) ?? []) {
      if ((await this.resolve(name, tag)) === digest) await unlessMissing(this.driver.delete(layout.tagDir(name, tag)));
    }
  }

  /**
   * the tag names of `name`, sorted by code unit (tags are ASCII and have no '/'), as listNames
   * gives them; shared with the cache, hence read-only (frozen)
   */
  async list(name: string): Promise<readonly string[]> {
    const dir = layout.tagsDir(name);
    // taken before the listing, so a change during the listing makes the next token differ
    const version = await unlessMissing(this.driver.childrenVersion(dir));
    if (version === undefined) {
      this.cache.delete(dir); // gone, or changed too recently: what it holds is of no more use
      const names = await unlessMissing(this.driver.listNames(dir));
      // tags live under `_manifests`: only without any must the repository be checked (one S3 call less)
      if (names === undefined || names.length === 0) {
        await checkRepository(this.driver, name);
        return NONE;
      }
      return Object.freeze(names);
    }
    // the tags directory exists, so `_manifests` does: a repository, no need to check
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

  private async read(dir: string, version: string): Promise<readonly string[]> {
    const names = await unlessMissing(this.driver.listNames(dir));
    return names === undefined ? NONE : this.cache.set(dir, version, names);
  }

  /** listings and names in the cache */
  get cached(): { entries: number; names: number } {
    return this.cache.size;
  }
}
