/**
 * The catalog (spec 4.13): repository names, one page at a time, in component-wise lexical
 * order (see pathSortKey in src/storage/driver.ts: 'a/b' before 'a-b').
 *
 * A repository is a directory below `repositories/` that holds a `_manifests` directory. That is
 * Distribution's rule since distribution/distribution#3173 (v3); Distribution 2.8.2 looks for
 * `_layers` instead, which lists repositories holding only uploaded blobs and misses those whose
 * layers were all mounted from elsewhere (distribution/distribution#3172). Names nest: `a` and
 * `a/b` can both be repositories.
 *
 * One page lists the tree below `repositories/` depth first, from `last` on, and stops once it has
 * seen one repository more than the page holds, so a page costs about its own size in driver calls,
 * not the size of the registry. A directory is a repository when its listing has `_manifests`; one
 * listing per directory tells both that and which nested names to visit. Names starting with '_'
 * (`_manifests`, `_layers`, `_uploads`) are never descended into.
 *
 * With the metadata index in sync, a page is one query of it instead, in the same order
 * (indexing/listing-source.ts, metadata/listings.ts); the walk answers otherwise.
 */
import type { StorageDriver } from '../storage/driver.js';
import { REPOSITORIES } from './layout.js';
import type { ListingCacheLimits } from './cache/listing-cache.js';
import { Listings } from './cache/listings.js';
import { listsRepository } from './repositories.js';
import type { ListingSource } from './indexing/listing-source.js';

/**
 * The catalog's listing cache: a directory listed a second time is kept while its token holds, so
 * no request reads a directory that has not changed (a 10,000-entry namespace, nor a repository's
 * own few names: its token, one stat, costs less than listing it). A catalog paged through once
 * lists each directory once, without a token. Some 300 bytes a repository: 20,000 listings are
 * about 6 MiB, 200,000 names (a namespace that big) 10-15 MiB.
 */
export const CATALOG_CACHE_LIMITS: ListingCacheLimits = { maxEntries: 20_000, maxNames: 200_000 };

export interface CatalogPage {
  repositories: string[];
  /** more repositories follow the last one of this page */
  more: boolean;
}

export class Catalog {
  private readonly listings: Listings;

  /** the metadata index's listings, when it is on: asked before storage (indexing/listing-source.ts) */
  private readonly source?: ListingSource;

  constructor(driver: StorageDriver, options: { cache?: ListingCacheLimits; source?: ListingSource } = {}) {
    this.listings = new Listings(driver, { limits: options.cache ?? CATALOG_CACHE_LIMITS, cacheWhenSeenTwice: true });
    this.source = options.source;
  }

  /** at most `n` repositories that sort after `last` (all of them from the start without it) */
  async page(options: { last?: string; n: number }): Promise<CatalogPage> {
    const { n } = options;
    const last = options.last || undefined; // an empty `last` is no `last`
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`catalog page size must be a non-negative integer, got ${n}`);
    const indexed = await this.source?.catalogPage({ n, last });
    if (indexed) return { repositories: indexed.items, more: indexed.more };
    const found: string[] = [];
    const top = await this.listings.names(REPOSITORIES);
    if (top === undefined) return { repositories: [], more: false }; // nothing pushed yet
    await this.visit('', top, last?.split('/'), found, n + 1);
    return { repositories: found.slice(0, n), more: found.length > n };
  }

  /**
   * Adds the repositories among `names` (the listing of the directory of name prefix `prefix`)
   * and below them to `found`, in order, until it holds `limit`; false once it does. `after`: the
   * components of `last` below this directory, when `last` lies in it.
   */
  private async visit(prefix: string, names: readonly string[], after: string[] | undefined, found: string[], limit: number): Promise<boolean> {
    for (const name of names) {
      if (name.startsWith('_')) continue;
      // components compare as whole strings: `a` < `a/x` < `a-b`, the order of pathSortKey
      if (after !== undefined && name < after[0]) continue; // it and all below it come before `last`
      const inHint = after !== undefined && name === after[0]; // `last` is this name or below it
      const children = await this.listings.names(`${REPOSITORIES}/${prefix}${name}`);
      if (children === undefined) continue; // a file, or deleted since the listing
      if (!inHint && listsRepository(children)) {
        found.push(prefix + name);
        if (found.length >= limit) return false;
      }
      const below = inHint && after.length > 1 ? after.slice(1) : undefined;
      if (!(await this.visit(`${prefix}${name}/`, children, below, found, limit))) return false;
    }
    return true;
  }
}
