/**
 * The access each request needs, in auth's vocabulary: the URI namespace and the HTTP method decide
 * (spec section 5); nothing else about the request does.
 */
import { CATALOG_ACCESS, type AccessRequest, type RepositoryAction } from '../auth/access.js';
import type { Route } from './routes.js';

/**
 * The access a request needs. `GET /v2/` needs none (authentication only). The pull on a mount's
 * source is not listed: the upload handler asks for it and falls back to a plain upload without it.
 */
export function requiredAccess(route: Route, method: string): AccessRequest[] {
  if (route.kind === 'base') return [];
  if (route.kind === 'catalog') return [CATALOG_ACCESS];
  const repo = (action: RepositoryAction): AccessRequest[] => [{ type: 'repository', name: route.name, action }];
  switch (route.kind) {
    case 'tags':
    case 'referrers':
      return repo('pull');
    case 'manifest':
    case 'blob':
      if (method === 'GET' || method === 'HEAD') return repo('pull');
      if (method === 'DELETE') return repo('delete');
      return repo('push');
    case 'uploads':
    case 'upload':
      // starting, continuing, inspecting and cancelling an upload are all part of pushing
      return repo('push');
  }
}
