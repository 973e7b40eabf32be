/**
 * Path matching for the V2 API. Repository names contain '/', so routes are recognised by their
 * suffix and the name is what comes before it. The raw (still percent-encoded) path is matched:
 * an encoded character in a name or tag makes it invalid rather than another repository's. What
 * each route answers, and with which access, is route-table.ts.
 */
import { RegistryError } from '../registry/errors.js';
import { checkRepositoryName } from '../registry/names.js';

export type Route =
  | { kind: 'base' }
  | { kind: 'catalog' }
  | { kind: 'tags'; name: string }
  | { kind: 'manifest'; name: string; reference: string }
  | { kind: 'referrers'; name: string; digest: string }
  | { kind: 'blob'; name: string; digest: string }
  | { kind: 'uploads'; name: string }
  | { kind: 'upload'; name: string; uuid: string }
  // berth's extensions (distribution-spec extension shape, handlers/browse.ts)
  | { kind: 'discover' }
  | { kind: 'ext-repositories' }
  | { kind: 'ext-usage' }
  | { kind: 'ext-quotas' }
  | { kind: 'ext-search' }
  | { kind: 'ext-tags'; name: string }
  | { kind: 'ext-history'; name: string };

const UUID = /^[a-zA-Z0-9-_.=]+$/;

// order matters: uploads before blobs (a name may itself contain "blobs")
const PATTERNS: [RegExp, (m: RegExpExecArray) => Route][] = [
  [/^\/v2\/?$/, () => ({ kind: 'base' })],
  [/^\/v2\/_catalog$/, () => ({ kind: 'catalog' })],
  // `_`-prefixed components are never repository names: these come before the name routes
  [/^\/v2\/_oci\/ext\/discover$/, () => ({ kind: 'discover' })],
  [/^\/v2\/_berth\/ext\/repositories$/, () => ({ kind: 'ext-repositories' })],
  [/^\/v2\/_berth\/ext\/usage$/, () => ({ kind: 'ext-usage' })],
  [/^\/v2\/_berth\/ext\/quotas$/, () => ({ kind: 'ext-quotas' })],
  [/^\/v2\/_berth\/ext\/search$/, () => ({ kind: 'ext-search' })],
  [/^\/v2\/(.+)\/_berth\/ext\/tags$/, (m) => ({ kind: 'ext-tags', name: m[1] })],
  [/^\/v2\/(.+)\/_berth\/ext\/history$/, (m) => ({ kind: 'ext-history', name: m[1] })],
  [/^\/v2\/(.+)\/tags\/list$/, (m) => ({ kind: 'tags', name: m[1] })],
  [/^\/v2\/(.+)\/manifests\/([^/]+)$/, (m) => ({ kind: 'manifest', name: m[1], reference: m[2] })],
  [/^\/v2\/(.+)\/referrers\/([^/]+)$/, (m) => ({ kind: 'referrers', name: m[1], digest: m[2] })],
  [/^\/v2\/(.+)\/blobs\/uploads\/?$/, (m) => ({ kind: 'uploads', name: m[1] })],
  [/^\/v2\/(.+)\/blobs\/uploads\/([^/]+)$/, (m) => ({ kind: 'upload', name: m[1], uuid: m[2] })],
  [/^\/v2\/(.+)\/blobs\/([^/]+)$/, (m) => ({ kind: 'blob', name: m[1], digest: m[2] })],
];

/** the route of `path` (without query and prefix), undefined for none; invalid names throw NAME_INVALID */
export function matchRoute(path: string): Route | undefined {
  for (const [pattern, build] of PATTERNS) {
    const m = pattern.exec(path);
    if (!m) continue;
    const route = build(m);
    if ('name' in route) checkRepositoryName(route.name);
    // `.` and `..` fit the spec's pattern but would name the uploads directory or the repository's
    if (route.kind === 'upload' && (!UUID.test(route.uuid) || route.uuid === '.' || route.uuid === '..')) {
      throw new RegistryError('BLOB_UPLOAD_UNKNOWN', `invalid upload id ${JSON.stringify(route.uuid)}`, { detail: { uuid: route.uuid } });
    }
    return route;
  }
  return undefined;
}
