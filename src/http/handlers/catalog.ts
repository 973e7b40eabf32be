/** GET /v2/_catalog (spec 4.13, 4.14): repository names, a page at a time. */
import type { Handler } from '../context.js';
import { nextLink, parsePagination } from '../pagination.js';
import type { Route } from '../routes.js';

type CatalogRoute = Extract<Route, { kind: 'catalog' }>;

export const getCatalog: Handler<CatalogRoute> = async (req, reply, _route, services) => {
  const { config, catalog } = services;
  const max = config.catalog.maxentries;
  // without n the page is capped at catalog.maxentries, with a Link when more exist (4.13)
  const page = parsePagination(req, { defaultN: max, max });
  // n=0 is an empty page without a Link: no storage to read (see pagination.ts)
  const { repositories, more } = page.n === 0 ? { repositories: [], more: false } : await catalog.page(page);
  if (more) reply.header('link', nextLink(config.http.prefix, '/v2/_catalog', page.n, repositories[repositories.length - 1]));
  return reply.header('content-type', 'application/json; charset=utf-8').send(JSON.stringify({ repositories }));
};
