/** GET /v2/_catalog (spec 4.13, 4.14): repository names, a page at a time. */
import type { Handler } from '../context.js';
import { grantOf } from '../grants.js';
import { nextLink, parsePagination } from '../pagination.js';
import type { Route } from '../routes.js';
import type { Catalog, CatalogPage } from '../../registry/catalog.js';

type CatalogRoute = Extract<Route, { kind: 'catalog' }>;

export const getCatalog: Handler<CatalogRoute> = async (req, reply, _route, services) => {
  const { options, catalog, catalogCursors } = services;
  const max = options.pageMax;
  // without n the page is capped at catalog.maxentries, with a Link when more exist (4.13)
  const page = parsePagination(req, { defaultN: max, max });
  if (page.last !== undefined) page.last = catalogCursors.open(page.last);
  // n=0 is an empty page without a Link: no storage to read (see pagination.ts)
  const lists = grantOf(req).lists;
  const { repositories, more, stoppedAt } = page.n === 0 ? { repositories: [], more: false } : await visiblePage(catalog, page, lists);
  if (more) reply.header('link', nextLink(options.prefix, '/v2/_catalog', page.n, stoppedAt ? catalogCursors.seal(stoppedAt) : repositories[repositories.length - 1]));
  return reply.header('content-type', 'application/json; charset=utf-8').send(JSON.stringify({ repositories }));
};

/** the largest chunk of the catalog read at once while looking for the caller's visible names */
const MAX_CHUNK = 8192;
/** names one filtered page may read before it answers with what it found and a Link to go on */
export const SCAN_BUDGET = 4 * MAX_CHUNK;

interface VisiblePage extends CatalogPage {
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
 * Link carries the sealed name it stopped at (catalog-cursor.ts), so no request reads more than
 * the budget and no hidden name is shown.
 */
async function visiblePage(catalog: Catalog, page: { n: number; last?: string }, lists: (name: string) => boolean): Promise<VisiblePage> {
  const found: string[] = [];
  let last = page.last;
  let read = 0;
  for (let size = page.n + 1; ; size = Math.max(page.n + 1, Math.min(size * 2, MAX_CHUNK))) {
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
