/** GET /v2/<name>/tags/list (spec 4.2, 4.14): the repository's tags, a page at a time. */
import type { Handler } from '../context.js';
import { DEFAULT_TAGS_PAGE, nextLink, parsePagination } from '../pagination.js';
import type { Route } from '../routes.js';

type TagsRoute = Extract<Route, { kind: 'tags' }>;

export const getTags: Handler<TagsRoute> = async (req, reply, route, services) => {
  const { options, content } = services;
  const page = parsePagination(req, { defaultN: DEFAULT_TAGS_PAGE, max: options.pageMax });
  // listed even for n=0, so an unknown repository is still NAME_UNKNOWN
  const { items, more } = await content.tagPage(route.name, page);
  if (more) reply.header('link', nextLink(options.prefix, `/v2/${route.name}/tags/list`, page.n, items[items.length - 1]));
  return reply.header('content-type', 'application/json; charset=utf-8').send(JSON.stringify({ name: route.name, tags: items }));
};
