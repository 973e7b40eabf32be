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
import { listDigests } from './digest-dirs.js';
import { KeyedLock } from './keyed-lock.js';
import * as layout from './layout.js';
import { linksTo, readLink, writeLink } from './links.js';
import { DirectoryCache } from './cache/directory-cache.js';
import type { ListingCacheLimits } from './cache/listing-cache.js';
import { Listings } from './cache/listings.js';
import { checkRepository, nameUnknown } from './repositories.js';
import { pageOf } from './pages.js';
import { mapLimited, REQUEST_IO_CONCURRENCY } from './pool.js';
import type { IndexSink } from './indexing/sink.js';
import type { ListingPage, ListingSource, PageBounds } from './indexing/listing-source.js';

/**
 * Default bounds of the tag-list cache. A name costs some 45 bytes (12 characters: the string and
 * its array slot; a 40-character one about 75), so at most some 11-18 MiB. A repository with more
 * tags than maxNames is listed on every request.
 */
export const TAG_CACHE_LIMITS: ListingCacheLimits = { maxEntries: 1000, maxNames: 250_000 };

const NONE: readonly string[] = Object.freeze([]);

/** how often a push of a new tag that never moves tries to claim it while another push races it, and the pause between (ms, times the attempt) */
const CLAIM_ATTEMPTS = 5;
const CLAIM_BACKOFF_MS = 20;

export class TagStore {
  /**
   * Sorted tag lists by repository, each valid while the driver's childrenVersion of the tags
   * directory stays the same (see docs/decisions.md, "Tags and catalog").
   */
  private readonly listings: Listings;
  /** what each tag's `current` link names (directory-cache.ts) */
  private readonly links: DirectoryCache;

  constructor(
    private readonly driver: StorageDriver,
    options: { cache?: ListingCacheLimits; links?: DirectoryCache; index?: IndexSink; source?: ListingSource } = {},
  ) {
    this.listings = new Listings(driver, { limits: options.cache ?? TAG_CACHE_LIMITS });
    this.links = options.links ?? new DirectoryCache(driver);
    this.index = options.index;
    this.source = options.source;
  }

  /** the metadata index's listings, when it is on: asked before storage (indexing/listing-source.ts) */
  private readonly source?: ListingSource;

  /** the metadata index, told of every tag moved or removed after storage (indexing/sink.ts) */
  private readonly index?: IndexSink;

  /** points `tag` at the manifest `digest` (which must be stored), replacing what it named; `pushedBy`: the user, for the index's history */
  async tag(name: string, tag: string, digest: Digest, pushedBy?: string): Promise<void> {
    await this.point(name, tag, digest);
    await this.index?.tagMoved(name, tag, digest, pushedBy);
  }

  /**
   * tag()'s storage writes without telling the metadata index: for a manifest PUT, which tells
   * it of the manifest and its tags in one write (ManifestStore.put)
   */
  async point(name: string, tag: string, digest: Digest): Promise<void> {
    // the index first, then current, in the order Distribution writes them
    await writeLink(this.driver, layout.tagIndexLink(name, tag, digest), digest);
    await writeLink(this.driver, layout.tagCurrentLink(name, tag), digest);
  }

  /** writes of tags that never move (tagOnce), one at a time per tag within this process */
  private readonly onceLocks = new KeyedLock();

  /**
   * points a tag that must never move (an immutable tag, src/policies/) at `digest`: written when the
   * tag is new or names `digest` already; otherwise nothing is written and the digest it names (or a
   * concurrent push claims) is returned. Within this process the tag's lock orders the pushes; across
   * instances storage decides: a new tag's index entry is written first and the index listed, and a
   * push that finds another digest's entry (its revision stored) withdraws its own. Of two racing
   * pushes at most one finds only its own entry; when both withdrew, each tries again after a random
   * pause, and is refused once the tag names the other (docs/decisions.md, "Immutable tags"). Like
   * point(), it writes storage only: the manifest store tells the index of the manifest and its tags.
   */
  tagOnce(name: string, tag: string, digest: Digest): Promise<Digest | undefined> {
    return this.onceLocks.run(`${name}:${tag}`, async () => {
      for (let attempt = 1; ; attempt++) {
        const current = await readLink(this.driver, layout.tagCurrentLink(name, tag));
        if (current !== undefined && current !== digest) return current;
        const rival = current === undefined ? await this.claim(name, tag, digest) : undefined;
        if (rival === undefined) break;
        // both racers withdrew (neither wins): after a random pause one of them finds the tag free
        if (attempt === CLAIM_ATTEMPTS) return rival;
        await new Promise((resolve) => setTimeout(resolve, Math.random() * CLAIM_BACKOFF_MS * attempt));
      }
      await this.point(name, tag, digest);
      return undefined;
    });
  }

  /** writes `digest`'s entry in the tag's index; when another pushed digest has one, withdraws it and returns that digest */
  private async claim(name: string, tag: string, digest: Digest): Promise<Digest | undefined> {
    await writeLink(this.driver, layout.tagIndexLink(name, tag, digest), digest);
    const { digests } = await listDigests(this.driver, (algorithm) => layout.tagIndexDir(name, tag, algorithm));
    for (const other of digests) {
      if (other === digest || !(await linksTo(this.driver, layout.manifestRevisionLink(name, other), other))) continue;
      await unlessMissing(this.driver.delete(layout.tagIndexEntryDir(name, tag, digest)));
      return other as Digest;
    }
    return undefined;
  }

  /** the tags that currently name `digest` (read from storage) */
  async naming(name: string, digest: Digest): Promise<string[]> {
    const tags = (await unlessMissing(this.driver.listNames(layout.tagsDir(name)))) ?? [];
    const named = await mapLimited(tags, REQUEST_IO_CONCURRENCY, async (tag) => (await readLink(this.driver, layout.tagCurrentLink(name, tag))) === digest);
    return tags.filter((_, i) => named[i]);
  }

  /** the digest `tag` names; undefined when there is no such tag */
  resolve(name: string, tag: string): Promise<Digest | undefined> {
    return this.links.read(layout.tagCurrentDir(name, tag), 'link', undefined, () => readLink(this.driver, layout.tagCurrentLink(name, tag)));
  }

  /** removes every tag that currently names `digest` (a tag that named it before stays) */
  async untagAll(name: string, digest: Digest): Promise<void> {
    for (const tag of (await unlessMissing(this.driver.listNames(layout.tagsDir(name)))) ?? []) {
      if ((await this.resolve(name, tag)) !== digest) continue;
      await unlessMissing(this.driver.delete(layout.tagDir(name, tag)));
      await this.index?.tagRemoved(name, tag);
    }
  }

  /**
   * the tag names of `name`, sorted by code unit (tags are ASCII and have no '/'), as listNames
   * gives them; shared with the cache, hence read-only (frozen)
   */
  async list(name: string): Promise<readonly string[]> {
    const names = await this.listings.names(layout.tagsDir(name));
    // tags live under `_manifests`: only without any must the repository be checked (one S3 call less)
    if (names === undefined || names.length === 0) {
      await checkRepository(this.driver, name);
      return NONE;
    }
    return names;
  }

  /** a page of the tag names of `name`: at most `n` after `last`, and whether more follow; NAME_UNKNOWN as list() */
  async page(name: string, page: PageBounds): Promise<ListingPage> {
    const indexed = await this.source?.tagPage(name, page);
    if (indexed === null) throw nameUnknown(name);
    return indexed ?? pageOf(await this.list(name), page);
  }

  /** listings and names in the cache */
  get cached(): { entries: number; names: number } {
    return this.listings.size;
  }
}
