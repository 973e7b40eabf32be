/**
 * The part of the catalog one caller may see, a page at a time, for the V2 catalog
 * (http/handlers/catalog.ts) and the web interface's repository search (ui/api.ts); and the part
 * of any keyset-read listing (http/handlers/browse.ts).
 */
import type { Catalog, CatalogPage } from './catalog.js';

/** the largest chunk of the catalog read at once while looking for the caller's visible names */
const MAX_CHUNK = 8192;
/** names one filtered page may read before it answers with what it found and a Link to go on */
export const SCAN_BUDGET = 4 * MAX_CHUNK;

export interface VisiblePage extends CatalogPage {
  /** the page stopped at its scan budget after this name (perhaps one the caller may not see) */
  stoppedAt?: string;
}

/**
 * A page of the repositories the caller may see (2.7 allows a registry to list only those): chunks
 * of the whole catalog are read until `n` visible names (and one more, to know whether a Link is
 * due) are found, the catalog ends, or SCAN_BUDGET names were read. Each chunk is twice the last:
 * a caller who sees everything reads one chunk of the page's size, and one who sees few does not
 * pay a walk per name (reading the page size at a time cost `n=1` over 3,000 invisible
 * repositories 3,000 walks: quadratic). At the budget the page is shorter (even empty) and its
 * Link carries the name it stopped at, sealed (http/catalog-cursor.ts), so no request reads more than
 * the budget and no hidden name is shown. `signal`: the caller gave up (stop reading).
 */
export async function visiblePage(
  catalog: Catalog,
  page: { n: number; last?: string },
  lists: (name: string) => boolean,
  signal?: AbortSignal,
): Promise<VisiblePage> {
  const found: string[] = [];
  let last = page.last;
  let read = 0;
  for (let size = page.n + 1; ; size = Math.max(page.n + 1, Math.min(size * 2, MAX_CHUNK))) {
    signal?.throwIfAborted();
    const chunk = await catalog.page({ n: Math.min(size, Math.max(1, SCAN_BUDGET - read)), last });
    for (const name of chunk.repositories) {
      if (lists(name)) found.push(name);
      if (found.length > page.n) return { repositories: found.slice(0, page.n), more: true };
    }
    if (!chunk.more || chunk.repositories.length === 0) return { repositories: found, more: false };
    last = chunk.repositories[chunk.repositories.length - 1];
    read += chunk.repositories.length;
    if (read >= SCAN_BUDGET) return { repositories: found, more: true, stoppedAt: last };
  }
}

/**
 * The same over any list read by keyset (the metadata index's sorted listings, for the
 * extensions API and the web interface): `n` rows the caller may see, read in chunks (each twice
 * the last) until the page is full, the list ends, or SCAN_BUDGET rows were read; then the page is
 * shorter and `stoppedAt` is where the next one starts (perhaps a row the caller may not see).
 */
export async function visibleRows<T, K>(
  read: (after: K | undefined, limit: number) => Promise<T[]>,
  keyOf: (row: T) => K,
  wanted: (row: T) => boolean,
  n: number,
  start: K | undefined,
): Promise<{ rows: T[]; more: boolean; stoppedAt?: K }> {
  const found: T[] = [];
  let at = start;
  let total = 0;
  for (let size = n + 1; ; size = Math.max(n + 1, Math.min(size * 2, MAX_CHUNK))) {
    const limit = Math.min(size, Math.max(1, SCAN_BUDGET - total));
    const chunk = await read(at, limit);
    for (const row of chunk) {
      if (wanted(row)) found.push(row);
      if (found.length > n) return { rows: found.slice(0, n), more: true };
    }
    if (chunk.length < limit) return { rows: found, more: false };
    at = keyOf(chunk[chunk.length - 1]);
    total += chunk.length;
    if (total >= SCAN_BUDGET) return { rows: found, more: true, stoppedAt: at };
  }
}
