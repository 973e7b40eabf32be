/**
 * Pagination of the tag list and the catalog (spec 4.2, 4.13, 4.14): the `n` and `last` query
 * parameters and the `Link` header that points at the next page.
 *
 * Choices where the spec is silent, against CNCF Distribution (2.8.2 as packaged by Debian, and v3):
 * - The largest `n` is `catalog.maxentries` (default 1000), for the catalog and for tags alike.
 *   Above it: 400 PAGINATION_NUMBER_INVALID, as Distribution does for the catalog.
 * - `n` must be digits only. `abc`, `-1`, `1.5`, `+5` and an empty `n=` are 400
 *   PAGINATION_NUMBER_INVALID, as the spec says for "not an integer, negative". (Distribution
 *   2.8.2 ignores such values and uses its default; v3 rejects them, except an empty `n=`, which
 *   it treats as absent.)
 * - `n=0` is allowed: an empty page and no `Link`, whatever exists. Distribution (2.8.2 and v3)
 *   does the same for the catalog, v3 for tags too. A `Link` would send a client round in
 *   circles, since following it with n=0 gives the same empty page again. The tag list still
 *   answers NAME_UNKNOWN for an unknown repository with n=0.
 * - Without `n`, tags come 100 at a time (spec 8) and the catalog `catalog.maxentries` at a time
 *   (spec 4.13 lets the registry cap it; Distribution v3 uses min(100, maxentries)); in both
 *   cases a `Link` follows when more exist.
 * - `Link` is `<path?n=N&last=X>; rel="next"`: a relative URL of the request's path (with the
 *   `http.prefix`), as Distribution sends it, with the parameters in the spec's order (Distribution
 *   sorts them: `?last=X&n=N`). N is the page size used, so a capped request carries the cap.
 * - Only the first `n` and the first `last` count when a parameter is repeated (Go's Query().Get).
 */
import type { FastifyRequest } from 'fastify';
import { RegistryError } from '../registry/errors.js';
import { queryValue } from './body.js';

/** page size of the tag list when `n` is absent (spec 8) */
export const DEFAULT_TAGS_PAGE = 100;

export interface PageRequest {
  /** entries wanted on this page, 0 <= n <= the cap */
  n: number;
  /** entries start after this one; undefined (also for an empty `last=`) starts at the beginning */
  last?: string;
}

const DIGITS = /^[0-9]+$/;

/**
 * `n` and `last` of the request's query string. `defaultN` applies when `n` is absent; `max` is
 * the largest `n` accepted.
 */
export function parsePagination(req: FastifyRequest, options: { defaultN: number; max: number }): PageRequest {
  return parsePageQuery({ n: queryValue(req, 'n'), last: queryValue(req, 'last') }, options);
}

/** the same from the raw values of `n` and `last` (undefined: absent) */
export function parsePageQuery(query: { n?: string; last?: string }, { defaultN, max }: { defaultN: number; max: number }): PageRequest {
  const last = query.last || undefined;
  const raw = query.n;
  if (raw === undefined) return { n: Math.min(defaultN, max), last };
  const allowed = `n must be an integer from 0 to ${max}`;
  if (!DIGITS.test(raw)) {
    throw new RegistryError('PAGINATION_NUMBER_INVALID', `invalid number of results requested: ${JSON.stringify(raw)} is not a non-negative integer; ${allowed}`, {
      detail: { n: raw },
    });
  }
  const n = Number(raw);
  if (n > max) {
    throw new RegistryError('PAGINATION_NUMBER_INVALID', `invalid number of results requested: ${raw} is above the maximum; ${allowed}`, {
      detail: { n: raw, max },
    });
  }
  return { n, last };
}

/** `<path?n=N&last=X>; rel="next"` for the page after `last` (path: below the prefix, e.g. `/v2/_catalog`) */
export function nextLink(prefix: string, path: string, n: number, last: string): string {
  const query = new URLSearchParams({ n: String(n), last }).toString();
  return `<${prefix}${path}?${query}>; rel="next"`;
}
