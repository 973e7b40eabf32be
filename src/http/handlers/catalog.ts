/** GET /v2/_catalog (spec 4.13, 4.14): repository names, a page at a time. */
import type { Handler } from '../context.js';
import { grantOf } from '../grants.js';
import { nextLink, parsePagination } from '../pagination.js';
import type { Route } from '../routes.js';
import { visiblePage } from '../../registry/visible-catalog.js';

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
