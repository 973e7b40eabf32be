/**
 * The edge's authorization of one request: the auth decision and the rate limit that goes with it
 * (by user: an authenticated caller draws from its user's bucket, any other from its address's, so
 * password guessing is limited too). The V2 routes and the web interface's helpers both use it.
 */
import type { FastifyRequest } from 'fastify';
import type { AccessRequest } from '../auth/access.js';
import type { Auth, CallerGrant } from '../auth/index.js';
import { RegistryError } from '../registry/errors.js';
import { setGrant } from './grants.js';

export async function authorizeRequest(req: FastifyRequest, auth: Auth, needed: AccessRequest[], mountFrom?: string): Promise<CallerGrant> {
  const byUser = auth.limiter !== undefined && auth.limitBy === 'user';
  let grant;
  try {
    grant = await auth.authorize({ needed, authorization: req.headers.authorization, cookie: req.headers.cookie, address: req.ip, mountFrom, protocol: req.protocol, host: req.host });
  } catch (err) {
    if (byUser) await limit(auth, `ip:${req.ip}`);
    throw err;
  }
  if (byUser) await limit(auth, grant.user !== undefined ? `user:${grant.user}` : `ip:${req.ip}`);
  setGrant(req, grant);
  return grant;
}

/** one token from the client's bucket, or 429 with Retry-After */
export async function limit(auth: Auth, key: string): Promise<void> {
  const verdict = await auth.limiter!.take(key);
  if (!verdict.allowed) {
    throw new RegistryError('TOOMANYREQUESTS', `too many requests: try again in ${verdict.retryAfterSeconds}s`, {
      headers: { 'retry-after': String(verdict.retryAfterSeconds) },
    });
  }
}
