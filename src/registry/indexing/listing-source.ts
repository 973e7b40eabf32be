/**
 * Where the catalog and the tag lists come from (the one seam of the listings): the metadata index
 * once it is in sync, storage otherwise. The stores (catalog.ts, tags.ts) ask this first and walk
 * storage when it has no answer, so the answer is the same either way, only its cost differs.
 *
 * In sync means built: `index_state.rebuilt` is set (by `berth index rebuild` or the start-up
 * build, startup-build.ts), after which the request path keeps the index up to date. Until then
 * every listing looks again (one row read), so an instance sees the build another one finished.
 * An index that fails to answer is not in sync for that request: storage answers, and a warning
 * is logged.
 */
import type { Logger } from 'pino';

/** a page of names and whether more follow (metadata/listings.ts) */
export interface ListingPage {
  items: string[];
  more: boolean;
}

export interface PageBounds {
  n: number;
  last?: string;
}

/** the listings the index answers */
export interface IndexedListings {
  catalogPage(page: PageBounds): Promise<ListingPage>;
  /** undefined: the catalog does not list the repository */
  tagPage(name: string, page: PageBounds): Promise<ListingPage | undefined>;
}

export class ListingSource {
  private built = false;

  constructor(
    private readonly index: IndexedListings,
    /** whether the index was built (reads `index_state.rebuilt`) */
    private readonly isBuilt: () => Promise<boolean>,
    private readonly logger: Pick<Logger, 'warn'>,
  ) {}

  /** the index answers from now on (the start-up build finished) */
  markBuilt(): void {
    this.built = true;
  }

  /** the index is in sync (false until the build is seen finished) */
  async inSync(): Promise<boolean> {
    if (!this.built) this.built = await this.isBuilt();
    return this.built;
  }

  /** the catalog's page from the index; undefined: storage answers */
  catalogPage(page: PageBounds): Promise<ListingPage | undefined> {
    return this.ask('catalog', () => this.index.catalogPage(page));
  }

  /** the tags' page from the index; null: the repository is not known; undefined: storage answers */
  tagPage(name: string, page: PageBounds): Promise<ListingPage | null | undefined> {
    return this.ask('tags', async () => (await this.index.tagPage(name, page)) ?? null);
  }

  private async ask<T>(what: string, read: () => Promise<T>): Promise<T | undefined> {
    try {
      if (!(await this.inSync())) return undefined;
      return await read();
    } catch (err) {
      this.logger.warn({ err, listing: what }, 'the metadata index did not answer a listing; storage answers it');
      return undefined;
    }
  }
}
