/**
 * Cross-site requests (issue 26): a page of another site can make a browser send a simple POST,
 * PATCH, PUT or DELETE to the registry with the credentials the browser holds for it (Basic, a
 * client certificate). Registry clients send no `Origin`; a browser sends one. A state-changing
 * request whose `Origin` is neither the registry's own nor allowed by the CORS policy of the
 * configuration (`http.headers` `Access-Control-Allow-Origin`, as for Distribution) is refused
 * with 403 DENIED before anything reads it.
 */
import type { FastifyRequest } from 'fastify';
import { RegistryError } from '../registry/errors.js';
import type { EdgeOptions } from './options.js';
import type { URLBuilder } from './urls.js';

/** methods that change nothing: a page of any site may send them (answers are not readable without CORS) */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function refuseForeignOrigin(req: FastifyRequest, urls: URLBuilder, headers: EdgeOptions['headers']): void {
  const origin = req.headers.origin;
  if (origin === undefined || SAFE_METHODS.has(req.method)) return;
  const given = normalOrigin(origin);
  if (given !== undefined && (urls.ownOrigins(req).some((own) => normalOrigin(own) === given) || allowedByPolicy(given, headers))) return;
  throw new RegistryError(
    'DENIED',
    `${req.method} refused: the request comes from a page of ${origin}, not of this registry (${urls.ownOrigins(req).join(' or ')}); ` +
      'allow that origin with http.headers Access-Control-Allow-Origin if it should change the registry',
  );
}

/** `scheme://host[:port]` as a browser compares it (lower case, default port left out); undefined for `null` or a malformed one */
function normalOrigin(text: string): string | undefined {
  if (!/^https?:\/\/[^/?#]+$/i.test(text)) return undefined;
  try {
    return new URL(text).origin;
  } catch {
    return undefined;
  }
}

/** the origins `http.headers` `Access-Control-Allow-Origin` names (`*`: any) */
function allowedByPolicy(origin: string, headers: EdgeOptions['headers']): boolean {
  for (const [name, values] of Object.entries(headers)) {
    if (name.toLowerCase() !== 'access-control-allow-origin') continue;
    const allowed = values.flatMap((v) => v.split(',')).map((v) => v.trim());
    if (allowed.includes('*') || allowed.some((a) => normalOrigin(a) === origin)) return true;
  }
  return false;
}
