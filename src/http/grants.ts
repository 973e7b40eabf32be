/** The caller's grant, set by the edge once per request (after authorize) for the handlers that filter by it. */
import type { FastifyRequest } from 'fastify';
import type { CallerGrant } from '../auth/index.js';

const grants = new WeakMap<FastifyRequest, CallerGrant>();

export function setGrant(req: FastifyRequest, grant: CallerGrant): void {
  grants.set(req, grant);
}

export function grantOf(req: FastifyRequest): CallerGrant {
  const grant = grants.get(req);
  // dispatch always authorizes first; a handler reached without it is a wiring bug, not "allow"
  if (!grant) throw new Error('no grant for this request: authorize() was not called');
  return grant;
}

/** the authenticated user, if the request got that far (for the access log) */
export function userOf(req: FastifyRequest): string | undefined {
  return grants.get(req)?.user;
}

/** the Set-Cookie the request's grant asks for (a renewed web interface session), if any */
export function grantSetCookie(req: FastifyRequest): string | undefined {
  return grants.get(req)?.setCookie;
}
