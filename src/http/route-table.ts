/**
 * Every endpoint of the V2 API in one table, as Distribution's registry/api/v2/descriptors.go
 * describes them: for each route (routes.ts matches the path) and method, the handler and the
 * access it needs (spec section 5). Dispatch, the 405 `Allow` header and authorization all read
 * this table, so a new endpoint is one entry here.
 */
import { CATALOG_ACCESS, type AccessRequest, type RepositoryAction } from '../auth/access.js';
import type { Handler } from './context.js';
import { getBase } from './handlers/base.js';
import { getDiscover, getHistory, getRepositories, getSearch, getTagPage, getUsage } from './handlers/browse.js';
import { getQuotas } from './handlers/quotas.js';
import { deleteBlob, getBlob } from './handlers/blobs.js';
import { getCatalog } from './handlers/catalog.js';
import { deleteManifest, getManifest, putManifest } from './handlers/manifests.js';
import { getReferrers } from './handlers/referrers.js';
import { getTags } from './handlers/tags.js';
import { deleteUpload, getUpload, patchUpload, postUpload, putUpload } from './handlers/uploads.js';
import type { Route } from './routes.js';

/**
 * What a request needs: nothing beyond authentication (`GET /v2/`), the catalog, or an action on
 * the route's repository. The pull on a mount's source is not listed: the upload handler asks for
 * it and falls back to a plain upload without it.
 */
type Access = 'authenticated' | 'catalog' | RepositoryAction;

interface Endpoint<R extends Route> {
  handler: Handler<R>;
  access: Access;
}

type RouteTable = { [K in Route['kind']]: Record<string, Endpoint<Extract<Route, { kind: K }>>> };

/** per route, its methods in the order the `Allow` header lists them; any other method is 405 UNSUPPORTED */
const ROUTES: RouteTable = {
  base: { GET: { handler: getBase, access: 'authenticated' }, HEAD: { handler: getBase, access: 'authenticated' } },
  catalog: { GET: { handler: getCatalog, access: 'catalog' }, HEAD: { handler: getCatalog, access: 'catalog' } },
  tags: { GET: { handler: getTags, access: 'pull' }, HEAD: { handler: getTags, access: 'pull' } },
  manifest: {
    GET: { handler: getManifest, access: 'pull' },
    HEAD: { handler: getManifest, access: 'pull' },
    PUT: { handler: putManifest, access: 'push' },
    DELETE: { handler: deleteManifest, access: 'delete' },
  },
  referrers: { GET: { handler: getReferrers, access: 'pull' }, HEAD: { handler: getReferrers, access: 'pull' } },
  blob: {
    GET: { handler: getBlob, access: 'pull' },
    HEAD: { handler: getBlob, access: 'pull' },
    DELETE: { handler: deleteBlob, access: 'delete' },
  },
  uploads: { POST: { handler: postUpload, access: 'push' } },
  // starting, continuing, inspecting and cancelling an upload are all part of pushing
  upload: {
    GET: { handler: getUpload, access: 'push' },
    PATCH: { handler: patchUpload, access: 'push' },
    PUT: { handler: putUpload, access: 'push' },
    DELETE: { handler: deleteUpload, access: 'push' },
  },
  // berth's extensions: the registry-level ones filter to what the caller may pull, as the catalog does
  discover: { GET: { handler: getDiscover, access: 'authenticated' }, HEAD: { handler: getDiscover, access: 'authenticated' } },
  'ext-repositories': { GET: { handler: getRepositories, access: 'catalog' }, HEAD: { handler: getRepositories, access: 'catalog' } },
  'ext-usage': { GET: { handler: getUsage, access: 'catalog' }, HEAD: { handler: getUsage, access: 'catalog' } },
  'ext-quotas': { GET: { handler: getQuotas, access: 'catalog' }, HEAD: { handler: getQuotas, access: 'catalog' } },
  'ext-search': { GET: { handler: getSearch, access: 'catalog' }, HEAD: { handler: getSearch, access: 'catalog' } },
  'ext-tags': { GET: { handler: getTagPage, access: 'pull' }, HEAD: { handler: getTagPage, access: 'pull' } },
  'ext-history': { GET: { handler: getHistory, access: 'pull' }, HEAD: { handler: getHistory, access: 'pull' } },
};

/** the endpoint for `method` on `route`, undefined when the route does not answer it */
export function endpoint(route: Route, method: string): { handler: Handler; access: AccessRequest[] } | undefined {
  const methods = ROUTES[route.kind] as Record<string, Endpoint<Route> | undefined>;
  const found = Object.hasOwn(methods, method) ? methods[method] : undefined;
  return found && { handler: found.handler as Handler, access: accessRequests(route, found.access) };
}

/** the methods `route` answers, for the `Allow` header of a 405 */
export function allowedMethods(route: Route): string[] {
  return Object.keys(ROUTES[route.kind]);
}

/** the access a request needs, in auth's vocabulary; none for a method the route does not answer */
export function requiredAccess(route: Route, method: string): AccessRequest[] {
  return endpoint(route, method)?.access ?? [];
}

function accessRequests(route: Route, access: Access): AccessRequest[] {
  if (access === 'authenticated') return [];
  if (access === 'catalog') return [CATALOG_ACCESS];
  return 'name' in route ? [{ type: 'repository', name: route.name, action: access }] : [];
}
