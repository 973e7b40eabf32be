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
 * One page walks the storage tree from `last` (the driver's startAfter hint) and stops once it
 * has seen one repository more than the page holds, so a page costs about its own size in driver
 * calls, not the size of the registry. Directories whose name starts with '_' (`_manifests`,
 * `_layers`, `_uploads`) are never descended into.
 */
import { PathNotFoundError, pathSortKey, type StorageDriver } from '../storage/driver.js';
import { REPOSITORIES } from '../storage/layout.js';
import { isRepository } from './repositories.js';

export interface CatalogPage {
  repositories: string[];
  /** more repositories follow the last one of this page */
  more: boolean;
}

export class Catalog {
  constructor(private readonly driver: StorageDriver) {}

  /** at most `n` repositories that sort after `last` (all of them from the start without it) */
  async page(options: { last?: string; n: number }): Promise<CatalogPage> {
    const { n } = options;
    const last = options.last || undefined; // an empty `last` is no `last`
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`catalog page size must be a non-negative integer, got ${n}`);
    const found: string[] = [];
    const lastKey = last === undefined ? undefined : pathSortKey(last);
    try {
      await this.driver.walk(
        REPOSITORIES,
        async (info) => {
          if (!info.isDir) return undefined;
          const base = info.path.slice(info.path.lastIndexOf('/') + 1);
          if (base.startsWith('_')) return 'skip';
          const name = info.path.slice(REPOSITORIES.length + 1);
          // startAfter already keeps earlier entries away; this keeps the promise for any driver
          if (lastKey !== undefined && pathSortKey(name) <= lastKey) return undefined;
          // decided on entering the directory, so `a` comes before `a/0b` (digits sort before '_')
          if (await isRepository(this.driver, name)) {
            found.push(name);
            if (found.length > n) return 'stop';
          }
          return undefined;
        },
        { startAfter: last === undefined ? undefined : `${REPOSITORIES}/${last}` },
      );
    } catch (err) {
      if (err instanceof PathNotFoundError && err.path === REPOSITORIES) return { repositories: [], more: false }; // nothing pushed yet
      throw err;
    }
    return { repositories: found.slice(0, n), more: found.length > n };
  }
}
